"""Which ops take torch's limited unsigned dtypes (uint16/uint32/uint64): Note [Limited unsigned types] in
ember/_dtype.py. One table, read by the row registry (compute_dtype_of) and by Op.apply (on the first input):
a row or class op not named here refuses them with torch's NotImplementedError, as torch 2.13's kernels do.
Composites that compute on arrays without a row or class op call refuse() (or refuse_flip()) themselves."""
from .. import _dtype as D

# elementwise rows torch runs on them (beyond the TO_FLOAT rows, which compute in a floating dtype)
ROWS = frozenset({
    "mul", "eq", "ne", "bitwise_and", "bitwise_or", "bitwise_xor", "ceil", "floor", "trunc", "_round0",
    "isfinite", "isinf", "isnan", "isneginf", "isposinf", "isreal", "signbit",
})

# class ops (Op subclasses, by class name) torch runs on them: copies, views, joins, sorting, sums
# (view ops, which only reinterpret the storage, take every dtype)
CLASS_OPS = frozenset({
    "ToCopy", "Clone", "UnsafeView", "NarrowCopy", "Cat", "Stack", "Repeat", "ConstantPad", "DiagEmbed", "Index",
    "IndexSelect",  # (torch's 1-D index_select refuses them: index_select)
    "Sum", "NanSum", "Prod", "CumSum", "CumProd", "Sort", "Unique", "NanToNum", "Roll", "UnsafeSplit",
    "UnsafeSplitWithSizes", "AsStridedScatter", "CircularPad1D_0", "CircularPad2D_0", "CircularPad3D_0",
    "Flip", "Rot90",  # (torch's flip kernel refuses them when the innermost dim is flipped: refuse_flip)
})

# torch's kernel names where they are not "<op>_cpu"
KERNELS = {
    "_add": "add_stub", "_sub": "add_stub", "fmax": "maximum_cpu", "fmin": "minimum_cpu",
    "floor_divide": "div_floor_cpu", "_div_floor": "div_floor_cpu", "_div_trunc": "div_trunc_cpu", "sgn": "sign_cpu",
    "bitwise_left_shift": "lshift_cpu", "bitwise_right_shift": "rshift_cpu", "pow": "pow", "float_power": "pow",
    "Amax": "max_values_cpu", "MaxAll": "max_all", "MaxDim": "max_cpu", "MedianAll": "median_cpu", "TopK": "topk_cpu",
    "Flip": "flip_cpu", "Gather": "scatter_gather_tensor_cpu", "IndexSelect": "index_select", "Mm": "addmm_impl_cpu_",
    "Dot": "dot", "Einsum": "bmm", "Tri": "tril", "Trace": "trace", "Clamp": "clamp_scalar_cpu",
    "MaskedFill": "masked_fill", "MaskedSelect": "masked_select", "Take": "take_cpu", "Relu": "clamp_min_scalar_cpu",
}


def refusal(name, d):
    """torch's NotImplementedError for op `name` (a row or class op) on limited dtype d."""
    kernel = KERNELS.get(name, f"{name.lower()}_cpu")  # class ops: "Bincount" -> "bincount_cpu"
    return NotImplementedError(f"\"{kernel}\" not implemented for '{D.SCALAR_NAMES[d]}'")


def check_row(name, kind_is_float, d):
    """Raise torch's refusal when row `name` cannot run on dtype d."""
    if d.limited and not kind_is_float and name not in ROWS:
        raise refusal(name, d)


def check_class_op(cls, d):
    """Raise torch's refusal when class op cls cannot run on dtype d (its first input's)."""
    name = cls.__name__
    if not cls.view and name not in CLASS_OPS:
        raise refusal(name, d)


def refuse_flip(t, flipped):
    """torch flips whole rows by bytes, without its typed kernel, unless the innermost dim in memory (of size > 1)
    is among those flipped."""
    x = t._data
    if not t._dtype.limited or x.size == 0:
        return
    dims = [i for i in range(x.ndim) if x.shape[i] > 1]
    if dims and min(dims, key=lambda i: abs(x.strides[i])) in flipped:
        raise refusal("flip", t._dtype)


def refuse(t, kernel, empty_ok=False):
    """For ops that reach no row or class op (composites on arrays): torch's refusal of t's limited dtype
    (empty_ok: torch returns an empty tensor without running the kernel)."""
    d = t._dtype
    if d.limited and not (empty_ok and t._data.size == 0):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{D.SCALAR_NAMES[d]}'")
