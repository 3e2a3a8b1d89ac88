"""Losses against torch: every loss with every reduction, float32 and float64 — values, gradients
of every float input (and second-order gradients where torch has them), class weights,
ignore_index, label smoothing, probability targets, K-dimensional inputs; loss modules' reprs
and state_dicts; ctc_loss; torch's exception types for bad targets."""
import warnings
from collections import namedtuple

import numpy as np
import pytest
import torch

import ember

# torch is the oracle on tiny tensors: its intra-op threads only spin-wait on a shared machine
torch.set_num_threads(1)

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-10)}
GTOL = {"float32": dict(rtol=1e-3, atol=1e-5), "float64": dict(rtol=1e-7, atol=1e-9)}
REDUCTIONS = ["none", "mean", "sum"]
N, C = 5, 4


def N_(t):
    return t.detach().numpy()


def close(e, t, dtype, grad=False, what=""):
    np.testing.assert_allclose(N_(e), N_(t), err_msg=what, **(GTOL if grad else TOL)[dtype])


def dname(d):
    return str(d).split(".")[-1]


Loss = namedtuple("Loss", "id fn make gradgrad")


def _rng(key):
    return np.random.default_rng(abs(hash(key)) % (2 ** 32))


def _probs(rng, shape, axis=1):
    p = rng.random(shape) + 0.1
    return p / p.sum(axis, keepdims=True)


# Each case: fn(lib, F, reduction, *tensors) and make(rng, dtype) -> list of (array, requires_grad).
# Integer arrays (targets) never require grad; constants (weights) are built inside fn from
# module-level arrays so both libraries see the same values.
W = np.array([0.5, 2.0, 1.0, 1.5])
T1 = np.array([0, 3, 1, 2, 1])
T_IGN = np.array([0, -100, 1, 2, 1])
T_IGN_ALL = np.array([-100] * N)
TK = np.array([[[0, 1], [3, 2], [1, 1]], [[2, 2], [0, 3], [1, 0]]])
TM = np.array([[0, 1, -1, 2], [2, -1, 0, 0], [1, 2, 0, 3], [-1, 0, 0, 0], [3, -1, 1, 1]])
SIGNS = np.array([1.0, -1.0, -1.0, 1.0, 1.0])


def _t(lib, a):
    return lib.tensor(a)


def _x(rng, dtype, shape=(N, C), scale=1.0):
    return ((rng.standard_normal(shape) * scale).astype(dtype), True)


def _c(arr, dtype):
    return (np.asarray(arr).astype(dtype), False)


