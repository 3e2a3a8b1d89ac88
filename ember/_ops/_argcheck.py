"""Argument checking (issue 18): a call that does not match an op's declared signature gets torch's
TypeError in torch's words (`relu(): argument 'input' (position 1) must be Tensor, not float`), never an
AttributeError, KeyError or NumPy exception from deep inside a kernel.

The declaration is the op's own signature (torch's names, order and defaults; tests/test_signatures.py);
a parameter's type follows from its name and default (KINDS_BY_NAME, a bool default is a bool ...), with
the exceptions per op in OVERRIDES. Note [Checked at the boundary] says why this costs a valid call nothing.
"""
import dis
import inspect
import os

import numpy as np

from .. import _dtype as D
from .._device import device as _Device
from .._layout import layout as _Layout, memory_format as _MemoryFormat
from .._tensor import Size, Tensor

# Note [Checked at the boundary]: install() wraps every class op and composite in guard(), which takes the
# place of the axis=/keepdims= wrapper such an op had (so ops with a dim= keep their frame count; others
# get one frame more). Rows (add, mul, exp ... and the operator dunders) check their own arguments and
# are not wrapped. A call goes straight to the op unless the cheap type test fails: a keyword given to
# a bool, dtype, layout, device or memory_format parameter is of the wrong class, or a keyword value
# (or a positional argument after the second, or from a flag's position on: hann_window(5, 'x')) is
# of none of the PLAIN classes; then the arguments are checked against the declaration first
# (`sum(x, 1, dtype='float32')` is refused before any kernel runs). When the op raises (an internal AttributeError or KeyError, or a value check that torch would
# only reach after its type checks) the arguments are checked then, and torch's TypeError replaces
# that error when they do not match; NumPy's AxisError and broadcasting ValueError become torch's
# IndexError and RuntimeError. A valid call pays the frame (where it is new), `if kwargs`, one len()
# and a try block (free in CPython 3.11+); the full check runs only for calls that fail.


# ---- kinds: (torch's name for the type, test) ----------------------------------------------------

def _is_int(v):
    c = v.__class__
    if c is int:
        return True
    if c is bool or isinstance(v, (np.bool_, float, np.floating)):
        return False
    if isinstance(v, Tensor):
        return v._data.ndim == 0 and v._dtype.category == D.INT
    return isinstance(v, (int, np.integer))


def _is_number(v):
    return isinstance(v, (int, float, complex, np.number, np.bool_)) or (isinstance(v, Tensor) and v._data.ndim == 0)


def _is_real(v):
    return _is_number(v) and not isinstance(v, (complex, np.complexfloating))


def _ints_error(v):
    """None when v is an int or a sequence of ints, else the words after "must be tuple of ints"."""
    if _is_int(v):
        return None
    if not isinstance(v, (tuple, list)):
        return f", not {_type_name(v)}"
    for i, e in enumerate(v):
        if not _is_int(e):
            return f", but found element of type {_type_name(e)} at pos {i}"
    return None


TENSOR = ("Tensor", lambda v: isinstance(v, Tensor))
TENSOR_OR_NUMBER = ("Tensor", lambda v: isinstance(v, Tensor) or _is_number(v))
TENSORS = ("tuple of Tensors", lambda v: isinstance(v, (tuple, list)) and all(isinstance(t, Tensor) for t in v))
BOOL = ("bool", lambda v: v.__class__ is bool)
OPTIONAL_BOOL = ("bool", lambda v: v.__class__ is bool or v is None)  # torch's `bool?`
INT = ("int", _is_int)
OFFSET = ("int", _is_int)  # an int the kernel would take as a float (triu(x, 1.5)): checked first, as the flags
INTS = ("tuple of ints", lambda v: _ints_error(v) is None)
NUMBER = ("Number", _is_number)
FLOAT = ("float", lambda v: _is_real(v) or isinstance(v, Tensor))  # a float default: bernoulli_(p) takes a Tensor
DTYPE = ("torch.dtype", lambda v: isinstance(v, D.dtype))
DEVICE = ("torch.device", lambda v: isinstance(v, (_Device, str)) or (_is_int(v) and not isinstance(v, Tensor)))
LAYOUT = ("torch.layout", lambda v: isinstance(v, _Layout))
MEMORY_FORMAT = ("torch.memory_format", lambda v: isinstance(v, _MemoryFormat))
OPTIONAL_TENSOR = ("Tensor", lambda v: v is None or isinstance(v, Tensor))
OPTIONAL = ("Tensor", lambda v: v is None or isinstance(v, Tensor) or _is_number(v))  # weight=, bias= (Tensor?)
INDEX = ("Tensor", lambda v: isinstance(v, Tensor) or _is_int(v))  # index_select's Tensor, select's int
TOLERANCE = ("float", TENSOR_OR_NUMBER[1])  # isclose's float, linalg.matrix_rank's Tensor
OUT = ("Tensor", lambda v: isinstance(v, Tensor) or (isinstance(v, (tuple, list))
                                                      and all(isinstance(t, Tensor) for t in v)))

