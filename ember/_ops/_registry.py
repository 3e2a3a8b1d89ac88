"""The op registry: how an op is declared once and installed everywhere.

Two tiers (see ../shared/STYLE.md 7.2):
- class ops: `class Exp(Op)` with `forward(ctx, *arrays, **params)` on backend arrays
  and `backward(ctx, *grads)` on Tensors, side by side; `Op.apply(*tensors, **params)`
  runs forward and records the node when grad is needed.
- row ops: `unary(...)` / `binary(...)` declare an elementwise op in one line: kernel,
  promotion kind and derivative lambdas whose parameter names (x, y, out) say what to save.

`install()` puts a public function on ember, the method on Tensor, the in-place variant
and operator dunders, from one declaration. Promotion, scalar wrapping, out= and
in-place checks live here, once.
"""
import functools
import inspect
import sys
import types

import numpy as np

from .. import _dtype as D
from .._backend import check_internal_overlap, check_partial_overlap, large, scalar_array, ufunc
from .._tensor import Tensor
from ..autograd import grad_mode, saved_hooks
from ..autograd.graph import Node, SavedTensor, init_node
from ..amp._dispatch import wrap as _autocast_wrap
from ._argcheck import NUMBERS_AS_TENSORS, guard, torch_function
from ._limited import check_class_op, check_row

_state = grad_mode._state
_new = object.__new__
_make = Tensor._make
FLOAT = D.FLOAT

# the public namespace is filled by install(); ember/__init__.py re-exports it
namespace = {}
ALL_OPS = {}  # public name -> declaration (class op or row), used by tests


# ---- class ops ----------------------------------------------------------------------

class Op(Node):
    """Base of an op declaration: forward on arrays, backward on Tensors.

    Class attributes: `view` (outputs are views of input 0), `nondiff` (indices of
    outputs that never carry gradients, e.g. argmax indices), `_name` (torch's
    grad_fn name such as "SumBackward1").
    """
    __slots__ = ()
    view = False
    nondiff = ()
    elementwise = False  # True: 0-d inputs run as (1,) views (Note [0-d kernels])

    @staticmethod
    def forward(ctx, *arrays, **params):
        raise NotImplementedError

    def backward(ctx, *grads):
        raise RuntimeError(f"the derivative for '{ctx.name()}' is not implemented.")

    @classmethod
    def apply(cls, *inputs, **params):
        return apply(cls, inputs, params)


def apply(cls, inputs, params):
    """Run cls.forward on the inputs' arrays, wrap the results, record the node."""
    t0 = inputs[0] if inputs else None
    if t0 is not None and t0._dtype.limited:  # Note [Limited unsigned types]
        check_class_op(cls, t0._dtype)
    ctx = _new(cls)
    ctx._saved = ()
    arrays = [None if t is None else t._data for t in inputs]
    if cls.elementwise and _all_0d(arrays):
        out = _forward_0d(cls, ctx, arrays, params)
    else:
        out = cls.forward(ctx, *arrays, **params)
    if type(out) is tuple:
        result = outs = tuple(_make(o) for o in out)  # _make turns NumPy scalars into 0-d arrays
    else:
        result = _make(out)
        outs = (result,)
    if cls.view:
        _mark_views(inputs[0], outs)
    if _state.enabled:
        for t in inputs:
            if t is not None and t._requires_grad:
                _attach(ctx, inputs, arrays, outs)
                break
    return result


def _all_0d(arrays):
    return all(a is None or a.ndim == 0 for a in arrays)


def _forward_0d(cls, ctx, arrays, params):
    """Note [0-d kernels]: NumPy turns the results of arithmetic on 0-d arrays into scalars, which a
    kernel's `out=` refuses; an elementwise op therefore runs on (1,)-shaped views of 0-d inputs, and
    its outputs and saved arrays are turned back into 0-d arrays (saved inputs stay the inputs)."""
    flat = [a if a is None else a.reshape(1) for a in arrays]
    out = cls.forward(ctx, *flat, **params)
    many = type(out) is tuple
    outs = out if many else (out,)
    back = tuple(np.asarray(o).reshape(()) for o in outs)
    swap = {id(f): a for f, a in zip(flat, arrays) if f is not None}
    swap.update((id(o), b) for o, b in zip(outs, back))

    def unflat(item):
        if type(item) is not np.ndarray:
            return item
        hit = swap.get(id(item))
        if hit is not None:
            return hit
        return item.reshape(()) if item.shape == (1,) else item
    ctx._saved = tuple(unflat(item) for item in ctx._saved)
    return back if many else back[0]


def _mark_views(src, outs):
    base = src if src._base is None else src._base
    version = src._version_counter
    for o in outs:
        o._version_counter = version
        o._base = base
        o._view_version = version.value


