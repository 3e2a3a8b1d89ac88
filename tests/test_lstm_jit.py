"""The compiled LSTM and GRU steps (ember/_backend/lstm_jit.py, Note [JIT kernels]): the vectorizable float32 exp
against float64's over the whole range and at the edges; the forward steps against the NumPy ones (to rounding,
with NaN, inf and saturating gates); the backward recursions bit for bit against the NumPy ones; the LSTM's and GRU's
time loops as one compiled call (Note [Compiled LSTM sequence]) bit for bit against a compiled step per call, and
split by batch rows across threads against the whole batch; LSTM and GRU layers (two layers, bidirectional, packed)
against torch; and the switch."""
import numpy as np
import pytest
import torch

import ember
from ember._backend import jit, parallel
from ember._ops import rnn as RNN
from ember._ops import rnn_sequence as RS
from tests._jit import count_calls
from tests._threads import spy_splits

numba = pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")
from ember._backend import lstm_jit  # noqa: E402  (needs numba)
from ember._backend.lstm_jit import _exp, _sigmoid  # noqa: E402


@pytest.fixture(autouse=True)
def compiled_on(monkeypatch):
    """The compiled kernels on whatever EMBER_JIT says."""
    monkeypatch.setattr(jit, "ENABLED", True)


def _kernels():
    return jit.load("lstm_jit")


def _same_bits(results):
    """Two runs' arrays, pairwise bit for bit the same."""
    for a, b in zip(*results):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def _both_loops(monkeypatch, forward):
    """forward(ctx)'s outputs and ctx.workspace with the time loop as one compiled call and as a compiled step per
    call (rnn_sequence.WHOLE_LOOP), bit for bit the same."""
    res = []
    for whole in (True, False):
        monkeypatch.setattr(RS, "WHOLE_LOOP", whole)
        ctx = type("Ctx", (), {"saves_output": False, "save_for_backward": lambda self, *a: None})()
        res.append(list(forward(ctx)) + list(ctx.workspace))
    _same_bits(res)


@numba.njit
def _exp_all(x, out):
    for i in range(x.shape[0]):
        out[i] = _exp(x[i])


@numba.njit
def _sigmoid_all(x, out):
    for i in range(x.shape[0]):
        out[i] = _sigmoid(x[i])


def test_exp_is_within_two_ulp_and_keeps_the_edges():
    """The exp of arguments <= 0 (what the sigmoid and the softmax rows give it): within 2 ulp over the normal
    range, 0 below it, exact at 0, NaN kept; and the sigmoid built on it against float64 over the whole line."""
    _kernels()
    x = np.concatenate([np.linspace(-90, 0, 1_000_001), -np.random.default_rng(0).uniform(0, 1, 100_000)])
    x = x.astype(np.float32)
    out = np.empty_like(x)
    _exp_all(x, out)
    ref = np.exp(x.astype(np.float64))
    normal = ref > np.finfo(np.float32).tiny
    rel = np.abs(out[normal].astype(np.float64) - ref[normal]) / ref[normal]
    assert rel.max() < 2 * 2.0 ** -23
    assert (out[~normal] == 0).all()  # below the normal range: 0 (1 + it is 1 in the sigmoid)
    edges = np.float32([np.nan, -np.inf, 0.0, -0.0, -87.3, -88.0, -200.0, -1e-30])
    got = np.empty_like(edges)
    _exp_all(edges, got)
    assert np.isnan(got[0]) and got[1] == 0 and got[2] == 1 and got[3] == 1 and got[7] == 1
    assert got[4] > 0 and got[5] == 0 and got[6] == 0
    x = np.concatenate([np.linspace(-100, 100, 1_000_001), np.float32([np.nan, np.inf, -np.inf])]).astype(np.float32)
    sig = np.empty_like(x)
    _sigmoid_all(x, sig)
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        want = 1 / (1 + np.exp(-x64))
    big = want > 1e-30
    assert (np.abs(sig[big] - want[big]) / want[big]).max() < 3 * 2.0 ** -23
    assert (np.abs(sig[~big & ~np.isnan(x)]) < 1e-30).all() and np.isnan(sig[-3])
    assert sig[-2] == 1 and sig[-1] == 0


def _cell_inputs(rng, batch, n, scale=3.0):
    gates = (rng.standard_normal((batch, 4 * n)) * scale).astype(np.float32)
    xg = (rng.standard_normal((batch, 4 * n)) * scale).astype(np.float32)
    c = (rng.standard_normal((batch, n)) * scale).astype(np.float32)
    return gates, xg, c


