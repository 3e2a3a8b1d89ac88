"""Parametrizations: module.<name> computed on access from `parametrizations.<name>.original*`.

See https://pytorch.org/docs/stable/generated/torch.nn.utils.parametrize.register_parametrization.html.
As in torch, registering swaps the module's class for a generated subclass
`Parametrized<Class>` that holds the property, and removing the last one swaps it back.
"""
import collections.abc
import copyreg
from contextlib import contextmanager
from copy import deepcopy

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]

# State of `cached()`: how many of its contexts are open, and the tensors computed inside them,
# keyed by (id(module), tensor name).
_cached_depth = 0
_cached_tensors = {}

_UNSAFE_HINT = "unless the `unsafe` flag is enabled"


@contextmanager
def cached():
    """Inside this context each parametrized tensor is computed once and reused."""
    global _cached_depth
    _cached_depth += 1
    try:
        yield
    finally:
        _cached_depth -= 1
        if _cached_depth == 0:
            _cached_tensors.clear()


def _register_tensor(module, name, tensor):
    """A Parameter is registered as a parameter, any other tensor as a buffer."""
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _overwrite(dest, src):
    """dest takes src's data but keeps its identity, and counts as modified (torch's set_)."""
    dest.data = src
    dest._version_counter.value += 1


def _type_name(obj):
    return type(obj).__name__


def _check_output(result, dtype, shape, not_tensor, mismatch):
    """Raise ValueError unless `result` is a Tensor of the given dtype and shape.
    `not_tensor(type name)` and `mismatch(attribute, expected, got)` word torch's messages."""
    if not isinstance(result, Tensor):
        raise ValueError(not_tensor(_type_name(result)))
    for attr, expected in (("dtype", dtype), ("shape", shape)):
        got = getattr(result, attr)
        if got != expected:
            raise ValueError(mismatch(attr, expected, got))


def _must_return_tensor(type_name):
    return f"A parametrization must return a tensor. Got {type_name}."


def _inverse_through(modules, value, skip_missing):
    """Run `value` back through the chain's right_inverse methods, last module first. With
    skip_missing, modules without one (or raising NotImplementedError) pass the value on."""
    for module in reversed(modules):
        if not hasattr(module, "right_inverse"):
            if skip_missing:
                continue
            raise RuntimeError(f"parametrization {_type_name(module)} does not implement right_inverse.")
        try:
            value = module.right_inverse(value)
        except NotImplementedError:
            if not skip_missing:
                raise
    return value


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor, plus its unconstrained `original`
    (or `original0`, `original1`, ... when right_inverse returns several tensors)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        # `original` may be overwritten below: remember what the chain has to reproduce
        dtype, shape = original.dtype, original.shape
        with no_grad():
            stored = _inverse_through(self, original, skip_missing=True)
        if not isinstance(stored, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {_type_name(stored)}")
        self.is_tensor = isinstance(stored, Tensor)
        self.ntensors = 1 if self.is_tensor else len(stored)
        if self.is_tensor:
            self._store_single(original, stored)
        else:
            self._store_several(original, stored)
        if not self.unsafe:
            _check_output(self(), dtype, shape, _must_return_tensor, lambda attr, expected, got: (
                f"Registering a parametrization may not change the {attr} of the tensor, unless `unsafe` flag is "
                f"enabled.\nunparametrized {attr}: {expected}\nparametrized {attr}: {got}"))

    def _store_single(self, original, stored):
        """Keep `original` itself (so references to it stay valid), holding right_inverse's value."""
        for attr in ("dtype", "device"):
            before, after = getattr(original, attr), getattr(stored, attr)
            if before != after:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change the {attr}.\n"
                                 f"original.{attr}: {before}\nright_inverse(original).{attr}: {after}")
        with no_grad():
            _overwrite(original, stored)
        _register_tensor(self, "original", original)

    def _store_several(self, original, stored):
        """Register original0, original1, ...: parameters if `original` was one, with its requires_grad."""
        for i, tensor in enumerate(stored):
            if not isinstance(tensor, Tensor):
                raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                 f"Got element {i} of the sequence with type {_type_name(tensor)}.")
            wants_grad = original.requires_grad
            if isinstance(original, Parameter):
                tensor = Parameter(tensor, wants_grad)
            tensor.requires_grad_(wants_grad)
            _register_tensor(self, f"original{i}", tensor)

    def _originals(self):
        if self.is_tensor:
            return [self.original]
        return [getattr(self, f"original{i}") for i in range(self.ntensors)]

    def right_inverse(self, value):
        """Set the originals so that the chain evaluates to `value` (assignment to module.<name>)."""
        with no_grad():
            value = _inverse_through(self, value, skip_missing=False)
            if self.is_tensor:
                self._set_single(value)
            else:
                self._set_several(value)

    def _set_single(self, value):
        if not isinstance(value, Tensor):
            raise ValueError(f"`right_inverse` should return a tensor. Got {_type_name(value)}")
        target = self.original
        if value.dtype != target.dtype:
            raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                             f"`original` has dtype {target.dtype}")
        _overwrite(target, value)

    def _set_several(self, values):
        if not isinstance(values, collections.abc.Sequence):
            raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {_type_name(values)}.")
        if len(values) != self.ntensors:
            raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                             f"Got a sequence of length {len(values)}.")
        for i, (target, value) in enumerate(zip(self._originals(), values)):
            if not isinstance(value, Tensor):
                raise ValueError("'right_inverse' must return a sequence of tensors or reference-type opaques. "
                                 f"Got element {i} of type {_type_name(value)}.")
            if value.dtype != target.dtype:
                raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {value.dtype} while "
                                 f"`original{i}` has dtype {target.dtype}")
            _overwrite(target, value)

    def forward(self):
        first, *rest = list(self)
        out = first(*self._originals())
        for module in rest:
            out = module(out)
        return out


