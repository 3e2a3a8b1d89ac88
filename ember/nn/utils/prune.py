"""torch.nn.utils.prune: https://pytorch.org/docs/stable/nn.html#module-torch.nn.utils.prune

Pruning `name` of a module moves the parameter to `name + "_orig"`, registers a `name + "_mask"` buffer,
sets `name` to mask * orig (a plain attribute) and registers the pruning method itself as a forward
pre-hook that recomputes it before every forward. Pruning the same tensor again combines the methods in a
PruningContainer, which prunes only what the earlier masks left. remove() makes the pruning permanent.

Amounts pruned by magnitude are chosen as torch's topk chooses them, ties included (Note [topk ties]).
"""
import abc
import collections.abc
import numbers

import numpy as np

from ... import _dtype as D

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


def _ember():
    import ember
    return ember


def _hook_keys(module, name):
    """Keys of the module's forward pre-hooks that prune its tensor `name` (at most one, normally), lazily."""
    return (key for key, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name)


class BasePruningMethod(abc.ABC):
    """Base class of pruning methods: compute_mask(t, default_mask) decides what is pruned.
    `_tensor_name` (the pruned attribute's name) is set by apply(); as in torch it has no default."""
    _tensor_name: str

    def __call__(self, module, inputs):
        """The forward pre-hook: recompute the pruned tensor from `_orig` and `_mask`."""
        pruned = self.apply_mask(module)
        setattr(module, self._tensor_name, pruned)

    @abc.abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for `t`, given the mask of earlier pruning (`default_mask`)."""

    def apply_mask(self, module):
        """mask * orig for this method's tensor, in orig's dtype."""
        name = self._tensor_name
        if name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, f"{name}_mask")
        weight = getattr(module, f"{name}_orig")
        return mask.to(dtype=weight.dtype) * weight

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune module.<name> with cls(*args, **kwargs) on top of any earlier pruning of it; returns the
        hook now in charge of the tensor (the new method, or the PruningContainer it joined)."""
        keys = list(_hook_keys(module, name))
        if len(keys) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                                 f"{module}. Use a PruningContainer.")
        earlier = [module._forward_pre_hooks.pop(key) for key in keys]  # unhooked before cls() runs, as torch
        hook = cls(*args, **kwargs)
        hook._tensor_name = name
        if earlier:
            newest = hook
            hook = earlier[0] if isinstance(earlier[0], PruningContainer) else PruningContainer(earlier[0])
            hook.add_pruning_method(newest)

        weight = getattr(module, name)
        if importance_scores is None:
            importance_scores = weight
        elif importance_scores.shape != weight.shape:
            raise AssertionError(f"importance_scores should have the same shape as parameter {name} of "
                                 f"{module}, got {importance_scores.shape} vs {weight.shape}")
        fresh = not isinstance(hook, PruningContainer)
        if fresh:  # the parameter itself moves to <name>_orig
            module.register_parameter(f"{name}_orig", weight)
            del module._parameters[name]
            base_mask = _ember().ones_like(weight)
        else:
            base_mask = getattr(module, f"{name}_mask").detach().clone(memory_format=_ember().contiguous_format)
        try:
            module.register_buffer(f"{name}_mask", hook.compute_mask(importance_scores, default_mask=base_mask))
            setattr(module, name, hook.apply_mask(module))
            module.register_forward_pre_hook(hook)
        except Exception:
            if fresh:  # leave the module as it was
                module.register_parameter(name, getattr(module, f"{name}_orig"))
                del module._parameters[f"{name}_orig"]
            raise
        return hook

    def prune(self, t, default_mask=None, importance_scores=None):
        """t with this method's mask applied (nothing is registered on a module)."""
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                 f"{importance_scores.shape} vs {t.shape}")
        if default_mask is None:
            default_mask = _ember().ones_like(t)
        mask = self.compute_mask(importance_scores, default_mask=default_mask)
        return t * mask

    def remove(self, module):
        """Make the pruning permanent: `name` becomes a parameter again holding mask * orig."""
        name = self._tensor_name
        if name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        pruned = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        param = module._parameters.pop(f"{name}_orig")
        param.data = pruned.data
        del module._buffers[f"{name}_mask"]
        setattr(module, name, param)


