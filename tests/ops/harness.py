"""The one helper behind the op table: run a case on ember and torch, compare everything.

A Case's lambda takes the library module first (`torch` or `ember`) and then the
input tensors, so the very same code runs on both. Inputs are built in NumPy from a
fixed seed. Compared: output types, shapes, dtypes, values (dtype-aware tolerance), output layouts (strides of the
dims of size > 1 and contiguity, unless the row or LAYOUT_DIFFERS says why ember's differs; gradients'
layouts are not compared: torch's are whatever its backward formulas happen to build),
requires_grad, gradients of every float input under a random upstream gradient, the
exception type for error rows, and second-order gradients for rows marked gradgrad.
"""
import dataclasses
import os
import zlib
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch

import ember

FLOAT_DTYPES = ("float32", "float64")


@dataclasses.dataclass
class T:
    """An input tensor spec. dtype None means the case's dtype."""
    shape: tuple = ()
    dtype: Optional[str] = None
    low: float = -2.0
    high: float = 2.0
    grad: bool = True
    values: Any = None          # explicit values (list/array) instead of random
    noncontig: bool = False     # pass a transposed (non-contiguous) view with the same shape
    integer: bool = False       # random integers in [low, high) even for float dtypes


@dataclasses.dataclass
class Case:
    name: str                       # the API under test, e.g. "exp" or "Tensor.view" or "linalg.inv"
    inputs: Sequence[Any]           # T specs, shapes (tuples), or plain Python values passed as-is
    fn: Callable                    # fn(lib, *inputs)
    dtypes: Sequence[str] = FLOAT_DTYPES
    grad: bool = True
    gradgrad: bool = False
    error: Optional[type] = None    # expected exception type (both libraries must raise it)
    atol: Optional[float] = None
    rtol: Optional[float] = None
    grad_atol: Optional[float] = None
    grad_rtol: Optional[float] = None
    check_values: bool = True       # False for ops whose values are random (compare shape/dtype only)
    layout: str = ""                # why ember's result strides deliberately differ from torch's (else compared)
    id: str = ""

    def param_id(self, dtype):
        return f"{self.name}{'-' + self.id if self.id else ''}-{dtype}"


def _seed(text):
    return zlib.crc32(text.encode())


def _np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return np.dtype(name)


def make_input(spec, dtype, rng):
    """NumPy array (or passthrough value) for one input spec."""
    if isinstance(spec, tuple):
        spec = T(spec)
    if not isinstance(spec, T):
        return spec, False
    d = spec.dtype or dtype
    if spec.values is not None:
        arr = np.array(spec.values, dtype=_np_dtype(d) if d != "bool" else bool)
    elif d == "bool":
        arr = rng.random(spec.shape) > 0.5
    elif d in ("int8", "int16", "int32", "int64", "uint8") or spec.integer:
        lo, hi = int(spec.low), int(spec.high)
        if d == "uint8":
            lo = max(lo, 0)
        arr = rng.integers(lo, max(hi, lo + 1), size=spec.shape).astype(_np_dtype(d))
    elif d.startswith("complex"):
        arr = (rng.uniform(spec.low, spec.high, spec.shape) + 1j * rng.uniform(spec.low, spec.high, spec.shape))
        arr = arr.astype(d)
    else:
        arr = rng.uniform(spec.low, spec.high, spec.shape).astype(_np_dtype(d))
    arr = np.asarray(arr)
    if spec.noncontig and arr.ndim >= 2:
        arr = np.ascontiguousarray(arr.swapaxes(-1, -2)).swapaxes(-1, -2)
    elif spec.noncontig and arr.ndim == 1:
        arr = np.repeat(arr, 2)[::2]
    wants_grad = spec.grad and (d.startswith("float") or d.startswith("complex") or d == "bfloat16")
    return arr, wants_grad


def to_lib(lib, arr, requires_grad):
    if lib is torch:
        if arr.dtype.name == "bfloat16":
            t = torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
        else:
            t = torch.from_numpy(np.array(arr))  # copy, keeps strides simple
            if not arr.flags.c_contiguous and arr.ndim >= 2:
                t = t.transpose(-1, -2).contiguous().transpose(-1, -2)
    else:
        a = np.array(arr)
        if not arr.flags.c_contiguous and arr.ndim >= 2:
            a = np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2)
        t = ember.from_numpy(a)
    if requires_grad:
        t.requires_grad_(True)
    return t


