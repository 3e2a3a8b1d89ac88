"""Sparse CSR tensors and sparse.sampled_addmm, differential against torch: construction, invariants,
conversions, repr, products and gradients (dense and CSR) from the same NumPy inputs."""
import copy

import numpy as np
import pytest
import torch

import ember

pytestmark = [pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state"),
              pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled")]

LIBS = (torch, ember)
DENSE = np.array([[0., 1, 0, 4], [2, 0, 3, 0], [0, 0, 0, 0]])


def same(t, e, where="result"):
    """ember's result equals torch's: layout, shape, dtype, pattern (index dtypes too) and values."""
    assert str(e.layout) == str(t.layout), f"{where}: layout {e.layout} vs torch {t.layout}"
    assert tuple(e.shape) == tuple(t.shape), f"{where}: shape {tuple(e.shape)} vs torch {tuple(t.shape)}"
    assert str(e.dtype) == str(t.dtype), f"{where}: dtype {e.dtype} vs torch {t.dtype}"
    if t.layout == torch.sparse_csr:
        for name in ("crow_indices", "col_indices"):
            a, b = getattr(t, name)(), getattr(e, name)()
            assert str(a.dtype) == str(b.dtype), f"{where}.{name}: dtype {b.dtype} vs torch {a.dtype}"
            np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=f"{where}.{name}")
        t, e = t.values(), e.values()
    elif t.layout == torch.sparse_coo:
        np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy(), err_msg=f"{where}.indices")
        t, e = t._values(), e._values()
    np.testing.assert_allclose(e.detach().numpy(), t.detach().resolve_conj().numpy(), rtol=1e-6, atol=1e-6,
                               err_msg=where)


def both(fn, *arrays, grad=False):
    """fn(lib, *tensors) on torch and on ember from the same arrays: (torch result, ember result, leaves)."""
    out = []
    for lib in LIBS:
        ts = [lib.tensor(a, requires_grad=grad and a.dtype.kind in "fc") for a in arrays]
        out.append((fn(lib, *ts), ts))
    return out


def raises_both(fn, exc=RuntimeError):
    for lib in LIBS:
        with pytest.raises(exc):
            fn(lib)


# ---- construction, accessors, repr --------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ([0, 2, 3], [0, 2, 1], [1., 2, 3], (2, 3)),
    ([0, 2, 3], [0, 2, 1], [1., 2, 3], None),  # size inferred: ncols = max(col) + 1
    ([0, 0, 0], [], [], (2, 5)),
    ([[0, 1, 2], [0, 2, 2]], [[1, 0], [0, 2]], [[1., 2], [3, 4]], (2, 2, 3)),  # batched
    ([0, 1, 2], [1, 0], [[1., 2], [3, 4]], (2, 2, 2)),  # a dense dim
    ([0, 1, 3], [2, 0, 1], [1, 2, 3], (2, 3)),  # int64 values
])
def test_construct(args):
    crow, col, values, size = args
    res = []
    for lib in LIBS:
        extra = () if size is None else (size,)
        index = {"dtype": lib.int64}  # an empty list would be float32
        res.append(lib.sparse_csr_tensor(lib.tensor(crow, **index), lib.tensor(col, **index), lib.tensor(values),
                                         *extra))
    same(*res)
    same(res[0].to_dense(), res[1].to_dense(), "to_dense")
    assert res[1].is_sparse_csr and not res[1].is_sparse and res[1]._nnz() == res[0]._nnz()
    assert res[1].dense_dim() == res[0].dense_dim() and res[1].sparse_dim() == res[0].sparse_dim()
    assert repr(res[1]) == repr(res[0])


def test_int32_indices_dtype_and_requires_grad():
    res = [lib.sparse_csr_tensor(lib.tensor([0, 1, 3], dtype=lib.int32), lib.tensor([1, 0, 2], dtype=lib.int32),
                                 lib.tensor([1., 2, 3]), (2, 3), dtype=lib.float64, requires_grad=True)
           for lib in LIBS]
    same(*res)
    assert repr(res[1]) == repr(res[0])
    assert res[1].requires_grad and res[1].is_leaf


