"""torch.compiler: ember never compiles, so these are the answers and no-ops of code that runs eagerly."""
import contextlib

from .._compile import _BACKENDS
from .._compile import compile as _compile


def compile(*args, **kwargs):
    """torch.compiler.compile: the same as ember.compile (an eager pass-through)."""
    return _compile(*args, **kwargs)


def disable(fn=None, recursive=True, *, reason=None):
    """torch.compiler.disable: `fn` already runs eagerly in ember, so it is returned unchanged (decorator
    with or without arguments)."""
    if fn is None:
        return lambda f: f
    return fn


def is_compiling():
    """False: ember never traces a program (torch is True only while dynamo traces)."""
    return False


def is_dynamo_compiling():
    """False: ember has no dynamo."""
    return False


def is_exporting():
    """False: ember has no torch.export."""
    return False


def reset():
    """No compiled code to forget: a no-op."""


def allow_in_graph(fn):
    """Returns fn unchanged (there is no graph)."""
    return fn


def assume_constant_result(fn):
    """Returns fn unchanged (there is no graph)."""
    return fn


def list_backends(exclude_tags=("debug", "experimental")):
    """The backend names ember.compile accepts (each runs eagerly), as torch lists its defaults."""
    if exclude_tags == ():
        return sorted(_BACKENDS)
    return ["cudagraphs", "inductor", "openxla", "tvm"]


def cudagraph_mark_step_begin():
    """No CUDA graphs in ember: a no-op."""


class _NoOp(contextlib.ContextDecorator):
    """A context manager and decorator that changes nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def set_stance(stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
    """Every stance runs eagerly in ember: a context manager / decorator that changes nothing."""
    return _NoOp()
