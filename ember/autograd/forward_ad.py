"""torch.autograd.forward_ad: dual tensors (a primal with a tangent) for forward-mode AD.

Note [Dual tensors]: make_dual(x, t) gives a DualTensor: a Tensor whose storage, autograd
history and version counter are those of a view of x (so any code that reads it sees x's
values) and which carries the tangent t. While a dual level is open, every Tensor method of a
DualTensor, every function of ember's public namespaces and every Tensor method called with a
dual argument (swapped in on entering the level, restored on leaving it) runs the op once on
the primals with the primals as graph inputs, and takes each output's tangent by the op's own
double vjp (Note [jvp by double vjp], ember/func/_forward.py): exact, from the backward formulas,
in any grad mode. Tangents keep a graph when a primal requires grad or a tangent does, so they
are backward differentiable, as torch's. Leaving the level drops every tangent; the DualTensors
then behave as the plain tensors they alias. Ops that reach a dual tensor through no public
name (ember-internal imports) see its primal and give no tangent.
"""
import functools
from typing import NamedTuple

from .._tensor import Tensor

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_state = {"level": -1, "generation": 0}


class UnpackedDualTensor(NamedTuple):
    """(primal, tangent) of a dual tensor; tangent is None for a tensor without one."""
    primal: Tensor
    tangent: object


class DualTensor(Tensor):
    """A view of a primal tensor that carries a tangent (Note [Dual tensors])."""
    __slots__ = ("_tangent", "_generation")


def _share(cls, x):
    """A new `cls` object holding x's Tensor slots: the same storage, history and version counter."""
    t = object.__new__(cls)
    for s in Tensor.__slots__:
        if s in ("__dict__", "__weakref__"):
            continue
        try:
            object.__setattr__(t, s, object.__getattribute__(x, s))
        except AttributeError:
            pass
    return t


def _dual(primal, tangent):
    """A DualTensor over `primal` (its storage, history and counter) carrying `tangent`."""
    d = _share(DualTensor, primal)
    object.__setattr__(d, "_tangent", tangent)
    object.__setattr__(d, "_generation", _state["generation"])
    return d


def _tangent_of(x):
    if type(x) is DualTensor and x._generation == _state["generation"] and _state["level"] >= 0:
        return x._tangent
    return None


def _plain(x):
    """x as a plain Tensor object over the same storage and history (no dispatch, no tangent)."""
    return _share(Tensor, x)


# ---- the op of dual tensors ------------------------------------------------------------------

def _inplace(name):
    return (name.endswith("_") and not name.endswith("__")) or (name.startswith("__i") and name not in (
        "__index__", "__int__", "__invert__", "__iter__", "__init__"))


def _call(name, fn, args, kwargs):
    """Op `name` (fn: the plain op) on arguments that may be dual tensors."""
    if _state["level"] < 0:
        return fn(*args, **kwargs)
    found = []
    for a in args:
        if type(a) is DualTensor or (type(a) in (list, tuple) and any(type(b) is DualTensor for b in a)):
            found.append(a)
    if kwargs:
        found += [v for v in kwargs.values() if type(v) is DualTensor]
    if not found or all(_tangent_of(x) is None for x in _flat(found)):
        return fn(*args, **kwargs)
    if _inplace(name):
        return _call_inplace(name, fn, args, kwargs)
    return _with_tangents(fn, args, kwargs)


def _flat(items):
    for a in items:
        if type(a) in (list, tuple):
            yield from a
        else:
            yield a


def _with_tangents(fn, args, kwargs):
    """fn once on the primals as graph inputs, then each floating output's tangent J t by double vjp."""
    from .. import zeros_like
    from . import grad as _grad
    from .grad_mode import enable_grad, is_grad_enabled
    outer = is_grad_enabled()
    leaves, tangents = [], []
    connected = False

    def leaf(x):
        nonlocal connected
        t = _tangent_of(x)
        if t is None:
            return _plain(x) if type(x) is DualTensor else x
        p = _plain(x)
        if outer and p._requires_grad:
            connected = True
            p = p.view_as(p)  # an alias: the user's graph goes on through the op
        else:
            p = p.detach().requires_grad_()
        leaves.append(p)
        tangents.append(t)
        return p

    def sub(a):
        if type(a) in (list, tuple):
            return type(a)(leaf(b) for b in a)
        return leaf(a) if isinstance(a, Tensor) else a
    with enable_grad():
        out = fn(*[sub(a) for a in args], **{k: sub(v) for k, v in kwargs.items()})
        outs = list(out) if isinstance(out, tuple) else [out]
        diff = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o._requires_grad]
        jvs = {}
        if diff:
            us = [zeros_like(outs[i]).requires_grad_() for i in diff]
            gs = _grad([outs[i] for i in diff], leaves, us, create_graph=True, allow_unused=True)
            pairs = [(g, t) for g, t in zip(gs, tangents) if g is not None and g._requires_grad]
            keep = connected or any(t._requires_grad for _, t in pairs)
            if pairs:
                jv = _grad([g for g, _ in pairs], us, [t for _, t in pairs], create_graph=keep, allow_unused=True)
                for i, v in zip(diff, jv):
                    jvs[i] = v
            for i in diff:
                if i not in jvs or jvs[i] is None:
                    jvs[i] = zeros_like(outs[i])
                elif not keep:
                    jvs[i] = jvs[i].detach()
    result = []
    for i, o in enumerate(outs):
        if i in jvs:
            if not (connected and outer):
                o = o.detach()
            o = _dual(o, jvs[i])
        result.append(o)
    if isinstance(out, tuple):
        return type(out)(result) if hasattr(out, "n_fields") else (
            type(out)(*result) if hasattr(out, "_fields") else tuple(result))
    return result[0]