@pytest.mark.parametrize("crow, col, values, size", [
    ([1, 1, 3], [1, 0, 2], [1., 2, 3], (2, 3)),  # crow[0] != 0
    ([0, 1, 2], [1, 0, 2], [1., 2, 3], (2, 3)),  # crow[-1] != nnz
    ([0, 2, 1, 3], [1, 0, 2], [1., 2, 3], (3, 3)),  # crow decreasing
    ([0, 1, 3], [1, 0, 5], [1., 2, 3], (2, 3)),  # col out of range
    ([0, 1, 3], [1, 0, -1], [1., 2, 3], (2, 3)),  # negative col
    ([0, 1, 3], [1, 2, 0], [1., 2, 3], (2, 3)),  # unsorted in a row
    ([0, 1, 3], [1, 2, 2], [1., 2, 3], (2, 3)),  # duplicate in a row
    ([0, 1, 3], [1, 0, 2], [1., 2, 3], (3, 3)),  # crow length != rows + 1
    ([0, 1, 3], [1, 0], [1., 2, 3], (2, 3)),  # col length != nnz
    ([0, 1, 3], [1, 0, 2], [1., 2, 3], (6,)),  # 1-d size
    ([0., 1, 3], [1, 0, 2], [1., 2, 3], (2, 3)),  # float indices
])
def test_invariant_errors(crow, col, values, size):
    for lib in LIBS:  # torch checks only when asked; ember always does (Note [Sparse CSR storage])
        with pytest.raises(RuntimeError):
            lib.sparse_csr_tensor(lib.tensor(crow), lib.tensor(col), lib.tensor(values), size,
                                  check_invariants=True)


def test_mixed_index_dtypes_raise():
    raises_both(lambda lib: lib.sparse_csr_tensor(lib.tensor([0, 1, 3], dtype=lib.int32), lib.tensor([1, 0, 2]),
                                                  lib.tensor([1., 2, 3]), (2, 3), check_invariants=True))


@pytest.mark.parametrize("arr, kw", [
    (DENSE, {}),
    (DENSE.astype(np.float32), {}),
    (DENSE.astype(np.int64), {}),
    (DENSE != 0, {}),
    (DENSE * (1 + 2j), {}),
    (np.zeros((0, 3)), {}),
    (np.zeros((2, 3)), {}),
    (np.stack([DENSE, DENSE[::-1]]), {}),  # batched, equal nnz per batch
    (np.ones((2, 3, 2)), {"dense_dim": 1}),
])
def test_to_sparse_csr(arr, kw):
    t, e = (lib.tensor(arr).to_sparse_csr(**kw) for lib in LIBS)
    same(t, e)
    same(t.to_dense(), e.to_dense(), "to_dense")
    assert repr(e) == repr(t)


@pytest.mark.parametrize("arr", [np.array([1., 0, 2]), np.stack([DENSE, np.zeros_like(DENSE)])])
def test_to_sparse_csr_errors(arr):
    for lib in LIBS:
        with pytest.raises((RuntimeError, IndexError)):  # torch: IndexError for 1-d, RuntimeError for batches
            lib.tensor(arr).to_sparse_csr()


def test_coo_csr_round_trip():
    res = []
    for lib in LIBS:
        coo = lib.sparse_coo_tensor(lib.tensor([[1, 0, 1, 2], [0, 1, 0, 3]]), lib.tensor([1., 2, 3, 4]), (3, 4))
        csr = coo.to_sparse_csr()  # uncoalesced: duplicates summed
        res.append((csr, csr.to_sparse(), csr.to_sparse_coo(), lib.tensor(DENSE).to_sparse(layout=lib.sparse_csr)))
    for a, b in zip(*res):
        same(a, b)


def test_accessors_and_errors():
    t, e = (lib.tensor(DENSE).to_sparse_csr() for lib in LIBS)
    assert e.layout is ember.sparse_csr and e.shape == t.shape and e.numel() == t.numel() and len(e) == len(t)
    assert e.dim() == t.dim() and e.size(-1) == t.size(-1)
    for c in (t, e):
        for name in ("stride", "is_contiguous", "indices", "is_coalesced", "tolist"):
            with pytest.raises(RuntimeError):
                getattr(c, name)()
        with pytest.raises(TypeError):
            c.numpy()
    for lib in LIBS:
        for name in ("crow_indices", "col_indices"):
            with pytest.raises(RuntimeError):
                getattr(lib.tensor(DENSE), name)()
    same(t.double(), e.double(), "double")
    same(t.to(torch.float32), e.to(ember.float32), "to")
    same(t.clone(), e.clone(), "clone")
    same(t * 2, e * 2, "mul")
    same(t + torch.ones(3, 4), e + ember.ones(3, 4), "add dense")
    same(torch.ones(3, 4) + t, ember.ones(3, 4) + e, "radd dense")
    c = copy.deepcopy(e)
    same(t, c, "deepcopy")


# ---- sampled_addmm -----------------------------------------------------------------------------

def _sampled(lib, inp, m1, m2, **kw):
    return lib.sparse.sampled_addmm(inp.to_sparse_csr(), m1, m2, **kw)


