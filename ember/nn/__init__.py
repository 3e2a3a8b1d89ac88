"""ember.nn: Module, Parameter, layers, functional, init, utils (torch.nn)."""
from .modules import *  # noqa: F401,F403
from .modules import Module
from .parameter import Buffer, Parameter
from . import functional, init, parameter, utils  # noqa: F401
