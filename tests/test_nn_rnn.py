"""nn.RNN / LSTM / GRU, the cells and nn.utils.rnn against torch with the same weights.

torch's state_dict is copied into the ember module through NumPy; outputs, final states and the
gradients w.r.t. the input, the initial states and every parameter must agree, for every
combination of layers, directions, batch_first and packed/padded input, in float32 and float64.
"""
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from torch.nn.utils import rnn as trnn
from ember.nn.utils import rnn as ernn

from ._stories import check_story

torch.set_num_threads(1)  # the oracle's thread pool only adds contention on a shared 2-core machine

TOL = {torch.float32: dict(rtol=2e-4, atol=2e-5), torch.float64: dict(rtol=1e-9, atol=1e-11)}
EDTYPE = {torch.float32: ember.float32, torch.float64: ember.float64}


def E(t, requires_grad=None):
    """An ember tensor with the values (and requires_grad) of torch tensor t."""
    rg = t.requires_grad if requires_grad is None else requires_grad
    return ember.tensor(t.detach().numpy().copy(), requires_grad=rg)


def N(t):
    return t.detach().numpy()


def close(a, b, dtype=torch.float64, what=""):
    np.testing.assert_allclose(N(b), N(a), err_msg=what, **TOL[dtype])


def copy_weights(tmod, emod):
    emod.load_state_dict(OrderedDict((k, E(v)) for k, v in tmod.state_dict().items()))


def raises_like(fn):
    """fn(lib) raises the same exception type with the same message in torch and ember."""
    out = []
    for lib in (torch, ember):
        with pytest.raises(Exception) as info:
            fn(lib)
        out.append(info)
    assert out[0].type is out[1].type, (out[0].value, out[1].value)
    assert str(out[0].value) == str(out[1].value).replace("ember.", "torch."), (out[0].value, out[1].value)


MODES = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("GRU", {}), ("LSTM", {}), ("LSTM", {"proj_size": 3})]
MODE_IDS = ["rnn_tanh", "rnn_relu", "gru", "lstm", "lstm_proj"]


