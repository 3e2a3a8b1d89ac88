"""Parametrization forms of weight_norm and spectral_norm (torch.nn.utils.parametrizations).

State-dict keys as torch: parametrizations.<name>.original0 (g) / original1 (v) for
weight_norm; parametrizations.<name>.original plus parametrizations.<name>.0._u/_v
for spectral_norm. `orthogonal` is not implemented.
"""
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from .spectral_norm import _is_conv_transpose, _random_unit_vectors
from .weight_norm import _magnitude_times_direction, norm_except_dim

__all__ = ["weight_norm", "spectral_norm"]

# Power-iteration steps taken when the parametrization is built, so that the first forward
# already starts from good singular-vector estimates.
_WARMUP_STEPS = 15


class _WeightNorm(Module):
    """(g, v) -> g * v / ||v||; right_inverse splits a weight into (||w||, w)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _magnitude_times_direction(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def _hook_form_key_renamer(name):
    """A load-state-dict pre-hook that renames the hook form's <name>_g / <name>_v entries to
    this form's original0 / original1, so old checkpoints still load."""

    def rename_hook_form_keys(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        old_keys = [f"{prefix}{name}_g", f"{prefix}{name}_v"]
        if not all(key in state_dict for key in old_keys):
            return
        values = [state_dict.pop(key) for key in old_keys]
        for i, value in enumerate(values):
            state_dict[f"{prefix}parametrizations.{name}.original{i}"] = value

    return rename_hook_form_keys


def weight_norm(module, name="weight", dim=0):
    """module.<name> = g * v / ||v|| with g = original0 and v = original1; state dicts of the
    hook form (<name>_g, <name>_v) still load."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    module._register_load_state_dict_pre_hook(_hook_form_key_renamer(name))
    return module


class _SpectralNorm(Module):
    """w -> w / sigma(w), sigma by power iteration on the buffers _u, _v (one step per
    training forward, _WARMUP_STEPS at construction). A 1-d weight is simply normalised."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim + ndim if dim < 0 else dim
        self.eps = eps
        if ndim < 2:
            return
        self.n_power_iterations = n_power_iterations
        mat = self._as_matrix(weight)
        u, v = _random_unit_vectors(mat, mat.size(), eps)
        self.register_buffer("_u", u)
        self.register_buffer("_v", v)
        self._advance(mat, _WARMUP_STEPS)

    def _as_matrix(self, weight):
        """Dim `self.dim` first, every other dim flattened into the columns."""
        if self.dim != 0:
            rest = [d for d in range(weight.dim()) if d != self.dim]
            weight = weight.permute(self.dim, *rest)
        return weight.flatten(1)

    def _advance(self, mat, steps):
        """`steps` power-iteration updates of _u and _v, written into the buffers in place."""
        from ... import mv
        with no_grad():
            for _ in range(steps):
                F.normalize(mv(mat, self._v), dim=0, eps=self.eps, out=self._u)
                F.normalize(mv(mat.H, self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight):
        from ... import mv, vdot
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._as_matrix(weight)
        if self.training:
            self._advance(mat, self.n_power_iterations)
        # sigma's graph keeps copies: the buffers change in place at the next training forward
        u = self._u.clone()
        v = self._v.clone()
        return weight / vdot(u, mv(mat, v))

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """module.<name> = original / sigma(original)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
