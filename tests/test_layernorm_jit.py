"""The compiled layer norm (ember/_backend/layernorm_jit.py, Note [JIT kernels]) against torch: shapes with
one to three normalized dims, with and without weight and bias, each input alone requiring grad, float32
and float64; the same bits on one thread and split across two (block partial sums in block order); and
the switch, which gives the NumPy row blocks."""
import numpy as np
import pytest
import torch

import ember
from ember._backend import jit
from tests._jit import count_calls

pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")


@pytest.fixture(autouse=True)
def compiled_on(monkeypatch):
    """The compiled kernels on whatever EMBER_JIT says (tests that want them off say so)."""
    monkeypatch.setattr(jit, "ENABLED", True)

CASES = [((4, 7), 1, True, True), ((3, 5, 33), 1, True, False), ((2, 3, 4, 5), 2, False, True),
         ((6, 2, 3, 4), 3, False, False), ((300, 64), 1, True, True), ((5, 2), 1, True, True)]


def _run(lib, x, k, affine_w, affine_b, grads, g, dtype):
    shape = x.shape[x.ndim - k:]
    rng = np.random.default_rng(1)
    w = lib.from_numpy(rng.standard_normal(shape).astype(dtype)).requires_grad_(grads[1]) if affine_w else None
    b = lib.from_numpy(rng.standard_normal(shape).astype(dtype)).requires_grad_(grads[2]) if affine_b else None
    xs = lib.from_numpy(x.copy()).requires_grad_(grads[0])
    y = lib.nn.functional.layer_norm(xs, shape, w, b, eps=1e-5)
    if y.requires_grad:
        y.backward(lib.from_numpy(g.copy()))
    return [y.detach().numpy()] + [None if t is None or t.grad is None else t.grad.numpy() for t in (xs, w, b)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[0]))
def test_layer_norm_matches_torch(case, dtype, monkeypatch):
    monkeypatch.setattr(jit, "ENABLED", True)
    shape, k, aw, ab = case
    rng = np.random.default_rng(len(shape) + k)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    tol = 2e-5 if dtype == np.float32 else 1e-11
    for grads in ((True, True, True), (True, False, False), (False, True, True)):
        e = _run(ember, x, k, aw, ab, grads, g, dtype)
        t = _run(torch, x, k, aw, ab, grads, g, dtype)
        for a, b in zip(e, t):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=tol * 10, atol=tol * max(1.0, float(np.abs(b).max())))


def test_thread_split_gives_the_same_bits(monkeypatch):
    from ember._backend import parallel
    monkeypatch.setattr(jit, "ENABLED", True)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4096, 256)).astype(np.float32)
    g = rng.standard_normal((4096, 256)).astype(np.float32)
    res = []
    for threads in (1, 2):
        monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
        monkeypatch.setattr(parallel, "threads", lambda n=threads: n)
        res.append(_run(ember, x, 1, True, True, (True, True, True), g, np.float32))
    for a, b in zip(*res):
        assert a.tobytes() == b.tobytes()


def test_the_switch_gives_the_numpy_blocks(monkeypatch):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 96)).astype(np.float32)
    g = rng.standard_normal((64, 96)).astype(np.float32)
    calls = count_calls(monkeypatch, jit.load("layernorm_jit"), "forward")
    res = {}
    for on in (True, False):
        monkeypatch.setattr(jit, "ENABLED", on)
        before = len(calls)
        res[on] = _run(ember, x, 1, True, True, (True, True, True), g, np.float32)
        assert (len(calls) > before) == on
    for a, b in zip(res[True], res[False]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
