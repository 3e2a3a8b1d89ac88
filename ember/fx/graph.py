"""torch.fx.Graph: the nodes of a traced program in order, their names, editing (insertion points, erasure,
copies), checks (lint), dead-code elimination, and the Python source a GraphModule runs (python_code)."""
import builtins
import contextlib
import inspect
import keyword
import math
import operator
import re

from .node import Node, _fmt, _qualified_name, ember_namespace, map_arg

_ILLEGAL = {k: object() for k in keyword.kwlist}
_ILLEGAL.update(builtins.__dict__)
_ILLEGAL.update((k, object()) for k in ("torch", "ember", "device", "inf", "nan"))  # names the generated code reads
_SNAKE = re.compile(r"(?<=[a-z])([A-Z])")

# operator targets written as Python syntax in the generated code
_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
           operator.mod: "%", operator.pow: "**", operator.matmul: "@", operator.lshift: "<<", operator.rshift: ">>",
           operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.eq: "==", operator.ne: "!=",
           operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}


def _snake_case(s):
    return _SNAKE.sub(r"_\1", s).lower()


class _Namespace:
    """Unique, legal Python names for nodes: torch's scheme (sanitized, then name, name_1, name_2 ...; a
    keyword or a builtin's name gets a suffix too, so a placeholder `input` is named input_1)."""

    def __init__(self):
        self._used = set()
        self._count = {}

    def create_name(self, candidate, obj=None):
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        m = re.match(r"(.*)_(\d+)$", candidate)
        base, num = (candidate, None) if m is None else (m.group(1), int(m.group(2)))
        candidate = base if num is None else f"{base}_{num}"
        if not num:
            num = self._count.get(base, 0)
        while candidate in self._used or self._illegal(candidate, obj):
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._count[base] = num
        return candidate

    @staticmethod
    def _illegal(name, obj):
        return name in _ILLEGAL and obj is not _ILLEGAL[name]


class _NodeList:
    """graph.nodes: iterable (forward and reversed) while nodes are erased or inserted during the walk."""

    def __init__(self, graph, reverse=False):
        self.graph = graph
        self.reverse = reverse

    def __len__(self):
        return self.graph._len

    def __iter__(self):
        root = self.graph._root
        cur = root._prev if self.reverse else root._next
        while cur is not root:
            nxt = cur._prev if self.reverse else cur._next
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return iter(_NodeList(self.graph, not self.reverse))

    def __repr__(self):
        return repr(list(self))


class PythonCode:
    """Generated source and the globals it needs."""

    def __init__(self, src, globals, _lineno_map=None, _prologue_start=0):
        self.src = src
        self.globals = globals
        self._lineno_map = _lineno_map
        self._prologue_start = _prologue_start


