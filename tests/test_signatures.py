"""Signatures are part of the API (issues 14 and 19): every public ember function, method, module
constructor, optimizer and scheduler that torch also has is compared with torch's own signature,
read from torch (tests/torch_signatures.py): the keywords torch takes, the order of the positional
parameters, what is keyword-only, and the defaults. Differences are listed below with the reason."""
import inspect
import warnings

import numpy as np
import pytest
import torch

import ember
from tests.torch_signatures import P, differences, signatures

# (namespace in torch, ember module or class, methods?)
OP_NAMESPACES = [("torch", lambda: ember, False), ("Tensor", lambda: ember.Tensor, True),
                 ("torch.linalg", lambda: ember.linalg, False),
                 ("torch.nn.functional", lambda: ember.nn.functional, False),
                 ("torch.special", lambda: getattr(ember, "special", None), False),
                 ("torch.fft", lambda: getattr(ember, "fft", None), False)]  # (None: not in ember yet)

_STUB_REDUCTION = ("torch's stub says reduction=1 (Mean), its argument parser's default is 0 (None), which ember "
                   "follows (test_stub_defaults_that_torch_does_not_follow)")
_EMPTY_MEANS_KERNEL = "torch spells 'stride = kernel_size' (), ember None; ember takes both (test_equivalent_defaults)"
_UNBIASED = "unbiased=None means 'not given': correction= decides, default 1, which is unbiased=True"
_OUT_DTYPE = "out_dtype= (low-precision matmul accumulating in float32) runs on CUDA only: CPU torch refuses it too"
_RNN = "torch's internal functional RNN entry point (nn.LSTM/GRU/RNN call it); ember's takes its arguments positionally"

_ONE_FOR_TWO_OVERLOADS = ("torch's two overloads (y, x) and (y, *, dx=1) are one ember signature (y, x=None, *, dx=None): "
                          "dx=None means 1 (test_equivalent_defaults)")

# (namespace, name) -> why ember's signature differs from torch's
DELIBERATE = {
    ("torch", "kl_div"): _STUB_REDUCTION,
    ("torch", "binary_cross_entropy_with_logits"): _STUB_REDUCTION,
    ("torch", "cosine_embedding_loss"): _STUB_REDUCTION,
    ("torch", "ctc_loss"): _STUB_REDUCTION,
    ("torch", "hinge_embedding_loss"): _STUB_REDUCTION,
    ("torch", "margin_ranking_loss"): _STUB_REDUCTION,
    ("torch", "triplet_margin_loss"): _STUB_REDUCTION,
    ("torch", "avg_pool1d"): _EMPTY_MEANS_KERNEL,
    ("torch", "max_pool1d"): _EMPTY_MEANS_KERNEL,
    ("torch", "max_pool1d_with_indices"): _EMPTY_MEANS_KERNEL,
    ("torch", "max_pool2d"): _EMPTY_MEANS_KERNEL,
    ("torch", "max_pool3d"): _EMPTY_MEANS_KERNEL,
    ("torch.nn.functional", "avg_pool1d"): _EMPTY_MEANS_KERNEL,
    ("torch", "roll"): "torch's dims=() and ember's dims=None both roll the flattened tensor "
                       "(test_equivalent_defaults)",
    ("Tensor", "roll"): "as torch.roll",
    ("torch", "std"): _UNBIASED,
    ("torch", "std_mean"): _UNBIASED,
    ("torch", "var"): _UNBIASED,
    ("torch", "var_mean"): _UNBIASED,
    ("Tensor", "std"): _UNBIASED,
    ("Tensor", "var"): _UNBIASED,
    ("torch", "normal"): "normal(mean_tensor) overload: ember's std=None is torch's std=1 (test_equivalent_defaults)",
    ("torch", "asarray"): "torch's stub says requires_grad=None, its parser False (as ember); both take None",
    ("Tensor", "mul"): "torch's stub gives Tensor.mul an out=, its method refuses it (as ember's)",
    ("Tensor", "floor_divide"): "torch's stub gives Tensor.floor_divide an out=, its method refuses it (as ember's)",
    ("torch.linalg", "matrix_exp"): "torch's stub gives linalg.matrix_exp an out=, its binding refuses it (as ember's)",
    ("torch", "mm"): _OUT_DTYPE,
    ("torch", "bmm"): _OUT_DTYPE,
    ("torch", "addmm"): _OUT_DTYPE,
    ("torch", "baddbmm"): _OUT_DTYPE,
    ("torch", "full"): "names= makes a named tensor: ember has no named tensors",
    ("torch", "trapezoid"): _ONE_FOR_TWO_OVERLOADS,
    ("torch", "trapz"): _ONE_FOR_TWO_OVERLOADS,
    ("torch", "cumulative_trapezoid"): _ONE_FOR_TWO_OVERLOADS,
    ("torch", "lstm"): _RNN,
    ("torch", "gru"): _RNN,
    ("torch", "rnn_tanh"): _RNN,
    ("torch", "rnn_relu"): _RNN,
    ("torch", "numel"): "torch's stub says numel(self), its parser takes input= "
                        "(test_stub_names_that_torch_does_not_take)",
    ("Tensor", "requires_grad_"): "torch's stub says mode=, its parser takes requires_grad= (as ember; tested below)",
    ("torch", "result_type"): "the Scalar overloads' names (scalar=, scalar1=, scalar2=): ember's one signature is "
                              "(tensor, other)",
    ("Tensor", "new"): "the legacy constructor's storage=/other= forms (untyped storages): ember has no storages",
}


