"""Random sampling ops and in-place value writers: rand/randn/randint/randperm/normal/
bernoulli/multinomial/poisson (+ _like), the in-place samplers (uniform_, normal_, random_
...), and fill_/zero_/copy_. Generators and seeding live in ember/random.py; see
Note [Random streams] there for how ember's streams relate to torch's.

Every in-place writer records a node whose gradient is zero for self (the values no
longer depend on the old ones), as torch's UniformBackward0, FillBackward2, ...
"""
import math
import warnings

import numpy as np

from .. import _dtype as D
from .._backend import check_internal_overlap
from .._tensor import Tensor
from ..random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed,
                      set_rng_state)
from ..autograd import grad_mode
from . import random_draws as R
from ._registry import Op, assign_result, check_inplace, install, namespace, shapes_error
from .creation import _is_dense, _like_array, _limits, checked_scalar, finish, into_out, size_args, varargs_or

_state = grad_mode._state
_make = Tensor._make
# Callables run before every draw, innermost last: ember.func.vmap pushes one that raises
# in randomness="error" mode (as torch's vmap does) and a no-op for the other modes.
_draw_guards = []


def _gen(generator):
    """The ember Generator to draw from (the default one for None)."""
    if _draw_guards:
        _draw_guards[-1]()
    if generator is None:
        return default_generator
    if type(generator) is not Generator:
        raise TypeError(f"expected argument 'generator' to be torch.Generator, not {type(generator).__name__}")
    return generator


# ---- drawing kernels (arrays; the streams are torch's, see random_draws.py) ----------------

def _not_impl(kernel, d):
    return NotImplementedError(f'"{kernel}" not implemented for \'{D.SCALAR_NAMES[d]}\'')


def _uniform_into(g, x, d, low=0.0, high=1.0):
    """uniform_(low, high) values for an array laid out like x (dtype d), in torch's order; x may
    be a shape (a fresh contiguous tensor)."""
    n = math.prod(x) if isinstance(x, tuple) else x.size
    if d.category == D.COMPLEX:
        return _place(x, R.uniform_complex(g, n, d, low, high))
    if d.category != D.FLOAT:
        raise _not_impl("check_uniform_bounds", d)
    return _place(x, R.uniform(g, n, d, low, high))


def _normal_into(g, x, d, mean=0.0, std=1.0):
    """normal_(mean, std) values for an array laid out like x (or a shape); complex dtypes fill
    their real view with std / sqrt(2) for each part."""
    if isinstance(x, tuple):
        n, contiguous = math.prod(x), True
    else:
        n, contiguous = x.size, x.flags.c_contiguous
    if d.category == D.COMPLEX:
        vals = R.normal(g, 2 * n, d.to_real(), contiguous, mean, std / math.sqrt(2))
        return _place(x, vals.view(d.np))
    if d.category != D.FLOAT:
        raise _not_impl("normal_kernel_cpu", d)
    return _place(x, R.normal(g, n, d, contiguous, mean, std))


def _place(x, flat):
    if isinstance(x, tuple):
        return flat if flat.shape == x else flat.reshape(x)
    return R.place(x, flat)


def _like_layout(input, memory_format=None):
    """The layout of empty_like(input, memory_format=...): a shape (C order) or an array laid out so."""
    x = input._data
    if x.flags.c_contiguous and memory_format is None:
        return x.shape
    template = _like_array(input, input._dtype, memory_format, None)
    return template.shape if template.flags.c_contiguous else template


def _check_float(d, what, cname=None):
    if d.category < D.FLOAT:
        name = cname or D.SCALAR_NAMES[d]
        raise RuntimeError(f"{what} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {name}")


# ---- zero-gradient nodes of sampling ops ------------------------------------------------

class _Sampled(Op):
    """Output values were drawn at random: the gradient to every input is zero."""

    @staticmethod
    def forward(ctx, *arrays, values):
        return values

    def backward(ctx, grad):
        grads = []
        for meta, need in zip(ctx._input_meta, ctx.needs_input_grad):
            grads.append(_make(np.zeros(meta[0], dtype=meta[1].np), meta[1]) if need else None)
        return tuple(grads) if len(grads) > 1 else grads[0]


