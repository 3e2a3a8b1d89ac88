"""CrossMapLRN2d's forward and backward as torch computes them (its legacy Lua-era kernel): a local response
normalization across channels, out = x * (k + alpha / size * S)^-beta, with S and the backward's window sums taken
over torch's exact channel windows (Note [Cross-map LRN windows])."""
import numpy as np

from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import Op

# Note [Cross-map LRN windows]: torch builds S by a running sum over channels: channel 0 sums channels
# [0, pre_pad), pre_pad = (size - 1) // 2 + 1, and each next channel adds the one pre_pad - 1 ahead and, only
# past channel pre_pad, drops the one pre_pad behind. Channel 0 is never dropped, so S is not a symmetric window
# (and torch's gradient, a symmetric-ish window sum of its own, is not the forward's exact derivative: its
# gradcheck fails). ember computes the same sums with prefix sums over channels, for both passes.


def _prefix(a):
    """Sums over channels [0, j) of a (N, C, H, W), for j = 0 .. C: (N, C + 1, H, W)."""
    p = np.zeros((a.shape[0], a.shape[1] + 1) + a.shape[2:], dtype=a.dtype)
    np.cumsum(a, axis=1, out=p[:, 1:])
    return p


class CrossMapLRN2d(Op):
    _name = "CrossMapLRN2dBackward"

    @staticmethod
    def forward(ctx, x, size, alpha, beta, k):
        c = x.shape[1]
        p = _prefix(x * x)
        pre_pad = int((size - 1) / 2 + 1)
        ch = np.arange(c)
        s = p[:, np.minimum(ch + pre_pad, c)]
        dropped = ch > pre_pad
        s[:, dropped] -= p[:, ch[dropped] - pre_pad + 1] - p[:, 1:2]
        scale = s * (alpha / size) + k
        out = x * scale ** -beta
        ctx.save_for_backward(x, out)
        ctx.scale = scale
        ctx.args = (size, alpha, beta)
        return out.astype(x.dtype, copy=False)

    def backward(ctx, grad):
        if grad_mode._state.enabled:
            raise NotImplementedError("CrossMapLRN2d has no double backward (create_graph=True)")
        x, out = (t._data for t in ctx.saved_tensors)
        size, alpha, beta = ctx.args
        scale = ctx.scale
        g = grad._data
        c = x.shape[1]
        lead = int(size - (size - 1) / 2)
        if lead + c > c + size - 1:  # torch's kernel places the ratios at [lead, lead + C) of C + size - 1 rows
            raise RuntimeError(f"start ({lead}) + length ({c}) exceeds dimension size ({c + size - 1}).")
        r = _prefix(g * out / scale)
        ch = np.arange(c)
        accum = r[:, np.minimum(ch + size - lead, c)] - r[:, np.maximum(ch - lead, 0)]
        gx = scale ** -beta * g - (2 * alpha * beta / size) * x * accum
        return Tensor._make(gx.astype(x.dtype, copy=False))


def cross_map_lrn2d(input, size, alpha, beta, k):
    return CrossMapLRN2d.apply(input, size=size, alpha=alpha, beta=beta, k=k)