class Graph:
    """A traced program: nodes in execution order, a doubly linked list behind `nodes`."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._namespace = _Namespace()
        self._insert = self._root.prepend
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def nodes(self):
        return _NodeList(self)

    # -- building ---------------------------------------------------------------------------------------------
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """A new node at the insertion point (the end unless inserting_before/after says otherwise)."""
        args = () if args is None else tuple(args)
        kwargs = {} if kwargs is None else dict(kwargs)
        candidate = name if name is not None else self._target_to_str(target)
        name = self._namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(n)
        self._len += 1
        return n

    @staticmethod
    def _target_to_str(target):
        if callable(target):
            op = target.__name__
        else:
            op = str(target)
            if op.startswith("__") and op.endswith("__"):
                op = op[2:-2]
        return _snake_case(op)

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None, name=None):
        return self.create_node("call_function", the_function, args, kwargs, name, type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    @contextlib.contextmanager
    def _inserting(self, insert):
        old = self._insert
        self._insert = insert
        try:
            yield
        finally:
            self._insert = old

    def inserting_before(self, n=None):
        """Context manager: new nodes go just before n (the start of the graph when n is None)."""
        if n is None:
            return self.inserting_after(self._root)
        return self._inserting(n.prepend)

    def inserting_after(self, n=None):
        """Context manager: new nodes go just after n, in order (the end of the graph when n is None)."""
        if n is None:
            return self.inserting_before(self._root)
        return self._inserting(_After(n))

    def erase_node(self, to_erase):
        """Remove a node that nobody reads."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} users in the "
                               f"graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def node_copy(self, node, arg_transform=lambda x: x):
        """A copy of node (from any graph) in this one, its node arguments mapped by arg_transform."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        new = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        new.meta = dict(node.meta)
        return new

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copy every node of g but its output into this graph (val_map: g's nodes -> new ones, filled in);
        returns what g's output returned, mapped."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                out = map_arg(node.args[0], lambda n: val_map[n])
                return (out, node) if return_output_node else out
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def find_nodes(self, *, op, target=None, sort=True):
        """The nodes of this op (and target), in graph order (sort= is accepted: they are always in order)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # -- checks -----------------------------------------------------------------------------------------------
    def lint(self):
        """Check the graph: each node's operands are earlier nodes of this graph, names are unique, ops known,
        and every get_attr / call_module target exists in the owning module."""
        seen, names = set(), set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node {node} does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            for arg in node.all_input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to this Graph, but was "
                                       f"used as an argument! If you are copying nodes from another graph, make sure "
                                       f"to use ``arg_transform`` on node_copy() to remap values\n{self}")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                                       f"Please check that Nodes in the graph are topologically ordered\n{self}")
            seen.add(node)
            names.add(node.name)
            if self.owning_module is not None and node.op in ("get_attr", "call_module"):
                obj = self.owning_module
                for i, atom in enumerate(node.target.split(".")):
                    if not hasattr(obj, atom):
                        raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                           f"{atom} of {'.'.join(node.target.split('.')[:i]) or 'the root'}")
                    obj = getattr(obj, atom)

    def eliminate_dead_code(self, is_impure_node=None):
        """Erase the nodes whose values nobody reads and that have no side effect, last first; True if any."""
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    # -- printing ---------------------------------------------------------------------------------------------
    def __str__(self):
        lines = ["graph():"] + ["    " + n.format_node() for n in self.nodes]
        return "\n".join(lines)

    def print_tabular(self):
        """The nodes as a table (opcode, name, target, args, kwargs)."""
        rows = [[n.op, n.name, _qualified_name(n.target) if callable(n.target) else str(n.target),
                 _fmt(n.args), _fmt(n.kwargs)] for n in self.nodes]
        try:
            from tabulate import tabulate
        except ImportError:
            header = ["opcode", "name", "target", "args", "kwargs"]
            widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]
            lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(),
                     "  ".join("-" * w for w in widths)]
            lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
            print("\n".join(lines))
            return
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

    def python_code(self, root_module, *, verbose=False, include_stride=False, include_device=False, colored=False,
                    expanded_def=False, record_func=False, additional_meta=None):
        """The source of forward(self, <placeholders>) running the nodes in order (each value dropped after its
        last use, as torch's generated code does), and the globals it reads. The formatting options are accepted
        and change nothing: ember's nodes carry no tensor metadata to annotate."""
        gen = _CodeGen(root_module)
        return gen.generate(self)


class _After:
    """inserting_after's insertion point: each new node after the previous one."""

    def __init__(self, node):
        self.node = node

    def __call__(self, new):
        self.node.append(new)
        self.node = new


