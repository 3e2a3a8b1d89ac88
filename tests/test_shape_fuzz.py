"""Random chains of shape and view ops against torch: reshape/view, permute, transpose, flatten,
squeeze/unsqueeze, expand, repeat, flip, roll, narrow, movedim, contiguous, t, split, chunk,
unflatten, diagonal, unfold, select and strided slicing, one to three in a row, then backward.
Shapes, strides (of dims longer than 1, and of non-empty results), contiguity, values, the input
gradient and raised exception types must match torch.
"""
import numpy as np
import pytest
import torch

import ember


def _chain(rng):
    ops = []
    for _ in range(int(rng.integers(1, 4))):
        ops.append((str(rng.choice(["reshape", "view", "permute", "transpose", "flatten", "squeeze", "unsqueeze", "expand", "repeat", "flip", "roll", "narrow", "movedim", "contiguous", "t_if2d", "split", "chunk", "unflatten", "diagonal", "unfold", "select", "sliced"])), int(rng.integers(0, 2**31))))
    return ops
def _apply(lib, t, op, s):
    r = np.random.default_rng(s)
    nd = t.dim()
    if op in ("reshape", "view"):
        n = t.numel(); shapes = [(n,), (-1,)]
        for a in range(1, n + 1):
            if n % a == 0: shapes.append((a, -1)); shapes.append((n // a, a))
        return getattr(t, op)(*shapes[int(r.integers(0, len(shapes)))])
    if nd == 0 and op not in ("unsqueeze", "flatten", "contiguous", "repeat", "expand", "flip"): return t
    d = int(r.integers(-nd, nd)) if nd else 0
    if op == "permute": return t.permute(*[int(v) for v in r.permutation(nd)])
    if op == "transpose": return t.transpose(d, int(r.integers(-nd, nd)))
    if op == "flatten": return t.flatten(*( sorted([int(r.integers(0, nd)), int(r.integers(0, nd))]) if nd else ()))
    if op == "squeeze": return t.squeeze(d) if r.random() < 0.5 else t.squeeze()
    if op == "unsqueeze": return t.unsqueeze(int(r.integers(-nd - 1, nd + 1)))
    if op == "expand": return t.unsqueeze(0).expand(*([int(r.integers(1, 3))] + [-1] * nd))
    if op == "repeat": return t.repeat(*[int(r.integers(1, 3)) for _ in range(nd + int(r.integers(0, 2)))]) if nd + 1 else t
    if op == "flip": return t.flip(*([d] if nd else []))
    if op == "roll": return t.roll(int(r.integers(-3, 4)), d)
    if op == "narrow":
        n = t.shape[d]; st = int(r.integers(0, n + 1)); return t.narrow(d, st, int(r.integers(0, n - st + 1)))
    if op == "movedim": return t.movedim(d, int(r.integers(-nd, nd)))
    if op == "contiguous": return t.contiguous()
    if op == "t_if2d": return t.t() if nd <= 2 else t
    if op == "split": return t.split(int(r.integers(1, 3)), d)[0]
    if op == "chunk": return t.chunk(int(r.integers(1, 4)), d)[-1]
    if op == "unflatten":
        n = t.shape[d]; fs = [(n,)] + [(a, n // a) for a in range(1, n + 1) if n % a == 0]; return t.unflatten(d, fs[int(r.integers(0, len(fs)))])
    if op == "diagonal": return t.diagonal(int(r.integers(-2, 3)), 0, -1) if nd >= 2 else t
    if op == "unfold":
        n = t.shape[d]; size = int(r.integers(0, n + 1)); return t.unfold(d, size, int(r.integers(1, 3)))
    if op == "select": return t.select(d, int(r.integers(-t.shape[d], t.shape[d]))) if t.shape[d] else t
    if op == "sliced": return t[(slice(None),) * (d % nd) + (slice(None, None, 2),)]
    return t

def _run(lib, x, ops):
    xs = lib.from_numpy(x.copy()).requires_grad_()
    t = xs
    try:
        for op, s in ops:
            t = _apply(lib, t, op, s)
        t.backward(lib.from_numpy(np.arange(t.numel(), dtype=np.float64).reshape(tuple(t.shape))))
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    return tuple(t.shape), tuple(t.stride()), t.is_contiguous(), t.detach().numpy().copy(), xs.grad.numpy().copy()


@pytest.mark.parametrize("seed", range(4))
def test_random_shape_op_chains_match_torch(seed):
    rng = np.random.default_rng(seed)
    for _ in range(250):
        x = rng.standard_normal(tuple(int(s) for s in rng.integers(1, 4, size=int(rng.integers(0, 4)))))
        ops = _chain(rng)
        t, e = _run(torch, x, ops), _run(ember, x, ops)
        what = (x.shape, ops)
        if isinstance(t, str) or isinstance(e, str):
            assert e == t, what
            continue
        assert e[0] == t[0], what
        if t[3].size:  # an empty result's strides are arbitrary, as are those of size-1 dims
            assert [st for st, n in zip(e[1], e[0]) if n > 1] == [st for st, n in zip(t[1], t[0]) if n > 1], what
            assert e[2] == t[2], what
        np.testing.assert_allclose(e[3], t[3], err_msg=str(what))
        np.testing.assert_allclose(e[4], t[4], err_msg=str(what))