KINDS_BY_NAME = {
    "input": TENSOR, "self": TENSOR, "mat1": TENSOR, "mat2": TENSOR, "vec": TENSOR, "vec1": TENSOR, "vec2": TENSOR,
    "batch1": TENSOR, "batch2": TENSOR, "tensor1": TENSOR, "tensor2": TENSOR, "input2": TENSOR, "input3": TENSOR,
    "src": TENSOR_OR_NUMBER,
    "mask": TENSOR,
    "other": TENSOR_OR_NUMBER, "weight": OPTIONAL, "bias": OPTIONAL_TENSOR, "target": TENSOR, "index": INDEX,
    "tensors": TENSORS, "dim": INTS, "dims": INTS, "dim0": INT, "dim1": INT, "dim2": INT, "start_dim": INT,
    "end_dim": INT, "diagonal": OFFSET, "offset": OFFSET, "k": INT, "chunks": INT, "sections": INT,
    "dtype": DTYPE, "device": DEVICE, "layout": LAYOUT, "memory_format": MEMORY_FORMAT, "out": OUT,
    "requires_grad": OPTIONAL_BOOL, "pin_memory": OPTIONAL_BOOL, "keepdim": BOOL, "stable": OPTIONAL_BOOL,
    "descending": BOOL, "train": BOOL, "training": BOOL, "unbiased": BOOL, "some": BOOL,
    "hermitian": BOOL, "check_errors": BOOL, "pivot": BOOL, "periodic": BOOL, "left": BOOL, "return_inverse": BOOL,
    "return_counts": BOOL, "return_complex": BOOL, "onesided": BOOL, "normalized": BOOL, "sparse_grad": BOOL,
    "replacement": BOOL, "right": BOOL, "out_int32": BOOL, "ceil_mode": BOOL, "return_indices": BOOL,
    "largest": BOOL, "sorted": BOOL, "equal_nan": BOOL, "rtol": TOLERANCE, "atol": TOLERANCE, "alpha": NUMBER,
    "beta": NUMBER, "length": INT, "fweights": TENSOR, "aweights": TENSOR, "type1": DTYPE, "type2": DTYPE,
    "condition": TENSOR, "the_template": TENSOR, "LU_pivots": TENSOR, "LU": TENSOR, "LU_data": TENSOR,
    "pivots": TENSOR, "groups": INT,
    "kernel_size": INTS, "stride": INTS, "dilation": INTS, "output_size": INTS, "size": INTS,
    "min": TENSOR_OR_NUMBER, "max": TENSOR_OR_NUMBER, "exponent": TENSOR_OR_NUMBER, "maxnorm": NUMBER,
}

# The parameters whose wrong type ember's kernels would only meet in a value check (a RuntimeError or
# ValueError where torch's parser raises TypeError first): declared, so the re-check names them.
STR = ("str", lambda v: isinstance(v, str))
INT_OR_TENSOR = ("Tensor", lambda v: isinstance(v, Tensor) or _is_int(v))  # repeat_interleave's repeats
INTS_OR_TENSOR = ("tuple of ints", lambda v: isinstance(v, Tensor) or _ints_error(v) is None)  # ctc_loss's lengths
PADDING = ("tuple of ints", lambda v: isinstance(v, str) or _ints_error(v) is None)  # conv's 'same'/'valid'
FLOATS = ("tuple of floats", lambda v: isinstance(v, (tuple, list)) and all(_is_real(e) for e in v))
ORD = ("float", lambda v: isinstance(v, str) or _is_real(v))  # linalg.norm/matrix_norm: a number, 'fro', 'nuc'
# torch's overloads without the parameter, where ember's one signature defaults it to None: given, not None
P_GIVEN = ("float", lambda v: _is_real(v) or isinstance(v, Tensor))  # bernoulli(input) / bernoulli(input, p)
REPEATS_GIVEN = ("Tensor", INT_OR_TENSOR[1])  # repeat_interleave(repeats) / (input, repeats, dim)
GIVEN_NOT_NONE = (P_GIVEN, REPEATS_GIVEN)
REAL = ("float", _is_real)  # a float, or a 0-d Tensor (not a Tensor of more elements)
HIST_BINS = ("tuple of ints", lambda v: _ints_error(v) is None or isinstance(v, Tensor)
             or (isinstance(v, (tuple, list)) and all(isinstance(t, Tensor) for t in v)))  # histogramdd's int[]/Tensor[]
ADAPTIVE_SIZE = ("tuple of ints", lambda v: v is None or _is_int(v) or (hasattr(v, "__iter__")
                                                                       and all(e is None or _is_int(e) for e in v)))
PAIR = ("tuple of ints", lambda v: _is_int(v) or (hasattr(v, "__iter__") and all(_is_int(e) for e in v)))  # F's _pair


def _is_generator(v):
    from ..random import Generator
    return isinstance(v, Generator)


