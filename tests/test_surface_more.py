"""Small public APIs real programs touch (issue 13), against torch: Tensor.fill_diagonal_, the predicates'
function forms, torch.detach/detach_, torch.bilinear, adaptive_max_pool1d, native_dropout, vander, the
deprecated frobenius_norm/nuclear_norm, native_norm: values, dtypes, shapes, gradients and error types."""
import warnings

import numpy as np
import pytest
import torch

import ember

LIBS = (torch, ember)


def _np(t):
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def same(e, t, atol=1e-6):
    """Tensors (or tuples of them, or plain values) agree in dtype, shape and values."""
    if isinstance(t, tuple):
        assert isinstance(e, tuple) and len(e) == len(t)
        for a, b in zip(e, t):
            same(a, b, atol)
        return
    if not isinstance(t, torch.Tensor):
        assert type(e) is type(t) and e == t
        return
    assert str(e.dtype) == str(t.dtype) and tuple(e.shape) == tuple(t.shape)
    assert e.requires_grad == t.requires_grad
    np.testing.assert_allclose(_np(e), _np(t), atol=atol, rtol=1e-6)


def raises_same(fn):
    """fn(lib) raises the same exception type in both libraries."""
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(type(te.value)):
        fn(ember)


def grads(fn, arrays, seed=0):
    """fn(lib, *leaves) -> tensor; the gradients of sum(out * g) for a random g agree."""
    rng = np.random.default_rng(seed)
    res = []
    for lib in LIBS:
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *leaves)
        g = lib.tensor(rng.standard_normal(tuple(out.shape)).astype(arrays[0].dtype))
        rng = np.random.default_rng(seed)
        (out * g).sum().backward()
        res.append((out, [x.grad for x in leaves]))
    (eo, eg), (to, tg) = res[1], res[0]
    same(eo, to)
    for a, b in zip(eg, tg):
        same(a, b)


# ---- fill_diagonal_ ------------------------------------------------------------------------------