def _attach(ctx, inputs, arrays, outs):
    init_node(ctx, inputs)
    if ctx._saved:
        ctx._saved = tuple([_resolve(item, inputs, arrays, outs) for item in ctx._saved])  # (no generator: hot)
    ctx._out_meta = tuple([(o._data.shape, o._dtype) for o in outs])
    nondiff = ctx.nondiff
    for i, o in enumerate(outs):
        if o._dtype.category >= FLOAT and i not in nondiff:
            o._requires_grad = True
            o._grad_fn = ctx
            o._output_nr = i
    if saved_hooks.active:  # Note [Packed saved tensors]
        saved_hooks.pack(ctx, outs)


def _resolve(item, inputs, arrays, outs):
    """Turn a value saved by a kernel into a SavedTensor: an input's array becomes the
    input Tensor (graph-connected, version-checked), the output's array an output slot."""
    if type(item) is np.ndarray:
        for i, a in enumerate(arrays):
            if a is item:
                t = inputs[i]
                return SavedTensor("input", t, None, t._version_counter.value)
        for i, o in enumerate(outs):
            if o._data is item:
                return SavedTensor("output", item, o._version_counter, o._version_counter.value, i)
        return SavedTensor("const", item)
    if isinstance(item, Tensor):
        for i, o in enumerate(outs):
            if o is item:
                return SavedTensor("output", o._data, o._version_counter, o._version_counter.value, i)
        return SavedTensor("input", item, None, item._version_counter.value)
    return SavedTensor("value", item)


# ---- promotion ----------------------------------------------------------------------

# promotion kinds of elementwise ops
SAME = "same"          # compute and return in the promoted dtype (add, mul, maximum)
TO_FLOAT = "float"     # integers and bool compute in the default float dtype (div, exp, sin)
COMPARE = "compare"    # compute in the promoted dtype, return bool (eq, lt)
LOGICAL = "logical"    # any dtype in, bool out (logical_and)
INTEGRAL = "integral"  # integers and bool only (bitwise_and, gcd)
NO_COMPLEX = "no_complex"  # like SAME, but complex inputs are an error (maximum, floor)


def compute_dtype(kind, d, opname):
    """The dtype an elementwise op of promotion `kind` computes in for promoted dtype d."""
    if kind == TO_FLOAT:
        return D.get_default_dtype() if d.category < FLOAT else d
    if kind == INTEGRAL and d.category >= FLOAT:
        raise NotImplementedError(f'"{opname}_cpu" not implemented for \'{D.SCALAR_NAMES[d]}\'')
    if kind == NO_COMPLEX and d.category == D.COMPLEX:
        raise RuntimeError(f"{opname} is not supported for complex inputs")
    return d


def to_compute(t, cd):
    """t's array in dtype cd (a copy only when the dtype differs)."""
    x = t._data
    return x if t._dtype is cd else x.astype(cd.np)


def shapes_error(opname, x, y):
    """torch's broadcasting error for two arrays."""
    a, b = x.shape, y.shape
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + tuple(a)
    pb = (1,) * (n - len(b)) + tuple(b)
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            return RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) "
                                f"at non-singleton dimension {i}")
    return RuntimeError(f"{opname}: shapes {list(a)} and {list(b)} are not broadcastable")


# ---- row ops: unary -----------------------------------------------------------------

def _param_names(fn):
    return tuple(inspect.signature(fn).parameters)[1:] if fn is not None else ()


class RowNode(Op):
    """Node of a row op; the row's derivative lambdas are class attributes."""
    __slots__ = ()
    row = None

    def _args(self, names):
        saved = self._saved
        index = self.row.save_index
        return [saved[index[n]].unpack(self) for n in names]

    def backward(self, grad):
        row = self.row
        need = self.needs_input_grad
        if row.arity == 1:
            return row.dx(grad, *self._args(row.dx_args))
        gx = row.dx(grad, *self._args(row.dx_args)) if need[0] else None
        gy = row.dy(grad, *self._args(row.dy_args)) if need[1] else None
        return gx, gy


class Row:
    """One elementwise op declaration (see unary()/binary())."""

    def __init__(self, name, kernel, kind, dx, dy, arity, node_name, check, tensors=()):
        self.name = name
        self.kernel = kernel
        self.ufunc = isinstance(kernel, np.ufunc)  # takes out=: see into()
        self.kind = kind
        self.numbers = "input" not in tensors and "other" not in tensors  # torch takes Python numbers
        self.dx = dx
        self.dy = dy
        self.arity = arity
        self.check = check
        self.dx_args = _param_names(dx)
        self.dy_args = _param_names(dy)
        names = []
        for n in ("x", "y", "out"):
            if n in self.dx_args or n in self.dy_args:
                names.append(n)
        self.save_names = tuple(names)
        self.save_index = {n: i for i, n in enumerate(names)}
        self.differentiable = dx is not None
        self.node = type(node_name, (RowNode,), {"__slots__": (), "row": self, "_name": node_name})
        self.computes_in = {}  # dtype -> compute dtype, filled by compute_dtype_of
        self.plain = kind is SAME and check is None  # computes in its input dtype, no check

    def compute_dtype_of(self, d):
        """The dtype this row computes in for (promoted) input dtype d, after its checks (which
        raise torch's errors). Cached per dtype, except where it depends on the default dtype."""
        cd = self.computes_in.get(d)
        if cd is None:
            if d.limited:  # torch runs few kernels on uint16/32/64: Note [Limited unsigned types]
                check_row(self.name, self.kind == TO_FLOAT, d)
            if self.check is not None:
                self.check(d)
            cd = compute_dtype(self.kind, d, self.name)
            if cd is d:
                self.computes_in[d] = cd
        return cd


