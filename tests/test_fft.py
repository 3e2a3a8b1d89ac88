"""torch.fft against torch: every transform over shapes (1-D..4-D, odd/even sizes), n smaller and larger
than the dim, s/dim combinations and every norm, for float32/float64/complex64/complex128 (and int64)
inputs: result dtypes, shapes, values, gradients under a random upstream gradient (float64/complex128),
second-order gradients, grad_fn names, out=, fftfreq/rfftfreq/fftshift/ifftshift and torch's errors.
Runs through the op table's harness (tests/ops/harness.py)."""
import itertools
import warnings

import numpy as np
import pytest
import torch

import ember
from tests.ops.harness import Case, T, run_case

REAL = ("float32", "float64")
CPLX = ("complex64", "complex128")
GRAD_DTYPES = ("float64", "complex128")
NORMS = (None, "backward", "ortho", "forward")
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_D = ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")
TWO_D = ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2")
REAL_ONLY = {"rfft", "ihfft", "rfftn", "ihfftn", "rfft2", "ihfft2"}
SINGLE = dict(atol=2e-5, rtol=2e-4)  # float32 sums of up to 120 terms of size <= 2


def _dtypes(name, dtypes):
    return tuple(d for d in dtypes if not (name in REAL_ONLY and d.startswith("complex")))


def _fn(name, **kwargs):
    def fn(lib, x):
        return getattr(lib.fft, name)(x, **kwargs)
    return fn


def _case(name, shape, dtypes, gradgrad=False, **kwargs):
    kid = ",".join(f"{k}={v}" for k, v in kwargs.items())
    return Case(f"fft.{name}", [T(shape)], _fn(name, **kwargs), dtypes=_dtypes(name, dtypes), gradgrad=gradgrad,
                id=f"{shape}-{kid}", **SINGLE)


def _cases():
    cases = []
    # every norm and input dtype, values and dtypes (gradients at the double precisions)
    for name, norm in itertools.product(ONE_D, NORMS):
        cases.append(_case(name, (3, 6), REAL + CPLX + (("int64",) if norm is None else ()), norm=norm))
    for name, norm in itertools.product(N_D + TWO_D, NORMS):
        cases.append(_case(name, (2, 3, 4), REAL + CPLX if norm in (None, "forward") else GRAD_DTYPES, norm=norm))
    # shapes, n smaller/larger than the dim (odd and even), dims
    for name in ONE_D:
        for shape, n, dim in [((7,), None, -1), ((8,), None, 0), ((4, 5), 3, 0), ((4, 5), 8, -1),
                              ((2, 3, 5), 9, 1), ((2, 3, 5), 2, -1), ((2, 2, 3, 4), 7, 2), ((1,), 4, 0),
                              ((4, 1), None, 0), ((3, 6), 1, 1)]:
            cases.append(_case(name, shape, GRAD_DTYPES, n=n, dim=dim, norm="ortho" if n == 9 else None))
    # s/dim combinations of the n-dimensional transforms
    nd = [(None, None), (None, (0,)), (None, (-1, 0)), ((3,), None), ((5, 2), (0, 2)), ((-1, 6), (1, 2)),
          ((4, 3, 2), None), (2, (1,)), ((3, -1), None), (None, 2)]
    for name in N_D:
        for s, dim in nd:
            cases.append(_case(name, (3, 4, 5), GRAD_DTYPES, s=s, dim=dim, norm="forward" if s == (3,) else None))
        cases.append(_case(name, (2, 3, 4, 5), GRAD_DTYPES, s=(4, 6), dim=(3, 1)))
        cases.append(_case(name, (5,), GRAD_DTYPES))
    for name in TWO_D:
        for s, dim in [(None, (-2, -1)), ((3, 7), (-2, -1)), (None, (0, 2)), ((2, 2), (2, 0))]:
            cases.append(_case(name, (3, 4, 5), GRAD_DTYPES, s=s, dim=dim))
    # second-order gradients
    for name in ONE_D:
        cases.append(_case(name, (3, 5), GRAD_DTYPES, gradgrad=True, n=6))
    for name in N_D:
        cases.append(_case(name, (3, 4), GRAD_DTYPES, gradgrad=True, s=(5, 3), norm="ortho"))
    # non-contiguous inputs
    for name in ("fft", "rfft", "irfft", "fftn", "irfftn"):
        cases.append(Case(f"fft.{name}", [T((4, 6), noncontig=True)], _fn(name, dim=0), dtypes=("float64",),
                          id="noncontig"))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case,dtype", [pytest.param(c, d, id=c.param_id(d)) for c in CASES for d in c.dtypes])
