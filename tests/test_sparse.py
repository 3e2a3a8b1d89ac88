"""Sparse COO tensors against torch: construction and validation, repr, coalesce / to_dense /
to_sparse round trips, sparse @ dense values and gradients (duplicate indices included),
sums, elementwise ops, leaf gradients, and a 2-layer GCN that learns a stochastic block model."""
import copy
import pickle

import numpy as np
import pytest
import torch

import ember

from ._stories import check_story

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")


def both(fn):
    return fn(torch), fn(ember)


def arr(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def same_sparse(t, e, rtol=1e-6, atol=1e-7):
    """Same layout, size, nnz, coalesced flag, dtype, indices and values (in stored order)."""
    assert e.is_sparse and t.is_sparse
    assert tuple(e.shape) == tuple(t.shape)
    assert e._nnz() == t._nnz()
    assert e.is_coalesced() == t.is_coalesced()
    assert str(e.dtype) == str(t.dtype)
    assert e.sparse_dim() == t.sparse_dim() and e.dense_dim() == t.dense_dim()
    np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
    np.testing.assert_allclose(e._values().numpy(), t._values().numpy(), rtol=rtol, atol=atol)


def random_coo(rng, shape, nnz, dense=(), dup=True, dtype="float64"):
    """(indices, values) with roughly a third of the entries duplicated when dup."""
    idx = np.stack([rng.integers(0, n, nnz) for n in shape])
    if dup and nnz > 3:
        k = nnz // 3
        idx[:, -k:] = idx[:, :k]
    vals = rng.standard_normal((nnz,) + tuple(dense)).astype(dtype)
    return idx, vals


def make(lib, idx, vals, size, **kw):
    return lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(vals), size, **kw)


# ---- construction, metadata, repr --------------------------------------------------------

def test_metadata_matches_torch():
    rng = np.random.default_rng(0)
    idx, vals = random_coo(rng, (4, 5), 7, dense=(2,))
    t, e = both(lambda lib: make(lib, idx, vals, (4, 5, 2)))
    same_sparse(t, e)
    assert e.is_sparse and not ember.ones(1).is_sparse
    assert e.layout is ember.sparse_coo and ember.ones(1).layout is ember.strided
    assert repr(e.layout) == repr(t.layout) == "torch.sparse_coo"
    assert isinstance(e, ember.Tensor) and ember.is_tensor(e)
    assert e.dim() == 3 and e.ndim == 3 and e.numel() == t.numel() and len(e) == len(t)
    assert e.size(1) == 5 and e.size(-1) == 2
    assert e.device == ember.device("cpu")
    assert e.is_contiguous() == t.is_contiguous()
    assert ember.ones(2, 3).sparse_dim() == 0 and ember.ones(2, 3).dense_dim() == 2
    assert not hasattr(t, "nnz")  # torch spells it _nnz()


def test_inferred_size_and_dtype():
    t, e = both(lambda lib: lib.sparse_coo_tensor([[0, 3], [1, 0]], [1, 2]))
    same_sparse(t, e)
    t, e = both(lambda lib: lib.sparse_coo_tensor([[0, 3], [1, 0]], [1.0, 2.0], dtype=lib.float64))
    same_sparse(t, e)
    t, e = both(lambda lib: lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.long), lib.zeros(0, 3), (4, 4, 3)))
    same_sparse(t, e)


@pytest.mark.parametrize("case", ["float", "int", "f64-grad", "dense-dims", "empty", "coalesced"])
def test_repr_matches_torch(case):
    idx = [[0, 1, 1, 0], [2, 0, 0, 2]]

    def build(lib):
        if case == "float":
            return lib.sparse_coo_tensor(idx, [1.0, 2.5, 3.0, 4.0], (2, 3))
        if case == "int":
            return lib.sparse_coo_tensor(idx, [1, 2, 3, 4], (2, 3))
        if case == "f64-grad":
            v = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
            return lib.sparse_coo_tensor(idx, v, (2, 3))
        if case == "dense-dims":
            return lib.sparse_coo_tensor(idx, lib.arange(8.0).reshape(4, 2), (2, 3, 2))
        if case == "empty":
            return lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.long), lib.zeros(0, 2), (2, 3, 2))
        return lib.sparse_coo_tensor(idx, [1.0, 2.0, 3.0, 4.0], (2, 3)).coalesce()
    t, e = both(build)
    assert repr(e) == repr(t)


