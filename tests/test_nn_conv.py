"""Convolution layers and functions against torch: Conv1d/2d/3d, ConvTranspose1d/2d/3d, F.conv*, torch.conv*.

Weights are copied from torch into ember through NumPy; outputs and the gradients with respect to the
input, weight and bias must agree (and second-order gradients for a subset). The helpers here are
shared by test_nn_pool.py and test_nn_sampling.py.
"""
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember

from ._stories import check_story

LIBS = (torch, ember)
TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-10), "float16": (1e-2, 1e-2), "complex128": (1e-9, 1e-10)}


def _np(t):
    return t.detach().numpy()


def _tensor(lib, arr, requires_grad=False):
    t = lib.from_numpy(np.array(arr))
    return t.requires_grad_(requires_grad) if requires_grad else t


def _inputs(specs, dtype, rng):
    """Shapes become random arrays of dtype (requiring grad), arrays pass as tensors, others as they are."""
    arrays, grads = [], []
    for s in specs:
        if isinstance(s, tuple) and all(isinstance(v, int) for v in s):
            a = rng.uniform(-2, 2, s)
            if dtype.startswith("complex"):
                a = a + 1j * rng.uniform(-2, 2, s)
            arrays.append(a.astype(dtype))
            grads.append(True)
        elif isinstance(s, np.ndarray):
            arrays.append(s)
            grads.append(s.dtype.kind in "fc")
        else:
            arrays.append(s)
            grads.append(False)
    return arrays, grads


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _close(e, t, dtype, what):
    rtol, atol = TOL.get(dtype, (0, 0))
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape ember {tuple(e.shape)} vs torch {tuple(t.shape)}"
    assert str(e.dtype) == str(t.dtype), f"{what}: dtype ember {e.dtype} vs torch {t.dtype}"
    a, b = _np(e), _np(t)
    if a.dtype.kind in "iub":
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def check(fn, *specs, dtype="float64", grad=True, gradgrad=False, seed=0):
    """fn(lib, *tensors) on torch and ember from the same NumPy inputs: outputs, then gradients of every
    float input under a random upstream gradient, then (gradgrad) gradients of the gradients' squared sum."""
    rng = np.random.default_rng(seed)
    arrays, wants = _inputs(specs, dtype, rng)
    results = {}
    for lib in LIBS:
        ins = [_tensor(lib, a, grad and w) if isinstance(a, np.ndarray) else a for a, w in zip(arrays, wants)]
        out = _flat(fn(lib, *ins))
        results[lib] = (ins, out)
    (tin, tout), (_, eout) = results[torch], results[ember]
    assert len(tout) == len(eout)
    for i, (t, e) in enumerate(zip(tout, eout)):
        _close(e, t, str(t.dtype).replace("torch.", ""), f"output {i}")
        assert e.requires_grad == t.requires_grad, f"output {i}: requires_grad"
    diff = [i for i, t in enumerate(tin) if isinstance(t, torch.Tensor) and t.requires_grad]
    outs = [j for j, t in enumerate(tout) if t.requires_grad]
    if not diff or not outs:
        return
    ups = [rng.uniform(-1, 1, tuple(tout[j].shape)).astype(_np(tout[j]).dtype) for j in outs]
    grads = {}
    for lib in LIBS:
        ins, out = results[lib]
        g = lib.autograd.grad([out[j] for j in outs], [ins[i] for i in diff],
                              [_tensor(lib, u) for u in ups], create_graph=gradgrad, allow_unused=True)
        grads[lib] = g
    for i, t, e in zip(diff, grads[torch], grads[ember]):
        assert (t is None) == (e is None), f"grad {i}: torch {t is None} ember {e is None}"
        if t is not None:
            _close(e, t, dtype, f"grad of input {i}")
            if gradgrad:
                assert e.requires_grad == t.requires_grad, f"grad {i}: requires_grad under create_graph"
    if gradgrad:
        second = {}
        for lib in LIBS:
            ins, _ = results[lib]
            gs = [g for g in grads[lib] if g is not None and g.requires_grad]
            if not gs:
                return
            total = sum((g * g).sum() for g in gs)
            second[lib] = lib.autograd.grad(total, [ins[i] for i in diff], allow_unused=True)
        for i, t, e in zip(diff, second[torch], second[ember]):
            if t is None or e is None:  # an unused input: the other side must be None or zero
                other = e if t is None else t
                assert other is None or not _np(other).any(), f"gradgrad {i}: None vs nonzero"
                continue
            _close(e, t, dtype, f"second-order grad of input {i}")


