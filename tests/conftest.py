"""Shared test setup: the torch oracle runs single-threaded (pytest-xdist already runs one
process per core, and torch's thread pool only adds contention on small tensors), and its
manual_seed does not format the Python stack three times a call (below)."""
import types

import torch

torch.set_num_threads(1)

# torch.manual_seed also queues the seed for CUDA, XPU and MTIA, which are not initialized here, and each queue
# records traceback.format_stack() for an error message should that device's lazy init fail later
# (torch.cuda._lazy_call). Under pytest's deep stacks that was ~1.1 ms of a 1.2 ms call (2 us seed the CPU
# generator), and a run makes ~15,000 of them (~40 s of CPU). The oracle's CPU generator is seeded as before; only
# the stacks those never-initialized devices would quote are not recorded.
_NO_STACK = types.SimpleNamespace(format_stack=lambda *args, **kwargs: [])
for _device in (torch.cuda, torch.xpu, torch.mtia):
    if hasattr(_device, "traceback") and hasattr(_device, "_lazy_call"):
        _device.traceback = _NO_STACK