def build_inputs(case, dtype):
    rng = np.random.default_rng(_seed(case.param_id(dtype)))
    arrays = [make_input(s, dtype, rng) for s in case.inputs]
    tt, et, grad_idx = [], [], []
    for i, (arr, wants) in enumerate(arrays):
        if isinstance(arr, np.ndarray) and (isinstance(case.inputs[i], (T, tuple))):
            rg = wants and case.grad
            tt.append(to_lib(torch, arr, rg))
            et.append(to_lib(ember, arr, rg))
            if rg:
                grad_idx.append(i)
        else:
            tt.append(arr)
            et.append(arr)
    return tt, et, grad_idx


# ---- comparison -------------------------------------------------------------------------

def tolerances(dtype_name, case, for_grad=False):
    atol = case.grad_atol if for_grad and case.grad_atol is not None else case.atol
    rtol = case.grad_rtol if for_grad and case.grad_rtol is not None else case.rtol
    base = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-5, 1e-4),
            "complex64": (1e-5, 1e-4)}.get(dtype_name, (1e-9, 1e-7))
    if for_grad:
        base = (base[0] * 10, base[1] * 10)
    return (atol if atol is not None else base[0]), (rtol if rtol is not None else base[1])


def to_numpy(t):
    """A torch or ember tensor's values as a NumPy array (bfloat16 widened)."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return t.resolve_conj().resolve_neg().numpy()  # torch's lazy conj/neg bits (real * complex grads)
    arr = t.detach().numpy()
    if arr.dtype.name == "bfloat16":
        arr = arr.astype(np.float32)
    return arr


def dtype_name(d):
    return str(d).replace("torch.", "")


# Ops whose result layout ember deliberately does not follow, with the reason (a row can say so with layout=).
_LAPACK = ("torch's LAPACK results are column-major (Fortran) buffers it transposes into views; ember's come "
           "from NumPy's row-major linalg: the values are the same, the strides an artefact of the library")
LAYOUT_DIFFERS = {
    "cholesky": _LAPACK,
    "cholesky_inverse": _LAPACK,
    "cholesky_solve": _LAPACK,
    "geqrf": _LAPACK,
    "inverse": _LAPACK,
    "linalg.cholesky": _LAPACK,
    "linalg.cholesky_ex": _LAPACK,
    "linalg.eig": _LAPACK,
    "linalg.eigh": _LAPACK,
    "linalg.householder_product": _LAPACK,
    "linalg.inv": _LAPACK,
    "linalg.inv_ex": _LAPACK,
    "linalg.ldl_factor": _LAPACK,
    "linalg.ldl_factor_ex": _LAPACK,
    "linalg.ldl_solve": _LAPACK,
    "linalg.lstsq": _LAPACK,
    "linalg.lu_factor": _LAPACK,
    "linalg.lu_factor_ex": _LAPACK,
    "linalg.lu_solve": _LAPACK,
    "linalg.qr": _LAPACK,
    "linalg.solve": _LAPACK,
    "linalg.solve_ex": _LAPACK,
    "linalg.solve_triangular": _LAPACK,
    "linalg.svd": _LAPACK,
    "linalg.tensorinv": _LAPACK,
    "lu": _LAPACK,
    "lu_solve": _LAPACK,
    "orgqr": _LAPACK,
    "ormqr": _LAPACK,
    "qr": _LAPACK,
    "svd": _LAPACK,
    "triangular_solve": _LAPACK,
    "einsum": "torch's einsum returns a permuted view of its bmm result, its strides set by the contraction order "
              "it picks; ember's contraction (NumPy's einsum) returns its own order",
}
_FFT = ("torch's FFT (MKL) returns the transformed dims in the stride order of its plan; ember's (NumPy's pocketfft) "
        "returns C order: the same values")
LAYOUT_DIFFERS.update({f"fft.{n}": _FFT for n in (
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
    "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")})
LAYOUT_DIFFERS.update(stft=_FFT, istft=_FFT)


def layout(t):
    """The strides of a tensor's dims of size > 1 (the others are free), and its contiguity."""
    if str(t.layout) != "torch.strided" or t.numel() == 0:
        return None
    return tuple(s for n, s in zip(t.shape, t.stride()) if n > 1), t.is_contiguous()


