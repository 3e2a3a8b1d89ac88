"""LazyModuleMixin: modules whose parameters are UninitializedParameter until the first forward, which
infers their shapes from the input, materializes them, and turns the module into its ordinary class
(cls_to_become), as torch does.
See https://pytorch.org/docs/stable/generated/torch.nn.modules.lazy.LazyModuleMixin.html

Two hooks do the work, both removed once the module is materialized: a forward pre-hook (materialize
from the first input) and a load_state_dict pre-hook (materialize to the shapes being loaded)."""
from itertools import chain

from ...autograd import no_grad
from ..parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixed in before a Module class; subclasses define initialize_parameters(*args, **kwargs)."""
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._materialize_on_load = self._register_load_state_dict_pre_hook(self._shape_from_state_dict)
        self._materialize_on_call = self.register_forward_pre_hook(_materialize_from_input, with_kwargs=True)

    def _own_tensors(self, persistent_only=False):
        """(name, tensor) of this module's parameters, then of its buffers (only the persistent ones if
        `persistent_only`); None entries are skipped."""
        buffers = self._buffers.items()
        if persistent_only:
            buffers = [(name, buf) for name, buf in buffers if name not in self._non_persistent_buffers_set]
        named = chain(self._parameters.items(), buffers)
        return [(name, tensor) for name, tensor in named if tensor is not None]

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Module's rule, except that uninitialized tensors are saved as themselves (they have no data to
        detach). Like torch's override, it saves no extra state (get_extra_state is not consulted)."""
        for name, tensor in self._own_tensors(persistent_only=True):
            if not (keep_vars or is_lazy(tensor)):
                tensor = tensor.detach()
            destination[prefix + name] = tensor

    def _shape_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                               unexpected_keys, error_msgs):
        """Loading initialized tensors into uninitialized ones first materializes them with the saved shapes."""
        for name, tensor in self._own_tensors():
            key = prefix + name
            if key not in state_dict or not is_lazy(tensor) or is_lazy(state_dict[key]):
                continue
            with no_grad():
                tensor.materialize(state_dict[key].shape)

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self):
        """Whether any of this module's own parameters or buffers is still uninitialized."""
        tensors = chain(self._parameters.values(), self._buffers.values())
        return any(is_lazy(tensor) for tensor in tensors)


def _materialize_from_input(module, args, kwargs=None):
    """The forward pre-hook: materialize from the first input, drop both hooks, become the ordinary class."""
    module.initialize_parameters(*args, **(kwargs or {}))
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    for hook in ("_materialize_on_call", "_materialize_on_load"):
        getattr(module, hook).remove()
        delattr(module, hook)
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become
