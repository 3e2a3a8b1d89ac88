"""RemoteModule: a module created on another RPC worker and called there (torch.distributed.nn.RemoteModule).

RemoteModule("worker1/cpu", nn.Linear, args=(4, 3)) creates the module on worker1 (rpc.remote); forward()
runs it there with rpc_sync, forward_async() with rpc_async; inside a distributed autograd context the
gradients reach its parameters there (remote_parameters() gives their RRefs, for DistributedOptimizer).
The module's own state is not here: the methods that would need it (parameters(), to(), state_dict(),
hooks ...) raise ValueError, as torch's. ember has the CPU only: the device must be cpu. It cannot be
pickled or sent through RPC (torch can send it by RPC).
"""
from ... import rpc
from ....nn.modules.module import Module

__all__ = ["RemoteModule"]


def _create_module(module_cls, args, kwargs):
    module = module_cls(*args, **kwargs)
    if not isinstance(module, Module):
        raise ValueError(f"Expect `module_cls(*args, **kwargs)` returns an instance of <class nn.Module>, but it "
                         f"returns an instance of {type(module)}.")
    return module


def _param_rrefs(module_rref, recurse):
    return [rpc.RRef(p) for p in module_rref.local_value().parameters(recurse)]


def _remote_forward(module_rref, args, kwargs):
    return module_rref.local_value().forward(*args, **kwargs)


def _parse_remote_device(remote_device):
    """'worker1/cpu', 'rank:1/cpu' or 'worker1' (the cpu) -> (worker name or rank, device string)."""
    if not isinstance(remote_device, str) or not remote_device:
        raise ValueError("Could not parse remote_device: " + str(remote_device) + ". The valid format is "
                         "'<workername>/<device>' or 'rank:<rank>/<device>'")
    worker, _, device = remote_device.partition("/")
    device = device or "cpu"
    if worker.startswith("rank:"):
        worker = int(worker[len("rank:"):])
    if device.split(":")[0] != "cpu":
        raise ValueError(f"ember's RemoteModule runs on the CPU only, got device {device!r}")
    return worker, device


class RemoteModule(Module):
    """A module on another RPC worker: forward()/forward_async() run it there (see the module docstring)."""

    def __init__(self, remote_device, module_cls, args=None, kwargs=None):
        super().__init__()
        self.on, self.device = _parse_remote_device(remote_device)
        self.is_scriptable = False
        self.module_rref = rpc.remote(self.on, _create_module, (module_cls, tuple(args or ()), dict(kwargs or {})))

    def forward(self, *args, **kwargs):
        return rpc.rpc_sync(self.module_rref.owner(), _remote_forward, (self.module_rref, args, kwargs))

    def forward_async(self, *args, **kwargs):
        return rpc.rpc_async(self.module_rref.owner(), _remote_forward, (self.module_rref, args, kwargs))

    def remote_parameters(self, recurse=True):
        """RRefs of the module's parameters (on its worker)."""
        return rpc.rpc_sync(self.module_rref.owner(), _param_rrefs, (self.module_rref, recurse))

    def get_module_rref(self):
        return self.module_rref

    @staticmethod
    def init_from_module_rref(remote_device, module_rref, _module_interface_cls=None):
        """A RemoteModule over a module that already exists on its worker."""
        remote = object.__new__(RemoteModule)
        Module.__init__(remote)
        remote.on, remote.device = _parse_remote_device(remote_device)
        remote.is_scriptable = False
        remote.module_rref = module_rref
        return remote

    def __getstate__(self):
        raise RuntimeError("Cannot pickle RemoteModule in python pickler. RemoteModule can only be pickled when "
                           "using RPC")

    def __setstate__(self, state):
        raise RuntimeError("Cannot unpickle RemoteModule in python pickler. RemoteModule can only be unpickled "
                           "when using RPC")

    def train(self, mode=True):
        """train() on the remote module (as torch's, without passing `mode` on); returns its copy."""
        return self.module_rref.rpc_sync().train()

    def eval(self):
        return self.module_rref.rpc_sync().eval()

    def parameters(self, recurse=True):
        raise ValueError("Method ``parameters`` not supported for RemoteModule. Please use ``remote_parameters`` "
                         "instead.")


def _not_supported(name):
    """Module.<name> refused, with Module.<name>'s signature."""
    import inspect

    def method(self, *args, **kwargs):
        raise ValueError(f"Method ``{name}`` not supported for RemoteModule")
    method.__name__ = method.__qualname__ = name
    known = _OWN_SIGNATURES.get(name, getattr(Module, name, None))
    method.__signature__ = inspect.signature(known)
    return method


_OWN_SIGNATURES = {  # where torch's RemoteModule declares other parameters than Module's
    "modules": lambda self: None,
    "register_forward_hook": lambda self, hook, prepend=False, with_kwargs=False: None,
    "register_forward_pre_hook": lambda self, hook, prepend=False, with_kwargs=False: None,
    "ipu": lambda self, device=None: None,  # devices ember's Module has no method for
    "xpu": lambda self, device=None: None,
}


for _name in ("register_buffer", "register_parameter", "add_module", "apply", "cuda", "ipu", "xpu", "cpu", "type",
              "float", "double", "half", "bfloat16", "to", "register_backward_hook", "register_forward_pre_hook",
              "register_forward_hook", "state_dict", "load_state_dict", "named_parameters", "buffers",
              "named_buffers", "children", "named_children", "modules", "named_modules", "requires_grad_",
              "zero_grad", "share_memory", "extra_repr"):
    setattr(RemoteModule, _name, _not_supported(_name))
del _name
