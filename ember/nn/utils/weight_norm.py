"""Weight normalization, hook form (deprecated in torch in favour of parametrizations.weight_norm):
w = g * v / ||v||, with parameters `<name>_g` and `<name>_v` (Salimans & Kingma, 2016)."""
import warnings

from ..parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim"]

_DEPRECATED = ("`torch.nn.utils.weight_norm` is deprecated in favor of "
               "`torch.nn.utils.parametrizations.weight_norm`.")


def norm_except_dim(v, pow=2, dim=0):
    """The p-norm of v over every dim but `dim`, shaped to broadcast against v (torch.norm_except_dim);
    dim=-1 is the norm of the whole tensor."""
    from ... import linalg
    if dim == -1:
        return linalg.vector_norm(v, pow)
    others = tuple(d for d in range(v.dim()) if d != dim)
    if not others:  # a vector: every element is its own slice (an empty dim list would reduce all)
        return linalg.vector_norm(v.unsqueeze(-1), pow, -1)
    return linalg.vector_norm(v, pow, others, keepdim=True)


def _magnitude_times_direction(v, g, dim):
    """g * v / ||v||, the norm over every dim but `dim` (torch._weight_norm); shared with the
    parametrization form."""
    return v * (g / norm_except_dim(v, 2, dim))


def _hook_key(module, name):
    """The key of module's WeightNorm pre-hook for parameter `name`, or None."""
    keys = [key for key, hook in module._forward_pre_hooks.items()
            if isinstance(hook, WeightNorm) and hook.name == name]
    return keys[0] if keys else None


class WeightNorm:
    """The forward pre-hook that recomputes module.<name> from <name>_g and <name>_v."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        magnitude = getattr(module, f"{self.name}_g")
        direction = getattr(module, f"{self.name}_v")
        return _magnitude_times_direction(direction, magnitude, self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn(_DEPRECATED, FutureWarning, stacklevel=3)
        if _hook_key(module, name) is not None:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        hook = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying weight normalization")
        del module._parameters[name]
        magnitude = norm_except_dim(weight, 2, hook.dim)
        module.register_parameter(f"{name}_g", Parameter(magnitude.data))
        module.register_parameter(f"{name}_v", Parameter(weight.data))
        setattr(module, name, hook.compute_weight(module))
        module.register_forward_pre_hook(hook)
        return hook

    def remove(self, module):
        """Turn <name> back into one plain parameter holding the current g * v / ||v||."""
        folded = self.compute_weight(module)
        delattr(module, self.name)
        for suffix in ("_g", "_v"):
            del module._parameters[self.name + suffix]
        setattr(module, self.name, Parameter(folded.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Replace module.<name> by <name>_g * <name>_v / ||<name>_v||, recomputed before every forward."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Fold the weight norm back into a plain parameter."""
    key = _hook_key(module, name)
    if key is None:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    module._forward_pre_hooks[key].remove(module)
    del module._forward_pre_hooks[key]
    return module