def _node(name):
    return type(name, (_Sampled,), {"__slots__": (), "_name": name})


NormalBackward1 = _node("NormalBackward1")
NormalBackward2 = _node("NormalBackward2")
NormalBackward3 = _node("NormalBackward3")
BernoulliBackward0 = _node("BernoulliBackward0")
BernoulliBackward1 = _node("BernoulliBackward1")
PoissonBackward0 = _node("PoissonBackward0")
_INPLACE_NODES = {n: _node(n) for n in (
    "UniformBackward0", "NormalBackward0", "RandomBackward0", "RandomBackward1", "RandomBackward2",
    "ExponentialBackward0", "GeometricBackward0", "CauchyBackward0", "LogNormalBackward0", "BernoulliBackward1",
    "BernoulliBackward2", "ZeroBackward0", "FillBackward2")}


def _sampled(node_cls, values, dtype, inputs):
    """Wrap drawn values; record node_cls when an input requires grad (outputs are leaves otherwise)."""
    if _state.enabled:
        for t in inputs:
            if isinstance(t, Tensor) and t._requires_grad:
                return node_cls.apply(*[t if isinstance(t, Tensor) else None for t in inputs], values=values)
    return _make(values, dtype)


def _write(self, values, node_name, others=()):
    """Write drawn/filled `values` into self: one np.copyto without autograd, else through
    a node so that self's history (and its base's, for views) is rewritten like torch."""
    if _state.enabled and (self._requires_grad or any(o._requires_grad for o in others)):
        check_inplace(self)
        values = values.astype(self._data.dtype, copy=False)
        r = _INPLACE_NODES[node_name].apply(self, *others, values=values)
        return assign_result(self, r, node_name)
    if values is not self._data:
        np.copyto(self._data, values, casting="unsafe")
    self._version_counter.value += 1
    return self


# ---- factories: rand, randn, randint, randperm ----------------------------------------

def _factory_dtype(dtype, out):
    if dtype is None:
        return out._dtype if out is not None else D.get_default_dtype()
    if out is not None and out._dtype is not dtype:
        raise RuntimeError(f"dtype {D.SCALAR_NAMES[dtype]} does not match dtype of out parameter "
                           f"({D.SCALAR_NAMES[out._dtype]})")
    return dtype


def rand(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    shape = size_args(sizes if size is None else varargs_or(sizes, size, "size", "rand"), "rand")
    d = _factory_dtype(dtype, out)
    arr = _uniform_into(_gen(generator), shape, d)
    return into_out(out, arr, d) if out is not None else finish(arr, d, requires_grad, device)


def randn(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False):
    shape = size_args(sizes if size is None else varargs_or(sizes, size, "size", "randn"), "randn")
    d = _factory_dtype(dtype, out)
    arr = _normal_into(_gen(generator), shape, d)
    return into_out(out, arr, d) if out is not None else finish(arr, d, requires_grad, device)


_C_NAMES = {D.uint8: "unsigned char", D.int8: "signed char", D.int16: "short", D.int32: "int",
            D.int64: "long int", D.bool: "bool", D.float16: "c10::Half", D.bfloat16: "c10::BFloat16",
            D.float32: "float", D.float64: "double", D.uint16: "short unsigned int", D.uint32: "unsigned int",
            D.uint64: "long unsigned int"}


def _int_range(d):
    """[lo, hi] of integer values dtype d can hold exactly (floats: +-2**digits)."""
    if d is D.bool:
        return 0, 1
    if d.category == D.INT:
        return _limits(d)
    return -(1 << R.DIGITS[d.to_real()]), 1 << R.DIGITS[d.to_real()]


def _check_from_to(low, high, d):
    """torch's checks of random_(from, to) / randint(low, high) bounds for dtype d."""
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    lo, hi = _int_range(d)
    if d.category >= D.FLOAT:
        if not lo <= low <= hi or not lo <= high - 1 <= hi:
            which = "from" if not lo <= low <= hi else "to - 1"
            digits = R.DIGITS[d.to_real()]
            warnings.warn(f"{which} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                          f"{_C_NAMES[d]} can support discrete uniform distribution only within this range. "
                          "This warning will become an error in version 1.7 release, please fix the code in "
                          "advance", UserWarning, stacklevel=3)
        return
    if not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {_C_NAMES[d]}")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {_C_NAMES[d]}")


