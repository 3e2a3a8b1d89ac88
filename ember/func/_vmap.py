"""torch.func.vmap: vectorized where ops have batching rules, a per-sample loop elsewhere.

vmap first runs func once on BatchedTensors (Note [Vectorized vmap], _batched.py): ops with a
batching rule (_batch_rules.py) run once on the whole batch, an op without one runs once per
sample. When something cannot be batched at all (a kernel reads a batched tensor's storage, an
in-place op, data-dependent Python such as `.item()` or `if x > 0`, a random draw in 'same' or
'different' mode, an error), func runs again as the loop below.

Note [vmap is a loop]: the fallback takes the one path that is always right for arbitrary
Python: select sample i of each mapped input (a view, so in-place writes reach the caller's
tensor as in torch), call func, and stack the per-sample outputs along out_dims. The loop is
made of ember ops, so grad/jacrev/vmap nest around and inside it. Two limits of a loop: an empty
batch runs func once on a zero-filled probe sample to learn the output shapes (_empty_batch), and
out_dims=None can refuse a batched output (torch's ValueError) only when the samples' values
differ. Side effects of func outside its outputs (prints, writes to unbatched tensors) happen in
the attempt and again in the loop when the attempt fell back.
"""
import contextlib
import functools

from .. import allclose, cat, stack
from .._ops import random as _random_ops
from . import _batched
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


def _refuse_draw():
    raise _batched.Unbatchable("a random draw in a vectorized vmap")


def check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


@contextlib.contextmanager
def randomness_mode(randomness, vectorized=False):
    """Random ops raise torch's error inside when this or any enclosing vmap is in 'error' mode;
    otherwise a draw ends a vectorized attempt (this one's or an enclosing one's)."""
    guards = _random_ops._draw_guards
    top = guards[-1] if guards else None
    if randomness == "error" or top is _raise_on_draw:
        guard = _raise_on_draw
    elif vectorized or top is _refuse_draw:
        guard = _refuse_draw
    else:
        guard = _allow_draw
    guards.append(guard)
    try:
        yield
    finally:
        guards.pop()


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.func.vmap. func runs once on the whole batch through the ops that batch naturally:
    elementwise ops (broadcasting, torch's promotion), reductions and scans along dims, softmax,
    views, reshapes and basic indexing, cat/stack/where, the matmul family and F.linear, class and
    pointwise losses, layer_norm, embedding, convolutions and pools, in-place ops on tensors made
    inside func, and the transforms of ember.func inside it (_batch_rules.py). A method without a
    rule runs per sample; anything else (a kernel reading a batched tensor, `.item()`, data-dependent
    `if`, an in-place write into an input, a random draw outside 'error' mode) makes the whole call
    a per-sample loop. Both paths give the same values. randomness:
    'different' draws anew for each sample, 'same' restores the default generator's state before
    each sample, 'error' raises on any draw."""
    return _vmap(func, in_dims, out_dims, randomness, chunk_size, vectorize=True)


def _vmap(func, in_dims, out_dims, randomness, chunk_size, vectorize):
    check_randomness(randomness)
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        batch, flat_in_dims, flat_args, args_spec = _process_inputs(in_dims, args, func)
        if batch == 0:
            return _empty_batch(func, flat_args, flat_in_dims, args_spec, kwargs, out_dims, randomness)
        if vectorize:
            result = _vectorized(func, flat_args, flat_in_dims, args_spec, kwargs, batch, out_dims, randomness,
                                 chunk_size)
            if result is not _FELL_BACK:
                return result
        return _loop(func, flat_args, flat_in_dims, args_spec, kwargs, batch, out_dims, randomness)
    return wrapped


def _loop(func, flat_args, flat_in_dims, args_spec, kwargs, batch, out_dims, randomness):
    """Note [vmap is a loop]."""
    state = get_rng_state() if randomness == "same" else None
    results = []
    with randomness_mode(randomness):
        for i in range(batch):
            if state is not None:
                set_rng_state(state)
            sample = [a if d is None else a.select(d, i) for a, d in zip(flat_args, flat_in_dims)]
            results.append(func(*tree_unflatten(sample, args_spec), **kwargs))
    return _stack_outputs(results, out_dims, func)


_FELL_BACK = object()
stats = _batched.stats


def _vectorized(func, flat_args, flat_in_dims, args_spec, kwargs, batch, out_dims, randomness, chunk_size):
    """func run on BatchedTensors, chunk by chunk; _FELL_BACK when the attempt could not finish
    (Note [Vectorized vmap]). No draw happens in an attempt: the draw guard raises before the
    generator is touched, so the random state is as it was for the loop."""
    step = batch if chunk_size is None else chunk_size
    chunks = []
    for start in range(0, batch, step):
        n = min(step, batch - start)
        part = flat_args if n == batch else [a if d is None else a.narrow(d, start, n)
                                             for a, d in zip(flat_args, flat_in_dims)]
        entry = _batched.new_level(n, part)
        try:
            with _batched.patched(), randomness_mode(randomness, vectorized=True):
                inputs = [a if d is None else _batched.make(a if d == 0 else a.movedim(d, 0), entry[0])
                          for a, d in zip(part, flat_in_dims)]
                output = func(*tree_unflatten(inputs, args_spec), **kwargs)
        except (_batched.Unbatchable, Exception) as e:
            _batched.last_fallback[0] = e  # why (for tests and for anyone asking why a vmap is slow)
            return _FELL_BACK
        finally:
            _batched.pop_level(entry)
        chunks.append(_unbatch_outputs(output, out_dims, func, entry[0], n))
    stats["vectorized"] += 1
    if len(chunks) == 1:
        return chunks[0]
    flat0, spec = tree_flatten(chunks[0])
    flat_dims = _flat_out_dims(chunks[0], out_dims, spec, _name(func))
    columns = zip(*(tree_flatten(c)[0] for c in chunks))
    joined = [col[0] if d is None else _batched.dispatch("cat", cat, (list(col),), {"dim": d})
              for col, d in zip(columns, flat_dims)]
    return tree_unflatten(joined, spec)


def _unbatch_outputs(output, out_dims, func, level, batch):
    """func's outputs with the batch dim of `level` moved to out_dims (an unbatched output expanded)."""
    name = _name(func)
    flat, spec = tree_flatten(output)
    flat_dims = _flat_out_dims(output, out_dims, spec, name)
    out = []
    for x, d in zip(flat, flat_dims):
        batched = _batched.batched_at(x, level)
        if d is None:
            if batched:
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            out.append(x)
        elif batched:
            out.append(x._value.movedim(0, d))
        elif isinstance(x, Tensor):
            out.append(x.unsqueeze(d).expand(tuple(x.shape[:d % (x.dim() + 1)]) + (batch,)
                                             + tuple(x.shape[d % (x.dim() + 1):])))
        else:
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(x)}. "
                             f"Did you mean to set out_dims= to None for output?")
    return tree_unflatten(out, spec)


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
    stats["loop"] += 1
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
        joined = _batched.dispatch("stack", stack, (values,), {"dim": d})
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
