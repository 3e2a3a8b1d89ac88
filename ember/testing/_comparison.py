"""torch.testing.assert_close: compare tensors, NumPy arrays, numbers and nested sequences or
mappings of them, with torch's per-dtype default tolerances and torch's failure messages."""
import cmath
import math
from collections.abc import Mapping, Sequence

import numpy as np

from .. import _dtype as D
from .._layout import strided as _strided
from .._tensor import Tensor

__all__ = ["assert_close"]

# (rtol, atol) when none are given; integer and bool dtypes compare exactly
_TOLERANCES = {D.float16: (1e-3, 1e-5), D.bfloat16: (1.6e-2, 1e-5), D.float32: (1.3e-6, 1e-5),
               D.float64: (1e-7, 1e-7), D.complex64: (1.3e-6, 1e-5), D.complex128: (1e-7, 1e-7)}


class _Mismatch(Exception):
    """A failed comparison: the message and where in a nested input it happened."""

    def __init__(self, message, item=(), exc_type=AssertionError):
        super().__init__(message)
        self.message = message
        self.item = item
        self.exc_type = exc_type


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError unless actual and expected are close: |a - e| <= atol + rtol * |e|
    elementwise, plus equal shapes (and dtype, device, layout unless told otherwise)."""
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as m:
        text = m.message
        if m.item:
            text += "\n\nThe failure occurred for item " + "".join(f"[{k!r}]" for k in m.item)
        if m.exc_type is not AssertionError:
            raise m.exc_type(text) from None
        if msg is None:
            raise AssertionError(text) from None
        raise AssertionError(msg(text) if callable(msg) else msg) from None


def _compare(actual, expected, item, options):
    """Recurse into sequences and mappings; compare leaves with the first pair type that fits."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", item)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, item + (i,), options)
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        keys_a = set(actual)
        keys_e = set(expected)
        if keys_a != keys_e:
            missing = sorted(keys_e - keys_a, key=repr)
            extra = sorted(keys_a - keys_e, key=repr)
            raise _Mismatch(f"The keys of the mappings do not match:\nMissing keys in the actual mapping: {missing}\n"
                            f"Additional keys in the actual mapping: {extra}", item)
        try:
            keys = sorted(actual)
        except TypeError:
            keys = list(actual)
        for k in keys:
            _compare(actual[k], expected[k], item + (k,), options)
        return
    if actual is None or expected is None:
        if actual is not None or expected is not None:
            raise _Mismatch(f"None mismatch: {actual} is not {expected}", item)
        return
    if _is_bool(actual) and _is_bool(expected):
        if bool(actual) != bool(expected):
            raise _Mismatch(f"Booleans mismatch: {bool(actual)} is not {bool(expected)}", item)
        return
    if _is_number(actual) and _is_number(expected):
        _compare_numbers(actual, expected, item, options)
        return
    if _is_tensor_like(actual, expected, options["allow_subclasses"]):
        _compare_tensors(_as_tensor(actual), _as_tensor(expected), item, options)
        return
    raise _Mismatch(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.",
                    item, TypeError)


def _is_sequence(x):
    return isinstance(x, Sequence) and not isinstance(x, str)


def _is_bool(x):
    return isinstance(x, (bool, np.bool_))


def _is_number(x):
    return isinstance(x, (int, float, complex, np.number)) and not _is_bool(x)


def _is_tensor_like(a, e, allow_subclasses):
    if isinstance(a, np.ndarray) and isinstance(e, np.ndarray):
        return True
    if not (isinstance(a, Tensor) and isinstance(e, Tensor)):
        return False
    return allow_subclasses or type(a) is type(e)


def _as_tensor(x):
    return Tensor._make(np.asarray(x)) if isinstance(x, np.ndarray) else x


# ---- numbers ------------------------------------------------------------------------------

def _number_dtype(x):
    if isinstance(x, complex):
        return D.complex128
    if isinstance(x, float):
        return D.float64
    return D.int64


def _compare_numbers(actual, expected, item, options):
    a = actual.item() if isinstance(actual, np.generic) else actual
    e = expected.item() if isinstance(expected, np.generic) else expected
    if options["check_dtype"] and type(a) is not type(e):
        raise _Mismatch(f"The (d)types do not match: {type(a)} != {type(e)}.", item)
    rtol, atol = _tolerances(_number_dtype(a), _number_dtype(e), options)
    if not _scalar_close(a, e, rtol, atol, options["equal_nan"]):
        raise _Mismatch(_scalar_message(a, e, rtol, atol), item)


def _scalar_close(a, e, rtol, atol, equal_nan):
    if a == e:
        return True
    if _isnan(a) or _isnan(e):
        return equal_nan and _isnan(a) and _isnan(e)
    if _isinf(a) or _isinf(e):
        return False
    return abs(a - e) <= atol + rtol * abs(e)


def _isnan(x):
    return cmath.isnan(x) if isinstance(x, complex) else isinstance(x, float) and math.isnan(x)


def _isinf(x):
    return cmath.isinf(x) if isinstance(x, complex) else isinstance(x, float) and math.isinf(x)


def _scalar_message(a, e, rtol, atol):
    diff = abs(a - e)
    rel = diff / abs(e) if e != 0 else (math.nan if diff == 0 or _isnan(diff) else math.inf)
    return _message("Scalars", f"Expected {e} but got {a}.", diff, None, rel, None, rtol, atol)