def check_conv2d_double_backward(x, w, b, **kw):
    """conv2d of the float64 arrays x, w, b (kw: its keywords), then a penalty on the gradients built with
    create_graph, backward through it: the output, both gradients and the three second-order gradients agree
    with torch's. Shared by the conv path tests (rows, implicit GEMM, thread pieces)."""
    results = []
    for lib in (ember, torch):
        xs, ws, bs = (lib.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
        y = lib.nn.functional.conv2d(xs, ws, bs, **kw)
        gx, gw = lib.autograd.grad((y * y).sum(), (xs, ws), create_graph=True)
        ((gx * gx).sum() + (gw * gw).sum()).backward()
        results.append([t.detach().numpy() for t in (y, gx, gw, xs.grad, ws.grad, bs.grad)])
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9)


def raises_like(fn, match_message=True):
    """fn(lib) raises the same exception type in torch and ember (and, by default, the same message)."""
    caught = []
    for lib in LIBS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                fn(lib)
        caught.append(info)
    assert caught[0].type is caught[1].type, (caught[0].value, caught[1].value)
    if match_message:
        assert str(caught[1].value).replace("ember.", "torch.") == str(caught[0].value)


def _dtype(lib, name):
    return getattr(lib, name)


def check_module(cls, args, kwargs, shape, dtype="float64", forward_kwargs=None, gradgrad=False, extra=None):
    """cls(*args, **kwargs) in both libraries with torch's parameters: repr, state_dict keys, outputs and the
    gradients of the input and every parameter."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(*args, **kwargs).to(_dtype(torch, dtype))
    em = getattr(ember.nn, cls)(*args, **kwargs).to(_dtype(ember, dtype))
    assert repr(em) == repr(tm)
    assert list(em.state_dict().keys()) == list(tm.state_dict().keys())
    em.load_state_dict(OrderedDict((k, ember.from_numpy(_np(v).copy())) for k, v in tm.state_dict().items()))
    params = [n for n, _ in tm.named_parameters()]
    fk = forward_kwargs or {}
    specs = [shape] + [_np(p) for _, p in tm.named_parameters()]

    def fn(lib, x, *ps):
        # the parameters come in as leaves made by check(), so their gradients are compared too
        m = tm if lib is torch else em
        for name, p in zip(params, ps):
            setattr(m, name, lib.nn.Parameter(p.detach()))
        return m(x, *(extra or ()), **fk)
    check(fn, *specs, dtype=dtype, gradgrad=gradgrad)


# ---- Conv1d / Conv2d / Conv3d ----------------------------------------------------------------

CONV2D = [
    ((3, 4, 3), {}, (2, 3, 7, 8)),
    ((4, 6, (3, 2)), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2), (2, 4, 9, 8)),
    ((4, 4, 3), dict(padding=1, groups=4, bias=False), (2, 4, 7, 7)),  # depthwise
    ((4, 8, 3), dict(stride=2, padding=1, groups=4), (1, 4, 9, 9)),  # depthwise, multiplier 2, batch 1
    ((3, 5, 3), dict(padding="same", dilation=2), (2, 3, 7, 6)),
    ((3, 5, 4), dict(padding="same"), (2, 3, 7, 6)),  # even kernel: asymmetric padding
    ((3, 5, (2, 3)), dict(padding="valid", stride=(1, 2)), (2, 3, 6, 7)),
    ((3, 4, 3), dict(padding=1, padding_mode="reflect"), (2, 3, 6, 7)),
    ((3, 4, 3), dict(padding=2, stride=2, padding_mode="replicate"), (2, 3, 7, 6)),
    ((3, 4, 3), dict(padding=(1, 2), padding_mode="circular"), (2, 3, 6, 7)),
    ((4, 4, 3), dict(padding="same", groups=2, padding_mode="circular"), (2, 4, 5, 6)),
    ((3, 4, 3), dict(padding=1), (3, 6, 7)),  # unbatched
    ((6, 4, 1), dict(stride=2), (2, 6, 7, 8)),  # 1x1, strided
    ((3, 4, 2), dict(padding=3), (2, 3, 4, 5)),  # padding wider than the kernel
    ((2, 3, 5), dict(stride=3, padding=2, dilation=(2, 1)), (2, 2, 11, 9)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("args,kwargs,shape", CONV2D, ids=[f"c{i}" for i in range(len(CONV2D))])
def test_conv2d_module(args, kwargs, shape, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch and ember both warn about even 'same' kernels
        check_module("Conv2d", args, kwargs, shape, dtype)


CONV1D = [
    ((3, 4, 3), {}, (2, 3, 9)),
    ((4, 6, 2), dict(stride=2, padding=1, dilation=2, groups=2), (2, 4, 10)),
    ((4, 4, 5), dict(padding="same", groups=4), (1, 4, 8)),
    ((3, 4, 3), dict(padding=2, padding_mode="circular"), (3, 7)),
    ((3, 4, 3), dict(padding=1, padding_mode="reflect", bias=False), (2, 3, 7)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("args,kwargs,shape", CONV1D, ids=[f"c{i}" for i in range(len(CONV1D))])
def test_conv1d_module(args, kwargs, shape, dtype):
    check_module("Conv1d", args, kwargs, shape, dtype)


CONV3D = [
    ((2, 3, 3), dict(padding=1), (1, 2, 4, 5, 4)),
    ((4, 4, (2, 3, 2)), dict(stride=(1, 2, 1), groups=2, dilation=(2, 1, 1)), (2, 4, 5, 6, 4)),
    ((3, 3, 3), dict(groups=3, padding=1, padding_mode="replicate"), (1, 3, 4, 4, 5)),
]


@pytest.mark.parametrize("args,kwargs,shape", CONV3D, ids=[f"c{i}" for i in range(len(CONV3D))])
def test_conv3d_module(args, kwargs, shape):
    check_module("Conv3d", args, kwargs, shape, "float64")


# ---- ConvTranspose1d / 2d / 3d ------------------------------------------------------------

CONVT2D = [
    ((3, 4, 3), {}, (2, 3, 5, 6), None),
    ((4, 6, 3), dict(stride=2, padding=1, output_padding=1), (2, 4, 4, 5), None),
    ((4, 6, (3, 2)), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2, dilation=(1, 2)),
     (1, 4, 4, 3), None),
    ((4, 4, 3), dict(stride=2, groups=4, bias=False), (2, 4, 3, 4), None),  # depthwise
    ((4, 6, 3), dict(stride=2, padding=1), (2, 4, 4, 5), (8, 10)),  # output_size= picks output_padding
    ((4, 6, 3), dict(stride=3, padding=1), (4, 4, 5), (6, 11, 14)),  # unbatched, output_size with the channel dim
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("args,kwargs,shape,size", CONVT2D, ids=[f"c{i}" for i in range(len(CONVT2D))])
def test_conv_transpose2d_module(args, kwargs, shape, size, dtype):
    fk = {} if size is None else {"output_size": list(size)}
    check_module("ConvTranspose2d", args, kwargs, shape, dtype, forward_kwargs=fk)


@pytest.mark.parametrize("args,kwargs,shape", [
    ((3, 4, 3), dict(stride=2, padding=1, output_padding=1), (2, 3, 5)),
    ((4, 2, 2), dict(groups=2, dilation=3), (4, 6)),
])
def test_conv_transpose1d_module(args, kwargs, shape):
    check_module("ConvTranspose1d", args, kwargs, shape, "float64")


def test_conv_transpose3d_module():
    check_module("ConvTranspose3d", (2, 4, (2, 3, 2)),
                 dict(stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 0)), (1, 2, 3, 4, 3), "float64")


# ---- functional forms, second order, dtypes ------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, 2, 1, (1, 2), 2),
    lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, None, 1, "same", 2, 2),
    lambda lib, x, w, b: lib.conv2d(x, w, b, 1, 1, 1, 2),
], ids=["strided", "same", "torch.conv2d"])
def test_conv2d_gradgrad(fn):
    check(fn, (2, 4, 7, 8), (6, 2, 3, 3), (6,), gradgrad=True)


def test_depthwise_gradgrad():
    check(lambda lib, x, w: lib.nn.functional.conv2d(x, w, None, 2, 1, 1, 3), (2, 3, 7, 6), (6, 1, 3, 3),
          gradgrad=True)


def test_conv_transpose_gradgrad():
    check(lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(x, w, b, 2, 1, 1, 2), (2, 4, 4, 5), (4, 3, 3, 3),
          (6,), gradgrad=True)
    check(lambda lib, x, w: lib.conv_transpose1d(x, w, None, 2, 0, 1), (2, 3, 5), (3, 2, 3), gradgrad=True)


def test_conv1d_conv3d_functional():
    check(lambda lib, x, w, b: lib.nn.functional.conv1d(x, w, b, 1, "same", 3), (2, 3, 9), (4, 3, 3), (4,))
    check(lambda lib, x, w: lib.conv1d(x, w, stride=2), (2, 3, 9), (4, 3, 3))
    check(lambda lib, x, w, b: lib.nn.functional.conv3d(x, w, b, (2, 1, 1), 1), (1, 2, 5, 4, 4), (3, 2, 3, 2, 3),
          (3,))
    check(lambda lib, x, w: lib.nn.functional.conv_transpose3d(x, w, None, 2, 1, 1), (1, 2, 3, 3, 2),
          (2, 3, 3, 3, 3))


def test_conv_integer_half_complex():
    rng = np.random.default_rng(1)
    x = rng.integers(-3, 4, (2, 3, 5, 6)).astype(np.int64)
    w = rng.integers(-3, 4, (4, 3, 3, 3)).astype(np.int64)
    check(lambda lib, a, b: lib.nn.functional.conv2d(a, b, None, 1, 1), x, w)
    check(lambda lib, a, b: lib.nn.functional.conv2d(a, b, None, 1, 1).float(), x, w)  # result dtype int64
    xh = rng.uniform(-1, 1, (2, 3, 5, 6)).astype(np.float16)
    wh = rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float16)
    check(lambda lib, a, b: lib.nn.functional.conv2d(a, b, None, 1, 1), xh, wh, dtype="float16", grad=False)
    check(lambda lib, a, b, c: lib.nn.functional.conv2d(a, b, c, 2, 1), (2, 3, 6, 5), (4, 3, 3, 2), (4,),
          dtype="complex128")


def test_conv_empty_batch_and_grad_fn():
    check(lambda lib, x, w: lib.nn.functional.conv2d(x, w, None, 1, 1), (0, 3, 5, 5), (4, 3, 3, 3))
    x = ember.randn(2, 3, 5, 5, requires_grad=True)
    y = ember.nn.functional.conv2d(x, ember.randn(4, 3, 3, 3))
    assert y.grad_fn.name() == "ConvolutionBackward0"
    (g,) = ember.autograd.grad(y.sum(), x, create_graph=True)
    assert g.grad_fn is None or g.grad_fn.name() == "ConvolutionBackwardBackward0"


@pytest.mark.parametrize("nd,x,w,kw", [(2, (2, 0, 7, 7), (3, 0, 3, 3), dict(padding=1)),
                                       (2, (0, 0, 7, 7), (3, 0, 3, 3), {}),
                                       (1, (2, 0, 7), (3, 0, 3), dict(stride=2, padding=3)),
                                       (3, (2, 0, 4, 4, 4), (4, 0, 3, 3, 3), dict(groups=2))])
def test_conv_without_input_channels(nd, x, w, kw):
    """No input channels: torch's output has no channels either (not out_channels), the bias is not added,
    and every gradient (the bias's too) is zeros of its input's shape."""
    check(lambda lib, a, b, c: getattr(lib.nn.functional, f"conv{nd}d")(a, b, c, **kw), x, w, (w[0],))


# ---- construction: initialisation, state, errors -------------------------------------------

@pytest.mark.parametrize("cls,args", [("Conv2d", (6, 8, 3)), ("Conv1d", (4, 6, 5, 1, 0, 1, 2)),
                                      ("ConvTranspose2d", (6, 4, (3, 2))), ("Conv3d", (2, 3, 2))])
def test_conv_reset_parameters_bounds(cls, args):
    m = getattr(ember.nn, cls)(*args)
    w = m.weight.detach().numpy()
    fan_in = w.shape[1] * int(np.prod(w.shape[2:]))
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)) and torch's bias bound coincide
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound
    b = m.bias.detach().numpy()
    assert np.abs(b).max() <= bound and b.std() > 0
    assert m.weight.dtype is ember.float32 and m.weight.requires_grad
    ember.manual_seed(0)
    m.reset_parameters()
    first = m.weight.detach().numpy().copy()
    ember.manual_seed(0)
    m.reset_parameters()
    np.testing.assert_array_equal(m.weight.detach().numpy(), first)


def test_conv_module_attributes():
    for lib in LIBS:
        m = lib.nn.Conv2d(4, 6, 3, padding="same", padding_mode="reflect", bias=False, dtype=lib.float64)
        assert m.weight.dtype is lib.float64 and m.bias is None
        assert list(m._reversed_padding_repeated_twice) == [1, 1, 1, 1]
        assert m.kernel_size == (3, 3) and m.stride == (1, 1) and m.padding == "same"
        t = lib.nn.ConvTranspose1d(4, 6, 3, groups=2)
        assert tuple(t.weight.shape) == (4, 3, 3) and t.output_padding == (0,) and t.transposed


@pytest.mark.parametrize("fn", [
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(6, 2, 3, 3)),  # channels vs groups=1
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 2, 3, 3), groups=2),  # not divisible
    lambda lib: lib.nn.functional.conv2d(lib.ones(8, 8), lib.ones(5, 1, 3, 3)),  # rank
    lambda lib: lib.nn.functional.conv2d(lib.ones(1, 2, 4, 8, 8), lib.ones(5, 2, 3, 3)),
    lambda lib: lib.nn.functional.conv1d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 9, 9)),  # output too small
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 2, 2), lib.ones(5, 4, 3, 3), dilation=2, padding=1),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 3, 3), stride=2, padding="same"),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 3, 3), padding="foo"),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 3, 3), padding=-1),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 3, 3), stride=0),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 3, 3), dilation=0),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 3, 3), groups=0),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 3, 3), stride=(1, 2, 3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 3, 3), lib.ones(4)),  # bias size
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 3, 3, dtype=lib.float64)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8, dtype=lib.float64), lib.ones(5, 4, 3, 3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(5, 4, 3, 3), lib.ones(5, dtype=lib.float64)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8, dtype=lib.bool), lib.ones(5, 4, 3, 3, dtype=lib.bool)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 8, 8), lib.ones(0, 4, 3, 3)),
    lambda lib: lib.nn.functional.conv_transpose2d(lib.ones(2, 4, 8, 8), lib.ones(4, 3, 3, 3), stride=2,
                                                   output_padding=2),
    lambda lib: lib.nn.functional.conv_transpose1d(lib.ones(2, 4, 8), lib.ones(4, 3, 3), output_padding=1),
    lambda lib: lib.nn.functional.conv_transpose2d(lib.ones(2, 4, 8, 8), lib.ones(5, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv_transpose2d(lib.ones(2, 4, 8, 8), lib.ones(4, 3, 3, 3), lib.ones(4)),
    lambda lib: lib.nn.functional.conv_transpose2d(lib.ones(2, 4, 8, 8), lib.ones(4, 3, 3, 3), groups=3),
    lambda lib: lib.nn.functional.conv_transpose2d(lib.ones(8, 8), lib.ones(4, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv_transpose2d(lib.ones(2, 4, 8, 8), lib.ones(4, 3, 3, 3), output_padding=-1),
], ids=lambda f: "")
def test_conv_errors(fn):
    raises_like(fn)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.nn.Conv2d(4, 8, 3, groups=3),
    lambda lib: lib.nn.Conv2d(4, 9, 3, groups=2),
    lambda lib: lib.nn.Conv2d(4, 8, 3, groups=0),
    lambda lib: lib.nn.Conv2d(4, 8, 3, stride=2, padding="same"),
    lambda lib: lib.nn.ConvTranspose2d(4, 8, 3, padding_mode="reflect"),
    lambda lib: lib.nn.Conv2d(4, 8, 3)(lib.ones(2, 3, 8, 8)),
    lambda lib: lib.nn.Conv2d(4, 8, 3)(lib.ones(4, 8)),
    lambda lib: lib.nn.ConvTranspose2d(4, 6, 3, stride=2)(lib.ones(2, 4, 4, 4), output_size=[20, 9]),
    lambda lib: lib.nn.ConvTranspose2d(4, 6, 3, stride=2)(lib.ones(2, 4, 4, 4), output_size=[9]),
])
def test_conv_module_errors(fn):
    raises_like(fn)


def test_conv_module_errors_type_only():
    # torch prints a Python set here, whose order depends on string hashing: compare the type only
    raises_like(lambda lib: lib.nn.Conv2d(4, 8, 3, padding="foo"), match_message=False)
    raises_like(lambda lib: lib.nn.Conv2d(4, 8, 3, padding_mode="bad"), match_message=False)


def test_conv_noncontiguous_inputs():
    # transposed input and weight views (NumPy strides that are not C order) give the same results
    check(lambda lib, x, w: lib.nn.functional.conv2d(x.transpose(2, 3), w.transpose(2, 3), None, 1, 1),
          (2, 3, 6, 5), (4, 3, 3, 2))
    check(lambda lib, x, w: lib.nn.functional.conv2d(x.transpose(2, 3), w, None, 2, 1, 1, 3), (2, 3, 6, 5),
          (6, 1, 3, 3))
    check(lambda lib, x, w: lib.nn.functional.conv_transpose2d(x[:, :, ::2], w, None, 2), (2, 3, 6, 5),
          (3, 2, 3, 3))
    check(lambda lib, x: lib.nn.functional.max_pool2d(x.transpose(2, 3), 3, 2, 1), (2, 3, 7, 6))


@pytest.mark.parametrize("groups,stride,padding", [(1, 1, 1), (1, 2, 2), (4, 1, 1), (8, 2, 1), (8, 1, 0)])
def test_conv2d_split_across_intraop_threads(monkeypatch, groups, stride, padding):
    """With the split threshold at zero every copy and depthwise kernel runs on two threads in
    pieces; results and all three gradients must still match torch."""
    from ember._backend import parallel
    monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "threads", lambda: 2)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 8, 9, 10))
    w = rng.standard_normal((8, 8 // groups, 3, 3))
    b = rng.standard_normal(8)
    outs = []
    for lib in LIBS:
        xs, ws, bs = (_tensor(lib, a, True) for a in (x, w, b))
        y = lib.nn.functional.conv2d(xs, ws, bs, stride=stride, padding=padding, groups=groups)
        (y * y).sum().backward()
        outs.append([_np(y), _np(xs.grad), _np(ws.grad), _np(bs.grad)])
    for t, e in zip(*outs):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("layout", ["per_sample", "pointwise", "channel_major", "batch_last"])
@pytest.mark.parametrize("fn,x_shape,w_shape,kw", [
    ("conv2d", (3, 6, 7, 8), (4, 6, 3, 3), dict(padding=1)),
    ("conv2d", (2, 1, 6, 7), (5, 1, 3, 3), dict(padding=1)),  # widening: input gradient by GEMM + col2im
    ("conv2d", (3, 6, 9, 8), (4, 3, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)),
    ("conv2d", (3, 6, 7, 8), (5, 6, 1, 1), {}),
    ("conv2d", (3, 6, 7, 8), (5, 6, 1, 1), dict(stride=2)),
    ("conv2d", (3, 6, 7, 8), (4, 3, 1, 1), dict(groups=2)),
    ("conv1d", (2, 4, 11), (3, 4, 1), dict(stride=3)),
    ("conv1d", (2, 4, 11), (3, 4, 3), dict(padding=2, dilation=2)),
    ("conv3d", (2, 3, 4, 5, 3), (2, 3, 1, 1, 1), {}),
    ("conv3d", (2, 3, 4, 5, 3), (2, 3, 2, 3, 1), dict(padding=(1, 0, 0), stride=(1, 2, 1))),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 3, 1, 1), dict(stride=2)),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 3, 3, 3), dict(padding=1)),
])
def test_conv_each_gemm_layout(monkeypatch, dtype, layout, fn, x_shape, w_shape, kw):
    """The per-sample im2col, the 1x1 per-sample GEMM and the channel-major im2col (batch-second or
    batch-last columns) are chosen by size; forcing each one in turn, outputs, gradients and a
    second-order gradient must match torch."""
    from ember._ops import conv
    big = 10 ** 9
    monkeypatch.setattr(conv, "_PER_SAMPLE_MIN_POSITIONS", 1 if layout == "per_sample" else big)
    monkeypatch.setattr(conv, "_POINTWISE_MIN_POSITIONS", 1 if layout == "pointwise" else big)
    monkeypatch.setattr(conv, "_BATCH_LAST_MAX_POSITIONS", big if layout == "batch_last" else 0)
    rng = np.random.default_rng(1)

    def draw(shape):
        a = rng.standard_normal(shape)
        return a + 1j * rng.standard_normal(shape) if dtype == "complex128" else a
    x = draw(x_shape)
    w = draw(w_shape)
    b = draw(w_shape[1] * kw.get("groups", 1) if "transpose" in fn else w_shape[0])
    outs = []
    for lib in LIBS:
        xs, ws, bs = (_tensor(lib, a, True) for a in (x, w, b))
        y = getattr(lib.nn.functional, fn)(xs, ws, bs, **kw)
        gx, gw = lib.autograd.grad((y * y.conj()).real.sum(), (xs, ws), create_graph=True)
        ((gx * gx.conj()).real.sum() + (gw * gw.conj()).real.sum()).backward()
        outs.append([_np(y), _np(gx), _np(gw), _np(xs.grad), _np(ws.grad), _np(bs.grad)])
    for t, e in zip(*outs):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("layout", ["per_sample", "pointwise", "channel_major", "batch_last"])
@pytest.mark.parametrize("k,pad", [(3, 1), (1, 0), (3, 0)])
def test_conv_each_gemm_layout_on_strided_views(monkeypatch, layout, k, pad):
    """An input that is a flipped, transposed and strided view (negative and non-contiguous strides)
    reaches each layout's window view and copies as it is."""
    from ember._ops import conv
    big = 10 ** 9
    monkeypatch.setattr(conv, "_PER_SAMPLE_MIN_POSITIONS", 1 if layout == "per_sample" else big)
    monkeypatch.setattr(conv, "_POINTWISE_MIN_POSITIONS", 1 if layout == "pointwise" else big)
    monkeypatch.setattr(conv, "_BATCH_LAST_MAX_POSITIONS", big if layout == "batch_last" else 0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 6, 9, 8))
    w = rng.standard_normal((4, 6, k, k))
    outs = []
    for lib in LIBS:
        xs = _tensor(lib, x, True)
        y = lib.nn.functional.conv2d(xs.flip(2).transpose(2, 3)[:, :, ::2], _tensor(lib, w), padding=pad)
        y.square().sum().backward()
        outs.append([_np(y), _np(xs.grad)])
    for t, e in zip(*outs):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("x_shape,w_shape,kw", [
    ((2, 3, 7), (3, 2, 3), dict(dilation=2, output_padding=1, padding=1)),
    ((2, 4, 5, 6), (4, 1, 2, 2), dict(dilation=(2, 1), output_padding=(1, 0), groups=4)),  # depthwise
    ((2, 4, 5, 6), (4, 3, 1, 1), dict(stride=(2, 1), dilation=2, output_padding=(0, 1))),  # 1x1
    ((1, 2, 4, 4, 3), (2, 2, 2, 1, 2), dict(dilation=(2, 2, 1), output_padding=(1, 1, 0), padding=(1, 0, 0))),
])
def test_conv_transpose_output_padding_at_stride_one_matches_torch(x_shape, w_shape, kw):
    """output_padding in a stride-1 dim (allowed when dilation > 1) lengthens the output; the extra
    positions flow through every backward and double-backward path (flipped conv, depthwise, 1x1)."""
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    fn = f"conv_transpose{len(x_shape) - 2}d"
    outs = []
    for lib in LIBS:
        xs, ws = _tensor(lib, x, True), _tensor(lib, w, True)
        y = getattr(lib.nn.functional, fn)(xs, ws, **kw)
        gx, gw = lib.autograd.grad((y * y).sum(), (xs, ws), create_graph=True)
        (gx.square().sum() + gw.square().sum()).backward()
        outs.append([_np(y), _np(gx), _np(gw), _np(xs.grad), _np(ws.grad)])
    for t, e in zip(*outs):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("padding", [2, 3])
