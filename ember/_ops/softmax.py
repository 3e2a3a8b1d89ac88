"""The softmax family: softmax, log_softmax, softmin (torch.* and F.* forms; re-exported by
activation.py). Own kernels (stable: the row maximum is subtracted first; only the output is
saved) and fused backward ops with their own double backward.
"""
import warnings

import numpy as np

from .. import _backend as B
from .. import _dtype as D
from .._backend import opmath as _opmath
from .._backend import contiguous, jit, parallel, ufunc
from .._tensor import _wrap_dim
from ._registry import Op, install

_NAMES = D.SCALAR_NAMES


def _row(a):
    """A 0-d array as a row of one (softmax over dim 0 of a scalar)."""
    return a if a.ndim else a.reshape(1)


def _empty_like(a, b=None):
    """The result buffer of a kernel over a (and b): pooled and C-contiguous when they are, else a's layout
    (as NumPy's own result would be for one operand)."""
    c_order = a.flags.c_contiguous and (b is None or (b.flags.c_contiguous and b.dtype == a.dtype))
    return B.empty(a.shape, a.dtype) if c_order else np.empty_like(a, np.result_type(a, *([] if b is None else [b])))


def exp_rows_kernels(x, dim):
    """ember/_backend/softmax_jit.py, when it runs for rows of x along dim (the last of 2, float32, rows
    contiguous) with ember[jit] installed and the switch on (Note [JIT kernels]); else None (the NumPy rows)."""
    if dim != x.ndim - 1 or x.ndim != 2 or x.dtype != np.float32 or x.strides[1] != x.itemsize:
        return None
    return jit.load("softmax_jit")


def shifted_exp(ws, d, kernels, es, m=None, s=None, normalize=False):
    """The softmax family's row pass along d: m = the rows' maxima, es = exp(ws - m) and s = es's row sums (both
    keepdims, written into m and s when given), then es /= s when normalize (softmax), through kernels
    (exp_rows_kernels) when it runs, else in NumPy."""
    if kernels is not None and 0 < ws.shape[d] <= kernels.SHORT_ROW:
        m = np.empty((ws.shape[0], 1), ws.dtype) if m is None else m
        s = np.empty_like(m) if s is None else s
        kernels.max_exp_rows(ws, m, es, s, normalize)
        return m, s
    m = np.maximum.reduce(ws, axis=d, keepdims=True, out=m)
    if s is None:
        s = np.empty_like(m)
    if kernels is not None:
        kernels.exp_rows(ws, m, es, s, normalize)
        return m, s
    np.subtract(ws, m, out=es)
    np.exp(es, out=es)
    np.add.reduce(es, axis=d, keepdims=True, out=s)
    if normalize:
        es /= s
    return m, s


def _last_dim_rows(w, dim):
    """w as 2-D rows along dim when dim is its last and the rows can be one view (so the compiled row pass can
    take them), with the dim to reduce; else w and dim as they are."""
    if w.ndim > 2 and dim == w.ndim - 1 and w.flags.c_contiguous and w.size:
        return w.reshape(-1, w.shape[-1]), 1
    return w, dim


def _compiled_rows(dim, *arrays):
    """(softmax_jit, the arrays as 2-D rows along dim) when the compiled row passes take every one of them (same
    shape; see exp_rows_kernels), else (None, None)."""
    rows = [_last_dim_rows(a, dim) for a in arrays]
    if any(r.shape != rows[0][0].shape or d != 1 or exp_rows_kernels(r, d) is None for r, d in rows):
        return None, None
    return jit.load("softmax_jit"), tuple(r for r, _ in rows)


class Softmax(Op):
    """exp(x - max) / sum, along one dim (own kernel: stable, and saves only the output)."""
    _name = "SoftmaxBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        w = _row(_opmath(x))
        if w.size:
            e = _empty_like(w)
            rows2, d = _last_dim_rows(w, dim)
            kernels = exp_rows_kernels(rows2, d)

            def rows(ws, es):
                shifted_exp(ws, d, kernels, es, normalize=True)
            parallel.run_rows(rows, (rows2, e.reshape(rows2.shape)), d)
        else:
            e = w.copy()
        out = contiguous(e.astype(x.dtype, copy=False).reshape(x.shape))  # as torch's, contiguous
        ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return _SoftmaxBackwardData.apply(grad, out, dim=ctx.dim)


