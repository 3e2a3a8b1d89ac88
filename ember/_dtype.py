"""dtype objects and PyTorch's type-promotion rules (not NumPy's).

See https://pytorch.org/docs/stable/tensor_attributes.html#type-promotion-doc
"""
import builtins

import numpy as np
import ml_dtypes

__all__ = ["dtype", "finfo", "iinfo", "promote_types", "result_type", "can_cast",
           "get_default_dtype", "set_default_dtype"]

# Categories order the kinds for promotion: bool < integer < floating < complex.
BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type; wraps the NumPy dtype that stores it."""
    __slots__ = ("name", "np", "itemsize", "category", "is_signed", "_rank", "limited")

    def __init__(self, name, np_dtype, category, rank, limited=False):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_signed = self.np.kind in "fcV" or self.np.kind == "i"  # V: ml_dtypes' bfloat16
        self._rank = rank
        self.limited = limited  # Note [Limited unsigned types]

    @property
    def is_floating_point(self):
        return self.category == FLOAT

    @property
    def is_complex(self):
        return self.category == COMPLEX

    def to_real(self):
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self):
        return {float64: complex128, complex128: complex128}.get(self, complex64)

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


def _dtype_by_name(name):
    return _BY_NAME[name]


bool = dtype("bool", np.bool_, BOOL, 0)
uint8 = dtype("uint8", np.uint8, INT, 1)
int8 = dtype("int8", np.int8, INT, 1)
int16 = dtype("int16", np.int16, INT, 2)
int32 = dtype("int32", np.int32, INT, 3)
int64 = dtype("int64", np.int64, INT, 4)
float16 = dtype("float16", np.float16, FLOAT, 1)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, FLOAT, 1)
float32 = dtype("float32", np.float32, FLOAT, 2)
float64 = dtype("float64", np.float64, FLOAT, 3)
complex64 = dtype("complex64", np.complex64, COMPLEX, 2)
complex128 = dtype("complex128", np.complex128, COMPLEX, 3)
# Note [Limited unsigned types]: torch's uint16/uint32/uint64 ("barebones unsigned") hold data, convert,
# compare for equality and take a few kernels (mul, bitwise and/or/xor, sum, sort ...); they promote only
# with themselves and floating types (anything else is RuntimeError), and most kernels refuse them with
# NotImplementedError. Their rank is unused: no pair of different limited types promotes.
uint16 = dtype("uint16", np.uint16, INT, 2, limited=True)
uint32 = dtype("uint32", np.uint32, INT, 3, limited=True)
uint64 = dtype("uint64", np.uint64, INT, 4, limited=True)

ALL = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
       complex64, complex128, uint16, uint32, uint64)
_BY_NAME = {d.name: d for d in ALL}
_BY_NP = {d.np: d for d in ALL}

# torch's aliases
half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble = complex64, complex128
ALIASES = {"half": half, "float": float, "double": double, "short": short, "int": int,
           "long": long, "cfloat": cfloat, "cdouble": cdouble, "complex32": None}


def from_numpy_dtype(np_dtype):
    """The ember dtype that stores a NumPy dtype; TypeError for unsupported ones."""
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            f"{NUMPY_TYPES}.")


NUMPY_TYPES = ("float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, "
               "uint8, and bool")  # the NumPy types torch.from_numpy takes, as its TypeError lists them


# ---- default dtype ----------------------------------------------------------------

class _Defaults:
    __slots__ = ("float", "complex")


_defaults = _Defaults()
_defaults.float = float32
_defaults.complex = complex64


def get_default_dtype():
    return _defaults.float


def set_default_dtype(d):
    if not isinstance(d, dtype) or d not in (float16, bfloat16, float32, float64):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _defaults.float = d
    _defaults.complex = complex128 if d is float64 else complex64


def default_complex_dtype():
    return _defaults.complex


# ---- promotion --------------------------------------------------------------------

def _promote_same_category(a, b):
    if a._rank != b._rank:
        return a if a._rank > b._rank else b
    # equal rank, different types: uint8/int8 -> int16, float16/bfloat16 -> float32
    return int16 if a.category == INT else float32


def _promote(a, b):
    if a is b:
        return a
    if a.limited or b.limited:  # Note [Limited unsigned types]: only a floating partner promotes
        hi = a if a.category > b.category else b
        return hi if hi.category == FLOAT else None
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == COMPLEX and lo.category == FLOAT and lo._rank > hi._rank:
            return complex128 if lo is float64 else hi
        return hi
    return _promote_same_category(a, b)


class _PromotionTable(dict):
    """(dtype, dtype) -> promoted dtype; a pair torch refuses is absent and raises its RuntimeError."""
    __slots__ = ()

    def __missing__(self, pair):
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                           f"{SCALAR_NAMES[pair[0]]} and {SCALAR_NAMES[pair[1]]}")


_PROMOTE = _PromotionTable({(a, b): _promote(a, b) for a in ALL for b in ALL if _promote(a, b) is not None})


def promote_types(type1, type2):
    """The smallest dtype both can be cast to, by torch's table."""
    return _PROMOTE[(type1, type2)]


