"""torch.fx.Tracer and symbolic_trace: run a module's forward (or a function) on Proxies, recording each
operation as a node; calls of leaf modules (ember.nn's own) stay one call_module node, parameters and buffers
become get_attr nodes, and functions marked with wrap() stay one call_function node."""
import functools
import inspect
import math
import types
import warnings
import sys

from .graph import Graph
from .proxy import TracerBase, _is_ember_constant, tracers_in

_wrapped = []  # (globals dict, name) registered by wrap()


def wrap(fn_or_name):
    """At module scope: calls of this global function (given by name or itself) in code traced afterwards are
    recorded as one call_function node instead of being traced through."""
    if callable(fn_or_name):
        name = fn_or_name.__name__
    elif isinstance(fn_or_name, str):
        name = fn_or_name
    else:
        raise AssertionError("Unsupported type for global function! Must be either a callable or string name")
    frame = sys._getframe(1)
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped.append((frame.f_globals, name))
    return fn_or_name


class Tracer(TracerBase):
    """Records a module's forward into a Graph. Override is_leaf_module, create_node, create_arg, call_module or
    getattr to change what is traced through and what is recorded."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        self.autowrap_modules = tuple(autowrap_modules)
        self.autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.graph = None
        self.root = None
        self.tensor_attrs = {}
        self.scope = None

    # -- what is a leaf -----------------------------------------------------------------------------------
    def is_leaf_module(self, m, module_qualified_name):
        """ember.nn's own modules (not Sequential) are leaves: one call_module node each."""
        import ember
        return (type(m).__module__.startswith("ember.nn") and not isinstance(m, ember.nn.Sequential))

    def path_of_module(self, mod):
        for name, m in self.root.named_modules():
            if m is mod:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward, args, kwargs):
        """A leaf's call as a call_module node; anything else traced through forward."""
        name = self.path_of_module(m)
        if not self.is_leaf_module(m, name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", name, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """A parameter or buffer of the root read in forward: a get_attr node (one per attribute)."""
        import ember
        if isinstance(attr_val, ember.Tensor):
            for name, t in self._attrs():
                if t is attr_val:
                    if name not in parameter_proxy_cache:
                        parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                    return parameter_proxy_cache[name]
        return attr_val

    def _attrs(self):
        yield from self.root.named_parameters(remove_duplicate=False)
        yield from self.root.named_buffers(remove_duplicate=False)

    def create_arg(self, a):
        """Parameters and buffers of the root become get_attr nodes, other tensors constants of the module
        (_tensor_constant0, ...), the rest as TracerBase does."""
        import ember
        if isinstance(a, ember.Tensor):
            for name, t in self._attrs():
                if t is a:
                    return self.create_node("get_attr", name, (), {})
            qualname = self.tensor_attrs.get(id(a))
            if qualname is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                qualname = f"_tensor_constant{i}"
                setattr(self.root, qualname, a)
                self.tensor_attrs[id(a)] = qualname
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, ember.nn.Module):
            for name, m in self.root.named_modules():
                if m is a:
                    return self.create_node("get_attr", name, (), {})
        return super().create_arg(a)

    # -- tracing ------------------------------------------------------------------------------------------
    def _concrete(self, param, value):
        """A concrete_args value: traced code sees the value itself, and the graph keeps a placeholder
        <name>_1 with torch's check that a call passes that same value (an _assert of ==, or _assert_is_none)."""
        import ember
        if isinstance(value, (list, tuple, dict)):
            raise NotImplementedError("ember.fx: concrete_args values that are containers are not supported")
        default = () if param.default is inspect.Parameter.empty else (param.default,)
        out = self.create_proxy("placeholder", f"{param.name}_1", default, {})
        if type(value) in (bool, int, float, complex, str) or _is_ember_constant(value):
            ember._assert(out == value, f"{param.name} has been specialized to have value {value} but got another "
                                        "value")
        elif value is None:
            self.create_proxy("call_function", _assert_is_none,
                              (out, f"{param.name} has been specialized to have value None but got another value"),
                              {})
        else:
            warnings.warn(f"Was not able to add assertion to guarantee correct input {param.name} to specialized "
                          f"function. It is up to the user to make sure that your inputs match the inputs you "
                          f"specialized the function with.")
        return value

    def trace(self, root, concrete_args=None):
        """The graph of root's forward (root a module) or of root itself (a function)."""
        import ember
        nn = ember.nn
        if isinstance(root, nn.Module):
            self.root = root
            fn = type(root).forward
            bound_self = [root]
        else:
            self.root = nn.Module()
            fn = root
            bound_self = []
        self.graph = Graph(tracer_cls=type(self))
        self.tensor_attrs = {}
        concrete_args = dict(concrete_args or {})
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[len(bound_self):]
        fn = _all_positional(fn)  # as torch: keyword-only, *args and **kwargs parameters become positional
        order = {inspect.Parameter.VAR_POSITIONAL: 2, inspect.Parameter.VAR_KEYWORD: 3,
                 inspect.Parameter.KEYWORD_ONLY: 1}  # the code object's order of the variables
        args = []
        for p in sorted(params, key=lambda p: order.get(p.kind, 0)):
            if p.name in concrete_args:
                value = self._concrete(p, concrete_args[p.name])
            elif p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):  # one Proxy for the tuple (dict): *args, **kwargs
                star = "*" if p.kind is p.VAR_POSITIONAL else "**"
                value = self.create_proxy("placeholder", star + p.name, (), {})
            else:
                default = () if p.default is inspect.Parameter.empty else (p.default,)
                value = self.create_proxy("placeholder", p.name, default, {})
            args.append(value)
        kwargs = {}
        cache = {}
        tracer = self
        orig_call = nn.Module.__call__
        orig_getattr = nn.Module.__getattr__

        def module_call(mod, *a, **k):  # traced through: the module's own __call__ (its hooks), inner calls patched
            return tracer.call_module(mod, lambda *a2, **k2: orig_call(mod, *a2, **k2), a, k)

        def module_getattr(mod, name):
            value = orig_getattr(mod, name)
            return tracer.getattr(name, value, cache)
        patched = [(nn.Module, "__call__", orig_call), (nn.Module, "__getattr__", orig_getattr)]
        nn.Module.__call__ = module_call
        nn.Module.__getattr__ = module_getattr
        for globals_, name in _wrapped + [(getattr(f, "__globals__", {}), f.__name__) for f in self.autowrap_functions]:
            original = globals_.get(name)
            if original is not None and not getattr(original, "_ember_fx_wrapper", False):
                patched.append((globals_, name, original))
                globals_[name] = _wrapper(original, self)
        for module in self.autowrap_modules:  # math.sqrt(proxy) and the like: one call_function node each
            for name, original in list(vars(module).items()):
                if not name.startswith("_") and callable(original) and not isinstance(original, type):
                    patched.append((module, name, original))
                    setattr(module, name, _wrapper(original, self))
        try:
            result = fn(*bound_self, *args, **kwargs)
        finally:
            for owner, name, original in reversed(patched):
                if isinstance(owner, dict):
                    owner[name] = original
                else:
                    setattr(owner, name, original)
        self.create_node("output", "output", (self.create_arg(result),), {}, type_expr=None)
        return self.graph