def test_requires_grad_repr_and_leaf():
    t, e = both(lambda lib: lib.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,), requires_grad=True))
    assert repr(e) == repr(t)
    assert e.is_leaf and e.requires_grad and e.grad_fn is None


@pytest.mark.parametrize("case", [
    "index-too-big", "negative-index", "nnz-mismatch", "indices-1d", "size-too-short", "values-dense-mismatch",
    "size-too-long"])
def test_validation_errors(case):
    idx = [[0, 1, 1, 0], [2, 0, 0, 2]]

    def build(lib):
        i = lib.tensor(idx)
        v = lib.tensor([1.0, 2.0, 3.0, 4.0])
        if case == "index-too-big":  # torch checks this only with check_invariants=True; ember always
            return lib.sparse_coo_tensor(i, v, (2, 2), check_invariants=True)
        if case == "negative-index":
            return lib.sparse_coo_tensor(-i, v, (2, 3), check_invariants=True)
        if case == "nnz-mismatch":
            return lib.sparse_coo_tensor(i, v[:3], (2, 3))
        if case == "indices-1d":
            return lib.sparse_coo_tensor(i[0], v, (2, 3))
        if case == "size-too-short":
            return lib.sparse_coo_tensor(i, v, (2,))
        if case == "values-dense-mismatch":
            return lib.sparse_coo_tensor(i, v.reshape(4, 1), (2, 3, 2))
        return lib.sparse_coo_tensor(i, v, (2, 3, 4))
    with pytest.raises(Exception) as te:
        build(torch)
    with pytest.raises(Exception) as ee:
        build(ember)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)


def test_out_of_range_index_is_always_an_error_in_ember():
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        ember.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,))


# ---- accessors and their errors ---------------------------------------------------------

def test_accessors_and_layout_errors():
    idx = [[0, 1, 1, 0], [2, 0, 0, 2]]
    t, e = both(lambda lib: lib.sparse_coo_tensor(idx, [1.0, 2.0, 3.0, 4.0], (2, 3)))
    for name in ("indices", "values"):
        with pytest.raises(RuntimeError) as te:
            getattr(t, name)()
        with pytest.raises(RuntimeError) as ee:
            getattr(e, name)()
        assert str(ee.value) == str(te.value)
    np.testing.assert_array_equal(e.coalesce().indices().numpy(), t.coalesce().indices().numpy())
    np.testing.assert_array_equal(e.coalesce().values().numpy(), t.coalesce().values().numpy())
    assert e._indices().dtype == ember.int64
    dt, de = torch.ones(2, 3), ember.ones(2, 3)
    for name in ("is_coalesced", "coalesce", "indices", "values", "_nnz", "_values", "_indices"):
        with pytest.raises(Exception) as te:
            getattr(dt, name)()
        with pytest.raises(Exception) as ee:
            getattr(de, name)()
        assert type(ee.value) is type(te.value), name
    assert de.to_dense() is de
    with pytest.raises(NotImplementedError):
        e.exp()  # a dense-only op on a sparse tensor
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\)"):
        e + ember.ones(2, 3)
    with pytest.raises(TypeError, match="to_dense"):
        e.numpy()


# ---- coalesce, to_dense, to_sparse ----------------------------------------------------------

@pytest.mark.parametrize("shape,dense,nnz", [((5, 6), (), 20), ((4, 3, 5), (), 30), ((6, 4), (3,), 15),
                                             ((7,), (), 9), ((3, 3), (), 0)])
def test_coalesce_and_to_dense_round_trips(shape, dense, nnz):
    rng = np.random.default_rng(len(shape) * 10 + nnz)
    idx, vals = random_coo(rng, shape, nnz, dense=dense)
    size = tuple(shape) + tuple(dense)
    t, e = both(lambda lib: make(lib, idx, vals, size))
    same_sparse(t, e)
    same_sparse(t.coalesce(), e.coalesce())
    np.testing.assert_allclose(e.to_dense().numpy(), t.to_dense().numpy(), rtol=1e-12, atol=1e-12)
    d = t.to_dense()
    same_sparse(d.to_sparse(), ember.tensor(d.numpy()).to_sparse())
    same_sparse(d.to_sparse(len(shape)), ember.tensor(d.numpy()).to_sparse(len(shape)))
    e2 = ember.tensor(d.numpy()).to_sparse(len(shape)).to_dense()
    np.testing.assert_array_equal(e2.numpy(), d.numpy())
    assert e.coalesce().coalesce().is_coalesced()