def scalar_dtype(value):
    """dtype torch gives a Python scalar standing alone (wrapped number)."""
    t = type(value)
    if t is builtins.bool or isinstance(value, np.bool_):
        return bool
    if t is builtins.int or isinstance(value, np.integer):
        return int64
    if t is builtins.float or isinstance(value, np.floating):
        return _defaults.float
    if t is builtins.complex or isinstance(value, np.complexfloating):
        return _defaults.complex
    raise TypeError(f"unsupported scalar type {t.__name__}")


def combine_categories(higher, lower):
    """Promote the result of a higher-priority group with a lower one (torch's rule:
    a lower group only wins if it is of a higher category)."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        return higher.to_complex() if higher.category == FLOAT else lower
    if higher.category == FLOAT:
        return higher
    if higher is bool or lower.category == FLOAT:
        return _PROMOTE[(higher, lower)]
    return higher


def result_type_of(operands):
    """torch.result_type over tensors (ndim>0 and 0-dim) and Python scalars."""
    dim = zero = wrapped = None
    for o in operands:
        d = getattr(o, "_dtype", None)
        if d is None:
            sd = scalar_dtype(o)
            wrapped = sd if wrapped is None else _PROMOTE[(wrapped, sd)]
        elif o._data.ndim:
            dim = d if dim is None else _PROMOTE[(dim, d)]
        else:
            zero = d if zero is None else _PROMOTE[(zero, d)]
    return combine_categories(dim, combine_categories(zero, wrapped))


def result_type(tensor, other):
    return result_type_of((tensor, other))


def can_cast(from_, to):
    """torch.can_cast: same-kind casting (no float->int, no complex->real, no ->bool)."""
    if from_.category > to.category:
        return False
    return not (to is bool and from_ is not bool)


# ---- finfo / iinfo ----------------------------------------------------------------

class finfo:
    """Machine limits of a floating dtype, as torch.finfo."""

    def __init__(self, type=None):
        type = _defaults.float if type is None else type
        if type.category not in (FLOAT, COMPLEX):
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = ml_dtypes.finfo(type.to_real().np)
        self.bits = info.bits
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = builtins.float(info.tiny)
        self.smallest_normal = self.tiny
        self.resolution = builtins.float(info.resolution)
        self.dtype = type.to_real().name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integer dtype, as torch.iinfo."""

    def __init__(self, type):
        if type.category not in (INT, BOOL):
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle '"
                            f"{type}'")
        if type is bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        info = np.iinfo(type.np)
        self.bits, self.min, self.max = info.bits, builtins.int(info.min), builtins.int(info.max)
        self.dtype = type.name

    def __repr__(self):  # torch formats the limits as C's %g
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


# the C++ ScalarType names torch uses in error messages ("Float", "Long", ...)
SCALAR_NAMES = {bool: "Bool", uint8: "Byte", int8: "Char", int16: "Short", int32: "Int", int64: "Long",
                float16: "Half", bfloat16: "BFloat16", float32: "Float", float64: "Double",
                complex64: "ComplexFloat", complex128: "ComplexDouble", uint16: "UInt16", uint32: "UInt32",
                uint64: "UInt64"}

# the C++ type names other messages print ("float", "long int", "c10::Half" ...)
C_TYPE_NAMES = {bool: "bool", uint8: "unsigned char", int8: "signed char", int16: "short int", int32: "int",
                int64: "long int", float16: "c10::Half", bfloat16: "c10::BFloat16", float32: "float",
                float64: "double", complex64: "c10::complex<float>", complex128: "c10::complex<double>",
                uint16: "short unsigned int", uint32: "unsigned int", uint64: "long unsigned int"}