@pytest.mark.parametrize("shapes, kw", [
    (((3, 4), (3, 5), (5, 4)), {}),
    (((3, 4), (3, 5), (5, 4)), {"beta": 0.2, "alpha": 0.6}),
    (((3, 4), (3, 0), (0, 4)), {"beta": 0.5}),
    (((0, 4), (0, 5), (5, 4)), {}),
    (((2, 3, 4), (2, 3, 5), (2, 5, 4)), {"alpha": -1.5}),  # batched
    (((3, 4), (2, 3, 5), (2, 5, 4)), {}),  # one pattern broadcast over the batch
])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_sampled_addmm(shapes, kw, dtype):
    rng = np.random.default_rng(len(shapes[0]) + len(kw))
    arrays = [rng.standard_normal(s) for s in shapes]
    if dtype == np.complex128:
        arrays = [a + 1j * rng.standard_normal(a.shape) for a in arrays]
        kw = {k: v * (1 + 1j) for k, v in kw.items()}
    mask = DENSE[:shapes[0][-2], :shapes[0][-1]] != 0
    arrays[0] = arrays[0] * np.broadcast_to(mask, arrays[0].shape)
    upstream = rng.standard_normal(np.broadcast_shapes(shapes[0], shapes[1][:-1] + shapes[2][-1:])).astype(dtype)
    if len(shapes[1]) == 3:  # torch's backward refuses batches: ember's gradients against torch's per matrix
        e = _sampled_grads(ember, arrays, upstream, kw)
        per = [_sampled_grads(torch, [arrays[0] if arrays[0].ndim == 2 else arrays[0][i], arrays[1][i],
                                      arrays[2][i]], upstream[i], kw) for i in range(shapes[1][0])]
        same(torch.stack([p[0].to_dense() for p in per]), e[0].to_dense(), "output")
        for i in (1, 4):  # the input's gradient (dense upstream, then through to_dense: CSR)
            t_grad = sum(p[i].to_dense() for p in per) if arrays[0].ndim == 2 else \
                torch.stack([p[i].to_dense() for p in per])
            same(t_grad, e[i].to_dense() if e[i].layout == ember.sparse_csr else e[i], f"item {i}")
        for i in (2, 3, 5, 6):
            same(torch.stack([p[i] for p in per]), e[i], f"item {i}")
        return
    for i, (a, b) in enumerate(zip(_sampled_grads(torch, arrays, upstream, kw),
                                   _sampled_grads(ember, arrays, upstream, kw))):
        same(a, b, f"item {i}")


def _sampled_grads(lib, arrays, upstream, kw):
    """sampled_addmm's output, then its gradients under a dense upstream and through to_dense()."""
    inp = lib.tensor(arrays[0]).to_sparse_csr().requires_grad_()
    m1, m2 = (lib.tensor(a, requires_grad=True) for a in arrays[1:])
    out = lib.sparse.sampled_addmm(inp, m1, m2, **kw)
    dense_up = lib.autograd.grad(out, [inp, m1, m2], lib.tensor(upstream), retain_graph=True)
    via_dense = lib.autograd.grad(out.to_dense(), [inp, m1, m2], lib.tensor(upstream))
    return (out, *dense_up, *via_dense)


def test_sampled_addmm_out_and_nan_input():
    res = []
    for lib in LIBS:
        inp = lib.sparse_csr_tensor(lib.tensor([0, 1, 3]), lib.tensor([1, 0, 2]), lib.tensor([float("nan"), 2., 3]))
        m1, m2 = lib.ones(2, 4), lib.ones(4, 3)
        out = inp.clone()
        r = lib.sparse.sampled_addmm(inp, m1, m2, beta=0., out=out)  # beta=0 keeps NaN, as torch
        assert r is out
        res.append(out)
    same(*res)


@pytest.mark.parametrize("fn", [
    lambda lib, s, d: lib.sparse.sampled_addmm(d, d[:, :4], d[:4].T),  # dense input
    lambda lib, s, d: lib.sparse.sampled_addmm(s, s, d),  # CSR mat1
    lambda lib, s, d: lib.sparse.sampled_addmm(s, d[0], d),  # 1-d mat1
    lambda lib, s, d: lib.sparse.sampled_addmm(s, d[:, :3], d[:2]),  # cannot be multiplied
    lambda lib, s, d: lib.sparse.sampled_addmm(s, d[:2], d),  # rows differ
    lambda lib, s, d: lib.sparse.sampled_addmm(s, d, d.double()),  # dtypes differ
    lambda lib, s, d: lib.sparse.sampled_addmm(s.long(), d.long(), d.long().T),  # integer input
    lambda lib, s, d: lib.sparse.sampled_addmm(s, d, d.T, beta=1j),  # complex beta, real tensors
    lambda lib, s, d: lib.sparse.sampled_addmm(s, d[None], d.T.expand(3, 4, 3)),  # batch sizes differ
    lambda lib, s, d: lib.sparse.sampled_addmm(s, d, d.T, out=d.clone()),  # dense out
])
def test_sampled_addmm_errors(fn):
    for lib in LIBS:
        d = lib.tensor(DENSE.astype(np.float32))
        s = d.to_sparse_csr() if lib is torch else ember.tensor(DENSE.astype(np.float32)).to_sparse_csr()
        with pytest.raises((RuntimeError, NotImplementedError)) as info:
            fn(lib, s, d)
        if lib is torch:
            expected = info.type
        else:
            assert info.type is expected or issubclass(info.type, expected), (info.type, expected)


