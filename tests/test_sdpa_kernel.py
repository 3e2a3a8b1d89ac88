"""torch.nn.attention against torch: SDPBackend's members and values, sdpa_kernel's flags and priority order
inside and after the with-block (torch.backends.cuda's *_sdp_enabled), its errors, and attention computed
inside it; torch.mps / torch.xpu / torch.backends.mps answer as torch's CPU build."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.attention as eatt
import torch.nn.attention as tatt


def _flags(lib):
    c = lib.backends.cuda
    return (c.flash_sdp_enabled(), c.mem_efficient_sdp_enabled(), c.math_sdp_enabled(), c.cudnn_sdp_enabled())


def _priority(lib):
    return eatt._get_sdp_priority_order() if lib is ember else torch._C._get_sdp_priority_order()


def test_backend_enum():
    assert list(eatt.SDPBackend.__members__) == list(tatt.SDPBackend.__members__)
    for name in tatt.SDPBackend.__members__:
        e, t = getattr(eatt.SDPBackend, name), getattr(tatt.SDPBackend, name)
        assert int(e) == int(t) and e.value == t.value and e.name == t.name
        assert repr(e) == repr(t) and str(e) == str(t)
        assert (e == int(e)) == (t == int(t)) and isinstance(e, int) == isinstance(t, int)
        assert eatt.SDPBackend(int(e)) is e


def _inside(lib, att, backends, set_priority=False):
    with att.sdpa_kernel(backends, set_priority=set_priority) as got:
        inside = (got, _flags(lib), _priority(lib))
    return inside, _flags(lib), _priority(lib)


@pytest.mark.parametrize("spec,set_priority", [
    (["MATH"], False), ("FLASH_ATTENTION", False), (["EFFICIENT_ATTENTION", "MATH", "MATH"], False),
    ([], False), (["CUDNN_ATTENTION", "FLASH_ATTENTION"], True), (["MATH", "OVERRIDEABLE"], True), ([], True),
])
def test_flags_inside_and_restored(spec, set_priority):
    def backends(att):
        if isinstance(spec, str):
            return getattr(att.SDPBackend, spec)
        return [getattr(att.SDPBackend, s) for s in spec]

    before = (_flags(ember), _priority(ember))
    e = _inside(ember, eatt, backends(eatt), set_priority)
    t = _inside(torch, tatt, backends(tatt), set_priority)
    assert e == t
    assert (_flags(ember), _priority(ember)) == before


def test_nested_blocks_and_deprecated_flags():
    S = eatt.SDPBackend
    with eatt.sdpa_kernel([S.MATH, S.FLASH_ATTENTION]):
        with eatt.sdpa_kernel(S.EFFICIENT_ATTENTION):
            assert _flags(ember) == (False, True, False, False)
        assert _flags(ember) == (True, False, True, False)
        ember.backends.cuda.enable_cudnn_sdp(True)  # the flags are torch.backends.cuda's
        assert eatt._cur_sdpa_kernel_backends() == [S.CUDNN_ATTENTION, S.FLASH_ATTENTION, S.MATH]
    assert _flags(ember) == (True, True, True, True)


def test_errors_match_torch():
    for bad in ((), "math", None, 0):
        seen = []
        for att in (eatt, tatt):
            with pytest.raises(AssertionError) as info:
                with att.sdpa_kernel(bad):
                    pass
            seen.append(str(info.value))
        assert seen[0] == seen[1]
    for lib, att in ((ember, eatt), (torch, tatt)):
        before = (_flags(lib), _priority(lib))
        with att.sdpa_kernel([att.SDPBackend.MATH, "math"]):  # not a backend: ignored, as torch
            assert _flags(lib) == (False, False, True, False)
        with pytest.raises(ValueError, match="invalid literal for int"):  # with priority: int() refuses it
            with att.sdpa_kernel([att.SDPBackend.MATH, "math"], set_priority=True):
                pass
        assert (_flags(lib), _priority(lib)) == before


def test_attention_inside_the_block_is_unchanged():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 4, 8)).astype(np.float32) for _ in range(3))
    with eatt.sdpa_kernel(eatt.SDPBackend.FLASH_ATTENTION):
        e = ember.nn.functional.scaled_dot_product_attention(ember.tensor(q), ember.tensor(k), ember.tensor(v))
    with tatt.sdpa_kernel(tatt.SDPBackend.FLASH_ATTENTION):
        t = torch.nn.functional.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
    assert ember.nn.attention is eatt


def test_mps_and_xpu_answer_as_a_cpu_build():
    for name in ("mps", "xpu"):
        emod, tmod = getattr(ember, name), getattr(torch, name)
        assert emod.is_available() is tmod.is_available() is False
        assert emod.device_count() == tmod.device_count() == 0
    assert ember.backends.mps.is_available() is torch.backends.mps.is_available() is False