class _SoftmaxBackwardData(Op):
    """softmax's backward, out * (grad - sum(grad * out)), in one temporary (torch's
    _softmax_backward_data); its own backward (double backward) in ember ops."""
    _name = "SoftmaxBackwardDataBackward0"

    @staticmethod
    def forward(ctx, grad, out, dim):
        ctx.dim = dim
        ctx.save_for_backward(grad, out)
        g = _row(_opmath(grad))
        o = _row(_opmath(out))
        t = _empty_like(g, o)
        kernels, rows2 = _compiled_rows(dim, g, o, t)

        def rows(gs, os, ts):
            np.multiply(gs, os, out=ts)
            np.subtract(gs, np.add.reduce(ts, axis=dim, keepdims=True), out=ts)
            ts *= os
        if kernels is not None:
            parallel.run_rows(kernels.softmax_grad_rows, rows2, 1)
        else:
            parallel.run_rows(rows, (g, o, t), dim)
        return B.shaped(t.astype(grad.dtype, copy=False), grad.shape)

    def backward(ctx, v):
        grad, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        dim = ctx.dim
        ggrad = _SoftmaxBackwardData.apply(v, out, dim=dim) if need[0] else None
        gout = None
        if need[1]:
            gout = v * (grad - (grad * out).sum(dim, keepdim=True)) - grad * (v * out).sum(dim, keepdim=True)
        return ggrad, gout


class LogSoftmax(Op):
    _name = "LogSoftmaxBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        w = _row(_opmath(x))
        if w.size:
            shifted = _empty_like(w)
            rows2, d = _last_dim_rows(w, dim)
            kernels = exp_rows_kernels(rows2, d)

            def rows(ws, ss):
                if kernels is not None:  # ss holds exp(x - m) for the row sums, then x - (m + log(sum))
                    m, s = shifted_exp(ws, d, kernels, ss)
                    np.subtract(ws, m + np.log(s), out=ss)
                    return
                np.subtract(ws, np.maximum.reduce(ws, axis=d, keepdims=True), out=ss)
                ss -= np.log(np.add.reduce(ufunc(np.exp, ss), axis=d, keepdims=True))
            parallel.run_rows(rows, (rows2, shifted.reshape(rows2.shape)), d)
        else:
            shifted = w.copy()
        out = contiguous(shifted.astype(x.dtype, copy=False).reshape(x.shape))
        ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return _LogSoftmaxBackwardData.apply(grad, out, dim=ctx.dim)


class _LogSoftmaxBackwardData(Op):
    """log_softmax's backward, grad - exp(out) * sum(grad), in one temporary (torch's
    _log_softmax_backward_data); its own backward in ember ops."""
    _name = "LogSoftmaxBackwardDataBackward0"

    @staticmethod
    def forward(ctx, grad, out, dim):
        ctx.dim = dim
        ctx.save_for_backward(grad, out)
        g = _row(_opmath(grad))
        o = _row(_opmath(out))
        t = _empty_like(g, o)

        def rows(gs, os, ts):
            np.exp(os, out=ts)
            ts *= np.add.reduce(gs, axis=dim, keepdims=True)
            np.subtract(gs, ts, out=ts)
        parallel.run_rows(rows, (g, o, t), dim)
        return B.shaped(t.astype(grad.dtype, copy=False), grad.shape)

    def backward(ctx, v):
        grad, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        dim = ctx.dim
        p = out.exp()
        ggrad = v - (v * p).sum(dim, keepdim=True) if need[0] else None
        gout = -v * p * grad.sum(dim, keepdim=True) if need[1] else None
        return ggrad, gout


def _softmax_call(op, kernel, input, dim, dtype):
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{kernel.split('_lastdim')[0]}(): argument 'dim' (position 2) must be int, not "
                        f"{type(dim).__name__}")
    x = input if dtype is None or dtype is input._dtype else input.to(dtype)
    if x._dtype.category != D.FLOAT:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_NAMES[x._dtype]}'")
    d = _wrap_dim(dim, x._data.ndim)
    return op.apply(x, dim=d)


def _softmax(input, dim, dtype=None):
    return _softmax_call(Softmax, "softmax_lastdim_kernel_impl", input, dim, dtype)


def _log_softmax(input, dim, dtype=None):
    return _softmax_call(LogSoftmax, "log_softmax_lastdim_kernel_impl", input, dim, dtype)


def _implicit_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                  "dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _implicit_dim("softmax", input.dim(), _stacklevel)
    return _softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _implicit_dim("log_softmax", input.dim(), _stacklevel)
    return _log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _implicit_dim("softmin", input.dim(), _stacklevel)
    x = input if dtype is None else input.to(dtype)
    return _softmax(-x, dim)


def _named(fn, name):
    fn.__name__ = fn.__qualname__ = name
    return fn


install(_named(_softmax, "softmax"), "softmax", out=True)
install(_named(_log_softmax, "log_softmax"), "log_softmax", out=True)