def _integers(g, low, high, x, d):
    """random_(low, high) values in dtype d for layout x (or a shape): torch's from-to kernel, or
    its full 64-bit kernel for [-2**63, 2**63)."""
    n = math.prod(x) if isinstance(x, tuple) else x.size
    if low == -(1 << 63) and high == 1 << 63:
        return _place(x, R.full_range(g, n, d))
    if d.category == D.FLOAT:
        low, high = _float_bounds(low, high, d)
    return _place(x, R.from_to(g, n, high - low, low, d))


def _float_bounds(low, high, d):
    """torch's update_from/update_to: move bounds inwards until they survive the cast to d."""
    digits = R.DIGITS[d]
    up = int(np.array(low + 1, dtype=np.int64).astype(d.np))
    if up < low:
        low = up + (1 << ((abs(low + 1).bit_length() - 1) - digits + 1))
    down = int(np.array(high - 1, dtype=np.int64).astype(d.np))
    if down >= high:
        high = down - (1 << ((abs(high - 1).bit_length() - 1) - digits + 1))
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got "
                           f"from={low} >= to={high}")
    return low, high


def _int_arg(v, name, fn):
    if isinstance(v, (bool, float, complex)) or not hasattr(v, "__index__") or (
            isinstance(v, Tensor) and v._dtype.category >= D.FLOAT):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {type(v).__name__}")
    return int(v.__index__())


def randint(*args, size=None, low=None, high=None, generator=None, out=None, dtype=None, layout=None,
            device=None, requires_grad=False, pin_memory=False):
    """randint(high, size) / randint(low, high, size); size may also be a keyword."""
    args = list(args)
    if size is None:
        if not args:
            raise TypeError("randint() missing required argument 'size'")
        size = args.pop()
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif args:
        raise TypeError(f"randint() takes from 2 to 3 positional arguments but {len(args) + 1} were given")
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    low = 0 if low is None else _int_arg(low, "low", "randint")
    high = _int_arg(high, "high", "randint")
    shape = size_args((size,), "randint")
    d = dtype or (out._dtype if out is not None else D.int64)
    _check_from_to(low, high, d)
    arr = _integers(_gen(generator), low, high, shape, d)
    return into_out(out, arr, d) if out is not None else finish(arr, d, requires_grad, device)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    n = _int_arg(n, "n", "randperm")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    d = dtype if dtype is not None else (out._dtype if isinstance(out, Tensor) else D.int64)  # as torch: out's
    if d is D.bool or d.limited:
        raise _not_impl("randperm", d)
    if d is D.float16 and n > 2049:
        raise RuntimeError("n cannot be greater than 2049 for Half type.")
    if d is D.float32 and n > (1 << 24) + 1:
        raise RuntimeError("n cannot be greater than 2^24+1 for Float type.")
    if d.category == D.INT and n > 0 and n - 1 > np.iinfo(d.np).max:
        raise RuntimeError(f"value cannot be converted to type {d.name}_t without overflow")
    arr = R.randperm(_gen(generator), n)
    arr = arr if d is D.int64 else arr.astype(d.np)
    return into_out(out, arr, d) if out is not None else finish(arr, d, requires_grad, device)


def _like_dtype(input, dtype, fn):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return dtype or input._dtype


