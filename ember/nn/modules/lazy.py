"""LazyModuleMixin: modules whose parameters are UninitializedParameter until the first forward, which
infers their shapes from the input, materializes them, and turns the module into its ordinary class
(cls_to_become), as torch does.
See https://pytorch.org/docs/stable/generated/torch.nn.modules.lazy.LazyModuleMixin.html"""
from ...autograd import no_grad
from ..parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixed in before a Module class; subclasses define initialize_parameters(*args, **kwargs)."""
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Uninitialized parameters and buffers are saved as themselves (they have no data to detach)."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars or is_lazy(param) else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars or is_lazy(buf) else buf.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        """Loading initialized tensors into uninitialized ones materializes them with the saved shapes."""
        for name, param in list(self._parameters.items()) + list(self._buffers.items()):
            key = prefix + name
            if param is None or key not in state_dict:
                continue
            loaded = state_dict[key]
            if is_lazy(param) and not is_lazy(loaded):
                with no_grad():
                    param.materialize(loaded.shape)

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self):
        """Whether any of this module's own parameters or buffers is still uninitialized."""
        for t in list(self._parameters.values()) + list(self._buffers.values()):
            if is_lazy(t):
                return True
        return False


def _infer_parameters(module, args, kwargs=None):
    """The forward pre-hook: materialize from the first input, then become the ordinary class."""
    module.initialize_parameters(*args, **(kwargs or {}))
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    module._load_hook.remove()
    del module._initialize_hook
    del module._load_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become
