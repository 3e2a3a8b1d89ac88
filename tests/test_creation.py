"""Creation behaviour that is not a value table: memory sharing with NumPy, copies vs
aliases, legacy constructors, torch.Size, requires_grad rules, default dtype, out=,
and the in-place writers fill_/zero_/copy_ (versions, views, overlap)."""
import pickle
import warnings

import numpy as np
import pytest
import torch

import ember


def same_memory(t, arr):
    return np.shares_memory(t.numpy(), arr)


# ---- sharing memory with NumPy ------------------------------------------------------

def test_from_numpy_shares_memory_both_ways():
    for lib in (torch, ember):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        t = lib.from_numpy(a)
        a[0, 0] = 100
        assert t[0, 0].item() == 100
        t.add_(1)
        assert a[1, 2] == 6
        t[1, 1] = -7
        assert a[1, 1] == -7
        assert np.shares_memory(t.numpy(), a)


def test_from_numpy_keeps_strides_and_dtypes():
    for np_dtype in (np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int8, np.int16,
                     np.int32, np.int64, np.uint8, np.bool_):
        a = np.ones((3, 4), dtype=np_dtype)
        e, t = ember.from_numpy(a.T), torch.from_numpy(a.T)
        assert str(e.dtype) == str(t.dtype)
        assert e.stride() == t.stride()
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    assert ember.from_numpy(a).stride() == torch.from_numpy(a).stride()


def test_from_numpy_rejects_what_torch_rejects():
    cases = [np.arange(3)[::-1], np.arange(3, dtype=">i4"), np.ndarray((2,), dtype=np.int32,
                                                                      buffer=np.zeros(9, np.uint8)[1:],
                                                                      strides=(3,))]
    for a in cases:
        with pytest.raises(ValueError):
            torch.from_numpy(a)
        with pytest.raises(ValueError):
            ember.from_numpy(a)
    for bad in (np.array(["a"]), np.array([1], dtype=object)):
        with pytest.raises(TypeError):
            ember.from_numpy(bad)


def test_from_numpy_read_only_warns():
    a = np.arange(3.0)
    a.flags.writeable = False
    with pytest.warns(UserWarning):
        ember.from_numpy(a)


def test_as_tensor_aliases_when_it_can():
    a = np.arange(4.0)
    t = ember.as_tensor(a)
    assert t.dtype == ember.float64 and same_memory(t, a)
    c = ember.as_tensor(a, dtype=ember.float32)
    assert not same_memory(c, a)
    x = ember.ones(3, requires_grad=True)
    assert ember.as_tensor(x) is x
    y = ember.as_tensor(x, dtype=ember.float64)
    assert y.dtype == ember.float64 and y.grad_fn is not None
    assert ember.as_tensor([1, 2]).dtype == ember.int64


def test_asarray_copy_semantics():
    a = np.arange(4.0)
    assert same_memory(ember.asarray(a), a)
    assert not same_memory(ember.asarray(a, copy=True), a)
    x = ember.arange(3.0)
    assert ember.asarray(x) is x
    y = ember.asarray(x, copy=True)
    assert y is not x and not np.shares_memory(y.numpy(), x.numpy())
    z = ember.asarray(x, requires_grad=True)
    assert z is x and x.requires_grad  # as torch: x itself, now requiring grad
    m = ember.asarray(memoryview(np.arange(3, dtype=np.int32)), dtype=ember.int32)
    assert m.dtype == ember.int32 and m.tolist() == [0, 1, 2]


def test_tensor_always_copies():
    a = np.arange(3.0)
    t = ember.tensor(a)
    a[0] = 9
    assert t[0].item() == 0
    src = ember.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="clone"):
        c = ember.tensor(src)
    assert not c.requires_grad and c.grad_fn is None
    assert not np.shares_memory(c.numpy(), src.detach().numpy())


def test_numpy_shares_with_tensor():
    t = ember.zeros(3)
    n = t.numpy()
    t.fill_(2)
    assert n.tolist() == [2.0, 2.0, 2.0]


# ---- legacy constructors ------------------------------------------------------------

