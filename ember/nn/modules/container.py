"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.

Children are stored under string keys ("0", "1", ...) in _modules/_parameters, which is
what gives state_dict its torch key names ("0.weight", "layers.2.bias").

Note [Positional keys]: the list-like containers keep their children under "0".."n-1".
Three helpers keep that true: _position turns a (possibly negative) index into one,
_shift_in opens a gap for insert by moving later entries up one key, and _renumber closes
the gaps a deletion leaves. A Sequential built from an OrderedDict keeps its own names and
is indexed by position instead (_nth_key).
"""
import operator
from collections import OrderedDict
from collections import abc as container_abcs
from itertools import chain, groupby, islice, repeat

from ..._tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent, _typename

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


# ---- shared helpers ------------------------------------------------------------------------

def _position(idx, size):
    """idx as a position in [0, size), negatives counting from the end; IndexError outside."""
    pos = operator.index(idx)
    if pos < -size or pos >= size:
        raise IndexError(f"index {pos} is out of range")
    return pos + size if pos < 0 else pos


def _selected(sl, size):
    """The positions a slice picks out of a sequence of length size, as a range."""
    return range(size)[sl]


def _nth_key(modules, idx):
    """The key stored at position idx of an ordered dict (Sequential may have named keys)."""
    return next(islice(iter(modules), _position(idx, len(modules)), None))


def _shift_in(modules, index, module):
    """Store module under str(index) after moving the entries at index, index+1, ... up one key.

    Works from the end down so that no entry is overwritten before it has moved."""
    for dst in reversed(range(index + 1, len(modules) + 1)):
        modules[str(dst)] = modules[str(dst - 1)]
    modules[str(index)] = module


def _renumber(owner):
    """Give owner's children the keys 0..n-1 again, in their current order (after a deletion)."""
    owner._modules = OrderedDict((str(pos), child) for pos, child in enumerate(owner._modules.values()))


def _add_numbered(owner, modules):
    """Register modules under the keys that follow owner's current length."""
    start = len(owner)
    for offset, module in enumerate(modules):
        owner.add_module(str(start + offset), module)


def _pop(container, key):
    """container[key], removed from it (the pop of every container here)."""
    value = container[key]
    del container[key]
    return value


def _no_digits(keys):
    """dir() without the numeric child names of the list-like containers."""
    return [k for k in keys if not k.isdigit()]


def _child_count(self):
    return len(self._modules)


def _iter_children(self):
    return iter(self._modules.values())


