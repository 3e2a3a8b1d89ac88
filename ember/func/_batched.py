"""BatchedTensor and the dispatch of ops on it: how vmap runs a function once for the whole batch.

Note [Vectorized vmap]: a BatchedTensor is an ember Tensor that stands for one sample of a batch.
It holds `_value`, the whole batch with the batch dim at 0 (an ordinary ember Tensor, or the
BatchedTensor of an enclosing vmap: nested vmaps nest wrappers, one level each), and `_level`, the
vmap that made it. Its shape, dtype and methods are those of one sample. Every Tensor method of a
BatchedTensor, and while a vectorized vmap runs the functions of ember, ember.nn.functional,
ember.special and ember.linalg that have batching rules (swapped for a dispatching wrapper:
`patched`), go to dispatch(): the innermost level among the arguments is peeled, and the op's
batching rule (_batch_rules.py) runs the op on the values, or, for a method without a rule, the
op runs once per sample on value[i] and the results are stacked (loop_op: the per-sample loop for
that op alone). Everything else — Tensor's storage slots, which ember's kernels read — raises
Unbatchable, and vmap then runs the whole function as a per-sample loop (Note [vmap is a loop],
_vmap.py); so does an op with a non-tensor result (`.item()`, `bool(x)`: data-dependent Python)
and an in-place op without a rule or on the memory of an input (in-place rules write only tensors
made inside the function, which a fallback discards). Both paths compute the same values.
"""
import functools
import itertools
import threading

from .._tensor import Tensor, _new_size

__all__ = ["BatchedTensor", "Unbatchable", "dispatch", "patched", "active_levels"]


class Unbatchable(BaseException):
    """Raised where the vectorized path cannot continue; vmap falls back to its per-sample loop.
    A BaseException, so that a function's own `except Exception` does not swallow it."""


# how often each path ran: vmap calls finished vectorized, vmap calls run as the whole loop, ops run
# per sample inside a vectorized call (the tests check which path a function took)
stats = {"vectorized": 0, "loop": 0, "op_loop": 0}
last_fallback = [None]  # the exception that ended the latest vectorized attempt


class _Levels(threading.local):
    """The vectorized vmaps this thread is running, innermost last: [level, batch size, input counters]
    (per thread: a grad in another thread must not see this thread's batch)."""

    def __init__(self):
        self.stack = []


_tls = _Levels()
_counter = itertools.count(1)


def new_level(batch, inputs=()):
    """Enter a vectorized vmap of this batch size; `inputs` are its tensors (in-place ops on
    their memory are left to the loop: see _batch_rules._writable)."""
    entry = [next(_counter), batch, {id(t._version_counter) for t in inputs if type(t) is Tensor}]
    _tls.stack.append(entry)
    return entry


def pop_level(entry):
    _tls.stack.remove(entry)


def active_levels():
    """The vectorized vmaps now running as (level, batch size), outermost first."""
    return [(e[0], e[1]) for e in _tls.stack]


def input_counters(level):
    for e in _tls.stack:
        if e[0] == level:
            return e[2]
    return ()


def _refuse(*args):
    raise Unbatchable("a batched tensor reached code without a batching rule")


