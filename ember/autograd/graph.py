"""Graph nodes (grad_fn) and the tensors they save for backward.

Note [No cycles]: a node holds its inputs' edges and the tensors it saved, never its
own outputs. When a formula needs the output, the slot keeps the output's *array*
and rebuilds a Tensor on unpack with the node as grad_fn (PyTorch's saved-output
rule), so reference counting frees a graph the moment its last tensor dies.
"""
import itertools
import weakref

from . import grad_mode

_state = grad_mode._state
_new = object.__new__
_anomaly = grad_mode._anomaly

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after "
          "they have already been freed). Saved intermediate values of the graph are freed when you call "
          ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
          "graph a second time or if you need to access saved tensors after calling backward.")


def _version_error(shape, dtype, producer, output_nr, version, saved_version):
    """torch's message for a saved tensor that was modified in place after it was saved."""
    dims = "[" + ", ".join(str(n) for n in shape) + "]"
    where = f", which is output {output_nr} of {_short_name(producer)}," if producer is not None else ""
    hint = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. The "
            "variable in question was changed in there or anywhere later. Good luck!" if grad_mode._anomaly.enabled
            else "Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True, check_nan=False).")
    return RuntimeError(f"one of the variables needed for gradient computation has been modified by an inplace "
                        f"operation: [torch.{_TYPE_NAMES.get(dtype.name, dtype.name)} {dims}]{where} is at "
                        f"version {version}; expected version {saved_version} instead. {hint}")


def _short_name(node):
    """torch names a node by its op in this message: ExpBackward0 -> Exp, EluBackward1 (elu_) -> Elu1."""
    name = node.name()
    cut = name.rfind("Backward")
    if cut <= 0:
        return name
    rest = name[cut + len("Backward"):]
    return name[:cut] + ("" if rest == "0" else rest)


_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
               "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor", "complex64": "ComplexFloatTensor",
               "complex128": "ComplexDoubleTensor", "uint16": "UInt16Tensor", "uint32": "UInt32Tensor",
               "uint64": "UInt64Tensor"}


def _type_name(t):
    return _TYPE_NAMES.get(t._dtype.name, t._dtype.name)


class SavedTensor:
    """One saved value: an input Tensor (kept by reference, version-checked), the
    node's own output (kept as an array, see Note [No cycles]), a constant array,
    any other value (kind "value"), or what a saved-tensor pack hook made of a tensor
    (kind "packed", Note [Packed saved tensors] in saved_hooks.py)."""
    __slots__ = ("kind", "obj", "version_counter", "version", "output_nr")

    def __init__(self, kind, obj, version_counter=None, version=0, output_nr=0):
        self.kind = kind
        self.obj = obj
        self.version_counter = version_counter
        self.version = version
        self.output_nr = output_nr

    def unpack(self, node):
        kind = self.kind
        if kind == "input":
            t = self.obj
            if t._version_counter.value != self.version:
                raise _version_error(t._data.shape, t._dtype, t.grad_fn, t._output_nr,
                                     t._version_counter.value, self.version)
            return t
        if kind == "output":
            counter = self.version_counter
            meta = node._out_meta[self.output_nr]
            if counter.value != self.version:
                raise _version_error(self.obj.shape, meta[1], node, self.output_nr, counter.value,
                                     self.version)
            out = _make_tensor(self.obj, meta[1])
            out._version_counter = counter
            out._requires_grad = True
            out._grad_fn = node
            out._output_nr = self.output_nr
            return out
        if kind == "freed":
            raise RuntimeError(_FREED)
        if kind == "value":
            return self.obj
        if kind == "packed":  # Note [Packed saved tensors] (ember/autograd/saved_hooks.py)
            from .saved_hooks import unpack
            return unpack(self, node)
        return _make_tensor(self.obj)  # constant array saved by the forward kernel