def rand_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None, pin_memory=False):
    d = _like_dtype(input, dtype, "rand_like")
    return finish(_uniform_into(_gen(generator), _like_layout(input, memory_format), d), d, requires_grad, device)


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None, pin_memory=False):
    d = _like_dtype(input, dtype, "randn_like")
    return finish(_normal_into(_gen(generator), _like_layout(input, memory_format), d), d, requires_grad, device)


def randint_like(input, *args, low=None, high=None, generator=None, dtype=None, layout=None, device=None,
                 requires_grad=False, memory_format=None, pin_memory=False):
    """randint_like(input, high) / randint_like(input, low, high) (also as keywords)."""
    d = _like_dtype(input, dtype, "randint_like")
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif args:
        raise TypeError(f"randint_like() takes from 2 to 3 positional arguments but {len(args) + 1} were given")
    if high is None:
        raise TypeError("randint_like() missing required argument 'high'")
    if low is None:
        low = 0
    low = _int_arg(low, "low", "randint_like")
    high = _int_arg(high, "high", "randint_like")
    _check_from_to(low, high, d)
    return finish(_integers(_gen(generator), low, high, _like_layout(input, memory_format), d), d, requires_grad,
                  device)


# ---- normal, bernoulli, multinomial, poisson -------------------------------------------

def _check_std(std):
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")


def _fmt(v):
    """A number as torch prints it in messages (1.5, -1, 0)."""
    return f"{int(v)}" if float(v).is_integer() else f"{v}"


def _normal_values(g, shape, d, mean, std):
    """torch.normal's tensor overloads as torch computes them: normal_(0, std) then add_(mean) for
    a float std; normal_(0, 1), mul_(std), add_(mean) for a tensor std (each in-place op computes
    in the promoted dtype and stores in d)."""
    if not isinstance(std, np.ndarray):
        return _inplace(_normal_into(g, shape, d, 0.0, std), mean, np.add, d)
    z = _inplace(_normal_into(g, shape, d), std, np.multiply, d)
    if not isinstance(mean, np.ndarray):
        mean = np.asarray(mean).astype(d.np)
    return _inplace(z, mean, np.add, d)


def _inplace(x, other, ufunc, d):
    """x op= other as torch's in-place op on a tensor of dtype d."""
    ct = d.np if other.dtype.kind in "biu" else np.promote_types(d.np, other.dtype)
    return ufunc(x, other, dtype=ct).astype(d.np, copy=False)