KINDS_BY_NAME.update({
    "interpolation": STR, "rounding_mode": STR, "side": STR, "indexing": STR, "approximate": STR, "UPLO": STR,
    "driver": STR, "upscale_factor": INT, "downscale_factor": INT, "minlength": INT, "r": INT,
    "num_classes": INT, "edge_order": INT, "steps": INT, "num_groups": INT, "padding_idx": INT, "n_fft": INT,
    "hop_length": INT, "win_length": INT, "sparse_dim": INT, "dense_dim": INT, "axis0": INT, "axis1": INT,
    "dimension": INT, "repeats": INT_OR_TENSOR, "split_sizes": INTS, "sizes": INTS, "shifts": INTS, "pad": INTS,
    "normalized_shape": INTS, "padding": INTS, "nan": REAL, "posinf": REAL, "neginf": REAL, "margin": REAL,
    "max_norm": REAL, "norm_type": REAL, "median": REAL, "mean": FLOAT, "rcond": TOLERANCE, "tol": TOLERANCE,
    "p": FLOAT, "ord": ORD, "weights": OPTIONAL_TENSOR, "w_ih": TENSOR, "w_hh": TENSOR, "b_ih": OPTIONAL_TENSOR,
    "b_hh": OPTIONAL_TENSOR, "running_mean": OPTIONAL_TENSOR, "running_var": OPTIONAL_TENSOR, "B": TENSOR,
    "value": ("Number", TENSOR_OR_NUMBER[1]), "range": FLOATS, "generator": ("torch.Generator", _is_generator),
    "input_lengths": INTS_OR_TENSOR, "target_lengths": INTS_OR_TENSOR,
})

SIZES_OR_NONE = ("tuple of ints", lambda v: v is None or _ints_error(v) is None)  # None: torch's F calls len() on it

# op -> {parameter: kind or None (unchecked)} where the name's usual kind is not this op's
OVERRIDES = {
    "lerp": {"end": TENSOR, "weight": TENSOR_OR_NUMBER},
    "pow": {"input": TENSOR_OR_NUMBER}, "float_power": {"input": TENSOR_OR_NUMBER},
    "where": {"input": TENSOR_OR_NUMBER}, "xlogy": {"input": TENSOR_OR_NUMBER},
    "result_type": {"tensor": TENSOR_OR_NUMBER}, "searchsorted": {"input": TENSOR_OR_NUMBER},
    "bucketize": {"input": TENSOR_OR_NUMBER},
    "select": {"index": INT}, "index_put": {"indices": None}, "tensordot": {"dims": None},
    "gradient": {"dim": None}, "std": {"dim": None}, "var": {"dim": None}, "std_mean": {"dim": None},
    "var_mean": {"dim": None}, "norm": {"dim": None}, "roll": {"dims": None}, "rot90": {"dims": None},
    "movedim": {"source": INTS, "destination": INTS}, "moveaxis": {"source": INTS, "destination": INTS},
    "adaptive_avg_pool2d": {"output_size": SIZES_OR_NONE}, "adaptive_avg_pool3d": {"output_size": SIZES_OR_NONE},
    "adaptive_max_pool2d": {"output_size": SIZES_OR_NONE}, "adaptive_max_pool3d": {"output_size": SIZES_OR_NONE},
    "index_add": {"source": TENSOR}, "index_copy": {"source": TENSOR}, "index_reduce": {"source": TENSOR},
    "can_cast": {"from_": DTYPE, "to": DTYPE}, "lu": {"get_infos": None}, "pca_lowrank": {"center": None},
    "normalize": {"p": None},
    "dropout": {"inplace": None}, "alpha_dropout": {"inplace": None}, "feature_alpha_dropout": {"inplace": None},
    "dropout1d": {"inplace": None}, "dropout2d": {"inplace": None}, "dropout3d": {"inplace": None},  # `if inplace:`
    "sparse_coo_tensor": {"check_invariants": OPTIONAL_BOOL, "is_coalesced": OPTIONAL_BOOL},
    "linalg_solve_triangular": {"upper": BOOL},  # keyword-only, no default (rrelu's upper is a float)
    "diff": {"dim": INT}, "fft": {"dim": INT}, "to": {"device": None, "dtype": None},
}
OVERRIDES.update({  # the names of KINDS_BY_NAME.update above that mean another type in these ops
    "norm": {"dim": None, "p": None}, "linalg_cond": {"p": ORD}, "linalg_qr": {"mode": STR},
    "take_along_dim": {"indices": TENSOR}, "dsplit": {"indices": INTS}, "hsplit": {"indices": INTS},
    "vsplit": {"indices": INTS}, "histc": {"bins": INT},
    "histogram": {"bins": INT_OR_TENSOR}, "conv1d": {"padding": PADDING}, "conv2d": {"padding": PADDING},
    "conv3d": {"padding": PADDING},
    "unfold": {"step": INT, "kernel_size": PAIR, "dilation": PAIR, "padding": PAIR, "stride": PAIR},  # Tensor's, F's
    "fold": {"output_size": PAIR, "kernel_size": PAIR, "dilation": PAIR, "padding": PAIR, "stride": PAIR},
    "rot90": {"dims": INTS}, "histogramdd": {"bins": HIST_BINS}, "embedding_renorm_": {"max_norm": REAL},
    "nll_loss": {"weight": OPTIONAL_TENSOR}, "cross_entropy": {"weight": OPTIONAL_TENSOR},
    "binary_cross_entropy": {"weight": OPTIONAL_TENSOR}, "binary_cross_entropy_with_logits": {"weight": OPTIONAL_TENSOR},
    "multi_margin_loss": {"weight": OPTIONAL_TENSOR}, "multilabel_soft_margin_loss": {"weight": OPTIONAL_TENSOR},
    "batch_norm": {"weight": OPTIONAL_TENSOR, "running_mean": OPTIONAL_TENSOR, "running_var": OPTIONAL_TENSOR},
    "bernoulli": {"p": P_GIVEN}, "repeat_interleave": {"repeats": REPEATS_GIVEN},
    # torch's Python lp_pool computes with norm_type (a Tensor works there)
    "lp_pool1d": {"norm_type": FLOAT}, "lp_pool2d": {"norm_type": FLOAT}, "lp_pool3d": {"norm_type": FLOAT},
    # torch's _list_with_default: an int, or any iterable of ints and Nones (a bare None: ember raises len()'s error);
    # return_indices is read for its truth value by torch's boolean_dispatch (replaces the entries above)
    "adaptive_avg_pool2d": {"output_size": ADAPTIVE_SIZE}, "adaptive_avg_pool3d": {"output_size": ADAPTIVE_SIZE},
    "adaptive_max_pool2d": {"output_size": ADAPTIVE_SIZE, "return_indices": None},
    "adaptive_max_pool3d": {"output_size": ADAPTIVE_SIZE, "return_indices": None},
    "adaptive_max_pool1d": {"return_indices": None}, "max_pool1d": {"return_indices": None},
    "max_pool2d": {"return_indices": None}, "max_pool3d": {"return_indices": None},
    "fractional_max_pool2d": {"return_indices": None}, "fractional_max_pool3d": {"return_indices": None},
})
# torch's Python max_unpool computes the output size from these with Python arithmetic (a dict is its keys), so
# their errors are that arithmetic's and its C-level kernel's, which ember's max_unpool raises in the same order
OVERRIDES.update({f"max_unpool{n}d": dict.fromkeys(("kernel_size", "stride", "padding", "output_size"))
                  for n in (1, 2, 3)})

