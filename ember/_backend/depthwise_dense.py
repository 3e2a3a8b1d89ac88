"""Depthwise convolutions of small planes as one batched GEMM per direction (NumPy's matmul).

Note [Depthwise plane matrices]: on a plane of S positions with P outputs, a depthwise convolution of
one channel is a linear map, an (S, P) matrix M_c whose entries are the channel's taps (or zero where
an input position is not in an output's window). With the channels as the batch, the forward is
(C, N, S) @ M (C, S, P), the input gradient (C, N, P) @ M^T and the weight gradient
x^T (C, S, N) @ g (C, N, P), whose entries at each tap's (input, output) pairs are then summed per
tap. That is S / taps times the multiply-adds of the per-tap passes (Note [Depthwise flat layout]), but
in BLAS, with no phase rows, padding or crop: on MobileNetV2's 4x4 and 8x8 planes (32 samples, 96-192
channels, 2-core EPYC VM) the forward took 0.28 vs 1.77 ms at 4x4 and 0.38 vs 1.36 ms at 8x8 stride 2.
Plans with S * P <= MAX_PAIRS and S <= MAX_SIZE_PER_TAP * taps take it (DepthwisePlan.dense): with few taps
the per-tap passes are cheap and the matrices lost (forward / input / weight gradient at 32x256, dense vs
passes, ms: length 64 with 3 taps 1.9/2.5/1.7 vs 1.4/1.3/1.1, 7 taps 2.2/2.2/2.9 vs 2.3/2.2/1.6, 8x8 with a 1x1
kernel 0.50/0.62/0.61 vs 0.24/0.20/0.18; won: length 16 with 3 taps 0.35/0.27/0.20 vs 0.45/0.39/0.29, 8x8 with
5x5 1.3/1.3/1.3 vs 2.6/2.6/2.7, 6x6 with 3x3 0.30/0.34/0.24 vs 1.26/1.19/0.95).

A zero entry of M times an inf or NaN input is NaN where the per-tap passes read no such input: the
forward and input gradient take this path only when their operands are finite (one sum each),
otherwise the per-tap passes. The weight gradient reads only the taps' own entries of its product, so it
needs no check.
"""
import functools

import numpy as np

MAX_PAIRS = 4096  # S * P at most (Note [Depthwise plane matrices]); 0 turns the path off
MAX_SIZE_PER_TAP = 8  # S at most this many times the taps
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class PlaneMatrix:
    """The (input position, output position, tap) pairs of a depthwise convolution's plane."""

    def __init__(self, spatial, out, kernel, stride, dilation, lo):
        self.spatial = tuple(spatial)
        self.out = tuple(out)
        self.taps = int(np.prod(kernel))
        self.size = int(np.prod(self.spatial))  # S
        self.positions = int(np.prod(self.out))  # P
        nd = len(self.spatial)
        q = np.indices(self.out).reshape(nd, -1)  # output positions, (nd, P)
        k = np.indices(kernel).reshape(nd, -1)  # taps, (nd, K)
        at = (q[:, None, :] * np.array(stride).reshape(nd, 1, 1) + k[:, :, None] * np.array(dilation).reshape(nd, 1, 1)
              - np.array(lo).reshape(nd, 1, 1))  # input position of (tap, output): (nd, K, P)
        inside = np.all((at >= 0) & (at < np.array(self.spatial).reshape(nd, 1, 1)), axis=0)
        tap, pos = np.nonzero(inside)  # tap-major: the pairs of tap 0, then tap 1, ...
        src = np.ravel_multi_index(tuple(a[tap, pos] for a in at), self.spatial)
        self.flat = src * self.positions + pos  # each pair's entry in a flattened (S, P) matrix
        self.tap = tap
        counts = np.bincount(tap, minlength=self.taps)
        self.starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        self.reached = counts > 0

    def matrix(self, w):
        """M (C, S, P) for taps w (C, K)."""
        c = w.shape[0]
        m = np.zeros(c * self.size * self.positions, dtype=w.dtype)
        # one flat scatter (a 2-d one, m[:, flat] = w[:, tap], took ~4x as long)
        at = np.arange(0, m.size, self.size * self.positions)[:, None] + self.flat
        m[at.reshape(-1)] = w[:, self.tap].reshape(-1)
        return m.reshape(c, self.size, self.positions)

    def _planes(self, a, length):
        """(N, C, *spatial) as its (C, N, length) view."""
        return a.reshape(a.shape[0], a.shape[1], length).transpose(1, 0, 2)

    def forward(self, x, w, bias):
        """The convolution (N, C, *out) of x (N, C, *spatial) with w (C, K)."""
        n, c = x.shape[:2]
        out = np.empty((n, c) + self.out, dtype=x.dtype)
        np.matmul(self._planes(x, self.size), self.matrix(w), out=self._planes(out, self.positions))
        if bias is not None:
            out += bias.reshape((1, c) + (1,) * len(self.out)).astype(x.dtype, copy=False)
        return out

    def input_grad(self, g, w):
        """The input gradient (N, C, *spatial) of g (N, C, *out)."""
        n, c = g.shape[:2]
        gx = np.empty((n, c) + self.spatial, dtype=g.dtype)
        np.matmul(self._planes(g, self.positions), self.matrix(w).transpose(0, 2, 1),
                  out=self._planes(gx, self.size))
        return gx

    def weight_grad(self, x, g):
        """The weight gradient (C, K): each tap's pairs of x^T g, summed."""
        c = x.shape[1]
        pairs = np.matmul(self._planes(x, self.size).transpose(0, 2, 1), self._planes(g, self.positions))
        picked = pairs.reshape(c, -1)[:, self.flat]
        gw = np.zeros((c, self.taps), dtype=pairs.dtype)
        if picked.shape[1]:
            gw[:, self.reached] = np.add.reduceat(picked, self.starts[self.reached], axis=1)
        return gw


def plane_matrix(plan):
    """A PlaneMatrix for a DepthwisePlan whose planes are small enough, else None."""
    size, positions = int(np.prod(plan.spatial)), int(np.prod(plan.out))
    if plan.mult != 1 or not 0 < size * positions <= MAX_PAIRS or size > MAX_SIZE_PER_TAP * int(np.prod(plan.kernel)):
        return None
    return _plane_matrix(plan.spatial, plan.out, plan.kernel, plan.stride, plan.dilation, plan.lo)


@functools.lru_cache(maxsize=64)
def _plane_matrix(*geometry):
    return PlaneMatrix(*geometry)


def usable_dtype(a):
    return a.dtype in _DTYPES


def usable(*arrays):
    """Whether the forward or input gradient on the plane matrices computes what the per-tap passes would:
    real float32/float64 operands, all finite (checked through their sums: an overflowing sum only sends
    the call to the passes)."""
    return all(usable_dtype(a) and np.isfinite(np.add.reduce(a, axis=None)) for a in arrays)