LOSSES = [
    Loss("cross_entropy", lambda L, F, r, x: F.cross_entropy(x, _t(L, T1), reduction=r),
         lambda g, d: [_x(g, d, scale=2)], True),
    Loss("cross_entropy-weight-ignore", lambda L, F, r, x: F.cross_entropy(
        x, _t(L, T_IGN), weight=_t(L, W.astype(x.dtype.__str__().split(".")[-1])), reduction=r),
        lambda g, d: [_x(g, d)], True),
    Loss("cross_entropy-smoothing", lambda L, F, r, x: F.cross_entropy(x, _t(L, T_IGN), reduction=r,
                                                                     label_smoothing=0.25),
         lambda g, d: [_x(g, d)], True),
    Loss("cross_entropy-weight-smoothing-ignore3", lambda L, F, r, x: F.cross_entropy(
        x, _t(L, T1), weight=_t(L, W.astype(dname(x.dtype))), ignore_index=3, reduction=r, label_smoothing=0.1),
        lambda g, d: [_x(g, d)], True),
    # the per-sample factors skipped where they are all 1: ignored targets without a class weight, smoothing
    # with every target counted, an ignore_index inside the targets' range that none of them has
    Loss("cross_entropy-ignore", lambda L, F, r, x: F.cross_entropy(x, _t(L, T_IGN), reduction=r),
         lambda g, d: [_x(g, d)], True),
    Loss("cross_entropy-smoothing-all-counted", lambda L, F, r, x: F.cross_entropy(x, _t(L, T1), reduction=r,
                                                                                 label_smoothing=0.25),
         lambda g, d: [_x(g, d)], True),
    Loss("cross_entropy-ignore-index-unused", lambda L, F, r, x: F.cross_entropy(
        x, _t(L, np.array([0, 3, 2, 2, 0])), ignore_index=1, reduction=r), lambda g, d: [_x(g, d)], True),
    Loss("cross_entropy-all-ignored", lambda L, F, r, x: F.cross_entropy(x, _t(L, T_IGN_ALL), reduction=r),
         lambda g, d: [_x(g, d)], False),
    Loss("cross_entropy-Kdim", lambda L, F, r, x: F.cross_entropy(
        x, _t(L, TK), weight=_t(L, W.astype(dname(x.dtype))), ignore_index=2, reduction=r, label_smoothing=0.2),
        lambda g, d: [_x(g, d, (2, C, 3, 2))], True),
    Loss("cross_entropy-1d", lambda L, F, r, x: F.cross_entropy(x, _t(L, np.array(2)), reduction=r),
         lambda g, d: [_x(g, d, (C,))], True),
    Loss("cross_entropy-probs", lambda L, F, r, x, p: F.cross_entropy(x, p, reduction=r),
         lambda g, d: [_x(g, d), (_probs(g, (N, C)).astype(d), True)], True),
    Loss("cross_entropy-probs-weight-smoothing", lambda L, F, r, x, p: F.cross_entropy(
        x, p, weight=_t(L, W.astype(dname(x.dtype))), reduction=r, label_smoothing=0.3),
        lambda g, d: [_x(g, d, (2, C, 3)), (_probs(g, (2, C, 3)).astype(d), True)], True),
    Loss("nll_loss", lambda L, F, r, x: F.nll_loss(x, _t(L, T_IGN), reduction=r),
         lambda g, d: [_x(g, d)], False),
    Loss("nll_loss-weight-Kdim", lambda L, F, r, x: F.nll_loss(
        x, _t(L, TK), weight=_t(L, W.astype(dname(x.dtype))), ignore_index=1, reduction=r),
        lambda g, d: [_x(g, d, (2, C, 3, 2))], False),
    Loss("mse_loss", lambda L, F, r, x, y: F.mse_loss(x, y, reduction=r), lambda g, d: [_x(g, d), _x(g, d)], True),
    Loss("mse_loss-weight", lambda L, F, r, x, y, w: F.mse_loss(x, y, reduction=r, weight=w),
         lambda g, d: [_x(g, d), _x(g, d), (g.random((N, C)).astype(d), True)], True),
    Loss("l1_loss", lambda L, F, r, x, y: F.l1_loss(x, y, reduction=r), lambda g, d: [_x(g, d), _x(g, d)], False),
    Loss("l1_loss-weight", lambda L, F, r, x, y, w: F.l1_loss(x, y, reduction=r, weight=w),
         lambda g, d: [_x(g, d), _x(g, d), (g.random((N, C)).astype(d), True)], False),
    Loss("smooth_l1_loss", lambda L, F, r, x, y: F.smooth_l1_loss(x, y, reduction=r, beta=0.7),
         lambda g, d: [_x(g, d), _x(g, d)], True),
    Loss("smooth_l1_loss-beta0", lambda L, F, r, x, y: F.smooth_l1_loss(x, y, reduction=r, beta=0.0),
         lambda g, d: [_x(g, d), _x(g, d)], False),
    Loss("huber_loss", lambda L, F, r, x, y: F.huber_loss(x, y, reduction=r, delta=0.8),
         lambda g, d: [_x(g, d, scale=2), _x(g, d)], True),
    Loss("huber_loss-weight", lambda L, F, r, x, y, w: F.huber_loss(x, y, reduction=r, delta=1.3, weight=w),
         lambda g, d: [_x(g, d, scale=2), _x(g, d), (g.random((N, C)).astype(d), True)], True),
    Loss("binary_cross_entropy", lambda L, F, r, x, t: F.binary_cross_entropy(
        x, t, weight=_t(L, W.astype(dname(x.dtype))), reduction=r),
        lambda g, d: [(g.uniform(0.05, 0.95, (N, C)).astype(d), True), (g.random((N, C)).astype(d), True)], True),
    Loss("binary_cross_entropy-clamped-log", lambda L, F, r, x, t: F.binary_cross_entropy(x, t, reduction=r),
         lambda g, d: [(np.array([[0.0, 1.0, 0.5, 1e-3]] * 2, dtype=d), False), _c(np.array([[0, 1, 1, 0]] * 2), d)],
         False),
    Loss("binary_cross_entropy_with_logits", lambda L, F, r, x, t: F.binary_cross_entropy_with_logits(
        x, t, weight=_t(L, W.astype(dname(x.dtype))), pos_weight=_t(L, W[::-1].astype(dname(x.dtype))),
        reduction=r),
        lambda g, d: [_x(g, d, scale=3), (g.random((N, C)).astype(d), True)], True),
    Loss("binary_cross_entropy_with_logits-plain", lambda L, F, r, x, t: F.binary_cross_entropy_with_logits(
        x, t, reduction=r), lambda g, d: [_x(g, d, scale=30), (g.random((N, C)).astype(d), True)], True),
    Loss("soft_margin_loss", lambda L, F, r, x: F.soft_margin_loss(x, _t(L, np.sign(W - 1.2).astype(dname(x.dtype))),
                                                                  reduction=r), lambda g, d: [_x(g, d)], True),
    Loss("multilabel_soft_margin_loss", lambda L, F, r, x, t: F.multilabel_soft_margin_loss(
        x, t, weight=_t(L, W.astype(dname(x.dtype))), reduction=r),
        lambda g, d: [_x(g, d), _c(np.random.default_rng(0).random((N, C)) > 0.5, d)], True),
    Loss("kl_div", lambda L, F, r, x, t: F.kl_div(x, t, reduction=r),
         lambda g, d: [_x(g, d), (g.random((N, C)).astype(d), True)], True),
    Loss("kl_div-log_target", lambda L, F, r, x, t: F.kl_div(x, t, reduction=r, log_target=True),
         lambda g, d: [_x(g, d), _x(g, d)], True),
    Loss("poisson_nll_loss-full", lambda L, F, r, x, t: F.poisson_nll_loss(x, t, full=True, reduction=r),
         lambda g, d: [_x(g, d), ((g.random((N, C)) * 4).astype(d), True)], True),
    Loss("poisson_nll_loss-rate", lambda L, F, r, x, t: F.poisson_nll_loss(x, t, log_input=False, reduction=r),
         lambda g, d: [(g.uniform(0.1, 3, (N, C)).astype(d), True), ((g.random((N, C)) * 4).astype(d), True)], True),
    Loss("gaussian_nll_loss", lambda L, F, r, x, t, v: F.gaussian_nll_loss(x, t, v, full=True, eps=0.05, reduction=r),
         lambda g, d: [_x(g, d), _x(g, d), (g.random((N, C)).astype(d), True)], True),
    Loss("gaussian_nll_loss-var-per-sample", lambda L, F, r, x, t, v: F.gaussian_nll_loss(x, t, v, reduction=r),
         lambda g, d: [_x(g, d), _x(g, d), (g.uniform(0.5, 2, (N,)).astype(d), True)], True),
    Loss("margin_ranking_loss", lambda L, F, r, a, b: F.margin_ranking_loss(
        a, b, _t(L, SIGNS.astype(dname(a.dtype))), margin=0.3, reduction=r),
        lambda g, d: [_x(g, d, (N,)), _x(g, d, (N,))], False),
    Loss("hinge_embedding_loss", lambda L, F, r, x: F.hinge_embedding_loss(
        x, _t(L, np.sign(np.arange(N * C).reshape(N, C) % 3 - 0.5).astype(dname(x.dtype))), margin=0.7,
        reduction=r), lambda g, d: [_x(g, d)], False),
    Loss("cosine_embedding_loss", lambda L, F, r, a, b: F.cosine_embedding_loss(
        a, b, _t(L, SIGNS.astype(dname(a.dtype))), margin=0.2, reduction=r),
        lambda g, d: [_x(g, d), _x(g, d)], True),
    Loss("triplet_margin_loss", lambda L, F, r, a, p, n: F.triplet_margin_loss(a, p, n, margin=1.5, p=1.5, swap=True,
                                                                              reduction=r),
         lambda g, d: [_x(g, d), _x(g, d), _x(g, d)], True),
    Loss("triplet_margin_with_distance_loss", lambda L, F, r, a, p, n: F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.5, reduction=r),
        lambda g, d: [_x(g, d), _x(g, d), _x(g, d)], True),
    Loss("multi_margin_loss-p2-weight", lambda L, F, r, x: F.multi_margin_loss(
        x, _t(L, T1), p=2, margin=0.8, weight=_t(L, W.astype(dname(x.dtype))), reduction=r),
        lambda g, d: [_x(g, d)], False),
    Loss("multi_margin_loss", lambda L, F, r, x: F.multi_margin_loss(x, _t(L, T1), reduction=r),
         lambda g, d: [_x(g, d)], False),
    Loss("multilabel_margin_loss", lambda L, F, r, x: F.multilabel_margin_loss(x, _t(L, TM), reduction=r),
         lambda g, d: [_x(g, d)], False),
]


