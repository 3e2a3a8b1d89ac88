"""A whole GRU sequence in one op: the GRU counterpart of rnn.py's _LSTMSequence.

One layer in one direction over an unpacked sequence, from the projected inputs xg = x W_ih^T + b_ih
(T, B, 3H, gate order r, z, n) and the initial state: per step hg = h W_hh^T + b_hh,
r = sigmoid(xg_r + hg_r), z = sigmoid(xg_z + hg_z), n = tanh(xg_n + r * hg_n), h' = n + z * (h - n)
(torch's placement of b_hn inside r * (...)). The time loop runs in NumPy with r, z, n and hg_n kept per
step; the backward runs the recursion back in NumPy, each step's factors that do not depend on the
incoming gradient computed for all steps up front, and gets W_hh's and b_hh's gradients from one GEMM and
one sum over all steps. Under create_graph the backward is rebuilt from ember ops (the forward recomputed
differentiably, then the recursion through rnn.py's GRU gate formula).
"""
import numpy as np

from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import Op
from .joining import cat, stack
from .pointwise import _sigmoid_kernel

_state = grad_mode._state


class _GRUSequence(Op):
    """(out, h_n) of one GRU layer direction over a whole unpacked sequence (see the module docstring)."""
    # torch's CPU GRU stacks its per-step outputs: its output's grad_fn has this name
    _name = "StackBackward0"

    @staticmethod
    def forward(ctx, xg, h0, w_hh, b_hh, reverse):
        ctx.reverse = reverse
        steps, batch, width = xg.shape
        n = width // 3
        w_t = np.ascontiguousarray(w_hh.T)
        ws = np.empty((steps, batch, 4 * n), dtype=xg.dtype)  # per step: r, z, n, hg_n
        hs = np.empty((steps + 1, batch, n), dtype=xg.dtype)  # in processing order, hs[0] = h0
        hg = np.empty((batch, width), dtype=xg.dtype)
        hs[0] = h0
        for k in range(steps):
            x = xg[steps - 1 - k if reverse else k]
            w = ws[k]
            np.matmul(hs[k], w_t, out=hg)
            if b_hh is not None:
                hg += b_hh
            rz = w[:, :2 * n]
            np.add(x[:, :2 * n], hg[:, :2 * n], out=rz)
            _sigmoid_kernel(rz, out=rz)
            w[:, 3 * n:] = hg[:, 2 * n:]
            new = w[:, 2 * n:3 * n]
            np.multiply(w[:, :n], hg[:, 2 * n:], out=new)
            new += x[:, 2 * n:]
            np.tanh(new, out=new)
            h = hs[k + 1]
            np.subtract(hs[k], new, out=h)
            h *= w[:, n:2 * n]
            h += new
        ctx.workspace = (ws, hs)
        out = (hs[:0:-1] if reverse else hs[1:]).copy()  # a copy: the backward reads hs
        ctx.save_for_backward(xg, h0, w_hh, b_hh)
        return out, hs[steps].copy()

    def backward(ctx, g_out, g_h):
        xg, h0, w_hh, b_hh = ctx.saved_tensors
        if _state.enabled:
            return _gru_sequence_backward_graph(xg, h0, w_hh, b_hh, ctx.reverse, g_out, g_h)
        ws, hs = ctx.workspace
        need = ctx.needs_input_grad
        steps, batch, _ = ws.shape
        n = hs.shape[-1]
        dt = ws.dtype
        r, z, new, hn = (ws[..., k * n:(k + 1) * n] for k in range(4))
        # the factors of dh in each gate's gradient, for all steps at once, so that a step is six NumPy
        # calls: with a = (1 - z)(1 - n^2), d(xg) = dh * (a hn r(1 - r), (h_prev - n) z(1 - z), a) and
        # d(hg) the same with a * r in the n gate; dh_prev = dh * z + d(hg) @ W_hh
        a = 1 - new * new
        a *= 1 - z
        coef = np.empty((steps, batch, 4, n), dtype=dt)  # r, z, n gates of d(xg), then the n gate of d(hg)
        np.multiply(a, hn, out=coef[:, :, 0])
        coef[:, :, 0] *= r
        coef[:, :, 0] *= 1 - r
        np.subtract(hs[:steps], new, out=coef[:, :, 1])
        coef[:, :, 1] *= z
        coef[:, :, 1] *= 1 - z
        coef[:, :, 2] = a
        np.multiply(a, r, out=coef[:, :, 3])
        dxg = np.empty((steps, batch, 3, n), dtype=dt)
        dhg = np.empty((steps, batch, 3, n), dtype=dt)
        dh = np.zeros((batch, n), dtype=dt) if g_h is None else g_h._data.copy()
        go = None if g_out is None else g_out._data
        w = w_hh._data
        for k in range(steps - 1, -1, -1):
            if go is not None:
                dh += go[steps - 1 - k if ctx.reverse else k]
            d = dh[:, None, :]
            np.multiply(d, coef[k, :, :3], out=dxg[k])
            dhg[k, :, :2] = dxg[k, :, :2]
            np.multiply(dh, coef[k, :, 3], out=dhg[k, :, 2])
            dh *= z[k]
            dh += np.matmul(dhg[k].reshape(batch, 3 * n), w)
        gxg = None
        if need[0]:
            d = dxg.reshape(steps, batch, 3 * n)
            gxg = Tensor._make(np.ascontiguousarray(d[::-1]) if ctx.reverse else d)
        flat = dhg.reshape(-1, 3 * n)
        gw = Tensor._make(np.matmul(flat.T, hs[:steps].reshape(-1, n))) if need[2] else None
        gb = Tensor._make(flat.sum(0)) if need[3] else None
        return gxg, Tensor._make(dh) if need[1] else None, gw, gb


def _gru_sequence_backward_graph(xg, h0, w_hh, b_hh, reverse, g_out, g_h):
    """_GRUSequence's gradients in ember ops, differentiable again: the forward is recomputed from the inputs
    so that the saved gates and states carry their own history."""
    from .rnn import _gru_gates_backward_graph
    steps = xg.shape[0]
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    h = h0
    trace = []
    for t in order:
        hg = h.matmul(w_hh.t())
        if b_hh is not None:
            hg = hg + b_hh
        xr, xz, xn = xg[t].chunk(3, 1)
        hr, hz, hn = hg.chunk(3, 1)
        r = (xr + hr).sigmoid()
        z = (xz + hz).sigmoid()
        new = (xn + r * hn).tanh()
        trace.append((t, cat([r, z, new, hn], 1), h))
        h = new + z * (h - new)
    dh, gw, gb = g_h, None, None
    dxg = [None] * steps
    for t, ws, h_prev in reversed(trace):
        if g_out is not None:
            dh = g_out[t] if dh is None else dh + g_out[t]
        dx, dhg, direct = _gru_gates_backward_graph(ws, h_prev, dh, None)
        dxg[t] = dx
        dh = direct + dhg.matmul(w_hh)
        step_gw = dhg.t().matmul(h_prev)
        gw = step_gw if gw is None else gw + step_gw
        step_gb = dhg.sum(0)
        gb = step_gb if gb is None else gb + step_gb
    return stack(dxg, 0), dh, gw, None if b_hh is None else gb


def gru_sequence(xg, h0, w_hh, b_hh, reverse):
    """(out, h_n) of one GRU layer direction as one _GRUSequence op."""
    out, h = _GRUSequence.apply(xg, h0, w_hh, b_hh, reverse=reverse)
    fn = out._grad_fn
    if fn is not None:  # outputs that get no gradient reach backward as None (see rnn._no_materialize)
        fn.materialize_grads = False
    return out, h
