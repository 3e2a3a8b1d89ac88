"""Op table rows: empty_permuted, new_empty_strided, as_strided_scatter, resize_as_, constant_pad_nd,
conj_physical_, __rdiv__, chalf (ember has no complex32: it raises), channel_shuffle."""
import warnings

import pytest

from .harness import Case as C, T

INT = ("int64",)
CPLX = ("complex64", "complex128")


def _scatter(t, x, s, size, stride, offset=None):
    """torch 2.13's as_strided_scatter backward copies the window of grad into the input's gradient (its
    as_strided_scatter_backward): wrong, the window was overwritten. ember gives the true gradient, checked
    against torch's clone + as_strided + copy_, which is the same function."""
    if t.__name__ == "ember":
        return t.as_strided_scatter(x, s, size, stride, offset)
    r = x.clone()
    r.as_strided(size, stride, offset).copy_(s)
    return r


def _chalf(t, x):
    if t.__name__ == "ember":
        with pytest.raises(NotImplementedError, match="complex32"):
            x.chalf()
        return x.cfloat()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "ComplexHalf support is experimental"
        return x.chalf().cfloat()  # torch's complex32 values, widened for comparison


CASES = [
    C("empty_permuted", [], lambda t: (lambda e: (e.shape, e.stride(), e.dtype))(
        t.empty_permuted((2, 3, 4), (0, 2, 1))), dtypes=("float32",)),
    C("empty_permuted", [], lambda t: (lambda e: (e.shape, e.stride(), e.dtype, e.requires_grad))(
        t.empty_permuted((2, 3, 4), (2, 1, 0), dtype=t.float64, requires_grad=True)), dtypes=("float32",),
      id="dtype"),
    C("empty_permuted", [], lambda t: t.empty_permuted((2, 3, 4), (0, 2)), dtypes=("float32",), error=RuntimeError,
      id="len"),
    C("empty_permuted", [], lambda t: t.empty_permuted((2, 3, 4), (0, 2, 2)), dtypes=("float32",),
      error=RuntimeError, id="dup"),
    C("Tensor.new_empty_strided", [(3, 4)], lambda t, x: (lambda e: (e.shape, e.stride(), e.dtype))(
        x.new_empty_strided((2, 3), (1, 2))), grad=False),
    C("Tensor.new_empty_strided", [(3, 4)], lambda t, x: (lambda e: (e.shape, e.stride(), e.dtype, e.requires_grad))(
        x.new_empty_strided((2, 3), (3, 1), dtype=t.float64, requires_grad=True)), grad=False, id="dtype"),
    C("as_strided_scatter", [(3, 4), (2, 2)], lambda t, x, s: _scatter(t, x, s, (2, 2), (1, 2), 1), gradgrad=True),
    C("as_strided_scatter", [(3, 4), (2, 3)], lambda t, x, s: _scatter(t, x, s, (2, 3), (4, 1)), id="window"),
    C("as_strided_scatter", [(3, 4), (2, 3)], lambda t, x, s: x.as_strided_scatter(s, (2, 3), (4, 1)), grad=False,
      id="method"),
    C("as_strided_scatter", [T((3, 4), dtype="int64"), T((2, 2), dtype="int64")],
      lambda t, x, s: t.as_strided_scatter(x, s, (2, 2), (2, 1), 3), dtypes=INT, id="int"),
    C("as_strided_scatter", [(3, 4), (2, 3)], lambda t, x, s: t.as_strided_scatter(x, s, (2, 2), (1, 2)),
      error=RuntimeError, id="bad-src"),
    # the window ends one element past the input's storage of 10 (offset 2 + 1 * 4 + 2 * 2 = 10), then at its last
    C("as_strided_scatter", [(2, 5), (2, 3)], lambda t, x, s: t.as_strided_scatter(x, s, (2, 3), (4, 2), 2),
      error=RuntimeError, id="err-one-past-storage"),
    C("as_strided_scatter", [(2, 5), (2, 3)], lambda t, x, s: t.as_strided_scatter(x, s, (2, 3), (4, 2), 1), grad=False,
      id="last-element-of-storage"),
    C("resize_as_", [(2,), (3, 4)], lambda t, x, y: t.resize_as_(x.detach().clone(), y).shape, grad=False),
    C("constant_pad_nd", [(3, 4)], lambda t, x: t.constant_pad_nd(x, (1, 2), 3.0), gradgrad=True),
    C("constant_pad_nd", [(3, 4)], lambda t, x: t.constant_pad_nd(x, [1, 2, 0, -1]), id="crop"),
    C("constant_pad_nd", [(3, 4)], lambda t, x: t.constant_pad_nd(x, [1]), error=RuntimeError, id="odd"),
    C("conj_physical_", [(3,)], lambda t, x: t.conj_physical_(x.clone()), dtypes=CPLX),
    C("conj_physical_", [(3,)], lambda t, x: x.clone().conj_physical_(), id="real"),
    C("Tensor.__rdiv__", [T((3, 4), low=0.5, high=2)], lambda t, x: x.__rdiv__(2)),
    C("Tensor.__rdiv__", [(3, 4), T((3, 4), low=0.5, high=2)], lambda t, x, y: y.__rdiv__(x), id="tensor"),
    C("Tensor.__rdiv__", [T((3,), dtype="int64", low=1, high=5)], lambda t, x: x.__rdiv__(3), dtypes=INT, id="int"),
    C("Tensor.__rdiv__", [(3,)], lambda t, x: t.Tensor.__rdiv__ is t.Tensor.__rtruediv__, id="alias"),
    C("nn.functional.channel_shuffle", [(2, 6, 3)], lambda t, x: t.nn.functional.channel_shuffle(x, 2), gradgrad=True),
    C("nn.functional.channel_shuffle", [(1, 6, 2, 1, 2)], lambda t, x: t.channel_shuffle(x, 3), id="5d"),
    C("nn.functional.channel_shuffle", [T((1, 6, 1), dtype="int64")],
      lambda t, x: t.nn.functional.native_channel_shuffle(x, 3), dtypes=INT, id="int"),
    C("nn.ChannelShuffle", [(2, 4, 3)], lambda t, x: (repr(t.nn.ChannelShuffle(2)), t.nn.ChannelShuffle(2)(x)),
      id="module"),
    C("nn.functional.channel_shuffle", [(2, 6, 3)], lambda t, x: t.nn.functional.channel_shuffle(x, 4),
      error=RuntimeError, id="indivisible"),
    C("nn.functional.channel_shuffle", [(2, 6, 3)], lambda t, x: t.nn.functional.channel_shuffle(x, 0),
      error=RuntimeError, id="zero"),
    C("nn.functional.channel_shuffle", [(2, 6)], lambda t, x: t.nn.functional.channel_shuffle(x, 2),
      error=RuntimeError, id="2d"),
    C("Tensor.chalf", [T((3,), values=[0.5, 1.25, -2.0])], _chalf, grad=False, dtypes=("float32",)),
]
