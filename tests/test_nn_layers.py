"""Dropout, embedding, distance and activation layers against torch: dropout statistics (fraction
zeroed, scaling, channel-wise masks, alpha dropout's moments), eval identity and seeding;
embedding / embedding_bag outputs and weight gradients (padding_idx, max_norm, scale_grad_by_freq,
modes, offsets, per_sample_weights); one_hot; distances; activation modules' outputs, gradients,
reprs and in-place flags; torch's exception types."""
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember

# torch is the oracle on tiny tensors: its intra-op threads only spin-wait on a shared machine
torch.set_num_threads(1)

TOL = dict(rtol=1e-9, atol=1e-10)


def N(t):
    return t.detach().numpy()


def close(e, t, **tol):
    np.testing.assert_allclose(N(e), N(t), **(tol or TOL))


def raises_like(fn):
    types = []
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                fn(lib)
        types.append(info.type)
    assert types[0] is types[1], types


def version(t):
    """Tensor._version is an int in both libraries."""
    return t._version


def copy_state(tmod, emod):
    emod.load_state_dict(OrderedDict((k, ember.tensor(v.detach().numpy().copy())) for k, v in tmod.state_dict().items()))


# ---- dropout --------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_statistics_and_gradient(p, dtype):
    ember.manual_seed(0)
    x = ember.ones(200, 500, dtype=getattr(ember, dtype), requires_grad=True)
    y = ember.nn.functional.dropout(x, p)
    a = N(y)
    zero = a == 0
    n = a.size
    assert abs(zero.mean() - p) < 4 * np.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(a[~zero], 1 / (1 - p), rtol=1e-6)
    assert y.dtype == x.dtype
    g = np.random.default_rng(0).standard_normal(a.shape).astype(dtype)
    (gx,) = ember.autograd.grad(y, x, ember.tensor(g))
    np.testing.assert_allclose(N(gx), np.where(zero, 0, g / (1 - p)), rtol=1e-6)


def test_dropout_eval_p0_p1_and_empty():
    for lib in (torch, ember):
        x = lib.randn(4, 5, requires_grad=True)
        assert lib.nn.functional.dropout(x, 0.5, training=False) is x
        assert lib.nn.functional.dropout(x, 0.0) is x
        assert lib.nn.functional.dropout(lib.ones(0, 3), 0.5).shape == (0, 3)
        y = lib.nn.functional.dropout(x, 1.0)
        assert (N(y) == 0).all() and y.requires_grad
        (g,) = lib.autograd.grad(y.sum(), x)
        assert (N(g) == 0).all()
        m = lib.nn.Dropout(0.3)
        m.eval()
        assert m(x) is x
        for cls, shape in (("Dropout1d", (2, 3, 4)), ("Dropout2d", (2, 3, 4, 4)), ("Dropout3d", (2, 3, 4, 4, 2)),
                           ("AlphaDropout", (3, 4)), ("FeatureAlphaDropout", (2, 3, 4))):
            m = getattr(lib.nn, cls)(0.4).eval()
            z = lib.randn(*shape)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert m(z) is z


def test_dropout_is_reproducible_with_manual_seed():
    ember.manual_seed(123)
    a = N(ember.nn.functional.dropout(ember.ones(1000), 0.5))
    ember.manual_seed(123)
    b = N(ember.nn.functional.dropout(ember.ones(1000), 0.5))
    c = N(ember.nn.functional.dropout(ember.ones(1000), 0.5))
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    g = ember.Generator().manual_seed(5)
    assert g is not None


def test_dropout_inplace():
    for lib in (torch, ember):
        lib.manual_seed(0)
        x = lib.ones(50, 40)
        y = lib.nn.functional.dropout(x, 0.5, inplace=True)
        assert y is x
        vals = set(np.unique(N(x)).tolist())
        assert vals == {0.0, 2.0}
        h = lib.ones(30, 30, requires_grad=True) * 1
        v = version(h)
        lib.nn.Dropout(0.5, inplace=True)(h)
        assert version(h) > v
        m = lib.nn.ReLU(inplace=True)
        leaf = lib.randn(3, requires_grad=True)
        with pytest.raises(RuntimeError):
            m(leaf)


@pytest.mark.parametrize("fn,shape,batched", [("dropout1d", (8, 30, 6), True), ("dropout1d", (300, 5), False),
                                             ("dropout2d", (8, 30, 3, 4), True), ("dropout3d", (6, 40, 2, 2, 3), True),
                                             ("dropout3d", (200, 2, 2, 3), False)])