def test_legacy_tensor_forms_match_torch():
    sized = [lambda T: T.Tensor(), lambda T: T.Tensor(2, 3), lambda T: T.Tensor(T.Size([2, 3])),
             lambda T: T.Tensor(np.int64(3)), lambda T: T.FloatTensor(2), lambda T: T.IntTensor(2, 2),
             lambda T: T.LongTensor(), lambda T: T.Tensor(device="cpu")]
    data = [lambda T: T.Tensor((2, 3)), lambda T: T.Tensor([2, 3]), lambda T: T.Tensor([True]),
            lambda T: T.Tensor([[1, 2], [3, 4]]), lambda T: T.LongTensor([1.7, -2]), lambda T: T.BoolTensor([0, 2]),
            lambda T: T.ByteTensor([-1, 3]), lambda T: T.DoubleTensor([1]), lambda T: T.LongTensor(np.array([1.5])),
            lambda T: T.HalfTensor([1.5]), lambda T: T.Tensor(np.array([1, 2], dtype=np.int16)),
            lambda T: T.Tensor([]), lambda T: T.CharTensor(range(3))]
    for f in sized + data:
        t, e = f(torch), f(ember)
        assert type(e) is ember.Tensor
        assert tuple(e.shape) == tuple(t.shape) and str(e.dtype) == str(t.dtype)
    for f in data:
        assert f(ember).tolist() == f(torch).tolist()


def test_legacy_tensor_errors_match_torch():
    bad = [lambda T: T.Tensor(2.5), lambda T: T.Tensor(True), lambda T: T.Tensor(2, 3.0), lambda T: T.Tensor(-1),
           lambda T: T.LongTensor(T.tensor([1.5])), lambda T: T.ByteTensor([0, 300])]
    for f in bad:
        with pytest.raises(Exception) as te:
            f(torch)
        with pytest.raises(Exception) as ee:
            f(ember)
        assert type(ee.value) is type(te.value), (te.value, ee.value)


def test_legacy_aliasing():
    a = np.array([1.0, 2.0], dtype=np.float32)
    e = ember.Tensor(a)
    e[0] = 5
    assert a[0] == 5  # same dtype: torch.Tensor(ndarray) shares memory
    b = np.array([1.0, 2.0])
    ember.Tensor(b)[0] = 5
    assert b[0] == 1  # float64 array into a float32 tensor: a copy
    x = ember.tensor([1.0, 2.0])
    y = ember.Tensor(x)
    y[1] = 9
    assert x[1].item() == 9
    i = ember.tensor(3)
    assert ember.Tensor(i).dtype == ember.int64
    assert ember.LongTensor(ember.tensor([4]))[0].item() == 4


def test_legacy_default_dtype():
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        assert ember.Tensor(2).dtype == ember.float64 == getattr(ember, str(torch.Tensor(2).dtype)[6:])
        assert ember.FloatTensor(2).dtype == ember.float32
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(torch.float32)


def test_legacy_classes_are_isinstance_targets():
    f = ember.zeros(2)
    l = ember.zeros(2, dtype=ember.int64)
    assert isinstance(f, ember.FloatTensor) and not isinstance(f, ember.LongTensor)
    assert isinstance(l, ember.LongTensor) and isinstance(l, ember.Tensor)
    assert isinstance(ember.zeros(1, dtype=ember.bool), ember.BoolTensor)
    assert not issubclass(ember.FloatTensor, ember.Tensor) and not issubclass(torch.FloatTensor, torch.Tensor)
    assert ember.FloatTensor.dtype == ember.float32 and ember.FloatTensor.is_cuda is False
    assert f.type() == "torch.FloatTensor" and l.type() == "torch.LongTensor"
    assert l.type(ember.FloatTensor).dtype == ember.float32
    assert f.type("torch.LongTensor").dtype == ember.int64
    assert f.new(2, 3).shape == (2, 3) and l.new([1.5]).dtype == ember.int64


def test_tensor_subclass_construction():
    class MyTensor(ember.Tensor):
        pass

    m = MyTensor([1, 2])
    assert type(m) is MyTensor and m.dtype == ember.float32 and m.tolist() == [1.0, 2.0]
    assert type(MyTensor(2, 2)) is MyTensor


# ---- torch.Size -----------------------------------------------------------------------