def _pair(cls, kwargs, dtype, **more):
    """The same module in torch and ember (ember gets torch's weights)."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(4, 5, **kwargs, **more).to(dtype)
    em = getattr(ember.nn, cls)(4, 5, **kwargs, **more).to(EDTYPE[dtype])
    copy_weights(tm, em)
    return tm, em


def _states(cls, kwargs, layers, dirs, batch, dtype, gen):
    """Random initial states (h0 or (h0, c0)) as torch leaves."""
    hsize = kwargs.get("proj_size", 5)
    h0 = torch.randn(layers * dirs, batch, hsize, generator=gen, dtype=dtype, requires_grad=True)
    if cls != "LSTM":
        return h0, [h0]
    c0 = torch.randn(layers * dirs, batch, 5, generator=gen, dtype=dtype, requires_grad=True)
    return (h0, c0), [h0, c0]


def _run_both(tm, em, tx, ex, ths, ehs):
    """Forward in both libraries; returns ([torch outputs], [ember outputs]) as tensors."""
    to, th = tm(tx, ths)
    eo, eh = em(ex, ehs)
    tl = [to.data if isinstance(to, trnn.PackedSequence) else to]
    el = [eo.data if isinstance(eo, ernn.PackedSequence) else eo]
    tl += list(th) if isinstance(th, tuple) else [th]
    el += list(eh) if isinstance(eh, tuple) else [eh]
    return tl, el


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["tf", "bf"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_layer_matches_torch(mode, layers, bidirectional, batch_first, packed, dtype):
    cls, kwargs = mode
    tm, em = _pair(cls, kwargs, dtype, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
    gen = torch.Generator().manual_seed(1)
    steps, batch = 5, 3
    shape = (batch, steps, 4) if batch_first else (steps, batch, 4)
    x = torch.randn(*shape, generator=gen, dtype=dtype, requires_grad=True)
    ths, tleaves = _states(cls, kwargs, layers, 2 if bidirectional else 1, batch, dtype, gen)
    eleaves = [E(t) for t in tleaves]
    ehs = tuple(eleaves) if cls == "LSTM" else eleaves[0]
    ex = E(x)
    if packed:
        lengths = [3, 5, 2]  # unsorted: exercises sorted_indices on the states and outputs
        tin = trnn.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=False)
        ein = ernn.pack_padded_sequence(ex, lengths, batch_first=batch_first, enforce_sorted=False)
    else:
        tin, ein = x, ex
    touts, eouts = _run_both(tm, em, tin, ein, ths, ehs)
    for i, (a, b) in enumerate(zip(touts, eouts)):
        assert tuple(a.shape) == tuple(b.shape)
        assert b.dtype == EDTYPE[dtype]
        close(a, b, dtype, f"output {i}")
    upstream = [torch.randn(a.shape, generator=gen, dtype=dtype) for a in touts]
    tparams = list(tm.parameters())
    eparams = list(em.parameters())
    tg = torch.autograd.grad(touts, [x] + tleaves + tparams, upstream)
    eg = ember.autograd.grad(eouts, [ex] + eleaves + eparams, [E(u) for u in upstream])
    names = ["input"] + [f"state{i}" for i in range(len(tleaves))] + [n for n, _ in tm.named_parameters()]
    for name, a, b in zip(names, tg, eg):
        close(a, b, dtype, f"grad of {name}")


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_layer_without_bias(mode, packed):
    cls, kwargs = mode
    dtype = torch.float64
    tm, em = _pair(cls, kwargs, dtype, num_layers=2, bidirectional=True, bias=False)
    assert list(em.state_dict()) == list(tm.state_dict())
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(4, 3, 4, generator=gen, dtype=dtype, requires_grad=True)
    ex = E(x)
    tin, ein = x, ex
    if packed:
        tin = trnn.pack_padded_sequence(x, [4, 2, 3], enforce_sorted=False)
        ein = ernn.pack_padded_sequence(ex, [4, 2, 3], enforce_sorted=False)
    touts, eouts = _run_both(tm, em, tin, ein, None, None)
    for a, b in zip(touts, eouts):
        close(a, b, dtype)
    ups = [torch.randn(a.shape, generator=gen, dtype=dtype) for a in touts]
    tg = torch.autograd.grad(touts, [x] + list(tm.parameters()), ups)
    eg = ember.autograd.grad(eouts, [ex] + list(em.parameters()), [E(u) for u in ups])
    for a, b in zip(tg, eg):
        close(a, b, dtype)


def test_functional_layer_ops():
    """torch.lstm / torch.gru with both overloads (padded with batch_first, packed data + batch_sizes)."""
    torch.manual_seed(0)
    for cls in ("LSTM", "GRU"):
        tm, em = _pair(cls, {}, torch.float64, num_layers=2)
        x = torch.randn(3, 5, 4, dtype=torch.float64)
        h = torch.zeros(2, 3, 5, dtype=torch.float64)
        ths = (h, h) if cls == "LSTM" else h
        ehs = (E(h), E(h)) if cls == "LSTM" else E(h)
        tw, ew = list(tm.parameters()), list(em.parameters())
        fn_t, fn_e = getattr(torch, cls.lower()), getattr(ember, cls.lower())
        t = fn_t(x, ths, tw, True, 2, 0.0, False, False, True)
        e = fn_e(E(x), ehs, ew, True, 2, 0.0, False, False, True)
        assert len(t) == len(e)
        for a, b in zip(t, e):
            close(a, b)
        tp = trnn.pack_padded_sequence(x, [5, 3, 2], batch_first=True)
        t = fn_t(tp.data, tp.batch_sizes, ths, tw, True, 2, 0.0, False, False)
        e = fn_e(E(tp.data), ember.tensor(tp.batch_sizes.numpy()), ehs, ew, True, 2, 0.0, False, False)
        for a, b in zip(t, e):
            close(a, b)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_state_dict_layout_and_init(mode):
    cls, kwargs = mode
    tm = getattr(torch.nn, cls)(3, 8, num_layers=2, bidirectional=True, **kwargs)
    em = getattr(ember.nn, cls)(3, 8, num_layers=2, bidirectional=True, **kwargs)
    tsd, esd = tm.state_dict(), em.state_dict()
    assert list(tsd) == list(esd)
    for k in tsd:
        assert tuple(tsd[k].shape) == tuple(esd[k].shape), k
    bound = 1 / np.sqrt(8)
    values = np.concatenate([p.detach().numpy().ravel() for p in em.parameters()])
    assert np.all(np.abs(values) <= bound) and values.std() > bound / 3  # U(-1/sqrt(H), 1/sqrt(H))
    assert repr(em) == repr(tm)
    assert [[tuple(w.shape) for w in ws] for ws in em.all_weights] == \
        [[tuple(w.shape) for w in ws] for ws in tm.all_weights]
    assert em._flat_weights_names == tm._flat_weights_names
    em.flatten_parameters()


@pytest.mark.parametrize("kwargs", [dict(num_layers=3, bias=False, batch_first=True, dropout=0.5, bidirectional=True),
                                    dict(proj_size=2, num_layers=2), dict(bias=False)])
def test_repr_matches_torch(kwargs):
    for cls in ("LSTM", "GRU", "RNN"):
        if cls != "LSTM" and "proj_size" in kwargs:
            continue
        assert repr(getattr(ember.nn, cls)(4, 6, **kwargs)) == repr(getattr(torch.nn, cls)(4, 6, **kwargs))
    assert repr(ember.nn.RNN(4, 6, 1, "relu")) == repr(torch.nn.RNN(4, 6, 1, "relu"))
    assert repr(ember.nn.RNNCell(4, 6, nonlinearity="relu", bias=False)) == \
        repr(torch.nn.RNNCell(4, 6, nonlinearity="relu", bias=False))
    assert repr(ember.nn.LSTMCell(4, 6)) == repr(torch.nn.LSTMCell(4, 6))


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("with_state", [False, True])
def test_unbatched_input(mode, batch_first, with_state):
    cls, kwargs = mode
    tm, em = _pair(cls, kwargs, torch.float64, num_layers=2, bidirectional=True, batch_first=batch_first)
    x = torch.randn(6, 4, dtype=torch.float64)
    ths = ehs = None
    if with_state:
        hsize = kwargs.get("proj_size", 5)
        h = torch.randn(4, hsize, dtype=torch.float64)
        ths = (h, torch.randn(4, 5, dtype=torch.float64)) if cls == "LSTM" else h
        ehs = tuple(E(t) for t in ths) if cls == "LSTM" else E(ths)
    touts, eouts = _run_both(tm, em, x, E(x), ths, ehs)
    for a, b in zip(touts, eouts):
        assert tuple(a.shape) == tuple(b.shape)
        close(a, b)


def test_zero_batch_and_default_states():
    tm, em = _pair("LSTM", {}, torch.float32, num_layers=2)
    x = torch.randn(4, 0, 4)
    to, (th, tc) = tm(x)
    eo, (eh, ec) = em(E(x))
    assert tuple(eo.shape) == tuple(to.shape) and tuple(eh.shape) == tuple(th.shape) == tuple(ec.shape)


def test_dropout_between_layers():
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.LSTM(4, 5, num_layers=3, dropout=0.5)
        em = ember.nn.LSTM(4, 5, num_layers=3, dropout=0.5)
    copy_weights(tm, em)
    x = torch.randn(7, 2, 4)
    tm.eval()
    em.eval()
    close(tm(x)[0], em(E(x))[0], torch.float32)  # eval: no dropout, same as torch
    em.train()
    ember.manual_seed(0)
    a = em(E(x))[0]
    b = em(E(x))[0]
    assert not np.allclose(N(a), N(b))  # train: different masks between layers
    em.eval()
    assert np.allclose(N(em(E(x))[0]), N(em(E(x))[0]))


def test_dropout_warning_and_argument_errors():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
            lib.nn.GRU(3, 4, dropout=0.2)
    raises_like(lambda lib: lib.nn.LSTM(3, 4, dropout=1.5))
    raises_like(lambda lib: lib.nn.LSTM(3, 4, proj_size=4))
    raises_like(lambda lib: lib.nn.LSTM(3, 4, proj_size=-1))
    raises_like(lambda lib: lib.nn.GRU(3, 4, proj_size=2))
    raises_like(lambda lib: lib.nn.RNN(3, 4, nonlinearity="gelu"))
    raises_like(lambda lib: lib.nn.RNN(3, 0))
    raises_like(lambda lib: lib.nn.RNN(3.0, 4))
    raises_like(lambda lib: lib.nn.RNN(3, 4, bias=1))
    raises_like(lambda lib: lib.nn.LSTM(3, 4, num_layers=0))


def test_forward_errors_match_torch():
    def lstm(lib):
        lib.manual_seed(0)
        return lib.nn.LSTM(4, 5, 2)

    raises_like(lambda lib: lstm(lib)(lib.randn(3, 2, 3)))
    raises_like(lambda lib: lstm(lib)(lib.randn(3, 2, 4, dtype=lib.float64)))
    raises_like(lambda lib: lstm(lib)(lib.randn(3, 2, 4), (lib.randn(2, 3, 5), lib.randn(2, 2, 5))))
    raises_like(lambda lib: lstm(lib)(lib.randn(3, 2, 4), (lib.randn(2, 2, 5), lib.randn(2, 2, 6))))
    raises_like(lambda lib: lstm(lib)(lib.randn(3, 2, 4), (lib.randn(2, 5), lib.randn(2, 2, 5))))
    raises_like(lambda lib: lstm(lib)(lib.randn(3, 4), (lib.randn(2, 1, 5), lib.randn(2, 1, 5))))
    raises_like(lambda lib: lstm(lib)(lib.randn(3, 2, 4, 1)))
    raises_like(lambda lib: lstm(lib)(lib.randn(0, 2, 4)))
    raises_like(lambda lib: lib.nn.GRU(4, 5)(lib.randn(3, 2, 4), lib.randn(1, 3, 5)))
    raises_like(lambda lib: lib.nn.GRU(4, 5)(lib.randn(3, 2, 4), lib.randn(3, 5)))
    raises_like(lambda lib: lib.nn.GRU(4, 5)(lib.randn(3, 4), lib.randn(1, 1, 5)))
    raises_like(lambda lib: lib.nn.RNN(4, 5)(lib.randn(3)))
    raises_like(lambda lib: lib.nn.RNN(4, 5)(lib.randn(3, 2, 4), lib.randn(2, 2, 5)))


# ---- cells ------------------------------------------------------------------------------------

CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {}),
         ("GRUCell", {"bias": False}), ("LSTMCell", {"bias": False})]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("cell", CELLS, ids=["rnn_tanh", "rnn_relu", "lstm", "gru", "gru_nobias", "lstm_nobias"])
def test_cell_matches_torch(cell, batched, dtype):
    cls, kwargs = cell
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(4, 6, **kwargs).to(dtype)
    em = getattr(ember.nn, cls)(4, 6, **kwargs).to(EDTYPE[dtype])
    copy_weights(tm, em)
    assert list(em.state_dict()) == list(tm.state_dict())
    lead = (3,) if batched else ()
    x = torch.randn(*lead, 4, dtype=dtype, requires_grad=True)
    h = torch.randn(*lead, 6, dtype=dtype, requires_grad=True)
    leaves = [x, h]
    if cls == "LSTMCell":
        c = torch.randn(*lead, 6, dtype=dtype, requires_grad=True)
        leaves.append(c)
        ths = (h, c)
    else:
        ths = h
    eleaves = [E(t) for t in leaves]
    ehs = tuple(eleaves[1:]) if cls == "LSTMCell" else eleaves[1]
    to = tm(x, ths)
    eo = em(eleaves[0], ehs)
    to = list(to) if isinstance(to, tuple) else [to]
    eo = list(eo) if isinstance(eo, tuple) else [eo]
    for a, b in zip(to, eo):
        assert tuple(a.shape) == tuple(b.shape)
        close(a, b, dtype)
    ups = [torch.randn(a.shape, dtype=dtype) for a in to]
    tg = torch.autograd.grad(to, leaves + list(tm.parameters()), ups)
    eg = ember.autograd.grad(eo, eleaves + list(em.parameters()), [E(u) for u in ups])
    for a, b in zip(tg, eg):
        close(a, b, dtype)
    # no initial state: zeros
    close(tm(x)[0] if cls == "LSTMCell" else tm(x), em(eleaves[0])[0] if cls == "LSTMCell" else em(eleaves[0]), dtype)


def test_cell_errors_match_torch():
    def mk(lib, cls):
        lib.manual_seed(0)
        return getattr(lib.nn, cls)(10, 20)

    raises_like(lambda lib: mk(lib, "LSTMCell")(lib.randn(3, 5)))
    raises_like(lambda lib: mk(lib, "LSTMCell")(lib.randn(3, 10), (lib.randn(4, 20), lib.randn(4, 20))))
    raises_like(lambda lib: mk(lib, "LSTMCell")(lib.randn(3, 10), (lib.randn(3, 21), lib.randn(3, 20))))
    raises_like(lambda lib: mk(lib, "LSTMCell")(lib.randn(3, 10), (lib.randn(3, 20), lib.randn(3, 21))))
    raises_like(lambda lib: mk(lib, "LSTMCell")(lib.randn(2, 3, 10)))
    raises_like(lambda lib: mk(lib, "LSTMCell")(lib.randn(3, 10), (lib.randn(1, 3, 20), lib.randn(3, 20))))
    raises_like(lambda lib: mk(lib, "GRUCell")(lib.randn(3, 10), lib.randn(3, 21)))
    raises_like(lambda lib: mk(lib, "GRUCell")(lib.randn(3, 10), lib.randn(1, 3, 20)))
    raises_like(lambda lib: mk(lib, "RNNCell")(lib.randn(1, 3, 10)))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_double_backward_matches_torch(kind):
    """create_graph=True through the fused gate ops (and their workspace) and the time loop."""
    torch.manual_seed(0)
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    tm = cls(3, 4, num_layers=2, bidirectional=True).double()
    em = (ember.nn.LSTM if kind == "lstm" else ember.nn.GRU)(3, 4, num_layers=2, bidirectional=True).double()
    copy_weights(tm, em)
    x = torch.randn(4, 2, 3, dtype=torch.float64, requires_grad=True)
    ex = E(x)
    results = []
    for lib, mod, inp in ((torch, tm, x), (ember, em, ex)):
        out = mod(inp)[0]
        params = list(mod.parameters())
        gs = lib.autograd.grad((out * out).sum(), [inp] + params, create_graph=True)
        penalty = sum((g * g).sum() for g in gs)
        results.append(lib.autograd.grad(penalty, [inp] + params))
    for a, b in zip(*results):
        close(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias,bidirectional,loss_on", [(True, False, "out"), (False, True, "h"),
                                                        (True, True, "both"), (False, False, "both")])
def test_gru_runs_as_one_op(dtype, bias, bidirectional, loss_on):
    """An unpacked float GRU layer is one rnn_sequence.GRUSequence op per direction: values and every gradient
    (input, h0, all weights and biases) match torch's, with the loss on the output, on h_n or on both."""
    from ember._ops.rnn_sequence import GRUSequence
    torch.manual_seed(1)
    tm = torch.nn.GRU(5, 6, num_layers=2, bias=bias, bidirectional=bidirectional).to(getattr(torch, dtype))
    em = ember.nn.GRU(5, 6, num_layers=2, bias=bias, bidirectional=bidirectional).to(getattr(ember, dtype))
    copy_weights(tm, em)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 3, 5)).astype(dtype)
    h0 = rng.standard_normal((4 if bidirectional else 2, 3, 6)).astype(dtype)
    grads = []
    for lib, mod in ((torch, tm), (ember, em)):
        inp = lib.from_numpy(x.copy()).requires_grad_(True)
        h = lib.from_numpy(h0.copy()).requires_grad_(True)
        out, h_n = mod(inp, h)
        if lib is ember:
            assert isinstance(out.grad_fn, GRUSequence) or bidirectional
        loss = {"out": (out * out).sum(), "h": h_n.sin().sum(), "both": (out * out).sum() + h_n.sin().sum()}[loss_on]
        loss.backward()
        grads.append([out, h_n, inp.grad, h.grad] + [p.grad for p in mod.parameters()])
    for a, b in zip(*grads):
        close(a, b, getattr(torch, dtype))


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_sequence_op_double_backward(cls, bidirectional):
    """A packed LSTM/GRU layer is one rnn_sequence op per direction (the batch shrinking, and growing in
    reverse): values, every gradient and a double backward (create_graph) match torch's, with sequences
    of equal lengths among them and an unsorted batch."""
    from ember._ops import rnn_sequence
    torch.manual_seed(3)
    tm = getattr(torch.nn, cls)(3, 4, num_layers=2, bidirectional=bidirectional).double()
    em = getattr(ember.nn, cls)(3, 4, num_layers=2, bidirectional=bidirectional).double()
    copy_weights(tm, em)
    x = np.random.default_rng(4).standard_normal((6, 5, 3))
    lengths = [3, 6, 1, 6, 4]
    results = []
    for lib, mod, rnn in ((torch, tm, trnn), (ember, em, ernn)):
        inp = lib.from_numpy(x.copy()).requires_grad_(True)
        out, state = mod(rnn.pack_padded_sequence(inp, lengths, enforce_sorted=False))
        h_n = state[0] if cls == "LSTM" else state
        if lib is ember and not bidirectional:
            assert isinstance(out.data.grad_fn, (rnn_sequence.LSTMPackedSequence, rnn_sequence.GRUPackedSequence))
        params = list(mod.parameters())
        loss = (out.data * out.data).sum() + h_n.sin().sum()
        gs = lib.autograd.grad(loss, [inp] + params, create_graph=True)
        penalty = sum((g * g).sum() for g in gs)
        results.append([out.data, h_n] + list(gs) + list(lib.autograd.grad(penalty, [inp] + params)))
    for a, b in zip(*results):
        close(a, b)