def test_channel_dropout_masks_whole_channels(fn, shape, batched):
    ember.manual_seed(1)
    p = 0.4
    x = ember.ones(shape, requires_grad=True)
    y = getattr(ember.nn.functional, fn)(x, p)
    a = N(y)
    lead = 2 if batched else 1
    per_channel = a.reshape(a.shape[:lead] + (-1,))
    assert ((per_channel == 0).all(-1) | (per_channel == 1 / (1 - p)).all(-1)).all()
    dropped = (per_channel == 0).all(-1).mean()
    assert abs(dropped - p) < 0.12
    (g,) = ember.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(N(g), a)


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_alpha_dropout_keeps_selu_moments(p):
    ember.manual_seed(2)
    x = ember.randn(400, 500)
    y = N(ember.nn.functional.alpha_dropout(x, p, training=True))
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    alpha = 1.7580993408473766
    a = 1 / np.sqrt((alpha ** 2 * p + 1) * (1 - p))
    dropped_value = -alpha * a + alpha * a * p
    assert abs(np.isclose(y, dropped_value, rtol=1e-5).mean() - p) < 0.01
    z = N(ember.nn.functional.feature_alpha_dropout(ember.randn(50, 20, 10), p, training=True))
    per = np.isclose(z, dropped_value, rtol=1e-5)
    assert (per.all(-1) | ~per.any(-1)).all()


def test_dropout_errors_and_reprs():
    raises_like(lambda lib: lib.nn.functional.dropout(lib.randn(3), 1.5))
    raises_like(lambda lib: lib.nn.Dropout(-0.1))
    raises_like(lambda lib: lib.nn.functional.dropout1d(lib.randn(2, 3, 4, 5), 0.5))
    raises_like(lambda lib: lib.nn.functional.feature_alpha_dropout(lib.randn(3), 0.5, True))
    raises_like(lambda lib: lib.nn.functional.dropout(lib.arange(4), 0.5))
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="dropout2d: Received a 3D input"):
            lib.nn.functional.dropout2d(lib.randn(2, 3, 4), 0.5)
        with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input"):
            lib.nn.functional.dropout3d(lib.randn(2, 3, 4), 0.5)
    for cls, args in (("Dropout", ()), ("Dropout1d", (0.2, True)), ("Dropout2d", (0.3,)), ("Dropout3d", ()),
                      ("AlphaDropout", (0.1,)), ("FeatureAlphaDropout", (0.7, True))):
        assert repr(getattr(ember.nn, cls)(*args)) == repr(getattr(torch.nn, cls)(*args))


def test_torch_level_dropout_functions():
    ember.manual_seed(0)
    x = ember.ones(100, 100)
    assert ember.dropout(x, 0.5, False) is x
    y = ember.dropout(x, 0.25, True)
    assert abs((N(y) == 0).mean() - 0.25) < 0.03
    z = ember.feature_dropout(ember.ones(10, 200, 3), 0.5, True)
    assert ((N(z) == 0).all(-1) | (N(z) == 2).all(-1)).all()
    w = ember.ones(10, 10)
    assert ember.dropout_(w, 0.5, True) is w


# ---- embedding ------------------------------------------------------------------------------

WEIGHT = np.random.default_rng(0).standard_normal((10, 4))


def _emb_compare(fn, weight=WEIGHT, grad_seed=0):
    tw = torch.tensor(weight.copy(), requires_grad=True)
    ew = ember.tensor(weight.copy(), requires_grad=True)
    to, eo = fn(torch, tw), fn(ember, ew)
    assert tuple(to.shape) == tuple(eo.shape) and to.dtype == torch.float64 and eo.dtype == ember.float64
    close(eo, to)
    close(ew.detach(), tw.detach())  # max_norm renormalizes the table in place
    go = np.random.default_rng(grad_seed).standard_normal(tuple(to.shape))
    (tg,) = torch.autograd.grad(to, tw, torch.tensor(go))
    (eg,) = ember.autograd.grad(eo, ew, ember.tensor(go))
    close(eg, tg)


IDX = np.array([[1, 3, 3, 0], [9, 2, 3, 1]])