def test_transform(case, dtype):
    run_case(case, dtype)


# ---- grad_fn names, out= -------------------------------------------------------------------------

GRAD_FN = [("fft", "float64"), ("fft", "complex128"), ("ifft", "complex128"), ("rfft", "float64"),
           ("irfft", "complex128"), ("hfft", "complex128"), ("ihfft", "float64"), ("fftn", "complex128"),
           ("rfftn", "float64"), ("irfftn", "complex128"), ("hfftn", "complex128"), ("ihfftn", "float64")]


@pytest.mark.parametrize("name,dtype", GRAD_FN)
def test_grad_fn_name(name, dtype):
    arr = np.ones((3, 4), dtype)
    t = getattr(torch.fft, name)(torch.from_numpy(arr).requires_grad_())
    e = getattr(ember.fft, name)(ember.from_numpy(arr).requires_grad_())
    assert e.grad_fn.name() == t.grad_fn.name()


@pytest.mark.parametrize("name,x_dtype,out_dtype", [
    ("fft", "float64", "complex128"), ("fft", "float64", "complex64"), ("fft", "float64", "float64"),
    ("rfftn", "float32", "complex64"), ("irfft", "complex128", "float64"), ("irfft", "complex64", "complex64"),
    ("hfftn", "complex128", "float32"), ("ihfft2", "float64", "float64")])
def test_out(name, x_dtype, out_dtype):
    arr = np.random.default_rng(1).standard_normal((3, 4)).astype(x_dtype)
    results = []
    for lib in (torch, ember):
        out = lib.empty(0, dtype=getattr(lib, out_dtype))
        try:
            r = getattr(lib.fft, name)(lib.from_numpy(arr.copy()), out=out)
        except RuntimeError as e:
            results.append(type(e))
            continue
        assert r is out
        results.append((str(out.dtype).split(".")[-1], tuple(out.shape), out.resolve_conj().numpy()))
    if isinstance(results[0], type) or isinstance(results[1], type):
        assert results[0] == results[1]
        return
    assert results[0][:2] == results[1][:2]
    np.testing.assert_allclose(results[1][2], results[0][2], rtol=1e-5, atol=1e-5)


# ---- fftfreq, rfftfreq, fftshift, ifftshift ---------------------------------------------------------

@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("n,d,dtype", [(0, 1.0, None), (1, 1.0, None), (4, 1.0, None), (5, 1.0, None),
                                       (7, 0.3, "float64"), (8, 2, "float32"), (5, 0.3, "float16"),
                                       (6, 0.1, "bfloat16"), (9, 1e-3, None)])
def test_freq(name, n, d, dtype):
    res = []
    for lib in (torch, ember):
        kw = {} if dtype is None else {"dtype": getattr(lib, dtype)}
        r = getattr(lib.fft, name)(n, d, **kw)
        res.append((str(r.dtype).split(".")[-1], tuple(r.shape), r.float().numpy()))
    assert res[0][:2] == res[1][:2]
    np.testing.assert_array_equal(res[1][2], res[0][2])