def _save_row(node, row, a, b, x_arr, y_arr, out):
    """Save what the row's lambdas name: inputs by reference, out as an array slot."""
    saved = []
    for n in row.save_names:
        if n == "out":
            saved.append(SavedTensor("output", out._data, out._version_counter, 0, 0))
        else:
            v = a if n == "x" else b
            if isinstance(v, Tensor):
                saved.append(SavedTensor("input", v, None, v._version_counter.value))
            else:
                saved.append(SavedTensor("value", v))
    node._saved = tuple(saved)
    if saved_hooks.active:  # Note [Packed saved tensors]: the hook sees the output with its history
        out._requires_grad = True
        out._grad_fn = node
        saved_hooks.pack(node, (out,))


def _public(row):
    """The public function of a row (ember.add for the internal _add row), for Note [Torch functions of other
    objects]."""
    return namespace.get(row.name.lstrip("_")) or namespace.get(row.name)


def unary_call(row, input):
    if not isinstance(input, Tensor):
        if (r := torch_function(_public(row), (input,), {})) is not NotImplemented:
            return r  # Note [Torch functions of other objects]
        raise TypeError(f"{row.name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    d = input._dtype
    cd = d if row.plain and not d.limited else row.compute_dtype_of(d)
    x = input._data if cd is d else input._data.astype(cd.np)
    if row.ufunc and large(row.kernel, x.nbytes):  # a large result: pooled, in pieces (Note [Elementwise pieces])
        r = ufunc(row.kernel, x)
    elif x.ndim or row.ufunc:
        r = row.kernel(x)
    else:  # a composite kernel: see Note [0-d kernels]
        r = row.kernel(x.reshape(1)).reshape(())
    if r.ndim > 1 and not x.flags.c_contiguous:
        r = _iter_layout(r, x)
    out = _make(r)  # (a NumPy scalar r becomes a 0-d array there)
    if _state.enabled and input._requires_grad and row.differentiable and out._dtype.category >= FLOAT:
        node = _new(row.node)
        init_node(node, (input,))
        node._out_meta = ((r.shape, out._dtype),)
        _save_row(node, row, input, None, x, None, out)
        out._requires_grad = True
        out._grad_fn = node
    return out


def unary(name, kernel, kind=SAME, dx=None, node_name=None, check=None, method=True, inplace=True,
          aliases=(), dunder=None, out=True):
    """Declare an elementwise op of one tensor: unary("exp", np.exp, TO_FLOAT, dx=lambda g, out: g * out).
    out: the function form takes out= (True), none (False: torch.isnan), or only a bool one ("bool")."""
    row = Row(name, kernel, kind, dx, None, 1, node_name or _node_name(name), check)
    if out is False:
        def fn(input):
            return unary_call(row, input)
    else:
        bool_out = out == "bool"

        def fn(input, *, out=None):
            if out is None:
                return unary_call(row, input)
            if bool_out and isinstance(out, Tensor) and out._dtype is not D.bool:
                raise RuntimeError(f"{name} does not support non-boolean outputs.")
            return row_out(row, out, name, input)

    def as_method(input):  # torch's Tensor methods take no out=
        return unary_call(row, input)
    for f in (fn, as_method):
        f.__name__ = f.__qualname__ = name
        f.__code__ = f.__code__.replace(co_name=name, co_qualname=name)  # TypeError's words: exp() got ...
        f.__doc__ = f"torch.{name}: see https://pytorch.org/docs/stable/generated/torch.{name}.html"
        f.row = row
    install(fn, name, method=method, inplace=make_inplace(fn, name, row) if inplace else None,
            aliases=aliases, dunder=dunder, decl=row, method_form=as_method)
    return fn


def _node_name(name):
    return "".join(p.capitalize() for p in name.split("_")) + "Backward0"


# ---- row ops: binary ----------------------------------------------------------------

def binary_operands(row, a, b):
    """(x, y, compute dtype) for two operands, at least one a Tensor, by torch's promotion."""
    ta = isinstance(a, Tensor)
    tb = isinstance(b, Tensor)
    if ta and tb:
        da = a._dtype
        db = b._dtype
        if da is db:
            d = da
        else:
            d = D.result_type_of((a, b))
    elif ta:
        if not _is_scalar(b):
            return binary_operands(row, a, _coerce_other(b, row.name))
        d = a._dtype
        if not keeps_dtype(d, b):
            d = D.result_type_of((a, b))
    elif tb:
        if not _is_scalar(a):
            return binary_operands(row, _coerce_other(a, row.name), b)
        d = b._dtype
        if not keeps_dtype(d, a):
            d = D.result_type_of((a, b))
    else:
        raise TypeError(f"{row.name}(): expected at least one Tensor argument")
    cd = d if row.plain and not d.limited else row.compute_dtype_of(d)
    x = to_compute(a, cd) if ta else scalar_array(a, cd.np)
    y = to_compute(b, cd) if tb else scalar_array(b, cd.np)
    return x, y, cd


_SCALARS = (int, float, bool, complex, np.number, np.bool_)


def keeps_dtype(d, v):
    """Does a Python int or float v leave tensor dtype d as it is? (torch: a wrapped number only
    promotes into a higher category.) The common case, decided without result_type_of."""
    t = type(v)
    return (t is float and d.category >= FLOAT) or (t is int and d.category >= D.INT)


def _is_scalar(v):
    return isinstance(v, _SCALARS)


def _coerce_other(v, opname):
    """NumPy arrays and nested lists as the other operand become tensors (as torch)."""
    if isinstance(v, np.ndarray):
        return _make(v)
    raise TypeError(f"{opname}(): argument 'other' must be Tensor or Number, not {type(v).__name__}")


def binary_call(row, a, b):
    ta = isinstance(a, Tensor)
    tb = isinstance(b, Tensor)
    if ta and tb and a._dtype is b._dtype and row.plain and not a._dtype.limited:
        x = a._data  # the common case, binary_operands' answer without its call
        y = b._data
    else:
        try:
            x, y, _ = binary_operands(row, a, b)
        except TypeError:
            if (r := torch_function(_public(row), (a, b), {})) is not NotImplemented:
                return r  # Note [Torch functions of other objects]
            raise
    try:
        if row.ufunc and (large(row.kernel, x.nbytes) or large(row.kernel, y.nbytes)):
            r = ufunc(row.kernel, x, y)  # a large result: pooled, in pieces (Note [Elementwise pieces])
        else:
            r = row.kernel(x, y)
    except ValueError:
        raise shapes_error(row.name, x, y) from None
    if r.ndim > 1 and not (x.flags.c_contiguous and y.flags.c_contiguous):
        r = _iter_layout(r, x, y)
    out = _make(r)  # (a NumPy scalar r becomes a 0-d array there)
    if _state.enabled and row.differentiable and out._dtype.category >= FLOAT:
        if (ta and a._requires_grad) or (tb and b._requires_grad):
            node = _new(row.node)
            init_node(node, (a if ta else None, b if tb else None))
            node._out_meta = ((r.shape, out._dtype),)
            if row.save_names:
                _save_row(node, row, a, b, x, y, out)
            else:  # add, sub: their gradients need nothing saved
                node._saved = ()
            out._requires_grad = True
            out._grad_fn = node
    return out


def _iter_layout(r, *operands):
    """r in torch's (TensorIterator's) layout for a result of these operands: NumPy's differs for
    mixed layouts and broadcast (stride-0) inputs."""
    if r.size < 2:
        return r
    strides, shape = r.strides, r.shape
    if all(a.strides == strides and a.shape == shape for a in operands):
        return r  # every operand dense in r's own layout (r is NumPy's dense result): TensorIterator keeps it too
    from .geometry import iter_strides
    from .._backend.numpy_cpu import layout_of, relayout
    return relayout(r, iter_strides(r.shape, [layout_of(a) for a in operands if a.ndim]))


def binary(name, kernel, kind=SAME, dx=None, dy=None, node_name=None, check=None, method=True,
           inplace=True, aliases=(), dunder=None, rdunder=None, tensors=()):
    """Declare an elementwise op of two operands (tensors or scalars), e.g.
    binary("mul", np.multiply, dx=lambda g, y: g * y, dy=lambda g, x: g * x, dunder="mul").
    `tensors` names the operands ("input", "other") for which torch takes no Python number."""
    row = Row(name, kernel, kind, dx, dy, 2, node_name or _node_name(name), check, tensors)
    need_input = "input" in tensors
    need_other = "other" in tensors

    def fn(input, other, *, out=None):
        if need_input and not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        if need_other and not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
        if out is None:
            return binary_call(row, input, other)
        return row_out(row, out, name, input, other)

    def as_method(input, other):  # torch's Tensor methods take no out=
        if need_input and not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        if need_other and not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        return binary_call(row, input, other)
    for f in (fn, as_method):
        f.__name__ = f.__qualname__ = name
        f.__code__ = f.__code__.replace(co_name=name, co_qualname=name)  # TypeError's words: eq() got ...
        f.__doc__ = f"torch.{name}: see https://pytorch.org/docs/stable/generated/torch.{name}.html"
        f.row = row
    rfn = None
    if rdunder:
        def rfn(self, other):
            return fn(other, self)
        rfn.__name__ = f"__r{dunder}__"
    install(fn, name, method=method, inplace=make_inplace(fn, name, row) if inplace else None,
            aliases=aliases, dunder=dunder, rdunder=rfn, decl=row, method_form=as_method)
    return fn


# ---- out= and in-place --------------------------------------------------------------

def write_out(out, r, opname, inputs=(), exact_dtype=False):
    """Copy result r into the user's out= tensor (resizing it if needed, like torch). inputs: tensors out may not
    share memory with (torch's assert_no_overlap); exact_dtype: out must have r's dtype (structured kernels)."""
    if not isinstance(out, Tensor):
        out = number_out(out, opname)
    for t in inputs:
        if t is out or isinstance(t, Tensor) and out._data.size and np.may_share_memory(out._data, t._data):
            raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                               "refer to a single memory location. Please clone() the tensor before performing the "
                               "operation.")
    if exact_dtype and out._dtype is not r._dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {D.C_TYPE_NAMES[r._dtype]}, but got "
                           f"{D.C_TYPE_NAMES[out._dtype]} instead")
    if _state.enabled and (out._requires_grad or r._requires_grad):
        raise RuntimeError(f"{opname}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if not D.can_cast(r._dtype, out._dtype):
        raise RuntimeError(f"result type {D.SCALAR_NAMES[r._dtype]} can't be cast to the desired output "
                           f"type {D.SCALAR_NAMES[out._dtype]}")
    if out._data.shape != r._data.shape:
        if out._data.size:
            import warnings
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out._data.shape)}, which does not match the required output shape "
                          f"{list(r._data.shape)}. This behavior is deprecated.", UserWarning, stacklevel=3)
        out._data = np.empty(r._data.shape, dtype=out._data.dtype)
    else:
        check_internal_overlap(out._data)  # an expanded out: torch refuses, NumPy would write each element twice
    np.copyto(out._data, r._data, casting="unsafe")
    out._version_counter.value += 1
    return out


