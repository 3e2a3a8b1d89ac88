"""torch.backends.openmp: ember parallelizes through BLAS's own threads, not OpenMP."""


def is_available():
    return False