def _op_callables():
    for ns, get, method in OP_NAMESPACES:
        emod = get()
        if emod is None:
            continue
        tmod = torch.Tensor if method else _torch_module(ns)
        for name in sorted(dir(emod)):
            if name.startswith("_") or not hasattr(tmod, name):
                continue
            obj = getattr(emod, name)
            if callable(obj) and not isinstance(obj, type):
                yield ns, name, obj, method


def _torch_module(ns):
    mod = torch
    for part in ns.split(".")[1:]:
        mod = getattr(mod, part)
    return mod


def test_op_signatures():
    """Functions and Tensor methods: torch's keywords, positional order, keyword-only parameters and
    defaults, against torch's Python-level signatures (stubs for the C-level ones)."""
    checked, found = 0, {}
    for ns, name, obj, method in _op_callables():
        try:
            esig = inspect.signature(obj)
        except (TypeError, ValueError):
            continue
        tsigs = signatures(ns, name, proposals=False)
        if not tsigs:
            continue
        checked += 1
        d = differences(esig, tsigs, method)
        if d:
            found[(ns, name)] = d
    assert checked >= 1100, f"only {checked} signatures compared"
    excused = {**DELIBERATE, **STUB_FORMS_TORCH_REFUSES, **DEPRECATED_OVERLOADS}
    unexpected = {k: v for k, v in found.items() if k not in excused}
    assert not unexpected, "\n".join(f"{k}: {'; '.join(v)}" for k, v in unexpected.items())
    stale = [k for k in excused if k not in found]
    assert not stale, f"DELIBERATE entries that now agree with torch: {stale}"


def _python_level(tmod, emod, classes):
    """(name, torch signature, ember signature) for the Python-level APIs of a namespace."""
    for name in sorted(dir(emod)):
        e, t = getattr(emod, name), getattr(tmod, name, None)
        if name.startswith("_") or t is None or not callable(e) or isinstance(e, type) != classes:
            continue
        try:
            es = inspect.signature(e.__init__ if classes else e)
            ts = inspect.signature(t.__init__ if classes else t)
        except (TypeError, ValueError):
            continue  # C-level: test_op_signatures reads its stub
        tparams = list(ts.parameters.values())[1 if classes else 0:]
        if all(p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD) for p in tparams):
            continue  # a dispatcher (F.max_pool2d's boolean_dispatch) says nothing
        yield name, ts, es