def test_long_lstmcell_loop_backpropagates():
    """5,000 LSTMCell steps: backward is iterative (no recursion limit) and its gradients match torch's
    (computed by torch.nn.LSTM holding the cell's weights, which runs the same recurrence)."""
    torch.manual_seed(0)
    tm = torch.nn.LSTM(3, 4).double()
    em = ember.nn.LSTMCell(3, 4).double()
    em.load_state_dict(OrderedDict((k[:-3], E(v)) for k, v in tm.state_dict().items()))  # weight_ih_l0 -> weight_ih
    xs = torch.randn(5000, 1, 3, dtype=torch.float64) * 0.1
    tm(xs)[0].sum().backward()
    h = c = ember.zeros(1, 4, dtype=ember.float64)
    hs = []
    for x in E(xs).unbind(0):
        h, c = em(x, (h, c))
        hs.append(h)
    ember.stack(hs).sum().backward()
    for a, b in zip(tm.parameters(), em.parameters()):
        np.testing.assert_allclose(N(b.grad), N(a.grad), rtol=1e-8, atol=1e-9)


def test_hidden_state_detach_keeps_training():
    """The truncated-BPTT pattern: carry detached states across batches."""
    em = ember.nn.LSTM(3, 4)
    opt = ember.optim.SGD(em.parameters(), lr=0.1)
    hidden = None
    for _ in range(3):
        out, hidden = em(ember.randn(5, 2, 3), hidden)
        out.sum().backward()
        opt.step()
        opt.zero_grad()
        hidden = tuple(h.detach() for h in hidden)
    assert all(not h.requires_grad for h in hidden)


