"""Variant consistency against torch (issue 19): test_variants.py checks that ember's method, in-place forms
and operators agree with ember's own function; here every one of those variants is also run on torch with the
same inputs (where torch has the same call) and compared with torch's: values, dtype, shape, the in-place
result being its input, and the exception type where torch refuses the variant (an in-place result that
cannot be cast back to the input's dtype)."""
import numpy as np
import pytest
import torch

import ember
from ember._ops import _registry
from tests.test_variants import EXTRA, MIRRORED, OPERATORS, OPS, SCALAR, UNARY_OPERATORS, _inputs


def _function(lib, name):
    """lib's function for a registry name: torch.f, else torch.nn.functional.f, else torch.special.f."""
    for ns in (lib, lib.nn.functional, lib.special):
        f = getattr(ns, name, None)
        if callable(f):
            return f
    return None


def _variants(lib, name, args, extra):
    """{variant: result or exception type} for every variant lib has of the op `name`."""
    x, rest = args[0], args[1:]
    calls = {}
    fn = _function(lib, name)
    if fn is not None:
        calls["function"] = lambda: fn(*args, *extra)
    if getattr(lib.Tensor, name, None) is not None:
        calls["method"] = lambda: getattr(x, name)(*rest, *extra)
    if getattr(lib.Tensor, name + "_", None) is not None:
        calls["Tensor inplace"] = lambda: _inplace(lambda t: getattr(t, name + "_")(*rest, *extra), x)
    if callable(getattr(lib, name + "_", None)):
        calls["function inplace"] = lambda: _inplace(lambda t: getattr(lib, name + "_")(t, *rest, *extra), x)
    if name in OPERATORS:
        forward, augmented = OPERATORS[name]
        s = SCALAR.get(name, 2.5)
        calls["operator"] = lambda: forward(x, *rest)
        calls["reflected operator"] = lambda: forward(s, x)
        if name in MIRRORED and fn is not None:
            calls["mirrored"] = lambda: getattr(lib, MIRRORED[name])(x, s)
        if augmented is not None:
            calls["augmented operator"] = lambda: _inplace(lambda t: augmented(t, *rest), x)
    if name in UNARY_OPERATORS:
        calls["unary operator"] = lambda: UNARY_OPERATORS[name](x)
    out = {}
    for k, call in calls.items():
        try:
            out[k] = call()
        except Exception as e:  # noqa: BLE001 (the type is compared with torch's)
            out[k] = type(e)
    return out


def _inplace(call, x):
    """The in-place call on a copy of x: (the copy after the call, whether the call returned it)."""
    target = x.clone()
    r = call(target)
    return target, r is target


def _to_torch(a):
    return torch.from_numpy(a.numpy().copy())


@pytest.mark.parametrize("name,decl", OPS, ids=[n for n, _ in OPS])
def test_variants_agree_with_torch(name, decl):
    args = _inputs(name, decl)
    extra = EXTRA.get(name, ())
    theirs = _variants(torch, name, [_to_torch(a) for a in args], extra)
    ours = _variants(ember, name, args, extra)
    compared = 0
    for k, t in theirs.items():
        if k not in ours:
            continue
        e = ours[k]
        if isinstance(t, type):
            assert isinstance(e, type) and issubclass(e, t if t is not NotImplementedError else RuntimeError), (
                f"{name} {k}: torch raises {t.__name__}, ember gives {e!r}")
            continue
        assert not isinstance(e, type), f"{name} {k}: ember raises {e.__name__}, torch returns"
        if isinstance(t, tuple):
            (t, t_self), (e, e_self) = t, e
            assert e_self == t_self, f"{name} {k}: returns its input: ember {e_self}, torch {t_self}"
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], f"{name} {k}: {e.dtype} vs {t.dtype}"
        assert tuple(e.shape) == tuple(t.shape), f"{name} {k}"
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-14, equal_nan=True,
                                   err_msg=f"{name} {k}")
        compared += 1
    assert compared >= 1 or name not in _registry.namespace, f"{name}: no variant compared with torch"