def _check_steps(compiled, reference, make_args):
    """The compiled forward step and its NumPy reference, each on fresh arguments from make_args(), leave the same
    arrays to rounding (NaN where NaN, inf where inf)."""
    res = []
    for step in (compiled, reference):
        args = make_args()
        with np.errstate(all="ignore"):
            step(*args)
        res.append(args)
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("values", ["normal", "saturating", "nonfinite"])
def test_forward_step_matches_the_numpy_cell(values):
    rng = np.random.default_rng(len(values))
    gates, xg, c = _cell_inputs(rng, 7, 33, scale=60.0 if values == "saturating" else 3.0)
    if values == "nonfinite":
        for a in (gates, xg, c):
            a[rng.random(a.shape) < 0.05] = np.nan
            a[rng.random(a.shape) < 0.05] = np.inf
            a[rng.random(a.shape) < 0.05] = -np.inf
    _check_steps(_kernels().cell, RS._lstm_numpy_step,
                 lambda: [gates.copy(), xg, c] + [np.empty_like(c) for _ in range(3)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("with_go", [False, True])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("whole_loop", [True, False])
def test_backward_recursion_is_the_numpy_one_bit_for_bit(dtype, with_go, packed, whole_loop, monkeypatch):
    """The compiled recursion, as one call (Note [Compiled LSTM sequence]) or a compiled step per call, against the
    NumPy one; the packed batch has a step of one row (a gemv in NumPy, and so in the whole loop)."""
    monkeypatch.setattr(RS, "WHOLE_LOOP", whole_loop)
    calls = count_calls(monkeypatch, _kernels(), "backward_sequence", "back_step")
    rng = np.random.default_rng([with_go, packed, np.dtype(dtype).itemsize])
    sizes = [5, 5, 4, 2, 2, 1] if packed else [5] * 6
    steps = RS.Steps(sizes, reverse=False)
    count, batch, n = len(sizes), 5, 19
    gates = rng.uniform(0, 1, (count, batch, 4 * n)).astype(dtype)
    gates[..., 2 * n:3 * n] = rng.uniform(-1, 1, (count, batch, n))
    cs = rng.standard_normal((count + 1, batch, n)).astype(dtype)
    tcs = np.tanh(cs[1:])
    go = rng.standard_normal((sum(sizes), n)).astype(dtype) if with_go else None
    w = rng.standard_normal((4 * n, n)).astype(dtype)
    dh0, dc0 = (rng.standard_normal((batch, n)).astype(dtype) for _ in range(2))
    res = []
    for kernels in (_kernels(), None):
        dh, dc, dgates = dh0.copy(), dc0.copy(), steps.empty(gates.shape, dtype)
        RS._lstm_steps_back(steps, gates, cs, tcs, dgates, dh, dc, go, w, kernels)
        res.append((dh, dc, dgates))
    assert set(calls) == ({"backward_sequence"} if whole_loop else {"back_step"})
    _same_bits(res)


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_whole_forward_loop_is_the_stepwise_one_bit_for_bit(packed, reverse, with_bias, monkeypatch):
    """LSTMSequence's forward as one compiled call against a compiled cell per step from Python: the same BLAS
    calls (a gemv for the one-row step) and cells, so the same bits; the rows a packed step leaves carry over.
    A bias added in the loop rounds as the stepwise loop's xg + bias does."""
    rng = np.random.default_rng([packed, reverse, with_bias])
    sizes = [5, 5, 4, 2, 2, 1] if packed else [5] * 6
    n = 19
    xg = rng.standard_normal((sum(sizes), 4 * n)).astype(np.float32)
    h0, c0 = (rng.standard_normal((5, n)).astype(np.float32) for _ in range(2))
    w = (rng.standard_normal((4 * n, n)) * 0.5).astype(np.float32)
    bias = rng.standard_normal(4 * n).astype(np.float32) if with_bias else None
    calls = count_calls(monkeypatch, _kernels(), "forward_sequence", "cell")
    _both_loops(monkeypatch, lambda ctx: RS.LSTMSequence.forward(ctx, xg, h0, c0, w, bias, reverse, sizes))
    assert calls.count("forward_sequence") == 1 and calls.count("cell") == len(sizes)


def _layer(lib, kind, x, weights, packed_lengths=None, **kw):
    """Outputs, final states and all gradients of an nn.LSTM or nn.GRU (kind) with the given weights."""
    m = getattr(lib.nn, kind)(x.shape[-1], weights["weight_hh_l0"].shape[1], batch_first=True, **kw)
    m.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in weights.items()})
    xt = lib.tensor(x, requires_grad=True)
    inp = xt
    if packed_lengths is not None:
        inp = lib.nn.utils.rnn.pack_padded_sequence(xt, packed_lengths, batch_first=True, enforce_sorted=False)
    out, state = m(inp)
    if packed_lengths is not None:
        out = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0]
    states = list(state) if isinstance(state, tuple) else [state]
    loss = (out * out).sum() + (states[0] * states[-1]).sum()
    grads = lib.autograd.grad(loss, [xt] + list(m.parameters()))
    return [out.detach().numpy()] + [t.detach().numpy() for t in states] + [g.numpy() for g in grads]


