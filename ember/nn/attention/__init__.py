"""torch.nn.attention: SDPBackend and the sdpa_kernel context manager
(https://pytorch.org/docs/stable/nn.attention.html).

ember has one implementation of scaled_dot_product_attention, the math path on NumPy, and it runs whichever
backends are named here: sdpa_kernel sets and restores the same flags torch.backends.cuda reports
(flash_sdp_enabled() ...) and the priority order, validating its argument as torch does, but no flag changes
what ember computes. Unlike torch's CPU build, ember does not refuse a call when the named backends could
not run it (torch raises "No available kernel" / "No viable backend" when math is off and its CPU flash
kernel cannot take the inputs, or when only CUDA backends are named). torch's flash-attention
implementation registry (register_flash_attention_impl ...) is not provided.
"""
import contextlib
import enum

from ...backends import cuda as _cuda

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.Enum):
    """The scaled-dot-product-attention backends, with torch's values (int(SDPBackend.MATH) == 0); like
    torch's enum, members neither equal nor order as ints."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self):
        return self.value


# flag name in torch.backends.cuda's table -> backend
_backend_names = {"cudnn": "CUDNN_ATTENTION", "flash": "FLASH_ATTENTION", "mem_efficient": "EFFICIENT_ATTENTION",
                  "math": "MATH", "overrideable": "OVERRIDEABLE"}
_priority = [1, 2, 0, 3, 4]  # torch's default order: flash, efficient, math, cudnn, overrideable
_PRIORITY_SLOTS = 5  # torch keeps the first five entries of an order it is given


def _cur_sdpa_kernel_backends(with_priority=False):
    backends = [SDPBackend[member] for name, member in _backend_names.items() if _cuda._sdp[name]]
    if with_priority:
        backends = sorted(backends, key=lambda backend: _priority.index(int(backend)))
    return backends


def _sdpa_kernel(backends, set_priority=False):
    for name, member in _backend_names.items():
        _cuda._sdp[name] = SDPBackend[member] in backends
    if set_priority:
        order = [int(backend) for backend in backends]  # (torch: a non-backend fails here, as int() fails)
        for backend in _priority:
            if backend not in order:
                order.append(backend)
        _priority[:] = order[:_PRIORITY_SLOTS]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Enable only `backends` (an SDPBackend or a list of them) inside the with-block, and with set_priority
    take their order as the priority order; the previous flags (and order) come back on exit. ember runs the
    same math whichever backend is named (see the module docstring)."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _cur_sdpa_kernel_backends(with_priority=set_priority)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, set_priority)


@contextlib.contextmanager
def _sdpa_kernel_variadic(*backends):
    with sdpa_kernel(list(backends)):
        yield


def _get_sdp_priority_order():
    """torch._C._get_sdp_priority_order: the current order, as ints."""
    return list(_priority)