def compare(tv, ev, case, where="output"):
    """Recursively compare a torch result with an ember result."""
    if isinstance(tv, torch.Tensor):
        assert isinstance(ev, ember.Tensor), f"{where}: torch gave a Tensor, ember gave {type(ev).__name__}"
        storage = getattr(ev, "_data", None)  # the invariant: a Tensor's storage is an ndarray, 0-d too
        assert storage is None or type(storage) is np.ndarray, f"{where}: ember's storage is a {type(storage)}"
        assert tuple(tv.shape) == tuple(ev.shape), f"{where}: shape torch {tuple(tv.shape)} vs ember {tuple(ev.shape)}"
        assert dtype_name(tv.dtype) == dtype_name(ev.dtype), \
            f"{where}: dtype torch {tv.dtype} vs ember {ev.dtype}"
        assert tv.requires_grad == ev.requires_grad, \
            f"{where}: requires_grad torch {tv.requires_grad} vs ember {ev.requires_grad}"
        if getattr(case, "layout", None) == "" and not LAYOUT_DIFFERS.get(case.name) and where.startswith("output"):
            tl, el = layout(tv), layout(ev)
            if os.environ.get("LAYOUT_SURVEY") and tl != el:  # (a file listing every difference at once)
                with open(os.environ["LAYOUT_SURVEY"], "a") as fh:
                    fh.write(f"{case.name}|{case.id}|{where}|{tuple(tv.shape)}|{tl}|{el}\n")
            else:
                assert tl == el, f"{where}: layout (strides of dims > 1, contiguous) torch {tl} vs ember {el}"
        if case.check_values:
            a, b = to_numpy(tv), to_numpy(ev)
            if a.dtype.kind in "fc":
                atol, rtol = tolerances(dtype_name(tv.dtype), case)
                np.testing.assert_allclose(b, a, atol=atol, rtol=rtol, equal_nan=True, err_msg=where)
            else:
                np.testing.assert_array_equal(b, a, err_msg=where)
        return
    if isinstance(tv, torch.Size):
        assert tuple(tv) == tuple(ev), f"{where}: size {tuple(tv)} vs {tuple(ev)}"
        return
    if isinstance(tv, (tuple, list)):
        assert isinstance(ev, (tuple, list)), f"{where}: torch gave a sequence, ember {type(ev).__name__}"
        assert len(tv) == len(ev), f"{where}: length {len(tv)} vs {len(ev)}"
        for i, (a, b) in enumerate(zip(tv, ev)):
            compare(a, b, case, f"{where}[{i}]")
        return
    if isinstance(tv, torch.dtype):
        assert dtype_name(tv) == dtype_name(ev), f"{where}: {tv} vs {ev}"
        return
    if isinstance(tv, float) and case.check_values:
        assert isinstance(ev, (float, int)), f"{where}: float vs {type(ev).__name__}"
        atol, rtol = tolerances("float64", case)
        np.testing.assert_allclose(ev, tv, atol=max(atol, 1e-6), rtol=max(rtol, 1e-5), equal_nan=True, err_msg=where)
        return
    if case.check_values:
        assert type(tv) is type(ev) or (isinstance(tv, (int, bool)) and isinstance(ev, (int, bool))), \
            f"{where}: type {type(tv).__name__} vs {type(ev).__name__}"
        assert tv == ev, f"{where}: {tv!r} vs {ev!r}"


