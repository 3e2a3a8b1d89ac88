"""nn.Module: attribute routing of parameters, buffers and submodules; traversal; one _apply;
state_dict; hooks. See https://pytorch.org/docs/stable/generated/torch.nn.Module.html

Note [Module attribute routing]: parameters, buffers and children live in the dicts
_parameters, _buffers and _modules, not in __dict__, so __getattr__ (only called when
normal lookup fails) finds them and __setattr__ files an assigned value by its type.

Helpers that need a module are plain functions here rather than methods, so that Module's
namespace (what hasattr, dir and attribute assignment see) holds only torch's names.
"""
import warnings
from collections import OrderedDict
from operator import methodcaller

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
from . import _module_state
from ._module_state import _StateDictMixin

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_buffer_registration_hook", "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

# importable from here, as from torch.nn.modules.module
_IncompatibleKeys = _module_state._IncompatibleKeys
_EXTRA_STATE_KEY_SUFFIX = _module_state._EXTRA_STATE_KEY_SUFFIX

# hook dicts that modules pickled by older versions may lack; __setstate__ adds them empty
_HOOK_DICTS_ADDED_LATER = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                           "_forward_hooks_always_called", "_state_dict_hooks", "_state_dict_pre_hooks",
                           "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_backward_pre_hooks")


def _addindent(s, num_spaces):
    """Indent every line of s but the first by num_spaces (nested reprs)."""
    head, newline, tail = s.partition("\n")
    if not newline:
        return s
    pad = " " * num_spaces
    return head + "\n" + "\n".join(pad + line for line in tail.split("\n"))