# ---- nn.utils.rnn -----------------------------------------------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted,lengths", [(True, [5, 3, 3, 1]), (False, [2, 5, 1, 3]),
                                                    (False, [3, 3, 2, 3])])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_pack_pad_round_trip(batch_first, enforce_sorted, lengths, as_tensor):
    gen = torch.Generator().manual_seed(0)
    shape = (4, 6, 2) if batch_first else (6, 4, 2)
    x = torch.randn(*shape, generator=gen, dtype=torch.float64, requires_grad=True)
    ex = E(x)
    tl = torch.tensor(lengths) if as_tensor else lengths
    el = ember.tensor(lengths) if as_tensor else lengths
    tp = trnn.pack_padded_sequence(x, tl, batch_first=batch_first, enforce_sorted=enforce_sorted)
    ep = ernn.pack_padded_sequence(ex, el, batch_first=batch_first, enforce_sorted=enforce_sorted)
    assert isinstance(ep, tuple) and ep._fields == tp._fields
    close(tp.data, ep.data)
    assert ep.batch_sizes.tolist() == tp.batch_sizes.tolist() and ep.batch_sizes.dtype == ember.int64
    for name in ("sorted_indices", "unsorted_indices"):
        a, b = getattr(tp, name), getattr(ep, name)
        assert (a is None) == (b is None)
        if a is not None:
            assert a.tolist() == b.tolist()
    for kw in (dict(), dict(padding_value=-2.5), dict(total_length=8)):
        tout, tlen = trnn.pad_packed_sequence(tp, batch_first=batch_first, **kw)
        eout, elen = ernn.pad_packed_sequence(ep, batch_first=batch_first, **kw)
        close(tout, eout)
        assert elen.tolist() == tlen.tolist() and elen.dtype == ember.int64
    up = torch.randn(tout.shape, generator=gen, dtype=torch.float64)
    (tg,) = torch.autograd.grad(tout, x, up)
    (eg,) = ember.autograd.grad(eout, ex, E(up))
    close(tg, eg)