def check_inplace(self):
    """torch's errors for in-place ops on leaves (and views of leaves) that require grad."""
    if _state.enabled and self._requires_grad:
        if self._grad_fn is None:
            if self._base is not None:
                raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                                   "in-place operation.")
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        base = self._base
        if base is not None and base._grad_fn is None and base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        if self.__dict__ and "_multi_view" in self.__dict__:  # set by split/chunk/unbind (shape.py)
            raise RuntimeError(f"Output {self._output_nr} of {self._multi_view} is a view and is being modified "
                               "inplace. This view is the output of a function that returns multiple views. Such "
                               "functions do not allow the output views to be modified inplace. You should replace "
                               "the inplace operation by an out-of-place one.")


# Note [Straight into the array]: when no autograd graph is needed (grad mode off, or no
# operand requires grad: an optimizer step), in-place ops and out= run their kernel with
# out=<the target's array>, so x.add_(y) allocates nothing and x.addcmul_(a, b) one temporary.
# The fast path only runs where it computes exactly what the generic path (compute
# out-of-place, then copy) computes: the target already has the compute dtype, operands
# broadcast into its shape. Everything else (casts, resizing out=, torch's errors) is left to
# the generic path, which is also the only path when a graph is needed.

def fits(shape, into):
    """shape broadcasts to `into` without changing it (torch's rule for in-place operands)."""
    if shape == into:
        return True
    k = len(into) - len(shape)
    if k < 0:
        return False
    for i, n in enumerate(shape):
        if n != 1 and n != into[k + i]:
            return False
    return True


