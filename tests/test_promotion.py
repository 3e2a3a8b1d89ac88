"""Type promotion against torch: promote_types / can_cast / result_type over all dtype pairs, and
hypothesis-drawn binary ops on random dtype pairs, broadcastable shapes (0-dim included) and
Python bool/int/float/complex scalars, comparing result dtype, shape, values and the exception
type whenever torch raises.

ember has no complex32, so draws whose torch result is complex32 (float16 with a complex
scalar or 0-dim complex tensor) are left out with hypothesis.assume (see complex.py).
"""
import itertools

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ember

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128"]
PAIRS = list(itertools.product(DTYPES, DTYPES))
SCALARS = [True, False, 0, 3, -2, 2.5, -0.5, 1.5j, complex(2, -1)]


def _tensor(lib, name, shape, seed):
    """Small nonzero integer values (exact in every dtype), built in NumPy for both libraries."""
    rng = np.random.default_rng(seed)
    v = rng.integers(1, 4, size=shape) * rng.choice([-1, 1], size=shape)
    if name == "bool":
        v = v > 0
    elif name == "uint8":
        v = np.abs(v)
    if name.startswith("complex"):
        v = v + 1j * rng.integers(-3, 4, size=shape)
    arr = np.asarray(v)
    if lib is torch:
        t = torch.from_numpy(arr.astype(np.complex128 if arr.dtype.kind == "c" else arr.dtype))
        return t.to(getattr(torch, name))
    return ember.from_numpy(arr).to(getattr(ember, name))


def _name(d):
    return str(d).replace("torch.", "")


def _same_result_type(e, t, where):
    if t == torch.complex32:  # no complex32 in ember: the next wider complex type instead
        assert e == ember.complex64, where
    else:
        assert _name(e) == _name(t), where


# ---- whole tables -----------------------------------------------------------------------------

@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_promote_types_and_can_cast(a, b):
    ta, tb = getattr(torch, a), getattr(torch, b)
    ea, eb = getattr(ember, a), getattr(ember, b)
    assert _name(ember.promote_types(ea, eb)) == _name(torch.promote_types(ta, tb))
    assert ember.can_cast(ea, eb) == torch.can_cast(ta, tb)


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_result_type_tensors(a, b):
    """dim tensors, 0-dim tensors and their mixtures (0-dim only wins across categories)."""
    for sa, sb in (((2,), (2,)), ((2,), ()), ((), (2,)), ((), ())):
        t = torch.result_type(_tensor(torch, a, sa, 0), _tensor(torch, b, sb, 1))
        e = ember.result_type(_tensor(ember, a, sa, 0), _tensor(ember, b, sb, 1))
        _same_result_type(e, t, (a, sa, b, sb))


@pytest.mark.parametrize("a", DTYPES)
def test_result_type_scalars(a):
    for shape in ((3,), ()):
        for s in SCALARS:
            t = torch.result_type(_tensor(torch, a, shape, 0), s)
            e = ember.result_type(_tensor(ember, a, shape, 0), s)
            _same_result_type(e, t, (a, shape, s))


def test_result_type_follows_default_dtype():
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for a in DTYPES:
            for s in (2.5, 1j):
                t = torch.result_type(_tensor(torch, a, (2,), 0), s)
                e = ember.result_type(_tensor(ember, a, (2,), 0), s)
                _same_result_type(e, t, (a, s))
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


# ---- hypothesis: binary ops on random operands ----------------------------------------------------

OPS = {
    "add": lambda t, x, y: t.add(x, y),
    "sub": lambda t, x, y: t.sub(x, y),
    "mul": lambda t, x, y: x * y if isinstance(x, t.Tensor) else t.mul(y, x),
    "div": lambda t, x, y: t.div(x, y),
    "eq": lambda t, x, y: t.eq(x, y),
    "maximum": lambda t, x, y: t.maximum(x, y),
    "bitwise_and": lambda t, x, y: t.bitwise_and(x, y),
    "bitwise_or": lambda t, x, y: x | y,
    "bitwise_xor": lambda t, x, y: t.bitwise_xor(x, y),
}