def test_freq_requires_grad_and_out():
    for name in ("fftfreq", "rfftfreq"):
        t = getattr(torch.fft, name)(6, dtype=torch.float64, requires_grad=True)
        e = getattr(ember.fft, name)(6, dtype=ember.float64, requires_grad=True)
        assert e.requires_grad and t.requires_grad and e.is_leaf
        for size in (0, 7):  # an out= of another size is resized, with torch's warning unless empty
            outs = []
            for lib in (torch, ember):
                out = lib.empty(size, dtype=lib.float64)
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    assert getattr(lib.fft, name)(6, 0.5, out=out) is out
                outs.append((tuple(out.shape), out.numpy(), [str(x.message)[:40] for x in w]))
            assert outs[0][0] == outs[1][0] and outs[0][2] == outs[1][2]
            np.testing.assert_array_equal(outs[1][1], outs[0][1])


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("shape,dim", [((7,), None), ((4, 5), None), ((4, 5), 0), ((2, 3, 5), (0, 2)),
                                       ((2, 3, 5), -1), ((3, 4, 5, 6), [1, 3])])
def test_shift(name, shape, dim):
    def fn(lib, x):
        return getattr(lib.fft, name)(x, dim=dim)
    for dtype in ("float64", "complex128"):
        run_case(Case(f"fft.{name}", [T(shape)], fn, dtypes=(dtype,), id=str(shape)), dtype)


# ---- errors --------------------------------------------------------------------------------------

def _r(lib, *shape, dtype="float32"):
    return lib.zeros(*shape, dtype=getattr(lib, dtype))