def flat_tensors(out, lib_tensor):
    if isinstance(out, lib_tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(flat_tensors(o, lib_tensor))
        return res
    return []


def key_words(msg):
    """The words of torch's error message that ember's must have too (issue 19): the op a message starts
    with (`scatter(): ...`), the argument a TypeError names and the type it wanted (`argument 'dim' (position 2)
    must be int`)."""
    import re
    words = []
    op = re.match(r"(\w+)\(\)", msg)  # the op a message starts with: `scatter(): Expected ...`
    if op:
        words.append(op.group(0))
    m = re.search(r"argument '(\w+)'(?: \(position \d+\))? must be ([\w.]+)", msg)
    return words + ([f"argument '{m.group(1)}'", f"must be {m.group(2)}"] if m else [])


def run_case(case, dtype):
    tt, et, grad_idx = build_inputs(case, dtype)
    if case.error is not None:
        import pytest
        with pytest.raises(case.error) as want:
            case.fn(torch, *tt)
        with pytest.raises(case.error) as got:
            case.fn(ember, *et)
        missing = [w for w in key_words(str(want.value)) if w not in str(got.value)]
        assert not missing, f"torch's key words {missing} missing from ember's message {str(got.value)!r}"
        return
    t_out = case.fn(torch, *tt)
    e_out = case.fn(ember, *et)
    compare(t_out, e_out, case)
    if not grad_idx:
        return
    t_flat = [o for o in flat_tensors(t_out, torch.Tensor)]
    e_flat = [o for o in flat_tensors(e_out, ember.Tensor)]
    pairs = [(a, b) for a, b in zip(t_flat, e_flat) if a.requires_grad]
    if not pairs:
        return
    rng = np.random.default_rng(_seed(case.param_id(dtype) + "grad"))
    t_go, e_go = [], []
    for a, _ in pairs:
        g = rng.standard_normal(tuple(a.shape))
        if a.is_complex():
            g = g + 1j * rng.standard_normal(tuple(a.shape))
        g = np.asarray(g).astype(to_numpy(a).dtype)  # asarray: a 0-d complex sum is a NumPy scalar
        t_go.append(torch.from_numpy(g).to(a.dtype))
        e_go.append(ember.from_numpy(g.astype(np.float32) if dtype_name(a.dtype) == "bfloat16" else g).to(
            getattr(ember, dtype_name(a.dtype))))
    t_in = [tt[i] for i in grad_idx]
    e_in = [et[i] for i in grad_idx]
    create = case.gradgrad
    t_g = torch.autograd.grad([a for a, _ in pairs], t_in, t_go, allow_unused=True, create_graph=create)
    e_g = ember.autograd.grad([b for _, b in pairs], e_in, e_go, allow_unused=True, create_graph=create)
    gcase = dataclasses.replace(case, atol=tolerances(dtype, case, True)[0], rtol=tolerances(dtype, case, True)[1])
    for i, (a, b) in enumerate(zip(t_g, e_g)):
        if a is None and b is None:
            continue
        if a is None:
            a = torch.zeros_like(t_in[i])
        if b is None:
            b = ember.zeros_like(e_in[i])
        compare(a.detach(), b.detach(), gcase, f"grad of input {grad_idx[i]}")
    if create:
        _check_gradgrad(case, dtype, t_g, e_g, t_in, e_in, gcase)


def _check_gradgrad(case, dtype, t_g, e_g, t_in, e_in, gcase):
    rng = np.random.default_rng(_seed(case.param_id(dtype) + "gradgrad"))
    t_sel, e_sel, t_v, e_v = [], [], [], []
    for a, b in zip(t_g, e_g):
        if a is None or b is None or not a.requires_grad:
            continue
        assert b.requires_grad, "ember first-order gradient does not require grad under create_graph=True"
        v = rng.standard_normal(tuple(a.shape))
        if a.is_complex():
            v = v + 1j * rng.standard_normal(tuple(a.shape))
        v = np.asarray(v).astype(to_numpy(a).dtype)
        t_sel.append(a)
        e_sel.append(b)
        t_v.append(torch.from_numpy(v))
        e_v.append(ember.from_numpy(v))
    if not t_sel:
        return
    t_gg = torch.autograd.grad(t_sel, t_in, t_v, allow_unused=True)
    e_gg = ember.autograd.grad(e_sel, e_in, e_v, allow_unused=True)
    for i, (a, b) in enumerate(zip(t_gg, e_gg)):
        if a is None and b is None:
            continue
        if a is None:
            a = torch.zeros_like(t_in[i])
        if b is None:
            b = ember.zeros_like(e_in[i])
        compare(a, b, gcase, f"second-order grad of input {i}")