def test_conv_transpose_empty_or_negative_output_like_torch(dtype, padding):
    """A zero-length output is an empty tensor or torch's error depending on the dtype (torch's backends
    differ, and bfloat16 goes to oneDNN only on CPUs that run it natively); a negative one is always a
    RuntimeError (torch's oneDNN path words it its own way; the native one, as ember, reports 1-d as 2-d)."""
    results = []
    for lib in LIBS:
        d = getattr(lib, dtype)
        try:
            y = lib.nn.functional.conv_transpose1d(lib.zeros(2, 9, 2, dtype=d), lib.zeros(9, 3, 2, dtype=d),
                                                   padding=padding, dilation=2, groups=3)
            results.append(tuple(y.shape))
        except RuntimeError as e:
            results.append(str(e) if dtype in ("float64", "float16") else "RuntimeError")
    assert results[1] == results[0]


@pytest.mark.parametrize("cls,args", [("Conv2d", (6, 8, 3)), ("Conv1d", (4, 6, 5, 1, 0, 1, 2)),
                                      ("ConvTranspose2d", (6, 4, (3, 2))), ("Conv3d", (2, 3, 2))])
def test_conv_reset_parameters_matches_torch(cls, args):
    """test_conv_reset_parameters_bounds seeded alike: construction and reset_parameters draw torch's weights."""
    def story(lib):
        lib.manual_seed(0)
        m = getattr(lib.nn, cls)(*args)
        out = [m.weight, m.bias]
        m.reset_parameters()
        return out + [m.weight, m.bias]
    check_story(story)


