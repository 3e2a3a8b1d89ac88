"""Batching rules of vmap: each op of a sample as one op on the batch (Note [Vectorized vmap], _batched.py).

A rule is rule(call, level, args, kwargs): args hold BatchedTensors of `level` (batched: their
`_value` has the batch at dim 0) and tensors not batched at that level. It returns the op's result
on values (batch dim 0), Ready(result) for a result it built of BatchedTensors itself, or FALLBACK
(the per-sample loop for this op). `call(args, kwargs)` runs the op again on values, dispatching
what is left of enclosing levels. Dims a sample's op is given are shifted past the batch dim.
"""
from .. import _dtype as D
from .._tensor import Tensor
from ._batched import BatchedTensor, batch_size, dispatch, input_counters

FALLBACK = object()
RULES = {}


class Ready:
    """A rule's result that is already made of BatchedTensors (a rule composed of batched ops)."""
    __slots__ = ("result",)

    def __init__(self, result):
        self.result = result


def _opname(call):
    return call.args[0]  # call is partial(_redispatch, name, fn)


def _batched(x, level):
    return type(x) is BatchedTensor and x._level == level


def _pad(v, k):
    """v (batch dim 0) with k size-1 dims inserted after the batch dim (to broadcast against more dims)."""
    if k <= 0:
        return v
    s = tuple(v.shape)
    return v.reshape(s[:1] + (1,) * k + s[1:])


def _wrap(dim, n):
    m = max(n, 1)
    if not -m <= dim < m:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-m}, {m - 1}], but got {dim})")
    return dim % m


def _has_tensor(items):
    for x in items:
        if isinstance(x, Tensor) or (type(x) in (list, tuple) and any(isinstance(y, Tensor) for y in x)):
            return True
    return False


def _full(x, level):
    """x's value batched at `level` (an unbatched x expanded along a new batch dim 0)."""
    if _batched(x, level):
        return x._value
    return x.unsqueeze(0).expand((batch_size(level),) + tuple(x.shape))


def _promoted(tensors):
    """torch's result dtype of these tensors, with each sample's (not the batch's) dims."""
    dim = zero = None
    for t in tensors:
        d = t.dtype
        if t.dim():
            dim = d if dim is None else D._PROMOTE[(dim, d)]
        else:
            zero = d if zero is None else D._PROMOTE[(zero, d)]
    return D.combine_categories(dim, zero)


def _rule(*names):
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return deco


# ---- elementwise ops: broadcast against each other with the batch dim in front -------------------

# F.<op>(input, ..., inplace) positions of `inplace` (see _inplace_functional)
_INPLACE_AT = {"relu": 1, "relu6": 1, "selu": 1, "silu": 1, "mish": 1, "hardswish": 1, "hardsigmoid": 1,
               "elu": 2, "celu": 2, "leaky_relu": 2, "hardtanh": 3, "threshold": 3, "dropout": 3}


def elementwise(promote=True, skip=0):
    """The rule of an elementwise op: its tensor operands broadcast, sample dims aligned from the
    right; with promote, operands of different dtypes are cast first to the dtype torch gives the
    samples (a batch of 0-d samples is 1-d, which would change torch's promotion). `skip` leading
    tensor operands (where's condition) take no part in the promotion."""
    def rule(call, level, args, kwargs):
        if kwargs.get("inplace") or kwargs.get("out") is not None:
            return FALLBACK
        slots = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
        slots += [(k, v) for k, v in kwargs.items() if isinstance(v, Tensor)]
        for _, a in enumerate(args):
            if type(a) in (list, tuple) and _has_tensor(a):
                return FALLBACK
        n = max(t.dim() for _, t in slots)
        target = None
        if promote:
            ts = [t for _, t in slots[skip:]]
            if len({t.dtype for t in ts}) > 1:
                target = _promoted(ts)
        args = list(args)
        kwargs = dict(kwargs)
        for j, (key, t) in enumerate(slots):
            if _batched(t, level):
                v = _pad(t._value, n - t.dim())
            else:
                v = t
            if target is not None and j >= skip and v.dtype is not target:
                v = v.to(target)
            if type(key) is int:
                args[key] = v
            else:
                kwargs[key] = v
        return call(tuple(args), kwargs)
    return rule