@pytest.mark.parametrize("padding_idx", [None, 3, -1])
@pytest.mark.parametrize("scale", [False, True])
@pytest.mark.parametrize("max_norm", [None, 1.0])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_embedding(padding_idx, scale, max_norm, index_dtype):
    idx = IDX.astype(index_dtype)
    _emb_compare(lambda lib, w: lib.nn.functional.embedding(lib.tensor(idx), w, padding_idx=padding_idx,
                                                            max_norm=max_norm, scale_grad_by_freq=scale))


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0, float("inf")])
def test_embedding_max_norm_types(norm_type):
    _emb_compare(lambda lib, w: lib.nn.functional.embedding(lib.tensor(IDX), w, max_norm=0.8, norm_type=norm_type))


def test_embedding_index_shapes_and_double_backward():
    for idx in (np.array(4), np.array([2, 2, 5]), np.arange(24).reshape(2, 3, 4) % 10):
        _emb_compare(lambda lib, w: lib.nn.functional.embedding(lib.tensor(idx), w, padding_idx=2))
    # the scatter-add backward is linear in the upstream gradient: its own gradient is the lookup again
    outs = []
    for lib in (torch, ember):
        w = lib.tensor(WEIGHT, requires_grad=True)
        go = lib.tensor(np.random.default_rng(1).standard_normal((2, 4, 4)), requires_grad=True)
        y = lib.nn.functional.embedding(lib.tensor(IDX), w, padding_idx=3)
        (g,) = lib.autograd.grad(y, w, go, create_graph=True)
        (gg,) = lib.autograd.grad((g * lib.tensor(WEIGHT)).sum(), go)
        outs.append(gg)
    close(outs[1], outs[0])
    # with scale_grad_by_freq the gradient rows are divided by the index counts, so the derivative of
    # sum(grad_weight * V) by the upstream gradient is V[idx] / count[idx] (torch's double backward
    # drops the division: a known torch inconsistency ember does not copy)
    w = ember.tensor(WEIGHT, requires_grad=True)
    go = ember.tensor(np.random.default_rng(1).standard_normal((2, 4, 4)), requires_grad=True)
    (g,) = ember.autograd.grad(ember.nn.functional.embedding(ember.tensor(IDX), w, scale_grad_by_freq=True), w, go,
                               create_graph=True)
    (gg,) = ember.autograd.grad((g * ember.tensor(WEIGHT)).sum(), go)
    counts = np.bincount(IDX.ravel(), minlength=10)
    np.testing.assert_allclose(N(gg), WEIGHT[IDX] / counts[IDX][..., None], rtol=1e-12)


def test_embedding_backward_matches_np_add_at_on_a_big_vocabulary():
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 5000, size=(64, 32))
    idx[:, :4] = 7  # a heavily repeated row
    g = rng.standard_normal((64, 32, 16)).astype(np.float32)
    w = ember.zeros(5000, 16, requires_grad=True)
    ember.nn.functional.embedding(ember.tensor(idx), w).backward(ember.tensor(g))
    ref = np.zeros((5000, 16), np.float32)
    np.add.at(ref, idx.reshape(-1), g.reshape(-1, 16))
    np.testing.assert_allclose(N(w.grad), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [40, 3706, 200_000])
def test_embedding_backward_both_scatters_match_torch(rows):
    """Lookups many for their table (one scatter of every row, then the repeated indices summed over) and
    few (the sorted rounds): torch's sums (rows repeated more than 8 times are summed by reduceat, in
    another order: float32 rounding apart), -0.0 rows included."""
    rng = np.random.default_rng(rows)
    idx = rng.integers(0, rows, size=(8, 128))
    idx[0, :12] = 5  # repeated past the light rounds
    g = rng.standard_normal((8, 128, 24)).astype(np.float32)
    g[1, :7] = -0.0
    grads = []
    for lib in (ember, torch):
        w = lib.zeros(rows, 24, requires_grad=True)
        lib.nn.functional.embedding(lib.from_numpy(idx), w).backward(lib.from_numpy(g))
        grads.append(w.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-5)


