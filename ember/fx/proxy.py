"""torch.fx.Proxy: the stand-in for a value while a program is traced. Every operation on a Proxy (an operator,
a method call, an attribute, an ember function it is passed to: Note [Torch functions of other objects] in
ember/_ops/_argcheck.py) records a node in its tracer's graph and returns a Proxy of that node."""
import builtins
import operator

from .node import Node


class TraceError(ValueError):
    """A traced program asked for a value that only exists when it runs (bool, len, iteration of a Proxy)."""


class TracerBase:
    """What a Proxy needs of a tracer: create_proxy / create_node / create_arg into self.graph."""
    graph = None
    scope = None

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """A value as a node argument: proxies become their nodes, containers are mapped, plain values kept."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if type(a) is tuple or (isinstance(a, tuple) and hasattr(a, "_fields")):
            items = tuple(self.create_arg(x) for x in a)
            return type(a)(*items) if hasattr(a, "_fields") else items
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    raise NotImplementedError(f"Keys for dictionaries used as an argument cannot contain a Node. "
                                              f"Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if a is None or a is Ellipsis or isinstance(a, (bool, int, float, complex, str, range, type)) \
                or _is_ember_constant(a) or callable(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def iter(self, obj):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a "
                         "more detailed explanation of what types of control flow can be traced, and check out the "
                         "Proxy docstring for help troubleshooting Proxy iteration errors")

    def to_bool(self, obj):
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def keys(self, obj):
        return Attribute(obj, "keys")()


def _is_ember_constant(a):
    import ember
    return isinstance(a, (ember.dtype, ember.device, ember.layout, ember.memory_format, ember.Size))


class GraphAppendingTracer(TracerBase):
    """A tracer that only appends to an existing graph (what Proxy(node) uses when given no tracer)."""

    def __init__(self, graph):
        self.graph = graph
        self.tensor_attrs = {}


class Proxy:
    """A traced value: the node that computes it and the tracer recording what is done with it."""

    def __init__(self, node, tracer=None):
        self.tracer = GraphAppendingTracer(node.graph) if tracer is None else tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        if k.startswith("_"):  # ember's ops read private fields (_data, _dtype) before they find a Proxy: those
            raise AttributeError(k)  # fail at once, and the op hands itself to __torch_function__, recording nothing
        return Attribute(self, k)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        """`a, b = proxy`: as many getitem nodes as the calling code unpacks (read from its bytecode, as torch
        does); any other iteration is a TraceError."""
        import dis
        import sys
        frame = sys._getframe(1)
        for inst in dis.get_instructions(frame.f_code):
            if inst.offset == frame.f_lasti:
                if inst.opname == "UNPACK_SEQUENCE":
                    return iter([self[i] for i in range(inst.argval)])
                break
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    def keys(self):
        return self.tracer.keys(self)

    @classmethod
    def __torch_function__(cls, orig_method, types, args=None, kwargs=None):
        """An ember function called with a Proxy among its arguments: a call_method node when it is a Tensor
        method, else a call_function node, in the graph of the first Proxy found."""
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers = tracers_in(args, kwargs)
        if not tracers:
            return NotImplemented
        tracer = tracers[0]
        if any(t is not tracer for t in tracers):
            raise RuntimeError(f"Found multiple different tracers {list({id(t): t for t in tracers}.values())} while "
                               f"trying to trace operations {orig_method}")
        import ember
        name = getattr(orig_method, "__name__", None)
        if name is not None and getattr(ember.Tensor, name, None) is orig_method:
            return tracer.create_proxy("call_method", name, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs)


def tracers_in(*values):
    """The tracers of the Proxies inside values (nested in tuples, lists and dict values), in order."""
    found = []

    def walk(a):
        if isinstance(a, Proxy):
            found.append(a.tracer)
        elif isinstance(a, (tuple, list)):
            for x in a:
                walk(x)
        elif isinstance(a, dict):
            for x in a.values():
                walk(x)
    for v in values:
        walk(v)
    return found


class Attribute(Proxy):
    """x.name on a Proxy: a call_method node when called, else a getattr node (made on first use)."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", builtins.getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _binary(op):
    def method(self, other):
        return self.tracer.create_proxy("call_function", op, (self, other), {})
    return method


def _reflected(op):
    def method(self, other):
        return self.tracer.create_proxy("call_function", op, (other, self), {})
    return method


def _unary(op):
    def method(self):
        return self.tracer.create_proxy("call_function", op, (self,), {})
    return method


for _name in ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "matmul", "lshift", "rshift", "and", "or",
              "xor"):
    _op = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    setattr(Proxy, f"__{_name}__", _binary(_op))
    setattr(Proxy, f"__r{_name}__", _reflected(_op))
for _name in ("eq", "ne", "lt", "le", "gt", "ge", "getitem"):
    setattr(Proxy, f"__{_name}__", _binary(getattr(operator, _name)))
for _name in ("neg", "pos", "invert", "abs"):
    setattr(Proxy, f"__{_name}__", _unary(getattr(operator, _name) if _name != "abs" else operator.abs))
Proxy.__hash__ = object.__hash__
