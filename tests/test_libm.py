"""The float64 transcendental functions of ember's random transforms give the C library's bits (torch calls
libm per element): NumPy's SIMD loops differ in the last bit on AVX-512 CPUs, where ember falls back to math.*."""
import math

import numpy as np
import pytest

from ember._backend import libm as L


@pytest.mark.parametrize("name", ["log1p", "log", "exp", "tan", "cos", "sin"])
def test_libm_bits_equal_the_c_library(name):
    u = np.random.default_rng(7).random(50000)
    x = {"log1p": -u, "log": u + 1e-300, "exp": (u - 0.5) * 60, "tan": np.pi * (u - 0.5)}.get(name, 2 * np.pi * u)
    want = np.array([getattr(math, name)(v) for v in x.tolist()])
    got = L.libm(name)(x.reshape(500, 100)).ravel()
    assert got.dtype == np.float64
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_per_element_fallback_is_exact_and_keeps_shape(monkeypatch):
    """The path taken where NumPy's ufunc disagrees with the C library (forced here)."""
    monkeypatch.setattr(L, "_chosen", {})
    monkeypatch.setattr(L, "_probe_args", lambda name: np.array([-0.3]))
    monkeypatch.setattr(L.np, "log1p", lambda x: np.asarray(x) * 0.0)  # a NumPy that disagrees
    f = L.libm("log1p")
    assert not L.numpy_agrees("log1p")
    x = -np.random.default_rng(1).random((3, 4))
    assert f(x).shape == (3, 4)
    assert [v.hex() for v in f(x).ravel().tolist()] == [math.log1p(v).hex() for v in x.ravel().tolist()]