def test_embedding_module():
    for kwargs in (dict(), dict(padding_idx=2), dict(padding_idx=-2, max_norm=1.5, norm_type=1.0),
                   dict(scale_grad_by_freq=True), dict(sparse=True)):
        tm, em = torch.nn.Embedding(10, 3, **kwargs), ember.nn.Embedding(10, 3, **kwargs)
        assert repr(em) == repr(tm)
        assert list(em.state_dict()) == list(tm.state_dict()) == ["weight"]
        assert em.padding_idx == tm.padding_idx
        if em.padding_idx is not None:
            assert (N(em.weight[em.padding_idx]) == 0).all()
    tm, em = torch.nn.Embedding(10, 4, padding_idx=1), ember.nn.Embedding(10, 4, padding_idx=1)
    copy_state(tm, em)
    x = np.array([[1, 2, 2], [5, 1, 9]])
    to, eo = tm(torch.tensor(x)), em(ember.tensor(x))
    close(eo, to, rtol=1e-6, atol=1e-7)
    to.sum().backward()
    eo.sum().backward()
    close(em.weight.grad, tm.weight.grad)
    for lib in (torch, ember):
        table = lib.tensor(WEIGHT)
        frozen = lib.nn.Embedding.from_pretrained(table)
        assert not frozen.weight.requires_grad and frozen.num_embeddings == 10 and frozen.embedding_dim == 4
        assert lib.nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
        bag = lib.nn.EmbeddingBag.from_pretrained(table, mode="sum")
        assert not bag.weight.requires_grad
    close(ember.nn.Embedding.from_pretrained(ember.tensor(WEIGHT), padding_idx=0)(ember.tensor([0, 4])),
          torch.nn.Embedding.from_pretrained(torch.tensor(WEIGHT), padding_idx=0)(torch.tensor([0, 4])))


def test_embedding_errors():
    raises_like(lambda lib: lib.nn.functional.embedding(lib.tensor([1.0, 2.0]), lib.randn(10, 3)))
    raises_like(lambda lib: lib.nn.functional.embedding(lib.tensor([1, 10]), lib.randn(10, 3)))
    raises_like(lambda lib: lib.nn.functional.embedding(lib.tensor([1, -1]), lib.randn(10, 3)))
    raises_like(lambda lib: lib.nn.functional.embedding(lib.tensor([1]), lib.randn(10)))
    raises_like(lambda lib: lib.nn.functional.embedding(lib.tensor([1]), lib.randn(10, 3), padding_idx=10))
    raises_like(lambda lib: lib.nn.Embedding(10, 3, padding_idx=-11))
    raises_like(lambda lib: lib.nn.Embedding(10, 3, _weight=lib.randn(9, 3)))
    raises_like(lambda lib: lib.nn.Embedding.from_pretrained(lib.randn(10)))


# ---- embedding_bag --------------------------------------------------------------------------

FLAT = np.array([4, 0, 0, 1, 0, 6, 5, 6, 2, 6, 7, 3])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 6])
@pytest.mark.parametrize("layout", ["offsets", "last_offset", "2d"])
def test_embedding_bag(mode, padding_idx, layout):
    if layout == "offsets":
        args = (FLAT, np.array([0, 3, 3, 7]), False)
    elif layout == "last_offset":
        args = (FLAT, np.array([0, 3, 3, 7, 12]), True)
    else:
        args = (FLAT.reshape(3, 4), None, False)
    inp, off, last = args
    _emb_compare(lambda lib, w: lib.nn.functional.embedding_bag(
        lib.tensor(inp), w, None if off is None else lib.tensor(off), mode=mode, padding_idx=padding_idx,
        include_last_offset=last))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_zero_bags(mode):
    """include_last_offset with the one offset [0] is no bag: compared with torch's other spelling of no bag, a
    (0, k) index (torch 2.13 itself crashes on zero bags given by offsets); with no offset at all it is torch's
    RuntimeError."""
    def zero_bags(lib, w, by_offsets):
        if by_offsets:
            return lib.nn.functional.embedding_bag(lib.tensor(FLAT[:3]), w, lib.tensor([0]), mode=mode,
                                                   include_last_offset=True)
        return lib.nn.functional.embedding_bag(lib.tensor(FLAT[:0].reshape(0, 3)), w, mode=mode)
    tw, ew = torch.tensor(WEIGHT, requires_grad=True), ember.tensor(WEIGHT, requires_grad=True)
    to, eo = zero_bags(torch, tw, False), zero_bags(ember, ew, True)
    assert tuple(eo.shape) == tuple(to.shape) == (0, WEIGHT.shape[1])
    (tg,), (eg,) = torch.autograd.grad(to, tw, torch.zeros(0, 4)), ember.autograd.grad(eo, ew, ember.zeros(0, 4))
    np.testing.assert_array_equal(eg.numpy(), tg.numpy())
    from .test_nn_conv import raises_like
    raises_like(lambda lib: lib.nn.functional.embedding_bag(lib.tensor(FLAT[:3]), lib.ones(8, 2),
                                                            lib.tensor(FLAT[:0]), mode=mode, include_last_offset=True))


