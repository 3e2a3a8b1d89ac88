"""nn.Module: attribute routing of parameters, buffers and submodules; traversal; one _apply;
state_dict; hooks. See https://pytorch.org/docs/stable/generated/torch.nn.Module.html

Note [Module attribute routing]: parameters, buffers and children live in the dicts
_parameters, _buffers and _modules, not in __dict__, so __getattr__ (only called when
normal lookup fails) finds them and __setattr__ files an assigned value by its type.
"""
import warnings
from collections import OrderedDict

from ... import _dtype as D
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..parameter import Buffer, Parameter
from ._module_hooks import (_HooksMixin, _global_backward_hooks, _global_backward_pre_hooks,  # noqa: F401
                            _global_buffer_registration_hooks, _global_forward_hooks, _global_forward_pre_hooks,
                            _global_module_registration_hooks, _global_parameter_registration_hooks,
                            register_module_buffer_registration_hook, register_module_forward_hook,
                            register_module_forward_pre_hook, register_module_full_backward_hook,
                            register_module_full_backward_pre_hook, register_module_module_registration_hook,
                            register_module_parameter_registration_hook)
from ._module_state import _EXTRA_STATE_KEY_SUFFIX, _IncompatibleKeys, _StateDictMixin  # noqa: F401

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_buffer_registration_hook", "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]


def _addindent(s, num_spaces):
    """Indent every line of s but the first by num_spaces."""
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(num_spaces * " " + line for line in lines)


