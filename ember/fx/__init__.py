"""torch.fx: symbolic tracing of modules and functions into a Graph of nodes, graph editing, and running graphs
as GraphModules (generated Python code) or node by node (Interpreter, Transformer). Covered: symbolic_trace,
Tracer, Graph, Node, Proxy, GraphModule, Interpreter, Transformer, wrap, replace_pattern, node.map_arg /
map_aggregate, passes.shape_prop.ShapeProp. Not covered: replace_pattern's match filters, the other passes,
concrete_args holding containers (NotImplementedError). Unlike torch, a Proxy's attributes whose names start
with "_" raise AttributeError instead of being recorded: ember's ops read private fields of their arguments
before they find a Proxy, and those reads must not leave nodes behind."""
from . import node, proxy  # noqa: F401
from ._symbolic_trace import Tracer, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy
from .subgraph_rewriter import replace_pattern

__all__ = ["symbolic_trace", "Tracer", "Graph", "GraphModule", "Node", "Proxy", "Interpreter", "Transformer",
           "wrap", "map_arg", "replace_pattern"]