def _as_parameter(value):
    """Plain tensors are wrapped in Parameter so they register; anything else is kept as is."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _update_pairs(values, owner, in_order, sorted_mappings=False):
    """The (key, value) pairs an update() assigns, checked one by one with torch's messages.

    Instances of in_order are taken in their own order; other mappings in sorted key order
    when sorted_mappings (ParameterDict's rule); anything else must yield pairs."""
    if not isinstance(values, container_abcs.Iterable):
        label = "ParametersDict" if owner == "ParameterDict" else owner  # sic: torch's spelling
        raise TypeError(f"{label}.update should be called with an iterable of key/value pairs, but got " +
                        type(values).__name__)
    if isinstance(values, in_order):
        yield from values.items()
    elif sorted_mappings and isinstance(values, container_abcs.Mapping):
        yield from sorted(values.items())
    else:
        for j, pair in enumerate(values):
            if not isinstance(pair, container_abcs.Iterable):
                raise TypeError(f"{owner} update sequence element #{j} should be Iterable; is" + type(pair).__name__)
            if len(pair) != 2:
                raise ValueError(f"{owner} update sequence element #{j} has length {len(pair)}; 2 is required")
            yield pair[0], pair[1]


def _entry_repr(key, p, type_str):
    """One line of ParameterList/ParameterDict's extra_repr."""
    if isinstance(p, Tensor):
        size = "x".join(str(s) for s in p.size())
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        return f"  ({key}): {kind} containing: [{type_str(p)} of size {size}]"
    return f"  ({key}): Object of type: {type(p).__name__}"


def _require_sequential(other):
    if not isinstance(other, Sequential):
        raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")


def _require_factor(seq, factor):
    if not isinstance(factor, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(seq)} and {type(factor)}")
    if factor <= 0:
        raise ValueError(f"Non-positive multiplication factor {factor} for {type(seq)}")


# ---- module containers -----------------------------------------------------------------------

class Sequential(Module):
    """Modules called in order, each on the previous output. Sequential(*mods) or Sequential(OrderedDict)."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            named = args[0].items()
        else:
            named = ((str(pos), module) for pos, module in enumerate(args))
        for name, module in named:
            self.add_module(name, module)

    __len__ = _child_count
    __iter__ = _iter_children

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            pairs = list(self._modules.items())
            return self.__class__(OrderedDict(pairs[pos] for pos in _selected(idx, len(pairs))))
        return self._modules[_nth_key(self._modules, idx)]

    def __setitem__(self, idx, module):
        setattr(self, _nth_key(self._modules, idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            names = list(self._modules)
            doomed = [names[pos] for pos in _selected(idx, len(names))]
        else:
            doomed = [_nth_key(self._modules, idx)]
        for name in doomed:
            delattr(self, name)
        _renumber(self)

    def __add__(self, other):
        _require_sequential(other)
        return Sequential(*self, *other)

    def __iadd__(self, other):
        _require_sequential(other)
        _add_numbered(self, other)
        return self

    def __mul__(self, other):
        _require_factor(self, other)
        return Sequential(*(list(self) * other))

    __rmul__ = __mul__

    def __imul__(self, other):
        _require_factor(self, other)
        for module in list(self) * (other - 1):
            self.append(module)
        return self

    def __dir__(self):
        return _no_digits(super().__dir__())

    def pop(self, key):
        return _pop(self, key)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        size = len(self)
        if index < -size or index > size:
            raise IndexError(f"Index out of range: {index}")
        _shift_in(self._modules, index + size if index < 0 else index, module)
        return self

    def extend(self, sequential):
        for module in sequential:
            self.append(module)
        return self

    def forward(self, input):
        for layer in self._modules.values():
            input = layer(input)
        return input


class ModuleList(Module):
    """A list of modules, registered so that parameters() and state_dict() see them."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    __len__ = _child_count
    __iter__ = _iter_children

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            children = list(self._modules.values())
            return self.__class__([children[pos] for pos in _selected(idx, len(children))])
        return self._modules[str(_position(idx, len(self)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_position(idx, len(self))), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            doomed = _selected(idx, len(self))
        else:
            doomed = [_position(idx, len(self))]
        for pos in doomed:
            delattr(self, str(pos))
        _renumber(self)

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(chain(self, other))

    def __repr__(self):
        """Runs of equal reprs are folded: '(0-2): 3 x Linear(...)'."""
        lines = []
        first = 0
        for text, run in groupby(repr(m) for m in self):
            count = len(list(run))
            last = first + count - 1
            line = f"({first}): {text}" if count == 1 else f"({first}-{last}): {count} x {text}"
            lines.append(_addindent(line, 2))
            first = last + 1
        if not lines:
            return f"{self._get_name()}()"
        body = "\n  ".join(lines)
        return f"{self._get_name()}(\n  {body}\n)"

    def __dir__(self):
        return _no_digits(super().__dir__())

    def insert(self, index, module):
        # as torch: no type or range check, and a negative index is used as a key as is
        _shift_in(self._modules, index, module)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        return _pop(self, key)

    def extend(self, modules):
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        _add_numbered(self, modules)
        return self


class ModuleDict(Module):
    """An ordered dict of modules, registered under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    __len__ = _child_count

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        return _pop(self, key)

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        for key, module in _update_pairs(modules, "ModuleDict", (container_abcs.Mapping, ModuleDict)):
            self[key] = module


# ---- parameter containers --------------------------------------------------------------------

class ParameterList(Module):
    """A list of parameters (plain tensors are wrapped in Parameter), keys "0", "1", ..."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            picked = self.__class__()
            for pos in _selected(idx, len(self)):
                picked.append(self[pos])
            return picked
        return getattr(self, str(_position(idx, len(self))))

    def __setitem__(self, idx, param):
        key = str(_position(idx, len(self)))
        setattr(self, key, _as_parameter(param))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[pos] for pos in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return _no_digits(super().__dir__())

    def append(self, value):
        # grow first: __setitem__ only accepts positions below the current length
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        # a Tensor is iterable, but extending by one would add its rows: refused as torch does
        if isinstance(values, Tensor) or not isinstance(values, container_abcs.Iterable):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " +
                            type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(_entry_repr(k, p, lambda t: str(t.dtype)) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


def _checked_key(key):
    """ParameterDict keys are attribute names, so they must be strings."""
    if isinstance(key, str):
        return key
    raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                    f"'{type(key).__name__}'). Open an issue on github if you need non-string keys.")


class ParameterDict(Module):
    """An ordered dict of parameters (plain tensors are wrapped in Parameter).

    Entries live as attributes; _keys (a dict used as an ordered set) records which attributes
    belong to the dict part, and in what order."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return getattr(self, _checked_key(key))

    def __setitem__(self, key, value):
        # the key is recorded before it is checked, as in torch (a bad key stays in _keys)
        self._keys[key] = None
        setattr(self, _checked_key(key), _as_parameter(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, _checked_key(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        return ParameterDict(OrderedDict(self.items()))

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for key in list(self._keys):
            del self[key]

    def pop(self, key):
        return _pop(self, key)

    def popitem(self):
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        last = next(reversed(self._keys))
        return last, self.pop(last)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        return ParameterDict(zip(keys, repeat(default)))

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((name, self[name]) for name in self._keys)

    def values(self):
        return (self[name] for name in self._keys)

    def update(self, parameters):
        """From an OrderedDict/ParameterDict in order, a plain mapping in sorted key order, or pairs."""
        for key, value in _update_pairs(parameters, "ParameterDict", (OrderedDict, ParameterDict),
                                        sorted_mappings=True):
            self[key] = value

    def extra_repr(self):
        return "\n".join(_entry_repr(k, p, _typename) for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other):
        return _merged(self, other)

    def __ror__(self, other):
        return _merged(other, self)

    def __ior__(self, other):
        self.update(other)
        return self


def _merged(first, second):
    """A copy of first updated with second (ParameterDict's | in both directions)."""
    result = first.copy()
    result.update(second)
    return result