def test_to_sparse_layout_and_errors():
    x = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    same_sparse(torch.tensor(x).to_sparse(layout=torch.sparse_coo), ember.tensor(x).to_sparse(layout=ember.sparse_coo))
    same_sparse(torch.tensor(x).to_sparse_coo(), ember.tensor(x).to_sparse_coo())
    same_sparse(torch.tensor(x).to_sparse(1), ember.tensor(x).to_sparse(1))
    with pytest.raises(RuntimeError) as te:
        torch.tensor(x).to_sparse(3)
    with pytest.raises(RuntimeError) as ee:
        ember.tensor(x).to_sparse(3)
    assert str(ee.value) == str(te.value)


def test_to_dense_gradient_and_coalesce_gradient():
    rng = np.random.default_rng(3)
    idx, vals = random_coo(rng, (4, 5), 12)
    g = rng.standard_normal((4, 5))
    res = {}
    for lib in (torch, ember):
        v = lib.tensor(vals, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(idx), v, (4, 5))
        d = s.coalesce().to_dense() * 2 + s.to_dense()
        assert d.grad_fn.name() == "AddBackward0"
        (d * lib.tensor(g)).sum().backward()
        res[lib] = v.grad.numpy()
    np.testing.assert_allclose(res[ember], res[torch], rtol=1e-12)


def test_to_sparse_gradient_to_dense_input():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 3)) * (rng.random((4, 3)) > 0.5)
    w = rng.standard_normal((3, 2))
    res = {}
    for lib in (torch, ember):
        xt = lib.tensor(x, requires_grad=True)
        s = xt.to_sparse()
        assert s.grad_fn.name() == "ToSparseBackward1"
        lib.sparse.mm(s, lib.tensor(w)).pow(2).sum().backward()
        res[lib] = xt.grad.numpy()
    np.testing.assert_allclose(res[ember], res[torch], rtol=1e-12)


# ---- products ---------------------------------------------------------------------------------

MM_FORMS = {
    "sparse.mm": lambda lib, s, d: lib.sparse.mm(s, d),
    "mm": lambda lib, s, d: lib.mm(s, d),
    "method": lambda lib, s, d: s.mm(d),
    "matmul": lambda lib, s, d: lib.matmul(s, d),
    "operator": lambda lib, s, d: s @ d,
    "spmm": lambda lib, s, d: lib.spmm(s, d),
    "addmm": lambda lib, s, d: lib.sparse.addmm(lib.ones(s.shape[0], d.shape[1], dtype=d.dtype), s, d,
                                                 beta=0.5, alpha=2.0),
    "matvec": lambda lib, s, d: s @ d[:, 0],
}


