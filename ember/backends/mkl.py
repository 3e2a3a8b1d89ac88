"""torch.backends.mkl: ember's BLAS is the one NumPy links (found at run time), not a build of MKL."""


def is_available():
    return False