def _still_prunable(method, t, default_mask):
    """An index into t of what `method` may still prune: the entries default_mask keeps (unstructured),
    every channel along method.dim with an entry kept (structured), or all of t (global)."""
    kind = method.PRUNING_TYPE
    if kind == "unstructured":
        return default_mask == 1
    if kind == "global":
        return (slice(None),) * t.dim()
    if kind != "structured":
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
    try:
        dim = method.dim
    except AttributeError:
        raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` '
                             'defined.') from None
    ndim = t.dim()
    if dim < 0:
        dim += ndim
    if dim < 0:
        raise IndexError(f"Index is out of bounds for tensor with dimensions {ndim}")
    index = [slice(None)] * ndim
    index[dim] = default_mask.sum(dim=[d for d in range(ndim) if d != dim]) != 0
    return tuple(index)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied to one tensor in turn; the last one prunes what the others left."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:  # a lone method hands the container its tensor name
            (lone,) = args
            self._tensor_name = lone._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Append `method` (None is accepted, as torch's); it must prune the container's tensor."""
        if method is not None:
            if not isinstance(method, BasePruningMethod):
                raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
            if self._tensor_name != method._tensor_name:
                raise ValueError(f"Can only add pruning methods acting on the parameter named "
                                 f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """default_mask (in t's dtype) with the newest method's mask, computed on the part of t still
        prunable, written over that part."""
        newest = self._pruning_methods[-1]
        combined = default_mask.to(dtype=t.dtype)
        part = _still_prunable(newest, t, default_mask)
        combined[part] = newest.compute_mask(t[part], default_mask=default_mask[part]).to(dtype=combined.dtype)
        return combined


# ---- amounts and masks --------------------------------------------------------------------

def _checked_amount(amount):
    """An amount as the constructors accept it: a count (an int >= 0) or a fraction (a real in [0, 1])."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    integral = isinstance(amount, numbers.Integral)
    # (a NaN fraction passes here and fails later, in round(), as in torch)
    if amount < 0 if integral else (float(amount) < 0.0 or float(amount) > 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")
    return amount


def _count(amount, size):
    """How many of `size` entries (or channels) `amount` prunes: a count as given, a fraction rounded."""
    count = amount if isinstance(amount, numbers.Integral) else round(amount * size)
    if isinstance(count, numbers.Integral) and count > size:
        raise ValueError(f"amount={count} should be smaller than the number of parameters to prune={size}")
    return count


def _entries_mask(t, amount, default_mask, scores, largest):
    """default_mask with the `amount` entries of t whose scores() rank first zeroed; scores() is made only
    when something is pruned (the random method then draws nothing, as torch's)."""
    count = _count(amount, t.nelement())
    mask = default_mask.clone(memory_format=_ember().contiguous_format)
    if count != 0:
        chosen = _topk_indices(scores().view(-1), count, largest)
        mask.view(-1)[_ember().tensor(chosen, dtype=D.int64)] = 0
    return mask


def _channels_mask(t, dim, amount, default_mask, kept):
    """default_mask with whole channels of t along dim zeroed. kept(size, count) gives the channels that stay
    (a bool mask or indices), or None to prune nothing, and then default_mask itself is returned."""
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {t.shape} with {len(t.shape)} dims")
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")
    size = t.shape[dim]
    channels = kept(size, _count(amount, size))
    if channels is None:
        return default_mask
    mask = _ember().zeros_like(t)
    index = [slice(None)] * t.dim()
    index[dim] = channels
    mask[tuple(index)] = 1
    return mask.mul_(default_mask.to(dtype=mask.dtype))


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (or the earlier mask)."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` entries chosen at random (the topk of rand_like(t), from the default generator)."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        self.amount = _checked_amount(amount)

    def compute_mask(self, t, default_mask):
        return _entries_mask(t, self.amount, default_mask, lambda: _ember().rand_like(t), largest=True)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the `amount` entries of smallest magnitude."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        self.amount = _checked_amount(amount)

    def compute_mask(self, t, default_mask):
        return _entries_mask(t, self.amount, default_mask, lambda: _ember().abs(t), largest=False)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` whole channels along `dim` at random: rand(channels) from the default generator, the
    channels at or below its count-th smallest value go."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        self.amount = _checked_amount(amount)
        self.dim = dim

    def compute_mask(self, t, default_mask):
        def kept(size, count):
            if count == 0:
                return None  # nothing drawn
            draw = _ember().rand(size)
            return draw > _ember().kthvalue(draw, k=count).values

        return _channels_mask(t, self.dim, self.amount, default_mask, kept)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` channels along `dim` of smallest L`n` norm (taken over all other dims)."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        self.amount = _checked_amount(amount)
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        def kept(size, count):
            dim = self.dim % t.dim()
            norms = _ember().norm(t, p=self.n, dim=[d for d in range(t.dim()) if d != dim])  # raises for a bad n
            if count == 0:
                return None
            return _ember().tensor(_topk_indices(norms, size - count, largest=True), dtype=D.int64)

        return _channels_mask(t, self.dim, self.amount, default_mask, kept)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is 0."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if self.mask.shape != default_mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


