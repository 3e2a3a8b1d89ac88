"""torch.func.vmap as a per-sample loop.

Note [vmap is a loop]: running func once on the whole batch is correct only for functions that
never look across the batch (no reduction over all dims, no shape-dependent code ...), which
cannot be known for arbitrary Python. So every call takes the one path that is always right:
select sample i of each mapped input (a view, so in-place writes reach the caller's tensor as in
torch), call func, and stack the per-sample outputs along out_dims. The results equal torch's;
the cost is one Python call per sample. chunk_size is checked as torch checks it; the loop
already holds one sample at a time. The loop is made of ember ops, so grad/jacrev/vmap nest
around and inside it. Two limits of a loop: an empty batch runs func once on a zero-filled probe
sample to learn the output shapes (_empty_batch), and out_dims=None can refuse a batched output
(torch's ValueError) only when the samples' values differ.
"""
import contextlib
import functools

from .. import allclose, stack
from .._ops import random as _random_ops
from .._tensor import Tensor
from ..random import get_rng_state, set_rng_state
from ..utils._pytree import _broadcast_to_and_flatten, tree_flatten, tree_map_, tree_unflatten

__all__ = ["vmap"]

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                 "'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _raise_on_draw():
    raise RuntimeError(_RANDOM_ERROR)


def _allow_draw():
    return None


def check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


@contextlib.contextmanager
def randomness_mode(randomness):
    """Random ops raise torch's error inside when this or any enclosing vmap is in 'error' mode."""
    guards = _random_ops._draw_guards
    enclosing_error = bool(guards) and guards[-1] is _raise_on_draw
    guards.append(_raise_on_draw if randomness == "error" or enclosing_error else _allow_draw)
    try:
        yield
    finally:
        guards.pop()


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.func.vmap by Note [vmap is a loop]: randomness 'different' draws anew for each sample,
    'same' restores the default generator's state before each sample, 'error' raises on any draw."""
    check_randomness(randomness)
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        batch, flat_in_dims, flat_args, args_spec = _process_inputs(in_dims, args, func)
        if batch == 0:
            return _empty_batch(func, flat_args, flat_in_dims, args_spec, kwargs, out_dims, randomness)
        state = get_rng_state() if randomness == "same" else None
        results = []
        with randomness_mode(randomness):
            for i in range(batch):
                if state is not None:
                    set_rng_state(state)
                sample = [a if d is None else a.select(d, i) for a, d in zip(flat_args, flat_in_dims)]
                results.append(func(*tree_unflatten(sample, args_spec), **kwargs))
        return _stack_outputs(results, out_dims, func)
    return wrapped


def _empty_batch(func, flat_args, flat_in_dims, args_spec, kwargs, out_dims, randomness):
    """A mapped dim of size 0: func runs once on a zero-filled probe sample (the random state put back
    afterwards) only to learn the outputs' shapes; each mapped output is then that shape with 0 samples."""
    probe = []
    for a, d in zip(flat_args, flat_in_dims):
        if d is not None:
            shape = tuple(a.shape[:d]) + tuple(a.shape[d + 1:])
            a = a.new_zeros(shape)
        probe.append(a)
    state = get_rng_state()
    try:
        with randomness_mode(randomness):
            result = func(*tree_unflatten(probe, args_spec), **kwargs)
    finally:
        set_rng_state(state)
    return _stack_outputs([result], out_dims, func, empty=True)


def _name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _process_inputs(in_dims, args, func):
    """(batch size, flat in_dims, flat args, args spec), with torch's checks and messages."""
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         f"to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {args_spec}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_in_dims)):
        if not isinstance(d, int) and d is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                             f"in_dim must be either an integer dimension or None.")
        if isinstance(d, int) and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the "
                             f"input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use "
                             f"None as the respective in_dim")
        if d is not None and not -arg.dim() <= d < arg.dim():
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but "
                             f"that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if d is not None and d < 0:
            flat_in_dims[i] = d % arg.dim()
    sizes = [arg.size(d) for arg, d in zip(flat_args, flat_in_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0], flat_in_dims, flat_args, args_spec


def _check_out_dims(out_dims, func):
    def check(x):
        if not (isinstance(x, int) or x is None):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                             f"python collection of ints representing where in the outputs the vmapped dimension "
                             f"should appear.")
    if not isinstance(out_dims, int):
        tree_map_(check, out_dims)


def _stack_outputs(results, out_dims, func, empty=False):
    """The per-sample outputs joined along out_dims, in the structure func returned (with no
    samples at all when `empty`: results then holds the probe's output, see _empty_batch)."""
    name = _name(func)
    flat0, spec = tree_flatten(results[0])
    flat = [flat0]
    for r in results[1:]:
        leaves, s = tree_flatten(r)
        if s != spec:
            raise RuntimeError(f"vmap({name}, ...): `{name}` returned outputs of different structure for different "
                               f"samples: {spec} and {s}")
        flat.append(leaves)
    flat_out_dims = _flat_out_dims(results[0], out_dims, spec, name)
    out = []
    for k, d in enumerate(flat_out_dims):
        values = [leaves[k] for leaves in flat]
        if d is None:
            out.append(_unbatched(values, name))
            continue
        if not isinstance(values[0], Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(values[0])}. "
                             f"Did you mean to set out_dims= to None for output?")
        joined = stack(values, dim=d)
        out.append(joined.narrow(d, 0, 0) if empty else joined)
    return tree_unflatten(out, spec)


def _flat_out_dims(output, out_dims, spec, name):
    if isinstance(output, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        flat = None
    else:
        flat = _broadcast_to_and_flatten(out_dims, spec)
    if flat is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs has "
                         f"structure {spec}.")
    return flat


def _unbatched(values, name):
    """An output with out_dim None: torch refuses one that varies over the batch; the loop can see
    that only when the samples' values differ, and then raises the same error."""
    first = values[0]
    if isinstance(first, Tensor):
        for v in values[1:]:
            same = v is first or (isinstance(v, Tensor) and v.shape == first.shape and v.dtype == first.dtype
                                  and allclose(v, first, rtol=0, atol=0, equal_nan=True))
            if not same:
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
    return first