def normal(mean, std=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False):
    """The four overloads of torch.normal: (Tensor, Tensor), (Tensor, float), (float, Tensor),
    (float, float, size)."""
    g = _gen(generator)
    tm = isinstance(mean, Tensor)
    ts = isinstance(std, Tensor)
    if not tm and not ts:
        if std is None:
            std = 1.0
        if size is None:
            raise TypeError(f"normal() received an invalid combination of arguments - got ({type(mean).__name__}, "
                            f"{type(std).__name__}), but expected a size for float mean and std")
        _check_std(std)
        shape = size_args((size,), "normal")
        d = _factory_dtype(dtype, out)
        arr = _normal_into(g, shape, d, mean, std)
        return into_out(out, arr, d) if out is not None else finish(arr, d, requires_grad, device)
    if size is not None:
        raise TypeError("normal() received an invalid combination of arguments - size is only accepted with "
                        "float mean and std")
    if dtype is not None or layout is not None or device is not None or pin_memory is not False \
            or requires_grad is not False:  # the Tensor overloads take none of the factory keywords
        raise TypeError("normal() received an invalid combination of arguments - dtype, layout, device, "
                        "pin_memory and requires_grad are only accepted with float mean and std and a size")
    if tm and not ts:
        std = 1.0 if std is None else std
        _check_std(std)
        d = mean._dtype
        shape = mean._data.shape
        node, inputs, mean_v, std_v = NormalBackward1, (mean,), mean._data, std
    elif ts and not tm:
        d = std._dtype
        if d.category >= D.FLOAT and std._data.size and (std._data < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
        shape = std._data.shape
        node, inputs, mean_v, std_v = NormalBackward2, (None, std), mean, std._data
    else:
        d = mean._dtype
        if std._data.size and (std._data < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
        try:
            shape = np.broadcast_shapes(mean._data.shape, std._data.shape)
        except ValueError:
            raise shapes_error("normal", mean._data, std._data) from None
        node, inputs, mean_v, std_v = NormalBackward3, (mean, std), mean._data, std._data
    arr = _normal_values(g, shape, d, mean_v, std_v)
    if out is not None:
        return into_out(out, arr, d)
    return _sampled(node, arr, d, inputs)


def _check_p_tensor(p):
    if p._dtype.category != D.FLOAT:
        raise _not_impl("bernoulli_tensor_cpu_p_", p._dtype)
    x = p._data
    if x.size and not ((x >= 0) & (x <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                           "message be improved?  If so, please report an enhancement request to PyTorch.)")


def _check_p_float(p):
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_fmt(p)}")


def _bernoulli_mask(g, x, p):
    """Boolean Bernoulli draws for layout x (an array or a shape); p a float or an array that
    broadcasts to x (read in x's iteration order)."""
    if isinstance(x, tuple):
        n = math.prod(x)
        if isinstance(p, np.ndarray):
            p = np.broadcast_to(p, x).ravel()
        return R.bernoulli(g, p, n).reshape(x)
    if isinstance(p, np.ndarray):
        p = R.in_order(x, np.broadcast_to(p, x.shape))
    return R.place(x, R.bernoulli(g, p, x.size))


def dropout_keep(input, shape=None):
    """Dropout's draw, as torch's CPU dropout makes it: noise = empty_like(input) (or, for feature
    dropout, empty(shape)) then noise.bernoulli_(1 - p) on the default generator. Returns a
    function of p giving the boolean keep mask."""
    layout = shape if shape is not None else _like_layout(input)
    return lambda p: _bernoulli_mask(_gen(None), layout, 1.0 - p)


def rrelu_noise(input, lower, upper, generator=None):
    """rrelu's training noise as torch's CPU kernel draws it: walking the elements in C order, one
    double uniform in [lower, upper) (bounds rounded to the compute type first) for each element
    <= 0, slope 1 for the others."""
    x = input._data
    flat = np.ascontiguousarray(x).ravel()
    neg = flat <= 0
    ct = np.float32 if x.dtype.itemsize <= 4 else np.float64
    lo = float(ct(lower))
    hi = float(ct(upper))
    noise = np.ones(flat.shape, dtype=x.dtype)
    u = R.uniform_f64(_gen(generator), int(neg.sum()))
    noise[neg] = (u * (hi - lo) + lo).astype(x.dtype)  # Activation.cpp is built without FMA contraction
    return noise.reshape(x.shape)


def bernoulli(input, p=None, *, generator=None, out=None):
    """bernoulli(input): input holds the probabilities; bernoulli(input, p): a float p, input's shape/dtype."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    g = _gen(generator)
    if p is None:
        _check_p_tensor(input)
        arr = _bernoulli_mask(g, input._data.shape, input._data).astype(input._dtype.np)
        node = BernoulliBackward0
    else:
        if isinstance(p, Tensor):
            raise TypeError("bernoulli() received an invalid combination of arguments - got (Tensor, Tensor), "
                            "but expected one of: (Tensor input, *, Generator generator, Tensor out) or "
                            "(Tensor input, float p, *, Generator generator)")
        _check_p_float(p)
        arr = _bernoulli_mask(g, _like_layout(input), p).astype(input._dtype.np)
        node = BernoulliBackward1
    if out is not None:
        return into_out(out, arr, out._dtype)
    return _sampled(node, arr, input._dtype, (input,))


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Category indices drawn from the rows of input (unnormalized probabilities)."""
    x = input._data
    if x.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if input._dtype.category != D.FLOAT:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{D.SCALAR_NAMES[input._dtype]}")
    n = _int_arg(num_samples, "num_samples", "multinomial")
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    k = x.shape[-1]
    if not replacement and n > k:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    p = x.reshape(-1, k).astype(np.float64)
    if not np.isfinite(p).all() or (p < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    total = p.sum(axis=1)
    if (total <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    g = _gen(generator)
    if replacement and n > 1:
        idx = R.multinomial_with_replacement(g, x.reshape(-1, k), n)
    else:
        idx = _multinomial_race(g, input, n)
    idx = idx.reshape(x.shape[:-1] + (n,))
    if out is not None:
        return into_out(out, idx, D.int64)
    return _make(idx, D.int64)


def _multinomial_race(g, input, n):
    """torch's draw without replacement: q = exponential_() like input, then the top n of input / q
    (argmax for one sample)."""
    d = input._dtype
    q = _place(_like_layout(input), R.exponential(g, input._data.size, 1.0).astype(d.np))
    keys = (input._data / q).astype(d.np, copy=False)
    keys = keys.reshape(-1, keys.shape[-1])
    if n == 1:
        return np.argmax(keys, axis=1)[:, None]
    return np.argsort(-keys.astype(np.float64), axis=1, kind="stable")[:, :n]


def poisson(input, generator=None):
    if input._dtype.category != D.FLOAT:
        raise _not_impl("poisson_cpu", input._dtype)
    lam = input._data
    if lam.size and not (lam >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    counts = R.poisson(_gen(generator), lam.astype(np.float64).ravel())  # C order: the output is fresh
    arr = counts.astype(input._dtype.np).reshape(lam.shape)
    return _sampled(PoissonBackward0, arr, input._dtype, (input,))


# ---- in-place samplers ----------------------------------------------------------------

def uniform_(self, from_=0, to=1, *, generator=None, **kw):
    from_ = kw.pop("from", from_)  # torch's keyword is `from`, a Python keyword
    if kw:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kw))}'")
    d = self._dtype
    if d.category < D.FLOAT:
        raise _not_impl("check_uniform_bounds", d)
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_fmt(from_)} > "
                           f"to={_fmt(to)}")
    if not math.isfinite(to - from_):
        raise RuntimeError(f"{'to' if not math.isfinite(to) else 'from'} is out of bounds for {_C_NAMES.get(d.to_real())}")
    check_internal_overlap(self._data)  # before the draw (Note [Expanded self])
    u = _uniform_into(_gen(generator), self._data, d, from_, to)
    return _write(self, u, "UniformBackward0")


