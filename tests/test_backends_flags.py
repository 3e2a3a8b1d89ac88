"""Flag modules scripts set at the top (torch.backends.*, matmul precision, determinism) against torch 2.13:
same defaults, settable and readable, same coupling between flags, same errors; each test restores them."""
import importlib

import pytest
import torch

import ember


@pytest.fixture
def restore():
    # importing torch.testing._internal (the OpInfo tests, in the same xdist worker) freezes torch's global
    # flags (torch.backends.disable_global_flags); a user's program has them settable, so thaw them here
    with getattr(torch.backends, "__allow_nonbracketed_mutation")():
        saved = [(lib, lib.get_float32_matmul_precision(), lib.are_deterministic_algorithms_enabled(),
                  lib.is_deterministic_algorithms_warn_only_enabled(), lib.backends.cudnn.benchmark,
                  lib.backends.cudnn.deterministic, lib.backends.cudnn.enabled) for lib in (torch, ember)]
        yield
        for lib, prec, det, warn_only, bench, cdet, enabled in saved:
            lib.set_float32_matmul_precision(prec)
            lib.use_deterministic_algorithms(det, warn_only=warn_only)
            lib.backends.cudnn.benchmark = bench
            lib.backends.cudnn.deterministic = cdet
            lib.backends.cudnn.enabled = enabled


FLAGS = [("cudnn", "enabled"), ("cudnn", "benchmark"), ("cudnn", "deterministic"), ("cudnn", "allow_tf32"),
         ("mkldnn", "enabled"), ("mkldnn", "deterministic"), ("cuda.matmul", "allow_tf32"),
         ("cuda.matmul", "allow_fp16_reduced_precision_reduction"),
         ("cuda.matmul", "allow_bf16_reduced_precision_reduction"), ("opt_einsum", "strategy")]


def _get(lib, path):
    obj = lib.backends
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def test_defaults_and_availability_match_torch_cpu_build():
    for path, name in FLAGS:
        assert getattr(_get(ember, path), name) == getattr(_get(torch, path), name), (path, name)
    for path in ("cudnn", "mps", "opt_einsum"):
        assert _get(ember, path).is_available() == _get(torch, path).is_available(), path
    assert ember.backends.mps.is_built() == torch.backends.mps.is_built()
    assert ember.backends.cuda.is_built() == torch.backends.cuda.is_built()
    assert ember.backends.cudnn.version() == torch.backends.cudnn.version()
    # ember uses neither oneDNN, MKL nor OpenMP (documented): where it answers differently from torch's build
    assert ember.backends.mkldnn.is_available() is False
    assert ember.backends.openmp.is_available() is False
    for name in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled", "cudnn_sdp_enabled"):
        assert getattr(ember.backends.cuda, name)() == getattr(torch.backends.cuda, name)()
    assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"


def test_submodules_import_like_torch():
    for name in ("cudnn", "cuda", "mps", "mkldnn", "mkl", "openmp", "opt_einsum"):
        mod = importlib.import_module(f"ember.backends.{name}")
        assert mod is getattr(ember.backends, name)


def test_flags_settable_and_coupled(restore):
    for lib in (torch, ember):
        import_cudnn = importlib.import_module(f"{lib.__name__}.backends.cudnn")
        import_cudnn.benchmark = True
        import_cudnn.deterministic = True
        assert lib.backends.cudnn.benchmark is True and lib.backends.cudnn.deterministic is True
        with lib.backends.cudnn.flags(enabled=False, benchmark=False):
            assert lib.backends.cudnn.enabled is False and lib.backends.cudnn.benchmark is False
        assert lib.backends.cudnn.enabled is True and lib.backends.cudnn.benchmark is True
        with pytest.raises(RuntimeError, match="set_enabled_cudnn expects a bool, but got str"):
            lib.backends.cudnn.enabled = "yes"
        with pytest.raises(AttributeError, match="Unknown attribute bogus"):
            lib.backends.cuda.matmul.bogus = 1
    seen = {}
    for lib in (torch, ember):
        rows = []
        for prec in ("medium", "high", "highest"):
            lib.set_float32_matmul_precision(prec)
            rows.append((lib.get_float32_matmul_precision(), lib.backends.cuda.matmul.allow_tf32,
                         lib.backends.cuda.matmul.fp32_precision))
        lib.backends.cuda.matmul.allow_tf32 = True
        rows.append((lib.get_float32_matmul_precision(), lib.backends.cuda.matmul.fp32_precision))
        lib.backends.cuda.matmul.allow_tf32 = False
        rows.append((lib.get_float32_matmul_precision(), lib.backends.cuda.matmul.fp32_precision))
        with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
            lib.set_float32_matmul_precision("fast")
        rows.append(lib.get_float32_matmul_precision())
        seen[lib] = rows
    assert seen[ember] == seen[torch]


def test_deterministic_algorithms(restore):
    for lib in (torch, ember):
        lib.use_deterministic_algorithms(True, warn_only=True)
        assert lib.are_deterministic_algorithms_enabled() is True
        assert lib.is_deterministic_algorithms_warn_only_enabled() is True
        assert lib.get_deterministic_debug_mode() == 1
        lib.use_deterministic_algorithms(False)
        assert lib.get_deterministic_debug_mode() == 0
        with pytest.raises(TypeError):
            lib.use_deterministic_algorithms("yes")


def test_sdp_flags_and_opt_einsum():
    for lib in (torch, ember):
        with pytest.warns(FutureWarning, match="sdp_kernel"):
            with lib.backends.cuda.sdp_kernel(enable_flash=False):
                assert lib.backends.cuda.flash_sdp_enabled() is False
        assert lib.backends.cuda.flash_sdp_enabled() is True
        with pytest.raises(ValueError, match="opt_einsum is not available"):
            with lib.backends.opt_einsum.flags(strategy="greedy"):
                pass
        with lib.backends.opt_einsum.flags(enabled=False):
            assert lib.backends.opt_einsum.enabled is False
        assert lib.backends.opt_einsum.strategy is None
        assert lib.backends.opt_einsum.get_opt_einsum() is None


def test_submodules_import_as_in_torch():
    """test_submodules_import_like_torch on torch too: the same submodules import, each the package attribute."""
    for lib in (torch, ember):
        for name in ("cudnn", "cuda", "mps", "mkldnn", "mkl", "openmp", "opt_einsum"):
            mod = importlib.import_module(f"{lib.__name__}.backends.{name}")
            assert mod is getattr(lib.backends, name), (lib.__name__, name)
