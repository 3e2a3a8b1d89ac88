"""torch.backends.cuda: ember has no CUDA (is_built() is False). matmul.allow_tf32 is torch's other face of
set_float32_matmul_precision (both read and write the same setting), the reduced-precision and
scaled-dot-product-attention flags keep torch's defaults; none changes a result (NumPy computes float32
matmuls in full precision and attention by its math path)."""
import contextlib
import warnings

from .. import _globals


class cuBLASModule:
    """torch.backends.cuda.matmul: known attributes only (others raise AttributeError, as in torch)."""
    _reduced = {"allow_fp16_reduced_precision_reduction": True, "allow_bf16_reduced_precision_reduction": True,
                "allow_fp16_accumulation": False}

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _globals.get_float32_matmul_precision() != "highest"
        if name == "fp32_precision":
            return _globals._fp32_precision()
        if name in self._reduced:
            return self._reduced[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _globals.set_float32_matmul_precision("high" if value else "highest")
        elif name == "fp32_precision":
            if value not in ("ieee", "tf32", "none"):
                raise RuntimeError(f"Invalid fp32_precision {value!r}: expected 'ieee', 'tf32' or 'none'")
            _globals.set_float32_matmul_precision("high" if value == "tf32" else "highest")
        elif name in self._reduced:
            self._reduced[name] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")


matmul = cuBLASModule()
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True,
        "overrideable": True}  # (overrideable: set by torch.nn.attention.sdpa_kernel only)


def is_built():
    """False: ember is not built with CUDA."""
    return False


def flash_sdp_enabled():
    return _sdp["flash"]


def enable_flash_sdp(enabled):
    _sdp["flash"] = enabled


def mem_efficient_sdp_enabled():
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled):
    _sdp["mem_efficient"] = enabled


def math_sdp_enabled():
    return _sdp["math"]


def enable_math_sdp(enabled):
    _sdp["math"] = enabled


def cudnn_sdp_enabled():
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled):
    _sdp["cudnn"] = enabled


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """Deprecated in torch (FutureWarning) for torch.nn.attention.sdpa_kernel: sets the four flags for a
    with-block."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will "
                  "be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=3)
    old = dict(_sdp)
    _sdp.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn)
    try:
        yield
    finally:
        _sdp.update(old)