_STEPS = {"LSTM": ("forward_sequence", "backward_sequence"), "LSTM stepwise": ("cell", "back_step"),
          "GRU": ("gru_forward_sequence", "gru_backward_sequence"), "GRU stepwise": ("gru_cell", "gru_back_step")}


@pytest.mark.parametrize("layer", ["LSTM", "LSTM stepwise", "GRU", "GRU stepwise"])
@pytest.mark.parametrize("kind", ["one direction", "bidirectional", "packed"])
def test_layers_match_torch_with_the_compiled_steps(layer, kind, monkeypatch):
    monkeypatch.setattr(RS, "WHOLE_LOOP", not layer.endswith("stepwise"))
    spied, layer = layer, layer.split()[0]
    rng = np.random.default_rng([len(kind), len(layer)])
    x = rng.standard_normal((6, 9, 10)).astype(np.float32)
    kw = {"bidirectional": kind != "one direction", "num_layers": 2 if kind == "one direction" else 1}
    lengths = [9, 3, 7, 9, 1, 5] if kind == "packed" else None
    module = getattr(ember.nn, layer)(10, 24, batch_first=True, **kw)
    weights = {k: v.numpy() for k, v in module.state_dict().items()}
    calls = count_calls(monkeypatch, _kernels(), *_STEPS[spied])
    on = _layer(ember, layer, x, weights, lengths, **kw)
    assert set(_STEPS[spied]) <= set(calls)
    monkeypatch.setattr(jit, "ENABLED", False)
    off = _layer(ember, layer, x, weights, lengths, **kw)
    ref = _layer(torch, layer, x, weights, lengths, **kw)
    for a, b, t in zip(on, off, ref):
        np.testing.assert_allclose(a, t, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def _lstm_run(x, weights, lengths, dtype, create_graph, **kw):
    """Outputs, final states, every first-order gradient (and with create_graph the gradient of their sum of
    squares) of an ember nn.LSTM of dtype."""
    m = ember.nn.LSTM(x.shape[-1], weights["weight_hh_l0"].shape[1], batch_first=True, **kw)
    m = m.double() if dtype == np.float64 else m
    m.load_state_dict({k: ember.from_numpy(v) for k, v in weights.items()})
    xt = ember.tensor(x, requires_grad=True)
    inp = xt
    if lengths is not None:
        inp = ember.nn.utils.rnn.pack_padded_sequence(xt, lengths, batch_first=True, enforce_sorted=False)
    out, (h, c) = m(inp)
    if lengths is not None:
        out = ember.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0]
    loss = (out * out).sum() + (h * c).sum()
    params = [xt] + list(m.parameters())
    grads = ember.autograd.grad(loss, params, create_graph=create_graph)
    res = [out, h, c, *grads]
    if create_graph:
        res += ember.autograd.grad(sum((g * g).sum() for g in grads), params)
    return [np.ascontiguousarray(t.detach().numpy()) for t in res]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["one direction", "bidirectional", "packed", "create_graph"])
