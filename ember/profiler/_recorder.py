"""Recording ops while a profiler is on. Note [Profiler hooks]: nothing is checked on the op path when no
profiler runs; starting one swaps wrappers in for ember's public op functions (ember.*, Tensor methods and
operators, nn.functional), the registry's kernel entry points (class-op apply, row-op calls) and the
autograd engine's node calls, and stopping it puts the originals back. Names follow torch: "aten::<op>"
for ops, the node name for backward nodes, inside "autograd::engine::evaluate_function: <node>"."""
import re
import time
import traceback

from ._events import FunctionEvent

_clock = time.perf_counter_ns


class _State:
    """The profiler that records now (or None) and the stack of open events."""
    profiler = None
    recording = False
    stack = []
    next_id = 0


_state = _State()


def begin(name, args=None, is_user_annotation=False):
    """Open an event (None when not recording); nested calls become its children."""
    prof = _state.profiler
    if prof is None or not _state.recording:
        return None
    stack = _state.stack
    parent = stack[-1] if stack else None
    if parent is not None and parent.name == name and not is_user_annotation:
        return None  # the same op seen again one level down (a method calling its function, a kernel)
    shapes = None
    if prof.record_shapes:
        shapes = _shapes(args) if args is not None else []
    where = _user_stack() if prof.with_stack else None
    _state.next_id += 1
    evt = FunctionEvent(_state.next_id, name, (_clock() - prof._t0) / 1000.0, shapes, where, parent,
                        is_user_annotation)
    if parent is None:
        prof._events.append(evt)
    else:
        parent.cpu_children.append(evt)
    stack.append(evt)
    return evt


def end(evt):
    if evt is None:
        return
    prof = _state.profiler
    evt.end_us = (_clock() - prof._t0) / 1000.0 if prof is not None else evt.start_us
    stack = _state.stack
    if stack and stack[-1] is evt:
        stack.pop()
    elif evt in stack:
        del stack[stack.index(evt):]


def _owned_bytes(result):
    """Bytes of the result tensors that own their memory (new allocations; views count nothing). ember's
    stand-in for torch's allocator accounting: memory an op allocates and frees again is not seen."""
    from .._backend import owns_memory
    from .._tensor import Tensor
    items = result if isinstance(result, (tuple, list)) else (result,)
    return sum(t._data.nbytes for t in items if isinstance(t, Tensor) and owns_memory(t._data))


def _shapes(args):
    from .._tensor import Tensor
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(list(a._data.shape))
        elif isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
            out.append([list(x._data.shape) for x in a])
        else:
            out.append([])
    return out


def _user_stack():
    """file(line): function of the calling frames outside ember, innermost first (torch's with_stack)."""
    frames = [f for f in traceback.extract_stack()[:-3] if "/ember/" not in f.filename.replace("\\", "/")]
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)][:5]


# ---- the wrappers (Note [Profiler hooks]) -----------------------------------------------------

def _op_wrapper(fn, name):
    def recorded(*args, **kwargs):
        evt = begin(name, args)
        try:
            result = fn(*args, **kwargs)
        finally:
            end(evt)
        if evt is not None and _state.profiler.profile_memory:
            evt.cpu_memory_usage = _owned_bytes(result)
        return result
    recorded.__name__ = getattr(fn, "__name__", name)
    recorded.__qualname__ = getattr(fn, "__qualname__", name)
    recorded.__doc__ = fn.__doc__
    recorded.__wrapped__ = fn
    return recorded


_DUNDERS = {"add": "add", "radd": "add", "iadd": "add_", "sub": "sub", "rsub": "rsub", "isub": "sub_",
            "mul": "mul", "rmul": "mul", "imul": "mul_", "truediv": "div", "rtruediv": "div", "itruediv": "div_",
            "floordiv": "floor_divide", "rfloordiv": "floor_divide", "mod": "remainder", "rmod": "remainder",
            "matmul": "matmul", "rmatmul": "matmul", "pow": "pow", "rpow": "pow", "ipow": "pow_", "neg": "neg",
            "abs": "abs", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "invert": "bitwise_not",
            "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
_TO = ("float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char", "type_as", "cpu")
_METHODS = ("view", "view_as", "reshape", "reshape_as", "t", "contiguous", "clone", "detach", "item", "copy_",
            "fill_", "zero_", "to", "expand", "expand_as", "repeat", "numpy")
# nn.functional names whose aten op is named differently
_FUNCTIONAL = {"cross_entropy": "cross_entropy_loss", "nll_loss": "nll_loss_nd", "mse_loss": "mse_loss",
               "l1_loss": "l1_loss", "binary_cross_entropy_with_logits": "binary_cross_entropy_with_logits"}


# grad_fn names whose aten kernel is not their snake case (private `_` kernels, torch's own spelling)
_KERNELS = {"FftR2C": "_fft_r2c", "FftC2C": "_fft_c2c", "FftC2R": "_fft_c2r", "Unique2": "_unique2",
            "Col2Im": "col2im", "Im2Col": "im2col", "GridSampler2D": "grid_sampler_2d"}


def _kernel_name(cls):
    """aten name of a class op from its grad_fn name: "AddmmBackward0" -> "aten::addmm",
    "MaxPool2DWithIndicesBackward0" -> "aten::max_pool2d_with_indices" (digits stay with their word)."""
    base = re.sub(r"Backward\d*$", "", getattr(cls, "_name", None) or cls.__name__)
    if base in _KERNELS:
        return "aten::" + _KERNELS[base]
    words = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", base)  # a capital starting a lower-case word
    return "aten::" + re.sub(r"([a-z])([A-Z])", r"\1_\2", words).lower()


class _Patches:
    """The originals replaced while recording, put back by undo()."""

    def __init__(self):
        self.saved = []

    def set(self, owner, name, value):
        self.saved.append((owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)))
        setattr(owner, name, value)

    def undo(self):
        for owner, name, value in reversed(self.saved):
            setattr(owner, name, value)
        self.saved = []


