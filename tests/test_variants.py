"""Variant consistency, generated from the registry (OpInfo's variant test).

For every elementwise declaration the registry installed (ember._ops._registry.ALL_OPS: every
public row, plus the elementwise composites of the pointwise/activation families), the
function ember.f(x, ...), the method x.f(...), the in-place forms x.f_(...) / ember.f_(x, ...)
and the Python operators bound to it must agree. Inputs come from a per-op domain table where
the default (uniform in [-2, 2), float64) is unsuitable; nothing is skipped silently: every
declaration of those families is either tested or listed in NOT_ELEMENTWISE with the reason.
"""
import inspect
import operator

import numpy as np
import pytest

import ember
from ember._ops import _registry
from ember._ops._registry import ALL_OPS, COMPARE, INTEGRAL, Row

FAMILIES = ("ember._ops.pointwise", "ember._ops.pointwise_params", "ember._ops.activation", "ember._ops.complex")

# declarations of these families that are not elementwise functions of their inputs (tested in the op table)
NOT_ELEMENTWISE = {
    "where": "condition first: where(cond, x, y); x.where(cond, y) has another argument order",
    "isclose": "tolerance comparison, covered with allclose/equal in cases_pointwise",
    "allclose": "returns a Python bool", "equal": "returns a Python bool", "frexp": "returns a tuple",
    "mvlgamma": "the method takes p; covered in cases_pointwise", "polygamma": "n comes first: polygamma(n, x)",
    "real": "a view", "imag": "a view", "view_as_real": "a view", "view_as_complex": "a view",
    "complex": "builds complex from two real tensors", "polar": "builds complex from two real tensors",
    "conj": "identity on real tensors", "conj_physical": "identity on real tensors",
    "resolve_conj": "identity", "resolve_neg": "identity", "is_conj": "returns a bool", "is_neg": "returns a bool",
    "softmax": "normalizes along a dim", "log_softmax": "normalizes along a dim",
    "rrelu": "random in training mode (eval mode is leaky_relu)", "prelu": "weight broadcast along dim 1",
    "positive": "returns its input itself", "chalf": "raises: ember has no complex32 dtype",
}

# extra positional arguments after the tensor operands
EXTRA = {"clamp": (-0.5, 0.5), "clamp_min": (0.1,), "clamp_max": (0.2,), "lerp": (0.3,), "threshold": (0.2, -1.0),
         "celu": (0.7,), "hardshrink": (0.3,), "logit": (1e-3,), "nan_to_num": (0.0,)}
# number of tensor operands where the signature's required arguments say otherwise
TENSORS = {"clamp": 1, "clamp_min": 1, "clamp_max": 1, "threshold": 1, "addcmul": 3, "addcdiv": 3, "lerp": 2}

POSITIVE = (0.1, 3.0)
UNIT = (-0.9, 0.9)
NONZERO = "nonzero"
# per-op domains (one spec per tensor operand); an int spec (lo, hi, "int") draws int64 values
DOMAINS = {
    "log": [POSITIVE], "log2": [POSITIVE], "log10": [POSITIVE], "sqrt": [POSITIVE], "rsqrt": [POSITIVE],
    "lgamma": [POSITIVE], "digamma": [POSITIVE], "log1p": [(-0.5, 3.0)], "asin": [UNIT], "acos": [UNIT],
    "atanh": [UNIT], "erfinv": [UNIT], "acosh": [(1.1, 3.0)], "reciprocal": [NONZERO], "logit": [(0.05, 0.95)],
    "div": [None, NONZERO], "true_divide": [None, NONZERO], "floor_divide": [None, NONZERO],
    "remainder": [None, NONZERO], "fmod": [None, NONZERO], "addcdiv": [None, None, NONZERO],
    "pow": [POSITIVE, None], "float_power": [POSITIVE, None], "xlogy": [None, POSITIVE],
    "ldexp": [None, (-4, 4, "int")], "gcd": [(-20, 20, "int")] * 2, "lcm": [(-20, 20, "int")] * 2,
    "bitwise_left_shift": [(-20, 20, "int"), (0, 8, "int")], "bitwise_right_shift": [(-20, 20, "int"), (0, 8, "int")],
}

# Python operators and the ops they stand for: forward, reflected (scalar on the left) and augmented
OPERATORS = {
    "add": (operator.add, operator.iadd), "sub": (operator.sub, operator.isub), "mul": (operator.mul, operator.imul),
    "div": (operator.truediv, operator.itruediv), "floor_divide": (operator.floordiv, operator.ifloordiv),
    "remainder": (operator.mod, operator.imod), "pow": (operator.pow, operator.ipow),
    "bitwise_and": (operator.and_, operator.iand), "bitwise_or": (operator.or_, operator.ior),
    "bitwise_xor": (operator.xor, operator.ixor), "bitwise_left_shift": (operator.lshift, operator.ilshift),
    "bitwise_right_shift": (operator.rshift, operator.irshift),
    "eq": (operator.eq, None), "ne": (operator.ne, None), "lt": (operator.lt, None), "le": (operator.le, None),
    "gt": (operator.gt, None), "ge": (operator.ge, None),
}
UNARY_OPERATORS = {"neg": operator.neg, "abs": operator.abs, "bitwise_not": operator.invert}
# comparisons reflect into their mirror image
MIRRORED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
# reflected scalar operands per op (the scalar goes on the left)
SCALAR = {"bitwise_and": 6, "bitwise_or": 6, "bitwise_xor": 6, "bitwise_left_shift": 2, "bitwise_right_shift": 64,
          "pow": 1.5, "floor_divide": 3.0, "remainder": 3.0}


