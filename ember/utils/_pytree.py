"""torch.utils._pytree: flatten nested containers to a list of leaves and a TreeSpec, and back.

Containers are tuple, list, dict (insertion order), OrderedDict, defaultdict, deque,
namedtuples and torch.return_types, plus whatever register_pytree_node adds; everything else (None included, as in
torch 2.13) is a leaf. ember.func uses it for inputs, outputs, in_dims and out_dims.
"""
import collections
from collections import OrderedDict, defaultdict, deque

from ..return_types import _ReturnType

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
           "tree_map", "tree_map_", "tree_all", "tree_any", "register_pytree_node", "treespec_pprint"]


class _Node:
    """How one container type flattens: obj -> (children, context); (children, context) -> obj."""
    __slots__ = ("flatten", "unflatten")

    def __init__(self, flatten, unflatten):
        self.flatten = flatten
        self.unflatten = unflatten


def _namedtuple_flatten(t):
    return list(t), type(t)


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _dict_unflatten(values, keys):
    return dict(zip(keys, values))


def _defaultdict_flatten(d):
    return list(d.values()), [d.default_factory, list(d.keys())]


def _defaultdict_unflatten(values, context):
    factory, keys = context
    return defaultdict(factory, zip(keys, values))


def _deque_flatten(d):
    return list(d), d.maxlen


def _return_type_node(cls):
    """torch.return_types (max(values, indices), ...) are nodes of their own type, as in torch."""
    return _Node(lambda t: (list(t), None), lambda values, _: cls(values))


SUPPORTED_NODES = {
    tuple: _Node(lambda t: (list(t), None), lambda values, _: tuple(values)),
    list: _Node(lambda t: (list(t), None), lambda values, _: list(values)),
    dict: _Node(_dict_flatten, _dict_unflatten),
    OrderedDict: _Node(_dict_flatten, lambda values, keys: OrderedDict(zip(keys, values))),
    defaultdict: _Node(_defaultdict_flatten, _defaultdict_unflatten),
    deque: _Node(_deque_flatten, lambda values, maxlen: deque(values, maxlen=maxlen)),
    collections.namedtuple: _Node(_namedtuple_flatten, lambda values, cls: cls(*values)),
}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None):
    """Make `cls` a container: flatten_fn(obj) -> (children, context), unflatten_fn(children, context) -> obj."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = _Node(flatten_fn, unflatten_fn)


def _node_type(tree):
    """The registry key of tree's container type, or None for a leaf."""
    cls = type(tree)
    if cls in SUPPORTED_NODES:
        return cls
    if isinstance(tree, _ReturnType):
        SUPPORTED_NODES[cls] = _return_type_node(cls)
        return cls
    if isinstance(tree, tuple) and hasattr(cls, "_fields"):
        return collections.namedtuple
    return None


class TreeSpec:
    """The structure of a pytree: container type, its context (dict keys ...), children's specs."""
    __slots__ = ("type", "context", "children_specs", "num_leaves")

    def __init__(self, type, context, children_specs):
        self.type = type
        self.context = context
        self.children_specs = list(children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)

    @property
    def num_children(self):
        return len(self.children_specs)

    def is_leaf(self):
        return False

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)

    def flatten_up_to(self, tree):
        """The subtrees of `tree` that sit where this spec has leaves (ValueError on mismatch)."""
        out = []
        stack = [(self, tree)]
        while stack:
            spec, sub = stack.pop()
            if spec.is_leaf():
                out.append(sub)
                continue
            kind = _node_type(sub)
            if kind is not spec.type:
                raise ValueError(f"Node type mismatch; expected {spec.type!r}, but got {type(sub)!r}.")
            children, context = SUPPORTED_NODES[kind].flatten(sub)
            if len(children) != spec.num_children:
                raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got {len(children)}.")
            if kind in (dict, OrderedDict, defaultdict):
                keys = context[1] if kind is defaultdict else context
                want = spec.context[1] if kind is defaultdict else spec.context
                if set(keys) != set(want):
                    raise ValueError(f"Node keys mismatch; expected {want!r}, but got {keys!r}.")
                children = [sub[k] for k in want]
            elif context != spec.context:
                raise ValueError(f"Node context mismatch for custom node type {spec.type!r}.")
            for child_spec, child in reversed(list(zip(spec.children_specs, children))):
                stack.append((child_spec, child))
        return out

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, TreeSpec) or other.is_leaf():
            return False
        return (self.type is other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    def __hash__(self):
        return id(self)

    def __repr__(self, indent=0):
        name = "namedtuple" if self.type is collections.namedtuple else self.type.__name__
        head = f"TreeSpec({name}, {self.context}, ["
        body = ""
        if self.children_specs:
            indent += 2
            body = self.children_specs[0].__repr__(indent)
            body += "," if len(self.children_specs) > 1 else ""
            body += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self.children_specs[1:])
        return head + body + "])"


class LeafSpec(TreeSpec):
    """The spec of a single leaf."""
    __slots__ = ()

    def __init__(self):
        super().__init__(None, None, [])
        self.num_leaves = 1

    def is_leaf(self):
        return True

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __hash__(self):
        return 0

    def __repr__(self, indent=0):
        return "*"


_LEAF = LeafSpec()


def tree_flatten(tree, is_leaf=None):
    """(leaves in order, TreeSpec)."""
    leaves = []
    spec = _flatten(tree, is_leaf, leaves)
    return leaves, spec


def _flatten(tree, is_leaf, leaves):
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF
    kind = _node_type(tree)
    if kind is None:
        leaves.append(tree)
        return _LEAF
    children, context = SUPPORTED_NODES[kind].flatten(tree)
    specs = [_flatten(c, is_leaf, leaves) for c in children]
    return TreeSpec(kind, context, specs)


def tree_unflatten(leaves, treespec):
    """Rebuild the pytree of `treespec` from its leaves."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a "
                         f"pytree that holds {treespec.num_leaves} items ({treespec}).")
    return _unflatten(iter(leaves), treespec)


def _unflatten(it, spec):
    if spec.is_leaf():
        return next(it)
    children = [_unflatten(it, c) for c in spec.children_specs]
    return SUPPORTED_NODES[spec.type].unflatten(children, spec.context)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """Apply func to every leaf (with the matching leaves of `rests`), keeping the structure."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_(func, tree, *rests, is_leaf=None):
    """tree_map for side effects: returns `tree` itself."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def tree_all(pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_any(pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_leaves(tree, is_leaf))


def _broadcast_to_and_flatten(tree, treespec, is_leaf=None):
    """Each leaf of the prefix `tree` repeated over the leaves of the matching subtree of
    `treespec`; None when `tree` is not a prefix of it (vmap's in_dims/out_dims)."""
    full = tree_unflatten([0] * treespec.num_leaves, treespec)
    leaves, spec = tree_flatten(tree, is_leaf)
    try:
        subtrees = spec.flatten_up_to(full)
    except ValueError:
        return None
    out = []
    for leaf, sub in zip(leaves, subtrees):
        out.extend([leaf] * tree_structure(sub, is_leaf).num_leaves)
    return out


class _Asterisk(str):
    def __new__(cls):
        return super().__new__(cls, "*")

    def __repr__(self):
        return "*"


def treespec_pprint(treespec):
    """The structure drawn as the container itself with `*` for leaves."""
    return repr(tree_unflatten([_Asterisk()] * treespec.num_leaves, treespec))