_patches = _Patches()


def install():
    """Swap the recording wrappers in (see Note [Profiler hooks])."""
    import ember
    from .. import nn
    from .._ops import _registry
    from .._tensor import Tensor
    from ..autograd import engine
    wrappers = {}

    def wrapped(fn, name):
        key = (id(fn), name)
        if key not in wrappers:
            wrappers[key] = _op_wrapper(fn, name)
        return wrappers[key]
    public = {}
    for name, fn in _registry.namespace.items():
        if "." not in name and callable(fn):
            public[id(fn)] = name
            if getattr(ember, name, None) is fn:
                _patches.set(ember, name, wrapped(fn, "aten::" + name))
    for name, value in list(Tensor.__dict__.items()):
        if not callable(value) or isinstance(value, (type, staticmethod, classmethod)):
            continue
        if name.startswith("__") and name.endswith("__"):
            op = _DUNDERS.get(name[2:-2])
        elif name in _TO:
            op = "to"
        elif name.startswith("_"):
            op = None
        else:
            op = name if id(value) in public or name.rstrip("_") in public.values() or name in _METHODS else None
        if op is not None:
            _patches.set(Tensor, name, wrapped(value, "aten::" + op))
    functional = nn.functional
    for name, fn in list(vars(functional).items()):
        if name.startswith("_") or not callable(fn) or isinstance(fn, type) or getattr(fn, "__module__", "") \
                is None or not getattr(fn, "__module__", "").startswith("ember"):
            continue
        _patches.set(functional, name, wrapped(fn, "aten::" + _FUNCTIONAL.get(name, name)))
    from .. import special
    from .._ops import special as special_ops
    for name in special.__all__:  # torch.special's aliases of other ops record aten::special_<name> around them
        fn = getattr(special, name)
        if fn is not getattr(special_ops, name, None):
            _patches.set(special, name, wrapped(fn, "aten::special_" + name))
    _patches.set(_registry, "apply", _apply_wrapper(_registry.apply))
    _patches.set(_registry, "unary_call", _row_wrapper(_registry.unary_call))
    _patches.set(_registry, "binary_call", _row_wrapper(_registry.binary_call))
    _patches.set(engine, "_call", _node_wrapper(engine._call))
    _patches.set(engine._LeafSink, "receive", _leaf_wrapper(engine._LeafSink.receive))


def uninstall():
    _patches.undo()


def _apply_wrapper(apply):
    def recorded(cls, inputs, params):
        evt = begin(_kernel_name(cls), inputs)
        try:
            result = apply(cls, inputs, params)
        finally:
            end(evt)
        if evt is not None and _state.profiler.profile_memory:
            evt.cpu_memory_usage = _owned_bytes(result)
        return result
    return recorded


# rows whose kernel torch names after the public op (ember's private rows: `_add` is add's kernel, ...)
_ROW_NAMES = {"true_divide": "div", "_add": "add", "_sub": "sub", "_div_trunc": "div", "_div_floor": "div",
              "_heaviside": "heaviside", "_round0": "round", "_i1": "special_i1"}


def _row_name(name):
    """aten name of a pointwise row: `_special_entr` -> aten::special_entr, `_add` -> aten::add."""
    if name.startswith("_special_"):
        return "aten::" + name[1:]
    return "aten::" + _ROW_NAMES.get(name, name)


def _row_wrapper(call):
    def recorded(row, *operands):
        evt = begin(_row_name(row.name), operands)
        try:
            result = call(row, *operands)
        finally:
            end(evt)
        if evt is not None and _state.profiler.profile_memory:
            evt.cpu_memory_usage = _owned_bytes(result)
        return result
    return recorded


def _node_wrapper(call):
    def recorded(node, grads):
        name = node.name()
        outer = begin(f"autograd::engine::evaluate_function: {name}")
        inner = begin(name, grads)
        try:
            return call(node, grads)
        finally:
            end(inner)
            end(outer)
    return recorded


def _leaf_wrapper(receive):
    def recorded(self, node, grad):
        name = node.name()
        outer = begin(f"autograd::engine::evaluate_function: {name}")
        inner = begin(name)
        try:
            return receive(self, node, grad)
        finally:
            end(inner)
            end(outer)
    return recorded
