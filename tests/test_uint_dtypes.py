"""torch's limited unsigned dtypes uint16/uint32/uint64 (Note [Limited unsigned types] in ember/_dtype.py),
differential against torch 2.13: each case runs the same function on torch and on ember from the same NumPy
data and compares the result (values, dtype, shape, or the Python value) or the exception type raised.
Also: checkpoints and safetensors files written by one library and read by the other, and hash_tensor."""
import io

import numpy as np
import pytest
import torch

import ember

UINTS = ("uint16", "uint32", "uint64")
NP = {"uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}
MAX = {"uint16": 2 ** 16 - 1, "uint32": 2 ** 32 - 1, "uint64": 2 ** 64 - 1}


def _norm(r, lib):
    """A comparable plain-Python form of a result."""
    if isinstance(r, lib.Tensor):
        return ("tensor", str(r.dtype).replace("torch.", ""), tuple(r.shape), r.tolist())
    if isinstance(r, tuple) and hasattr(r, "_fields") or isinstance(r, (tuple, list)):
        return tuple(_norm(x, lib) for x in r)
    if isinstance(r, lib.dtype):
        return ("dtype", str(r))
    return r


def _run(fn, lib, name):
    try:
        return _norm(fn(lib, getattr(lib, name)), lib)
    except Exception as e:  # noqa: BLE001  the type is what is compared
        return ("raised", type(e).__name__)


def check(fn, name):
    t = _run(fn, torch, name)
    e = _run(fn, ember, name)
    assert e == t, f"torch: {t}\nember: {e}"


def a(t, d, values=(1, 5, 3)):
    return t.tensor(list(values), dtype=d)


def b(t, d):
    return t.tensor([2, 2, 7], dtype=d)


def m(t, d):
    return t.tensor([[1, 2, 3], [4, 5, 6]], dtype=d)


# ---- the dtype objects ------------------------------------------------------------------------

ATTRS = {
    "repr": lambda t, d: repr(d),
    "str": lambda t, d: str(d),
    "itemsize": lambda t, d: d.itemsize,
    "is_signed": lambda t, d: d.is_signed,
    "is_floating_point": lambda t, d: d.is_floating_point,
    "is_complex": lambda t, d: d.is_complex,
    "iinfo": lambda t, d: (t.iinfo(d).min, t.iinfo(d).max, t.iinfo(d).bits, t.iinfo(d).dtype, repr(t.iinfo(d))),
    "finfo": lambda t, d: t.finfo(d),
    "same_object": lambda t, d: getattr(t, str(d).split(".")[1]) is d,
    "set_default_dtype": lambda t, d: t.set_default_dtype(d),
    "signed_iinfo_repr": lambda t, d: [repr(t.iinfo(x)) for x in (t.int64, t.int32, t.int16, t.uint8)],
    "iinfo_bool": lambda t, d: t.iinfo(t.bool),
}


# ---- creation, conversion, printing -------------------------------------------------------------

CREATION = {
    "tensor": lambda t, d: a(t, d),
    "tensor_0d": lambda t, d: t.tensor(5, dtype=d),
    "tensor_max": lambda t, d: t.tensor([0, t.iinfo(d).max], dtype=d),
    "tensor_minus_one": lambda t, d: t.tensor([-1], dtype=d),
    "tensor_bool_elements": lambda t, d: t.tensor([True, False], dtype=d),
    "tensor_overflow": lambda t, d: t.tensor([t.iinfo(d).max + 1], dtype=d),
    "tensor_2d": lambda t, d: t.tensor([[1, 2], [3, 4]], dtype=d),
    "zeros": lambda t, d: t.zeros(2, 3, dtype=d),
    "ones": lambda t, d: t.ones(2, dtype=d),
    "full": lambda t, d: t.full((2,), 7, dtype=d),
    "full_max": lambda t, d: t.full((1,), t.iinfo(d).max, dtype=d),
    "full_minus_one": lambda t, d: t.full((1,), -1, dtype=d),
    "empty": lambda t, d: (t.empty(2, 3, dtype=d).shape, t.empty(2, dtype=d).dtype),
    "zeros_like": lambda t, d: t.zeros_like(a(t, d)),
    "ones_like": lambda t, d: t.ones_like(a(t, d)),
    "full_like": lambda t, d: t.full_like(a(t, d), 4),
    "empty_like": lambda t, d: t.empty_like(a(t, d)).dtype,
    "new_ones": lambda t, d: a(t, d).new_ones(2),
    "new_tensor": lambda t, d: a(t, d).new_tensor([3]),
    "arange": lambda t, d: t.arange(3, dtype=d),
    "linspace": lambda t, d: t.linspace(0, 4, 3, dtype=d),
    "eye": lambda t, d: t.eye(2, dtype=d),
    "randperm": lambda t, d: t.randperm(3, dtype=d),
    "randint": lambda t, d: (t.randint(0, 5, (3,), dtype=d).dtype, t.randint(0, 5, (3,), dtype=d).shape),
    "tensor_numpy_scalar": lambda t, d: t.tensor(NP[str(d).split(".")[1]](5)),
    "tensor_numpy_scalars_in_list": lambda t, d: t.tensor([NP[str(d).split(".")[1]](5), NP[str(d).split(".")[1]](7)]),
    "tensor_numpy_scalar_as_int64": lambda t, d: t.tensor(NP[str(d).split(".")[1]](5), dtype=t.int64),
    "tensor_0d_tensors_in_list": lambda t, d: t.tensor([t.tensor(3, dtype=d)], dtype=t.int64),
    "tensor_float_elements": lambda t, d: t.tensor([1.0, 2.5], dtype=d),
    "tensor_negative_float": lambda t, d: t.tensor([-1.0], dtype=d),
    "full_float": lambda t, d: t.full((1,), 2.5, dtype=d),
    "full_negative_float": lambda t, d: t.full((1,), -1.5, dtype=d),
    "fill_overflow": lambda t, d: t.zeros(1, dtype=d).fill_(t.iinfo(d).max + 1),
    "fill_minus_max": lambda t, d: t.zeros(1, dtype=d).fill_(-t.iinfo(d).max),
    "randint_high_too_big": lambda t, d: t.randint(0, 2 ** 16 + 2, (2,), dtype=d).dtype,
    "to_int64": lambda t, d: t.tensor([1, 5], dtype=d).to(t.int64),
    "to_float32": lambda t, d: t.tensor([1, 5], dtype=d).to(t.float32),
    "to_float64": lambda t, d: t.tensor([0, 7], dtype=d).double(),
    "to_bool": lambda t, d: t.tensor([0, 7], dtype=d).bool(),
    "to_uint8": lambda t, d: t.tensor([1, 300], dtype=d).to(t.uint8),
    "to_int8": lambda t, d: t.tensor([200], dtype=d).to(t.int8),
    "from_int64_wraps": lambda t, d: t.tensor([-1, 5, 2 ** 40 + 3]).to(d),
    "from_float": lambda t, d: t.tensor([0.0, 3.7, 100.2]).to(d),
    "from_bool": lambda t, d: t.tensor([True, False]).to(d),
    "max_to_int64": lambda t, d: t.tensor([t.iinfo(d).max], dtype=d).to(t.int64),
    "max_to_float64": lambda t, d: t.tensor([t.iinfo(d).max], dtype=d).to(t.float64),
    "between_uints": lambda t, d: t.tensor([70000, 5], dtype=t.uint32).to(d),
    "to_same_is_self": lambda t, d: (lambda x: x.to(d) is x)(a(t, d)),
    "type_name": lambda t, d: a(t, d).type(),
    "type_cast": lambda t, d: a(t, d).type(t.int32),
    "is_signed_method": lambda t, d: a(t, d).is_signed(),
    "element_size": lambda t, d: (a(t, d).element_size(), a(t, d).nbytes, a(t, d).itemsize),
    "is_floating_point_fn": lambda t, d: (t.is_floating_point(a(t, d)), t.is_complex(a(t, d))),
    "item": lambda t, d: t.tensor([t.iinfo(d).max], dtype=d).item(),
    "tolist": lambda t, d: t.tensor([t.iinfo(d).max, 0], dtype=d).tolist(),
    "int_float_bool": lambda t, d: (int(a(t, d)[1]), float(a(t, d)[1]), bool(a(t, d)[0])),
    "as_index": lambda t, d: [10, 11, 12, 13, 14, 15][a(t, d)[1]],
    "repr": lambda t, d: repr(a(t, d)),
    "repr_max": lambda t, d: repr(t.tensor([0, t.iinfo(d).max], dtype=d)),
    "repr_0d": lambda t, d: repr(t.tensor(7, dtype=d)),
    "repr_2d": lambda t, d: repr(t.tensor([[1, 20], [300, 4]], dtype=d)),
    "str_empty": lambda t, d: str(t.zeros(0, dtype=d)),
}


@pytest.mark.parametrize("name", UINTS)
@pytest.mark.parametrize("case", list(ATTRS) + list(CREATION))
def test_dtype_and_creation(case, name):
    check({**ATTRS, **CREATION}[case], name)


@pytest.mark.parametrize("name", UINTS)
def test_numpy_round_trip_shares_memory(name):
    arr = np.array([[1, MAX[name]], [3, 4]], dtype=NP[name])
    for lib in (torch, ember):
        t = lib.from_numpy(arr)
        assert t.dtype is getattr(lib, name) and t.tolist() == arr.tolist()
        assert t.numpy().dtype == arr.dtype and np.shares_memory(t.numpy(), arr)
        assert lib.as_tensor(arr).dtype is getattr(lib, name)
        assert lib.tensor(arr).tolist() == arr.tolist() and not np.shares_memory(lib.tensor(arr).numpy(), arr)
        nc = lib.from_numpy(arr[:, ::2] if False else arr.T)
        assert nc.tolist() == arr.T.tolist()
    t = ember.zeros(3, dtype=getattr(ember, name))
    t.numpy()[1] = MAX[name]
    assert t.tolist() == [0, MAX[name], 0]


# ---- promotion ----------------------------------------------------------------------------------

OTHERS = ("bool", "uint8", "int8", "int64", "float16", "bfloat16", "float32", "float64", "complex64",
          "uint16", "uint32", "uint64")


@pytest.mark.parametrize("name", UINTS)
def test_promote_types_and_can_cast(name):
    for other in OTHERS:
        check(lambda t, d: t.promote_types(d, getattr(t, other)), name)
        check(lambda t, d: t.promote_types(getattr(t, other), d), name)
        check(lambda t, d: (t.can_cast(d, getattr(t, other)), t.can_cast(getattr(t, other), d)), name)


PROMOTION = {
    "result_type_int": lambda t, d: t.result_type(a(t, d), 1),
    "result_type_float": lambda t, d: t.result_type(a(t, d), 1.0),
    "result_type_bool": lambda t, d: t.result_type(a(t, d), True),
    "result_type_complex": lambda t, d: t.result_type(a(t, d), 1j),
    "dim_int64_with_0d": lambda t, d: t.result_type(t.tensor([1]), t.tensor(1, dtype=d)),
    "dim_bool_with_0d": lambda t, d: t.result_type(t.tensor([True]), t.tensor(1, dtype=d)),
    "0d_with_0d_int64": lambda t, d: t.result_type(t.tensor(1, dtype=d), t.tensor(1)),
    "dim_with_0d_bool": lambda t, d: t.result_type(a(t, d), t.tensor(True)),
    "mul_int64_tensor": lambda t, d: a(t, d) * t.tensor([1, 2, 3]),
    "mul_uint8_tensor": lambda t, d: a(t, d) * t.tensor([1, 2, 3], dtype=t.uint8),
    "mul_float_tensor": lambda t, d: a(t, d) * t.tensor([1.5, 2, 3]),
    "mul_float64_0d": lambda t, d: a(t, d) * t.tensor(2.5, dtype=t.float64),
    "mul_int64_0d": lambda t, d: a(t, d) * t.tensor(3),
    "mul_other_uint": lambda t, d: a(t, d) * t.tensor([1, 2, 3], dtype=t.uint32 if d is not t.uint32 else t.uint16),
    "eq_int64_tensor": lambda t, d: a(t, d) == t.tensor([1, 2, 3]),
    "cat_mixed": lambda t, d: t.cat([a(t, d), t.tensor([1])]),
    "cat_float": lambda t, d: t.cat([a(t, d), t.tensor([1.5])]),
}


# ---- the kernels torch runs on them, and the ones it refuses ----------------------------------------

OPS = {
    "mul": lambda t, d: a(t, d) * b(t, d),
    "mul_wraps": lambda t, d: t.tensor([t.iinfo(d).max], dtype=d) * 3,
    "mul_scalar": lambda t, d: a(t, d) * 2,
    "mul_bool_scalar": lambda t, d: a(t, d) * True,
    "mul_negative_scalar": lambda t, d: a(t, d) * -1,
    "mul_float_scalar": lambda t, d: a(t, d) * 0.5,
    "mul_complex_scalar": lambda t, d: a(t, d) * 1j,
    "mul_": lambda t, d: a(t, d).mul_(b(t, d)),
    "div": lambda t, d: a(t, d) / b(t, d),
    "div_scalar": lambda t, d: a(t, d) / 2,
    "add_float_scalar": lambda t, d: a(t, d) + 1.5,
    "add": lambda t, d: a(t, d) + b(t, d),
    "add_scalar": lambda t, d: a(t, d) + 1,
    "add_": lambda t, d: a(t, d).add_(b(t, d)),
    "sub": lambda t, d: a(t, d) - b(t, d),
    "rsub": lambda t, d: 10 - a(t, d),
    "neg": lambda t, d: -a(t, d),
    "abs": lambda t, d: a(t, d).abs(),
    "pow": lambda t, d: a(t, d) ** 2,
    "floor_divide": lambda t, d: a(t, d) // b(t, d),
    "remainder": lambda t, d: a(t, d) % b(t, d),
    "div_trunc": lambda t, d: t.div(a(t, d), b(t, d), rounding_mode="trunc"),
    "eq": lambda t, d: a(t, d) == b(t, d),
    "ne": lambda t, d: a(t, d) != b(t, d),
    "eq_scalar": lambda t, d: a(t, d) == 5,
    "eq_minus_one": lambda t, d: t.tensor([t.iinfo(d).max], dtype=d) == -1,
    "eq_float": lambda t, d: a(t, d) == 5.0,
    "lt": lambda t, d: a(t, d) < b(t, d),
    "ge_scalar": lambda t, d: a(t, d) >= 3,
    "maximum": lambda t, d: t.maximum(a(t, d), b(t, d)),
    "and": lambda t, d: a(t, d) & b(t, d),
    "or": lambda t, d: a(t, d) | b(t, d),
    "xor": lambda t, d: a(t, d) ^ b(t, d),
    "and_scalar": lambda t, d: a(t, d) & 3,
    "invert": lambda t, d: ~a(t, d),
    "lshift": lambda t, d: a(t, d) << 1,
    "rshift": lambda t, d: a(t, d) >> b(t, d),
    "sqrt": lambda t, d: a(t, d).sqrt(),
    "log": lambda t, d: t.log(a(t, d)),
    "sigmoid": lambda t, d: a(t, d).sigmoid(),
    "floor_ceil_trunc_round": lambda t, d: (a(t, d).floor(), a(t, d).ceil(), a(t, d).trunc(), a(t, d).round()),
    "isnan_isinf_isfinite": lambda t, d: (a(t, d).isnan(), a(t, d).isinf(), a(t, d).isfinite()),
    "signbit": lambda t, d: a(t, d).signbit(),
    "sign": lambda t, d: a(t, d).sign(),
    "clamp": lambda t, d: a(t, d).clamp(1, 4),
    "logical_not": lambda t, d: t.logical_not(a(t, d)),
    "sum": lambda t, d: (a(t, d).sum(), a(t, d).reshape(3, 1).sum(1)),
    "prod": lambda t, d: a(t, d).prod(),
    "cumsum": lambda t, d: a(t, d).cumsum(0),
    "cumprod": lambda t, d: a(t, d).cumprod(0),
    "nansum": lambda t, d: a(t, d).nansum(),
    "sum_max_wide": lambda t, d: t.tensor([t.iinfo(d).max, 1], dtype=d).sum(),
    "sum_into_uint": lambda t, d: a(t, d).sum(dtype=d),
    "sum_float_into_uint": lambda t, d: t.ones(2).sum(dtype=d),
    "sum_into_float": lambda t, d: a(t, d).sum(dtype=t.float32),
    "prod_into_uint": lambda t, d: a(t, d).prod(dtype=d),
    "cumsum_into_uint": lambda t, d: a(t, d).cumsum(0, dtype=d),
    "cumprod_into_uint": lambda t, d: a(t, d).cumprod(0, dtype=d),
    "cumsum_into_int32": lambda t, d: a(t, d).cumsum(0, dtype=t.int32),
    "mean": lambda t, d: a(t, d).mean(),
    "max": lambda t, d: a(t, d).max(),
    "max_dim": lambda t, d: a(t, d).max(0),
    "amin": lambda t, d: a(t, d).amin(),
    "argmax": lambda t, d: a(t, d).argmax(),
    "topk": lambda t, d: a(t, d).topk(2),
    "sort": lambda t, d: a(t, d).sort(),
    "sort_descending": lambda t, d: a(t, d).sort(descending=True),
    "argsort": lambda t, d: a(t, d).argsort(),
    "unique": lambda t, d: t.unique(t.tensor([3, 1, 3], dtype=d)),
    "any_all": lambda t, d: (a(t, d).any(), a(t, d).all()),
    "nonzero": lambda t, d: a(t, d).nonzero(),
    "count_nonzero": lambda t, d: t.count_nonzero(a(t, d)),
    "matmul": lambda t, d: a(t, d) @ b(t, d),
    "isclose": lambda t, d: t.isclose(a(t, d), b(t, d)),
    "allclose_equal": lambda t, d: (t.allclose(a(t, d), a(t, d)), t.equal(a(t, d), b(t, d))),
    "where_bool_condition": lambda t, d: t.where(t.tensor([True, False, True]), a(t, d), b(t, d)),
    "masked_fill": lambda t, d: a(t, d).masked_fill(t.tensor([True, False, True]), 0),
    "hash_tensor": lambda t, d: t.hash_tensor(a(t, d)),
}

SHAPE_OPS = {
    "cat": lambda t, d: t.cat([a(t, d), b(t, d)]),
    "stack": lambda t, d: t.stack([a(t, d), b(t, d)]),
    "clone": lambda t, d: a(t, d).clone(),
    "clone_noncontiguous": lambda t, d: a(t, d)[::2].clone(),
    "reshape_view": lambda t, d: (a(t, d).reshape(3, 1), a(t, d).view(1, 3), a(t, d).unsqueeze(0).squeeze(0)),
    "t_contiguous": lambda t, d: a(t, d).reshape(3, 1).expand(3, 2).t().contiguous(),
    "expand_repeat": lambda t, d: (a(t, d).expand(2, 3), a(t, d).repeat(2)),
    "roll": lambda t, d: a(t, d).roll(1),
    "flip": lambda t, d: a(t, d).flip(0),
    "diag": lambda t, d: a(t, d).diag(),
    "tril": lambda t, d: a(t, d).reshape(1, 3).tril(),
    "pad": lambda t, d: t.nn.functional.pad(a(t, d), (1, 1)),
    "flatten_split_chunk": lambda t, d: (a(t, d).flatten(), a(t, d).split(1), a(t, d).chunk(2)),
    "view_as_signed": lambda t, d: a(t, d).view({t.uint16: t.int16, t.uint32: t.int32, t.uint64: t.int64}[d]),
    "index": lambda t, d: (a(t, d)[1], a(t, d)[-1], a(t, d)[::2], a(t, d)[..., None]),
    "index_tensor": lambda t, d: a(t, d)[t.tensor([0, 2])],
    "index_mask": lambda t, d: a(t, d)[t.tensor([True, False, True])],
    "setitem_int": lambda t, d: (lambda x: (x.__setitem__(0, 9), x)[1])(a(t, d)),
    "setitem_slice": lambda t, d: (lambda x: (x.__setitem__(slice(0, 2), 7), x)[1])(a(t, d)),
    "setitem_minus_one": lambda t, d: (lambda x: (x.__setitem__(0, -1), x)[1])(a(t, d)),
    "gather": lambda t, d: a(t, d).gather(0, t.tensor([2, 0])),
    "index_select": lambda t, d: a(t, d).index_select(0, t.tensor([2, 0])),
    "index_select_2d": lambda t, d: (a(t, d).reshape(3, 1).index_select(0, t.tensor([2, 0])),
                                     a(t, d).reshape(1, 3).index_select(1, t.tensor([1]))),
    "repeat_interleave": lambda t, d: (a(t, d).repeat_interleave(2), a(t, d).repeat_interleave(t.tensor([1, 0, 2]))),
    "setitem_tensor_index": lambda t, d: (lambda x: (x.__setitem__(t.tensor([0, 1]), 7), x)[1])(a(t, d)),
    "setitem_mask": lambda t, d: (lambda x: (x.__setitem__(t.tensor([True, False, True]), 7), x)[1])(a(t, d)),
    "index_put_": lambda t, d: a(t, d).index_put_((t.tensor([0]),), t.tensor([9], dtype=d)),
    "scatter_": lambda t, d: a(t, d).scatter_(0, t.tensor([0]), b(t, d)),
    "scatter_add": lambda t, d: a(t, d).scatter_add(0, t.tensor([0]), b(t, d)),
    "index_add_": lambda t, d: a(t, d).index_add_(0, t.tensor([0]), b(t, d)[:1]),
    "index_fill_": lambda t, d: a(t, d).index_fill_(0, t.tensor([0]), 1),
    "masked_scatter": lambda t, d: a(t, d).masked_scatter(t.tensor([True, False, True]), b(t, d)),
    "put_": lambda t, d: a(t, d).put_(t.tensor([0]), b(t, d)[:1]),
    "masked_select": lambda t, d: a(t, d).masked_select(t.tensor([True, False, True])),
    "take": lambda t, d: a(t, d).take(t.tensor([0])),
    "searchsorted": lambda t, d: t.searchsorted(a(t, d, (1, 3, 5)), b(t, d)),
    "isin": lambda t, d: t.isin(a(t, d), b(t, d)),
    "flip_last_dim": lambda t, d: (a(t, d).flip(0), m(t, d).flip(1), m(t, d).fliplr(), m(t, d).flip(0, 1)),
    "flip_other_dims": lambda t, d: (m(t, d).flip(0), m(t, d).flipud(), m(t, d).reshape(1, 2, 3).flip(0, 1)),
    "rot90": lambda t, d: (m(t, d).rot90(), m(t, d).rot90(2), m(t, d).rot90(4)),
    "rot90_leading_dims": lambda t, d: (m(t, d).rot90(3), m(t, d).reshape(1, 2, 3).rot90(3, (1, 2))),
    "rot90_size_one_inner": lambda t, d: m(t, d).reshape(2, 3, 1).rot90(),
    "flip_size_one_inner": lambda t, d: m(t, d).reshape(2, 3, 1).flip(1),
    "flip_transposed": lambda t, d: (m(t, d).t().flip(1), m(t, d).t().contiguous().flip(0)),
    "flip_transposed_inner": lambda t, d: m(t, d).t().flip(0),
    "flip_empty_or_single": lambda t, d: (t.ones(0, dtype=d).flip(0), t.ones(1, 1, dtype=d).flip(0)),
    "pad_circular": lambda t, d: t.nn.functional.pad(m(t, d).reshape(1, 2, 3), (1, 2), mode="circular"),
    "pad_reflect": lambda t, d: t.nn.functional.pad(m(t, d).reshape(1, 2, 3), (1, 1), mode="reflect"),
    "unsafe_split": lambda t, d: a(t, d).unsafe_split(1),
    "as_strided_scatter": lambda t, d: t.as_strided_scatter(a(t, d), b(t, d)[:2], (2,), (1,)),
    "pixel_shuffle": lambda t, d: t.nn.functional.pixel_shuffle(t.ones(1, 4, 2, 2, dtype=d), 2),
    "channel_shuffle": lambda t, d: t.nn.functional.channel_shuffle(t.ones(1, 4, 2, dtype=d), 2),
    "trapezoid": lambda t, d: t.trapezoid(a(t, d)),
    "gradient": lambda t, d: t.gradient(a(t, d)),
    "combinations": lambda t, d: t.combinations(a(t, d)),
    "bmm": lambda t, d: t.bmm(t.ones(1, 2, 2, dtype=d), t.ones(1, 2, 2, dtype=d)),
    "cross": lambda t, d: t.linalg.cross(a(t, d), b(t, d)),
    "equal_promotes": lambda t, d: (t.equal(a(t, d), t.tensor([1, 2])), t.equal(a(t, d), t.tensor([1, 5, 3]))),
    "equal_float": lambda t, d: t.equal(a(t, d), t.tensor([1.0, 5.0, 3.0])),
    "count_nonzero_dim": lambda t, d: (t.count_nonzero(m(t, d), dim=0), t.count_nonzero(a(t, d), dim=0)),
    "searchsorted_empty": lambda t, d: (t.searchsorted(t.ones(0, dtype=d), t.ones(0, dtype=d)),
                                        t.searchsorted(a(t, d, (1, 3, 5)), t.ones(0, dtype=d))),
    "searchsorted_empty_boundaries": lambda t, d: t.searchsorted(t.ones(0, dtype=d), a(t, d)),
    "empty_shuffles": lambda t, d: (t.nn.functional.pixel_shuffle(t.ones(0, 4, 2, 2, dtype=d), 2),
                                    t.nn.functional.channel_shuffle(t.ones(0, 4, 2, dtype=d), 2),
                                    t.trapezoid(t.ones(0, dtype=d)), t.combinations(t.ones(1, dtype=d))),
    "combinations_r1": lambda t, d: t.combinations(a(t, d), 1),
    "fill_zero_copy": lambda t, d: (a(t, d).fill_(4), a(t, d).zero_(), a(t, d).copy_(t.tensor([7, 8, 9]))),
    "copy_from_float": lambda t, d: a(t, d).copy_(t.tensor([1.5, 2.0, 3.0])),
    "fill_minus_one": lambda t, d: a(t, d).fill_(-1),
}


@pytest.mark.parametrize("name", UINTS)
@pytest.mark.parametrize("case", list(PROMOTION) + list(OPS) + list(SHAPE_OPS))
def test_ops(case, name):
    check({**PROMOTION, **OPS, **SHAPE_OPS}[case], name)


# ---- checkpoints and safetensors ----------------------------------------------------------------

def _arrays():
    return {"a": np.array([1, 2 ** 16 - 1], np.uint16), "b": np.array([[2 ** 64 - 1, 3, 5]], np.uint64)[:, ::2],
            "c": np.array([4, 2 ** 32 - 1, 7], np.uint32)[1:], "f": np.array([1.5, 2.0], np.float32)}


def _plain(d):
    return {k: (str(v.dtype).replace("torch.", ""), v.tolist()) for k, v in d.items()}


def test_save_load_interoperates():
    expected = {k: (str(v.dtype), v.tolist()) for k, v in _arrays().items()}
    buf = io.BytesIO()
    ember.save({k: ember.from_numpy(v) for k, v in _arrays().items()}, buf)
    buf.seek(0)
    assert _plain(torch.load(buf)) == expected  # weights_only=True: torch's allow-list accepts what ember wrote
    buf = io.BytesIO()
    torch.save({k: torch.from_numpy(v) for k, v in _arrays().items()}, buf)
    for weights_only in (True, False):
        buf.seek(0)
        assert _plain(ember.load(buf, weights_only=weights_only)) == expected
    base = torch.tensor([1, 2, 3, 4, 5, 6]).to(torch.uint32)
    buf = io.BytesIO()
    torch.save([base, base[2:]], buf)
    buf.seek(0)
    whole, tail = ember.load(buf)
    assert tail.dtype is ember.uint32 and tail.tolist() == [3, 4, 5, 6]
    whole[3] = 40  # the two share one storage, as in torch
    assert tail.tolist() == [3, 40, 5, 6]


def test_safetensors_interoperates():
    import safetensors.torch as st
    from ember.utils import safetensors as es
    tensors = {k: np.ascontiguousarray(v) for k, v in _arrays().items()}
    written = es.save({k: ember.from_numpy(v) for k, v in tensors.items()})
    assert written == st.save({k: torch.from_numpy(v) for k, v in tensors.items()})
    assert _plain(es.load(written)) == _plain(st.load(written))


# ---- hash_tensor beyond the OpInfo samples --------------------------------------------------------

@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.float16, np.int64, np.int32, np.int8, np.uint8,
                                      np.bool_, np.complex64, np.uint16, np.uint64])
