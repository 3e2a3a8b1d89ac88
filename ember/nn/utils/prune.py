"""torch.nn.utils.prune: https://pytorch.org/docs/stable/nn.html#module-torch.nn.utils.prune

Pruning `name` of a module moves the parameter to `name + "_orig"`, registers a `name + "_mask"` buffer,
sets `name` to mask * orig (a plain attribute) and registers the pruning method itself as a forward
pre-hook that recomputes it before every forward. Pruning the same tensor again combines the methods in a
PruningContainer, which prunes only what the earlier masks left. remove() makes the pruning permanent.

Amounts pruned by magnitude are chosen as torch's topk chooses them, ties included (Note [topk ties]).
"""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import numpy as np

from ... import _dtype as D

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


def _ember():
    import ember
    return ember


class BasePruningMethod(ABC):
    """Base class of pruning methods: compute_mask(t, default_mask) decides what is pruned.
    `_tensor_name` (the pruned attribute's name) is set by apply(), as in torch there is no default."""
    _tensor_name: str

    def __call__(self, module, inputs):
        """The forward pre-hook: recompute the pruned tensor from `_orig` and `_mask`."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for `t`, given the mask of earlier pruning (`default_mask`)."""

    def apply_mask(self, module):
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune module.<name> with cls(*args, **kwargs), combined with earlier pruning of that tensor."""
        method = cls._combined_with_earlier(module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of "
                                     f"{module}, got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        first_time = not isinstance(method, PruningContainer)
        if first_time:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = _ember().ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone(memory_format=_ember().contiguous_format)
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first_time:  # put the parameter back as it was
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    @classmethod
    def _combined_with_earlier(cls, module, name, *args, **kwargs):
        """A new cls(*args, **kwargs) for `name`; if the tensor was pruned before, its hook is taken off and
        the new method joins it in a PruningContainer."""
        old_method = None
        found = 0
        old_keys = []
        for k, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_method = hook
                old_keys.append(k)
                found += 1
        if found > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                                 f"{module}. Use a PruningContainer.")
        for k in old_keys:
            del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old_method is None:
            return method
        if isinstance(old_method, PruningContainer):
            old_method.add_pruning_method(method)
            return old_method
        container = PruningContainer(old_method)
        container.add_pruning_method(method)
        return container

    def prune(self, t, default_mask=None, importance_scores=None):
        """t with this method's mask applied (nothing is registered on a module)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                     f"{importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else _ember().ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: `name` becomes a parameter again holding mask * orig."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied to one tensor in turn; the last one prunes what the others left."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                             f"to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The newest method computes its mask on the part of `t` still unpruned: the entries left by
        default_mask (unstructured), the channels along its dim with any entry left (structured), or all
        of `t` (global); the result is written back into default_mask, in t's dtype."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            slc = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute '
                                     '`dim` defined.')
            n_dims = t.dim()
            dim = method.dim if method.dim >= 0 else n_dims + method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = [slice(None)] * n_dims
            slc[dim] = keep_channel
            slc = tuple(slc)
        elif kind == "global":
            slc = tuple([slice(None)] * len(t.shape))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial_mask = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (or the earlier mask)."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _unstructured_mask(amount, t, default_mask, scores, largest):
    """default_mask with `amount` entries of t zeroed: the topk (largest or smallest) of scores(), which is
    made only when something is pruned (the random method draws nothing otherwise, as torch's)."""
    tensor_size = t.nelement()
    nparams_toprune = _compute_nparams_toprune(amount, tensor_size)
    _validate_pruning_amount(nparams_toprune, tensor_size)
    mask = default_mask.clone(memory_format=_ember().contiguous_format)
    if nparams_toprune != 0:
        _zero_at(mask, _topk_indices(scores().view(-1), nparams_toprune, largest=largest))
    return mask


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` entries chosen at random (the topk of rand_like(t), from the default generator)."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _unstructured_mask(self.amount, t, default_mask, lambda: _ember().rand_like(t), largest=True)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the `amount` entries of smallest magnitude."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _unstructured_mask(self.amount, t, default_mask, lambda: _ember().abs(t), largest=False)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` whole channels along `dim`, chosen at random (rand(channels) from the default
    generator, those at or below its kth value pruned)."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        if nparams_toprune == 0:
            return default_mask
        torch = _ember()
        prob = torch.rand(tensor_size)
        threshold = torch.kthvalue(prob, k=nparams_toprune).values
        mask = _channel_mask(t, self.dim, prob > threshold)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` channels along `dim` of smallest L`n` norm."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        nparams_tokeep = tensor_size - nparams_toprune
        _validate_pruning_amount(nparams_toprune, tensor_size)
        norm = _compute_norm(t, self.n, self.dim)
        keep = _topk_indices(norm, nparams_tokeep, largest=True)
        if nparams_toprune == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, _ember().tensor(keep, dtype=D.int64))
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is 0."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs of `parameters` together, as one flattened tensor, with an
    unstructured pruning_method(**kwargs); each tensor then gets its share as a CustomFromMask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    torch = _ember()
    from .convert_parameters import parameters_to_vector
    # (as torch, `parameters` is iterated three times: a generator prunes nothing)
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    default_mask = parameters_to_vector([getattr(module, name + "_mask", torch.ones_like(getattr(module, name)))
                                         for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + num_param].view_as(param))
        pointer += num_param


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether any submodule has a pruning hook."""
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False


# ---- validation and helpers ---------------------------------------------------------------

def _validate_pruning_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or \
            (not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount, tensor_size):
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _validate_structured_pruning(t):
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size):
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim):
    """The L`n` norm of each channel along dim (over all other dims)."""
    dims = list(range(t.dim()))
    if dim < 0:
        dim = dims[dim]
    dims.remove(dim)
    return _ember().norm(t, p=n, dim=dims)


def _channel_mask(t, dim, channels):
    """zeros_like(t) with ones in the channels along dim picked by `channels` (bool mask or indices)."""
    mask = _ember().zeros_like(t)
    slc = [slice(None)] * len(t.shape)
    slc[dim] = channels
    mask[tuple(slc)] = 1
    return mask


def _zero_at(mask, flat_indices):
    mask.view(-1)[_ember().tensor(flat_indices, dtype=D.int64)] = 0


# Note [topk ties]
# Which of several equal values torch.topk returns is unspecified, but pruning masks depend on it (l1 on a
# weight with repeated magnitudes, channels of equal norm), so the pruning methods pick them as torch's CPU
# topk does: it pairs each value with its index and runs libstdc++'s std::partial_sort (when k * 64 <= n) or
# std::nth_element on the values alone, NaN ranking best for largest and worst for smallest; the first k
# pairs are the result. Their order is irrelevant to a mask, so only the set is computed here. When no tie
# straddles the k-th value the set is fixed by the values and NumPy finds it; otherwise the two algorithms
# are replayed in Python on ranks of the values (slow for millions of entries, and only then).

def _topk_indices(values, k, largest):
    """Indices (a NumPy int64 array, any order) of the k values torch.topk(values.view(-1), k) picks."""
    x = values.detach().reshape(-1).numpy()
    n = x.size
    if k == 0:
        return np.empty(0, np.int64)
    _, rank = np.unique(x, return_inverse=True)  # equal values share a rank; NaN ranks last
    rank = rank.reshape(-1).astype(np.int64)
    key = rank.max() - rank if largest else rank  # smaller key = ranks first, as the comparator
    kth = np.partition(key, k - 1)[k - 1]
    if np.count_nonzero(key <= kth) == k:
        return np.flatnonzero(key <= kth)
    keys = key.tolist()
    order = list(range(n))
    if k * 64 <= n:
        _heap_select(keys, order, 0, k, n)
    else:
        _introselect(keys, order, 0, k - 1, n, 2 * (n.bit_length() - 1))
    return np.array(order[:k], np.int64)


# libstdc++'s selection algorithms (bits/stl_algo.h, stl_heap.h) on a key list `a` whose moves are mirrored
# in the index list `ix`; the comparator is a[i] < a[j].

def _swap(a, ix, i, j):
    a[i], a[j] = a[j], a[i]
    ix[i], ix[j] = ix[j], ix[i]


def _introselect(a, ix, first, nth, last, depth_limit):
    while last - first > 3:
        if depth_limit == 0:
            _heap_select(a, ix, first, nth + 1, last)
            _swap(a, ix, first, nth)
            return
        depth_limit -= 1
        cut = _partition_pivot(a, ix, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, ix, first, last)


def _partition_pivot(a, ix, first, last):
    mid = first + (last - first) // 2
    _move_median_to_first(a, ix, first, first + 1, mid, last - 1)
    return _unguarded_partition(a, ix, first + 1, last, a[first])


def _move_median_to_first(a, ix, result, i, j, k):
    if a[i] < a[j]:
        if a[j] < a[k]:
            _swap(a, ix, result, j)
        elif a[i] < a[k]:
            _swap(a, ix, result, k)
        else:
            _swap(a, ix, result, i)
    elif a[i] < a[k]:
        _swap(a, ix, result, i)
    elif a[j] < a[k]:
        _swap(a, ix, result, k)
    else:
        _swap(a, ix, result, j)


def _unguarded_partition(a, ix, first, last, pivot):
    while True:
        while a[first] < pivot:
            first += 1
        last -= 1
        while pivot < a[last]:
            last -= 1
        if not first < last:
            return first
        _swap(a, ix, first, last)
        first += 1


def _insertion_sort(a, ix, first, last):
    for i in range(first + 1, last):
        value = a[i]
        index = ix[i]
        if value < a[first]:
            a[first + 1:i + 1] = a[first:i]
            ix[first + 1:i + 1] = ix[first:i]
            a[first] = value
            ix[first] = index
        else:
            hole = i
            while value < a[hole - 1]:
                a[hole] = a[hole - 1]
                ix[hole] = ix[hole - 1]
                hole -= 1
            a[hole] = value
            ix[hole] = index


def _heap_select(a, ix, first, middle, last):
    _make_heap(a, ix, first, middle)
    for i in range(middle, last):
        if a[i] < a[first]:  # better than the worst kept: it replaces it (__pop_heap)
            value = a[i]
            index = ix[i]
            a[i] = a[first]
            ix[i] = ix[first]
            _adjust_heap(a, ix, first, 0, middle - first, value, index)


def _make_heap(a, ix, first, last):
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(a, ix, first, parent, length, a[first + parent], ix[first + parent])
        if parent == 0:
            return
        parent -= 1


def _adjust_heap(a, ix, first, hole, length, value, index):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if a[first + child] < a[first + child - 1]:
            child -= 1
        a[first + hole] = a[first + child]
        ix[first + hole] = ix[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        ix[first + hole] = ix[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2  # __push_heap
    while hole > top and a[first + parent] < value:
        a[first + hole] = a[first + parent]
        ix[first + hole] = ix[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value
    ix[first + hole] = index