def test_pack_errors_match_torch():
    def x(lib):
        return lib.zeros(5, 3, 2)

    raises_like(lambda lib: lib.nn.utils.rnn.pack_padded_sequence(x(lib), [3, 5, 2]))
    raises_like(lambda lib: lib.nn.utils.rnn.pack_padded_sequence(x(lib), [5, 3]))
    raises_like(lambda lib: lib.nn.utils.rnn.pack_padded_sequence(x(lib), [5, 3, 0]))
    raises_like(lambda lib: lib.nn.utils.rnn.pack_padded_sequence(x(lib), lib.tensor([[5, 3, 1]])))
    raises_like(lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(0, 3, 2), [0, 0, 0]))
    raises_like(lambda lib: lib.nn.utils.rnn.pad_packed_sequence(
        lib.nn.utils.rnn.pack_padded_sequence(x(lib), [5, 3, 2]), total_length=4))
    raises_like(lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2, 3), lib.ones(4, 2)]))
    raises_like(lambda lib: lib.nn.utils.rnn.pad_sequence([]))
    raises_like(lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2)], padding_side="middle"))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence(batch_first, padding_side):
    seqs = [torch.randn(n, 2, 3, dtype=torch.float64, requires_grad=True) for n in (2, 5, 3)]
    eseqs = [E(s) for s in seqs]
    t = trnn.pad_sequence(seqs, batch_first=batch_first, padding_value=1.5, padding_side=padding_side)
    e = ernn.pad_sequence(eseqs, batch_first=batch_first, padding_value=1.5, padding_side=padding_side)
    close(t, e)
    up = torch.randn(t.shape, dtype=torch.float64)
    for a, b in zip(torch.autograd.grad(t, seqs, up), ember.autograd.grad(e, eseqs, E(up))):
        close(a, b)
    ints = trnn.pad_sequence([torch.ones(2, dtype=torch.int64), torch.ones(3, dtype=torch.int64)], padding_value=5.5)
    eints = ernn.pad_sequence([ember.ones(2, dtype=ember.int64), ember.ones(3, dtype=ember.int64)], padding_value=5.5)
    assert eints.tolist() == ints.tolist() and eints.dtype == ember.int64
    assert ernn.pad_sequence(ember.ones(2, 3)).tolist() == trnn.pad_sequence(torch.ones(2, 3)).tolist()


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_sequence_and_unpack(enforce_sorted):
    lens = (4, 3, 1) if enforce_sorted else (2, 4, 1)
    seqs = [torch.randn(n, 3) for n in lens]
    tp = trnn.pack_sequence(seqs, enforce_sorted=enforce_sorted)
    ep = ernn.pack_sequence([E(s) for s in seqs], enforce_sorted=enforce_sorted)
    close(tp.data, ep.data, torch.float32)
    assert tp.batch_sizes.tolist() == ep.batch_sizes.tolist()
    for a, b in zip(trnn.unpack_sequence(tp), ernn.unpack_sequence(ep)):
        close(a, b, torch.float32)
    padded = torch.randn(5, 3, 2)
    epadded = E(padded)
    tl = torch.tensor([5, 2, 3])
    for a, b in zip(trnn.unpad_sequence(padded, tl), ernn.unpad_sequence(epadded, E(tl))):
        close(a, b, torch.float32)
    assert tuple(epadded.shape) == tuple(padded.shape) == (3, 5, 2)  # transposed in place, as torch


