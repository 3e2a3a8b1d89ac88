"""Random batch norm against torch: BatchNorm1d/2d/3d with random shapes, affine or not, running
stats or not, momentum (None: cumulative average), eps, train or eval, float32 or float64, two
forward passes (the running stats move) then backward; with the kernels on one thread or forced to
split over channel ranges on two. Outputs, gradients and running buffers must match torch.
"""
import numpy as np
import pytest
import torch

import ember

TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-10)}


def _case(rng):
    nd = int(rng.integers(0, 4))  # 0: BatchNorm1d over (N, C)
    c, n = int(rng.integers(1, 6)), int(rng.integers(2, 5))
    shape = (n, c) + tuple(int(rng.integers(1, 6)) for _ in range(nd))
    kw = dict(affine=bool(rng.random() < 0.7), track_running_stats=bool(rng.random() < 0.8),
              momentum=None if rng.random() < 0.2 else float(rng.choice([0.1, 0.5])),
              eps=float(rng.choice([1e-5, 1e-3])))
    dtype = str(rng.choice(["float32", "float64"]))
    x = (rng.standard_normal(shape) * rng.uniform(0.1, 10) + rng.uniform(-5, 5)).astype(dtype)
    return f"BatchNorm{max(nd, 1)}d", c, kw, bool(rng.random() < 0.7), x, rng.standard_normal(shape).astype(dtype)


def _run(lib, name, c, kw, train, x, g):
    d = x.dtype.name
    m = getattr(lib.nn, name)(c, **kw).to(getattr(lib, d))
    with lib.no_grad():
        if kw["affine"]:
            m.weight.copy_(lib.from_numpy(np.linspace(0.5, 1.5, c).astype(d)))
            m.bias.copy_(lib.from_numpy(np.linspace(-1, 1, c).astype(d)))
        if kw["track_running_stats"]:
            m.running_mean.copy_(lib.from_numpy(np.linspace(-0.2, 0.2, c).astype(d)))
            m.running_var.copy_(lib.from_numpy(np.linspace(0.5, 2, c).astype(d)))
    m.train(train)
    xs = lib.from_numpy(x.copy()).requires_grad_()
    m(xs)
    y = m(xs)
    y.backward(lib.from_numpy(g.copy()))
    got = [y, xs.grad] + ([m.weight.grad, m.bias.grad] if kw["affine"] else [])
    got += [m.running_mean, m.running_var, m.num_batches_tracked] if kw["track_running_stats"] else []
    return [t.detach().numpy() for t in got]


@pytest.mark.parametrize("split", [False, True], ids=["one-thread", "split"])
@pytest.mark.parametrize("seed", range(2))
def test_random_batch_norm_matches_torch(monkeypatch, seed, split):
    if split:
        from ember._backend import parallel
        monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
        monkeypatch.setattr(parallel, "threads", lambda: 2)
    rng = np.random.default_rng(seed)
    for _ in range(100):
        case = _case(rng)
        for e, t in zip(_run(ember, *case), _run(torch, *case)):
            assert e.shape == t.shape, case[:4]
            np.testing.assert_allclose(e, t, err_msg=str(case[:4]), **TOL[case[4].dtype.name])