_UNARY = """abs absolute neg negative exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan
arcsin arccos arctan sinh cosh tanh asinh acosh atanh arcsinh arccosh arctanh sigmoid relu relu6 gelu silu mish
softplus elu selu celu leaky_relu hardtanh hardsigmoid hardswish logsigmoid softsign tanhshrink hardshrink
softshrink threshold square reciprocal sign sgn signbit floor ceil round trunc fix frac erf erfc erfinv lgamma
digamma sinc deg2rad rad2deg nan_to_num logit isnan isinf isfinite isposinf isneginf isreal conj positive
bitwise_not logical_not i0 expit exp2 float double half bfloat16 int long short bool byte char cfloat cdouble
contiguous clone detach zeros_like ones_like empty_like full_like dropout alpha_dropout feature_alpha_dropout
__neg__ __abs__ __invert__ __pos__ angle"""

_NARY = """add sub subtract mul multiply div divide true_divide floor_divide remainder fmod pow float_power atan2
arctan2 maximum minimum fmax fmin eq ne lt le gt ge greater less greater_equal less_equal not_equal
logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift hypot
copysign xlogy nextafter ldexp rsub clamp clip clamp_min clamp_max heaviside igamma igammac
__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__ __rfloordiv__
__mod__ __rmod__ __pow__ __rpow__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __and__ __rand__ __or__ __ror__
__xor__ __rxor__ __lshift__ __rlshift__ __rshift__ __rrshift__ __div__ __rdiv__"""

for _n in _UNARY.split():
    RULES[_n] = elementwise(promote=False)
for _n in _NARY.split():
    RULES[_n] = elementwise()
for _n in ("lerp", "addcmul", "addcdiv", "masked_fill"):
    RULES[_n] = elementwise(promote=False)
RULES["where"] = elementwise(skip=1)


@_rule("to", "type", "type_as")
def _convert(call, level, args, kwargs):
    """A cast: a dtype (or another tensor's dtype) on the batch value."""
    if len(args) < 2 and not kwargs:
        return FALLBACK  # x.type() is a string
    other = args[1] if len(args) > 1 else None
    if isinstance(other, Tensor):
        other = other._value if _batched(other, level) else other
    rest = (other,) + tuple(args[2:]) if len(args) > 1 else ()
    return call((args[0]._value,) + rest, kwargs) if _batched(args[0], level) else FALLBACK


# ---- reductions and other ops along dims ---------------------------------------------------------------

def along(pos=1, kw="dim", none="all", default=None):
    """The rule of an op along dims given at args[pos] or kwargs[kw], shifted past the batch dim.
    An absent dim is `default` (None for a reduction over all dims); dim None means `none`: "all"
    (every sample dim), "flat" (the flattened sample: argmax), or None (no rule)."""
    def rule(call, level, args, kwargs):
        x = args[0]
        if not _batched(x, level) or _has_tensor(args[1:]) or _has_tensor(kwargs.values()):
            return FALLBACK
        nd = x.dim()
        args = list(args)
        kwargs = dict(kwargs)
        if len(args) > pos:
            if isinstance(args[pos], bool):
                return FALLBACK  # std(x, unbiased) and friends
            dim, where = args[pos], pos
        elif kw in kwargs:
            dim, where = kwargs[kw], kw
        else:
            dim, where = default, kw
        v = x._value
        if dim is None:
            if nd == 0 or none is None:
                return FALLBACK
            if none == "flat":
                if kwargs.get("keepdim") or (len(args) > pos + 1 and args[pos + 1] is True):
                    return FALLBACK
                v = v.flatten(1)
                new = 1
            else:
                new = tuple(range(1, nd + 1))
        elif isinstance(dim, int):
            new = _wrap(dim, nd) + 1
        elif type(dim) in (list, tuple) and dim and all(isinstance(d, int) for d in dim):
            new = tuple(_wrap(d, nd) + 1 for d in dim)
        else:
            return FALLBACK
        if type(where) is int:
            args[where] = new
        else:
            kwargs[where] = new
        args[0] = v
        return call(tuple(args), kwargs)
    return rule