def _bags_by_lookup(lib, w, offsets, mode, **kwargs):
    """embedding_bag spelled as F.embedding + per-bag sums: the oracle for scale_grad_by_freq (torch's own
    embedding_bag divides by the count of the wrong index there, e.g. for indices [1, 2, 2, 3])."""
    rows = lib.nn.functional.embedding(lib.tensor(FLAT), w, **kwargs)
    bounds = list(offsets) + [len(FLAT)]
    bags = [rows[a:b].sum(0) if mode == "sum" else rows[a:b].mean(0) for a, b in zip(bounds[:-1], bounds[1:])]
    return lib.stack(bags)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_by_freq_and_max_norm(mode):
    outs = []
    for lib, fn in ((torch, _bags_by_lookup), (ember, None)):
        w = lib.tensor(WEIGHT, requires_grad=True)
        if fn is None:
            y = lib.nn.functional.embedding_bag(lib.tensor(FLAT), w, lib.tensor([0, 5, 9]), mode=mode,
                                                scale_grad_by_freq=True, max_norm=1.2)
        else:
            y = fn(lib, w, [0, 5, 9], mode, scale_grad_by_freq=True, max_norm=1.2)
        go = lib.tensor(np.random.default_rng(2).standard_normal(tuple(y.shape)))
        outs.append((y, w.detach()) + lib.autograd.grad(y, w, go))
    for a, b in zip(*outs):
        close(b, a)


def test_embedding_bag_per_sample_weights():
    psw = np.random.default_rng(4).standard_normal(FLAT.shape)
    outs = []
    for lib in (torch, ember):
        w = lib.tensor(WEIGHT, requires_grad=True)
        s = lib.tensor(psw, requires_grad=True)
        y = lib.nn.functional.embedding_bag(lib.tensor(FLAT), w, lib.tensor([0, 2, 2, 8]), mode="sum",
                                            per_sample_weights=s, padding_idx=0)
        go = lib.tensor(np.random.default_rng(5).standard_normal(tuple(y.shape)))
        outs.append((y,) + lib.autograd.grad(y, (w, s), go))
    for a, b in zip(*outs):
        close(b, a)


def test_embedding_bag_module_and_errors():
    for kwargs in (dict(), dict(mode="sum", padding_idx=1), dict(mode="max", max_norm=2.0, norm_type=1.0),
                   dict(scale_grad_by_freq=True, include_last_offset=True)):
        tm, em = torch.nn.EmbeddingBag(10, 3, **kwargs), ember.nn.EmbeddingBag(10, 3, **kwargs)
        assert repr(em) == repr(tm)
        assert list(em.state_dict()) == list(tm.state_dict())
    tm, em = torch.nn.EmbeddingBag(10, 4, mode="max"), ember.nn.EmbeddingBag(10, 4, mode="max")
    copy_state(tm, em)
    close(em(ember.tensor(FLAT), ember.tensor([0, 4])), tm(torch.tensor(FLAT), torch.tensor([0, 4])))

    def bag(lib, *args, **kwargs):
        return lib.nn.functional.embedding_bag(*args, **kwargs)

    raises_like(lambda L: bag(L, L.tensor([[1, 2]]), L.randn(10, 3), L.tensor([0])))
    raises_like(lambda L: bag(L, L.tensor([1, 2]), L.randn(10, 3)))
    raises_like(lambda L: bag(L, L.tensor([1, 2]), L.randn(10, 3), L.tensor([[0]])))
    raises_like(lambda L: bag(L, L.tensor([1, 2]), L.randn(10, 3), L.tensor([1])))
    raises_like(lambda L: bag(L, L.tensor([1, 2]), L.randn(10, 3), L.tensor([0, 5])))
    raises_like(lambda L: bag(L, L.tensor([1, 2]), L.randn(10, 3), L.tensor([0]), mode="median"))
    raises_like(lambda L: bag(L, L.tensor([1, 2]), L.randn(10, 3), L.tensor([0]), mode="max", scale_grad_by_freq=True))
    raises_like(lambda L: bag(L, L.tensor([1, 2]), L.randn(10, 3), L.tensor([0]), per_sample_weights=L.ones(2)))
    raises_like(lambda L: bag(L, L.tensor([1, 2]), L.randn(10, 3), L.tensor([0]), mode="sum",
                              per_sample_weights=L.ones(3)))
    raises_like(lambda L: bag(L, L.tensor([1, 2]), L.randn(10), L.tensor([0])))
    raises_like(lambda L: bag(L, L.tensor([[[1]]]), L.randn(10, 3)))
    raises_like(lambda L: bag(L, L.tensor([1, 12]), L.randn(10, 3), L.tensor([0])))


