"""torch.accelerator: ember has no accelerator; scripts fall back to the cpu."""


def is_available():
    return False


def current_accelerator(check_available=False):
    return None


def device_count():
    return 0


def synchronize(device=None):
    """Nothing to wait for on the cpu."""