def _make_tensor(arr, dtype=None):
    global _make_tensor
    from .._tensor import Tensor
    _make_tensor = Tensor._make  # bound once: the tensor module imports this one
    return Tensor._make(arr, dtype)


FREED_SLOT = SavedTensor("freed", None)


class _from_edges:
    """A node attribute derived from its edges when read, unless the node set its own (autograd.Function's
    ctx sets needs_input_grad per argument): init_node, run for every op that records history, skips it."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, node, owner=None):
        return self if node is None else self.fn(node)


class Node:
    """A grad_fn: edges to the nodes of its inputs, saved values, hooks.

    Subclasses implement backward(ctx, *grads) -> grad or tuple of grads, one per
    input, written with ember ops so that create_graph=True works.
    """
    __slots__ = ("next_functions", "_saved", "_out_meta", "_seq", "__dict__", "__weakref__")
    _name = None
    # Defaults read from the class until a node sets its own (in its __dict__): most nodes never do, and a
    # node is made for every op that records history, so setting them all each time is a cost on every op.
    _pre_hooks = None  # {id: (kind, output_nr, fn)} once a pre-hook is registered
    _hooks = None  # {id: fn} once a hook is registered
    _trace = None  # the forward's stack, under anomaly detection
    materialize_grads = True
    # Built-in formulas compute new gradient tensors (or pass on the ones they got), so
    # the engine may move such a buffer into a leaf's .grad; a user's backward may return
    # a tensor it keeps (autograd.Function sets this False).
    _fresh_grads = True

    @_from_edges
    def needs_input_grad(self):
        """One flag per input: does its gradient go anywhere (torch: task_should_compute_output)."""
        return tuple([fn is not None for fn, _ in self.next_functions])

    @_from_edges
    def _input_meta(self):
        """(shape, dtype) per input that has an edge, None for the others: read from the node the edge
        leads to, whose output it is (torch validates gradients against the next edge's metadata)."""
        return tuple([None if fn is None else fn._out_meta[nr] for fn, nr in self.next_functions])

    def name(self):
        return self._name or type(self).__name__

    def __repr__(self):
        return f"<{self.name().rpartition('::')[2]} object at {hex(id(self))}>"

    def __call__(self, *grads):
        """The node's formula on one gradient per differentiable output: its inputs' gradients, as torch's
        grad_fn(*grads) (Note [Calling a node] in engine.py)."""
        from .engine import call_node
        return call_node(self, grads)

    def _sequence_nr(self):
        return self._seq

    # -- saved tensors ----------------------------------------------------------
    def save_for_backward(self, *items):
        """Save arrays (inside op kernels) or Tensors (inside autograd.Function)."""
        self._saved = items

    @property
    def saved_tensors(self):
        return tuple([s.unpack(self) for s in self._saved])  # a list first: no generator frames (hot)

    def _release(self):
        """Free saved values after backward (unless retain_graph)."""
        if self._saved:
            self._saved = (FREED_SLOT,) * len(self._saved)

    # -- hooks ------------------------------------------------------------------
    # _pre_hooks holds (kind, output_nr, fn) with kind "tensor" (Tensor.register_hook
    # on an output), "retain" (retain_grad) or "node" (register_prehook); the engine
    # runs them in torch's order: tensor hooks, retain_grad, node pre-hooks.
    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) after this node ran; may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = {}
        return _Handle(self._hooks, fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) before this node runs; may return new grad_outputs."""
        return self._add_pre_hook("node", None, fn)

    def _add_pre_hook(self, kind, output_nr, fn):
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return _Handle(self._pre_hooks, (kind, output_nr, fn))

    @property
    def metadata(self):
        return self.__dict__.setdefault("_metadata", {})


_NO_EDGE = (None, 0)
_next_seq = itertools.count().__next__


def init_node(node, inputs):
    """Fill a node's edges from its input tensors (None entries allowed)."""
    edges = []
    for t in inputs:
        if t is None or not t._requires_grad:
            edges.append(_NO_EDGE)
            continue
        fn = t._grad_fn  # gradient_edge(t), inlined: this runs for every input of every op
        if fn is None:
            edges.append((grad_accumulator(t), 0))
        elif t._base is not None and t._view_version != t._version_counter.value:
            edges.append((regenerate_view_grad_fn(t), t._output_nr))
        else:
            edges.append((fn, t._output_nr))
    node.next_functions = tuple(edges)
    node._seq = _next_seq()
    if _anomaly.enabled:
        node._trace = grad_mode.anomaly_trace()