# ---- issue 18, silent answers: torch's overloads refuse what ember's defaults would take ---------
GIVEN = ("a value", lambda v: v is not None)  # a NOT_NONE parameter of no other kind


def _dim_or_other(v):
    return v.__class__ is int or isinstance(v, Tensor) or _is_int(v)


def _int_or_ints(v):
    return v.__class__ is int or _ints_error(v) is None


def _operand(v):
    return v.__class__ is Tensor or v.__class__ is float or v.__class__ is int or TENSOR_OR_NUMBER[1](v)


def _bound(v):
    return v.__class__ is int or v.__class__ is float or _is_number(v)


OPERAND = ("Tensor", _operand)  # where(c, x, y): one call for a Tensor or a number (NOT_NONE tests it first)
BOUND = ("Number", _bound)  # arange(10): one call for an int or a float
DIM_OR_OTHER = ("int", _dim_or_other)  # max(x, 1), max(x, y): one call for an int (NOT_NONE tests it first)
INT_OR_INTS = ("tuple of ints", _int_or_ints)  # squeeze(x, 0), squeeze(x, (0, 1))
# torch's parser lets a Python number stand for any Tensor argument of these ops, out= included: add(x, y, out=1.5)
# writes into a new 0-d float64 tensor, resized (python_arg_parser's should_allow_numbers_as_tensors)
NUMBERS_AS_TENSORS = {"add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide"}
OUT_OR_NUMBER = ("Tensor", lambda v: OUT[1](v) or isinstance(v, (bool, int, float, complex)))
for _n in NUMBERS_AS_TENSORS:
    OVERRIDES.setdefault(_n, {})["out"] = OUT_OR_NUMBER