def test_packed_sequence_object():
    ep = ernn.pack_sequence([ember.ones(3, 2), ember.ones(1, 2)])
    data, batch_sizes, sorted_indices, unsorted_indices = ep
    assert sorted_indices is None and unsorted_indices is None
    d = ep.to(ember.float64)
    assert isinstance(d, ernn.PackedSequence) and d.data.dtype == ember.float64
    assert ep.to(ember.float32) is ep and ep.to("cpu") is ep
    assert ep.double().data.dtype == ember.float64 and not ep.is_cuda
    p = ernn.PackedSequence(ember.ones(3), ember.tensor([2, 1]), ember.tensor([1, 0]))
    assert p.unsorted_indices.tolist() == [1, 0]
    assert ernn.invert_permutation(ember.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert ernn.PackedSequence((ember.ones(3), ember.tensor([2, 1]))).batch_sizes.tolist() == [2, 1]


def test_lstm_packed_output_is_packed():
    torch.manual_seed(0)
    tm, em = _pair("LSTM", {"proj_size": 2}, torch.float32, bidirectional=True)
    seqs = [torch.randn(n, 4) for n in (2, 4, 3)]
    tp = trnn.pack_sequence(seqs, enforce_sorted=False)
    ep = ernn.pack_sequence([E(s) for s in seqs], enforce_sorted=False)
    to, (th, tc) = tm(tp)
    eo, (eh, ec) = em(ep)
    assert isinstance(eo, ernn.PackedSequence)
    assert eo.sorted_indices.tolist() == to.sorted_indices.tolist()
    tpad, _ = trnn.pad_packed_sequence(to, batch_first=True)
    epad, _ = ernn.pad_packed_sequence(eo, batch_first=True)
    close(tpad, epad, torch.float32)
    close(th, eh, torch.float32)
    close(tc, ec, torch.float32)


def test_nn_utils_rnn_namespace():
    for name in trnn.__all__:
        assert hasattr(ember.nn.utils.rnn, name), name
    for name in torch.nn.modules.rnn.__all__:
        assert getattr(ember.nn, name) is getattr(ember.nn.modules.rnn, name)
    for name in ("lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "lstm", "gru", "rnn_tanh", "rnn_relu"):
        assert callable(getattr(ember, name))


@pytest.mark.parametrize("used", ["all", "out", "h_n", "c_n"])
def test_lstm_sequence_gradients_through_each_output_match_torch(used):
    """The whole-sequence LSTM op: gradients reaching it through the output, h_n or c_n alone (the
    others arrive as None) or all three, with a grad-requiring initial state, both directions."""
    torch.manual_seed(1)
    tm = torch.nn.LSTM(3, 5, num_layers=2, bidirectional=True, batch_first=True)
    em = ember.nn.LSTM(3, 5, num_layers=2, bidirectional=True, batch_first=True)
    copy_weights(tm, em)
    x = torch.randn(2, 6, 3)
    h0 = torch.randn(4, 2, 5)
    c0 = torch.randn(4, 2, 5)
    results = []
    for lib, mod, arrays in ((torch, tm, (x, h0, c0)), (ember, em, tuple(E(a) for a in (x, h0, c0)))):
        inp, h, c = (a.clone().requires_grad_() for a in arrays)
        out, (h_n, c_n) = mod(inp, (h, c))
        terms = {"out": (out * out).sum(), "h_n": (h_n * h_n.detach()).sum(), "c_n": c_n.sum() * 3}
        loss = sum(terms.values()) if used == "all" else terms[used]
        loss.backward()
        results.append([out, h_n, c_n, inp.grad, h.grad, c.grad] + [p.grad for p in mod.parameters()])
    for a, b in zip(*results):
        close(a, b, torch.float32)


@pytest.mark.parametrize("batch_first", [False, True])
def test_lstm_output_written_in_place_before_backward_raises_like_torch(batch_first):
    """The sequence op saves its output (as torch's oneDNN layer does), so writing into it before
    backward is caught by the version check with torch's message."""
    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.LSTM(3, 4, batch_first=batch_first)
        out, _ = m(lib.tensor(np.linspace(-1, 1, 30, dtype=np.float32).reshape(5, 2, 3)))
        out.mul_(2)
        out.sum().backward()
    raises_like(run)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_output_grad_fn_and_version_like_torch(mode, dtype, batch_first, bidirectional):
    """The output's grad_fn, version, strides and storage offset as torch's CPU layers leave them: float32 LSTM its
    oneDNN layer's, float64 LSTM stacked steps; batch_first transposed (LSTM) or transposed in place (GRU, RNN)."""
    seen = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        m = getattr(lib.nn, mode)(3, 4, batch_first=batch_first, bidirectional=bidirectional).to(getattr(lib, dtype))
        out, _ = m(lib.tensor(np.linspace(-1, 1, 30).reshape(5, 2, 3), dtype=getattr(lib, dtype)))
        seen.append((out.grad_fn.name(), out._version, tuple(out.stride()), out.storage_offset()))
    assert seen[0] == seen[1]


def test_float64_lstm_output_written_in_place_before_backward_like_torch():
    """torch's float64 LSTM (no oneDNN layer) saves no output: writing into it before backward is allowed."""
    grads = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        m = lib.nn.LSTM(3, 4).double()
        out, (h, c) = m(lib.tensor(np.linspace(-1, 1, 30).reshape(5, 2, 3)))
        out.mul_(2)
        (out.sum() + h.sum()).backward()
        grads.append([out, h] + [p.grad for p in m.parameters()])
    for a, b in zip(*grads):
        close(a, b, torch.float64)


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_float32_lstm_output_written_in_place_before_backward_like_torch(num_layers, bidirectional):
    """torch's oneDNN LSTM layer saves its output: writing into a one-direction output before backward raises; a
    bidirectional output is a new concatenation, and writing into it is allowed, with torch's gradients."""
    seen = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        m = lib.nn.LSTM(3, 4, num_layers=num_layers, bidirectional=bidirectional)
        out, (h, c) = m(lib.tensor(np.linspace(-1, 1, 30, dtype=np.float32).reshape(5, 2, 3)))
        out.mul_(2)
        try:
            (out.sum() + h.sum()).backward()
        except RuntimeError as e:
            seen.append(("raised", "modified by an inplace operation" in str(e)))
        else:
            seen.append([out.detach()] + [p.grad for p in m.parameters()])
    if bidirectional:
        for a, b in zip(*seen):
            close(a, b, torch.float32)
    else:
        assert seen == [("raised", True)] * 2


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_gru_output_written_in_place_before_backward_like_torch(packed, bidirectional):
    """A GRU's output may be written into before backward (torch's CPU GRU stacks or concatenates its
    steps and saves no output): the gradients are torch's, and the op's own state is not that output."""
    grads = []
    for lib, rnn in ((torch, trnn), (ember, ernn)):
        lib.manual_seed(0)
        m = lib.nn.GRU(3, 4, bidirectional=bidirectional)
        x = lib.tensor(np.linspace(-1, 1, 30, dtype=np.float32).reshape(5, 2, 3))
        out, h = m(rnn.pack_padded_sequence(x, [5, 3]) if packed else x)
        data = out.data if packed else out
        data.mul_(2)
        (data.sum() + h.sum()).backward()
        grads.append([data, h] + [p.grad for p in m.parameters()])
    for a, b in zip(*grads):
        close(a, b, torch.float32)


# ---- the ember-only tests above, told again on torch (issue 19) -----------------------------------------------

def _story_truncated_bptt(lib):
    lib.manual_seed(0)
    m = lib.nn.LSTM(3, 4)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    hidden, out = None, []
    for _ in range(3):
        y, hidden = m(lib.randn(5, 2, 3), hidden)
        y.sum().backward()
        opt.step()
        opt.zero_grad()
        hidden = tuple(h.detach() for h in hidden)
        out += [y, *hidden]
    return out + list(m.parameters())


def _story_packed_sequence(lib):
    rnn = lib.nn.utils.rnn
    ep = rnn.pack_sequence([lib.ones(3, 2), lib.ones(1, 2)])
    data, batch_sizes, sorted_indices, unsorted_indices = ep
    d = ep.to(lib.float64)
    p = rnn.PackedSequence(lib.ones(3), lib.tensor([2, 1]), lib.tensor([1, 0]))
    return [data, batch_sizes, sorted_indices, unsorted_indices, type(d).__name__, d.data, ep.to(lib.float32) is ep,
            ep.to("cpu") is ep, ep.double().data, ep.is_cuda, p.sorted_indices, p.unsorted_indices,
            rnn.invert_permutation(lib.tensor([2, 0, 1])),
            rnn.PackedSequence((lib.ones(3), lib.tensor([2, 1]))).batch_sizes]


@pytest.mark.parametrize("story", [_story_truncated_bptt, _story_packed_sequence],
                         ids=["hidden_state_detach_keeps_training", "packed_sequence_object"])
def test_rnn_stories_match_torch(story):
    """Seeded alike, the truncated-BPTT loop and the PackedSequence object observe what torch does."""
    check_story(story, atol=1e-5)