class _Refused:
    """A Tensor storage slot on a BatchedTensor: reading or writing it ends the vectorized attempt."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        _refuse()

    def __set__(self, obj, value):
        _refuse()


class BatchedTensor(Tensor):
    """One sample of a batch, under a vmap level (Note [Vectorized vmap])."""
    __slots__ = ("_value", "_level")

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r}\n)"

    __hash__ = object.__hash__

    # ---- one sample's metadata ---------------------------------------------------------
    @property
    def shape(self):
        return _new_size(self._value.shape[1:])

    def size(self, dim=None):
        shape = _new_size(self._value.shape[1:])
        if dim is None:
            return shape
        return shape[_wrap(dim, len(shape))]

    def dim(self):
        return self._value.dim() - 1

    ndimension = dim

    @property
    def ndim(self):
        return self._value.dim() - 1

    def numel(self):
        n = 1
        for s in self._value.shape[1:]:
            n *= s
        return n

    nelement = numel

    def __len__(self):
        shape = self._value.shape
        if len(shape) == 1:
            raise TypeError("len() of a 0-d tensor")
        return shape[1]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def device(self):
        return self._value.device

    @property
    def requires_grad(self):
        return self._value.requires_grad

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def is_leaf(self):
        return self._value.is_leaf

    def is_floating_point(self):
        return self._value.is_floating_point()

    def is_complex(self):
        return self._value.is_complex()

    def is_signed(self):
        return self._value.is_signed()

    def element_size(self):
        return self._value.element_size()

    @property
    def itemsize(self):
        return self._value.itemsize

    def get_device(self):
        return -1

    @property
    def is_cuda(self):
        return False

    @property
    def T(self):
        return self.permute(*range(self.dim() - 1, -1, -1))

    @property
    def mT(self):
        return self.transpose(-2, -1)


def _wrap(dim, n):
    m = max(n, 1)
    if not -m <= dim < m:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-m}, {m - 1}], but got {dim})")
    return dim % m


for _slot in Tensor.__slots__:
    if _slot not in ("__dict__", "__weakref__"):
        setattr(BatchedTensor, _slot, _Refused())

# metadata a BatchedTensor answers itself; object's machinery; the rest of Tensor's methods dispatch
_OWN = set(vars(BatchedTensor)) | {"__new__", "__init__", "__getattribute__", "__setattr__", "__delattr__",
                                   "__class__", "__init_subclass__", "__subclasshook__", "__dir__", "__sizeof__",
                                   "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__format__",
                                   "__str__", "__copy__", "__deepcopy__", "_make", "__class_getitem__"}


def _method(name, unbound):
    def method(*args, **kwargs):
        return dispatch(name, unbound, args, kwargs)
    method.__name__ = method.__qualname__ = name
    return method


_TENSOR_METHODS = {}  # name -> (Tensor's method, BatchedTensor's dispatching one)
for _klass in reversed(Tensor.__mro__[:-1]):
    for _name, _attr in list(vars(_klass).items()):
        if _name in _OWN or isinstance(_attr, (staticmethod, classmethod, property, type)) or not callable(_attr):
            continue
        _TENSOR_METHODS[_name] = (_attr, _method(_name, _attr))
        setattr(BatchedTensor, _name, _TENSOR_METHODS[_name][1])


def to_full(t, levels):
    """t as a plain tensor with a leading dim per level of `levels` (outermost first), each
    either t's own batch dim or an expanded one (how the transforms of ember.func see a batch)."""
    for level, B in reversed(levels):
        if type(t) is BatchedTensor and t._level == level:
            t = t._value
        else:
            t = t.unsqueeze(0).expand((B,) + tuple(t.shape))
    return t


def rewrap(p, levels):
    """A plain tensor of to_full's layout as BatchedTensors of `levels`."""
    for level, _ in levels:
        p = make(p, level)
    return p


def make(value, level):
    """A BatchedTensor of level `level` over `value` (batch dim at 0)."""
    t = object.__new__(BatchedTensor)
    object.__setattr__(t, "_value", value)
    object.__setattr__(t, "_level", level)
    return t


def batched_at(x, level):
    return type(x) is BatchedTensor and x._level == level


def level_of(args, kwargs):
    """The innermost vmap level among the BatchedTensors in args and kwargs (lists and tuples
    looked into one deep, as cat and stack take them), or 0."""
    top = 0
    for a in itertools.chain(args, kwargs.values()) if kwargs else args:
        t = type(a)
        if t is BatchedTensor:
            if a._level > top:
                top = a._level
        elif t is list or t is tuple:
            for b in a:
                if type(b) is BatchedTensor and b._level > top:
                    top = b._level
    return top


def batch_size(level):
    for e in _tls.stack:
        if e[0] == level:
            return e[1]
    raise RuntimeError("vmap: a batched tensor was used outside the vmap that made it (it escaped through "
                       "a closure or a global); return it from the function instead")


def dispatch(name, fn, args, kwargs):
    """Call op `name` (fn: the plain op) on args that may hold BatchedTensors (Note [Vectorized vmap])."""
    level = level_of(args, kwargs)
    if level == 0:
        return fn(*args, **kwargs)
    from ._batch_rules import FALLBACK, RULES, Ready
    if kwargs and kwargs.get("out") is not None:
        raise Unbatchable("out=")
    B = batch_size(level)
    call = functools.partial(_redispatch, name, fn)
    rule = RULES.get(name)
    if rule is not None:
        out = rule(call, level, args, kwargs)
        if type(out) is Ready:
            return out.result
        if out is not FALLBACK:
            return wrap_out(out, level)
    return loop_op(name, call, level, B, args, kwargs)


def _redispatch(name, fn, args, kwargs):
    return dispatch(name, fn, args, kwargs)


def wrap_out(out, level):
    """An op's result on values (batch dim 0) as BatchedTensors of `level`."""
    if isinstance(out, Tensor):
        return make(out, level)
    if isinstance(out, tuple):
        return rebuild(out, [make(o, level) if isinstance(o, Tensor) else o for o in out])
    if isinstance(out, list):
        return [make(o, level) if isinstance(o, Tensor) else o for o in out]
    raise Unbatchable(f"{type(out).__name__} result")


def rebuild(like, items):
    """A tuple of the kind `like` is (plain, torch.return_types, namedtuple) holding items."""
    t = type(like)
    if t is tuple:
        return tuple(items)
    if hasattr(like, "n_fields"):
        return t(items)
    return t(*items)


