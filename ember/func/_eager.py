"""torch.func helpers that need no transform machinery in eager ember: functionalize,
replace_all_batch_norm_modules_, debug_unwrap."""
import functools

from .._tensor import Tensor
from ..utils._pytree import tree_leaves, tree_map

__all__ = ["functionalize", "replace_all_batch_norm_modules_", "debug_unwrap"]


def functionalize(func, *, remove="mutations"):
    """torch.func.functionalize. ember runs the function eagerly, so mutations of inputs happen (torch
    copies them back to the inputs at the end: the same observable result); outputs on the memory
    of a mutated input, and with remove='mutations_and_views' all outputs, are copies, as in torch."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           f"Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           f"removed from the program, and replaced with their out-of-place equivalents.\n     "
                           f"remove='mutations_and_views': In addition to the above, all aliasing operators {{view}} "
                           f"will be replaced with their non-aliasing counterparts, {{view}}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        inputs = [x for x in tree_leaves((args, kwargs)) if isinstance(x, Tensor)]
        versions = [(x._version_counter, x._version_counter.value) for x in inputs]
        out = func(*args, **kwargs)
        # views share their base's version counter: an output on the storage of an input that
        # was mutated is, in torch, a view of the functional copy, not of the caller's tensor
        mutated = {id(c) for c, v in versions if c.value != v}
        counters = {id(c) for c, _ in versions}
        same = {id(x) for x in inputs}

        def detach_alias(x):
            if not isinstance(x, Tensor):
                return x
            if id(x._version_counter) in mutated:
                return x.clone()
            if remove == "mutations_and_views" and id(x) not in same and id(x._version_counter) in counters:
                return x.clone()  # a view of an input (an input returned as is stays itself)
            return x
        return tree_map(detach_alias, out)
    return wrapped


def replace_all_batch_norm_modules_(root):
    """Every BatchNorm in root stops tracking running statistics (they become None), in place."""
    from ..nn.modules.batchnorm import _BatchNorm
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse=True):
    """torch.func.debug_unwrap: ember's transforms wrap no tensors, so the tensor itself."""
    return tensor