for _n in ("sum", "mean", "nansum", "nanmean", "amax", "amin", "all", "any", "std", "var", "count_nonzero"):
    RULES[_n] = along()
for _n in ("argmax", "argmin", "prod"):
    RULES[_n] = along(none="flat")
for _n in ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "softmax", "log_softmax", "logsumexp",
           "median", "nanmedian", "select", "narrow", "unflatten"):
    RULES[_n] = along(none=None)
for _n in ("sort", "argsort", "mode"):
    RULES[_n] = along(none=None, default=-1)
RULES["topk"] = RULES["kthvalue"] = along(pos=2, none=None, default=-1)
RULES["norm"] = along(pos=2, none=None)
RULES["vector_norm"] = along(pos=2)
RULES["unbind"] = along(none=None, default=0)
RULES["split"] = RULES["chunk"] = along(pos=2, none=None, default=0)
RULES["roll"] = along(pos=2, kw="dims", none=None)
_flip_dims = along(kw="dims", none=None)


@_rule("flip")
def _flip(call, level, args, kwargs):
    if len(args) > 2:  # x.flip(0, 1)
        if kwargs or not all(isinstance(d, int) for d in args[1:]):
            return FALLBACK
        args = (args[0], tuple(args[1:]))
    return _flip_dims(call, level, args, kwargs)


@_rule("outer", "ger")
def _outer(call, level, args, kwargs):
    """outer(a, b) of 1-d samples: the product a[:, None] * b[None, :] (the same products)."""
    if kwargs or len(args) != 2 or not all(isinstance(t, Tensor) and t.dim() == 1 for t in args) or \
            args[0].dtype is not args[1].dtype:
        return FALLBACK
    import ember
    return Ready(ember.mul(args[0].unsqueeze(-1), args[1].unsqueeze(-2)))


@_rule("max", "min")
def _max_min(call, level, args, kwargs):
    """max(x) (the largest element), max(x, dim) (values and indices) or max(x, other) (elementwise)."""
    if len(args) > 1 and isinstance(args[1], Tensor) or isinstance(kwargs.get("other"), Tensor):
        return elementwise()(call, level, args, kwargs)
    if len(args) == 1 and not kwargs:
        x = args[0]
        if not _batched(x, level) or x.dim() == 0:
            return FALLBACK
        name = "amax" if _opname(call) == "max" else "amin"
        return getattr(x._value, name)(tuple(range(1, x.dim() + 1)))
    return along(none=None)(call, level, args, kwargs)


# ---- shape ops ------------------------------------------------------------------------------------