# ---- one_hot ----------------------------------------------------------------------------------

def test_one_hot():
    for x, n in ((np.array([0, 3, 1]), -1), (np.array([[1, 0], [2, 2]]), 5), (np.array(2), 3),
                 (np.zeros((0,), np.int64), 4)):
        t, e = torch.nn.functional.one_hot(torch.tensor(x), n), ember.nn.functional.one_hot(ember.tensor(x), n)
        assert e.dtype == ember.int64 and tuple(e.shape) == tuple(t.shape)
        np.testing.assert_array_equal(N(e), N(t))
    raises_like(lambda lib: lib.nn.functional.one_hot(lib.tensor([0.0, 1.0])))
    raises_like(lambda lib: lib.nn.functional.one_hot(lib.tensor([0, -1])))
    raises_like(lambda lib: lib.nn.functional.one_hot(lib.tensor([0, 3]), 3))
    raises_like(lambda lib: lib.nn.functional.one_hot(lib.zeros(0, dtype=lib.int64)))


# ---- distances --------------------------------------------------------------------------------

def _pair_compare(fn, a, b):
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    to, eo = fn(torch, ta, tb), fn(ember, ea, eb)
    assert tuple(to.shape) == tuple(eo.shape)
    close(eo, to)
    go = np.random.default_rng(0).standard_normal(tuple(to.shape))
    for x, y in zip(ember.autograd.grad(eo, (ea, eb), ember.tensor(go)),
                    torch.autograd.grad(to, (ta, tb), torch.tensor(go))):
        close(x, y)


def test_distances():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    tiny = a * 1e-9
    for kwargs in (dict(), dict(dim=0), dict(dim=-1, eps=0.5)):
        _pair_compare(lambda lib, x, y: lib.nn.functional.cosine_similarity(x, y, **kwargs), a, b)
    _pair_compare(lambda lib, x, y: lib.nn.functional.cosine_similarity(x, y), tiny, b)  # norms below eps
    _pair_compare(lambda lib, x, y: lib.nn.functional.cosine_similarity(x, y, dim=1), a, b[:1].copy())  # broadcast
    _pair_compare(lambda lib, x, y: lib.cosine_similarity(x, y, 0), a[0].copy(), b[0].copy())
    for kwargs in (dict(), dict(p=1.0), dict(p=3.0, eps=1e-3, keepdim=True), dict(p=float("inf"))):
        _pair_compare(lambda lib, x, y: lib.nn.functional.pairwise_distance(x, y, **kwargs), a, b)
    _pair_compare(lambda lib, x, y: lib.pairwise_distance(x, y), a[0].copy(), b[0].copy())
    rows = a.copy()
    rows[3] = rows[1]  # a zero distance
    for p in (2.0, 1.0, 3.0, float("inf")):
        _pair_compare(lambda lib, x, y: lib.nn.functional.pdist(x * y, p), rows, np.ones_like(rows))
    _pair_compare(lambda lib, x, y: lib.pdist(x + y), a, b)
    raises_like(lambda lib: lib.nn.functional.pdist(lib.randn(2, 3, 4)))
    for cls, kwargs in (("PairwiseDistance", dict(p=1.5, keepdim=True)), ("CosineSimilarity", dict(dim=0))):
        tm, em = getattr(torch.nn, cls)(**kwargs), getattr(ember.nn, cls)(**kwargs)
        assert repr(em) == repr(tm)
        close(em(ember.tensor(a), ember.tensor(b)), tm(torch.tensor(a), torch.tensor(b)))


def test_normalize():
    a = np.random.default_rng(9).standard_normal((3, 4))
    for kwargs in (dict(), dict(p=1.0, dim=0), dict(p=3.0, dim=-1, eps=0.5), dict(p=None, dim=0)):
        _pair_compare(lambda lib, x, y: lib.nn.functional.normalize(x * y, **kwargs), a, a[::-1].copy())


# ---- activation modules -----------------------------------------------------------------------