# op -> parameters torch declares without `?` where ember's default None only means "not given": an explicit
# None there is torch's TypeError (max(x, None), std(x, 1, None), eye(3, None)); tested first, as the flags
NOT_NONE = {
    "max": ("dim", "other"), "min": ("dim", "other"), "median": ("dim",), "nanmedian": ("dim",), "prod": ("dim",),
    "squeeze": ("dim",), "std": ("unbiased",), "var": ("unbiased",), "std_mean": ("unbiased",),
    "var_mean": ("unbiased",), "logsumexp": ("dim",), "special_logsumexp": ("dim",), "eye": ("m",),
    "arange": ("start", "end"), "normal": ("std", "size"), "where": ("input", "other"), "sparse_coo_tensor": ("size",),
    "trapz": ("x", "dx"), "trapezoid": ("x", "dx"), "cumulative_trapezoid": ("x", "dx"), "pinverse": ("rcond",),
    "linalg_vecdot": ("dim",), "linalg_matrix_rank": ("tol",), "linalg_pinv": ("rcond",),
    "contiguous": ("memory_format",), "sum_to_size": ("size",), "new": ("size",), "to_sparse": ("sparse_dim",),
    "fft_fftfreq": ("d",), "fft_rfftfreq": ("d",), "argsort": ("stable",), "normal_": ("mean",),
    **{f"fft_{n}": ("dim",) for n in ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2")},
}
# op -> (parameters, p): NOT_NONE unless p is given: normal's factory keywords belong to its (mean, std, size)
# overload only, so normal(mean_tensor, dtype=None) is refused and normal(0., 1., (2,), dtype=None) is not
NONE_ONLY_WITH = {"normal": (("dtype", "layout", "device"), "size")}
for _op, (_names, _) in NONE_ONLY_WITH.items():
    NOT_NONE[_op] = NOT_NONE.get(_op, ()) + _names
# op -> parameters (besides NOT_NONE's and the flags) whose kind is tested before the op runs, because the op
# would take a wrong value of a PLAIN class (hamming_window(5, True, [1])); only where the call is rarely hot
CHECKED_FIRST = {
    **{n: ("beta", "alpha") for n in ("addmm", "addmv", "addr", "addbmm", "baddbmm")},
    "hamming_window": ("alpha", "beta"), "kaiser_window": ("beta",), "to_sparse": ("blocksize", "dense_dim"),
    "to_dense": ("masked_grad",), "asarray": ("copy",), "cov": ("correction",), "embedding": ("padding_idx",),
    "gradient": ("dim",), "constant_pad_nd": ("pad",), "linalg_ldl_factor": ("out",),
    "linalg_ldl_factor_ex": ("out",), "unbind_copy": ("out",), "lu_unpack": ("out",),
    "linalg_matrix_rank": ("atol", "rtol"), "linalg_pinv": ("atol", "rtol"),
}
OVERRIDES.update({  # torch's `bool` (not `bool?`) and the kinds the parameter names above do not give
    "tensor": {"requires_grad": BOOL, "pin_memory": BOOL}, "new_tensor": {"requires_grad": BOOL, "pin_memory": BOOL},
    "sparse_coo_tensor": {**OVERRIDES["sparse_coo_tensor"], "requires_grad": BOOL, "pin_memory": BOOL},
    "asarray": {"copy": OPTIONAL_BOOL}, "to_dense": {"masked_grad": OPTIONAL_BOOL}, "cov": {"correction": INT},
    "to_sparse": {"sparse_dim": INT, "dense_dim": INT, "blocksize": INTS}, "embedding": {"padding_idx": INT},
    "gradient": {"dim": INTS}, "constant_pad_nd": {"pad": INTS}, "pad": {"pad": INTS},
    "linalg_ldl_factor": {"out": TENSORS}, "linalg_ldl_factor_ex": {"out": TENSORS}, "unbind_copy": {"out": TENSORS},
    "lu_unpack": {"out": TENSORS},
    "linalg_matrix_rank": {"tol": FLOAT}, "eye": {"m": INT}, "arange": {"start": BOUND, "end": BOUND},
    "where": {**OVERRIDES["where"], "input": OPERAND, "other": OPERAND},
    "normal": {"std": TENSOR_OR_NUMBER, "size": INTS}, "new": {"size": INTS},
    "trapz": {"x": TENSOR, "dx": FLOAT}, "trapezoid": {"x": TENSOR, "dx": NUMBER}, "argsort": {"stable": BOOL},
    "cumulative_trapezoid": {"x": TENSOR, "dx": NUMBER}, "linalg_pinv": {"rcond": TOLERANCE},
    "normal_": {"mean": FLOAT}, "max": {"dim": DIM_OR_OTHER}, "min": {"dim": DIM_OR_OTHER}, "median": {"dim": INT},
    "nanmedian": {"dim": INT}, "prod": {"dim": INT}, "squeeze": {"dim": INT_OR_INTS},
    "leaky_relu": {"negative_slope": NUMBER}, "leaky_relu_": {"negative_slope": NUMBER},
    **{n: {"min_val": NUMBER, "max_val": NUMBER} for n in ("hardtanh", "hardtanh_")},
})


def _none_allowed(opname, name, values):
    """Does NONE_ONLY_WITH let parameter `name` of op `opname` take None in this call (bound `values`)?"""
    names, companion = NONE_ONLY_WITH.get(opname, ((), None))
    return name in names and values.get(companion) is not None


def wrong_type(opname, name, v, words, pos=None):
    """torch's TypeError for a value check beside an op: argument `name` given v where torch takes `words`."""
    where = f" (position {pos})" if pos else ""
    return TypeError(f"{opname}(): argument '{name}'{where} must be {words}, not {_type_name(v)}")


def ints_error(opname, name, v, pos=None):
    """torch's TypeError when v is neither an int nor a sequence of ints (roll's shifts=1.5), else None; torch's
    parser checks a sequence's first item, and unpacks the others later in other words."""
    words = _ints_error(v)
    if words is None:
        return None
    if isinstance(v, (tuple, list)) and _is_int(v[0]):
        i, bad = next((i, e) for i, e in enumerate(v) if not _is_int(e))
        return TypeError(f"{opname}(): argument '{name}' failed to unpack the object at pos {i + 1} with error "
                         f"\"type must be tuple of ints,but got {_type_name(bad)}\"")
    where = f" (position {pos})" if pos else ""
    return TypeError(f"{opname}(): argument '{name}'{where} must be tuple of ints{words}")


def _type_name(v):
    c = type(v)
    if isinstance(v, Tensor):
        return "Tensor"
    if c.__module__ in ("builtins", None):
        return c.__name__
    if c.__module__ == "numpy":
        return f"numpy.{c.__name__}"
    return c.__name__


def invalid_combination(opname, args, kwargs, overloads, because=None):
    """torch's TypeError for a call that matches none of an op's overloads (given as their signatures' text;
    because: why the last one did not match)."""
    got = [_type_name(a) for a in args] + [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
    expected = "".join(f"\n * ({o})" for o in overloads)
    why = f"\n      didn't match because {because}" if because else ""
    return TypeError(f"{opname}() received an invalid combination of arguments - got ({', '.join(got)}), but "
                     f"expected one of:{expected}{why}")


def kind_of(opname, name, default):
    """The kind torch declares for parameter `name` of op `opname` (None: not checked)."""
    over = OVERRIDES.get(opname)
    if over is not None and name in over:
        return over[name]
    kind = KINDS_BY_NAME.get(name)
    if kind is None and default is not inspect.Parameter.empty and default is not None:
        if default.__class__ is bool:
            kind = BOOL
        elif default.__class__ is float:
            kind = FLOAT
    if kind is None and name in NOT_NONE.get(opname, ()):
        kind = GIVEN
    return kind


# ---- the declaration of an op, read once from its signature --------------------------------------

_specs = {}


def _spec(fn, opname):
    """[(name, kind, default, positional?)] and the Signature of fn, cached per function."""
    spec = _specs.get(fn)
    if spec is None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        params = []
        if sig is not None:
            binary = "other" in sig.parameters  # sub(True, t): torch's Scalar-first overloads take a number
            for p in sig.parameters.values():
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    continue
                kind = kind_of(opname, p.name, p.default)
                if binary and kind is TENSOR and p.name == "input":
                    kind = TENSOR_OR_NUMBER
                params.append((p.name, kind, p.default, p.kind is not p.KEYWORD_ONLY))
        spec = _specs[fn] = (sig, params)
    return spec


def argument_error(fn, opname, args, kwargs, method=False):
    """torch's TypeError for a call of fn that does not match its declaration, or None if it matches; for an
    op torch declares several overloads of, in the words of torch's overload error (OVERLOADED)."""
    err = _mismatch(fn, opname, args, kwargs, method)
    if err is None or opname not in OVERLOADED or not str(err).startswith(opname + "(): "):
        return err
    got = args[1:] if method else args
    return invalid_combination(opname, got, kwargs, (str(_spec(fn, opname)[0])[1:-1],), str(err)[len(opname) + 4:])


# the ops whose torch forms have several overloads (torch's parser then words a mismatch as "received an invalid
# combination of arguments - got (...)"), by the name the guard gives them
OVERLOADED = frozenset((
    "add", "addbmm", "addcdiv", "addcmul", "addmm", "addmv", "addmv_", "addr", "all", "any", "arange", "argsort",
    "baddbmm", "bartlett_window", "bernoulli", "bernoulli_", "bitwise_and", "bitwise_left_shift", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "blackman_window", "bmm", "bucketize", "clamp", "clamp_", "clamp_max",
    "clamp_max_", "clamp_min", "clamp_min_", "clip", "clip_", "conv1d", "conv2d", "conv3d", "copysign",
    "count_nonzero", "ctc_loss", "cumulative_trapezoid", "div", "divide", "dsplit", "eq", "eye", "fill", "fill_",
    "float_power", "floor_divide", "fmod", "ge", "gradient", "greater", "greater_equal", "gt", "hamming_window",
    "hann_window", "histogram", "histogramdd", "hsplit", "index_fill", "isin", "kaiser_window", "le", "lerp", "less",
    "less_equal", "linalg_cond", "linalg_matrix_norm", "linalg_matrix_rank", "linalg_norm", "linalg_pinv",
    "linspace", "logspace", "lt", "masked_fill", "max", "mean", "min", "mm", "moveaxis", "movedim", "multiply",
    "nanquantile", "narrow", "ne", "new", "normal", "not_equal", "pow", "prod", "quantile", "rand_like", "randint",
    "randint_like", "randn_like", "random_", "randperm", "remainder", "repeat_interleave", "result_type", "round",
    "rsub", "scatter", "searchsorted", "sort", "sparse_coo_tensor", "special_chebyshev_polynomial_t",
    "special_chebyshev_polynomial_u", "special_chebyshev_polynomial_v", "special_chebyshev_polynomial_w",
    "special_hermite_polynomial_h", "special_hermite_polynomial_he", "special_laguerre_polynomial_l",
    "special_legendre_polynomial_p", "special_shifted_chebyshev_polynomial_t", "special_shifted_chebyshev_polynomial_u",
    "special_shifted_chebyshev_polynomial_v", "special_shifted_chebyshev_polynomial_w", "special_xlog1py",
    "special_xlogy", "special_zeta", "split", "squeeze", "squeeze_copy", "std", "std_mean", "stft", "sub", "subtract",
    "sum", "tensor_split", "to_sparse", "trapezoid", "trapz", "true_divide", "var", "var_mean", "view", "view_copy",
    "vsplit", "where", "xlogy", "xlogy_"))


def _mismatch(fn, opname, args, kwargs, method=False):
    """argument_error's check: the first argument that does not match fn's declaration, in torch's words."""
    sig, params = _spec(fn, opname)
    if sig is None:
        return None
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        return TypeError(f"{opname}(): {e}")
    values = bound.arguments
    shift = 0 if method else 1
    for i, (name, kind, default, positional) in enumerate(params):
        if name not in values or kind is None:
            continue
        v = values[name]
        if v is None and (default is None or kind is OUT) and not any(kind is k for k in GIVEN_NOT_NONE) and (
                name not in NOT_NONE.get(opname, ()) or _none_allowed(opname, name, values)):
            continue
        words, test = kind
        if test(v):
            continue
        where = f" (position {i + shift})" if positional and i < len(args) else ""
        if kind is INTS and name == "dim" and default is _EMPTY and not isinstance(v, (tuple, list)):
            return TypeError(f"{opname}(): argument '{name}'{where} must be int, not {_type_name(v)}")
        if kind is INTS:
            return ints_error(opname, name, v, i + shift if where else None)
        if kind is TENSORS and isinstance(v, (tuple, list)):
            for j, t in enumerate(v):
                if not isinstance(t, Tensor):
                    return TypeError(f"expected Tensor as element {j} in argument {i}, but got {_type_name(t)}")
        return TypeError(f"{opname}(): argument '{name}'{where} must be {words}, not {_type_name(v)}")
    return None


def translate(e, fn, opname, args, kwargs, method=False):
    """The exception to raise for internal error e raised by fn: torch's TypeError if the arguments do
    not match the declaration, torch's IndexError/RuntimeError for NumPy's axis and broadcast errors,
    else None (e itself is raised)."""
    err = argument_error(fn, opname, args, kwargs, method)
    if err is not None:
        return err
    if isinstance(e, np.exceptions.AxisError) and e.axis is not None and e.ndim is not None:
        n = max(e.ndim, 1)
        return IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {e.axis})")
    if isinstance(e, AttributeError):  # the argument that lacked the attribute was of the wrong type
        err = _lacking(e, fn, opname, args, kwargs, method)
        if err is not None:
            return err
    msg = str(e)
    if isinstance(e, ValueError) and msg.startswith("operands could not be broadcast together"):
        return RuntimeError(f"{opname}(): {_broadcast_words(msg)}")
    return None


def _lacking(e, fn, opname, args, kwargs, method):
    """torch's TypeError for an AttributeError raised on one of the arguments (e.obj): an argument the
    declaration does not type, used as a Tensor (or, lacking __index__, as an int)."""
    obj = getattr(e, "obj", _NOTHING)
    if obj is _NOTHING or isinstance(obj, Tensor):
        return None
    sig, params = _spec(fn, opname)
    try:
        values = sig.bind(*args, **kwargs).arguments
    except TypeError:
        return None
    shift = 0 if method else 1
    for i, (name, kind, default, positional) in sorted(enumerate(params), key=lambda p: p[1][2] is not _EMPTY):
        v = values.get(name, _NOTHING)
        where = f" (position {i + shift})" if positional and i < len(args) else ""
        if v is obj or (type(v) is type(obj) and type(v) in (float, str) and v == obj):
            words = "int" if e.name == "__index__" else "Tensor"
            return TypeError(f"{opname}(): argument '{name}'{where} must be {words}, not {_type_name(obj)}")
        if isinstance(v, (tuple, list)) and e.name == "__index__":
            for j, item in enumerate(v):
                if item is obj:
                    return TypeError(f"{opname}(): argument '{name}'{where} must be tuple of ints, but found "
                                     f"element of type {_type_name(obj)} at pos {j}")
    return None


_NOTHING = object()
_EMPTY = inspect.Parameter.empty


def _broadcast_words(msg):
    """torch's words for NumPy's 'operands could not be broadcast together with shapes (3,4) (2,)'."""
    import re
    shapes = [tuple(int(n) for n in s.split(",") if n.strip()) for s in re.findall(r"\(([\d,\s]*)\)", msg)]
    if len(shapes) >= 2:
        a, b = shapes[0], shapes[1]
        n = max(len(a), len(b))
        pa = (1,) * (n - len(a)) + a
        pb = (1,) * (n - len(b)) + b
        for i in range(n - 1, -1, -1):
            if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
                return (f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) "
                        f"at non-singleton dimension {i}")
    return f"shapes are not broadcastable ({msg})"


# ---- the boundary -------------------------------------------------------------------------------

PLAIN = {Tensor, int, float, bool, type(None), tuple, list, Size, D.dtype}


_FLAG_KINDS = (BOOL, OPTIONAL_BOOL, DTYPE, LAYOUT, DEVICE, MEMORY_FORMAT, OFFSET)


def _flags(flags, fn, opname):
    """[{keyword: test}, (test or None per position), first] for fn's parameters of a flag kind (None passes
    where it is the default; first: the position of the first one), kept in `flags`."""
    strict = {}
    positions = []
    not_none = NOT_NONE.get(opname, ())
    checked_first = CHECKED_FIRST.get(opname, ())
    for name, kind, default, positional in _spec(fn, opname)[1]:
        test = None
        if any(kind is k for k in _FLAG_KINDS) or (kind is not None and name in checked_first + not_none):
            test = kind[1]  # (by identity: INT is OFFSET)
            if default is None and name not in not_none:
                test = (lambda v, test=test: v is None or test(v))
            strict[name] = test
        if positional:
            positions.append(test)
    first = next((i for i, t in enumerate(positions) if t is not None), len(positions))
    first = max(min(first, 2), 1)
    if positions and positions[0] is not None and _spec(fn, opname)[1][0][0] in not_none:
        first = 0  # arange(None, 5): NOT_NONE in the first position
    flags += [strict, tuple(positions), first]
    return flags


# Note [Torch functions of other objects]: an argument whose type defines __torch_function__ and is not a Tensor
# (torch.fx's Proxy above all) takes over a call it is passed to, as in torch: the op's argument check, on the way
# to its TypeError, hands the call to that type's __torch_function__(func, types, args, kwargs) instead. Only the
# failing path looks, so a call on tensors pays nothing; Tensor subclasses do not take calls over this way.
def torch_function(func, args, kwargs):
    """type(arg).__torch_function__(func, types, args, kwargs) for the first argument (also inside lists, tuples
    and keyword values) whose type defines it and is not a Tensor, or NotImplemented when none does (or when
    func is None: an internal row with no public function)."""
    if func is None:
        return NotImplemented
    found = []
    _overriding(args, found)
    _overriding(tuple(kwargs.values()), found)
    for obj in found:
        result = type(obj).__torch_function__(func, tuple({type(o): None for o in found}), args, kwargs or {})
        if result is not NotImplemented:
            return result
    return NotImplemented


def _overriding(values, found):
    for v in values:
        if type(v) in (list, tuple):
            _overriding(v, found)
        elif not isinstance(v, Tensor) and hasattr(type(v), "__torch_function__"):
            found.append(v)


def guard_namespace(names, prefix="", precheck=False, c_level=None):
    """Guard the public functions of a namespace dict (torch.nn.functional, torch.linalg ...) in place;
    precheck=False: checked only when they raise (their Python-level torch forms take what they are given),
    True (or the set of names it holds for): flags checked first too, as for torch's C-level functions
    (torch.linalg) and the Python ones that hand their flags to C (F.dropout's training=). c_level: where
    given, the names that are C-level in torch; the others are Python-level (Note [Python-level checks])."""
    for n, f in list(names.items()):
        if not n.startswith("_") and inspect.isfunction(f) and not getattr(f, "guarded", False):
            names[n] = guard(f, prefix + n, precheck=precheck if precheck in (True, False) else n in precheck,
                             python_level=c_level is not None and n not in c_level)
    from ._registry import publish
    publish(names)  # picklable by their public names