def _sizes(args):
    """The sizes of view(*sizes) / view(sizes) as a tuple (None for view(dtype))."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    if not all(isinstance(s, int) for s in args):
        return None
    return tuple(args)


def _simple(call, level, args, kwargs):
    """(x's batch value, the other args) when x alone is batched and nothing else is a tensor, else None."""
    x = args[0]
    if not _batched(x, level) or _has_tensor(args[1:]) or _has_tensor(kwargs.values()):
        return None
    return x._value


@_rule("view", "reshape")
def _view(call, level, args, kwargs):
    v = _simple(call, level, args, kwargs)
    if v is None or kwargs or len(args) < 2:
        return FALLBACK
    sizes = _sizes(args[1:])
    if sizes is None:
        return FALLBACK
    return call((v, (v.shape[0],) + sizes), {})


@_rule("view_as", "reshape_as")
def _view_as(call, level, args, kwargs):
    x, other = args[0], args[1]
    if not _batched(x, level) or kwargs:
        return FALLBACK
    v = x._value
    return getattr(v, "view" if _opname(call) == "view_as" else "reshape")(
        (v.shape[0],) + tuple(other.shape))


@_rule("flatten")
def _flatten(call, level, args, kwargs):
    v = _simple(call, level, args, kwargs)
    nd = args[0].dim()
    if v is None or nd == 0:
        return FALLBACK
    start = args[1] if len(args) > 1 else kwargs.get("start_dim", 0)
    end = args[2] if len(args) > 2 else kwargs.get("end_dim", -1)
    if not (isinstance(start, int) and isinstance(end, int)):
        return FALLBACK
    return v.flatten(_wrap(start, nd) + 1, _wrap(end, nd) + 1)


@_rule("permute")
def _permute(call, level, args, kwargs):
    v = _simple(call, level, args, kwargs)
    if v is None:
        return FALLBACK
    dims = kwargs.get("dims", args[1:])
    dims = _sizes(dims) if dims else ()
    nd = args[0].dim()
    if dims is None or len(dims) != nd:
        return FALLBACK
    return v.permute((0,) + tuple(_wrap(d, nd) + 1 for d in dims))


@_rule("transpose", "swapaxes", "swapdims", "movedim", "moveaxis")
def _transpose(call, level, args, kwargs):
    v = _simple(call, level, args, kwargs)
    nd = args[0].dim()
    if v is None or kwargs or len(args) != 3 or nd == 0:
        return FALLBACK

    def shift(d):
        if isinstance(d, int):
            return _wrap(d, nd) + 1
        return tuple(_wrap(e, nd) + 1 for e in d)
    return call((v, shift(args[1]), shift(args[2])), {})


@_rule("t")
def _t(call, level, args, kwargs):
    v = _simple(call, level, args, kwargs)
    nd = args[0].dim()
    if v is None or nd > 2:
        return FALLBACK
    return v.transpose(1, 2) if nd == 2 else v.view(v.shape)


@_rule("unsqueeze")
def _unsqueeze(call, level, args, kwargs):
    v = _simple(call, level, args, kwargs)
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if v is None or not isinstance(dim, int):
        return FALLBACK
    return v.unsqueeze(_wrap(dim, args[0].dim() + 1) + 1)


@_rule("squeeze")
def _squeeze(call, level, args, kwargs):
    v = _simple(call, level, args, kwargs)
    if v is None:
        return FALLBACK
    x = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    nd = x.dim()
    if dim is None:
        dims = tuple(i + 1 for i, s in enumerate(x.shape) if s == 1)
    elif isinstance(dim, int):
        dims = (_wrap(dim, nd) + 1,) if nd else ()
    elif type(dim) in (list, tuple):
        dims = tuple(_wrap(d, nd) + 1 for d in dim) if nd else ()
    else:
        return FALLBACK
    dims = tuple(d for d in dims if v.shape[d] == 1)
    return v.squeeze(dims) if dims else v.view(v.shape)


@_rule("expand", "broadcast_to", "expand_as")
def _expand(call, level, args, kwargs):
    x = args[0]
    if not _batched(x, level) or kwargs or len(args) < 2:
        return FALLBACK
    if isinstance(args[1], Tensor):
        sizes = tuple(args[1].shape)
    else:
        sizes = _sizes(args[1:])
    nd = x.dim()
    if sizes is None or len(sizes) < nd or any(s == -1 for s in sizes[:len(sizes) - nd]):
        return FALLBACK
    v = _pad(x._value, len(sizes) - nd)
    return v.expand((v.shape[0],) + sizes)


@_rule("repeat")
def _repeat(call, level, args, kwargs):
    x = args[0]
    v = _simple(call, level, args, kwargs)
    sizes = _sizes(args[1:]) if len(args) > 1 else None
    if v is None or sizes is None or len(sizes) < x.dim():
        return FALLBACK
    return _pad(v, len(sizes) - x.dim()).repeat((1,) + sizes)


@_rule("__getitem__")
def _getitem(call, level, args, kwargs):
    """Basic indexing (ints, slices, None, ...) of a batched tensor; tensor indices take the loop."""
    x, index = args[0], args[1]
    if not _batched(x, level):
        return FALLBACK
    index = index if type(index) is tuple else (index,)
    for i in index:
        if not (i is None or i is Ellipsis or type(i) in (int, slice)):
            return FALLBACK
    return x._value[(slice(None),) + index]


# ---- joining ------------------------------------------------------------------------------------

@_rule("cat", "concat", "concatenate", "stack")
def _cat(call, level, args, kwargs):
    tensors = args[0] if args else kwargs.get("tensors")
    if type(tensors) not in (list, tuple) or not tensors or _has_tensor(args[1:]) or _has_tensor(kwargs.values()):
        return FALLBACK
    if any(not isinstance(t, Tensor) for t in tensors):
        return FALLBACK
    nd = tensors[0].dim()
    if any(t.dim() != nd for t in tensors):
        return FALLBACK  # cat's legacy skipping of 1-d empty tensors
    stacking = _opname(call) == "stack"
    dim = args[1] if len(args) > 1 else kwargs.get("dim", kwargs.get("axis", 0))
    if not isinstance(dim, int) or (nd == 0 and not stacking):
        return FALLBACK
    new = _wrap(dim, nd + 1 if stacking else nd) + 1
    return call(([_full(t, level) for t in tensors], new), {})


# ---- matrix products ----------------------------------------------------------------------------

def _matmul_values(a, b, level):
    """a @ b for samples (torch.matmul's rules per sample) as one broadcast matmul of the values."""
    ra, rb = a.dim(), b.dim()
    if ra == 0 or rb == 0:
        return None
    ba, bb = _batched(a, level), _batched(b, level)
    va = a._value if ba else a
    vb = b._value if bb else b
    if ra == 1:
        va = va.unsqueeze(-2)
    if rb == 1:
        vb = vb.unsqueeze(-1)
    r = max(ra, rb, 2)
    if ba:
        va = _pad(va, r - max(ra, 2))
    if bb:
        vb = _pad(vb, r - max(rb, 2))
    out = dispatch("matmul", Tensor.matmul, (va, vb), {})  # va may be plain, vb batched at an outer level
    if ra == 1:
        out = out.squeeze(-2)
    if rb == 1:
        out = out.squeeze(-1)
    return out


_MATMUL_RANKS = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1), "dot": (1, 1), "inner": (1, 1), "vdot": None}


