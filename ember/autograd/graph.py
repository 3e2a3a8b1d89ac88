"""Graph nodes (grad_fn) and the tensors they save for backward.

Note [No cycles]: a node holds its inputs' edges and the tensors it saved, never its
own outputs. When a formula needs the output, the slot keeps the output's *array*
and rebuilds a Tensor on unpack with the node as grad_fn (PyTorch's saved-output
rule), so reference counting frees a graph the moment its last tensor dies.
"""
import itertools
import weakref

from . import grad_mode

_seq = itertools.count()

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after "
          "they have already been freed). Saved intermediate values of the graph are freed when you call "
          ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
          "graph a second time or if you need to access saved tensors after calling backward.")


def _version_error(t, saved_version, node):
    shape = "[" + ", ".join(str(s) for s in t._data.shape) + "]"
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[torch.{_type_name(t)} {shape}], which is output {t._output_nr} of "
        f"{t._grad_fn.name() if t._grad_fn is not None else 'a leaf'}, is at version {t._version.value}; "
        f"expected version {saved_version} instead. Hint: the backtrace further above can point to the "
        f"operation that failed to compute its gradient ({node.name()}).")


def _type_name(t):
    return {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
            "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
            "bool": "BoolTensor"}.get(t._dtype.name, t._dtype.name)


class SavedTensor:
    """One saved value: an input Tensor (kept by reference, version-checked), the
    node's own output (kept as an array, see Note [No cycles]) or a constant array."""
    __slots__ = ("kind", "obj", "version_counter", "version", "output_nr")

    def __init__(self, kind, obj, version_counter=None, version=0, output_nr=0):
        self.kind = kind
        self.obj = obj
        self.version_counter = version_counter
        self.version = version
        self.output_nr = output_nr

    def unpack(self, node):
        from .._tensor import Tensor
        kind = self.kind
        if kind == "input":
            t = self.obj
            if t._version.value != self.version:
                raise _version_error(t, self.version, node)
            return t
        if kind == "output":
            if self.version_counter.value != self.version:
                out = Tensor._make(self.obj)
                out._grad_fn = node
                out._output_nr = self.output_nr
                raise _version_error(out, self.version, node)
            out = Tensor._make(self.obj)
            out._version = self.version_counter
            out._requires_grad = True
            out._grad_fn = node
            out._output_nr = self.output_nr
            return out
        if kind == "freed":
            raise RuntimeError(_FREED)
        if kind == "value":
            return self.obj
        return Tensor._make(self.obj)  # constant array saved by the forward kernel


_FREED_SLOT = SavedTensor("freed", None)


class Node:
    """A grad_fn: edges to the nodes of its inputs, saved values, hooks.

    Subclasses implement backward(ctx, *grads) -> grad or tuple of grads, one per
    input, written with ember ops so that create_graph=True works.
    """
    __slots__ = ("next_functions", "needs_input_grad", "_input_meta", "_saved", "_out_meta",
                 "_pre_hooks", "_hooks", "_seq", "_trace", "materialize_grads", "__dict__", "__weakref__")
    _name = None

    def name(self):
        return self._name or type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    # -- saved tensors ----------------------------------------------------------
    def save_for_backward(self, *items):
        """Save arrays (inside op kernels) or Tensors (inside autograd.Function)."""
        self._saved = items

    @property
    def saved_tensors(self):
        return tuple(s.unpack(self) for s in self._saved)

    def _release(self):
        """Free saved values after backward (unless retain_graph)."""
        if self._saved:
            self._saved = tuple(_FREED_SLOT for _ in self._saved)

    # -- hooks ------------------------------------------------------------------
    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) after this node ran; may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = {}
        return _Handle(self._hooks, fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) before this node runs; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return _Handle(self._pre_hooks, ("node", fn))

    def _add_tensor_hook(self, output_nr, fn):
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return _Handle(self._pre_hooks, ("tensor", output_nr, fn))

    @property
    def metadata(self):
        return self.__dict__.setdefault("_metadata", {})


def init_node(node, inputs):
    """Fill a node's edges from its input tensors (None entries allowed)."""
    edges = []
    needs = []
    meta = []
    for t in inputs:
        if t is None or not t._requires_grad:
            edges.append((None, 0))
            needs.append(False)
            meta.append(None if t is None else (t._data.shape, t._dtype))
        else:
            edges.append(gradient_edge(t))
            needs.append(True)
            meta.append((t._data.shape, t._dtype))
    node.next_functions = tuple(edges)
    node.needs_input_grad = tuple(needs)
    node._input_meta = tuple(meta)
    node._pre_hooks = None
    node._hooks = None
    node._seq = next(_seq)
    node.materialize_grads = True
    node._trace = grad_mode.anomaly_trace()


def gradient_edge(t):
    """(node, input_nr) where the gradient of tensor t goes."""
    fn = t._grad_fn
    if fn is None:
        return (grad_accumulator(t), 0)
    if t._base is not None and t._view_version != t._version.value:
        fn = regenerate_view_grad_fn(t)
    return (fn, t._output_nr)


def regenerate_view_grad_fn(t):
    """A view whose base changed in place since its grad_fn was set reads its history
    anew from the base (as torch does)."""
    from .._ops.shape import view_of_base
    return view_of_base(t)


class AccumulateGrad(Node):
    """Sink of a leaf tensor: adds incoming gradient into leaf.grad."""
    __slots__ = ("variable",)
    _name = "AccumulateGrad"

    def __init__(self, variable):
        init_node(self, ())
        self.variable = variable
        self._saved = ()
        self._out_meta = ((variable._data.shape, variable._dtype),)


def grad_accumulator(t):
    acc = t._grad_acc() if t._grad_acc is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
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