# ---- mm / matmul / addmm, values(), to_dense() gradients -----------------------------------------

@pytest.mark.parametrize("scale", [1, 1 - 2j])
def test_products_and_gradients(scale):
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((4, 2)) * scale
    vec = rng.standard_normal(4) * scale
    res = []
    for lib in LIBS:
        # torch's complex backward through a CSR operand fails ("do not have strides"): there its dense
        # operand stands in (torch.mm gives a CSR operand the dense gradient, the same numbers)
        csr = lib is ember or scale == 1
        s = lib.tensor(DENSE * scale)
        s = (s.to_sparse_csr() if csr else s).requires_grad_()
        d = lib.tensor(dense, requires_grad=True)
        v = lib.tensor(vec, requires_grad=True)
        mm = lib.mm(s, d)
        mv = s @ v
        add = lib.addmm(lib.ones(3, 2, dtype=d.dtype), s, d, beta=2, alpha=3)
        loss = (mm * lib.tensor(dense[:3] + 1)).sum() + mv.sum() + add.sum()
        g = lib.autograd.grad(loss.real if scale != 1 else loss, [s, d, v])
        res.append((mm, mv, add, *g))
        if scale == 1:
            vals = s.values()
            g_vals = lib.autograd.grad((vals * vals).sum(), s)[0]
            s.to_dense().pow(2).sum().backward()
            res[-1] += (lib.sparse.mm(s, d), g_vals, s.grad)
    for i, (a, b) in enumerate(zip(*res)):
        same(a, b, f"item {i}")


def test_constructor_gradient_reaches_values():
    res = []
    for lib in LIBS:
        v = lib.tensor([1., 2, 3], dtype=lib.float64, requires_grad=True)
        s = lib.sparse_csr_tensor(lib.tensor([0, 1, 3]), lib.tensor([1, 0, 2]), v, (2, 3))
        w = lib.tensor(np.arange(6.).reshape(2, 3))
        res.append(lib.autograd.grad((s.to_dense() * w).sum(), v))
    same(res[0][0], res[1][0])


def test_sampled_addmm_double_backward():
    rng = np.random.default_rng(5)
    m1, m2, up = rng.standard_normal((3, 5)), rng.standard_normal((5, 4)), rng.standard_normal((3, 4))
    res = []
    for lib in LIBS:
        inp = lib.tensor(DENSE).to_sparse_csr().requires_grad_()
        a, b = lib.tensor(m1, requires_grad=True), lib.tensor(m2, requires_grad=True)
        out = lib.sparse.sampled_addmm(inp, a, b, beta=0.3, alpha=-0.7)
        ga, gb = lib.autograd.grad(out.to_dense(), [a, b], lib.tensor(up), create_graph=True)
        res.append(lib.autograd.grad((ga * ga).sum() + (gb ** 3).sum(), [a, b]))
    for i, (t, e) in enumerate(zip(*res)):
        same(t, e, f"grad {i}")


def test_assert_close_on_csr():
    for lib in LIBS:
        a = lib.tensor(DENSE).to_sparse_csr()
        lib.testing.assert_close(a, a.clone())
        with pytest.raises(AssertionError):
            lib.testing.assert_close(a, (a * 1.5))
        with pytest.raises(AssertionError):
            lib.testing.assert_close(a, lib.tensor(DENSE[::-1].copy()).to_sparse_csr())


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_sparse_mm_reduce(reduce):
    """Rows of two entries, one and none: which entry wins amax/amin decides the gradients."""
    rng = np.random.default_rng(7)
    dense, up = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))
    res = []
    for lib in LIBS:
        s = lib.tensor(DENSE).to_sparse_csr().requires_grad_()
        d = lib.tensor(dense, requires_grad=True)
        out = lib.sparse.mm(s, d, reduce)
        res.append((out, *lib.autograd.grad(out, [s, d], lib.tensor(up))))
    for i, (t, e) in enumerate(zip(*res)):
        same(t, e, f"item {i}")
    with pytest.raises(RuntimeError):
        ember.sparse.mm(ember.tensor(DENSE).to_sparse_csr(), ember.ones(4, 2, dtype=ember.float64), "prod")