@_rule("matmul", "__matmul__", "mm", "bmm", "mv", "dot", "__rmatmul__")
def _matmul(call, level, args, kwargs):
    if kwargs or len(args) != 2 or not all(isinstance(t, Tensor) for t in args):
        return FALLBACK
    name = _opname(call)
    a, b = args if name != "__rmatmul__" else (args[1], args[0])
    ranks = _MATMUL_RANKS.get(name)
    if ranks is not None and (a.dim(), b.dim()) != ranks:
        return FALLBACK  # the loop raises torch's error
    if a.dtype is not b.dtype:
        return FALLBACK
    out = _matmul_values(a, b, level)
    return FALLBACK if out is None else out


@_rule("linear")
def _linear(call, level, args, kwargs):
    """F.linear: one call on the batch when only the input is batched, else matmul and add."""
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else kwargs.get("bias")
    if not all(isinstance(t, Tensor) for t in (x, w)) or (b is not None and not isinstance(b, Tensor)):
        return FALLBACK
    if _batched(x, level) and not _batched(w, level) and (b is None or not _batched(b, level)) and x.dim() >= 1:
        return call((x._value, w, b), {})
    if w.dim() not in (1, 2) or x.dim() == 0 or x.dtype is not w.dtype:
        return FALLBACK
    import ember
    out = ember.matmul(x, w.t() if w.dim() == 2 else w)
    return Ready(out if b is None else ember.add(out, b))



# ---- in-place ops on tensors made inside the function ----------------------------------------------

