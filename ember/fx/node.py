"""torch.fx.Node: one operation of a Graph (placeholder, get_attr, call_function, call_method, call_module,
output), its arguments (which may hold other nodes) and its users; and map_arg / map_aggregate."""
import builtins
import operator

Target = object  # torch.fx.node.Target: a callable or a string
_OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root")


def map_aggregate(a, fn):
    """fn applied to every leaf of a nested tuple / list / dict / slice structure, the structure rebuilt."""
    if type(a) is tuple:
        return tuple(map_aggregate(x, fn) for x in a)
    if isinstance(a, tuple) and hasattr(a, "_fields"):  # a namedtuple keeps its type
        return type(a)(*(map_aggregate(x, fn) for x in a))
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """fn applied to every Node inside the nested argument a."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def ember_namespace(fn):
    """'ember' or 'ember.nn.functional' when fn is that namespace's public function of its name, else None: how
    graphs print, generate and pickle ember's functions (their guard wrappers' qualified names lead elsewhere)."""
    name = getattr(fn, "__name__", None)
    if name is None or isinstance(fn, str):
        return None
    import ember
    for path, namespace in (("ember", ember), ("ember.nn.functional", ember.nn.functional)):
        if getattr(namespace, name, None) is fn:
            return path
    return None


def _qualified_name(fn):
    """'operator.add', 'ember.relu', 'builtins.getattr': how a graph prints a call_function target."""
    if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
        return f"builtins.{fn.__name__}"
    if getattr(operator, getattr(fn, "__name__", ""), None) is fn:
        return f"operator.{fn.__name__}"
    path = ember_namespace(fn)
    if path is not None:
        return f"{path}.{fn.__name__}"
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    return f"{module}.{name}" if module else name


class Node:
    """One operation in a Graph: `op` says what kind, `target` what (a callable, a method or attribute name,
    a module path), args/kwargs its operands (nodes among them), `users` the nodes that read its value."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPS:
            raise ValueError(f"unknown node op {op!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self.users = {}
        self.meta = {}
        self._input_nodes = {}
        self._args = ()
        self._kwargs = {}
        self._prev = self
        self._next = self
        self._erased = False
        self._update_args_kwargs(args, kwargs)

    # -- list links -------------------------------------------------------------------------------------------
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def prepend(self, x):
        """Move (or insert) node x just before this one."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x):
        """Move (or insert) node x just after this one."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # -- arguments --------------------------------------------------------------------------------------------
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, k)

    def _update_args_kwargs(self, args, kwargs):
        args = map_aggregate(tuple(args), lambda x: x)
        kwargs = dict(map_aggregate(dict(kwargs), lambda x: x))
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        map_arg((args, kwargs), self._input_nodes.setdefault)
        for n in self._input_nodes:
            n.users.setdefault(self)
        self._args = args
        self._kwargs = kwargs

    @property
    def all_input_nodes(self):
        """The nodes among args and kwargs, each once, in order."""
        return list(self._input_nodes)

    def update_arg(self, idx, arg):
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key, arg):
        self.kwargs = {**self.kwargs, key: arg}

    def replace_all_uses_with(self, replace_with, delete_user_cb=None, *, propagate_meta=False):
        """Every user reads replace_with instead of this node (the users for which delete_user_cb is true, when
        given); returns the users changed."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        changed = [u for u in list(self.users) if delete_user_cb is None or delete_user_cb(u)]
        for user in changed:
            user._update_args_kwargs(*map_arg((user.args, user.kwargs), lambda n: replace_with if n is self else n))
        return changed

    def replace_input_with(self, old_input, new_input):
        """This node reads new_input wherever it read old_input."""
        self._update_args_kwargs(*map_arg((self.args, self.kwargs), lambda n: new_input if n is old_input else n))

    def is_impure(self, impure_random=True):
        """Placeholders, outputs and calls of known side-effecting functions or in-place methods stay in
        eliminate_dead_code (impure_random: torch's random ops; ember marks none, so it changes nothing)."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_method" and isinstance(self.target, str) and self.target.endswith("_") \
                and not self.target.endswith("__"):
            return True
        if self.op == "call_function" and getattr(self.target, "_fx_impure", False):
            return True
        if self.op == "call_module":
            mod = self.graph.owning_module
            if mod is not None:
                try:
                    return bool(getattr(_fetch(mod, self.target), "_is_impure", False))
                except AttributeError:
                    return False
        return False

    # -- printing ---------------------------------------------------------------------------------------------
    def __repr__(self):
        return self.name

    def format_node(self, placeholder_names=None, maybe_return_typename=None, *, include_tensor_metadata=False):
        """One line of str(graph), as torch prints it (placeholder_names, when a list, collects placeholder
        names instead; the other options change nothing here)."""
        if placeholder_names is not None and self.op == "placeholder":
            placeholder_names.append(self.target)
            return None
        if self.op == "placeholder":
            default = f"(default={self.args[0]})" if self.args else ""
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"%{self.name} : [num_users={len(self.users)}] = get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {self.args[0]}"
        target = _qualified_name(self.target) if callable(self.target) else self.target
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={target}]"
                f"(args = {_fmt(self.args)}, kwargs = {_fmt(self.kwargs)})")


def _fmt(a):
    if isinstance(a, Node):
        return f"%{a.name}"
    if type(a) is tuple:
        inner = ", ".join(_fmt(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_fmt(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in a.items()) + "}"
    return str(a)


def _fetch(root, qualname):
    obj = root
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj
