"""The sequence/dense fast paths of issue 15 against torch: the LSTM cell's tanh gate computed from
the gate block's sigmoid (Note [LSTM tanh gate] in ember/_ops/rnn.py) over the whole range of
pre-activations, and Tensor.__add__'s short path and a dense leaf's AccumulateGrad."""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember._ops.rnn import _lstm_cell

torch.set_num_threads(1)

TOL = {torch.float32: dict(rtol=2e-4, atol=2e-5), torch.float64: dict(rtol=1e-9, atol=1e-11)}


def N(t):
    return t.detach().numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_cell_tanh_gate_over_its_range(dtype):
    """The g gate equals tanh of its pre-activation to within a few ulp of 1 (torch's and NumPy's
    tanh agree), at +-inf and NaN exactly, from tiny to saturating values."""
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-40, 40, 2001), rng.standard_normal(500) * 1e-3,
                        rng.standard_normal(500) * 3, [0.0, -0.0, 1e-30, -1e-8, np.inf, -np.inf, np.nan, 1e30,
                                                       -1e30]]).astype(dtype)
    n = x.size
    gates = rng.standard_normal((1, 4 * n)).astype(dtype)
    gates[0, 2 * n:3 * n] = x
    c = rng.standard_normal((1, n)).astype(dtype)
    c_new, tanh_c, h = (np.empty_like(c) for _ in range(3))
    pre = gates.copy()
    with np.errstate(all="ignore"):
        _lstm_cell(gates, c, c_new, tanh_c, h)
    ref = torch.tanh(torch.from_numpy(x)).numpy()
    g = gates[0, 2 * n:3 * n]
    assert np.array_equal(np.isnan(g), np.isnan(ref))
    np.testing.assert_allclose(g, ref, rtol=0, atol=2.5e-7 if dtype == np.float32 else 5e-16, equal_nan=True)
    finite = np.isfinite(x)
    np.testing.assert_array_equal(g[~finite & ~np.isnan(x)], np.sign(x[~finite & ~np.isnan(x)]))
    # the other gates are the sigmoid of theirs, and the states follow from them
    sig = torch.sigmoid(torch.from_numpy(pre)).numpy()
    for k in (0, 1, 3):
        np.testing.assert_allclose(gates[0, k * n:(k + 1) * n], sig[0, k * n:(k + 1) * n], rtol=1e-6, atol=0)
    i, f, o = gates[:, :n], gates[:, n:2 * n], gates[:, 3 * n:]
    np.testing.assert_array_equal(np.isnan(c_new), np.isnan(f * c + i * g))
    np.testing.assert_allclose(h, o * np.tanh(c_new), rtol=1e-6, atol=0, equal_nan=True)


