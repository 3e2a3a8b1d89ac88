"""Shared pieces of the OpInfo/ModuleInfo sweeps: torch values to ember, results compared, failure lists.

torch's own sample databases (`op_db`, `module_db`) hold torch tensors; every tensor is copied through
NumPy into an ember tensor (one ember tensor per torch tensor, so aliasing is kept), the same call runs
on both libraries, and the results are compared with torch.testing.assert_close's per-dtype tolerances.
"""
import os
import types

import numpy as np
import torch

import ember

# torch.testing.assert_close's defaults (rtol, atol) per dtype; gradients get ten times as much
# (a formula written differently sums in another order).
TOLERANCES = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5),
              torch.complex64: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7), torch.complex128: (1e-7, 1e-7)}


class Converter:
    """torch values -> ember values, recursively; the same torch tensor maps to the same ember tensor."""

    def __init__(self):
        self.memo = {}

    def __call__(self, value):
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, torch.dtype):
            return getattr(ember, str(value).replace("torch.", ""))
        if isinstance(value, torch.Size):
            return ember.Size(value)
        if isinstance(value, torch.device):
            return ember.device(str(value))
        if isinstance(value, (torch.memory_format, torch.layout)):
            return getattr(ember, str(value).replace("torch.", ""))
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self(v) for v in value)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, torch.nn.TransformerEncoderLayer):
            return self.encoder_layer(value)
        if isinstance(value, torch.nn.Module) and not any(True for _ in value.parameters()):
            return self.stateless_module(value)
        if isinstance(value, types.BuiltinFunctionType) or getattr(value, "__module__", "") == "torch.nn.functional":
            return ember_namesake(value)
        return value

    def tensor(self, t):
        """An ember copy of a torch tensor (a leaf that requires grad if the torch one does)."""
        key = id(t)
        if key in self.memo:
            return self.memo[key][1]
        if t.layout == torch.sparse_csr:
            return self.csr_tensor(t)
        if t._base is not None and t.is_leaf and t._base.is_contiguous() and not t.is_conj() and not t.is_neg() \
                and t.dtype == t._base.dtype:  # (a real view of a complex base, as .real, is copied instead)
            # a leaf view (base[5:15] ...): the same view of an ember copy of the base, so ops that read
            # the storage around it (as_strided with a storage_offset) see the same memory (the copy of a
            # contiguous base has its layout)
            base = self.tensor(t._base)  # a leaf view: the base needs no grad
            e = base.as_strided(tuple(t.shape), t.stride(), t.storage_offset() - t._base.storage_offset())
            if t.requires_grad:
                e.requires_grad_(True)
            self.memo[key] = (t, e)
            return e
        try:
            arr = t.detach().resolve_conj().resolve_neg().numpy().copy()
        except Exception as exc:  # sparse, meta, quantized: no NumPy view of the values
            raise Unsupported(f"torch tensor {t.layout} on {t.device}") from exc
        e = ember.from_numpy(arr)
        if t.requires_grad:
            e.requires_grad_(True)
        self.memo[key] = (t, e)  # keep t alive so its id stays unique
        return e

    def csr_tensor(self, t):
        """An ember sparse CSR copy of a torch one (same index dtype, pattern and values)."""
        parts = [ember.from_numpy(p.detach().resolve_conj().numpy().copy())
                 for p in (t.crow_indices(), t.col_indices(), t.values())]
        e = ember.sparse_csr_tensor(*parts, tuple(t.shape), requires_grad=t.requires_grad)
        self.memo[id(t)] = (t, e)
        return e

    def stateless_module(self, module):
        """ember's module of the same class with the same settings (a distance_function argument ...)."""
        cls = getattr(ember.nn, type(module).__name__, None)
        if cls is None:
            raise Unsupported(f"ember.nn lacks {type(module).__name__}")
        e = cls()
        for k, v in vars(module).items():
            if not k.startswith("_"):
                setattr(e, k, self(v))
        return e

    def encoder_layer(self, layer):
        """An ember TransformerEncoderLayer with a torch layer's settings and weights (TransformerEncoder's
        argument)."""
        attn = layer.self_attn
        e = ember.nn.TransformerEncoderLayer(
            attn.embed_dim, attn.num_heads, dim_feedforward=layer.linear1.out_features, dropout=layer.dropout.p,
            activation=self(layer.activation), layer_norm_eps=layer.norm1.eps, batch_first=attn.batch_first,
            norm_first=layer.norm_first, bias=layer.linear1.bias is not None, dtype=self(layer.linear1.weight.dtype))
        e.load_state_dict({k: self(v.detach()) for k, v in layer.state_dict().items()})
        return e


class Unsupported(Exception):
    """A sample the sweep cannot express on ember (sparse layouts ...): counted apart, never passed."""


def ember_namesake(fn):
    """ember's function of the same torch name (torch.nn.functional.relu -> ember.nn.functional.relu)."""
    module = getattr(fn, "__module__", None) or "torch"
    name = fn.__name__
    path = {"torch.nn.functional": ("nn", "functional"), "torch._C._nn": ("nn", "functional"),
            "torch._C._linalg": ("linalg",), "torch._C._special": ("special",),
            "torch._C._fft": ("fft",)}.get(module, ())
    obj = ember
    for part in path + (name,):
        obj = getattr(obj, part, None)
        if obj is None:
            return fn
    return obj


def rebind(fn):
    """A copy of a lambda from torch's test files whose `torch` global is ember (its body runs on ember)."""
    if not isinstance(fn, types.FunctionType):
        return fn
    glb = dict(fn.__globals__)
    glb["torch"] = ember
    if "F" in glb:
        glb["F"] = ember.nn.functional
    return types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, fn.__closure__)


