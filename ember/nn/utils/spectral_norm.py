"""Spectral normalization, hook form: w = w_orig / sigma(w_orig), sigma estimated by power
iteration on the buffers <name>_u and <name>_v (Miyato et al., 2018).

The module keeps torch's layout: parameter <name>_orig, buffers <name>_u and <name>_v, a plain
attribute <name> refreshed by a forward pre-hook, and a state-dict format version in the metadata.
"""
from .. import functional as F
from ..parameter import Parameter, UninitializedParameter

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook", "spectral_norm",
           "remove_spectral_norm"]

_STORED = ("_orig", "_u", "_v")  # what the module holds for <name> while the hook is on


def _no_grad():
    from ...autograd.grad_mode import no_grad
    return no_grad()


def _random_unit_vectors(like, sizes, eps):
    """One unit-norm vector per size, drawn from N(0, 1) in that order with `like`'s dtype and
    device: the starting u and v of the power iteration (also used by parametrizations)."""
    with _no_grad():
        draws = [like.new_empty(n).normal_(0, 1) for n in sizes]
        return [F.normalize(x, dim=0, eps=eps) for x in draws]


def _find_hook(hooks, kind, name):
    """The key in the hook dict `hooks` of the `kind` hook that serves parameter `name`, or None.
    Load-state-dict pre-hooks may come wrapped (the `.hook` attribute); state-dict hooks carry the
    SpectralNorm as `.fn`."""
    for key, entry in hooks.items():
        hook = getattr(entry, "hook", entry)
        if not isinstance(hook, kind):
            continue
        owner = hook if kind is SpectralNorm else hook.fn
        if owner.name == name:
            return key
    return None


class SpectralNorm:
    """The forward pre-hook: one power-iteration step per training forward, then w = w_orig / sigma."""
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        """The weight as a (size(dim), -1) matrix: dim `self.dim` moved first, the rest flattened."""
        if self.dim != 0:
            rest = [d for d in range(weight.dim()) if d != self.dim]
            weight = weight.permute(self.dim, *rest)
        return weight.reshape(weight.size(0), -1)

    def _stored(self, module):
        """(w_orig, u, v) as the module holds them now."""
        return tuple(getattr(module, self.name + suffix) for suffix in _STORED)

    def _iterate(self, mat, u, v):
        """Advance the buffers u and v in place (out=) by n_power_iterations steps, and return
        copies of them, so that sigma's graph is not disturbed by the next forward's update."""
        from ... import mv
        with _no_grad():
            for _ in range(self.n_power_iterations):
                F.normalize(mv(mat.t(), u), dim=0, eps=self.eps, out=v)
                F.normalize(mv(mat, v), dim=0, eps=self.eps, out=u)
            return u.clone(), v.clone()

    def compute_weight(self, module, do_power_iteration):
        """w_orig / (u . W v), after advancing u and v when `do_power_iteration`."""
        from ... import dot, mv
        w_orig, u, v = self._stored(module)
        mat = self.reshape_weight_to_matrix(w_orig)
        if do_power_iteration:
            u, v = self._iterate(mat, u, v)
        sigma = dot(u, mv(mat, v))
        return w_orig / sigma

    def remove(self, module):
        """Replace the hook's attributes by one plain parameter holding the normalised weight."""
        with _no_grad():
            folded = self.compute_weight(module, do_power_iteration=False)
        for attr in [self.name] + [self.name + suffix for suffix in _STORED]:
            delattr(module, attr)
        module.register_parameter(self.name, Parameter(folded.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _v_matching_sigma(self, mat, u, sigma):
        """A v with u . W v == sigma: the least-squares solution of W v = u, rescaled (version-0
        state dicts stored no v)."""
        from ... import dot, linalg, mv
        mat_t = mat.t()
        v = linalg.pinv(mat_t.matmul(mat)).matmul(mat_t).matmul(u.unsqueeze(1)).squeeze(1)
        return v.mul_(sigma / dot(u, mv(mat, v)))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        if _find_hook(module._forward_pre_hooks, SpectralNorm, name) is not None:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        hook = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying spectral normalization")
        with _no_grad():
            u, v = _random_unit_vectors(weight, hook.reshape_weight_to_matrix(weight).size(), eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.data)  # a plain attribute until the first forward
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(hook)
        module._register_state_dict_hook(SpectralNormStateDictHook(hook))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(hook))
        return hook


class SpectralNormLoadStateDictPreHook:
    """Upgrades version-0 state dicts (which stored `<name>` and no `<name>_v`) while loading."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        name = self.fn.name
        version = local_metadata.get("spectral_norm", {}).get(f"{name}.version")
        if version is not None and version >= 1:
            return
        base = prefix + name
        if version is None and base not in state_dict and all(base + s in state_dict for s in _STORED):
            return  # today's layout, saved without metadata
        absent = [key for key in (base + "_orig", base, base + "_u") if key not in state_dict]
        if absent:
            if strict:
                missing_keys.extend(absent)
            return
        with _no_grad():
            w_orig = state_dict[base + "_orig"]
            sigma = (w_orig / state_dict.pop(base)).mean()
            mat = self.fn.reshape_weight_to_matrix(w_orig)
            state_dict[base + "_v"] = self.fn._v_matching_sigma(mat, state_dict[base + "_u"], sigma)


class SpectralNormStateDictHook:
    """Writes the spectral-norm format version into the state dict's metadata."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        versions = local_metadata.setdefault("spectral_norm", {})
        key = f"{self.fn.name}.version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


def _is_conv_transpose(module):
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
    return isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Normalise module.<name> by its spectral norm before every forward (dim 1 for ConvTranspose)."""
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Fold the current normalised weight back into a plain parameter and drop the three hooks."""
    pre_hooks = module._forward_pre_hooks
    key = _find_hook(pre_hooks, SpectralNorm, name)
    if key is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    pre_hooks[key].remove(module)
    del pre_hooks[key]
    for hooks, kind in ((module._state_dict_hooks, SpectralNormStateDictHook),
                        (module._load_state_dict_pre_hooks, SpectralNormLoadStateDictPreHook)):
        key = _find_hook(hooks, kind, name)
        if key is not None:
            del hooks[key]
    return module
