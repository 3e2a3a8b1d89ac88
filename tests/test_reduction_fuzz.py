"""Random reductions against torch: sum, mean, prod, amax/amin, max/min/argmax/argmin, std/var
(and their _mean forms) with a correction, logsumexp, norm, cumsum/cumprod, all/any, nansum,
count_nonzero, median, mode, aminmax; over random dims (or none), keepdim or not, on float16/32/64,
int32/64, uint8 and bool inputs of random shapes (empty ones included). Result dtypes, shapes,
values and raised exception types must match torch.
"""
import warnings

import numpy as np
import pytest
import torch

import ember

MULTI_DIM = {"sum", "mean", "amax", "amin", "std", "var", "logsumexp", "nansum", "count_nonzero", "var_mean",
             "std_mean", "all", "any"}
OPS = sorted(MULTI_DIM | {"prod", "max", "min", "argmax", "argmin", "norm", "cumsum", "cumprod", "median", "mode",
                          "aminmax"})


def _case(rng):
    nd = int(rng.integers(0, 4))
    shape = tuple(int(s) for s in rng.integers(0 if rng.random() < 0.1 else 1, 4, size=nd))
    dtype = str(rng.choice(["float32", "float64", "int64", "int32", "bool", "uint8", "float16"]))
    x = rng.standard_normal(shape) * 3
    x = x > 0 if dtype == "bool" else (np.abs(x) if dtype == "uint8" else x).astype(dtype)
    op = str(rng.choice(OPS))
    dim = None
    if nd and (op in ("cumsum", "cumprod") or rng.random() < 0.7):
        if op in MULTI_DIM:
            dim = [int(d) for d in rng.choice(np.arange(-nd, nd), size=int(rng.integers(1, nd + 1)), replace=False)]
        else:
            dim = int(rng.integers(-nd, nd))
    extra = {"correction": int(rng.integers(0, 2)), "p": float(rng.choice([1, 2, 3]))}
    return op, x, dim, bool(rng.random() < 0.5), extra


def _run(lib, op, x, dim, keep, extra):
    f = getattr(lib, op)
    xs = lib.from_numpy(np.array(x))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # degrees-of-freedom warnings, checked elsewhere
            if op in ("cumsum", "cumprod"):
                r = f(xs, dim)
            elif op in ("std", "var", "var_mean", "std_mean"):
                r = f(xs, dim=dim, correction=extra["correction"], keepdim=keep) if dim is not None else \
                    f(xs, correction=extra["correction"])
            elif op == "norm":
                r = f(xs, p=extra["p"], dim=dim, keepdim=keep) if dim is not None else f(xs, p=extra["p"])
            elif op == "count_nonzero":
                r = f(xs, dim=dim) if dim is not None else f(xs)
            elif dim is None:
                r = f(xs)
            elif op in ("median", "mode", "max", "min", "argmax", "argmin", "aminmax"):
                r = f(xs, dim=dim, keepdim=keep)
            else:
                r = f(xs, dim, keepdim=keep)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    outs = r if isinstance(r, tuple) else (r,)
    return [(str(o.dtype), tuple(o.shape), o.numpy().astype(np.float64)) for o in outs]


@pytest.mark.parametrize("seed", range(4))
def test_random_reductions_match_torch(seed):
    rng = np.random.default_rng(seed)
    for _ in range(250):
        op, x, dim, keep, extra = _case(rng)
        what = (op, x.shape, x.dtype.name, dim, keep, extra)
        if op in ("cumsum", "cumprod") and dim is None:
            continue
        t, e = _run(torch, op, x, dim, keep, extra), _run(ember, op, x, dim, keep, extra)
        if isinstance(t, str) or isinstance(e, str):
            assert e == t, what
            continue
        tol = dict(rtol=1e-2, atol=1e-2) if x.dtype == np.float16 else dict(rtol=1e-5, atol=1e-6)
        for (de, se, ve), (dt, st, vt) in zip(e, t):
            assert (de, se) == (dt, st), what
            np.testing.assert_allclose(ve, vt, equal_nan=True, err_msg=str(what), **tol)
