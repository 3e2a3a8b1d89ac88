"""torch.fx.GraphModule: a Module that runs a Graph, as Python source generated from it (`code`), holding the
submodules, parameters and buffers the graph's get_attr and call_module nodes name."""
import linecache

from ..nn.modules.module import Module
from .graph import Graph

_count = [0]


def _copy_attr(src, dst, target):
    """dst.<target> = src.<target>, creating empty modules along the dotted path."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(src, item)
        t = getattr(dst, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(dst, item, t)
        src, dst = f, t
    orig = getattr(src, field)
    if field in getattr(src, "_buffers", {}):
        dst.register_buffer(field, orig)
    else:  # submodules, parameters and plain tensor attributes (_tensor_constant0)
        setattr(dst, field, orig)


def _assign_attr(obj, dst, target):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(dst, item, None)
        if t is None:
            t = Module()
            setattr(dst, item, t)
        dst = t
    setattr(dst, field, obj)


class GraphModule(Module):
    """A Module whose forward is generated from `graph` (recompile() after editing the graph)."""

    def __new__(cls, *args, **kwargs):
        if cls is GraphModule:  # each instance its own class: forward is generated per graph, as in torch
            cls = type("GraphModule", (GraphModule,), {})
        return super().__new__(cls)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was "
                                           f"not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph

    @property
    def graph(self):
        return self._graph

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph, got {type(g)}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        return self._code

    def recompile(self):
        """Generate forward anew from the graph (after editing it)."""
        code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = code.src
        _count[0] += 1
        filename = f"<eval_with_key>.{_count[0]}"
        linecache.cache[filename] = (len(code.src), None, code.src.splitlines(True), filename)
        namespace = dict(code.globals)
        exec(compile(code.src, filename, "exec"), namespace)
        type(self).forward = namespace["forward"]
        return code

    def print_readable(self, print_output=True, include_stride=False, include_device=False, colored=False, *,
                       fast_sympy_print=False, expanded_def=False, additional_meta=None):
        """The generated code as a class definition (printed unless print_output=False; the formatting
        options change nothing: ember's nodes carry no tensor metadata)."""
        text = f"class {type(self).__name__}(ember.nn.Module):" + self._code.replace("\n", "\n    ")
        if print_output:
            print(text)
        return text

    def __str__(self):
        return super().__str__() + "\n\n\n" + self._code

    def __reduce__(self):
        """Pickled (and deep-copied) as its module state and its graph: the per-instance class is made anew,
        named GraphModule, as torch's loaded and copied GraphModules are."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        return (_rebuild, (state, self._graph))

    def delete_all_unused_submodules(self):
        used = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                for i in range(1, len(parts) + 1):
                    used.add(".".join(parts[:i]))
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                *prefix, field = name.split(".")
                owner = self
                for p in prefix:
                    owner = getattr(owner, p, None)
                if owner is not None and field in owner._modules:
                    del owner._modules[field]

def _rebuild(state, graph):
    """A GraphModule from what __reduce__ saved."""
    gm = GraphModule.__new__(GraphModule)
    gm.__dict__.update(state)
    gm.graph = graph
    return gm