def _writable(x, level):
    """x's batch value, when an in-place op may write it: batched, not nested, and sharing no
    memory with the vmap's inputs (views share their base's version counter). A write into an
    input is left to the loop: were the attempt to fall back later, it would happen twice."""
    if not _batched(x, level) or type(x._value) is BatchedTensor:
        return None
    v = x._value
    return None if id(v._version_counter) in input_counters(level) else v


def inplace(fn_name):
    """The rule of an elementwise in-place op (x.add_(y), x += y): the op on x's value, in place,
    with the other operands aligned as elementwise() aligns them (same dtypes only)."""
    def rule(call, level, args, kwargs):
        v = _writable(args[0], level)
        if v is None or kwargs.get("out") is not None:
            return FALLBACK
        x = args[0]
        others = list(args[1:]) + list(kwargs.values())
        if any(type(a) in (list, tuple) and _has_tensor(a) for a in others):
            return FALLBACK
        if any(isinstance(a, Tensor) and a.dtype is not x.dtype for a in others):
            return FALLBACK
        n = x.dim()

        def align(a):
            if _batched(a, level):
                return _pad(a._value, n - a.dim())
            return a
        getattr(v, fn_name)(*[align(a) for a in args[1:]], **{k: align(a) for k, a in kwargs.items()})
        return Ready(x)
    return rule


_INPLACE = """add sub mul div true_divide floor_divide remainder fmod pow clamp clip clamp_min clamp_max
maximum minimum atan2 hypot copysign lerp addcmul addcdiv masked_fill abs neg exp log log1p sqrt rsqrt sin cos
tanh sigmoid relu sign floor ceil round trunc frac erf reciprocal square nan_to_num zero fill""".split()
for _n in _INPLACE:
    RULES[_n + "_"] = inplace(_n + "_")
for _d, _n in (("add", "add_"), ("sub", "sub_"), ("mul", "mul_"), ("truediv", "div_"), ("div", "div_"),
               ("floordiv", "floor_divide_"), ("mod", "remainder_"), ("pow", "pow_")):
    RULES[f"__i{_d}__"] = inplace(_n)


def _inplace_functional(name):
    """F.relu(x, inplace=True) and friends on a tensor made inside the function."""
    out_of_place = RULES[name]
    pos = _INPLACE_AT[name]

    def rule(call, level, args, kwargs):
        if not (kwargs.get("inplace") is True or (len(args) > pos and args[pos] is True)):
            return out_of_place(call, level, args, kwargs)
        v = _writable(args[0], level)
        if v is None or _has_tensor(args[1:]) or _has_tensor(kwargs.values()):
            return FALLBACK
        call((v,) + tuple(args[1:]), kwargs)
        return Ready(args[0])
    return rule


for _n in _INPLACE_AT:
    if _n != "dropout":
        RULES[_n] = _inplace_functional(_n)


@_rule("__setitem__")
def _setitem(call, level, args, kwargs):
    """x[index] = value for basic indices into a tensor made inside the function."""
    x, index, value = args
    v = _writable(x, level)
    index = index if type(index) is tuple else (index,)
    if v is None or any(not (i is None or i is Ellipsis or type(i) in (int, slice)) for i in index):
        return FALLBACK
    if isinstance(value, Tensor):
        if value.dtype is not x.dtype:
            return FALLBACK
        if _batched(value, level):
            value = _pad(value._value, x[index if len(index) != 1 else index[0]].dim() - value.dim())
    v[(slice(None),) + index] = value
    return Ready(None)


@_rule("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor")
def _new(call, level, args, kwargs):
    """x.new_zeros(size): a tensor of x's dtype that does not depend on x's values (unbatched)."""
    if _has_tensor(args[1:]) or _has_tensor(kwargs.values()):
        return FALLBACK
    return Ready(call((args[0]._value,) + tuple(args[1:]), kwargs))


from . import _batch_rules_nn  # noqa: E402,F401  (registers the rules of nn.functional's ops)