def test_hash_tensor(np_dtype):
    rng = np.random.default_rng(3)
    for shape in [(), (7,), (3, 4), (2, 3, 4), (0, 3), (3, 0)]:
        x = (rng.standard_normal(shape) * 1000).astype(np_dtype) if np_dtype is not np.bool_ else rng.random(shape) > .5
        if x.dtype.kind == "f" and x.size:
            x.flat[0] = np.nan
            x.flat[-1] = -0.0
        for kw in [{}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": (0, 1)}, {"dim": []}, {"dim": 1}]:
            check(lambda t, d: t.hash_tensor(t.from_numpy(x.copy()), **kw), "uint64")
        if x.ndim >= 2:
            check(lambda t, d: t.from_numpy(x.copy()).transpose(0, -1)[::2].hash_tensor(0, keepdim=True), "uint64")
    ones = np.ones((3, 4), np.float32)
    for fn in (lambda t, d: t.hash_tensor(t.from_numpy(ones), mode=1),
               lambda t, d: t.hash_tensor(t.from_numpy(ones), mode=True),
               lambda t, d: t.hash_tensor(t.from_numpy(ones), 1, out=t.empty(0, dtype=d)),
               lambda t, d: t.hash_tensor(t.from_numpy(ones), 1, out=t.empty(0, dtype=t.int64)),
               lambda t, d: t.hash_tensor(t.from_numpy(ones), (0, 0)),
               lambda t, d: t.hash_tensor(t.from_numpy(ones), 2),
               lambda t, d: t.hash_tensor(t.from_numpy(ones).requires_grad_()).requires_grad):
        check(fn, "uint64")
