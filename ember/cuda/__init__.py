"""torch.cuda on a machine without CUDA: the answers a script expects when no GPU is present."""


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def _no_cuda():
    raise AssertionError("Torch not compiled with CUDA enabled")


def current_device():
    _no_cuda()


def set_device(device):
    _no_cuda()


def get_device_name(device=None):
    _no_cuda()


def get_device_properties(device=None):
    _no_cuda()


def manual_seed(seed):
    """Seeding CUDA generators is silently a no-op without CUDA, as in torch."""


manual_seed_all = manual_seed


def synchronize(device=None):
    _no_cuda()


def empty_cache():
    """No cached CUDA memory to release."""


def memory_allocated(device=None):
    """No CUDA memory in use: 0 bytes, as a CPU-only torch build answers."""
    return 0


memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated


def is_bf16_supported(including_emulation=True):
    return False

from . import amp  # noqa: E402,F401  (torch.cuda.amp: deprecated spellings of torch.amp)
