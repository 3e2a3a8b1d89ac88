"""torch.backends.cudnn: ember has no cuDNN (is_available() is False); the flags scripts set at the top
(benchmark, deterministic, enabled, allow_tf32) keep torch's defaults and checks and change no result."""
from ._flags import install, set_for

_module = install(__name__, {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True,
                             "benchmark_limit": None, "fp32_precision": "none"},
                  {"enabled": "set_enabled_cudnn", "benchmark": "set_benchmark_cudnn",
                   "deterministic": "set_deterministic_cudnn", "allow_tf32": "set_allow_tf32_cudnn"})


def is_available():
    """False: ember does not use cuDNN."""
    return False


def version():
    """None, as torch reports without cuDNN."""
    return None


def is_acceptable(tensor):
    """False: no tensor is handed to cuDNN."""
    return False


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    """A with-block with these flag values (torch's defaults for the arguments), restored after."""
    return set_for(_module, enabled=enabled, benchmark=benchmark, deterministic=deterministic,
                   allow_tf32=allow_tf32)
