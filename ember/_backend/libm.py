"""float64 log, log1p, exp, tan, cos, sin with the C library's bits, for the random transforms that must
give torch's numbers (torch calls libm per element).

NumPy's own SIMD loops give other last bits on some CPUs: on an AVX-512 Xeon, NumPy 2.5's log1p, log, exp
and tan differ from glibc's in 0.3-8% of uniform inputs (cos and sin agreed); on AVX2 they agree. So each
function is probed once, on first use, against Python's math module (the C library's): where NumPy agrees on
every probe, its ufunc runs; where it does not, the values are computed by math.* one by one (exact, ~20x
slower). See Note [Random streams] in ember/random.py.
"""
import math

import numpy as np

_chosen = {}


def _probe_args(name):
    """The probe arguments of `name`, over the range the random transforms use (made on first use)."""
    u = np.random.default_rng(20261128).random(20000)  # uniforms in [0, 1): the transforms' inputs
    return {"log1p": -u, "log": u + 2.0 ** -60, "exp": (u - 0.5) * 40.0, "tan": np.pi * (u - 0.5),
            "cos": 2.0 * np.pi * u, "sin": 2.0 * np.pi * u}[name]


def _per_element(fn):
    def apply(x):
        x = np.asarray(x, dtype=np.float64)
        flat = np.fromiter(map(fn, x.ravel().tolist()), dtype=np.float64, count=x.size)
        return flat.reshape(x.shape)
    return apply


def _choose(name):
    ufunc, exact = getattr(np, name), _per_element(getattr(math, name))
    x = _probe_args(name)
    same = np.array_equal(ufunc(x).view(np.int64), exact(x).view(np.int64))
    _chosen[name] = ufunc if same else exact
    return _chosen[name]


def libm(name):
    """The float64 function `name` ('log1p', 'log', 'exp', 'tan', 'cos', 'sin') with the C library's bits."""
    f = _chosen.get(name)
    return f if f is not None else _choose(name)


def numpy_agrees(name):
    """Whether NumPy's ufunc gives the C library's bits for `name` on this machine (probed)."""
    return libm(name) is getattr(np, name)