ACTIVATIONS = [
    ("ReLU", (), {}), ("ReLU", (), dict(inplace=True)), ("ReLU6", (), {}), ("ReLU6", (True,), {}),
    ("LeakyReLU", (0.2,), {}), ("LeakyReLU", (), dict(inplace=True)), ("PReLU", (), {}),
    ("PReLU", (3,), dict(init=0.1)), ("ELU", (0.5,), {}), ("ELU", (), dict(inplace=True)), ("SELU", (), {}),
    ("SELU", (True,), {}), ("CELU", (0.7,), {}), ("CELU", (), dict(inplace=True)), ("GELU", (), {}),
    ("GELU", (), dict(approximate="tanh")), ("SiLU", (), {}), ("SiLU", (True,), {}), ("Mish", (), {}),
    ("Mish", (), dict(inplace=True)), ("Sigmoid", (), {}), ("Tanh", (), {}), ("Hardtanh", (-0.5, 0.8), {}),
    ("Hardtanh", (), dict(inplace=True)), ("Hardswish", (), {}), ("Hardswish", (True,), {}), ("Hardsigmoid", (), {}),
    ("Hardsigmoid", (True,), {}), ("Softplus", (), {}), ("Softplus", (2.0, 1.0), {}), ("Softsign", (), {}),
    ("Softshrink", (), {}), ("Softshrink", (0.3,), {}), ("Hardshrink", (0.4,), {}), ("Tanhshrink", (), {}),
    ("Threshold", (0.1, -2.0), {}), ("Threshold", (0.1, 20.0, True), {}), ("LogSigmoid", (), {}),
    ("GLU", (), {}), ("GLU", (1,), {}), ("Softmax", (1,), {}), ("Softmax", (), dict(dim=-1)),
    ("LogSoftmax", (0,), {}), ("Softmin", (2,), {}), ("Softmax2d", (), {}), ("RReLU", (0.1, 0.3), {}),
]


@pytest.mark.parametrize("name,args,kwargs", ACTIVATIONS, ids=lambda v: str(v))
def test_activation_module(name, args, kwargs):
    extra = dict(dtype=torch.float64) if name == "PReLU" else {}
    tm = getattr(torch.nn, name)(*args, **kwargs, **extra)
    em = getattr(ember.nn, name)(*args, **kwargs, **({} if not extra else dict(dtype=ember.float64)))
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    if name == "RReLU":
        tm.eval()
        em.eval()
    copy_state(tm, em)
    shape = (2, 4, 3, 2) if name == "GLU" else (2, 3, 4, 2)
    x = np.random.default_rng(len(name)).standard_normal(shape) * 2
    outs = []
    for lib, m in ((torch, tm), (ember, em)):
        leaf = lib.tensor(x, requires_grad=True)
        inp = leaf * 1  # in-place modules need a non-leaf
        v = version(inp)
        y = m(inp)
        inplace = kwargs.get("inplace") or (args and args[-1] is True)
        assert (y is inp) == bool(inplace) and (version(inp) > v) == bool(inplace)
        go = lib.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)))
        params = list(m.parameters())
        grads = lib.autograd.grad(y, [leaf] + params, go)
        outs.append((y,) + tuple(grads))
    for a, b in zip(*outs):
        close(b, a, rtol=1e-7, atol=1e-9)


def test_rrelu_training_and_activation_errors():
    ember.manual_seed(0)
    x = -ember.ones(2000)
    y = N(ember.nn.RReLU(0.1, 0.3)(x))
    assert ((y <= -0.1) & (y >= -0.3)).all() and y.std() > 0.03
    raises_like(lambda lib: lib.nn.Hardtanh(1.0, -1.0))
    raises_like(lambda lib: lib.nn.Softmax2d()(lib.randn(2, 3)))
    raises_like(lambda lib: lib.nn.GLU()(lib.randn(3, 5)))
    raises_like(lambda lib: lib.nn.PReLU(3)(lib.randn(2, 4)))
    for lib in (torch, ember):
        with pytest.warns(FutureWarning):
            m = lib.nn.Hardtanh(min_value=-2.0)
        assert m.min_val == -2.0
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            lib.nn.Softmax()(lib.randn(2, 3))