# ---- functional interface: each prunes module.<name> in place and returns the module ------------

def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount=amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount=amount, dim=dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask=mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs of `parameters` together, as one flattened tensor, with an
    unstructured pruning_method(**kwargs); each tensor then gets its share as a CustomFromMask."""
    if not isinstance(parameters, collections.abc.Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    if importance_scores is None:
        importance_scores = {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    from .convert_parameters import parameters_to_vector as flat
    ones_like = _ember().ones_like
    # `parameters` is walked three times, as in torch (a generator prunes nothing); the defaults below are
    # evaluated eagerly, as torch's are
    scores = flat([importance_scores.get((m, name), getattr(m, name)) for m, name in parameters])
    masks = flat([getattr(m, f"{name}_mask", ones_like(getattr(m, name))) for m, name in parameters])
    joint = PruningContainer()
    joint._tensor_name = "temp"
    rule = pruning_method(**kwargs)
    rule._tensor_name = "temp"
    if rule.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {rule.PRUNING_TYPE}")
    joint.add_pruning_method(rule)
    mask = joint.compute_mask(scores, masks)
    start = 0
    for m, name in parameters:
        weight = getattr(m, name)
        stop = start + weight.numel()
        custom_from_mask(m, name, mask=mask[start:stop].view_as(weight))
        start = stop


def remove(module, name):
    """Make the pruning of module.<name> permanent and drop its hook."""
    key = next(_hook_keys(module, name), None)
    if key is None:
        raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")
    module._forward_pre_hooks[key].remove(module)
    del module._forward_pre_hooks[key]
    return module


def is_pruned(module):
    """Whether any submodule has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for sub in module.modules() for hook in sub._forward_pre_hooks.values())


# Note [topk ties]
# torch.topk does not promise which of several equal values it returns, yet a pruning mask depends on it
# (l1 on weights with repeated magnitudes, channels of equal norm). So we return the entries torch's CPU
# kernel returns. That kernel pairs every value with its index and hands the pairs to the C++ standard
# library, comparing values only (NaN ranks first when largest, last when smallest): partial_sort when
# k * 64 <= n, nth_element on position k - 1 otherwise, then reads off the first k pairs. Their order is
# irrelevant to a mask, so only that set is reproduced. When no tie straddles the k-th value the set is
# fixed by the values alone and NumPy finds it. Otherwise _TieReplay reruns the library's algorithms
# (libstdc++'s, which the CPU wheels are built with) on integer keys, step for step where a step can move
# equal keys: median-of-three choice, Hoare partition, Floyd's heap sift, and a final sort of <= 3 entries
# that is stable, as its insertion sort is. It is plain Python, so slow only on millions of tied entries.

def _topk_indices(values, k, largest):
    """Indices (a NumPy int64 array, in no particular order) of the k values torch.topk(values.view(-1), k,
    largest=largest) returns."""
    x = values.detach().reshape(-1).numpy()
    if k == 0:
        return np.empty(0, np.int64)
    _, rank = np.unique(x, return_inverse=True)  # equal values (all NaNs too) share a rank; NaN's is the top
    rank = rank.reshape(-1).astype(np.int64)
    key = rank.max() - rank if largest else rank  # a smaller key ranks first
    kth = np.partition(key, k - 1)[k - 1]
    within = key <= kth
    if np.count_nonzero(within) == k:
        return np.flatnonzero(within)
    return np.array(_TieReplay(key.tolist()).first(k), np.int64)


