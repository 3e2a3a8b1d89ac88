"""torch.mps: ember has no Metal device; the queries answer as torch's builds without MPS do. Nothing else of
torch.mps is provided (ember.backends.mps has is_available/is_built too)."""


def is_available():
    return False


def device_count():
    return 0