def gradient_edge(t):
    """(node, input_nr) where the gradient of tensor t goes."""
    fn = t._grad_fn
    if fn is None:
        return (grad_accumulator(t), 0)
    if t._base is not None and t._view_version != t._version_counter.value:
        fn = regenerate_view_grad_fn(t)
    return (fn, t._output_nr)


def regenerate_view_grad_fn(t):
    """A view whose base changed in place since its grad_fn was set reads its history
    anew from the base (as torch does)."""
    from .._ops.shape import view_of_base
    return view_of_base(t)


class AccumulateGrad(Node):
    """Sink of a leaf tensor: the engine adds incoming gradients into leaf.grad. Made by grad_accumulator."""
    __slots__ = ("variable",)
    _name = "torch::autograd::AccumulateGrad"
    # a sink has no inputs and saves nothing: read from the class (a leaf's node is made anew for each graph)
    next_functions = needs_input_grad = _input_meta = _saved = ()
    _seq = 2 ** 64 - 1  # torch's sequence number for every AccumulateGrad (UINT64_MAX): it takes none from the count

    def __call__(self, *grads):
        """Add the one gradient into the leaf's .grad; returns () (Note [Calling a node] in engine.py)."""
        from .engine import call_accumulate_grad
        return call_accumulate_grad(self, grads)


_Tensor = None  # ember.Tensor, bound by _leaf_shape's first call (ember._tensor imports this module)


def reached_leaves(tensors):
    """The leaf tensors that require grad and that the graphs of `tensors` reach (one of them that is itself such
    a leaf included), each once, in the order found (an explicit stack: no recursion)."""
    found = []
    seen = set()
    stack = []
    for t in tensors:
        if t._grad_fn is not None:
            stack.append(t._grad_fn)
        elif t.requires_grad and id(t) not in seen:
            seen.add(id(t))
            found.append(t)
    visited = set()
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None and id(variable) not in seen:
            seen.add(id(variable))
            found.append(variable)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return found


def _leaf_shape(variable):
    """A leaf's shape as a tuple (.shape: sparse leaves have no _data)."""
    global _Tensor
    if _Tensor is None:
        from .._tensor import Tensor
        _Tensor = Tensor
        if type(variable) is Tensor:
            return variable._data.shape
    return tuple(variable.shape)


def grad_accumulator(t):
    """The leaf's AccumulateGrad node, created on demand and held weakly by the tensor
    (so it lives exactly as long as some graph uses it)."""
    ref = t._grad_acc
    acc = ref() if ref is not None else None
    if acc is None:
        acc = _new(AccumulateGrad)  # no __init__ frame: this runs once per leaf per graph
        acc.variable = t
        # a dense Tensor's array shape as it is; .shape for subclasses, sparse leaves (no _data) and
        # uninitialized parameters
        acc._out_meta = ((t._data.shape if type(t) is _Tensor else _leaf_shape(t), t._dtype),)
        t._grad_acc = weakref.ref(acc)
    return acc


class _Handle:
    """RemovableHandle for hooks stored in a dict."""
    _next_id = itertools.count()

    def __init__(self, store, value):
        self.id = next(self._next_id)
        self._store = store
        store[self.id] = value

    def remove(self):
        store = self._store
        if store is not None:
            store.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


from .saved_hooks import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks  # noqa: E402 (they use this module)