# ---- an op without a rule: once per sample -----------------------------------------------

# ops whose result may share memory with an input: a stack of per-sample results would not
_ALIASING = {"as_strided", "unfold", "diagonal", "view_as_real", "view_as_complex", "real", "imag", "indices",
             "values", "tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "alias", "data",
             "requires_grad_", "set_", "resize_", "resize_as_", "share_memory_", "retain_grad", "register_hook",
             "backward", "numpy", "storage", "untyped_storage", "__setitem__", "__array__"}


def _sample(x, level, i):
    t = type(x)
    if t is BatchedTensor and x._level == level:
        return x._value.select(0, i)
    if t is list or t is tuple:
        return t(_sample(b, level, i) for b in x)
    return x


def loop_op(name, call, level, B, args, kwargs):
    """Op `name` without a batching rule: run on each sample, stack the results (torch's slow path)."""
    if B == 0 or name in _ALIASING or (name.endswith("_") and not name.endswith("__")) or _inplace_dunder(name):
        raise Unbatchable(name)
    stats["op_loop"] += 1
    outs = []
    for i in range(B):
        a = tuple(_sample(x, level, i) for x in args)
        k = {n: _sample(v, level, i) for n, v in kwargs.items()} if kwargs else {}
        outs.append(call(a, k))
    from .. import stack

    def stacked(items):  # per-sample results batched at an enclosing level stack by its rule
        return make(dispatch("stack", stack, (items,), {}), level)
    first = outs[0]
    if isinstance(first, Tensor):
        _check_fresh(outs)
        return stacked(outs)
    if isinstance(first, tuple) and first and all(isinstance(o, Tensor) for o in first):
        for o in outs:
            _check_fresh(o)
        cols = [stacked([o[j] for o in outs]) for j in range(len(first))]
        return rebuild(first, cols)
    raise Unbatchable(f"{name} returned {type(first).__name__}")


def _inplace_dunder(name):
    return name.startswith("__i") and name not in ("__index__", "__int__", "__invert__", "__iter__", "__init__")


def _check_fresh(outs):
    """A per-sample result that is a view of its input cannot be stacked without losing the aliasing."""
    for o in outs:
        if not isinstance(o, Tensor):
            raise Unbatchable("a non-tensor result")
        if type(o) is Tensor and o._base is not None:
            raise Unbatchable("a view result")


# ---- the functions of ember's namespaces, while a vectorized vmap runs ---------------------

_wrappers = []  # (namespace dict, {name: function}, {name: dispatching wrapper}): see patched
_patch_depth = [0]

# functions that only ask a tensor about itself: the BatchedTensor method answers
_AS_METHOD = {"is_floating_point", "is_complex", "numel", "is_signed"}


# functions without a batching rule that still run per sample (not the whole function) when batched
_PER_SAMPLE = {"einsum", "outer", "trace", "diag", "det", "inv", "solve", "cdist", "kron", "cross"}


def _build():
    """For ember, ember.nn.functional, ember.special and ember.linalg: the namespace, its public
    functions that have a batching rule (or are in _PER_SAMPLE), and their dispatching wrappers."""
    import ember
    from .. import linalg, special
    from ..nn import functional
    from ._batch_rules import RULES
    names = set(RULES) | _PER_SAMPLE | _AS_METHOD
    for mod in (ember, functional, linalg, special):
        d = vars(mod)
        originals = {n: d[n] for n in sorted(names) if callable(d.get(n)) and not isinstance(d[n], type)}
        _wrappers.append((d, originals, {n: _function(n, fn) for n, fn in originals.items()}))


def _function(name, fn):
    if name in _AS_METHOD:
        def function(*args, **kwargs):
            if args and type(args[0]) is BatchedTensor:
                return getattr(args[0], name)(*args[1:], **kwargs)
            return fn(*args, **kwargs)
    else:
        def function(*args, **kwargs):
            return dispatch(name, fn, args, kwargs)
    functools.update_wrapper(function, fn)
    return function


class patched:
    """Context manager: ember's functions that have batching rules dispatch BatchedTensors while a
    vectorized vmap runs (restored when the outermost exits). Swapping only those keeps the cost of
    a vmap call small; a function left as it is ends the attempt when it reads a batched tensor.
    Tensor's methods are not swapped: a BatchedTensor has its own, and Python gives its reflected
    operators (`w @ x`, `1 - x`) precedence; `w.matmul(x)` with only x batched takes the loop."""

    def __enter__(self):
        if _patch_depth[0] == 0:
            if not _wrappers:
                _build()
            for d, _originals, wrappers in _wrappers:
                d.update(wrappers)
        _patch_depth[0] += 1
        return self

    def __exit__(self, *exc):
        _patch_depth[0] -= 1
        if _patch_depth[0] == 0:
            for d, originals, _wrappers_of_d in _wrappers:
                d.update(originals)
        return False