def _typename(obj):
    """torch.typename: 'torch.FloatTensor' for tensors, the qualified class name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    if cls.__module__ in ("builtins", None):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _forward_unimplemented(self, *input):
    """Module.forward until a subclass defines it."""
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


def _fresh_state():
    """The attributes a new Module starts with, in the order torch creates them."""
    return {
        "training": True,
        "_parameters": {}, "_buffers": {}, "_non_persistent_buffers_set": set(),
        "_backward_pre_hooks": OrderedDict(), "_backward_hooks": OrderedDict(), "_is_full_backward_hook": None,
        "_forward_hooks": OrderedDict(), "_forward_hooks_with_kwargs": OrderedDict(),
        "_forward_hooks_always_called": OrderedDict(),
        "_forward_pre_hooks": OrderedDict(), "_forward_pre_hooks_with_kwargs": OrderedDict(),
        "_state_dict_hooks": OrderedDict(), "_state_dict_pre_hooks": OrderedDict(),
        "_load_state_dict_pre_hooks": OrderedDict(), "_load_state_dict_post_hooks": OrderedDict(),
        "_modules": {},
    }


# ---- name checks and registration hooks shared by the register_* methods -----------------

def _require_string_name(kind, name):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")


def _require_plain_name(kind, name, dotted_detail=""):
    """Names are single path components: no dots, not empty."""
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."{dotted_detail}')
    if not name:
        raise KeyError(f'{kind} name can\'t be empty string ""')


def _require_free_name(module, name, store):
    """A name may be reused within its own kind, but must not hide another attribute."""
    if name not in store and hasattr(module, name):
        raise KeyError(f"attribute '{name}' already exists")


def _through_registration_hooks(hooks, module, name, value):
    """Pass value through the global registration hooks; each may return a replacement."""
    for hook in hooks.values():
        replacement = hook(module, name, value)
        if replacement is not None:
            value = replacement
    return value


def _forget(name, *stores):
    """Drop name from every dict or set given (before it is filed under another kind)."""
    for store in stores:
        if name not in store:
            continue
        if isinstance(store, dict):
            del store[name]
        else:
            store.discard(name)


# ---- __setattr__, one function per kind of member ----------------------------------------

def _set_parameter(module, name, value, params):
    if isinstance(value, Parameter):
        if params is None:
            raise AttributeError("cannot assign parameters before Module.__init__() call")
        _forget(name, module.__dict__, module._buffers, module._modules, module._non_persistent_buffers_set)
    elif value is not None:
        raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                        "(torch.nn.Parameter or None expected)")
    module.register_parameter(name, value)


def _set_child(module, name, value, children):
    if isinstance(value, Module):
        if children is None:
            raise AttributeError("cannot assign module before Module.__init__() call")
        _forget(name, module.__dict__, module._parameters, module._buffers, module._non_persistent_buffers_set)
    elif value is not None:
        raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                        "(torch.nn.Module or None expected)")
    children[name] = _through_registration_hooks(_global_module_registration_hooks, module, name, value)


def _set_buffer(module, name, value):
    if value is not None and not isinstance(value, Tensor):
        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                        "(torch.nn.Buffer, torch.Tensor or None expected)")
    # a Buffer says whether it persists; a plain tensor keeps the slot's current setting
    keep = value.persistent if isinstance(value, Buffer) else name not in module._non_persistent_buffers_set
    module.register_buffer(name, value, keep)


# ---- lookups -------------------------------------------------------------------------------

def _join(prefix, name):
    """Dotted path of name under prefix ('' prefix: name itself)."""
    return f"{prefix}.{name}" if prefix else name


def _owner_of(root, target):
    """(module holding the last component of the dotted target, that component)."""
    path, _, leaf = target.rpartition(".")
    owner = root.get_submodule(path)
    if not hasattr(owner, leaf):
        raise AttributeError(f"{owner._get_name()} has no attribute `{leaf}`")
    return owner, leaf


def _move_data(tensor, fn):
    """Give tensor the data of fn(tensor), keeping the tensor object itself."""
    with no_grad():
        converted = fn(tensor)
    tensor.data = converted


def _if_floating(method):
    """fn(t): t.method() for floating point tensors, t itself otherwise."""
    def cast(t):
        return getattr(t, method)() if t.is_floating_point() else t
    return cast


class Module(_HooksMixin, _StateDictMixin):
    """Base class of all layers. Subclasses call super().__init__() and define forward()."""

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if self.call_super_init is False:
            if kwargs:
                raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                                f"'{next(iter(kwargs))}'")
            if args:
                raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                                f"{len(args) + 1} were given")
        for attr, value in _fresh_state().items():
            object.__setattr__(self, attr, value)  # our __setattr__ needs these dicts to exist
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    # ---- registration ---------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer: module state that is not a parameter (saved in state_dict if persistent)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _require_string_name("buffer", name)
        _require_plain_name("buffer", name)
        _require_free_name(self, name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = _through_registration_hooks(_global_buffer_registration_hooks, self, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter (a Parameter or None) reachable as an attribute."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _require_string_name("parameter", name)
        _require_plain_name("parameter", name)
        _require_free_name(self, name, self._parameters)
        if param is not None:
            if not isinstance(param, Parameter):
                raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                                "(torch.nn.Parameter or None required)")
            if param.grad_fn is not None:
                raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must "
                                 f"be created explicitly. To express '{name}' as a function of another Tensor, "
                                 "compute the value in the forward() method.")
            param = _through_registration_hooks(_global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module (or None) reachable as an attribute."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        _require_string_name("module", name)
        _require_free_name(self, name, self._modules)
        _require_plain_name("module", name, f", got: {name}")
        self._modules[name] = _through_registration_hooks(_global_module_registration_hooks, self, name, module)

    def register_module(self, name, module):
        """Alias of add_module."""
        self.add_module(name, module)

    # ---- attribute routing (Note [Module attribute routing]) --------------------------
    def __getattr__(self, name):
        state = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            members = state.get(store)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        state = self.__dict__
        params, children, buffers = state.get("_parameters"), state.get("_modules"), state.get("_buffers")
        # an existing slot keeps its kind: assigning None to it empties the slot
        if isinstance(value, Parameter) or (params is not None and name in params):
            _set_parameter(self, name, value, params)
        elif isinstance(value, Module) or (children is not None and name in children):
            _set_child(self, name, value, children)
        elif isinstance(value, Buffer) or (buffers is not None and name in buffers):
            _set_buffer(self, name, value)
        else:
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
        names = [*dir(type(self)), *self.__dict__, *self._parameters, *self._modules, *self._buffers]
        return sorted(n for n in names if not n[0].isdigit())  # "0" of Sequential is no identifier

    def __setstate__(self, state):
        self.__dict__.update(state)
        for attr in _HOOK_DICTS_ADDED_LATER:
            self.__dict__.setdefault(attr, OrderedDict())
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    # ---- lookup by dotted path --------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def get_submodule(self, target):
        """The module at dotted path target ('' is self)."""
        if target == "":
            return self
        node = self
        for part in target.split("."):
            if not hasattr(node, part):
                raise AttributeError(f"{node._get_name()} has no attribute `{part}`")
            node = getattr(node, part)
            if not isinstance(node, Module):
                raise AttributeError(f"`{part}` is not an nn.Module")
        return node

    def set_submodule(self, target, module, strict=False):
        """Put module at dotted path target; with strict, the slot must already exist."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        path, _, leaf = target.rpartition(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        owner = self.get_submodule(path)
        present = hasattr(owner, leaf)
        if strict and not present:
            raise AttributeError(f"{owner._get_name()} has no attribute `{leaf}`")
        if present and not isinstance(getattr(owner, leaf), Module):
            raise AttributeError(f"`{leaf}` is not an nn.Module")
        setattr(owner, leaf, module)

    def get_parameter(self, target):
        """The parameter at dotted path target, e.g. 'layers.0.weight'."""
        owner, leaf = _owner_of(self, target)
        found = getattr(owner, leaf)
        if not isinstance(found, Parameter):
            raise AttributeError(f"`{leaf}` is not an nn.Parameter")
        return found

    def get_buffer(self, target):
        """The buffer at dotted path target."""
        owner, leaf = _owner_of(self, target)
        if leaf not in owner._buffers:
            raise AttributeError(f"`{leaf}` is not a buffer")
        return getattr(owner, leaf)

    # ---- traversal ------------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, member) for what get_members_fn(module) lists in self and, with recurse,
        in every descendant. None members are skipped; with remove_duplicate so are repeats."""
        if recurse:
            owners = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            owners = [(prefix, self)]
        seen = set()
        for owner_path, owner in owners:
            for name, member in get_members_fn(owner):
                if member is None or member in seen:
                    continue
                if remove_duplicate:
                    seen.add(member)
                yield _join(owner_path, name), member

    def parameters(self, recurse=True):
        """The parameters of self (and of every submodule if recurse), each once."""
        yield from (param for _, param in self.named_parameters(recurse=recurse))

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, parameter) pairs, e.g. ("layers.0.weight", p)."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """The buffers of self (and of every submodule if recurse), each once."""
        yield from (buf for _, buf in self.named_buffers(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, buffer) pairs."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        """The direct submodules, each once."""
        yield from (child for _, child in self.named_children())

    def named_children(self):
        """(name, module) for the direct submodules, each once."""
        seen = set()
        for name, child in self._modules.items():
            if child is None or child in seen:
                continue
            seen.add(child)
            yield name, child

    def modules(self, remove_duplicate=True):
        """self and every submodule, pre-order."""
        yield from (m for _, m in self.named_modules(remove_duplicate=remove_duplicate))

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Pre-order walk of the module tree with dotted names (iterative, no recursion limit).
        memo: modules to skip; with remove_duplicate every visited module joins it."""
        seen = set() if memo is None else memo
        pending = [(prefix, self)]
        while pending:
            path, node = pending.pop()
            if node in seen:
                continue
            if remove_duplicate:
                seen.add(node)
            yield path, node
            # pushed last-first, so the first child is visited next
            pending += [(_join(path, name), child) for name, child in reversed(node._modules.items())
                        if child is not None]

    # ---- modes and gradients --------------------------------------------------------
    def train(self, mode=True):
        """Set training mode on self and every submodule (affects Dropout, BatchNorm ...)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for child in self.children():
            child.train(mode)
        return self

    def eval(self):
        """train(False)."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on every parameter (e.g. to freeze a model)."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all parameters: to None (default) or to zeros in place."""
        for param in self.parameters():
            grad = param.grad
            if grad is None:
                continue
            if set_to_none:
                param.grad = None
                continue
            # zeroing in place must not record into a graph the gradient may belong to
            if grad.grad_fn is None:
                grad.requires_grad_(False)
            else:
                grad.detach_()
            grad.zero_()

    def apply(self, fn):
        """fn(module) for every submodule (children first), then self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ---- conversions: everything goes through _apply --------------------------------
    def _apply(self, fn, recurse=True):
        """Replace every parameter's and buffer's data by fn(tensor); Parameter objects (and
        their .grad) keep their identity, so optimizers built earlier still see them."""
        if recurse:
            for child in self.children():
                child._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            _move_data(param, fn)
            if param._grad is not None:
                _move_data(param._grad, fn)
        for name, buf in self._buffers.items():
            if buf is not None:
                self._buffers[name] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """to(device) / to(dtype) / to(tensor) / to(device, dtype): casts only floating point and
        complex parameters and buffers."""
        from ..._ops.creation import parse_to_args
        device, dtype, _ = parse_to_args(args, dict(kwargs))
        if dtype is not None and dtype.category < D.FLOAT:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")
        if dtype is not None and dtype.category == D.COMPLEX:
            warnings.warn("Complex modules are a new feature under active development whose design may "
                          "change, and some modules might not work as expected when using complex tensors "
                          "as parameters or buffers.", stacklevel=2)
        layout = kwargs.get("memory_format")

        def move(t):
            target = dtype if t._dtype.category >= D.FLOAT else None  # integer tensors keep their dtype
            if layout is not None and t.dim() in (4, 5):  # a memory format applies to 4-d/5-d only
                return t.to(device, target, memory_format=layout)
            return t.to(device, target)
        return self._apply(move)

    def cpu(self):
        return self._apply(methodcaller("cpu"))

    def cuda(self, device=None):
        return self._apply(methodcaller("cuda", device))

    def type(self, dst_type):
        return self._apply(methodcaller("type", dst_type))

    def float(self):
        return self._apply(_if_floating("float"))

    def double(self):
        return self._apply(_if_floating("double"))

    def half(self):
        return self._apply(_if_floating("half"))

    def bfloat16(self):
        return self._apply(_if_floating("bfloat16"))

    def to_empty(self, *, device=None, recurse=True):
        """Uninitialised storage of the same shapes on device (e.g. after building on 'meta')."""
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
        hooked = (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks
                  or _global_forward_hooks or _global_forward_pre_hooks or _global_backward_hooks
                  or _global_backward_pre_hooks)
        if hooked:
            return self._call_impl(*args, **kwargs)
        return self.forward(*args, **kwargs)

    # ---- repr -----------------------------------------------------------------------
    def extra_repr(self):
        """The module-specific part of repr, e.g. 'in_features=2, out_features=3, bias=True'."""
        return ""

    def __repr__(self):
        """Name(extra) on one line when there is a single extra line and no children; otherwise
        one indented line per extra line and per child."""
        extra = self.extra_repr()
        own = extra.split("\n") if extra else []
        nested = [f"({name}): {_addindent(repr(child), 2)}" for name, child in self._modules.items()]
        if len(own) == 1 and not nested:
            body = own[0]
        elif own or nested:
            body = "\n  " + "\n  ".join(own + nested) + "\n"
        else:
            body = ""
        return f"{self._get_name()}({body})"
