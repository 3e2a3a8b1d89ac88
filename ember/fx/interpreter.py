"""torch.fx.Interpreter and Transformer: run a GraphModule's graph node by node (each node kind a method to
override), or re-trace it into a new graph."""
import inspect

from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate, map_arg
from .proxy import Proxy
from ._symbolic_trace import Tracer


_NO_INPUT = object()  # placeholder(): run() was given fewer inputs than the graph has


def _values_freed_by(graph):
    """For each node, the inputs it is the final reader of: once it has run, run() drops their values from env."""
    final_reader = {}
    for reader in graph.nodes:
        for source in reader.all_input_nodes:
            final_reader[source] = reader
    freed = {}
    for reader in reversed(graph.nodes):  # torch fills its dict from the end of the graph
        done = [source for source in reader.all_input_nodes if final_reader[source] is reader]
        if done:
            freed[reader] = done
    return freed


class Interpreter:
    """Runs module.graph one node at a time: run_node calls the method named after the node's op
    (placeholder, get_attr, call_function, call_method, call_module, output) with its evaluated arguments."""

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = module.graph if graph is None else graph
        self.env = {}
        self.garbage_collect_values = garbage_collect_values
        self.user_to_last_uses = _values_freed_by(self.graph) if garbage_collect_values else {}

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """The graph's output for these inputs; nodes already in initial_env are not run again."""
        self.env = {} if initial_env is None else initial_env
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            self._forget_dead_values(node)
            if node.op == "output":
                return self.env[node]
        return None

    def _forget_dead_values(self, node):
        """Drop from env the values no node after this one reads (only with garbage_collect_values)."""
        if not self.garbage_collect_values:
            return
        for dead in self.user_to_last_uses.get(node, ()):
            del self.env[dead]

    def boxed_run(self, args_list):
        """run() with the inputs passed in a list that is emptied, so the caller holds no reference to them."""
        inputs = [node for node in self.graph.nodes if node.op == "placeholder"]
        if len(args_list) != len(inputs):
            detail = "extra arguments" if len(args_list) > len(inputs) else "missing arguments"
            raise RuntimeError(f"Interpreter.boxed_run expected {len(inputs)} arguments for placeholders "
                               f"but received {len(args_list)} ({detail})")
        env = dict(zip(inputs, args_list))
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n):
        """Evaluate one node: dispatch to the method named after its op."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        handler = getattr(self, n.op)
        return handler(n.target, args, kwargs)

    def placeholder(self, target, args, kwargs):
        """The next input passed to run() (all the rest for a *args placeholder), else the default in args."""
        if target.startswith("*"):
            return list(self.args_iter)
        value = next(self.args_iter, _NO_INPUT)
        if value is not _NO_INPUT:
            return value
        if not args:
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!")
        return args[0]

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        receiver = args[0]
        return getattr(receiver, target)(*args[1:], **kwargs)

    def call_module(self, target, args, kwargs):
        module = self.fetch_attr(target)
        return module(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    def fetch_attr(self, target):
        """The attribute of self.module at the dotted path target."""
        obj = self.module
        walked = []
        for name in target.split("."):
            walked.append(name)
            if not hasattr(obj, name):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(walked)}")
            obj = getattr(obj, name)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        """n's args and kwargs with every node in them replaced by its value in env."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        """args with each node replaced by its computed value (n only names the reader in the error)."""
        env = self.env

        def value_of(ref):
            if ref not in env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {ref}! Run Graph.lint() to diagnose such "
                                   f"issues")
            return env[ref]
        return map_arg(args, value_of)


class _RetraceTracer(Tracer):
    """Records into a given graph and treats every submodule as a leaf (call_module nodes stay calls)."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph

    def is_leaf_module(self, m, qualname):
        return True


def _node_or_value(a):
    return a.node if isinstance(a, Proxy) else a


class Transformer(Interpreter):
    """Interpreter whose methods build a new graph (on Proxies): transform() returns it as a GraphModule.
    Override call_function / call_module ... to rewrite nodes."""

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _RetraceTracer(self.new_graph)
        self.tracer.root = module

    def _record(self, op, target, args, kwargs):
        """A Proxy for a new op node in new_graph."""
        return self.tracer.create_proxy(op, target, args, kwargs)

    def placeholder(self, target, args, kwargs):
        default = args[0] if args else inspect.Signature.empty
        node = self.new_graph.placeholder(target, default_value=default)
        return Proxy(node, self.tracer)

    def get_attr(self, target, args, kwargs):
        return self._record("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        module = self.fetch_attr(target)
        return self.tracer.call_module(module, module.forward, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self._record("call_function", target, args, kwargs)

    def transform(self):
        """Run the graph on Proxies and wrap what was recorded, with self.module's attributes, as a GraphModule."""
        outcome = super().run(enable_io_processing=False)
        if outcome is not None:
            self.new_graph.output(map_aggregate(outcome, _node_or_value))
        return GraphModule(self.module, self.new_graph)