@pytest.mark.parametrize("form", list(MM_FORMS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sparse_dense_mm_values_and_gradients(form, dtype):
    rng = np.random.default_rng(11)
    idx, vals = random_coo(rng, (6, 5), 14, dtype=dtype)
    dense = rng.standard_normal((5, 3)).astype(dtype)
    out_grad = rng.standard_normal((6, 3 if form != "matvec" else 1)).astype(dtype)
    res = {}
    for lib in (torch, ember):
        v = lib.tensor(vals, requires_grad=True)
        d = lib.tensor(dense, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(idx), v, (6, 5))
        out = MM_FORMS[form](lib, s, d)
        g = lib.tensor(out_grad if form != "matvec" else out_grad[:, 0])
        out.backward(g)
        res[lib] = (out.detach().numpy(), v.grad.numpy(), d.grad.numpy(), out.grad_fn.name())
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    for a, b in zip(res[ember][:3], res[torch][:3]):
        np.testing.assert_allclose(a, b, **tol)
    if form != "addmm":
        assert res[ember][3] == res[torch][3]


def test_dense_at_sparse_values_and_gradients():
    rng = np.random.default_rng(14)
    idx, vals = random_coo(rng, (6, 5), 12)
    dense = rng.standard_normal((3, 6))
    res = {}
    for lib in (torch, ember):
        v = lib.tensor(vals, requires_grad=True)
        d = lib.tensor(dense, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(idx), v, (6, 5))
        out = d @ s
        (out * lib.arange(15.0, dtype=lib.float64).reshape(3, 5)).sum().backward()
        res[lib] = (out.detach().numpy(), v.grad.numpy(), d.grad.numpy(), (lib.tensor(dense[0]) @ s).detach().numpy())
    for a, b in zip(res[ember], res[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_mm_double_backward_through_dense():
    rng = np.random.default_rng(12)
    idx, vals = random_coo(rng, (4, 4), 8)
    dense = rng.standard_normal((4, 2))
    res = {}
    for lib in (torch, ember):
        v = lib.tensor(vals, requires_grad=True)
        d = lib.tensor(dense, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(idx), v, (4, 4))
        (gd,) = lib.autograd.grad(lib.sparse.mm(s, d).pow(2).sum(), d, create_graph=True)
        gd.sum().backward()
        res[lib] = (v.grad.numpy(), d.grad.numpy())
    for a, b in zip(res[ember], res[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("form", ["sparse.mm", "to_dense", "sum"])
def test_leaf_sparse_gradient_matches_torch(form):
    rng = np.random.default_rng(13)
    idx, vals = random_coo(rng, (5, 4), 10)
    dense = rng.standard_normal((4, 3))
    res = {}
    for lib in (torch, ember):
        s = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(vals), (5, 4), requires_grad=True)
        if form == "sparse.mm":
            loss = lib.sparse.mm(s, lib.tensor(dense)).pow(2).sum()
        elif form == "to_dense":
            loss = (s.to_dense() * lib.arange(20.0, dtype=lib.float64).reshape(5, 4)).sum()
        else:
            loss = lib.sparse.sum(s)
        loss.backward()
        res[lib] = s.grad
    same_sparse(res[torch].coalesce(), res[ember].coalesce(), rtol=1e-12)


def test_mm_errors_match_torch():
    idx = [[0, 1], [2, 0]]
    cases = [lambda lib, s: lib.mm(s, lib.ones(2, 2)),
             lambda lib, s: lib.sparse.mm(s, lib.ones(3, 2, dtype=lib.float64)),
             lambda lib, s: lib.mm(s, lib.ones(3)),
             lambda lib, s: lib.sparse.mm(s, lib.ones(3)),
             lambda lib, s: lib.mm(s, lib.ones(3, 2, 2)),
             lambda lib, s: lib.mm(s, lib.ones(3, 2, dtype=lib.long))]
    for fn in cases:
        with pytest.raises(Exception) as te:
            fn(torch, torch.sparse_coo_tensor(idx, [1.0, 2.0], (2, 3)))
        with pytest.raises(Exception) as ee:
            fn(ember, ember.sparse_coo_tensor(idx, [1.0, 2.0], (2, 3)))
        assert type(ee.value) is type(te.value)
        assert str(ee.value) == str(te.value)


# ---- sums and elementwise ops -----------------------------------------------------------------

@pytest.mark.parametrize("dim", [None, 0, 1, 2, (0, 1), (1, 2), (0, 2), -1])
def test_sparse_sum_matches_torch(dim):
    rng = np.random.default_rng(21)
    idx, vals = random_coo(rng, (4, 5), 12, dense=(3,))
    g = None
    res = {}
    for lib in (torch, ember):
        v = lib.tensor(vals, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(idx), v, (4, 5, 3))
        r = lib.sparse.sum(s) if dim is None else lib.sparse.sum(s, dim)
        if r.is_sparse:
            dense = r.to_dense()
        else:
            dense = r
        if g is None:
            g = np.random.default_rng(5).standard_normal(tuple(dense.shape))
        (dense * lib.tensor(g)).sum().backward()
        res[lib] = (r, dense.detach().numpy(), v.grad.numpy())
    (rt, dt, gt), (re_, de, ge) = res[torch], res[ember]
    assert rt.is_sparse == re_.is_sparse
    if rt.is_sparse:
        same_sparse(rt, re_, rtol=1e-12)
        assert re_.grad_fn.name() == rt.grad_fn.name()
    np.testing.assert_allclose(de, dt, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ge, gt, rtol=1e-12, atol=1e-12)


def test_tensor_sum_forms():
    idx = [[0, 1, 1, 0], [2, 0, 0, 2]]
    t, e = both(lambda lib: lib.sparse_coo_tensor(idx, [1.0, 2.0, 3.0, 4.0], (2, 3)))
    assert e.sum().item() == t.sum().item()
    same_sparse(t.sum(1), e.sum(1))
    assert e.sum(dtype=ember.float64).dtype == ember.float64


ELEMENTWISE = {
    "mul-scalar": lambda lib, a, b, d: a * 2.5,
    "rmul-scalar": lambda lib, a, b, d: 3 * a,
    "div-scalar": lambda lib, a, b, d: a / 4,
    "neg": lambda lib, a, b, d: -a,
    "add-sparse": lambda lib, a, b, d: a + b,
    "sub-sparse": lambda lib, a, b, d: a - b,
    "mul-sparse": lambda lib, a, b, d: a * b,
    "mul-dense": lambda lib, a, b, d: a * d,
    "dense-add": lambda lib, a, b, d: d + a,
    "abs": lambda lib, a, b, d: a.abs(),
    "sin": lambda lib, a, b, d: a.sin(),
    "pow": lambda lib, a, b, d: a.pow(2),
    "t": lambda lib, a, b, d: a.t(),
    "transpose": lambda lib, a, b, d: a.transpose(0, 1),
    "double": lambda lib, a, b, d: a.double(),
    "clone": lambda lib, a, b, d: a.clone(),
    "detach": lambda lib, a, b, d: a.detach(),
}


@pytest.mark.parametrize("op", list(ELEMENTWISE))
def test_elementwise_matches_torch(op):
    rng = np.random.default_rng(31)
    i1, v1 = random_coo(rng, (4, 5), 9)
    i2, v2 = random_coo(rng, (4, 5), 7)
    i2[:, :3] = i1[:, :3]
    dense = rng.standard_normal((4, 5))
    res = {}
    for lib in (torch, ember):
        a = lib.sparse_coo_tensor(lib.tensor(i1), lib.tensor(v1, requires_grad=True), (4, 5))
        b = lib.sparse_coo_tensor(lib.tensor(i2), lib.tensor(v2), (4, 5))
        res[lib] = ELEMENTWISE[op](lib, a, b, lib.tensor(dense))
    t, e = res[torch], res[ember]
    assert t.is_sparse == e.is_sparse
    np.testing.assert_allclose(e.to_dense().detach().numpy(), t.to_dense().detach().numpy(), rtol=1e-12, atol=1e-12)
    if t.is_sparse and op not in ("mul-sparse", "mul-dense", "abs", "sin", "pow"):
        same_sparse(t, e, rtol=1e-12)  # torch's stored layout; the others coalesce differently inside
    assert e.requires_grad == t.requires_grad


def test_zero_and_pickle_and_deepcopy():
    s = ember.sparse_coo_tensor([[0, 2], [1, 1]], [1.0, 2.0], (3, 3))
    r = pickle.loads(pickle.dumps(s))
    assert r.is_sparse and r.is_coalesced() == s.is_coalesced()
    np.testing.assert_array_equal(r.to_dense().numpy(), s.to_dense().numpy())
    c = copy.deepcopy(s)
    np.testing.assert_array_equal(c.to_dense().numpy(), s.to_dense().numpy())
    t = torch.sparse_coo_tensor([[0, 2], [1, 1]], [1.0, 2.0], (3, 3))
    same_sparse(t.zero_(), s.zero_())


def test_legacy_sparse_constructor():
    i = [[0, 1]]
    with pytest.warns(UserWarning, match="deprecated"):
        t = torch.sparse.FloatTensor(torch.tensor(i), torch.tensor([1.0, 2.0]), torch.Size([3]))
    with pytest.warns(UserWarning, match="deprecated"):
        e = ember.sparse.FloatTensor(ember.tensor(i), ember.tensor([1.0, 2.0]), ember.Size([3]))
    same_sparse(t, e)


# ---- a graph-convolution network on a stochastic block model -----------------------------------

def _sbm(rng, n_per=40, k=3, p_in=0.25, p_out=0.02):
    labels = np.repeat(np.arange(k), n_per)
    n = labels.size
    p = np.where(labels[:, None] == labels[None, :], p_in, p_out)
    upper = np.triu(rng.random((n, n)) < p, 1)
    adj = upper | upper.T
    adj |= np.eye(n, dtype=bool)  # self loops
    deg = adj.sum(1)
    rows, cols = np.nonzero(adj)
    weights = 1.0 / np.sqrt(deg[rows] * deg[cols])  # D^-1/2 (A + I) D^-1/2
    features = rng.standard_normal((n, 8)) * 0.5 + np.eye(k)[labels] @ rng.standard_normal((k, 8)) * 0.3
    return np.stack([rows, cols]), weights, features.astype(np.float32), labels


def test_gcn_trains_on_stochastic_block_model():
    rng = np.random.default_rng(0)
    idx, w, x, y = _sbm(rng)
    n = y.size
    train = rng.random(n) < 0.3
    ember.manual_seed(0)
    adj = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(w, dtype=ember.float32), (n, n))
    feats, labels = ember.tensor(x), ember.tensor(y)
    lin1, lin2 = ember.nn.Linear(8, 16), ember.nn.Linear(16, 3)
    opt = ember.optim.Adam(list(lin1.parameters()) + list(lin2.parameters()), lr=0.02)
    mask = ember.tensor(train)

    def forward():
        h = ember.relu(ember.sparse.mm(adj, lin1(feats)))
        return adj @ lin2(h)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(forward()[mask], labels[mask])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with ember.no_grad():
        acc = (forward().argmax(1) == labels)[~mask].float().mean().item()
    assert losses[-1] < 0.5 * losses[0]
    assert acc > 0.8  # chance is 1/3


def test_to_without_a_new_dtype_returns_self():
    """Tensor.to(device) / to(own dtype) of a sparse tensor is the tensor itself; copy=True or a new
    dtype makes a new one (as torch)."""
    for lib in (torch, ember):
        s = lib.sparse_coo_tensor(lib.tensor([[0, 2]]), lib.tensor([1.5, -2.0]), (3,))
        assert s.to("cpu") is s and s.to(lib.float32) is s and s.to() is s, lib.__name__
        c = s.to("cpu", copy=True)
        assert c is not s and c.is_sparse and np.array_equal(c.to_dense().numpy(), s.to_dense().numpy())
        d = s.to(lib.float64)
        assert d.is_sparse and d.dtype == lib.float64


def test_sparse_methods_are_not_namespace_functions():
    """The sparse accessors ember installs on Tensor (to_dense, sparse_dim, values ...) are methods only:
    like torch, the ember namespace has no function of those names."""
    names = ["sparse_dim", "dense_dim", "to_dense", "is_coalesced", "coalesce", "indices", "values", "_nnz",
             "_values", "_indices"]
    assert [n for n in names if hasattr(ember, n)] == [n for n in names if hasattr(torch, n)]
    assert all(hasattr(ember.Tensor, n) for n in names)


def test_gcn_training_matches_torch():
    """test_gcn_trains_on_stochastic_block_model on both libraries, 4 steps: the seeded GCN's losses, gradients
    through sparse.mm and sparse @ dense, and weights are torch's (float32, within 1e-5)."""
    rng = np.random.default_rng(0)
    idx, w, x, y = _sbm(rng)
    n = y.size
    train = rng.random(n) < 0.3

    def story(lib):
        lib.manual_seed(0)
        adj = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(w, dtype=lib.float32), (n, n))
        feats, labels, mask = lib.tensor(x), lib.tensor(y), lib.tensor(train)
        lin1, lin2 = lib.nn.Linear(8, 16), lib.nn.Linear(16, 3)
        opt = lib.optim.Adam(list(lin1.parameters()) + list(lin2.parameters()), lr=0.02)
        losses = []
        for _ in range(4):
            opt.zero_grad()
            out = adj @ lin2(lib.relu(lib.sparse.mm(adj, lin1(feats))))
            loss = lib.nn.functional.cross_entropy(out[mask], labels[mask])
            loss.backward()
            opt.step()
            losses.append(loss)
        return losses + [lin1.weight.grad, lin2.weight, lin1.weight]
    check_story(story, atol=1e-5)
