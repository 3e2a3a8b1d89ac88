"""torch.backends.cpu."""


def get_cpu_capability():
    """'DEFAULT': ember's kernels are NumPy's, which pick their own SIMD paths at run time (torch reports
    the level its own kernels were compiled for, e.g. 'AVX2')."""
    return "DEFAULT"
