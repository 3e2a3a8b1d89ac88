"""torch.version as a CPU-only build reports it: no CUDA, ROCm or XPU toolkit."""
__version__ = "0.1.0"  # ember's own version (ember.__version__)
debug = False
cuda = None
hip = None
rocm = None
xpu = None
git_version = "unknown"