def _message(kind, extra, diff, diff_at, rel, rel_at, rtol, atol):
    """torch's failure text: headline, detail line, greatest absolute and relative differences."""
    exact = rtol == 0 and atol == 0
    lines = [f"{kind} are not {'equal' if exact else 'close'}!", "", extra]
    for name, value, at, tol in (("absolute", diff, diff_at, atol), ("relative", rel, rel_at, rtol)):
        if at is None:
            line = f"{name.title()} difference: {value}"
        else:
            line = f"Greatest {name} difference: {value} at index {at}"
        if not exact:
            line += f" (up to {tol} allowed)"
        lines.append(line)
    return "\n".join(lines)


def _tolerances(da, de, options):
    if options["rtol"] is not None:
        return options["rtol"], options["atol"]
    ra, aa = _TOLERANCES.get(da, (0.0, 0.0))
    re, ae = _TOLERANCES.get(de, (0.0, 0.0))
    return max(ra, re), max(aa, ae)


# ---- tensors ------------------------------------------------------------------------------

def _compare_tensors(actual, expected, item, options):
    actual = actual.detach()
    expected = expected.detach()
    checks = [("shape", actual.shape, expected.shape)]
    if options["check_device"]:
        checks.append(("device", actual.device, expected.device))
    if options["check_dtype"]:
        checks.append(("dtype", actual.dtype, expected.dtype))
    if options["check_layout"]:
        checks.append(("layout", actual.layout, expected.layout))
    for name, a, e in checks:
        if a != e:
            raise _Mismatch(f"The values for attribute '{name}' do not match: {a} != {e}.", item)
    if options["check_stride"] and actual.layout is _strided and actual.stride() != expected.stride():
        raise _Mismatch(f"The values for attribute 'stride()' do not match: {actual.stride()} != "
                        f"{expected.stride()}.", item)
    rtol, atol = _tolerances(actual.dtype, expected.dtype, options)
    if actual.dtype is not expected.dtype:
        common = D.promote_types(actual.dtype, expected.dtype)
        actual = actual.to(common)
        expected = expected.to(common)
    if actual.is_sparse:
        _compare_sparse(actual, expected, item, rtol, atol, options["equal_nan"])
        return
    if actual.is_sparse_csr:
        _compare_sparse_csr(actual, expected, item, rtol, atol, options["equal_nan"])
        return
    _compare_values(actual, expected, item, rtol, atol, options["equal_nan"], "Tensor-likes")


def _compare_sparse(actual, expected, item, rtol, atol, equal_nan):
    a = actual.coalesce()
    e = expected.coalesce()
    if a._nnz() != e._nnz():
        raise _Mismatch(f"The number of specified values in sparse COO tensors does not match: {a._nnz()} != "
                        f"{e._nnz()}", item)
    _compare_values(a._indices(), e._indices(), item, 0.0, 0.0, False, "Sparse COO indices")
    _compare_values(a._values(), e._values(), item, rtol, atol, equal_nan, "Sparse COO values")


def _compare_sparse_csr(actual, expected, item, rtol, atol, equal_nan):
    if actual._nnz() != expected._nnz():
        raise _Mismatch(f"The number of specified values in sparse CSR tensors does not match: {actual._nnz()} != "
                        f"{expected._nnz()}", item)
    _compare_values(actual.crow_indices(), expected.crow_indices(), item, 0.0, 0.0, False,
                    "Sparse CSR crow_indices")
    _compare_values(actual.col_indices(), expected.col_indices(), item, 0.0, 0.0, False, "Sparse CSR col_indices")
    _compare_values(actual.values(), expected.values(), item, rtol, atol, equal_nan, "Sparse CSR values")


def _close_mask(x, y, rtol, atol, equal_nan):
    """torch.isclose on arrays: equal, or |x - y| <= atol + rtol * |y| (NaNs equal only if asked)."""
    if x.dtype == np.bool_:
        return x == y
    if x.dtype.kind in "iu":
        if rtol == 0 and atol == 0:
            return x == y
        x = x.astype(np.float64)
        y = y.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        close = x == y
        finite = np.isfinite(x) & np.isfinite(y)
        close |= finite & (np.abs(x - y) <= atol + rtol * np.abs(y))
        if equal_nan:
            close |= np.isnan(x) & np.isnan(y)
    return close


def _compare_values(actual, expected, item, rtol, atol, equal_nan, kind):
    x = actual._data
    y = expected._data
    matches = _close_mask(x, y, rtol, atol, equal_nan)
    if matches.all():
        return
    if x.ndim == 0:
        raise _Mismatch(_scalar_message(actual.item(), expected.item(), rtol, atol), item)
    total = matches.size
    bad = int(total - np.count_nonzero(matches))
    extra = f"Mismatched elements: {bad} / {total} ({bad / total:.1%})"
    xf = x.reshape(-1)
    yf = y.reshape(-1)
    ok = matches.reshape(-1)
    if xf.dtype.kind not in "fc" and xf.dtype.name != "bfloat16":
        xf = xf.astype(np.int64)  # differences of integers and bools, without unsigned wrap-around
        yf = yf.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = np.abs(xf - yf)
        diff[ok] = 0
        rel = diff / np.abs(yf)
        if rel.dtype == np.float64 and xf.dtype == np.int64:
            rel = rel.astype(D.get_default_dtype().np)  # torch divides integer tensors in the default dtype
        rel[ok] = 0
    at_diff = int(np.argmax(diff))
    at_rel = int(np.argmax(rel))
    raise _Mismatch(_message(kind, extra, diff[at_diff].item(), _index(at_diff, x.shape), rel[at_rel].item(),
                             _index(at_rel, x.shape), rtol, atol), item)


def _index(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape))