ERRORS = {
    "half": lambda lib: lib.fft.fft(_r(lib, 4, dtype="float16")),
    "bfloat16": lambda lib: lib.fft.rfft(_r(lib, 4, dtype="bfloat16")),
    "half-fftn": lambda lib: lib.fft.fftn(_r(lib, 4, dtype="float16")),
    "norm": lambda lib: lib.fft.fft(_r(lib, 4), norm="bad"),
    "norm-int": lambda lib: lib.fft.fftn(_r(lib, 4), norm=1),
    "norm-empty": lambda lib: lib.fft.ihfft(_r(lib, 4), norm=""),
    "norm-nd": lambda lib: lib.fft.irfftn(_r(lib, 4, dtype="complex64"), norm="ortho2"),
    "n-zero": lambda lib: lib.fft.fft(_r(lib, 4), n=0),
    "n-negative": lambda lib: lib.fft.rfft(_r(lib, 4), n=-2),
    "n-float": lambda lib: lib.fft.fft(_r(lib, 4), n=2.5),
    "dim-float": lambda lib: lib.fft.fft(_r(lib, 4), dim=1.0),
    "dim-tuple": lambda lib: lib.fft.fft(_r(lib, 4), dim=(0,)),
    "dim-range": lambda lib: lib.fft.fft(_r(lib, 4, 3), dim=2),
    "dim-0d": lambda lib: lib.fft.fft(lib.tensor(1.0)),
    "irfft-one-point": lambda lib: lib.fft.irfft(_r(lib, 1, dtype="complex64")),
    "irfft-n0": lambda lib: lib.fft.irfft(_r(lib, 4, dtype="complex64"), n=0),
    "rfft-complex": lambda lib: lib.fft.rfft(_r(lib, 4, dtype="complex64")),
    "ihfft-complex": lambda lib: lib.fft.ihfft(_r(lib, 4, dtype="complex128")),
    "rfftn-complex": lambda lib: lib.fft.rfftn(_r(lib, 4, dtype="complex64")),
    "ihfft2-complex": lambda lib: lib.fft.ihfft2(_r(lib, 4, 4, dtype="complex64")),
    "s-too-long": lambda lib: lib.fft.fftn(_r(lib, 4, 3), s=(2, 2, 2)),
    "s-dim-length": lambda lib: lib.fft.fftn(_r(lib, 4, 3), s=(2, 2), dim=(0,)),
    "dims-unique": lambda lib: lib.fft.fftn(_r(lib, 4, 3), dim=(0, 0)),
    "dims-unique-neg": lambda lib: lib.fft.rfft2(_r(lib, 4, 3), dim=(1, -1)),
    "dim-range-nd": lambda lib: lib.fft.fftn(_r(lib, 4, 3), dim=(0, 2)),
    "s-zero": lambda lib: lib.fft.fftn(_r(lib, 4, 3), s=(0, 3)),
    "s-float": lambda lib: lib.fft.fftn(_r(lib, 4, 3), s=(2.0, 3)),
    "fft2-1d": lambda lib: lib.fft.fft2(_r(lib, 4)),
    "rfftn-no-dims": lambda lib: lib.fft.rfftn(_r(lib, 4, 3), dim=()),
    "irfftn-no-dims": lambda lib: lib.fft.irfftn(_r(lib, 4, 3, dtype="complex64"), dim=()),
    "hfftn-no-dims": lambda lib: lib.fft.hfftn(_r(lib, 4, 3, dtype="complex64"), dim=()),
    "ihfftn-no-dims": lambda lib: lib.fft.ihfftn(_r(lib, 4, 3), dim=()),
    "irfftn-last-one": lambda lib: lib.fft.irfftn(_r(lib, 4, 1, dtype="complex64")),
    "input-list": lambda lib: lib.fft.fft([1.0, 2.0]),
    "fftfreq-float-n": lambda lib: lib.fft.fftfreq(4.0),
    "fftfreq-negative": lambda lib: lib.fft.fftfreq(-1),
    "fftfreq-int-dtype": lambda lib: lib.fft.fftfreq(4, dtype=lib.int64),
    "fftfreq-complex-dtype": lambda lib: lib.fft.fftfreq(4, dtype=lib.complex64),
    "fftshift-dim-range": lambda lib: lib.fft.fftshift(_r(lib, 4, 3), dim=5),
    "fftshift-0d": lambda lib: lib.fft.fftshift(lib.tensor(1.0)),
    "out-real-for-complex": lambda lib: lib.fft.fft(_r(lib, 4), out=_r(lib, 4)),
    "out-complex-for-real": lambda lib: lib.fft.irfft(_r(lib, 4, dtype="complex64"),
                                                      out=_r(lib, 6, dtype="complex64")),
    "out-requires-grad": lambda lib: lib.fft.fft(_r(lib, 4).requires_grad_(), out=_r(lib, 4, dtype="complex64")),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error(name):
    fn = ERRORS[name]
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(type(te.value)) as ee:
        fn(ember)
    if type(te.value) is RuntimeError and "out=" not in str(te.value):  # torch's message (out=: torch names
        # its internal primitive, _fft_r2c(), where ember names the public function)
        assert str(ee.value).split("\n")[0] == str(te.value).split("\n")[0]


def test_zero_dim_fftn_and_empty_dims():
    """fftn of a 0-d tensor and fftn over no dims are the complex input itself (a copy), as torch."""
    for lib in (torch, ember):
        r = lib.fft.fftn(lib.tensor(2.0))
        assert tuple(r.shape) == () and str(r.dtype).endswith("complex64") and complex(r.item()) == 2
    x = np.arange(6.0).reshape(2, 3)
    t = torch.fft.ifftn(torch.from_numpy(x), dim=())
    e = ember.fft.ifftn(ember.from_numpy(x), dim=())
    assert str(e.dtype) == str(t.dtype)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_namespace():
    import ember.fft as F
    assert ember.fft is F
    for name in F.__all__:
        assert hasattr(torch.fft, name), name
    public = {n for n in dir(torch.fft) if not n.startswith("_")} - {"Tensor", "torch", "common_args",
                                                                       "factory_common_args"}
    assert sorted(F.__all__) == sorted(public)


@pytest.mark.parametrize("name", ["irfft", "hfft"])
@pytest.mark.parametrize("n", [4, 5, 16])
def test_c2r_with_n_trims_or_pads_the_input_and_its_gradient(name, n):
    """irfft/hfft(x, n) use the first n // 2 + 1 coefficients of x (zero-padded when x is shorter):
    values and the gradient (zero for the coefficients left out) as torch."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal(7) + 1j * rng.standard_normal(7)
    g = rng.standard_normal(n)
    res = []
    for lib in (torch, ember):
        x = lib.tensor(a, requires_grad=True)
        y = getattr(lib.fft, name)(x, n=n)
        y.backward(lib.tensor(g))
        res.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-10, atol=1e-12)
