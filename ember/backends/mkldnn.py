"""torch.backends.mkldnn: ember computes with NumPy and does not use oneDNN, so is_available() is False;
the flags keep torch's defaults (enabled=True) and change no result."""
from ._flags import install, set_for

_module = install(__name__, {"enabled": True, "deterministic": False, "allow_tf32": True, "fp32_precision": "none"},
                  {"enabled": "set_enabled_mkldnn", "deterministic": "set_deterministic_mkldnn"})


def is_available():
    """False: ember does not use oneDNN (torch's CPU build reports True)."""
    return False


def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """A with-block with these flag values, restored after."""
    return set_for(_module, enabled=enabled, deterministic=deterministic, allow_tf32=allow_tf32)