def normal_(self, mean=0, std=1, *, generator=None):
    _check_std(std)
    check_internal_overlap(self._data)
    z = _normal_into(_gen(generator), self._data, self._dtype, mean, std)
    return _write(self, z, "NormalBackward0")


def random_(self, *args, generator=None, **kw):
    """random_() / random_(to) / random_(from, to): uniform integers stored in self's dtype."""
    if "from" in kw:
        args = (kw.pop("from"),) + args
    if "to" in kw:
        args = args + (kw.pop("to"),)
    if kw:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kw))}'")
    check_internal_overlap(self._data)  # torch's first check here, before the bounds'
    d = self._dtype
    lo, hi = _int_range(d)
    if len(args) == 0:
        low, high, node = 0, hi + 1, "RandomBackward2"
    elif len(args) == 1:
        low, high, node = 0, _int_arg(args[0], "to", "random_"), "RandomBackward1"
    elif len(args) == 2:
        low = _int_arg(args[0], "from", "random_")
        high = hi + 1 if args[1] is None else _int_arg(args[1], "to", "random_")
        node = "RandomBackward0"
    else:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    _check_from_to(low, high, d)
    if not args:
        arr = R.place(self._data, R.default_range(_gen(generator), self._data.size, d))
    else:
        arr = _integers(_gen(generator), low, high, self._data, d)
    return _write(self, arr, node)


