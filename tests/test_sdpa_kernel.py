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


def _case(lib, name):
    """(args, kwargs) of one attention call, the same arrays for either library."""
    rng = np.random.default_rng(0)

    def t(shape, dtype="float32"):
        return lib.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(getattr(lib, dtype))
    four = (t((2, 3, 4, 8)),) * 3
    return {
        "4d": (four, {}), "3d": ((t((3, 4, 8)),) * 3, {}), "5d": ((t((2, 2, 3, 4, 8)),) * 3, {}),
        "dropout": (four, {"dropout_p": 0.3}), "value head size": ((four[0], four[1], t((2, 3, 4, 6))), {}),
        "key length": ((four[0], t((2, 3, 5, 8)), t((2, 3, 5, 8))), {}),
        "gqa": ((t((2, 4, 4, 8)), t((2, 2, 4, 8)), t((2, 2, 4, 8))), {"enable_gqa": True}),
        "heads differ": ((t((2, 4, 4, 8)), t((2, 2, 4, 8)), t((2, 2, 4, 8))), {}),
        "batch broadcast": ((four[0], t((1, 3, 4, 8)), t((1, 3, 4, 8))), {}),
        "mask 2d": (four, {"attn_mask": t((4, 4))}), "mask 3d": (four, {"attn_mask": t((3, 4, 4))}),
        "mask 4d": (four, {"attn_mask": t((2, 3, 4, 4))}), "mask broadcast": (four, {"attn_mask": t((2, 1, 4, 4))}),
        "mask bool": (four, {"attn_mask": lib.ones(4, 4, dtype=lib.bool)}), "mask 1d": (four, {"attn_mask": t((4,))}),
        "mask 0d": (four, {"attn_mask": t(())}), "causal": (four, {"is_causal": True}),
        "float64": ((t((2, 3, 4, 8), "float64"),) * 3, {}), "bfloat16": ((t((2, 3, 4, 8), "bfloat16"),) * 3, {}),
        "head dim strided": ((t((2, 3, 8, 4)).transpose(-1, -2),) * 3, {}),
        "empty sequence": ((t((2, 3, 0, 8)),) * 3, {}), "no keys": ((four[0], t((2, 3, 0, 8)), t((2, 3, 0, 8))), {}),
        "head size 0": ((t((2, 3, 4, 0)),) * 2 + (t((2, 3, 4, 5)),), {}), "all head sizes 0": ((t((2, 3, 4, 0)),) * 3, {}),
    }[name]


CASES = ["4d", "3d", "5d", "dropout", "value head size", "key length", "gqa", "heads differ", "batch broadcast",
         "mask 2d", "mask 3d", "mask 4d", "mask broadcast", "mask bool", "mask 1d", "mask 0d", "causal", "float64",
         "bfloat16", "head dim strided", "empty sequence", "no keys", "head size 0", "all head sizes 0"]


@pytest.mark.parametrize("backends", ["FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH", "MATH,FLASH_ATTENTION", "default"])
def test_which_calls_run_with_the_backends_left_on(backends):
    """torch's CPU build refuses a call when only backends it has no CPU kernel for are on (no viable backend),
    or when only flash is on and its kernel does not take the inputs (no available kernel); ember refuses the
    same calls with the same errors and computes the others as torch (dropout aside: only its shape)."""
    for name in CASES:
        results = []
        for lib, att in ((ember, eatt), (torch, tatt)):
            args, kwargs = _case(lib, name)
            chosen = list(att.SDPBackend.__members__) if backends == "default" else backends.split(",")
            with att.sdpa_kernel([getattr(att.SDPBackend, b) for b in chosen]):
                try:
                    results.append(lib.nn.functional.scaled_dot_product_attention(*args, **kwargs))
                except Exception as e:  # noqa: BLE001 -- the type and message are compared
                    results.append((type(e).__name__, str(e)[:80]))
        ours, theirs = results
        if isinstance(theirs, tuple):
            assert ours == theirs, name
        elif "dropout_p" in _case(torch, name)[1]:
            assert tuple(ours.shape) == tuple(theirs.shape), name
        else:
            np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=2e-2, atol=1e-2, err_msg=name)


def test_mps_and_xpu_answer_as_a_cpu_build():
    for name in ("mps", "xpu"):
        emod, tmod = getattr(ember, name), getattr(torch, name)
        assert emod.is_available() is tmod.is_available() is False
        assert emod.device_count() == tmod.device_count() == 0
    assert ember.backends.mps.is_available() is torch.backends.mps.is_available() is False