def test_size_behaves_like_torch():
    for lib in (torch, ember):
        s = lib.Size([2, 3])
        assert s == (2, 3) and s != [2, 3] and isinstance(s, tuple)
        assert repr(s) == "torch.Size([2, 3])" and str(lib.Size([])) == "torch.Size([])"
        assert s.numel() == 6 and lib.Size().numel() == 1
        assert type(s[1:]) is lib.Size and type(s[0]) is int
        assert type(s + (4,)) is lib.Size and s + (4,) == (2, 3, 4)
        assert type((1,) + s) is lib.Size and (1,) + s == (1, 2, 3)
        assert type(s * 2) is lib.Size and type(2 * s) is lib.Size and s * 2 == (2, 3, 2, 3)
        assert hash(s) == hash((2, 3))
        assert pickle.loads(pickle.dumps(s)) == s and type(pickle.loads(pickle.dumps(s))) is lib.Size
        assert lib.Size([lib.tensor(4)]) == (4,) and type(lib.Size([lib.tensor(4)])[0]) is int
        assert lib.zeros(2, 3).shape == s and type(lib.zeros(2, 3).size()) is lib.Size
        for bad in ([2.5], "ab", [None]):
            with pytest.raises(TypeError):
                lib.Size(bad)


# ---- requires_grad and default dtype --------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda t: t.zeros(2, dtype=t.int64, requires_grad=True),
    lambda t: t.tensor([1, 2], requires_grad=True),
    lambda t: t.full((2,), 3, requires_grad=True),
    lambda t: t.arange(3, requires_grad=True),
    lambda t: t.ones_like(t.zeros(2, dtype=t.int32), requires_grad=True),
    lambda t: t.randint(0, 3, (2,), requires_grad=True),
    lambda t: t.zeros(2, dtype=t.int64).requires_grad_(),
    lambda t: t.eye(2, dtype=t.bool, requires_grad=True),
])
def test_integer_tensors_cannot_require_grad(make):
    with pytest.raises(RuntimeError):
        make(torch)
    with pytest.raises(RuntimeError):
        make(ember)


def test_factories_follow_the_default_dtype():
    makers = [lambda t: t.tensor([1.5]), lambda t: t.tensor([1j]), lambda t: t.zeros(2), lambda t: t.arange(0.5),
              lambda t: t.full((2,), 1.5), lambda t: t.full((2,), 1j), lambda t: t.linspace(0, 1, 3),
              lambda t: t.logspace(0, 1, 3), lambda t: t.eye(2), lambda t: t.rand(2), lambda t: t.randn(2),
              lambda t: t.scalar_tensor(1), lambda t: t.empty_strided((2,), (1,)), lambda t: t.tensor([]),
              lambda t: t.normal(0.0, 1.0, (2,)), lambda t: t.as_tensor(2.5)]
    old = ember.get_default_dtype()
    try:
        for d in ("float64", "float32"):
            ember.set_default_dtype(getattr(ember, d))
            torch.set_default_dtype(getattr(torch, d))
            for f in makers:
                assert str(f(ember).dtype) == str(f(torch).dtype), (d, f(torch).dtype)
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(torch.float32)


def test_factory_out_is_written_and_returned():
    out = ember.empty(1)
    r = ember.zeros(2, 3, out=out)
    assert r is out and out.shape == (2, 3) and out.sum().item() == 0
    out = ember.empty(4, dtype=ember.int64)
    assert ember.arange(4, out=out) is out and out.tolist() == [0, 1, 2, 3]
    with pytest.raises(RuntimeError):
        ember.zeros(2, out=ember.zeros(2, requires_grad=True))


def test_new_tensors_do_not_share_memory():
    x = ember.ones(3)
    for y in (ember.zeros_like(x), ember.ones_like(x), ember.full_like(x, 2), ember.empty_like(x),
              x.new_zeros(3), x.new_tensor([1, 2, 3]), ember.tensor(x.numpy())):
        assert not np.shares_memory(y.numpy(), x.numpy())


# ---- fill_ / zero_ / copy_ ------------------------------------------------------------

def test_in_place_writers_return_self_and_bump_version():
    x = ember.zeros(3)
    v = x._version
    assert x.fill_(1) is x and x.zero_() is x and x.copy_(ember.ones(3)) is x and x.uniform_() is x
    assert x.normal_() is x and x.bernoulli_(0.5) is x and x.random_(3) is x and x.exponential_() is x
    assert x._version == v + 8