def exponential_(self, lambd=1, *, generator=None):
    d = self._dtype
    _check_float(d, "Exponential")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_fmt(lambd)}")
    check_internal_overlap(self._data)
    e = R.exponential(_gen(generator), self._data.size, float(lambd))
    return _write(self, R.place(self._data, e), "ExponentialBackward0")


def geometric_(self, p, *, generator=None):
    d = self._dtype
    if d is D.bool or d.category == D.COMPLEX:
        raise _not_impl("geometric_cpu", d)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_fmt(p)}")
    check_internal_overlap(self._data)
    arr = R.geometric(_gen(generator), self._data.size, float(p))
    return _write(self, R.place(self._data, arr), "GeometricBackward0")


def cauchy_(self, median=0, sigma=1, *, generator=None):
    d = self._dtype
    _check_float(d, "Cauchy", _C_NAMES.get(d))
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_fmt(sigma)}")
    check_internal_overlap(self._data)
    c = R.cauchy(_gen(generator), self._data.size, float(median), float(sigma))
    return _write(self, R.place(self._data, c), "CauchyBackward0")


def log_normal_(self, mean=1, std=2, *, generator=None):
    d = self._dtype
    if d.category < D.FLOAT:
        raise _not_impl("log_normal_cpu", d)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_fmt(std)}")
    check_internal_overlap(self._data)
    z = R.log_normal(_gen(generator), self._data.size, float(mean), float(std))
    return _write(self, R.place(self._data, z), "LogNormalBackward0")


def bernoulli_(self, p=0.5, *, generator=None):
    g = _gen(generator)
    shape = self._data.shape
    if isinstance(p, Tensor):
        _check_p_tensor(p)
        if p._data.shape != shape:
            _check_expand(p._data.shape, shape)
        check_internal_overlap(self._data)
        mask = _bernoulli_mask(g, self._data, p._data)
        return _write(self, mask, "BernoulliBackward1", (p,))
    _check_p_float(p)
    check_internal_overlap(self._data)
    return _write(self, _bernoulli_mask(g, self._data, p), "BernoulliBackward2")


def _check_expand(src, dst):
    """torch's expand() errors for broadcasting shape src to dst (one-way)."""
    if len(src) > len(dst):
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(src)}}}, size={list(dst)}): the number of sizes "
                           f"provided ({len(dst)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({len(src)})")
    pad = (1,) * (len(dst) - len(src)) + tuple(src)
    for i, (a, b) in enumerate(zip(pad, dst)):
        if a != b and a != 1:
            raise RuntimeError(f"The expanded size of the tensor ({b}) must match the existing size ({a}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(dst)}.  Tensor sizes: "
                               f"{list(src)}")


# ---- fill_, zero_, copy_ --------------------------------------------------------------

class FillBackward3(Op):
    """fill_(value) with a 0-d value tensor: the gradient of value is the sum of grad."""
    _name = "FillBackward3"

    @staticmethod
    def forward(ctx, x, value, values):
        return values

    def backward(ctx, grad):
        need = ctx.needs_input_grad
        gx = _make(np.zeros(grad._data.shape, dtype=grad._dtype.np), grad._dtype) if need[0] else None
        return gx, grad.sum() if need[1] else None


def fill_(input, value):
    d = input._dtype
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        if _state.enabled and (input._requires_grad or value._requires_grad):
            check_inplace(input)
            if value._requires_grad:
                values = np.full(input._data.shape, value._data, dtype=d.np)
                return assign_result(input, FillBackward3.apply(input, value, values=values), "fill_")
        v = value._data.astype(d.np) if value._dtype is not d else value._data
    elif isinstance(value, (int, float, bool, complex, np.number, np.bool_)):
        v = checked_scalar(value, d)
    else:
        raise TypeError(f"fill_() received an invalid combination of arguments - got ({type(value).__name__}), "
                        "but expected one of: (Tensor value) or (Number value)")
    if _state.enabled and input._requires_grad:
        return _write(input, np.full(input._data.shape, v, dtype=d.np), "FillBackward2")
    input._data.fill(v)
    input._version_counter.value += 1
    return input