def into(row, out, a, b=None, kernel=None):
    """Run the row's ufunc (or `kernel`) on operands a (, b) straight into tensor out's array.
    False, having written nothing, when out's dtype is not the one computed in or its shape is
    not the broadcast shape (see Note [Straight into the array])."""
    if row.arity == 1:
        if not isinstance(a, Tensor):
            return False
        d = a._dtype
        cd = row.compute_dtype_of(d)
        x = a._data
        o = out._data
        if x.shape != o.shape or (out._dtype is not cd and not (out._dtype is D.bool and row.kind is LOGICAL)):
            return False
        (kernel or row.kernel)(x if cd is d else x.astype(cd.np), out=o)
        return True
    if not row.numbers and not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return False  # the public function raises torch's TypeError
    x, y, cd = binary_operands(row, a, b)
    o = out._data
    if out._dtype is not cd and not (out._dtype is D.bool and (row.kind is COMPARE or row.kind is LOGICAL)):
        return False
    shape = o.shape
    if not ((x.shape == shape and fits(y.shape, shape)) or (y.shape == shape and fits(x.shape, shape))):
        return False
    (kernel or row.kernel)(x, y, out=o)
    return True


# Note [Expanded self]: torch refuses to write in place into a tensor whose elements share memory (an
# expanded one: stride 0 over a dim of size > 1), "unsupported operation: more than one element of the
# written-to tensor refers to a single memory location", for every in-place op built on TensorIterator and
# the index/scatter writes; fill_, zero_, masked_fill_, index_fill_, index_put_ (and item assignment),
# threshold_ and fill_diagonal_ take one. Where the op draws random numbers first (dropout, rrelu_ in
# training) torch refuses after the draw, the in-place samplers (uniform_, normal_, ...) before it. Each
# in-place entry point checks at the place torch does; tests/test_inplace_overlap.py holds the list.