# ---- the generated Parametrized<Class> -------------------------------------------------------

def _deepcopy_sharing_class(self, memo):
    """deepcopy for generated classes whose base defines none: a new instance of the same
    generated class (so it keeps the properties) with deep copies of __dict__ and slots."""
    if id(self) in memo:
        return memo[id(self)]
    twin = self.__new__(type(self))
    memo[id(self)] = twin
    twin.__dict__ = deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(type(self)):
        if hasattr(self, slot):
            setattr(twin, slot, deepcopy(getattr(self, slot), memo))
    return twin


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                       "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                       "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _give_own_class(module):
    """Swap module's class for a fresh `Parametrized<Class>` subclass, a place for its properties."""
    base = type(module)
    namespace = {"__getstate__": _refuse_pickling}
    if not hasattr(base, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy_sharing_class
    module.__class__ = type(f"Parametrized{base.__name__}", (base,), namespace)


def _add_property(module, tensor_name):
    """module.<tensor_name> reads the chain's output and assignment calls its right_inverse.
    The cache key uses the module the property was made for, as torch's does."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")
    key = (id(module), tensor_name)

    def compute(self):
        chain = self.parametrizations[tensor_name]
        if not _cached_depth:
            return chain()
        if _cached_tensors.get(key) is None:
            _cached_tensors[key] = chain()
        return _cached_tensors[key]

    def assign(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(compute, assign))


# ---- public functions ---------------------------------------------------------------------

def _check_appended(module, tensor_name, parametrization):
    """The checks made before chaining a parametrization onto an already parametrized tensor:
    it must keep module.<tensor_name>'s dtype and shape, and so must its right_inverse, if any."""
    current = getattr(module, tensor_name)
    label = f"module.{tensor_name}"
    output = parametrization(current)
    _check_output(output, current.dtype, current.shape, _must_return_tensor, lambda attr, expected, got: (
        f"Registering a parametrization may not change the {attr} of the tensor, {_UNSAFE_HINT}.\n"
        f"{label}.{attr}: {expected}\nparametrization({label}).{attr}: {got}"))
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        inverse = parametrization.right_inverse(output)
    except NotImplementedError:
        return
    _check_output(inverse, current.dtype, current.shape,
                  lambda type_name: f"parametrization.right_inverse must return a tensor. Got: {type_name}",
                  lambda attr, expected, got: (
                      f"The tensor returned by parametrization.right_inverse must have the same {attr} as {label}, "
                      f"{_UNSAFE_HINT}.\n{label}.{attr}: {expected}\nreturned {attr}: {got}"))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make module.<tensor_name> = parametrization(original); chains if one is already registered."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe |= unsafe
        return module
    if tensor_name not in module._buffers and tensor_name not in module._parameters:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    chain = ParametrizationList([parametrization], getattr(module, tensor_name), unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _give_own_class(module)
        module.parametrizations = ModuleDict()
    _add_property(module, tensor_name)
    module.parametrizations[tensor_name] = chain
    return module


def is_parametrized(module, tensor_name=None):
    chains = getattr(module, "parametrizations", None)
    if not isinstance(chains, ModuleDict):
        return False
    if tensor_name is None:
        return len(chains) > 0
    return tensor_name in chains


def _unparametrized_value(module, tensor_name, leave_parametrized):
    """The tensor that replaces the property: `original` (holding the current value when
    leave_parametrized), or for a multi-tensor chain its current value as a new tensor."""
    chain = module.parametrizations[tensor_name]
    if not chain.is_tensor:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        value = getattr(module, tensor_name)
        return Parameter(value) if value.requires_grad else value
    original = chain.original
    if leave_parametrized:
        with no_grad():
            _overwrite(original, getattr(module, tensor_name))
    return original


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Turn module.<tensor_name> back into a parameter/buffer: its current value if
    leave_parametrized, else the unparametrized original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    value = _unparametrized_value(module, tensor_name, leave_parametrized)
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_tensor(module, tensor_name, value)
    if not is_parametrized(module):
        del module.parametrizations
        module.__class__ = type(module).__bases__[0]  # drop the generated Parametrized<Class>
    return module


def type_before_parametrizations(module):
    """The module's class as it was before parametrizations were registered."""
    if is_parametrized(module):
        return type(module).__bases__[0]
    return type(module)


def _share_originals(source, target):
    """Make the chain `target` use the very tensors `source` holds (original, or original0, 1, ...)."""
    if hasattr(source, "original"):
        target.original = source.original
        return
    i = 0
    while hasattr(source, f"original{i}"):
        setattr(target, f"original{i}", getattr(source, f"original{i}"))
        i += 1


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register from_module's parametrizations (all, or that of tensor_name) on to_module, sharing originals."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        _share_originals(source, to_module.parametrizations[name])
    return to_module