def to_torch(e):
    """An ember tensor's values as a torch tensor (for assert_close)."""
    arr = e.detach().numpy()
    assert type(arr) is np.ndarray, f"ember's storage is a {type(arr).__name__}, not an ndarray (0-d invariant)"
    if arr.dtype.name == "bfloat16":
        return torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.array(arr))


def flatten(value):
    """Tensors and plain values of a (nested) result, in order."""
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        out = []
        for v in value:
            out.extend(flatten(v))
        return out
    return [value]


def compare(expected, actual, where="output", values=True, grad_tol=False, tols=None):
    """Assert an ember result matches torch's: structure, types, shapes, dtypes and (unless values=False) values.

    tols: {torch dtype: (rtol, atol)} widening the defaults for one op (torch's own overrides for it)."""
    if isinstance(expected, torch.Tensor) and expected.layout != torch.strided:  # to_sparse: compare dense
        assert actual.layout == getattr(ember, str(expected.layout)[6:]), f"{where}: layout torch {expected.layout}"
        if expected.layout == torch.sparse_csr:  # the same pattern, index dtypes included
            for name in ("crow_indices", "col_indices"):
                compare(getattr(expected, name)(), getattr(actual, name)(), f"{where}.{name}()")
        expected, actual = expected.to_dense(), actual.to_dense()
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, ember.Tensor), f"{where}: torch gave a Tensor, ember a {type(actual).__name__}"
        assert tuple(expected.shape) == tuple(actual.shape), \
            f"{where}: shape torch {tuple(expected.shape)} vs ember {tuple(actual.shape)}"
        assert str(expected.dtype) == str(actual.dtype), \
            f"{where}: dtype torch {expected.dtype} vs ember {actual.dtype}"
        if values:
            rtol, atol = TOLERANCES.get(expected.dtype, (0, 0))
            if tols and expected.dtype in tols:
                rtol, atol = max(rtol, tols[expected.dtype][0]), max(atol, tols[expected.dtype][1])
            if grad_tol:
                rtol, atol = rtol * 10, atol * 10
            exp = expected.detach().resolve_conj().resolve_neg()
            torch.testing.assert_close(to_torch(actual), exp, rtol=rtol, atol=atol, equal_nan=True,
                                       msg=lambda m: f"{where}: {_one_line(m)}")
        return
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), \
            f"{where}: torch gave a {type(expected).__name__}, ember a {type(actual).__name__}"
        assert len(expected) == len(actual), f"{where}: length torch {len(expected)} vs ember {len(actual)}"
        for i, (a, b) in enumerate(zip(expected, actual)):
            compare(a, b, f"{where}[{i}]", values, grad_tol, tols)
        return
    if isinstance(expected, torch.dtype):
        assert str(expected) == str(actual), f"{where}: torch {expected} vs ember {actual}"
        return
    if isinstance(expected, float) and values:
        assert isinstance(actual, (float, int)), f"{where}: torch gave a float, ember a {type(actual).__name__}"
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=where)
        return
    if isinstance(expected, (bool, int, complex)) and values:
        assert actual == expected, f"{where}: torch {expected!r} vs ember {actual!r}"
        return
    if expected is None:
        assert actual is None, f"{where}: torch gave None, ember a {type(actual).__name__}"


def _one_line(message):
    """assert_close's report in one line: the verdict and the greatest differences."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    keep = [lines[0]] + [ln for ln in lines if ln.startswith("Greatest")]
    return " ".join(keep)


def same_exception(torch_exc, ember_exc):
    """True when ember raised the exception type torch raised (torch's private subclasses by their base)."""
    t = type(torch_exc)
    if isinstance(ember_exc, t):
        return True
    if type(ember_exc).__name__ == t.__name__:
        return True
    builtin = next(b for b in t.__mro__ if b.__module__ == "builtins")
    return isinstance(ember_exc, builtin) and builtin is not Exception


def raises_like(torch_exc, call, where):
    """Assert call() raises torch_exc's type (torch raised it for the same arguments)."""
    try:
        call()
    except Exception as exc:
        assert same_exception(torch_exc, exc), f"{where}: torch raised {short(torch_exc)}, ember {short(exc)}"
        return
    raise AssertionError(f"{where}: torch raised {short(torch_exc)}, ember did not")


def short(exc):
    """One line naming an exception, for failure reports."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:160]}"


# ---- the expected-failures file ------------------------------------------------------------------

def read_expected(path):
    """{key: reason} from a file of `key  # reason` lines (blank lines and # comments ignored)."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, reason = line.partition("#")
            out[key.strip()] = reason.strip()
    return out


def check_against_expected(failures, expected, prefix, path):
    """Fail on a failure the list lacks (a regression) or a listed one that now passes (update the list)."""
    listed = {k for k in expected if k.split("|")[0] == prefix}
    new = sorted(set(failures) - listed)
    fixed = sorted(listed - set(failures))
    lines = [f"NEW FAILURE {k}: {failures[k]}" for k in new]
    lines += [f"NOW PASSES (remove from {os.path.basename(path)}) {k}" for k in fixed]
    assert not lines, "\n".join(lines[:40]) + (f"\n... {len(lines) - 40} more" if len(lines) > 40 else "")


def within_cap(expected, cap):
    """The listed failures among the samples a capped run checks (the list is written from an uncapped run).

    Keys are `name|missing`, `name|error|i` or `name|<dtype or mode>|i[|part]`: the index is the third field."""
    return {k: v for k, v in expected.items() if k.split("|")[1] == "missing" or int(k.split("|")[2]) < cap}


def write_expected(path, header, failures):
    """Rewrite the expected-failures file from a full run (EMBER_UPDATE_EXPECTED=1)."""
    with open(path, "w") as f:
        f.write(header)
        for key in sorted(failures):
            f.write(f"{key}  # {failures[key]}\n")