def check_overlap(out, operands):
    """torch's errors for a written-to tensor that overlaps itself or one of the operands."""
    o = out._data
    check_internal_overlap(o)
    for t in operands:
        if isinstance(t, Tensor) and t._data is not o:
            check_partial_overlap(o, t._data)


def _needs_graph(self, args, kwargs):
    """Is an autograd graph needed for an in-place op on self with these operands?"""
    if not _state.enabled:
        return False
    if self._requires_grad:
        return True
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            return True
    if kwargs:
        return _needs_graph(self, tuple(kwargs.values()), None)
    return False


def number_out(out, opname):
    """out= given a non-Tensor: torch's TypeError, or for NUMBERS_AS_TENSORS ops (add, div ...) and a Python
    number the 0-d bool/int64/float64/complex128 tensor torch's parser makes of it (then resized)."""
    if opname not in NUMBERS_AS_TENSORS or not isinstance(out, (bool, int, float, complex)):
        raise TypeError(f"{opname}(): argument 'out' must be Tensor, not {type(out).__name__}")
    return Tensor._make(np.array(out))


def row_out(row, out, opname, a, b=None):
    """out= of a row (or of a composite whose last step is the row): straight into out's array
    when possible, else compute and copy with torch's resizing and casting (write_out)."""
    if not isinstance(out, Tensor):
        out = number_out(out, opname)
    operands = (a,) if row.arity == 1 else (a, b)
    if not _needs_graph(out, operands, None):
        check_overlap(out, operands)
        if row.ufunc and into(row, out, a, b):
            out._version_counter.value += 1
            return out
    r = unary_call(row, a) if row.arity == 1 else binary_call(row, a, b)
    return write_out(out, r, opname)


def make_inplace(fn, name, row=None, fast=None, recorded=None):
    """The `name_` variant of an out-of-place op: compute, then write into self.

    An elementwise op also gets a fast path (Note [Straight into the array]): `fast(self, *args,
    **kwargs)` writes straight into self's array and returns True, or returns False having written
    nothing. A ufunc row derives it; a composite declares a small in-place kernel next to itself.
    `recorded(self, *args, **kwargs)`, where given, does the same with a graph needed: it returns the
    result recorded in self's array (into_recorded), or None having written nothing."""
    opname = name + "_"
    if fast is None and row is not None and row.ufunc:
        fast = _row_fast(row)
    if fast is None:
        def inplace(input, *args, **kwargs):
            check_inplace(input)
            check_internal_overlap(input._data)  # an expanded self: torch refuses (Note [Expanded self])
            if kwargs and "out" in kwargs:  # fn would write out= too: torch's in-place forms take none
                raise TypeError(f"{opname}() got an unexpected keyword argument 'out'")
            return assign_result(input, fn(input, *args, **kwargs), opname)
    else:
        def inplace(input, *args, **kwargs):
            check_inplace(input)
            check_overlap(input, args if not kwargs else args + tuple(kwargs.values()))
            if not _needs_graph(input, args, kwargs):
                if fast(input, *args, **kwargs):
                    input._version_counter.value += 1
                    return input
            elif recorded is not None:
                r = recorded(input, *args, **kwargs)
                if r is not None:
                    return assign_result(input, r, opname)  # (r holds self's own array: nothing to copy)
            return assign_result(input, fn(input, *args, **kwargs), opname)
    inplace.__name__ = inplace.__qualname__ = opname
    return inplace


def into_recorded(row, self, other):
    """self <- row(self, other) with a graph, for a binary row whose gradients need no saved values (add,
    sub: self's old value is not needed): computed straight into self's array (into), then recorded as
    binary_call records the out-of-place op. The result Tensor, holding self's array, for assign_result; None,
    having written nothing, when the result does not fit self's array (dtype, broadcast shape)."""
    if row.save_names or not into(row, self, self, other):
        return None
    out = _make(self._data, self._dtype)
    node = _new(row.node)
    init_node(node, (self, other if isinstance(other, Tensor) else None))  # self's edge: its history before
    node._out_meta = ((self._data.shape, self._dtype),)
    node._saved = ()
    out._requires_grad = True
    out._grad_fn = node
    return out