@pytest.mark.parametrize("limit", [1, 1 << 16])
def test_weight_gradient_in_sample_chunks_matches_torch(limit, monkeypatch):
    """The weight gradient's im2col in chunks of samples (Note [Weight-gradient chunks]; the limit forced down
    to one sample, then a few): grouped, strided, dilated, every chunk's GEMM summed."""
    from ember._ops import conv as C
    monkeypatch.setattr(C, "WEIGHT_COLS_MAX", limit)
    rng = np.random.default_rng(4)
    for shape, w_shape, kw in (((5, 4, 20, 19), (6, 4, 3, 3), dict(padding=1)),
                               ((3, 6, 35, 33), (4, 3, 3, 2), dict(stride=2, dilation=(1, 2), groups=2)),
                               ((4, 3, 18, 18), (5, 3, 5, 5), dict(padding=2))):
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal(w_shape).astype(np.float32)
        out = {}
        for lib in (ember, torch):
            xs = lib.from_numpy(x.copy()).requires_grad_()
            ws = lib.from_numpy(w.copy()).requires_grad_()
            y = lib.nn.functional.conv2d(xs, ws, **kw)
            (y * y).sum().backward()
            out[lib] = [t.detach().numpy() for t in (y, xs.grad, ws.grad)]
        for a, b in zip(out[ember], out[torch]):
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4 * float(np.abs(b).max()))