@pytest.mark.parametrize("label,tmod,emod,classes", [
    ("nn modules", "torch.nn", "nn", True),
    ("optimizers", "torch.optim", "optim", True),
    ("lr schedulers", "torch.optim.lr_scheduler", "optim.lr_scheduler", True),
    ("nn.functional", "torch.nn.functional", "nn.functional", False),
    ("nn.init", "torch.nn.init", "nn.init", False),
    ("nn.utils", "torch.nn.utils", "nn.utils", False),
    ("autograd", "torch.autograd", "autograd", False),
    ("autograd.functional", "torch.autograd.functional", "autograd.functional", False),
    ("autograd.forward_ad", "torch.autograd.forward_ad", "autograd.forward_ad", False),
    ("utils.data", "torch.utils.data", "utils.data", True),
])
def test_python_level_signatures(label, tmod, emod, classes):
    """Module constructors, optimizers, schedulers, F.*, init, utils: the same parameters in the same
    order, of the same kinds, with the same defaults (TripletMarginLoss(swap=False),
    TransformerEncoderLayer(dropout=0.1), vhp(strict=False), F.max_pool2d_with_indices(return_indices=False))."""
    t_ns, e_ns = _torch_module(tmod), ember
    for part in emod.split("."):
        e_ns = getattr(e_ns, part)
    checked, found = 0, {}
    for name, ts, es in _python_level(t_ns, e_ns, classes):
        checked += 1
        skip = 1 if classes else 0
        tp = [(p.name, p.kind) for p in list(ts.parameters.values())[skip:]]
        ep = [(p.name, p.kind) for p in list(es.parameters.values())[skip:]]
        d = differences(es, [ts], classes)
        if tp != ep:
            d.append(f"parameters ({', '.join(n for n, _ in ep)}) vs torch's ({', '.join(n for n, _ in tp)})")
        if d:
            found[name] = d
    assert checked >= 4, f"{label}: only {checked} signatures compared"
    assert not found, "\n".join(f"{label}.{k}: {'; '.join(v)}" for k, v in found.items())


def test_stub_defaults_that_torch_does_not_follow():
    """The DELIBERATE reduction= entries: torch's parser default is no reduction, whatever its stub says."""
    x = np.random.default_rng(0).random(3)
    for name in ("kl_div", "binary_cross_entropy_with_logits", "hinge_embedding_loss"):
        t = getattr(torch, name)(torch.from_numpy(x), torch.from_numpy(x))
        e = getattr(ember, name)(ember.from_numpy(x), ember.from_numpy(x))
        assert tuple(t.shape) == tuple(e.shape) == (3,)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)


def test_stub_names_that_torch_does_not_take():
    """torch.numel(input=) and requires_grad_(requires_grad=): the names torch's parser takes, not its stub's."""
    for lib in (torch, ember):
        x = lib.ones(2, 3)
        assert lib.numel(input=x) == 6
        assert x.requires_grad_(requires_grad=True).requires_grad
        with pytest.raises(TypeError):
            lib.numel(self=x)