def _row_fast(row):
    if row.arity == 1:
        def fast(self):
            return into(row, self, self)
    else:
        def fast(self, other):
            return into(row, self, self, other)
    return fast


def assign_result(self, r, opname):
    """Write out-of-place result r into self and make r's history self's history."""
    if not D.can_cast(r._dtype, self._dtype):
        raise RuntimeError(f"result type {D.SCALAR_NAMES[r._dtype]} can't be cast to the desired output "
                           f"type {D.SCALAR_NAMES[self._dtype]}")
    if r._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                           f"{list(r._data.shape)}")
    node = r._grad_fn
    if node is not None:
        _snapshot_saved_self(node, self)
    if r._data is not self._data and not _same_view(r._data, self._data):
        np.copyto(self._data, r._data, casting="unsafe")
    self._version_counter.value += 1
    if node is not None:
        _retarget_saved_output(node, r, self)
        from .shape import rebase_history
        rebase_history(self, r)
    return self


def _same_view(a, b):
    """Whether arrays a and b are the same elements (a kernel that wrote its result into self's memory). The
    bounds test first: a fresh result never overlaps self (0.6 us, against 7 us for the two data addresses)."""
    return (a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype and np.may_share_memory(a, b)
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def _retarget_saved_output(node, r, self):
    """A formula that saved its output now finds it in self, version-checked against
    later in-place writes to self (torch saves the result of an in-place op)."""
    saved = node._saved
    if not saved:
        return
    new = list(saved)
    for i, s in enumerate(saved):
        if s.kind == "output" and s.obj is r._data:
            new[i] = SavedTensor("output", self._data, self._version_counter, self._version_counter.value, s.output_nr)
    node._saved = tuple(new)


def _snapshot_saved_self(node, self):
    """If the op saved self's old value, keep a copy: it is about to be overwritten
    (torch saves a clone of self for in-place ops whose derivative needs it)."""
    saved = node._saved
    if not saved:
        return
    new = None
    for i, s in enumerate(saved):
        if s.kind == "input" and (s.obj is self or (s.obj._data is self._data)):
            if new is None:
                new = list(saved)
            snap = _make(s.obj._data.copy(), s.obj._dtype)
            snap._requires_grad = s.obj._requires_grad
            snap._grad_fn = s.obj._grad_fn
            snap._output_nr = s.obj._output_nr
            new[i] = SavedTensor("input", snap, None, 0)
        elif s.kind == "packed" and s.obj.source is not None:  # Note [Packed saved tensors]
            src = s.obj.source()
            if src is not None and (src is self or src._data is self._data):
                if new is None:
                    new = list(saved)
                snap = _make(src._data.copy(), src._dtype)
                snap._requires_grad = s.obj.requires_grad
                snap._grad_fn = s.obj.grad_fn
                snap._output_nr = s.obj.output_nr
                new[i] = saved_hooks.repack_input(s, snap)
    if new is not None:
        node._saved = tuple(new)


# ---- installation -------------------------------------------------------------------

def numpy_names(fn):
    """fn also taking axis= and keepdims=, the NumPy spellings of dim= and keepdim= that torch's
    argument parser accepts for every C-level function; a call without keywords goes straight through."""
    if getattr(fn, "numpy_names", False):
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs:
            if "axis" in kwargs and "dim" not in kwargs:
                kwargs["dim"] = kwargs.pop("axis")
            if "keepdims" in kwargs and "keepdim" not in kwargs:
                kwargs["keepdim"] = kwargs.pop("keepdims")
        return fn(*args, **kwargs)
    call.numpy_names = True
    return call


_NUMPY_NAMES_CALL = numpy_names(lambda dim=None: dim).__code__  # the code of numpy_names' wrapper


def _takes_dim(fn):
    """Does fn declare a dim= or keepdim= parameter (read from its code object: no inspect at import)?"""
    code = getattr(fn, "__code__", None)
    if code is None or getattr(fn, "numpy_names", False):
        return False
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return ("dim" in names or "keepdim" in names) and "axis" not in names


def with_out(fn, name):
    """fn also taking out= (torch's function form of an op declared without one): the result is
    computed, then written into out (write_out's resizing and casting rules)."""

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        r = fn(*args, **kwargs)
        if out is None:
            return r
        if type(r) is not tuple and not isinstance(r, tuple):
            return write_out(out, r, name)
        if not isinstance(out, (tuple, list)) or len(out) != len(r):
            raise TypeError(f"{name}(): argument 'out' must be tuple of {len(r)} Tensors")
        written = [write_out(o, v, name) for o, v in zip(out, r)]
        return type(r)(*written) if hasattr(r, "_fields") else tuple(written)
    params = list(inspect.signature(fn).parameters.values())
    at = len(params) - (params and params[-1].kind is inspect.Parameter.VAR_KEYWORD)
    params.insert(at, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    call.__signature__ = inspect.Signature(params)
    return call


def install(fn, name, method=True, function=True, inplace=None, aliases=(), dunder=None, rdunder=None,
            decl=None, out=False, method_form=None):
    """Install one declaration as ember.name, Tensor.name, Tensor.name_, dunders and aliases.
    Public ops with a dim= or keepdim= parameter also take NumPy's spellings (numpy_names);
    out=True gives the function form (not the method, as torch) an out= (with_out); a row's
    method_form is its Tensor method (without the function's out=)."""
    if getattr(fn, "__code__", None) is _NUMPY_NAMES_CALL:  # declared @numpy_names: the guard takes that over
        fn = fn.__wrapped__
        dims = True
    else:
        dims = _takes_dim(fn) or (name.endswith("_") and getattr(getattr(Tensor, name[:-1], None), "numpy_names",
                                                                  False))
    fn = _autocast_wrap(fn, name)  # ops with an autocast policy: Note [Autocast dispatch] in ember/amp/_dispatch.py
    public = with_out(fn, name) if out else fn
    if isinstance(decl, Row):  # a row checks its own arguments (and keeps the dunders' path short)
        method_fn = fn if method_form is None else _autocast_wrap(method_form, name)
        method_fn = numpy_names(method_fn) if dims else method_fn
        public = numpy_names(public) if dims else public
    else:  # Note [Checked at the boundary] in _argcheck.py (also the axis=/keepdims= spellings)
        method_fn = guard(fn, name, method=True, numpy_names=dims)
        public = guard(public, name, numpy_names=dims)
    fn_inplace = inplace  # torch.exp_(x); Tensor.exp_ below
    if inplace is not None:
        fn_inplace = guard(inplace, name + "_", numpy_names=dims)
        if isinstance(decl, Row):  # the method keeps its short path: self is a Tensor
            inplace = numpy_names(inplace) if dims else inplace
        else:
            inplace = guard(inplace, name + "_", method=True, numpy_names=dims)
    fn = method_fn
    names = (name,) + tuple(aliases)
    for n in names:
        if function:
            namespace[n] = public if n == name else _renamed(public, n)
        if method:
            setattr(Tensor, n, fn)
        if inplace is not None:
            if method:  # torch.selu_ and friends are functions only
                setattr(Tensor, n + "_", inplace)
            if function:
                namespace[n + "_"] = fn_inplace if n == name else _renamed(fn_inplace, n + "_")
    ALL_OPS[name] = decl if decl is not None else fn
    if dunder:
        setattr(Tensor, f"__{dunder}__", fn)
        if inplace is not None:
            setattr(Tensor, f"__i{dunder}__", inplace)
    if rdunder is not None:
        setattr(Tensor, f"__r{dunder}__", rdunder)
    return fn


def _renamed(fn, name):
    """fn under an alias's own name (torch.arctan is named arctan, not atan: a traced graph names its node after
    it): the same code, defaults and attributes in a new function object; other callables as they are."""
    if type(fn) is not types.FunctionType:
        return fn
    alias = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    alias.__kwdefaults__ = fn.__kwdefaults__
    alias.__dict__.update(fn.__dict__)
    alias.__qualname__ = name
    alias.__module__ = fn.__module__
    alias.__doc__ = fn.__doc__
    return alias


def publish(names):
    """Name ember's public functions after the namespace module that exports them (ember.add.__module__ ==
    'ember', as torch.add's is 'torch'), where their own module and qualified name lead elsewhere (wrappers
    the registry made, declarations kept under them): pickle finds a function by those two names, so a
    module holding F.relu (TransformerEncoderLayer.activation) can be saved whole, as in torch. Functions
    that already resolve are left as they are. `names`: the namespace module's globals()."""
    modules = sys.modules
    path = names["__name__"]
    for name, fn in list(names.items()):
        if type(fn) is not types.FunctionType or name[0] == "_":
            continue
        home = modules.get(fn.__module__)
        if home is None or getattr(home, fn.__qualname__, None) is not fn:  # (a dotted qualname: not found)
            fn.__module__ = path
            fn.__qualname__ = name


def register(name=None, method=True, function=True, inplace=False, aliases=(), dunder=None, out=False):
    """Decorator form of install() for ops written as plain functions of ember ops."""

    def deco(fn):
        n = name or fn.__name__
        ip = make_inplace(fn, n) if inplace is True else inplace or None
        install(fn, n, method=method, function=function, inplace=ip, aliases=aliases, dunder=dunder, out=out)
        return fn
    return deco