@pytest.mark.parametrize("tdtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("scale", [1e-4, 1.0, 30.0])
@pytest.mark.parametrize("layout", ["batch_first_bi", "step_cell"])
def test_lstm_with_small_and_saturating_gates(tdtype, scale, layout):
    """nn.LSTM (whole-sequence op, both directions) and nn.LSTMCell (the per-step op) against torch
    with inputs scaled so the g gate sits near 0 or deep in saturation: outputs and every gradient."""
    rng = np.random.default_rng(int(scale * 7) + (tdtype is torch.float64))
    T, B, I, H = 5, 3, 4, 6
    torch.manual_seed(0)
    if layout == "batch_first_bi":
        tm = torch.nn.LSTM(I, H, batch_first=True, bidirectional=True).to(tdtype)
        em = ember.nn.LSTM(I, H, batch_first=True, bidirectional=True).to(getattr(ember, str(tdtype)[6:]))
        shape = (B, T, I)
    else:
        tm = torch.nn.LSTMCell(I, H).to(tdtype)
        em = ember.nn.LSTMCell(I, H).to(getattr(ember, str(tdtype)[6:]))
        shape = (B, I)
    with torch.no_grad():
        for p in tm.parameters():
            p.mul_(scale)
    em.load_state_dict(OrderedDict((k, ember.tensor(N(v).copy())) for k, v in tm.state_dict().items()))
    x_np = rng.standard_normal(shape)
    w_np = rng.standard_normal((B, T, 2 * H) if layout == "batch_first_bi" else (B, H))
    outs = []
    for lib, m, d in ((torch, tm, tdtype), (ember, em, getattr(ember, str(tdtype)[6:]))):
        x = lib.tensor(x_np, dtype=d, requires_grad=True)
        y = m(x)[0]  # LSTM: the output; LSTMCell: h
        (y * lib.tensor(w_np, dtype=d)).sum().backward()
        outs.append((y, x.grad, [p.grad for p in m.parameters()]))
    (ty, tgx, tgp), (ey, egx, egp) = outs
    np.testing.assert_allclose(N(ey), N(ty), **TOL[tdtype])
    np.testing.assert_allclose(N(egx), N(tgx), **TOL[tdtype])
    for a, b in zip(egp, tgp):
        np.testing.assert_allclose(N(a), N(b), **TOL[tdtype])


def test_lstm_double_backward_with_saturating_gates():
    """create_graph through the whole-sequence op (its backward recomputes with ember's own tanh)."""
    rng = np.random.default_rng(3)
    torch.manual_seed(1)
    tm = torch.nn.LSTM(3, 4).double()
    em = ember.nn.LSTM(3, 4).double()
    with torch.no_grad():
        for p in tm.parameters():
            p.mul_(5.0)
    em.load_state_dict(OrderedDict((k, ember.tensor(N(v).copy())) for k, v in tm.state_dict().items()))
    x_np = rng.standard_normal((4, 2, 3))
    res = []
    for lib, m in ((torch, tm), (ember, em)):
        x = lib.tensor(x_np, requires_grad=True)
        y, _ = m(x)
        (gx,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        (ggx,) = lib.autograd.grad(gx.pow(2).sum(), x)
        res.append((N(gx), N(ggx)))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-8, atol=1e-10)


def test_add_dunder_forms_match_torch():
    """x + y, y + x, scalars on either side, add's alpha through __add__, and the graph they record."""
    for lib in (torch, ember):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = lib.tensor([0.5, 0.25, -1.0])
        outs = [x + y, y + x, x + 2, 2 + x, x.__add__(y, alpha=3), x + lib.tensor(1, dtype=lib.int64)]
        sum(o.sum() for o in outs).backward()
        if lib is torch:
            ref = [N(o) for o in outs], N(x.grad), [o.grad_fn.name() for o in outs], [o.dtype for o in outs]
        else:
            got = [N(o) for o in outs], N(x.grad), [o.grad_fn.name() for o in outs], [o.dtype for o in outs]
    for a, b in zip(got[0], ref[0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got[1], ref[1])
    assert got[2] == ref[2]
    assert [str(d) for d in got[3]] == [str(d) for d in ref[3]]
    with pytest.raises(TypeError):
        ember.ones(2, requires_grad=True) + "a"


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize("leaf", ["tensor", "parameter", "sparse"])
def test_leaf_accumulate_grad_node(leaf):
    """A leaf's AccumulateGrad node (made anew for each graph; a dense Tensor takes its array's shape,
    other leaves .shape) is reached once from the graph and accumulates the leaf's gradient with its
    shape and dtype, twice over, for a dense tensor, a Parameter and a sparse leaf."""
    res = []
    for lib in (torch, ember):
        if leaf == "sparse":
            x = lib.sparse_coo_tensor([[0, 2], [1, 0]], [1.5, -2.0], (3, 2)).requires_grad_(True)
            y = (lib.sparse.mm(x, lib.ones(2, 4)) * 2).sum()
        else:
            x = lib.arange(6.0).reshape(2, 3)
            x = lib.nn.Parameter(x) if leaf == "parameter" else x.requires_grad_(True)
            y = (x * x + 1).sum()
        todo, found = [y.grad_fn], []
        while todo:
            node = todo.pop()
            if node.name().endswith("AccumulateGrad"):
                found.append(node)
            todo += [f for f, _ in node.next_functions if f is not None]
        assert len({id(f) for f in found}) == 1
        assert leaf == "sparse" or found[0].variable is x  # torch's sparse leaf node holds a values tensor
        y.backward()
        g = x.grad.to_dense() if leaf == "sparse" else x.grad
        res.append((N(g), tuple(x.grad.shape), str(x.grad.dtype)[6:]))
        y2 = (x * 3).sum() if leaf != "sparse" else (lib.sparse.mm(x, lib.ones(2, 4))).sum()
        y2.backward()  # a second graph: a new node, accumulating into the same .grad
        res.append(N(x.grad.to_dense() if leaf == "sparse" else x.grad))
    np.testing.assert_array_equal(res[2][0], res[0][0])
    assert res[2][1:] == res[0][1:]
    np.testing.assert_array_equal(res[3], res[1])