def _call_inplace(name, fn, args, kwargs):
    """An in-place op on a dual tensor: written into its primal as the op would, and its tangent
    replaced by the tangent of the op on a copy of the primal."""
    self = args[0]
    if type(self) is not DualTensor:
        raise RuntimeError(f"forward AD in ember: the in-place op {name} writes a tensor that is not a dual tensor "
                           f"with a dual operand; make it a dual tensor first (make_dual with a zero tangent)")
    new = _with_tangents(lambda s, *rest, **kw: fn(s.clone(), *rest, **kw), args, kwargs)
    fn(_plain(self), *[_plain(a) if type(a) is DualTensor else a for a in args[1:]],
       **{k: _plain(v) if type(v) is DualTensor else v for k, v in kwargs.items()})
    tangent = _tangent_of(new) if type(new) is DualTensor else None
    object.__setattr__(self, "_tangent", tangent)
    object.__setattr__(self, "_generation", _state["generation"])
    return self


def _method(name, unbound):
    def method(*args, **kwargs):
        return _call(name, unbound, args, kwargs)
    method.__name__ = method.__qualname__ = name
    return method


_SKIP = {"__new__", "__init__", "__getattribute__", "__setattr__", "__delattr__", "__class__", "__init_subclass__",
         "__subclasshook__", "__dir__", "__sizeof__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__",
         "__format__", "__str__", "__repr__", "_make", "__hash__", "__class_getitem__", "__len__", "__iter__",
         "size", "dim", "numel", "stride", "is_contiguous", "data_ptr", "storage_offset", "element_size",
         "is_floating_point", "is_complex", "nelement", "ndimension", "get_device", "is_signed"}
_METHODS = {}
for _klass in reversed(Tensor.__mro__[:-1]):
    for _name, _attr in list(vars(_klass).items()):
        if _name in _SKIP or isinstance(_attr, (staticmethod, classmethod, property, type)) or not callable(_attr):
            continue
        _METHODS[_name] = (_attr, _method(_name, _attr))
        setattr(DualTensor, _name, _METHODS[_name][1])


# ---- the level: swapping ember's functions and Tensor's methods in and out --------------------

_swapped = []  # (namespace dict or Tensor, name, original, wrapper)


def _function(name, fn):
    @functools.wraps(fn)
    def function(*args, **kwargs):
        return _call(name, fn, args, kwargs)
    return function


def _swap_in():
    import ember
    from .. import fft, linalg, special
    from .._ops._registry import namespace
    from ..nn import functional
    if not _swapped:
        for mod, names in ((ember, [n for n in namespace if n in vars(ember)]), (functional, None), (linalg, None),
                           (special, None), (fft, None)):
            d = vars(mod)
            for n in (names if names is not None else [k for k in d if not k.startswith("_")]):
                fn = d.get(n)
                if callable(fn) and not isinstance(fn, type):
                    _swapped.append((d, n, fn, _function(n, fn)))
        for n, (fn, w) in _METHODS.items():
            if not n.startswith("__"):
                _swapped.append((Tensor, n, fn, w))
    for where, n, _fn, w in _swapped:
        if where is Tensor:
            setattr(Tensor, n, w)
        else:
            where[n] = w


def _swap_out():
    for where, n, fn, _w in _swapped:
        if where is Tensor:
            setattr(Tensor, n, fn)
        else:
            where[n] = fn


def enter_dual_level():
    """Open the forward AD level (only one at a time, as torch) and return it."""
    if _state["level"] >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _swap_in()
    _state["level"] = 0
    return 0


def exit_dual_level(*, level=None):
    """Close the level: every tangent made in it is dropped."""
    if level is None:
        level = _state["level"]
    if level != _state["level"] or level < 0:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _swap_out()
    _state["level"] = level - 1
    _state["generation"] += 1


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor: a view of `tensor` carrying `tangent` (same size; floating point or complex)."""
    if level is None:
        level = _state["level"]
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if tensor.dtype != tangent.dtype:
        tangent = tangent.to(tensor.dtype)
    p = _plain(tensor) if type(tensor) is DualTensor else tensor  # (a leaf's own object: its gradient)
    return _dual(p.view_as(p), _plain(tangent) if type(tangent) is DualTensor else tangent)


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of a tensor: the primal a view of it, the tangent None where it has none."""
    if level is None:
        level = _state["level"]
    if level < 0 or type(tensor) is not DualTensor:
        return UnpackedDualTensor(tensor, None)
    p = _plain(tensor)
    return UnpackedDualTensor(p.view_as(p), _tangent_of(tensor))


class dual_level:
    """Context manager (and decorator) that opens the forward AD level for its block."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False

    def __call__(self, orig_func):
        @functools.wraps(orig_func)
        def wrapper(*args, **kwargs):
            with dual_level():
                return orig_func(*args, **kwargs)
        return wrapper
