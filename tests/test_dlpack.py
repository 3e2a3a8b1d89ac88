"""DLPack exchange against torch 2.13 and NumPy: zero-copy both ways (writes visible on the other side),
every dtype including bfloat16 and bool, strided tensors, legacy capsules and torch's errors."""
import numpy as np
import pytest
import torch

import ember
import ember.utils.dlpack

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
          "complex64", "complex128"]


def _pair(dtype, shape=(4, 6), strided=False):
    """The same values as a torch and an ember tensor (separate memory); strided: a transposed slice."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2 if dtype == "bool" else 50, shape)
    t = torch.tensor(a).to(getattr(torch, dtype))
    e = ember.tensor(a).to(getattr(ember, dtype))
    if strided:
        t = t[:, ::2].t()
        e = e[:, ::2].t()
    return t, e


def _one(dtype):
    return True if dtype == "bool" else 7


def _assert_same(t, e):
    assert str(t.dtype) == str(e.dtype)
    assert tuple(t.shape) == tuple(e.shape)
    assert tuple(t.stride()) == tuple(e.stride())
    assert t.to(torch.float64 if not t.is_complex() else torch.complex128).tolist() == \
        e.to(ember.float64 if not e.is_complex() else ember.complex128).tolist()


@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_and_ember_share_memory_both_ways(dtype, strided):
    t, e = _pair(dtype, strided=strided)
    # torch -> ember
    e_view = ember.from_dlpack(t)
    _assert_same(t, e_view)
    e_view[1, 0] = _one(dtype)
    assert t[1, 0].item() == e_view[1, 0].item()
    # ember -> torch
    t_view = torch.from_dlpack(e)
    _assert_same(t_view, e)
    t_view[0, 1] = _one(dtype)
    assert e[0, 1].item() == t_view[0, 1].item()
    # legacy capsules, both ways
    cap = ember.utils.dlpack.to_dlpack(e)
    assert type(cap).__name__ == "PyCapsule" and "dltensor" in repr(cap)
    t_old = torch.utils.dlpack.from_dlpack(cap)
    t_old[0, 0] = _one(dtype)
    assert e[0, 0].item() == t_old[0, 0].item()
    e_old = ember.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    _assert_same(t, e_old)
    e_old[0, 0] = _one(dtype)
    assert t[0, 0].item() == e_old[0, 0].item()


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bfloat16"])
def test_numpy_shares_memory_both_ways(dtype):
    _, e = _pair(dtype, strided=True)
    a = np.from_dlpack(e)
    assert a.dtype == e.numpy().dtype and a.shape == tuple(e.shape)
    assert np.shares_memory(a, e.numpy())
    a[2, 1] = _one(dtype)
    assert e[2, 1].item() == a[2, 1].item()
    base = np.arange(24).astype(dtype).reshape(4, 6)
    x = base[:, ::2]
    ex = ember.from_dlpack(x)
    tx = torch.from_dlpack(x)
    assert tuple(ex.stride()) == tuple(tx.stride())
    ex[0, 1] = _one(dtype)
    assert x[0, 1] == ex[0, 1].item()


def test_bfloat16_to_numpy_refused_like_torch():
    # NumPy has no bfloat16 in DLPack: it refuses torch's capsule and ember's alike
    with pytest.raises(Exception) as te:
        np.from_dlpack(torch.zeros(2, dtype=torch.bfloat16))
    with pytest.raises(Exception) as ee:
        np.from_dlpack(ember.zeros(2, dtype=ember.bfloat16))
    assert type(te.value) is type(ee.value)


def test_protocol_details_and_errors():
    e = ember.arange(6.0).reshape(2, 3)
    t = torch.arange(6.0).reshape(2, 3)
    assert e.__dlpack_device__() == t.__dlpack_device__() == (1, 0)
    assert type(e.__dlpack_device__()[0]).__name__ == "DLDeviceType"
    for x in (e, t):
        assert "dltensor_versioned" in repr(x.__dlpack__(max_version=(1, 0)))
        assert '"dltensor"' in repr(x.__dlpack__(max_version=(0, 8)))
        assert '"dltensor"' in repr(x.__dlpack__(stream=None))
    for lib, x in ((torch, t), (ember, e)):
        with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
            x.clone().requires_grad_().__dlpack__()
        with pytest.raises(TypeError, match="stream must be"):
            x.__dlpack__(stream="s")
        with pytest.raises(AssertionError, match="stream should be None on cpu"):
            x.__dlpack__(stream=3)
        with pytest.raises(TypeError):
            x.__dlpack__(None)  # keyword-only
        cap = lib.utils.dlpack.to_dlpack(x)
        with pytest.raises(AssertionError, match="device and copy kwargs not supported"):
            lib.from_dlpack(cap, copy=True)
    # copy=True gives separate memory
    src = np.arange(4.0)
    c = ember.from_dlpack(src, copy=True)
    c.add_(1)
    assert src.tolist() == [0.0, 1.0, 2.0, 3.0]
    # a consumed capsule cannot be consumed again
    cap = ember.utils.dlpack.to_dlpack(e)
    ember.utils.dlpack.from_dlpack(cap)
    with pytest.raises(Exception):
        ember.utils.dlpack.from_dlpack(cap)
    # the view keeps the producer's memory alive
    t2 = torch.arange(5.0)
    v = ember.from_dlpack(t2)
    del t2
    assert v.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
