"""torch.backends.mps: no Metal device in ember."""


def is_available():
    return False


def is_built():
    return False


def is_macos_or_newer(major, minor):
    """False: ember never runs on MPS (answered for code that checks before using it)."""
    return False