def _all_positional(fn):
    """fn with its keyword-only, *args and **kwargs parameters made plain positional ones, in the code
    object's order (torch's tracer calls the traced code so, with one Proxy for the args tuple / kwargs dict)."""
    co = fn.__code__
    extra = bool(co.co_flags & inspect.CO_VARARGS) + bool(co.co_flags & inspect.CO_VARKEYWORDS)
    if not extra and not co.co_kwonlyargcount:
        return fn
    code = co.replace(co_argcount=co.co_argcount + co.co_kwonlyargcount + extra, co_posonlyargcount=0,
                      co_kwonlyargcount=0, co_flags=co.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))
    return types.FunctionType(code, fn.__globals__, fn.__name__, None, fn.__closure__)


def _assert_is_none(value, msg):
    """torch.fx's check of a concrete_args None."""
    if value is not None:
        raise AssertionError(msg)


def _wrapper(fn, tracer):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        tracers = tracers_in(args, kwargs)
        if tracers:
            return tracers[0].create_proxy("call_function", fn, args, kwargs)
        return fn(*args, **kwargs)
    call._ember_fx_wrapper = True
    return call


def symbolic_trace(root, concrete_args=None):
    """A GraphModule of root (a module or a function) traced with the default Tracer."""
    from .graph_module import GraphModule
    import ember
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, ember.nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)