def test_writes_through_views_reach_the_base():
    base = ember.zeros(3, 4)
    base[:, 1].fill_(5)
    base.t()[2].copy_(ember.arange(3.0))
    base[0].zero_()
    base[2, 2:].uniform_(7, 8)
    expect = torch.zeros(3, 4)
    expect[:, 1].fill_(5)
    expect.t()[2].copy_(torch.arange(3.0))
    expect[0].zero_()
    got = base.numpy()
    assert np.array_equal(got[:, :2], expect.numpy()[:, :2])
    assert got[1, 2] == 1 and got[0, 2] == 0
    assert ((got[2, 2:] >= 7) & (got[2, 2:] < 8)).all()


def test_copy_casts_and_broadcasts_like_torch():
    src = np.array([[-1.7, 0.0, 2.9]])
    for dtype in ("int32", "uint8", "bool", "float16", "bfloat16", "complex64", "float64"):
        t = torch.zeros(2, 3, dtype=getattr(torch, dtype)).copy_(torch.from_numpy(src))
        e = ember.zeros(2, 3, dtype=getattr(ember, dtype)).copy_(ember.from_numpy(src))
        assert str(e.dtype) == str(t.dtype)
        assert e.tolist() == t.tolist(), dtype
    with pytest.warns(UserWarning, match="imaginary"):
        r = ember.zeros(2).copy_(ember.tensor([1 + 2j, 3 - 1j]))
    assert r.tolist() == [1.0, 3.0]


def test_copy_respects_autograd_rules():
    leaf = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.copy_(ember.ones(3))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf[1:].fill_(2)
    with ember.no_grad():
        leaf.copy_(ember.ones(3))
        leaf.fill_(3)
    assert leaf.tolist() == [3.0, 3.0, 3.0] and leaf.requires_grad and leaf.grad_fn is None
    # copying a graph tensor into a plain tensor connects it to the graph
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    buf = ember.zeros(2)
    buf.copy_(w * w)
    assert buf.requires_grad
    buf.sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]


def test_copy_and_overlap():
    t = ember.arange(5.0)
    assert t.copy_(t) is t and t.tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(RuntimeError, match="single memory location"):
        t[1:].copy_(t[:-1])
    with pytest.raises(RuntimeError, match="single memory location"):
        ember.zeros(1).expand(3).copy_(ember.ones(3))
    m = ember.arange(4.0).reshape(2, 2)
    with pytest.raises(RuntimeError, match="single memory location"):
        m.copy_(m.t())  # both dense, same memory, different layout: torch refuses
    m[0].copy_(m[1])  # disjoint rows of one storage are fine
    assert m.tolist() == [[2.0, 3.0], [2.0, 3.0]]
    b = ember.arange(8.0)
    b[:6:2].copy_(b[2::2])  # overlapping but not dense: torch cannot tell and copies (NumPy buffers)
    assert b.tolist() == [2.0, 1.0, 4.0, 3.0, 6.0, 5.0, 6.0, 7.0]


def test_fill_checks_value():
    with pytest.raises(RuntimeError):
        ember.zeros(2).fill_(ember.ones(2))
    with pytest.raises(TypeError):
        ember.zeros(2).fill_("a")
    assert ember.zeros(2, dtype=ember.int64).fill_(ember.tensor(2.7)).tolist() == [2, 2]
    assert ember.zeros(2, dtype=ember.uint8).fill_(-1).tolist() == [255, 255]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.zeros(2).fill_(np.float64(1.5))