def _typename(obj):
    """torch.typename: 'torch.FloatTensor' for tensors, the qualified class name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


def _forward_unimplemented(self, *input):
    """Module.forward until a subclass defines it."""
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module(_HooksMixin, _StateDictMixin):
    """Base class of all layers. Subclasses call super().__init__() and define forward()."""

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if self.call_super_init is False and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        setattr_ = object.__setattr__  # skip our own __setattr__ while the dicts do not exist yet
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_backward_pre_hooks", OrderedDict())
        setattr_(self, "_backward_hooks", OrderedDict())
        setattr_(self, "_is_full_backward_hook", None)
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_forward_hooks_always_called", OrderedDict())
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_state_dict_hooks", OrderedDict())
        setattr_(self, "_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_post_hooks", OrderedDict())
        setattr_(self, "_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    # ---- registration ---------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer: module state that is not a parameter (saved in state_dict if persistent)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        for hook in _global_buffer_registration_hooks.values():
            out = hook(self, name, tensor)
            if out is not None:
                tensor = out
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter (a Parameter or None) reachable as an attribute."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        for hook in _global_parameter_registration_hooks.values():
            out = hook(self, name, param)
            if out is not None:
                param = out
        self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module (or None) reachable as an attribute."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        for hook in _global_module_registration_hooks.values():
            out = hook(self, name, module)
            if out is not None:
                module = out
        self._modules[name] = module

    def register_module(self, name, module):
        self.add_module(name, module)

    # ---- attribute routing (Note [Module attribute routing]) --------------------------
    def __getattr__(self, name):
        d = self.__dict__
        if "_parameters" in d:
            params = d["_parameters"]
            if name in params:
                return params[name]
        if "_buffers" in d:
            buffers = d["_buffers"]
            if name in buffers:
                return buffers[name]
        if "_modules" in d:
            modules = d["_modules"]
            if name in modules:
                return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _remove_from(name, d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            _remove_from(name, d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            for hook in _global_module_registration_hooks.values():
                out = hook(self, name, value)
                if out is not None:
                    value = out
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            for hook in _global_module_registration_hooks.values():
                out = hook(self, name, value)
                if out is not None:
                    value = out
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = dir(self.__class__) + list(self.__dict__) + list(self._parameters) + list(self._modules) + \
            list(self._buffers)
        return sorted(k for k in keys if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                     "_forward_hooks_always_called", "_state_dict_hooks", "_state_dict_pre_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_backward_pre_hooks"):
            if name not in self.__dict__:
                self.__dict__[name] = OrderedDict()
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    # ---- lookup by dotted path --------------------------------------------------------
    def _get_name(self):
        return self.__class__.__name__

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    # ---- traversal ------------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, member) over self (and descendants); a shared member appears once."""
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse=True):
        """The parameters of self (and of every submodule if recurse), each once."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, parameter) pairs, e.g. ("layers.0.weight", p)."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """The buffers of self (and of every submodule if recurse), each once."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, buffer) pairs."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        """The direct submodules, each once."""
        for _, module in self.named_children():
            yield module

    def named_children(self):
        """(name, module) for the direct submodules, each once."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate=True):
        """self and every submodule, pre-order."""
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Pre-order walk of the module tree with dotted names (iterative, no recursion limit)."""
        if memo is None:
            memo = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if module in memo:
                continue
            if remove_duplicate:
                memo.add(module)
            yield name, module
            children = [(name + ("." if name else "") + k, m) for k, m in module._modules.items() if m is not None]
            stack.extend(reversed(children))

    # ---- modes and gradients --------------------------------------------------------
    def train(self, mode=True):
        """Set training mode on self and every submodule (affects Dropout, BatchNorm ...)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """train(False)."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on every parameter (e.g. to freeze a model)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all parameters: to None (default) or to zeros in place."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def apply(self, fn):
        """fn(module) for every submodule (children first), then self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- conversions: everything goes through _apply --------------------------------
    def _apply(self, fn, recurse=True):
        """Replace every parameter's and buffer's data by fn(tensor); Parameter objects (and
        their .grad) keep their identity, so optimizers built earlier still see them."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                param_applied = fn(param)
            param.data = param_applied
            grad = param._grad
            if grad is not None:
                with no_grad():
                    grad_applied = fn(grad)
                grad.data = grad_applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """to(device) / to(dtype) / to(tensor) / to(device, dtype): casts only floating point and
        complex parameters and buffers."""
        from ..._ops.creation import parse_to_args
        device, dtype, _ = parse_to_args(args, dict(kwargs))
        if dtype is not None:
            if dtype.category < D.FLOAT:
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                f"dtype={dtype}")
            if dtype.category == D.COMPLEX:
                warnings.warn("Complex modules are a new feature under active development whose design may "
                              "change, and some modules might not work as expected when using complex tensors "
                              "as parameters or buffers.", stacklevel=2)

        fmt = kwargs.get("memory_format")

        def convert(t):
            if fmt is not None and t.dim() in (4, 5):  # torch converts only 4-d/5-d tensors
                return t.to(device, dtype if t._dtype.category >= D.FLOAT else None, memory_format=fmt)
            return t.to(device, dtype if t._dtype.category >= D.FLOAT else None)
        return self._apply(convert)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device=None, recurse=True):
        from ..._ops.creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def share_memory(self):
        """Move tensors to shared memory, where Tensor.share_memory_ is available."""
        return self._apply(lambda t: t.share_memory_() if hasattr(t, "share_memory_") else t)

    def compile(self, *args, **kwargs):
        """Module.compile: checks the arguments as torch does; the module keeps running eagerly and unchanged."""
        from ... import compile as _compile
        _compile(self, *args, **kwargs)

    # ---- calling --------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        # lean path: runs once per layer per step, so no hook machinery unless a hook exists
        if (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_forward_hooks or _global_forward_pre_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            return self._call_impl(*args, **kwargs)
        return self.forward(*args, **kwargs)

    # ---- repr -----------------------------------------------------------------------
    def extra_repr(self):
        """The module-specific part of repr, e.g. 'in_features=2, out_features=3, bias=True'."""
        return ""

    def __repr__(self):
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            child_lines.append("(" + key + "): " + _addindent(repr(module), 2))
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _remove_from(name, *dicts_or_sets):
    for d in dicts_or_sets:
        if name in d:
            if isinstance(d, dict):
                del d[name]
            else:
                d.discard(name)
