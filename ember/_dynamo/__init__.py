"""torch._dynamo, the parts scripts touch (config flags, reset, disable, mark_dynamic): ember has no
dynamo, so flags are recorded and read back with torch's defaults and change nothing."""
from .. import compiler as _compiler
from .._compile import OptimizedModule  # noqa: F401
from .._compile import InvalidBackend  # noqa: F401
from . import config  # noqa: F401

disable = _compiler.disable
is_compiling = _compiler.is_compiling
reset = _compiler.reset
allow_in_graph = _compiler.allow_in_graph
assume_constant_result = _compiler.assume_constant_result
set_stance = _compiler.set_stance


def list_backends(exclude_tags=("debug", "experimental")):
    """torch._dynamo.list_backends: the names ember.compile accepts."""
    return _compiler.list_backends(exclude_tags)


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None):
    """No shapes are specialised in ember: a no-op."""


def maybe_mark_dynamic(t, index):
    """No shapes are specialised in ember: a no-op."""


def mark_static(t, index=None):
    """No shapes are specialised in ember: a no-op."""


def mark_static_address(t, guard=True):
    """No CUDA graphs in ember: a no-op."""


def graph_break():
    """No graph to break in ember: a no-op."""


def is_dynamo_supported():
    """False: ember has no dynamo (code that checks this takes its eager path)."""
    return False


def is_inductor_supported():
    """False: ember has no inductor."""
    return False