@pytest.mark.parametrize("make", [
    lambda t: t.tensor([[1., 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]).t().unsqueeze(1).expand(4, 5, 3),
    lambda t: t.zeros(3, 4).t(),
    lambda t: t.zeros(2, 3, 4, 5).permute(0, 2, 3, 1),
    lambda t: t.zeros(6, 4)[::2],
    lambda t: t.zeros(1, 3).expand(4, 3),
    lambda t: t.zeros(4, 1, 3).transpose(0, 2).expand(3, 2, 4),
    lambda t: t.zeros(2, 3, 4)[:, ::2].transpose(1, 2),
], ids=["expanded-transposed", "transposed", "permuted", "sliced", "expanded", "expanded-size1", "gap-transposed"])
@pytest.mark.parametrize("fn", ["empty_like", "zeros_like", "ones_like", "full_like", "clone"])
def test_like_functions_preserve_format_strides_match_torch(make, fn):
    """preserve_format: a dense input keeps its strides, any other (expanded, sliced) gets dense strides in
    its stride order, as torch's empty_like/clone give them."""
    got = []
    for lib in (torch, ember):
        x = make(lib)
        y = lib.full_like(x, 2.0) if fn == "full_like" else getattr(lib, fn)(x)
        got.append((y.stride(), y.is_contiguous(), tuple(y.shape)))
        want = {"clone": x, "full_like": 2.0, "ones_like": 1.0, "zeros_like": 0.0}.get(fn)
        if want is not None:
            assert (y == want).all()
    assert got[0] == got[1]


@pytest.mark.parametrize("second", [(3, 2), (5, 4), (3, 5)])
def test_ragged_list_of_arrays_names_the_bad_dim_like_torch(second):
    """tensor([array, array of another shape]): torch's ValueError naming the first dim that differs."""
    msgs = []
    for lib in (ember, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's "list of numpy.ndarrays is extremely slow"
            with pytest.raises(ValueError) as info:
                lib.tensor([np.zeros((3, 4)), np.zeros(second)])
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


# ---- the aliasing rules above, observed on torch too (issue 19) --------------------------------------------
def _shares(t, a):
    return bool(np.shares_memory(t.detach().numpy(), a))


ALIASING = {  # name: lib -> a tuple of plain observations
    "as_tensor ndarray": lambda lib: (lambda a: (str(lib.as_tensor(a).dtype), _shares(lib.as_tensor(a), a),
                                                 _shares(lib.as_tensor(a, dtype=lib.float32), a)))(np.arange(4.0)),
    "as_tensor tensor": lambda lib: (lambda x: (lib.as_tensor(x) is x, lib.as_tensor(x, dtype=lib.float64).grad_fn
                                                is not None, str(lib.as_tensor([1, 2]).dtype)))(
        lib.ones(3, requires_grad=True)),
    "asarray ndarray": lambda lib: (lambda a: (_shares(lib.asarray(a), a), _shares(lib.asarray(a, copy=True), a)))(
        np.arange(4.0)),
    "asarray tensor": lambda lib: (lambda x: (lib.asarray(x) is x, lib.asarray(x, copy=True) is x,
                                              _shares(lib.asarray(x, copy=True), x.numpy()),
                                              lib.asarray(x, requires_grad=True) is x, x.requires_grad))(
        lib.arange(3.0)),
    "asarray memoryview": lambda lib: (lambda m: (str(m.dtype), m.tolist()))(
        lib.asarray(memoryview(np.arange(3, dtype=np.int32)))),
    "tensor copies": lambda lib: (lambda a: (lambda t: (a.__setitem__(0, 9), t[0].item()))(lib.tensor(a)))(
        np.arange(3.0)),
}


@pytest.mark.parametrize("name", sorted(ALIASING))
def test_aliasing_as_torch(name):
    """test_as_tensor_aliases_when_it_can / test_asarray_copy_semantics / test_tensor_always_copies, each
    observation compared with torch's."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = ALIASING[name](torch)
        ours = ALIASING[name](ember)
    assert [str(v).replace("torch.", "") for v in ours] == [str(v).replace("torch.", "") for v in theirs]


# ---- the ember-only behaviour tests above, told again on torch ---------------------------

def _raised(fn):
    """The exception type fn raises (its name), or its result when it returns."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the type is the observation
        return type(e).__name__


def _warned(fn):
    """(categories of the warnings fn emits, fn's result or raised type)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = _raised(fn)
    return [c.category.__name__ for c in w], r


def _story_from_numpy_read_only(lib):
    a = np.arange(3.0)
    a.flags.writeable = False
    return _warned(lambda: lib.from_numpy(a).tolist())


def _story_tensor_copies_a_tensor(lib):
    src = lib.ones(2, requires_grad=True)
    cats, c = _warned(lambda: lib.tensor(src))
    return cats, c.requires_grad, c.grad_fn is None, np.shares_memory(c.numpy(), src.detach().numpy())


def _story_numpy_shares(lib):
    t = lib.zeros(3)
    n = t.numpy()
    t.fill_(2)
    return n.tolist(), np.shares_memory(n, t.numpy())


def _story_subclass(lib):
    class MyTensor(lib.Tensor):
        pass

    m = MyTensor([1, 2])
    return type(m) is MyTensor, str(m.dtype), m.tolist(), type(MyTensor(2, 2)) is MyTensor, tuple(MyTensor(2, 2).shape)


def _story_factory_out(lib):
    out = lib.empty(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the resize warning of a non-empty out
        r = lib.zeros(2, 3, out=out)
    out2 = lib.empty(4, dtype=lib.int64)
    return (r is out, tuple(out.shape), out.tolist(), lib.arange(4, out=out2) is out2, out2.tolist(),
            _raised(lambda: lib.zeros(2, out=lib.zeros(2, requires_grad=True))))


def _story_new_tensors(lib):
    x = lib.ones(3)
    made = (lib.zeros_like(x), lib.ones_like(x), lib.full_like(x, 2), lib.empty_like(x), x.new_zeros(3),
            x.new_tensor([1, 2, 3]), lib.tensor(x.numpy()))
    return [(np.shares_memory(y.numpy(), x.numpy()), str(y.dtype), tuple(y.shape)) for y in made]


def _story_versions(lib):
    x = lib.zeros(3)
    v = x._version
    same = [x.fill_(1) is x, x.zero_() is x, x.copy_(lib.ones(3)) is x, x.uniform_() is x, x.normal_() is x,
            x.bernoulli_(0.5) is x, x.random_(3) is x, x.exponential_() is x]
    return same, x._version - v


def _story_copy_autograd(lib):
    leaf = lib.zeros(3, requires_grad=True)
    out = [_raised(lambda: leaf.copy_(lib.ones(3))), _raised(lambda: leaf[1:].fill_(2))]
    with lib.no_grad():
        leaf.copy_(lib.ones(3))
        leaf.fill_(3)
    out += [leaf.tolist(), leaf.requires_grad, leaf.grad_fn is None]
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    buf = lib.zeros(2)
    buf.copy_(w * w)
    out += [buf.requires_grad, type(buf.grad_fn).__name__]
    buf.sum().backward()
    return out + [w.grad.tolist()]


def _story_copy_overlap(lib):
    t = lib.arange(5.0)
    out = [t.copy_(t) is t, t.tolist(), _raised(lambda: t[1:].copy_(t[:-1])),
           _raised(lambda: lib.zeros(1).expand(3).copy_(lib.ones(3)))]
    m = lib.arange(4.0).reshape(2, 2)
    out.append(_raised(lambda: m.copy_(m.t())))
    m[0].copy_(m[1])
    b = lib.arange(8.0)
    b[:6:2].copy_(b[2::2])
    return out + [m.tolist(), b.tolist()]


def _story_fill_value(lib):
    return (_raised(lambda: lib.zeros(2).fill_(lib.ones(2))), _raised(lambda: lib.zeros(2).fill_("a")),
            lib.zeros(2, dtype=lib.int64).fill_(lib.tensor(2.7)).tolist(),
            lib.zeros(2, dtype=lib.uint8).fill_(-1).tolist(),
            _warned(lambda: lib.zeros(2).fill_(np.float64(1.5)).tolist()))


CREATION_STORIES = {
    "from_numpy_read_only_warns": _story_from_numpy_read_only, "tensor_always_copies": _story_tensor_copies_a_tensor,
    "numpy_shares_with_tensor": _story_numpy_shares, "tensor_subclass_construction": _story_subclass,
    "factory_out_is_written_and_returned": _story_factory_out,
    "new_tensors_do_not_share_memory": _story_new_tensors,
    "in_place_writers_return_self_and_bump_version": _story_versions,
    "copy_respects_autograd_rules": _story_copy_autograd, "copy_and_overlap": _story_copy_overlap,
    "fill_checks_value": _story_fill_value,
}


@pytest.mark.parametrize("name", sorted(CREATION_STORIES))
def test_creation_stories_match_torch(name):
    """Each observation of the ember-only creation tests (flags, values, dtypes, warnings, raised types) is torch's."""
    theirs = CREATION_STORIES[name](torch)
    ours = CREATION_STORIES[name](ember)
    assert str(ours).replace("torch.", "") == str(theirs).replace("torch.", "")