def _elementwise_ops():
    """(name, declaration) for every elementwise declaration of the families above."""
    out = []
    for name, decl in sorted(ALL_OPS.items()):
        if name.startswith("_") or name in NOT_ELEMENTWISE:
            continue
        if isinstance(decl, Row):
            out.append((name, decl))
        elif getattr(decl, "__module__", None) in FAMILIES:
            out.append((name, decl))
    return out


OPS = _elementwise_ops()


def _arity(name, decl):
    if isinstance(decl, Row):
        return decl.arity
    if name in TENSORS:
        return TENSORS[name]
    params = inspect.signature(decl).parameters.values()
    return sum(1 for p in params if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD)


def _integral(decl):
    return isinstance(decl, Row) and decl.kind is INTEGRAL


def _draw(rng, spec, shape, integral, ties):
    if integral and spec is None:
        spec = (-20, 20, "int")
    if ties and spec is None:  # comparisons see equal elements too
        return ember.tensor(rng.integers(-2, 3, shape).astype(np.float64))
    if spec == NONZERO:
        return ember.tensor(rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape))
    if spec is not None and len(spec) == 3:
        return ember.tensor(rng.integers(spec[0], spec[1], shape))
    lo, hi = spec if spec is not None else (-2.0, 2.0)
    return ember.tensor(rng.uniform(lo, hi, shape))


def _inputs(name, decl):
    rng = np.random.default_rng(abs(hash(name)) % (1 << 32))
    n = _arity(name, decl)
    specs = DOMAINS.get(name, [None] * n)
    shapes = [(3, 4)] + [(4,)] * (n - 1)  # later operands broadcast against the first
    ties = isinstance(decl, Row) and decl.kind is COMPARE
    return [_draw(rng, specs[i], shapes[i], _integral(decl), ties) for i in range(n)]


def _same(a, b, what):
    assert isinstance(b, ember.Tensor), f"{what}: {type(b).__name__}"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs {b.dtype}"
    assert tuple(a.shape) == tuple(b.shape), f"{what}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
    np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=what)


def test_every_declaration_is_covered():
    """New ops of these families must land in OPS (tested below) or in NOT_ELEMENTWISE."""
    names = {n for n, _ in OPS}
    assert len(names) > 100
    for name in NOT_ELEMENTWISE:
        assert name in ALL_OPS, f"stale NOT_ELEMENTWISE entry {name}"


@pytest.mark.parametrize("name,decl", OPS, ids=[n for n, _ in OPS])
def test_variants_agree(name, decl):
    args = _inputs(name, decl)
    extra = EXTRA.get(name, ())
    fn = _registry.namespace[name]
    expected = fn(*args, *extra)
    x, rest = args[0], args[1:]
    if getattr(ember.Tensor, name, None) is not None:
        _same(expected, getattr(x, name)(*rest, *extra), f"x.{name}()")
    for where, inplace in (("Tensor", getattr(ember.Tensor, name + "_", None)),
                           ("ember", _registry.namespace.get(name + "_"))):
        if inplace is None:
            continue
        target = x.clone()
        castable = ember.can_cast(expected.dtype, x.dtype) and tuple(expected.shape) == tuple(x.shape)
        if castable:
            r = inplace(target, *rest, *extra)
            assert r is target, f"{where}.{name}_ must return its input"
            _same(expected.to(x.dtype), target, f"{where}.{name}_")
        else:
            with pytest.raises(RuntimeError):
                inplace(target, *rest, *extra)
    if name in OPERATORS:
        forward, augmented = OPERATORS[name]
        _same(expected, forward(x, *rest), f"operator for {name}")
        if augmented is not None and ember.can_cast(expected.dtype, x.dtype):
            target = x.clone()
            r = augmented(target, *rest)
            assert r is target, f"augmented operator for {name} must work in place"
            _same(expected.to(x.dtype), target, f"augmented operator for {name}")
        s = SCALAR.get(name, 2.5)
        if name in MIRRORED:  # 2.5 < x is x > 2.5
            reflected = _registry.namespace[MIRRORED[name]](x, s)
        else:
            reflected = fn(s, x)
        _same(reflected, forward(s, x), f"reflected operator for {name}")
    if name in UNARY_OPERATORS:
        _same(expected, UNARY_OPERATORS[name](x), f"operator for {name}")


def test_operator_table_matches_the_registry():
    """The operators checked above are bound on Tensor and belong to tested declarations."""
    names = {n for n, _ in OPS}
    for name in list(OPERATORS) + list(UNARY_OPERATORS):
        assert name in names, name
    for d in ("__add__", "__radd__", "__iadd__", "__rsub__", "__rtruediv__", "__rpow__", "__rand__", "__rlshift__",
              "__neg__", "__abs__", "__invert__", "__pos__"):
        assert d in vars(ember.Tensor), d