def guard(fn, opname, method=False, numpy_names=False, precheck=True, python_level=False):
    """fn checked at its boundary (Note [Checked at the boundary]); numpy_names: it also takes axis= and
    keepdims= for dim= and keepdim=, as torch's C-level parser does (the registry's numpy_names);
    python_level: torch's form is Python code, whose own checks come first (Note [Python-level checks])."""
    if getattr(fn, "guarded", False):
        return fn
    import functools

    flags = []  # the parameters that only take a bool, dtype, layout, device or memory_format: see _flags

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs:
            if method and "out" in kwargs:  # torch's Tensor methods take no out=
                raise TypeError(f"{opname}() got an unexpected keyword argument 'out'")
            if numpy_names:
                if "axis" in kwargs and "dim" not in kwargs:
                    kwargs["dim"] = kwargs.pop("axis")
                if "keepdims" in kwargs and "keepdim" not in kwargs:
                    kwargs["keepdim"] = kwargs.pop("keepdims")
            if precheck:
                strict = (flags or _flags(flags, fn, opname))[0]
                for k, v in kwargs.items():
                    test = strict.get(k)
                    if (test is not None and not test(v)) or (v.__class__ not in PLAIN and not isinstance(v, Tensor)):
                        err = argument_error(fn, opname, args, kwargs, method)
                        if err is not None:
                            if (r := torch_function(call, args, kwargs)) is not NotImplemented:
                                return r  # Note [Torch functions of other objects]
                            raise err
                        break
        if precheck and len(args) > (flags or _flags(flags, fn, opname))[2]:  # from the first flag position
            for v, test in zip(args[flags[2]:], flags[1][flags[2]:]):
                if (test is not None and not test(v)) or (v.__class__ not in PLAIN and not isinstance(v, Tensor)):
                    err = argument_error(fn, opname, args, kwargs, method)
                    if err is not None:
                        if (r := torch_function(call, args, kwargs)) is not NotImplemented:
                            return r
                        raise err
                    break
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # torch checks the types before anything else: so does the re-check
            if (r := torch_function(call, args, kwargs)) is not NotImplemented:
                return r  # Note [Torch functions of other objects]
            if python_level and _python_level_error(e):
                raise
            err = translate(e, fn, opname, args, kwargs, method)
            if err is None:
                raise
            raise err from None
    call.guarded = True
    call.numpy_names = numpy_names or getattr(fn, "numpy_names", False)
    return call


# Note [Python-level checks]: torch's Python-level functions (most of torch.nn.functional) run their own
# checks (input dims, output_size, p) before their C-level call checks the argument types, so a bad call
# gets that check's ValueError or NotImplementedError, not the parser's TypeError. Those two types are the
# Python-level ones (torch's C-level checks raise RuntimeError, IndexError or TypeError, which ember's
# F functions raise for checks torch makes after parsing). So in such a function a ValueError or
# NotImplementedError that ember raised itself (a `raise` statement in ember's code) stands, and so does such
# an IndexError (torch's Python code reads input.size(-3) or the input's sizes before its C-level call:
# fractional_max_pool2d, max_unpool3d on a 2-d input); every other error, and one from inside Python or
# NumPy, is re-checked as above.

_RAISE = dis.opmap["RAISE_VARARGS"]
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _python_level_error(e):
    """Whether e is a ValueError or NotImplementedError raised by a `raise` statement in ember's own code (not
    by Python, NumPy or a library): a Python-level check (Note [Python-level checks])."""
    tb = e.__traceback__
    if tb is None or not isinstance(e, (ValueError, NotImplementedError, IndexError)):
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return code.co_filename.startswith(_EMBER_DIR) and code.co_code[tb.tb_lasti] == _RAISE
