"""DataParallel as torch runs it on a machine without accelerators: a pass-through to the module.

https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html. With no GPU torch keeps the module
as it is (device_ids == []) and forward calls it directly; ember has no accelerator devices, so that is
all DataParallel does here: same results and state_dict keys ("module." prefix) as torch on a CPU machine.
"""
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Wraps `module` and forwards to it (torch's behaviour when no accelerator is available)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """torch's functional form needs an accelerator; without one it raises, as here."""
    raise RuntimeError("device type could not be determined")
