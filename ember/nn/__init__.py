"""ember.nn: Module, Parameter, layers, functional, init, utils (torch.nn)."""
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
from . import functional, init, parameter, utils  # noqa: F401