def _run(loss, reduction, dtype):
    rng = _rng((loss.id, reduction, dtype))
    inputs = loss.make(rng, dtype)
    tt = [torch.tensor(a.copy()).requires_grad_(g) for a, g in inputs]
    et = [ember.tensor(a.copy()).requires_grad_(g) for a, g in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        to = loss.fn(torch, torch.nn.functional, reduction, *tt)
        eo = loss.fn(ember, ember.nn.functional, reduction, *et)
    assert tuple(to.shape) == tuple(eo.shape), (to.shape, eo.shape)
    assert dname(to.dtype) == dname(eo.dtype)
    assert to.requires_grad == eo.requires_grad
    close(eo, to, dtype, what="value")
    idx = [i for i, (_, g) in enumerate(inputs) if g]
    if not idx or not to.requires_grad:
        return
    go = rng.standard_normal(tuple(to.shape)).astype(dtype)
    tg = torch.autograd.grad(to, [tt[i] for i in idx], torch.tensor(go), create_graph=loss.gradgrad,
                             allow_unused=True)
    eg = ember.autograd.grad(eo, [et[i] for i in idx], ember.tensor(go), create_graph=loss.gradgrad,
                             allow_unused=True)
    for k, (a, b) in enumerate(zip(tg, eg)):
        a = torch.zeros_like(tt[idx[k]]) if a is None else a
        b = ember.zeros_like(et[idx[k]]) if b is None else b
        close(b, a, dtype, grad=True, what=f"grad of input {idx[k]}")
    if loss.gradgrad:
        pairs = [(a, b) for a, b in zip(tg, eg) if a is not None and a.requires_grad]
        if not pairs:
            return
        vs = [rng.standard_normal(tuple(a.shape)).astype(dtype) for a, _ in pairs]
        t_sum = sum((a * torch.tensor(v)).sum() for (a, _), v in zip(pairs, vs))
        e_sum = sum((b * ember.tensor(v)).sum() for (_, b), v in zip(pairs, vs))
        tgg = torch.autograd.grad(t_sum, [tt[i] for i in idx], allow_unused=True)
        egg = ember.autograd.grad(e_sum, [et[i] for i in idx], allow_unused=True) if e_sum.requires_grad \
            else [None] * len(idx)
        for k, (a, b) in enumerate(zip(tgg, egg)):
            a = torch.zeros_like(tt[idx[k]]) if a is None else a
            b = ember.zeros_like(et[idx[k]]) if b is None else b
            close(b, a, dtype, grad=True, what=f"second-order grad of input {idx[k]}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("loss", LOSSES, ids=lambda c: c.id)
def test_loss(loss, reduction, dtype):
    _run(loss, reduction, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kl_div_batchmean(dtype):
    _run(Loss("kl_div-batchmean", lambda L, F, r, x, t: F.kl_div(x, t, reduction="batchmean"),
              lambda g, d: [_x(g, d, (3, 4, 2)), (g.random((3, 4, 2)).astype(d), True)], True), "mean", dtype)


def test_cross_entropy_large_logits_are_stable():
    x = np.array([[1000.0, -1000.0, 0.0], [-500.0, 500.0, 499.0]], dtype=np.float32)
    _run(Loss("ce-large", lambda L, F, r, x: F.cross_entropy(x, _t(L, np.array([1, 2])), reduction=r),
              lambda g, d: [(x.astype(d), True)], True), "none", "float32")


def test_cross_entropy_half_input():
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float16)
    outs = [lib.nn.functional.cross_entropy(lib.tensor(x), lib.tensor([0, 2, 1, 1]), reduction="none")
            for lib in (torch, ember)]
    assert outs[1].dtype == ember.float16
    np.testing.assert_allclose(N_(outs[1]).astype(np.float32), N_(outs[0]).astype(np.float32), rtol=2e-3, atol=2e-3)


def test_cross_entropy_uses_one_fused_node():
    x = ember.randn(4, 3, requires_grad=True)
    loss = ember.nn.functional.cross_entropy(x, ember.tensor([0, 1, 2, 1]))
    assert loss.grad_fn.name() == "NllLossBackward0"
    assert loss.grad_fn.next_functions[0][0].name().endswith("AccumulateGrad")


# ---- ctc_loss -------------------------------------------------------------------------------

def _ctc_inputs(dtype, seed=0):
    rng = np.random.default_rng(seed)
    steps, n, classes = 12, 3, 5
    logits = rng.standard_normal((steps, n, classes))
    lp = (logits - np.log(np.exp(logits).sum(2, keepdims=True))).astype(dtype)
    targets = rng.integers(1, classes, (n, 4))
    targets[0, 2] = targets[0, 1]  # a repeated label needs a blank between
    return lp, targets, np.array([12, 9, 7]), np.array([4, 2, 3])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("layout", ["padded", "concatenated", "tuples", "unbatched"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss(dtype, reduction, layout, zero_infinity):
    lp, targets, in_len, tg_len = _ctc_inputs(dtype)
    if zero_infinity:
        in_len = np.array([12, 9, 2])  # the third sample cannot emit its 3 labels in 2 frames: infinite loss
    blank = 0
    if layout == "unbatched":
        lp, targets, in_len, tg_len = lp[:, 0], targets[0], in_len[0], tg_len[0]
    outs, grads = [], []
    rng = np.random.default_rng(1)
    go = None
    for lib in (torch, ember):
        x = lib.tensor(lp.copy(), requires_grad=True)
        if layout == "concatenated":
            t = lib.tensor(np.concatenate([targets[i, :tg_len[i]] for i in range(len(tg_len))]))
        else:
            t = lib.tensor(targets)
        if layout == "tuples":
            il, tl = tuple(int(v) for v in in_len), tuple(int(v) for v in tg_len)
        else:
            il, tl = lib.tensor(in_len), lib.tensor(tg_len)
        y = lib.nn.functional.ctc_loss(x, t, il, tl, blank=blank, reduction=reduction, zero_infinity=zero_infinity)
        if go is None:
            go = rng.standard_normal(tuple(y.shape)).astype(dtype)
        outs.append(y)
        grads.append(lib.autograd.grad(y, x, lib.tensor(go))[0])
    close(outs[1], outs[0], dtype, what="ctc value")
    close(grads[1], grads[0], dtype, grad=True, what="ctc grad")


def test_ctc_loss_module_and_errors():
    lp, targets, in_len, tg_len = _ctc_inputs("float32", seed=3)
    for lib in (torch, ember):
        m = lib.nn.CTCLoss(blank=4, reduction="sum", zero_infinity=True)
        assert repr(m) == "CTCLoss()"
    t_out = torch.nn.CTCLoss(blank=4)(torch.tensor(lp), torch.tensor(targets - 1), torch.tensor(in_len),
                                      torch.tensor(tg_len))
    e_out = ember.nn.CTCLoss(blank=4)(ember.tensor(lp), ember.tensor(targets - 1), ember.tensor(in_len),
                                      ember.tensor(tg_len))
    close(e_out, t_out, "float32")
    raises_like(lambda lib: lib.nn.functional.ctc_loss(lib.tensor(lp), lib.tensor(targets), lib.tensor(in_len),
                                                       lib.tensor(tg_len), blank=5))
    raises_like(lambda lib: lib.nn.functional.ctc_loss(lib.tensor(lp), lib.tensor(targets), lib.tensor(in_len + 1),
                                                       lib.tensor(tg_len)))
    raises_like(lambda lib: lib.nn.functional.ctc_loss(lib.tensor(lp), lib.tensor(targets[:, :2]),
                                                       lib.tensor(in_len), lib.tensor(tg_len)))
    # the CTC gradient is not differentiable again (torch: _ctc_loss_backward has no derivative)
    for lib in (torch, ember):
        x = lib.tensor(lp, requires_grad=True)
        y = lib.nn.functional.ctc_loss(x, lib.tensor(targets), lib.tensor(in_len), lib.tensor(tg_len))
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        with pytest.raises(RuntimeError):
            lib.autograd.grad(g.sum(), x)


# ---- loss modules ---------------------------------------------------------------------------

def _modules(lib):
    w = lib.tensor(W)
    return [
        (lib.nn.L1Loss(), 2), (lib.nn.MSELoss(reduction="sum"), 2), (lib.nn.SmoothL1Loss(beta=0.5), 2),
        (lib.nn.HuberLoss(delta=0.5, reduction="none"), 2), (lib.nn.SoftMarginLoss(), "sign"),
        (lib.nn.CrossEntropyLoss(weight=w, ignore_index=2, label_smoothing=0.1), "class"),
        (lib.nn.NLLLoss(weight=w, reduction="sum"), "class"), (lib.nn.BCELoss(weight=w), "prob"),
        (lib.nn.BCEWithLogitsLoss(pos_weight=w), "unit"), (lib.nn.KLDivLoss(reduction="batchmean"), "unit"),
        (lib.nn.PoissonNLLLoss(full=True), "unit"), (lib.nn.GaussianNLLLoss(eps=1e-3), "var"),
        (lib.nn.MultiLabelSoftMarginLoss(weight=w), "unit"), (lib.nn.MultiMarginLoss(p=2, weight=w), "class"),
        (lib.nn.MultiLabelMarginLoss(), "multilabel"), (lib.nn.HingeEmbeddingLoss(margin=0.5), "sign"),
        (lib.nn.CosineEmbeddingLoss(margin=0.1), "pair"), (lib.nn.MarginRankingLoss(margin=0.2), "rank"),
        (lib.nn.TripletMarginLoss(margin=0.5, swap=True), "triplet"), (lib.nn.TripletMarginWithDistanceLoss(), "triplet"),
    ]


def test_loss_modules_match_torch():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((N, C))
    y = rng.standard_normal((N, C))
    z = rng.standard_normal((N, C))
    unit = rng.random((N, C))
    for (tm, kind), (em, _) in zip(_modules(torch), _modules(ember)):
        assert repr(em) == repr(tm)
        assert list(em.state_dict()) == list(tm.state_dict()), repr(tm)

        def call(lib, m, x):
            T = lib.tensor
            if kind == 2:
                return m(x, T(y))
            if kind == "sign":
                return m(x, T(np.sign(y)))
            if kind == "class":
                return m(x, T(T1))
            if kind == "prob":
                return m(lib.sigmoid(x), T(unit))
            if kind == "unit":
                return m(x, T(unit))
            if kind == "var":
                return m(x, T(y), T(unit + 0.1))
            if kind == "multilabel":
                return m(x, T(TM))
            if kind == "pair":
                return m(x, T(y), T(SIGNS))
            if kind == "rank":
                return m(x[:, 0], T(y[:, 0]), T(SIGNS))
            return m(x, T(y), T(z))

        tx = torch.tensor(x, requires_grad=True)
        ex = ember.tensor(x, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            to, eo = call(torch, tm, tx), call(ember, em, ex)
        close(eo, to, "float64", what=repr(tm))
        go = np.ones(tuple(to.shape))
        close(ember.autograd.grad(eo, ex, ember.tensor(go))[0], torch.autograd.grad(to, tx, torch.tensor(go))[0],
              "float64", grad=True, what=repr(tm))


def test_loss_module_weight_is_a_buffer():
    for lib in (torch, ember):
        m = lib.nn.CrossEntropyLoss(weight=lib.ones(3))
        assert list(m.state_dict()) == ["weight"]
        assert list(dict(m.named_buffers())) == ["weight"]
        m2 = lib.nn.BCEWithLogitsLoss(weight=lib.ones(3), pos_weight=lib.ones(3))
        assert list(m2.state_dict()) == ["weight", "pos_weight"]
        assert lib.nn.CrossEntropyLoss().weight is None


def test_legacy_size_average_and_reduce():
    x = np.random.default_rng(2).standard_normal((3, 4))
    for kwargs, expected in ((dict(size_average=False), "sum"), (dict(reduce=False), "none"),
                             (dict(size_average=True, reduce=True), "mean")):
        for lib in (torch, ember):
            with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
                m = lib.nn.MSELoss(**kwargs)
            assert m.reduction == expected
            with pytest.warns(UserWarning):
                lib.nn.functional.l1_loss(lib.tensor(x), lib.tensor(x), **kwargs)


# ---- errors ---------------------------------------------------------------------------------

def raises_like(fn):
    types = []
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                fn(lib)
        types.append(info.type)
    assert types[0] is types[1], types


ERRORS = {
    "ce-float-target-wrong-shape": lambda L: L.nn.functional.cross_entropy(L.randn(4, 3), L.tensor([0., 1, 2, 1])),
    "ce-int32-target": lambda L: L.nn.functional.cross_entropy(L.randn(4, 3), L.tensor([0, 1, 2, 1], dtype=L.int32)),
    "ce-batch-mismatch": lambda L: L.nn.functional.cross_entropy(L.randn(4, 3), L.tensor([0, 1, 2])),
    "ce-target-out-of-bounds": lambda L: L.nn.functional.cross_entropy(L.randn(4, 3), L.tensor([0, 1, 3, 1])),
    "ce-negative-target": lambda L: L.nn.functional.cross_entropy(L.randn(4, 3), L.tensor([0, 1, -1, 1])),
    "ce-int-probs": lambda L: L.nn.functional.cross_entropy(L.randn(4, 3), L.ones(4, 3, dtype=L.int64)),
    "ce-probs-ignore-index": lambda L: L.nn.functional.cross_entropy(L.randn(4, 3), L.rand(4, 3), ignore_index=1),
    "ce-weight-size": lambda L: L.nn.functional.cross_entropy(L.randn(4, 3), L.tensor([0, 1, 2, 1]),
                                                              weight=L.ones(2)),
    "ce-weight-dtype": lambda L: L.nn.functional.cross_entropy(L.randn(4, 3), L.tensor([0, 1, 2, 1]),
                                                               weight=L.ones(3, dtype=L.float64)),
    "ce-smoothing-range": lambda L: L.nn.functional.cross_entropy(L.randn(4, 3), L.tensor([0, 1, 2, 1]),
                                                                  label_smoothing=1.5),
    "ce-bad-reduction": lambda L: L.nn.functional.cross_entropy(L.randn(4, 3), L.tensor([0, 1, 2, 1]),
                                                                reduction="avg"),
    "ce-Kdim-target-shape": lambda L: L.nn.functional.cross_entropy(L.randn(2, 3, 4), L.zeros(2, 5, dtype=L.int64)),
    "ce-multi-target": lambda L: L.nn.functional.nll_loss(L.randn(4, 3), L.zeros(4, 2, dtype=L.int64)),
    "ce-int-input": lambda L: L.nn.functional.cross_entropy(L.ones(4, 3, dtype=L.int64), L.tensor([0, 1, 2, 1])),
    "nll-0d-input": lambda L: L.nn.functional.nll_loss(L.tensor(1.0), L.tensor(0)),
    "nll-float-target": lambda L: L.nn.functional.nll_loss(L.randn(4, 3), L.tensor([0., 1, 2, 1])),
    "mse-not-broadcastable": lambda L: L.nn.functional.mse_loss(L.randn(4, 3), L.randn(5, 1)),
    "mse-weight-size": lambda L: L.nn.functional.mse_loss(L.randn(4, 3), L.randn(4, 3), weight=L.ones(3)),
    "bce-size": lambda L: L.nn.functional.binary_cross_entropy(L.rand(4), L.rand(3)),
    "bce-range": lambda L: L.nn.functional.binary_cross_entropy(L.rand(4) + 1.5, L.rand(4)),
    "bce-dtype": lambda L: L.nn.functional.binary_cross_entropy(L.rand(4), L.rand(4, dtype=L.float64)),
    "bcel-size": lambda L: L.nn.functional.binary_cross_entropy_with_logits(L.rand(4, 3), L.rand(4, 2)),
    "smooth-l1-negative-beta": lambda L: L.nn.functional.smooth_l1_loss(L.rand(3), L.rand(3), beta=-1.0),
    "huber-delta": lambda L: L.nn.functional.huber_loss(L.rand(3), L.rand(3), delta=0.0),
    "huber-module-delta-type": lambda L: L.nn.HuberLoss(delta="1"),
    "poisson-reduction": lambda L: L.nn.functional.poisson_nll_loss(L.rand(3), L.rand(3), reduction="x"),
    "gaussian-var-size": lambda L: L.nn.functional.gaussian_nll_loss(L.rand(4, 3), L.rand(4, 3), L.ones(4, 2)),
    "gaussian-negative-var": lambda L: L.nn.functional.gaussian_nll_loss(L.rand(4, 3), L.rand(4, 3), -L.ones(4, 1)),
    "margin-ranking-dims": lambda L: L.nn.functional.margin_ranking_loss(L.rand(4, 3), L.rand(4, 3), L.ones(4)),
    "cosine-embedding-2d-target": lambda L: L.nn.functional.cosine_embedding_loss(L.rand(4, 3), L.rand(4, 3),
                                                                                  L.ones(1, 4)),
    "triplet-dims": lambda L: L.nn.functional.triplet_margin_loss(L.rand(4, 3), L.rand(4, 3), L.rand(3)),
    "triplet-margin": lambda L: L.nn.functional.triplet_margin_loss(L.rand(4, 3), L.rand(4, 3), L.rand(4, 3),
                                                                    margin=0),
    "triplet-module-margin": lambda L: L.nn.TripletMarginLoss(margin=-1),
    "multi-margin-p": lambda L: L.nn.functional.multi_margin_loss(L.rand(4, 3), L.tensor([0, 1, 2, 1]), p=3),
    "multi-margin-target": lambda L: L.nn.functional.multi_margin_loss(L.rand(4, 3), L.tensor([0, 1, 5, 1])),
    "multi-margin-target-size": lambda L: L.nn.functional.multi_margin_loss(L.rand(4, 3), L.tensor([0, 1, 2])),
    "multi-margin-3d": lambda L: L.nn.functional.multi_margin_loss(L.rand(2, 3, 4), L.tensor([0, 1])),
    "multi-margin-float-target": lambda L: L.nn.functional.multi_margin_loss(L.rand(4, 3),
                                                                             L.tensor([0., 1, 2, 1])),
    "multilabel-margin-size": lambda L: L.nn.functional.multilabel_margin_loss(L.rand(4, 3),
                                                                               L.zeros(3, 3, dtype=L.int64)),
    "multilabel-margin-range": lambda L: L.nn.functional.multilabel_margin_loss(
        L.rand(2, 3), L.tensor([[0, 5, -1], [1, -1, 0]])),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_loss_errors(name):
    raises_like(ERRORS[name])


def test_torch_level_loss_functions():
    """torch.kl_div, torch.ctc_loss, ... take the reduction as an enum and default to none."""
    rng = np.random.default_rng(11)
    x, t = rng.standard_normal((4, 3)), rng.random((4, 3))
    s = np.sign(x[:, 0])
    lp = np.log(rng.dirichlet(np.ones(4), (5, 2)))
    calls = [("binary_cross_entropy_with_logits", lambda L: (L.tensor(x), L.tensor(t))),
             ("binary_cross_entropy_with_logits", lambda L: (L.tensor(x), L.tensor(t), None, L.tensor(t[0]), 2)),
             ("kl_div", lambda L: (L.tensor(x), L.tensor(t))), ("kl_div", lambda L: (L.tensor(x), L.tensor(t), 1)),
             ("hinge_embedding_loss", lambda L: (L.tensor(x), L.tensor(np.sign(x)), 0.5)),
             ("margin_ranking_loss", lambda L: (L.tensor(x[:, 0]), L.tensor(x[:, 1]), L.tensor(s), 0.2, 2)),
             ("cosine_embedding_loss", lambda L: (L.tensor(x), L.tensor(t), L.tensor(s), 0.1)),
             ("poisson_nll_loss", lambda L: (L.tensor(x), L.tensor(t), True, True, 1e-8, 1)),
             ("triplet_margin_loss", lambda L: (L.tensor(x), L.tensor(t), L.tensor(x * t))),
             ("ctc_loss", lambda L: (L.tensor(lp), L.tensor([[1, 2], [1, 1]]), [5, 5], [2, 2]))]
    for name, args in calls:
        a, b = getattr(torch, name)(*args(torch)), getattr(ember, name)(*args(ember))
        assert tuple(a.shape) == tuple(b.shape), name
        close(b, a, "float64", what=name)


@pytest.mark.parametrize("target", [[0, 3], [1, 4], [-1, 0], [2, -1]])
def test_target_out_of_bounds_message(target):
    """A class index outside [0, C) (C itself included) is torch's IndexError naming it, for nll and cross entropy."""
    for name in ["nll_loss", "cross_entropy"]:
        msgs = []
        for lib in (torch, ember):
            with pytest.raises(IndexError) as err:
                getattr(lib.nn.functional, name)(lib.zeros(2, 3), lib.tensor(target))
            msgs.append(str(err.value))
        assert msgs[1] == msgs[0], name
