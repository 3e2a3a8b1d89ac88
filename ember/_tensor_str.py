"""Tensor repr in torch's format (tensor([[1., 2.]], requires_grad=True)), and set_printoptions."""
import math

import numpy as np

from . import _dtype as D


class _PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """torch.set_printoptions."""
    if profile == "default":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 4, 1000, 3, 80
    elif profile == "short":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 1000, 2, 80
    elif profile == "full":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = \
            4, math.inf, 3, 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    return {"precision": PRINT_OPTS.precision, "threshold": PRINT_OPTS.threshold,
            "edgeitems": PRINT_OPTS.edgeitems, "linewidth": PRINT_OPTS.linewidth,
            "sci_mode": PRINT_OPTS.sci_mode}


class _Formatter:
    """Chooses integer, fixed or scientific notation and a common width, like torch."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        if not floating:
            for v in values.tolist():
                self.max_width = max(self.max_width, len(str(v)))
        else:
            vals = values.astype(np.float64)
            nz = vals[np.isfinite(vals) & (vals != 0)]
            if nz.size:
                a = np.abs(nz)
                lo, hi = float(a.min()), float(a.max())
                self.int_mode = bool(np.all(nz == np.ceil(nz)))
                if self.int_mode:
                    if hi / lo > 1000.0 or hi > 1.0e8:
                        self.sci_mode = True
                        widths = [len(f"{v:.{p}e}") for v in nz.tolist()]
                    else:
                        widths = [len(f"{v:.0f}") + 1 for v in nz.tolist()]
                else:
                    if hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
                        self.sci_mode = True
                        widths = [len(f"{v:.{p}e}") for v in nz.tolist()]
                    else:
                        widths = [len(f"{v:.{p}f}") for v in nz.tolist()]
                self.max_width = max([self.max_width] + widths)
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def width(self):
        return self.max_width

    def format(self, value):
        p = PRINT_OPTS.precision
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(arr):
    e = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        return np.concatenate((arr[:e], arr[-e:])) if arr.shape[0] > 2 * e else arr
    if arr.shape[0] > 2 * e:
        parts = [_summarized(arr[i]) for i in list(range(e)) + list(range(arr.shape[0] - e, arr.shape[0]))]
    else:
        parts = [_summarized(a) for a in arr]
    return np.stack(parts)


def _val_str(v, f1, f2):
    if f2 is None:
        return f1.format(v)
    real = f1.format(v.real)
    imag = (f2.format(v.imag) + "j").lstrip()
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector_str(arr, indent, summarize, f1, f2):
    element_length = f1.width() + 2
    if f2 is not None:
        element_length += f2.width() + 1
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    e = PRINT_OPTS.edgeitems
    if summarize and arr.shape[0] > 2 * e:
        data = [_val_str(v, f1, f2) for v in arr[:e].tolist()] + [" ..."] + \
               [_val_str(v, f1, f2) for v in arr[-e:].tolist()]
    else:
        data = [_val_str(v, f1, f2) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _str_with(arr, indent, summarize, f1, f2):
    if arr.ndim == 0:
        return _val_str(arr.item(), f1, f2)
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, f1, f2)
    e = PRINT_OPTS.edgeitems
    n = arr.shape[0]
    if summarize and n > 2 * e:
        slices = [_str_with(arr[i], indent + 1, summarize, f1, f2) for i in range(e)] + ["..."] + \
                 [_str_with(arr[i], indent + 1, summarize, f1, f2) for i in range(n - e, n)]
    else:
        slices = [_str_with(arr[i], indent + 1, summarize, f1, f2) for i in range(n)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _tensor_str(arr, dtype, indent):
    summarize = arr.size > PRINT_OPTS.threshold
    if dtype in (D.float16, D.bfloat16):
        arr = arr.astype(np.float32)
    data = _summarized(arr) if summarize else arr
    if dtype.category == D.COMPLEX:
        f1 = _Formatter(data.real.reshape(-1), True)
        f2 = _Formatter(data.imag.reshape(-1), True)
        return _str_with(arr, indent, summarize, f1, f2)
    f1 = _Formatter(data.reshape(-1), dtype.category == D.FLOAT)
    return _str_with(arr, indent, summarize, f1, None)


def _add_suffixes(tensor_str, suffixes, indent):
    parts = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, prefix="tensor("):
    indent = len(prefix)
    arr = t._data
    dtype = t._dtype
    suffixes = []
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append("size=" + str(tuple(arr.shape)))
        body = "[]"
    else:
        body = _tensor_str(arr, dtype, indent)
    if dtype not in (D.get_default_dtype(), D.default_complex_dtype(), D.int64, D.bool):
        suffixes.append(f"dtype={dtype!r}")
    fn = t._grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return prefix + _add_suffixes(body, suffixes, indent)