class _TieReplay:
    """The standard library's selection on `slots`, a permutation of entry indices compared by key[entry]
    (smaller first; only strict comparisons, as the library's). first(k) returns the entries it leaves in
    front."""

    def __init__(self, key):
        self.key = key
        self.slots = list(range(len(key)))

    def first(self, k):
        n = len(self.slots)
        if k * 64 <= n:  # torch uses partial_sort: a heap selection (its final heap sort keeps the set)
            self._heap_keep(0, k, n)
        else:  # nth_element: introselect, depth budget 2 * floor(log2 n)
            self._quickselect(k - 1, 2 * (n.bit_length() - 1))
        return self.slots[:k]

    def _quickselect(self, nth, budget):
        """Partition the range holding `nth` until it has <= 3 entries, then sort it; when the budget of
        partitions runs out, a heap selection of the first nth + 1 finishes the job."""
        lo, hi = 0, len(self.slots)
        while hi - lo > 3:
            if budget == 0:
                self._heap_keep(lo, nth + 1, hi)
                s = self.slots  # the library then puts the heap's top at nth (the set is unchanged)
                s[lo], s[nth] = s[nth], s[lo]
                return
            budget -= 1
            cut = self._partition(lo, hi)
            lo, hi = (cut, hi) if cut <= nth else (lo, cut)
        self.slots[lo:hi] = sorted(self.slots[lo:hi], key=self.key.__getitem__)  # stable, as insertion sort

    def _partition(self, lo, hi):
        """Move the median of slots lo + 1, middle and hi - 1 to lo, then split the rest around it Hoare's
        way (scans stop on keys equal to the pivot); returns where the upper part begins."""
        key, s = self.key, self.slots
        a, b, c = lo + 1, lo + (hi - lo) // 2, hi - 1
        low, high = (a, b) if key[s[a]] < key[s[b]] else (b, a)
        if key[s[high]] < key[s[c]]:
            median = high
        elif key[s[low]] < key[s[c]]:
            median = c
        else:
            median = low
        s[lo], s[median] = s[median], s[lo]
        pivot = key[s[lo]]
        up, down = lo + 1, hi - 1
        while True:
            while key[s[up]] < pivot:
                up += 1
            while pivot < key[s[down]]:
                down -= 1
            if up >= down:
                return up
            s[up], s[down] = s[down], s[up]
            up += 1
            down -= 1

    def _heap_keep(self, lo, mid, hi):
        """Keep the best mid - lo entries of slots[lo:hi] in slots[lo:mid]: a heap with the worst kept entry on
        top, which each later entry ranking strictly before it replaces."""
        key, s = self.key, self.slots
        size = mid - lo
        for root in range((size - 2) // 2, -1, -1):  # heapify bottom-up
            self._sift(lo, size, root, s[lo + root])
        for i in range(mid, hi):
            if key[s[i]] < key[s[lo]]:
                entry, s[i] = s[i], s[lo]
                self._sift(lo, size, 0, entry)

    def _sift(self, lo, size, hole, entry):
        """Place `entry` in the heap slots[lo:lo + size] from `hole` down, the library's way: the hole first
        sinks to a leaf, always to the larger child (the right one on a tie), then entry climbs back while
        its parent ranks strictly before it, no higher than where the hole started."""
        key, s = self.key, self.slots
        top = hole
        while True:
            child = 2 * hole + 2  # the right child
            if child > size:
                break
            if child == size or key[s[lo + child]] < key[s[lo + child - 1]]:
                child -= 1  # the left one: the only child, or strictly larger
            s[lo + hole] = s[lo + child]
            hole = child
        rank = key[entry]
        while hole > top and key[s[lo + (hole - 1) // 2]] < rank:
            s[lo + hole] = s[lo + (hole - 1) // 2]
            hole = (hole - 1) // 2
        s[lo + hole] = entry
