"""torch.xpu: ember has no Intel GPU device; the queries answer as torch's builds without XPU do. Nothing
else of torch.xpu is provided."""


def is_available():
    return False


def device_count():
    return 0