def test_equivalent_defaults():
    """Defaults spelled differently that mean the same: ember takes torch's spelling with torch's result."""
    a = np.random.default_rng(1).random((1, 2, 6, 6))
    for fn in (lambda t, x: t.nn.functional.max_pool2d(x, 2, stride=()),
               lambda t, x: t.nn.functional.avg_pool1d(x[0], 3, stride=()),
               lambda t, x: t.roll(x, 3, ()),
               lambda t, x: t.normal(x, std=1.0).shape,
               lambda t, x: t.trapezoid(x, dx=1) - t.trapezoid(x),
               lambda t, x: t.cumulative_trapezoid(x, dx=1) - t.cumulative_trapezoid(x)):
        t_out = fn(torch, torch.from_numpy(a))
        e_out = fn(ember, ember.from_numpy(a))
        if isinstance(t_out, torch.Size):
            assert tuple(t_out) == tuple(e_out)
        else:
            np.testing.assert_allclose(e_out.numpy(), t_out.numpy(), rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.asarray([1.0], requires_grad=None)
        assert t.requires_grad is ember.asarray([1.0], requires_grad=None).requires_grad


# ---- positional counts and required parameters (issue 19) ------------------------------------------
# differences() also flags a parameter torch gives a default and ember requires, and ember taking fewer
# positional arguments than a torch overload. Where torch's stub or schema says more than torch's parser
# takes, the call below is refused by real torch (TypeError), and by ember (test_stub_forms_torch_refuses).
STUB_FORMS_TORCH_REFUSES = {
    ("torch", "as_tensor"): lambda t, x, v, b: t.as_tensor([1.0], t.float64),
    ("torch", "tensor"): lambda t, x, v, b: t.tensor([1.0], t.float64),
    ("torch", "linspace"): lambda t, x, v, b: t.linspace(0, 1),
    ("torch", "logspace"): lambda t, x, v, b: t.logspace(0, 1),
    ("torch", "rsub"): lambda t, x, v, b: t.rsub(x, x, 2),
    ("torch", "subtract"): lambda t, x, v, b: t.subtract(x, x, 2),
    ("Tensor", "cdouble"): lambda t, x, v, b: x.cdouble(t.preserve_format),
    ("Tensor", "cfloat"): lambda t, x, v, b: x.cfloat(t.preserve_format),
    ("Tensor", "contiguous"): lambda t, x, v, b: x.contiguous(t.contiguous_format),
    ("Tensor", "cuda"): lambda t, x, v, b: x.cuda(None, False, t.preserve_format),
    ("Tensor", "new_tensor"): lambda t, x, v, b: x.new_tensor([1.0], t.float64),
    ("Tensor", "subtract"): lambda t, x, v, b: x.subtract(x, 2),
    ("torch.nn.functional", "gelu"): lambda t, x, v, b: t.nn.functional.gelu(x, "tanh"),
}

# torch's deprecated Scalar-first overloads (deprecated.yaml: add(input, alpha, other), addmv(beta, input,
# alpha, mat, vec) ...), which torch still runs with a deprecation warning; ember refuses them with
# TypeError (never a silent other reading), test_deprecated_overloads_refused.
DEPRECATED_OVERLOADS = {
    ("torch", "add"): lambda t, x, v, b: t.add(x, 2, x),
    ("torch", "sub"): lambda t, x, v, b: t.sub(x, 2, x),
    ("torch", "addbmm"): lambda t, x, v, b: t.addbmm(1, x, 1, b, b),
    ("torch", "addcdiv"): lambda t, x, v, b: t.addcdiv(x, 2, x, x),
    ("torch", "addcmul"): lambda t, x, v, b: t.addcmul(x, 2, x, x),
    ("torch", "addmv"): lambda t, x, v, b: t.addmv(1, v, 1, x, v),
    ("torch", "addr"): lambda t, x, v, b: t.addr(1, x, 1, v, v),
}


def _args(lib):
    return lib.ones(3, 3), lib.ones(3), lib.ones(2, 3, 3)


@pytest.mark.parametrize("key", sorted(STUB_FORMS_TORCH_REFUSES))
def test_stub_forms_torch_refuses(key):
    """What torch's stub offers and torch's parser refuses: both libraries raise TypeError."""
    call = STUB_FORMS_TORCH_REFUSES[key]
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            call(lib, *_args(lib))


@pytest.mark.parametrize("key", sorted(DEPRECATED_OVERLOADS))
def test_deprecated_overloads_refused(key):
    """torch runs its deprecated overload (warning once per process); ember raises TypeError."""
    call = DEPRECATED_OVERLOADS[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert isinstance(call(torch, *_args(torch)), torch.Tensor)
    with pytest.raises(TypeError):
        call(ember, *_args(ember))


def test_defaults_and_positions_fixed_in_issue_19():
    """Each was a mismatch differences() found: torch's default bins=100, positional range=/rcond=/dtype=,
    Generator(device=None), random_split's default generator."""
    a = np.random.default_rng(2).random((6, 2))
    m = np.random.default_rng(3).random((3, 3))
    for fn in (lambda t, x, y: t.histogram(x[:, 0]).hist,
               lambda t, x, y: x[:, 0].histogram().bin_edges,
               lambda t, x, y: t.histogramdd(x, 3, [0.0, 1.0, 0.0, 1.0], None, True).hist,
               lambda t, x, y: t.linalg.pinv(y, 0.2, True),
               lambda t, x, y: t.special.softmax(y, 0, t.float32)):
        t_out = fn(torch, torch.from_numpy(a), torch.from_numpy(m))
        e_out = fn(ember, ember.from_numpy(a), ember.from_numpy(m))
        assert e_out.dtype == getattr(ember, str(t_out.dtype).split(".")[1])
        np.testing.assert_allclose(e_out.numpy(), t_out.numpy(), rtol=1e-6, atol=1e-12)
    assert str(ember.Generator(None).device) == str(torch.Generator(None).device) == "cpu"
    for lib in (torch, ember):
        lib.manual_seed(5)
        first = lib.utils.data.random_split(range(10), [4, 6])[0].indices
        lib.manual_seed(5)
        assert lib.utils.data.random_split(range(10), [4, 6])[0].indices == first  # the default generator
    torch.manual_seed(5)
    ember.manual_seed(5)
    assert (ember.utils.data.random_split(range(10), [4, 6])[0].indices
            == torch.utils.data.random_split(range(10), [4, 6])[0].indices)
