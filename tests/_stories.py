"""Telling an ember-only test's story again on torch: a story is a function of the library that returns its
observations (tensors, flags, raised types, warnings); both libraries must observe the same (issue 19)."""
import warnings

import numpy as np
import torch

import ember


def plain(v, decimals=None):
    """Observations as comparable plain data: a tensor as (type, dtype, shape, values, requires_grad), values
    rounded to `decimals` where float summation order may differ."""
    if isinstance(v, (list, tuple)):
        return [plain(x, decimals) for x in v]
    if isinstance(v, dict):
        return {k: plain(x, decimals) for k, x in v.items()}
    if isinstance(v, (torch.Tensor, ember.Tensor)):
        x = v.detach()
        if x.is_complex():
            x = (torch if isinstance(x, torch.Tensor) else ember).view_as_real(x)
        if x.dtype in (torch.bfloat16, ember.bfloat16, torch.float16, ember.float16):
            x = x.float()
        a = x.numpy()
        if decimals is not None and a.dtype.kind == "f":
            a = np.round(a, decimals)
        return (type(v).__name__, str(v.dtype).replace("torch.", ""), tuple(v.shape), a.tolist(), v.requires_grad)
    return v


def raised(fn):
    """The name of the exception type fn raises, or fn's result."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the type is the observation
        return type(e).__name__


def warned(fn):
    """(the categories of the warnings fn emits, fn's result or raised type)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = raised(fn)
    return [c.category.__name__ for c in w], r


def _assert_same(ours, theirs, atol, where="story"):
    """Equal observations; float values within atol (0: bit for bit, NaNs alike)."""
    if isinstance(theirs, list) and isinstance(ours, list) and len(ours) == len(theirs):
        for i, (o, t) in enumerate(zip(ours, theirs)):
            _assert_same(o, t, atol, f"{where}[{i}]")
    elif isinstance(theirs, dict) and isinstance(ours, dict) and list(ours) == list(theirs):
        for k in theirs:
            _assert_same(ours[k], theirs[k], atol, f"{where}[{k!r}]")
    elif atol and isinstance(theirs, tuple) and len(theirs) == 5 and isinstance(ours, tuple) and len(ours) == 5 \
            and theirs[1].startswith(("float", "complex", "bfloat")):
        assert ours[:3] + ours[4:] == theirs[:3] + theirs[4:], f"{where}: {ours[:3] + ours[4:]} vs torch's " \
                                                            f"{theirs[:3] + theirs[4:]}"
        np.testing.assert_allclose(np.asarray(ours[3], dtype=np.float64), np.asarray(theirs[3], dtype=np.float64),
                                   rtol=0, atol=atol, equal_nan=True, err_msg=where)
    else:
        o, t = str(ours).replace("torch.", ""), str(theirs).replace("torch.", "")
        assert o == t, f"{where}: ember {o[:300]} vs torch {t[:300]}"


def check_story(story, decimals=None, atol=0):
    """story(torch) and story(ember) observe the same (float values within atol where summation order may
    differ); torch runs first, its global RNG state restored after."""
    state = torch.get_rng_state()
    try:
        theirs = plain(story(torch), decimals)
    finally:
        torch.set_rng_state(state)
    _assert_same(plain(story(ember), decimals), theirs, atol)