def test_bias_in_the_time_loop_is_the_projections_bias_bit_for_bit(dtype, kind, monkeypatch):
    """Note [LSTM bias in the loop]: b_ih + b_hh added in the sequence op's time loop, its gradient summed there,
    against the input projection adding it (the path before): outputs, states and every first-order gradient
    (through create_graph too) the same bits, compiled (float32) and NumPy (float64) loops alike; second-order ones
    to rounding."""
    rng = np.random.default_rng([len(kind), np.dtype(dtype).itemsize])
    x = rng.standard_normal((6, 9, 10)).astype(dtype)
    kw = {"bidirectional": kind == "bidirectional", "num_layers": 2 if kind == "one direction" else 1}
    lengths = [9, 3, 7, 9, 1, 5] if kind == "packed" else None
    weights = {k: v.numpy().astype(dtype) for k, v in ember.nn.LSTM(10, 24, **kw).state_dict().items()}
    calls = []
    sequence = RNN.lstm_sequence
    monkeypatch.setattr(RNN, "lstm_sequence", lambda *a: calls.append(a) or sequence(*a))
    folded = _lstm_run(x, weights, lengths, dtype, kind == "create_graph", **kw)
    assert len(calls) == kw["num_layers"] * (1 + kw["bidirectional"]) and all(a[6] is not None for a in calls)
    monkeypatch.setattr(RNN._Layer, "loop_bias", lambda self, x, h0, c0: None)
    calls.clear()
    projected = _lstm_run(x, weights, lengths, dtype, kind == "create_graph", **kw)
    assert calls and all(len(a) == 6 for a in calls)  # without the bias: the projection added it
    assert len(folded) == len(projected)
    first = 3 + 1 + len(weights)  # outputs, states, first-order gradients
    _same_bits([folded[:first], projected[:first]])
    for a, b in zip(folded[first:], projected[first:]):  # second order: the bias terms summed in another order
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---- GRU ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("values", ["normal", "saturating", "nonfinite"])
def test_gru_forward_step_matches_the_numpy_step(values):
    rng = np.random.default_rng(len(values) + 7)
    rows, n = 6, 21
    scale = 60.0 if values == "saturating" else 3.0
    hg, xg = ((rng.standard_normal((rows, 3 * n)) * scale).astype(np.float32) for _ in range(2))
    h_prev = rng.standard_normal((rows, n)).astype(np.float32)
    if values == "nonfinite":
        for a in (hg, xg, h_prev):
            a[rng.random(a.shape) < 0.05] = np.nan
            a[rng.random(a.shape) < 0.05] = np.inf
    _check_steps(_kernels().gru_cell, RS._gru_numpy_step,
                 lambda: [hg, xg, np.empty((rows, 4 * n), np.float32), h_prev, np.empty((rows, n), np.float32)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("with_go", [False, True])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("whole_loop", [True, False])
def test_gru_backward_recursion_is_the_numpy_one_bit_for_bit(dtype, with_go, packed, whole_loop, monkeypatch):
    monkeypatch.setattr(RS, "WHOLE_LOOP", whole_loop)
    calls = count_calls(monkeypatch, _kernels(), "gru_backward_sequence", "gru_back_step")
    rng = np.random.default_rng([with_go, packed, np.dtype(dtype).itemsize, 1])
    sizes = [5, 5, 4, 2, 2, 1] if packed else [5] * 6
    steps = RS.Steps(sizes, reverse=True)
    count, batch, n = len(sizes), 5, 17
    ws = rng.uniform(0, 1, (count, batch, 4 * n)).astype(dtype)
    ws[..., 2 * n:3 * n] = rng.uniform(-1, 1, (count, batch, n))
    ws[..., 3 * n:] = rng.standard_normal((count, batch, n))
    hs = rng.standard_normal((count + 1, batch, n)).astype(dtype)
    go = rng.standard_normal((sum(sizes), n)).astype(dtype) if with_go else None
    w = rng.standard_normal((3 * n, n)).astype(dtype)
    dh0 = rng.standard_normal((batch, n)).astype(dtype)
    res = []
    for kernels in (_kernels(), None):
        dh = dh0.copy()
        dxg, dhg = (steps.empty((count, batch, 3, n), dtype) for _ in range(2))
        RS._gru_steps_back(steps, ws, hs, dxg, dhg, dh, go, w, kernels)
        res.append((dh, dxg, dhg))
    assert set(calls) == ({"gru_backward_sequence"} if whole_loop else {"gru_back_step"})
    _same_bits(res)


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_gru_whole_forward_loop_is_the_stepwise_one_bit_for_bit(packed, bias, monkeypatch):
    rng = np.random.default_rng([packed, bias, 2])
    sizes = [5, 5, 4, 2, 2, 1] if packed else [5] * 6
    n = 17
    xg = rng.standard_normal((sum(sizes), 3 * n)).astype(np.float32)
    h0 = rng.standard_normal((5, n)).astype(np.float32)
    w = (rng.standard_normal((3 * n, n)) * 0.5).astype(np.float32)
    b = rng.standard_normal(3 * n).astype(np.float32) if bias else None
    calls = count_calls(monkeypatch, _kernels(), "gru_forward_sequence", "gru_cell")
    _both_loops(monkeypatch, lambda ctx: RS.GRUSequence.forward(ctx, xg, h0, w, b, True, sizes))
    assert calls.count("gru_forward_sequence") == 1 and calls.count("gru_cell") == len(sizes)


# ---- the batch rows in pieces (Note [LSTM rows in parallel]) --------------------------------------------------

@pytest.mark.parametrize("layer", ["LSTM", "GRU"])
@pytest.mark.parametrize("kind", ["one direction", "bidirectional", "packed"])
def test_layers_split_by_rows_match_torch_and_the_whole_batch(layer, kind, monkeypatch):
    """Every compiled time loop split in two row ranges, forward and backward, on 2 threads; the packed batch has
    steps whose rows all fall in the first range (the second only carries its rows over or keeps their gradient)."""
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        rng = np.random.default_rng([len(kind), len(layer), 3])
        x = rng.standard_normal((6, 9, 10)).astype(np.float32)
        kw = {"bidirectional": kind != "one direction", "num_layers": 2 if kind == "one direction" else 1}
        lengths = [9, 3, 7, 9, 1, 2] if kind == "packed" else None
        module = getattr(ember.nn, layer)(10, 24, batch_first=True, **kw)
        weights = {k: v.numpy() for k, v in module.state_dict().items()}
        whole = _layer(ember, layer, x, weights, lengths, **kw)
        monkeypatch.setattr(parallel, "_MIN_FLOPS", 0)
        splits = spy_splits(monkeypatch)
        calls = count_calls(monkeypatch, _kernels(), *_STEPS[layer])
        split = _layer(ember, layer, x, weights, lengths, **kw)
    finally:
        ember.set_num_threads(before)
    loops = 2 * kw["num_layers"] * (2 if kw["bidirectional"] else 1)
    assert len(calls) == loops and splits.count(2) >= loops
    ref = _layer(torch, layer, x, weights, lengths, **kw)
    for a, b, t in zip(split, whole, ref):
        np.testing.assert_allclose(a, t, rtol=2e-5, atol=2e-5)
        # a piece's GEMMs on fewer rows may round differently: bias gradients (sums of 54 rows) met 1.5e-6 at 0.36
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=5e-6)


# ---- the products through the packed weight (Note [Packed LSTM weights]) ---------------------------------------

@pytest.mark.parametrize("layer", ["LSTM", "GRU"])
@pytest.mark.parametrize("kind", ["one direction", "bidirectional", "packed"])
@pytest.mark.parametrize("hidden", [16, 32])
def test_packed_weight_products_match_blas_and_torch(layer, kind, hidden, monkeypatch):
    """Hidden sizes whose products all go through the register tile (output columns 4H, 3H and H multiples of 16),
    forward and backward, on 1 and 2 threads (whole batch and pieces), against the BLAS products and torch; the
    packed batch has steps of 1 to 6 rows (tiles repeating their last row)."""
    rng = np.random.default_rng([len(kind), len(layer), hidden])
    x = rng.standard_normal((6, 9, 10)).astype(np.float32)
    kw = {"bidirectional": kind != "one direction", "num_layers": 2 if kind == "one direction" else 1}
    lengths = [9, 3, 7, 9, 1, 2] if kind == "packed" else None
    module = getattr(ember.nn, layer)(10, hidden, batch_first=True, **kw)
    weights = {k: v.numpy() for k, v in module.state_dict().items()}
    packings = []
    real = lstm_jit._packing

    def spy(w, transposed):
        packed = real(w, transposed)
        packings.append(packed[0].shape[0])
        return packed
    monkeypatch.setattr(lstm_jit, "_packing", spy)
    monkeypatch.setattr(parallel, "_MIN_FLOPS", 0)
    before = ember.get_num_threads()
    try:
        results = []
        for threads, packed in ((1, True), (2, True), (2, False)):
            ember.set_num_threads(threads)
            monkeypatch.setattr(lstm_jit, "PACKED", packed)
            packings.clear()
            results.append(_layer(ember, layer, x, weights, lengths, **kw))
            assert packings and all(packings) == packed
    finally:
        ember.set_num_threads(before)
    ref = _layer(torch, layer, x, weights, lengths, **kw)
    for one, two, blas_, t in zip(*results, ref):
        np.testing.assert_allclose(one, t, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(two, t, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(one, blas_, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(two, blas_, rtol=1e-5, atol=1e-6)