@st.composite
def _shapes(draw):
    """Two broadcastable shapes of rank 0..3 (a dim drawn as 1 broadcasts)."""
    rank = draw(st.integers(0, 3))
    base = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    a = [d if draw(st.booleans()) else 1 for d in base]
    b = [d if draw(st.booleans()) else 1 for d in base]
    a = a[draw(st.integers(0, len(a))):]
    b = b[draw(st.integers(0, len(b))):]
    return tuple(a), tuple(b)


@st.composite
def _operand(draw, shape):
    """A tensor of a random dtype, or (sometimes) a Python scalar."""
    if draw(st.integers(0, 3)) == 0:
        return ("scalar", draw(st.sampled_from(SCALARS)))
    return ("tensor", draw(st.sampled_from(DTYPES)), shape, draw(st.integers(0, 2 ** 16)))


def _build(lib, spec):
    if spec[0] == "scalar":
        return spec[1]
    return _tensor(lib, spec[1], spec[2], spec[3])


def _run(fn, lib, args):
    try:
        return fn(lib, *args), None
    except Exception as e:  # the exception type is compared against torch's
        return None, e


def _compare(t_out, e_out, where):
    assert isinstance(e_out, ember.Tensor), where
    assert _name(e_out.dtype) == _name(t_out.dtype), f"{where}: dtype torch {t_out.dtype} ember {e_out.dtype}"
    assert tuple(e_out.shape) == tuple(t_out.shape), where
    t_np = t_out.float().numpy() if t_out.dtype == torch.bfloat16 else t_out.numpy()
    e_np = e_out.float().numpy() if e_out.dtype == ember.bfloat16 else e_out.numpy()
    if t_np.dtype.kind in "fc":
        tol = 1e-2 if t_out.dtype in (torch.float16, torch.bfloat16) else 1e-6
        np.testing.assert_allclose(e_np, t_np, rtol=tol, atol=tol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(e_np, t_np, err_msg=where)


def _complex32(a, b):
    """Whether torch computes a op b in complex32 (which ember does not have)."""
    try:
        return torch.result_type(a, b) == torch.complex32
    except (TypeError, RuntimeError):
        return False


def _check(name, fn, specs):
    """Run fn on both libraries and compare; False (nothing checked) for torch's complex32 cases."""
    t_args = [_build(torch, s) for s in specs]
    e_args = [_build(ember, s) for s in specs]
    if _complex32(t_args[-2], t_args[-1]):
        return False
    t_out, t_err = _run(fn, torch, t_args)
    e_out, e_err = _run(fn, ember, e_args)
    where = f"{name}{tuple(specs)}"
    if t_err is not None:
        assert e_err is not None, f"{where}: torch raised {type(t_err).__name__}: {t_err}, ember gave {e_out}"
        assert type(e_err) is type(t_err), f"{where}: torch {type(t_err).__name__}, ember {type(e_err).__name__}: {e_err}"
        return True
    assert e_err is None, f"{where}: ember raised {type(e_err).__name__}: {e_err}"
    _compare(t_out, e_out, where)
    return True


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_binary_ops_all_dtype_pairs(a, b):
    """Every op on every dtype pair: tensor-tensor, tensor-0-dim and 0-dim-tensor."""
    checked = 0
    for name in sorted(OPS):
        for sa, sb in (((2, 3), (3,)), ((2, 3), ()), ((), (3,))):
            checked += _check(name, OPS[name], (("tensor", a, sa, 0), ("tensor", b, sb, 1)))
    assert checked >= len(OPS), "most of these run in complex64 or wider"


@settings(max_examples=250, deadline=None, derandomize=True)
@given(st.sampled_from(sorted(OPS)), _shapes().flatmap(lambda s: st.tuples(_operand(s[0]), _operand(s[1]))))
def test_binary_ops_promote_like_torch(name, operands):
    assume(operands[0][0] == "tensor" or operands[1][0] == "tensor")
    assume(_check(name, OPS[name], operands))


@settings(max_examples=80, deadline=None, derandomize=True)
@given(_shapes().flatmap(lambda s: st.tuples(_operand(s[0]), _operand(s[1]), st.just(s[0]),
                                             st.integers(0, 2 ** 16))))
def test_where_promotes_like_torch(draw):
    x, y, shape, seed = draw
    cond = ("tensor", "bool", shape, seed)
    assume(_check("where", lambda t, c, a, b: t.where(c, a, b), (cond, x, y)))