SHAPES = [(3, 3), (7, 3), (3, 7), (5, 1), (8, 2), (0, 3), (2, 2, 2), (4, 4, 4), (3, 3, 3, 3)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_values(shape, wrap):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    for value in (2.5, -1):
        out = [lib.tensor(x).fill_diagonal_(value, wrap=wrap) for lib in LIBS]
        same(out[1], out[0])


@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_strided_and_dtypes(wrap):
    x = np.arange(24, dtype=np.float64).reshape(4, 6)
    for make in (lambda lib: lib.tensor(x).t(), lambda lib: lib.tensor(x)[1:, ::2],
                 lambda lib: lib.tensor(np.zeros((9, 4), np.int64)), lambda lib: lib.tensor(np.zeros((3, 3), bool))):
        for value in (1.75, True, 3):
            out = []
            for lib in LIBS:
                t = make(lib)
                r = t.fill_diagonal_(value, wrap=wrap)
                assert r is t
                out.append(t)
            same(out[1], out[0])
    out = [lib.zeros(3, 3).fill_diagonal_(lib.tensor(2.0)) for lib in LIBS]  # a 0-d tensor is a Number
    same(out[1], out[0])


def test_fill_diagonal_through_a_view_of_the_base():
    out = []
    for lib in LIBS:
        base = lib.zeros(5, 5)
        base[1:, 1:].fill_diagonal_(7.0)
        out.append(base)
    same(out[1], out[0])


def test_fill_diagonal_gradient():
    x = np.random.default_rng(1).standard_normal((6, 3))

    def fn(lib, a):
        b = a * 2
        b.fill_diagonal_(0.5, wrap=True)
        return b
    grads(fn, [x])


@pytest.mark.parametrize("fn", [
    lambda lib: lib.zeros(3).fill_diagonal_(1),
    lambda lib: lib.zeros(3, 3, 2).fill_diagonal_(1),
    lambda lib: lib.zeros(3, 3).fill_diagonal_(lib.ones(2)),
    lambda lib: lib.zeros(3, 3).fill_diagonal_("a"),
    lambda lib: lib.zeros(3, 3, requires_grad=True).fill_diagonal_(1),
])
def test_fill_diagonal_errors(fn):
    raises_same(fn)


# ---- predicates, detach ----------------------------------------------------------------------------

@pytest.mark.parametrize("values", [[0.0], 1.5, float("nan"), 0j, [[True]], [0], [], [1, 2]])
def test_is_nonzero(values):
    fn = (lambda lib: lib.is_nonzero(lib.tensor(values)), lambda lib: lib.tensor(values).is_nonzero())
    for f in fn:
        try:
            t = f(torch)
        except RuntimeError:
            raises_same(f)
            continue
        assert f(ember) is t


def test_predicates():
    for lib_fn in (lambda lib: lib.is_same_size(lib.zeros(2), lib.zeros(2)),
                   lambda lib: lib.is_same_size(lib.zeros(2), lib.zeros(1, 2)),
                   lambda lib: lib.zeros(2, 3).is_same_size(lib.ones(2, 3)),
                   lambda lib: lib.is_signed(lib.zeros(2, dtype=lib.uint8)),
                   lambda lib: lib.is_signed(lib.zeros(2, dtype=lib.int8)),
                   lambda lib: lib.is_signed(lib.zeros(2)),
                   lambda lib: lib.is_inference(lib.zeros(2)),
                   lambda lib: lib.zeros(2).is_inference()):
        t = lib_fn(torch)
        assert type(t) is bool and lib_fn(ember) is t


@pytest.mark.parametrize("fn", [
    lambda lib: lib.is_nonzero(1), lambda lib: lib.is_same_size(lib.zeros(2), 2), lambda lib: lib.is_signed(2),
    lambda lib: lib.is_inference(2), lambda lib: lib.detach(2), lambda lib: lib.detach_([1.0]),
    lambda lib: lib.detach_(lib.ones(2, requires_grad=True).view(2)),
])
def test_predicate_errors(fn):
    raises_same(fn)


def test_detach_function_forms():
    for lib_name in ("detach", "detach_"):
        res = []
        for lib in LIBS:
            a = lib.ones(2, requires_grad=True)
            b = a * 2
            d = getattr(lib, lib_name)(b)
            res.append((d, d.requires_grad, d.grad_fn is None, d is b, b.requires_grad))
        same(res[1][0], res[0][0])
        assert res[1][1:] == res[0][1:]
    e = ember.ones(3)
    d = ember.detach(e)
    d[0] = 5.0  # shares storage
    assert e[0].item() == 5.0


# ---- torch.* forms of functional ops -----------------------------------------------------------------

def test_bilinear():
    rng = np.random.default_rng(2)
    x1, x2 = rng.standard_normal((4, 3)), rng.standard_normal((4, 5))
    w, b = rng.standard_normal((2, 3, 5)), rng.standard_normal(2)
    grads(lambda lib, a, c, d, e: lib.bilinear(a, c, d, e), [x1, x2, w, b])
    grads(lambda lib, a, c, d: lib.bilinear(a, c, d), [x1, x2, w])
    raises_same(lambda lib: lib.bilinear(lib.tensor(x1), lib.tensor(x1), lib.tensor(w)))


def test_adaptive_max_pool1d():
    x = np.random.default_rng(3).standard_normal((2, 3, 7))
    for size in (3, (2,), 7):
        out = [lib.adaptive_max_pool1d(lib.tensor(x), size) for lib in LIBS]
        assert isinstance(out[1], tuple) and len(out[1]) == 2
        same(out[1], out[0])
    grads(lambda lib, a: lib.adaptive_max_pool1d(a, 3)[0], [x])
    grads(lambda lib, a: lib.adaptive_max_pool1d(a, 2)[0], [x[0]])
    raises_same(lambda lib: lib.adaptive_max_pool1d(lib.tensor(x[0, 0]), 2))


def test_native_dropout():
    x = np.random.default_rng(4).standard_normal((5, 6)).astype(np.float32)
    for p, train in ((0.5, True), (0.2, None), (0.7, True), (0.0, True), (1.0, True), (0.5, False)):
        out = []
        for lib in LIBS:
            lib.manual_seed(11)
            out.append(lib.native_dropout(lib.tensor(x), p, train))
        same(out[1], out[0])  # the mask is drawn as bernoulli_(1 - p): the same seeded stream as torch's
    out = [lib.native_dropout(lib.zeros(0, 3), 0.5, True) for lib in LIBS]
    assert [tuple(t.shape) for t in out[1]] == [tuple(t.shape) for t in out[0]]
    assert [str(t.dtype) for t in out[1]] == [str(t.dtype) for t in out[0]]

    def fn(lib, a):
        lib.manual_seed(5)
        return lib.native_dropout(a, 0.3, True)[0]
    grads(fn, [x])
    raises_same(lambda lib: lib.native_dropout(lib.tensor(x), 1.5, True))
    raises_same(lambda lib: lib.native_dropout(lib.ones(2, dtype=lib.int64), 0.5, True))


# ---- vander and the deprecated norms -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "int64", "bool", "float16", "float32", "float64", "complex64"])
@pytest.mark.parametrize("N", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander(dtype, N, increasing):
    x = np.array([1, -2, 3, 0]).astype(dtype) if dtype != "bool" else np.array([True, False, True])
    if dtype.startswith("complex"):
        x = x + 1j * np.array([0.5, 1, -1, 2])
    out = [lib.vander(lib.tensor(x), N=N, increasing=increasing) for lib in LIBS]
    same(out[1], out[0], atol=1e-3)


def test_vander_gradient_and_errors():
    # torch 2.13's own vander backward fails (its cumprod saves a slice it then overwrites: "modified by an
    # inplace operation"); ember's gradient is checked against torch's of the same matrix built as powers
    x = np.array([0.5, -1.5, 2.0, 0.0, 1.25])
    with pytest.raises(RuntimeError, match="inplace"):
        torch.vander(torch.tensor(x, requires_grad=True)).sum().backward()
    for n in (0, 1):  # no column of x: no graph, as torch's
        same(ember.vander(ember.tensor(x, requires_grad=True), n), torch.vander(torch.tensor(x, requires_grad=True), n))
    for n, inc in ((None, False), (3, True), (2, False), (6, False)):
        def fn(lib, a):
            if lib is torch:
                k = torch.arange(len(x) if n is None else n, dtype=torch.float64)
                powers = a.unsqueeze(1) ** k
                return powers if inc else powers.flip(1)
            return ember.vander(a, n, inc)
        grads(fn, [x])
    raises_same(lambda lib: lib.vander(lib.ones(2, 2)))
    raises_same(lambda lib: lib.vander(lib.ones(2), -1))
    raises_same(lambda lib: lib.vander(lib.ones(2), 1.5))


def test_frobenius_and_nuclear_norm():
    rng = np.random.default_rng(6)
    x, x3 = rng.standard_normal((3, 4)), rng.standard_normal((2, 3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn in (lambda lib, a: lib.frobenius_norm(a, (0,)), lambda lib, a: lib.frobenius_norm(a, (0, 1), True),
                   lambda lib, a: lib.frobenius_norm(a, ()), lambda lib, a: lib.frobenius_norm(a, 1),
                   lambda lib, a: lib.nuclear_norm(a), lambda lib, a: lib.nuclear_norm(a, True),
                   lambda lib, a: lib.nuclear_norm(a, keepdim=True), lambda lib, a: lib.nuclear_norm(a, (1, 0))):
            grads(fn, [x])
        grads(lambda lib, a: lib.nuclear_norm(a, (0, 2)), [x3])
        grads(lambda lib, a: lib.nuclear_norm(a), [x3])
        grads(lambda lib, a: lib.nuclear_norm(a, (1, 2), True), [x3])
        for bad in (lambda lib: lib.frobenius_norm(lib.tensor(x3), (0, 1, 2)),
                    lambda lib: lib.frobenius_norm(lib.ones(2, dtype=lib.int64), (0,)),
                    lambda lib: lib.nuclear_norm(lib.ones(3)), lambda lib: lib.nuclear_norm(lib.tensor(x3), (0,))):
            raises_same(bad)
        out = [lib.frobenius_norm(lib.tensor(x), (1,), out=lib.empty(0, dtype=lib.float64)) for lib in LIBS]
        same(out[1], out[0])


def test_deprecated_norms_warn():
    for name, args in (("frobenius_norm", ((0,),)), ("nuclear_norm", ())):
        got = []
        for lib in LIBS:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                getattr(lib, name)(lib.ones(2, 2), *args)
            got.append([(x.category, "deprecated" in str(x.message)) for x in w])
        assert got[1] == got[0] or (got[0] == [] and len(got[1]) <= 1)  # torch warns once per process


def test_native_norm():
    x = np.array([[0.0, 1.5, 0.0], [-2.0, 0.0, 3.0]])
    for args in ((), (1,), (3.0,), (float("inf"),), (2, [0, 1], False, None), (2, [], False, None),
                 (None, [1, 0], False, None)):
        out = [lib.native_norm(lib.tensor(x).to_sparse(), *args) for lib in LIBS]
        same(out[1], out[0])
    raises_same(lambda lib: lib.native_norm(lib.tensor(x)))
    for args in ((2, [0], False, _none), (2, [0, 1], True, _none), (2, [0, 1], False, lib_dtype)):
        raises_same(lambda lib: lib.native_norm(lib.tensor(x).to_sparse(), *args[:3], args[3](lib)))
    raises_same(lambda lib: lib.native_norm(lib.ones(2, dtype=lib.int64).to_sparse()))


def lib_dtype(lib):
    return lib.float64


def _none(lib):
    return None


# ---- frombuffer, get_device, set_flush_denormal -------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(), dict(count=2, offset=4), dict(offset=2, count=3), dict(count=-2),
                                dict(count=4), dict(offset=12)])
def test_frombuffer_values_and_aliasing(kw):
    raw = np.arange(16, dtype=np.uint8).tobytes()
    out = []
    for lib in LIBS:
        buf = bytearray(raw)
        t = lib.frombuffer(buf, dtype=lib.int32, **kw)
        t[0] = -7  # writes go to the buffer
        out.append((t, bytes(buf)))
    same(out[1][0], out[0][0])
    assert out[1][1] == out[0][1]


def test_frombuffer_dtypes_and_grad():
    import array
    src = array.array("d", [1.5, -2.0, 3.25])
    for dtype in ("float64", "float32", "uint8", "bool", "complex64", "int16"):
        out = [lib.frombuffer(array.array("d", src), dtype=getattr(lib, dtype)) for lib in LIBS]
        same(out[1], out[0])
    out = [lib.frombuffer(bytearray(8), dtype=lib.float32, requires_grad=True) for lib in LIBS]
    same(out[1], out[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = [lib.frombuffer(b"\x00\x00\x80\x3f", dtype=lib.float32) for lib in LIBS]  # read-only: torch warns
    same(out[1], out[0])


@pytest.mark.parametrize("fn", [
    lambda lib: lib.frombuffer(bytearray(16), dtype=lib.int32, count=5),
    lambda lib: lib.frombuffer(bytearray(16), dtype=lib.int32, offset=16),
    lambda lib: lib.frombuffer(bytearray(16), dtype=lib.int32, offset=-1),
    lambda lib: lib.frombuffer(bytearray(16), dtype=lib.int32, count=0),
    lambda lib: lib.frombuffer(bytearray(0), dtype=lib.int32),
    lambda lib: lib.frombuffer(bytearray(5), dtype=lib.int32),
    lambda lib: lib.frombuffer(bytearray(16), dtype=lib.int32, offset=2),
    lambda lib: lib.frombuffer([1, 2], dtype=lib.float32),
    lambda lib: lib.frombuffer(bytearray(16)),
    lambda lib: lib.frombuffer(memoryview(bytearray(16))[::2], dtype=lib.uint8),
    lambda lib: lib.frombuffer(bytearray(8), dtype=lib.int32, requires_grad=True),
])
def test_frombuffer_errors(fn):
    raises_same(fn)


def test_get_device_and_flush_denormal():
    assert ember.get_device(ember.ones(2)) == torch.get_device(torch.ones(2)) == -1
    raises_same(lambda lib: lib.get_device(2))
    tiny = np.array([1e-40], np.float32)
    try:
        for lib in LIBS:  # both set the same thread's floating-point state: one library at a time
            assert lib.set_flush_denormal(True) is torch.set_flush_denormal(True)
            flushed = float((lib.tensor(tiny) * 1.0)[0])
            assert lib.set_flush_denormal(False) is torch.set_flush_denormal(False)
            kept = float((lib.tensor(tiny) * 1.0)[0])
            assert (flushed == 0.0) is torch.set_flush_denormal(False) and kept != 0.0
    finally:
        torch.set_flush_denormal(False)


# ---- binomial -------------------------------------------------------------------------------------------

def test_binomial():
    rng = np.random.default_rng(7)
    count = rng.integers(0, 60, (3, 4)).astype(np.float64)
    prob = rng.uniform(0, 1, (3, 4))
    prob[0, 0], prob[1, 1], prob[2, 2], prob[2, 3] = 0.0, 1.0, 1.5, np.nan
    for dtype in (np.float64, np.float32):
        for c, p in ((count, prob), (count, prob[0]), (count[:, :1], prob)):
            out = []
            for lib in LIBS:
                g = lib.Generator().manual_seed(3)
                out.append(lib.binomial(lib.tensor(c.astype(dtype)), lib.tensor(p.astype(dtype)), generator=g))
            # the same shape, dtype and range, and (checked here) the same draws as torch's sampler
            same(out[1], out[0])
            v = out[1].numpy()
            assert ((v >= 0) & (v <= np.broadcast_to(c, v.shape)) | np.isnan(v)).all()
    a = [lib.binomial(lib.tensor(count, requires_grad=True), lib.tensor(prob)) for lib in LIBS]
    assert a[1].requires_grad and a[1].grad_fn.name() == a[0].grad_fn.name()
    raises_same(lambda lib: lib.binomial(lib.tensor(count), lib.tensor(prob), None).sum().backward())
    raises_same(lambda lib: lib.binomial(lib.tensor(count, requires_grad=True), lib.tensor(prob)).sum().backward())
    raises_same(lambda lib: lib.binomial(lib.tensor(count), lib.tensor(prob, dtype=lib.float32)))
    raises_same(lambda lib: lib.binomial(lib.tensor([5]), lib.tensor([0])))
    raises_same(lambda lib: lib.binomial(lib.tensor([5.0], dtype=lib.float16), lib.tensor([0.5], dtype=lib.float16)))


# ---- as_subclass, dim_order, resize_as, apply_, map_ -------------------------------------------------------

def test_as_subclass():
    out = []
    for lib in LIBS:
        class Sub(lib.Tensor):
            pass
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a * 2
        s = b.as_subclass(Sub)
        assert type(s) is Sub and s.data_ptr() == b.data_ptr()
        (s * lib.tensor([3.0, 5.0])).sum().backward()
        out.append((s, s.grad_fn.name(), a.grad))
    same(out[1][0], out[0][0])
    assert out[1][1] == out[0][1]
    same(out[1][2], out[0][2])
    raises_same(lambda lib: lib.ones(2).as_subclass(int))
    raises_same(lambda lib: lib.ones(2).as_subclass(3))


@pytest.mark.parametrize("make", [
    lambda lib: lib.empty(2, 3, 4), lambda lib: lib.empty(2, 3, 4).permute(2, 0, 1),
    lambda lib: lib.empty(2, 3, 5, 7).transpose(1, 2), lambda lib: lib.empty(1, 2, 3, 4),
    lambda lib: lib.empty(2, 3, 4, 5).contiguous(memory_format=lib.channels_last),
    lambda lib: lib.empty(2, 1, 4, 4).contiguous(memory_format=lib.channels_last),
    lambda lib: lib.empty(2, 3, 4)[:, ::2], lambda lib: lib.empty(3, 4).expand(2, 3, 4), lambda lib: lib.tensor(1.0),
    lambda lib: lib.empty(4, 4).t(), lambda lib: lib.empty(6, 5, 4).permute(1, 2, 0)[::2],
    lambda lib: lib.empty(3, 1, 4).permute(2, 0, 1), lambda lib: lib.empty(3, 1, 4).permute(2, 1, 0),
    lambda lib: lib.empty(2, 1, 1, 3).permute(3, 1, 2, 0), lambda lib: lib.empty(5, 1, 4).permute(0, 2, 1),
])
def test_dim_order(make):
    for check in (False, True, "formats"):
        def fn(lib):
            arg = [lib.contiguous_format, lib.channels_last] if check == "formats" else check
            return make(lib).dim_order(ambiguity_check=arg)
        try:
            expected = fn(torch)
        except RuntimeError:
            raises_same(fn)
            continue
        assert fn(ember) == expected


def test_is_contiguous_channels_last_ignores_size_one_dims():
    for shape, perm in (((2, 1, 4, 4), (0, 2, 3, 1)), ((1, 3, 1, 5), (0, 2, 3, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)),
                        ((2, 3, 4, 5), (0, 1, 2, 3)), ((0, 3, 2, 2), (0, 2, 3, 1)), ((2, 3, 4, 5), (0, 3, 2, 1))):
        got = []
        for lib in LIBS:
            t = lib.empty(tuple(shape[p] for p in perm)).permute(*np.argsort(perm).tolist())
            got.append((t.is_contiguous(memory_format=lib.channels_last), t.is_contiguous()))
        assert got[1] == got[0], (shape, perm)


def test_dim_order_errors():
    raises_same(lambda lib: lib.empty(2, 3).dim_order(ambiguity_check=3))
    raises_same(lambda lib: lib.empty(2, 3).dim_order(ambiguity_check=[lib.float32]))


def test_resize_as():
    x = np.arange(6.0).reshape(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grads(lambda lib, a: a.resize_as(lib.ones(3, 2)), [x])
        grads(lambda lib, a: a.t().resize_as(lib.ones(6)), [x])
        raises_same(lambda lib: lib.ones(2, 3).resize_as(lib.ones(3, 3)))
    for lib in LIBS:
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            lib.ones(2, 3).resize_as(lib.ones(6))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool", "complex64"])
def test_apply_(dtype):
    x = np.arange(6).reshape(2, 3).astype(dtype)
    for fn in (lambda v: v * 2 + 1, lambda v: v * 2.7 if not isinstance(v, complex) else v * 1j, lambda v: v):
        out = []
        for lib in LIBS:
            t = lib.tensor(x)
            for view in (t, t.t()):  # and through a transposed view
                r = view.apply_(fn)
                assert r is view
            out.append(t)
        same(out[1], out[0])


@pytest.mark.parametrize("fn", [
    lambda lib: lib.ones(2).apply_(lambda v: "a"), lambda lib: lib.ones(2).apply_(lambda v: None),
    lambda lib: lib.ones(2).apply_(3), lambda lib: lib.ones(2, requires_grad=True).apply_(lambda v: v),
    lambda lib: lib.ones(2, dtype=lib.int32).apply_(lambda v: 2 ** 40),
    lambda lib: lib.ones(2, 3).map_(lib.ones(2, 1, 3), lambda a, b: a),
    lambda lib: lib.ones(2).map_(lib.ones(2, dtype=lib.float64), lambda a, b: a),
    lambda lib: lib.ones(2).map_(2, lambda a, b: a),
    lambda lib: lib.ones(2, requires_grad=True).map_(lib.ones(2), lambda a, b: a),
])
def test_apply_map_errors(fn):
    raises_same(fn)


def test_map_():
    x = np.arange(6.0).reshape(2, 3)
    for other in (np.array([1.0, 2.0, 3.0]), np.ones((2, 1)) * 4, x):
        out = [lib.tensor(x).map_(lib.tensor(other), lambda a, b: a * b - 1) for lib in LIBS]
        same(out[1], out[0])
    out = []
    for lib in LIBS:
        t = lib.tensor(x)
        v = t._version
        t.apply_(lambda a: a)
        out.append(t._version - v)  # torch bumps no version for these
    assert out[1] == out[0]


@pytest.mark.parametrize("fn", [
    lambda lib: lib.nuclear_norm(lib.ones(3, 4), None), lambda lib: lib.nuclear_norm(lib.ones(3, 4), 5),
    lambda lib: lib.nuclear_norm(lib.ones(3, 4), 1), lambda lib: lib.nuclear_norm(lib.ones(3, 4), (0, -3)),
    lambda lib: lib.frobenius_norm(lib.ones(3, 4), {}), lambda lib: lib.frobenius_norm(lib.ones(3, 4), 1.0),
    lambda lib: lib.native_norm(lib.ones(3, 4).to_sparse(), 2, None),
    lambda lib: lib.native_norm(lib.ones(3, 4).to_sparse(), 2, [0, 1], False),
    lambda lib: lib.native_norm(lib.ones(3, 4).to_sparse(), None), lambda lib: lib.native_norm(lib.ones(3), "a"),
    lambda lib: lib.set_flush_denormal(1), lambda lib: lib.set_flush_denormal(None),
    lambda lib: lib.vander(lib.ones(3), 2.0), lambda lib: lib.vander(lib.ones(3), True),
    lambda lib: lib.bilinear(lib.ones(2, 3), lib.ones(2, 4), lib.ones(5, 3)),
])
def test_overload_and_type_errors(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raises_same(fn)


def test_overloads_that_torch_takes():
    x = np.random.default_rng(8).standard_normal((3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn in (lambda lib: lib.native_norm(lib.tensor(x).to_sparse(), None, [0, 1], False, None),
                   lambda lib: lib.native_norm(lib.tensor(x).to_sparse(), 2, dim=[0, 1], keepdim=False, dtype=None),
                   lambda lib: lib.vander(lib.tensor(x[0]), lib.tensor(2))):
            same(fn(ember), fn(torch))


def test_norm_except_dim():
    v = np.random.default_rng(9).standard_normal((3, 4, 2))
    for pow_, dim in ((2, 0), (2, 1), (2, 2), (2, -1), (3, 1), (1, 0), (2, -2)):
        grads(lambda lib, a: lib.norm_except_dim(a, pow_, dim), [v])
    grads(lambda lib, a: lib.norm_except_dim(a), [v[0]])
    for bad in (lambda lib: lib.norm_except_dim(lib.tensor(v), 2, 5), lambda lib: lib.norm_except_dim(lib.tensor(2.0)),
                lambda lib: lib.norm_except_dim(lib.ones(3, dtype=lib.int64)),
                lambda lib: lib.norm_except_dim(lib.ones(2, 3), 2.5, 0)):
        raises_same(bad)


def test_map2_():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    out = [lib.tensor(x).map2_(lib.tensor([1.0, 2.0, 3.0]), lib.tensor([[10.0], [20.0]]), lambda a, b, c: a * b + c)
           for lib in LIBS]
    same(out[1], out[0])
    for bad in (lambda lib: lib.ones(2, 3).map2_(2, lib.ones(3), lambda a, b, c: a),
                lambda lib: lib.ones(2, 3).map2_(lib.ones(3, dtype=lib.float64), lib.ones(3), lambda a, b, c: a),
                lambda lib: lib.ones(2, 3).map2_(lib.ones(3), lib.ones(3, dtype=lib.int64), lambda a, b, c: a),
                lambda lib: lib.ones(2, 3, requires_grad=True).map2_(lib.ones(3), lib.ones(3), lambda a, b, c: a),
                lambda lib: lib.ones(2, 3).map2_(lib.ones(4), lib.ones(3), lambda a, b, c: a)):
        raises_same(bad)