def zero_(input):
    if _state.enabled and input._requires_grad:
        return _write(input, np.zeros(input._data.shape, dtype=input._dtype.np), "ZeroBackward0")
    input._data.fill(0)
    input._version_counter.value += 1
    return input


def fill(input, value):
    """torch.fill: a new tensor like input, filled with value."""
    return fill_(input.clone(), value)


class CopyBackwards(Op):
    """self.copy_(src) with autograd: the new value is src (broadcast, cast to self's dtype)."""
    _name = "CopyBackwards"

    @staticmethod
    def forward(ctx, x, src):
        out = np.empty(x.shape, dtype=x.dtype)
        np.copyto(out, src, casting="unsafe")
        return out

    def backward(ctx, grad):
        need = ctx.needs_input_grad
        gx = _make(np.zeros(grad._data.shape, dtype=grad._dtype.np), grad._dtype) if need[0] else None
        return gx, grad if need[1] else None


def copy_(self, other, non_blocking=False):
    """Copy src into self (broadcasting src, casting to self's dtype)."""
    if not isinstance(other, Tensor):
        if isinstance(other, (int, float, bool, complex, np.number, np.bool_)):
            return fill_(self, other)
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    dst = self._data
    s = other._data
    if s.dtype.kind == "c" and dst.dtype.kind != "c":
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=2)
        s = s.real
    check_internal_overlap(dst)
    if np.may_share_memory(dst, s):
        _check_partial_overlap(dst, s)
    if _state.enabled and (self._requires_grad or other._requires_grad):
        check_inplace(self)
        _check_copy_shapes(dst, s)
        return assign_result(self, CopyBackwards.apply(self, other), "copy_")
    if s.ndim > dst.ndim:
        _check_copy_shapes(dst, s)  # NumPy drops leading size-1 dims of src ([1] into []); torch refuses
    try:
        np.copyto(dst, s, casting="unsafe")
    except ValueError:
        _check_copy_shapes(dst, s)
        raise
    self._version_counter.value += 1
    return self


def _check_copy_shapes(dst, s):
    if s.shape == dst.shape:
        return
    if s.ndim > dst.ndim:
        try:
            b = np.broadcast_shapes(dst.shape, s.shape)
        except ValueError:
            raise shapes_error("copy_", dst, s) from None
        raise RuntimeError(f"output with shape {list(dst.shape)} doesn't match the broadcast shape {list(b)}")
    pad = (1,) * (dst.ndim - s.ndim) + s.shape
    for i in range(dst.ndim - 1, -1, -1):
        if pad[i] != dst.shape[i] and pad[i] != 1:
            raise RuntimeError(f"The size of tensor a ({dst.shape[i]}) must match the size of tensor b ({pad[i]}) "
                               f"at non-singleton dimension {i}")


def _check_partial_overlap(dst, s):
    """torch refuses src/dst that overlap without being the same elements (when it can tell)."""
    same = dst.__array_interface__["data"][0] == s.__array_interface__["data"][0] and dst.strides == s.strides \
        and dst.shape == s.shape
    if not same and _is_dense(dst) and _is_dense(s):
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                           "refer to a single memory location. Please clone() the tensor before performing the "
                           "operation.")


# ---- installation ---------------------------------------------------------------------

for _fn in (rand, randn, randint, randperm, rand_like, randn_like, randint_like, normal, poisson, fill):
    install(_fn, _fn.__name__, method=False)
for _fn in (bernoulli, multinomial):
    install(_fn, _fn.__name__)
for _fn in (uniform_, normal_, random_, exponential_, geometric_, cauchy_, log_normal_, bernoulli_, copy_):
    install(_fn, _fn.__name__, function=False)
install(fill_, "fill_")
install(zero_, "zero_")
namespace.update(Generator=Generator, default_generator=default_generator, manual_seed=manual_seed, seed=seed,
                 initial_seed=initial_seed, get_rng_state=get_rng_state, set_rng_state=set_rng_state)