class _CodeGen:
    def __init__(self, root_module):
        self.root = root_module
        self.globals = {"inf": math.inf, "nan": math.nan, "NoneType": type(None)}
        self.names = {}

    def _global(self, obj, hint):
        for name, value in self.globals.items():
            if value is obj:
                return name
        name = re.sub(r"[^0-9a-zA-Z_]", "_", hint) or "_g"
        base, k = name, 0
        while name in self.globals or keyword.iskeyword(name) or name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.globals[name] = obj
        return name

    def _fn_name(self, fn):
        name = getattr(fn, "__name__", None)
        path = ember_namespace(fn)
        if path is not None:
            import ember
            self.globals["ember"] = ember
            return f"{path}.{name}"
        if name is not None and getattr(builtins, name, None) is fn:
            return name
        return self._global(fn, name or "fn")

    def arg(self, a):
        if isinstance(a, Node):
            return a.name
        if type(a) is tuple:
            inner = ", ".join(self.arg(x) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.arg(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {self.arg(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.arg(a.start)}, {self.arg(a.stop)}, {self.arg(a.step)})"
        if a is None or isinstance(a, (bool, int, str)) or a is Ellipsis:
            return repr(a)
        if isinstance(a, float):
            return repr(a) if math.isfinite(a) else ("inf" if a > 0 else "-inf" if a < 0 else "nan")
        return self._global(a, type(a).__name__.lower() + "_const")

    def _attr_path(self, qualname):
        out = self.root
        for atom in qualname.split("."):
            out = f"{out}.{atom}" if atom.isidentifier() and not keyword.iskeyword(atom) else \
                f"getattr({out}, {atom!r})"
        return out

    def _call_args(self, args, kwargs):
        parts = [self.arg(a) for a in args] + [f"{k} = {self.arg(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def generate(self, graph):
        nodes = list(graph.nodes)
        self.names = {n.name for n in nodes}
        last_use = {}
        for n in nodes:
            for a in n.all_input_nodes:
                last_use[a] = n
        frees = {}
        for value, user in last_use.items():
            frees.setdefault(user, []).append(value)
        params, body = [], []
        for n in nodes:
            line = self._line(n, params)
            if line is None:
                continue
            dead = [v.name for v in frees.get(n, ()) if n.op != "output"]
            if dead:
                line += ";  " + " = ".join(dead) + " = None"
            body.append("    " + line)
        if not any(n.op == "output" for n in nodes):
            body.append("    return None")
        src = f"\n\n\ndef forward({', '.join([self.root] + params)}):\n" + "\n".join(body) + "\n    "
        return PythonCode(src, dict(self.globals), None)

    def _line(self, n, params):
        if n.op == "placeholder":
            target = n.target
            if target.startswith("*"):
                params.append(target)
                target = target.lstrip("*")
            else:
                params.append(f"{target} = {self.arg(n.args[0])}" if n.args else target)
            return None if n.name == target else f"{n.name} = {target}"
        if n.op == "get_attr":
            return f"{n.name} = {self._attr_path(n.target)}"
        if n.op == "call_module":
            return f"{n.name} = {self._attr_path(n.target)}({self._call_args(n.args, n.kwargs)})"
        if n.op == "call_method":
            obj, *rest = n.args
            return f"{n.name} = {self.arg(obj)}.{n.target}({self._call_args(rest, n.kwargs)})"
        if n.op == "call_function":
            t = n.target
            if t in _BINARY and len(n.args) == 2 and not n.kwargs:
                return f"{n.name} = {self.arg(n.args[0])} {_BINARY[t]} {self.arg(n.args[1])}"
            if t in _UNARY and len(n.args) == 1 and not n.kwargs:
                return f"{n.name} = {_UNARY[t]}{self.arg(n.args[0])}"
            if t is operator.getitem and len(n.args) == 2 and not n.kwargs:
                return f"{n.name} = {self.arg(n.args[0])}[{self.arg(n.args[1])}]"
            if t is builtins.getattr and len(n.args) == 2 and isinstance(n.args[1], str) \
                    and n.args[1].isidentifier() and not n.kwargs:
                return f"{n.name} = {self.arg(n.args[0])}.{n.args[1]}"
            return f"{n.name} = {self._fn_name(t)}({self._call_args(n.args, n.kwargs)})"
        if n.op == "output":
            return f"return {self.arg(n.args[0])}"
        raise RuntimeError(f"unknown node op {n.op!r}")


# ---- pickling: a graph's ember function targets travel by name ---------------------------------------------

class _NodeRef:
    """A node argument while a graph is pickled: the index of the node it names."""
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def __reduce__(self):
        return (_NodeRef, (self.index,))


def _target_ref(target):
    """A picklable stand-in for a call_function target: ember's public functions by name (their guard
    wrappers are not importable by their own qualified names), anything else as it is."""
    path = ember_namespace(target)
    return target if path is None else ("__ember_function__", path, target.__name__)


def _target_of(ref):
    if isinstance(ref, tuple) and len(ref) == 3 and ref[0] == "__ember_function__":
        import importlib
        return getattr(importlib.import_module(ref[1]), ref[2])
    return ref


def _graph_getstate(self):
    nodes = list(self.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    return {"nodes": [(n.name, n.op, _target_ref(n.target), map_arg(n.args, lambda a: _NodeRef(index[a])),
                       map_arg(n.kwargs, lambda a: _NodeRef(index[a])), n.meta) for n in nodes]}


def _graph_setstate(self, state):
    Graph.__init__(self)
    made = []

    def back(a):
        from .node import map_aggregate
        return map_aggregate(a, lambda x: made[x.index] if isinstance(x, _NodeRef) else x)
    for name, op, target, args, kwargs, meta in state["nodes"]:
        node = self.create_node(op, _target_of(target), back(args), back(kwargs), name)
        node.meta = meta
        made.append(node)


Graph.__getstate__ = _graph_getstate
Graph.__setstate__ = _graph_setstate