def test_activation_modules_in_a_trained_net():
    """A small MLP with norm, dropout (eval) and activations: identical weights, identical loss and grads."""
    outs = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.LayerNorm(8), lib.nn.GELU(), lib.nn.Dropout(0.3),
                                lib.nn.Linear(8, 8), lib.nn.BatchNorm1d(8), lib.nn.SiLU(), lib.nn.Linear(8, 3))
        outs.append(net)
    copy_state(outs[0], outs[1])
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((5, 6)).astype(np.float32), np.array([0, 2, 1, 1, 0])
    results = []
    for lib, net in zip((torch, ember), outs):
        net.eval()
        loss = lib.nn.CrossEntropyLoss(label_smoothing=0.1)(net(lib.tensor(x)), lib.tensor(t))
        loss.backward()
        results.append([loss] + [p.grad for p in net.parameters()])
    for a, b in zip(*results):
        close(b, a, rtol=1e-4, atol=1e-5)


# ---- against torch (issue 19) ------------------------------------------------------------------------------
def test_embedding_backward_big_vocabulary_matches_torch():
    """The accumulation of test_embedding_backward_matches_np_add_at_on_a_big_vocabulary, against torch's
    embedding backward on the same indices and upstream gradient (a heavily repeated row included)."""
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 5000, size=(64, 32))
    idx[:, :4] = 7
    g = rng.standard_normal((64, 32, 16)).astype(np.float32)
    grads = []
    for lib in (ember, torch):
        w = lib.zeros(5000, 16, requires_grad=True)
        lib.nn.functional.embedding(lib.tensor(idx), w).backward(lib.tensor(g))
        grads.append(w.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-5)


# ---- the seeded dropout tests above, drawn again on torch: the same masks, values and gradients (issue 19) ----

def _dropout_grad(lib, fn, x, seed):
    """fn(x) after lib.manual_seed(seed), and the gradient of a fixed weighting of it."""
    lib.manual_seed(seed)
    y = fn(lib, x)
    w = np.random.default_rng(0).standard_normal(tuple(y.shape)).astype(str(y.dtype).split(".")[-1])
    (gx,) = lib.autograd.grad(y, x, lib.tensor(w))
    return [y, gx]


DROPOUT_STORIES = {
    "dropout_statistics_and_gradient": [
        (lambda lib, p=p, d=d: _dropout_grad(lib, lambda t, x: t.nn.functional.dropout(x, p),
                                             lib.ones(200, 50, dtype=getattr(lib, d), requires_grad=True), 0))
        for p in (0.1, 0.8) for d in ("float32", "float64")],
    "dropout_is_reproducible_with_manual_seed": [
        lambda lib: (lib.manual_seed(123), [lib.nn.functional.dropout(lib.ones(1000), 0.5) for _ in range(2)])[1]],
    "channel_dropout_masks_whole_channels": [
        (lambda lib, fn=fn, shape=shape: _dropout_grad(
            lib, lambda t, x: getattr(t.nn.functional, fn)(x, 0.4), lib.ones(shape, requires_grad=True), 1))
        for fn, shape in (("dropout1d", (8, 30, 6)), ("dropout1d", (300, 5)), ("dropout2d", (8, 30, 3, 4)),
                          ("dropout3d", (6, 40, 2, 2, 3)), ("dropout3d", (200, 2, 2, 3)))],
    "alpha_dropout_keeps_selu_moments": [
        (lambda lib, p=p: (lib.manual_seed(2), [lib.nn.functional.alpha_dropout(lib.randn(100, 50), p, training=True),
                                                lib.nn.functional.feature_alpha_dropout(lib.randn(50, 20, 10), p,
                                                                                        training=True)])[1])
        for p in (0.2, 0.5)],
    "torch_level_dropout_functions": [
        lambda lib: (lib.manual_seed(0), [lib.dropout(lib.ones(100, 100), 0.25, True),
                                          lib.feature_dropout(lib.ones(10, 200, 3), 0.5, True),
                                          lib.dropout_(lib.ones(10, 10), 0.5, True),
                                          lib.alpha_dropout(lib.ones(10, 10), 0.5, True)])[1]],
}


@pytest.mark.parametrize("name", sorted(DROPOUT_STORIES))
def test_seeded_dropout_matches_torch(name):
    """Seeded alike, ember's dropout masks, outputs, dtypes and gradients are torch's, bit for bit."""
    for story in DROPOUT_STORIES[name]:
        theirs, ours = story(torch), story(ember)
        assert len(ours) == len(theirs)
        for e, t in zip(ours, theirs):
            assert str(e.dtype) == str(t.dtype)
            assert tuple(e.shape) == tuple(t.shape)
            np.testing.assert_array_equal(N(e), N(t))
