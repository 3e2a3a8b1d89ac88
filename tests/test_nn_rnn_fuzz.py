"""Random recurrent layers against torch: nn.LSTM (with and without proj_size), nn.GRU and nn.RNN
(tanh, relu) with random sizes, layers, directions, batch_first, bias, an initial state or none,
packed or padded input, float32 or float64, and a loss through the output, h_n, c_n or all of them.
Outputs, states and the gradients of input, initial state and every parameter must match torch.
"""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-10)}


def _case(rng):
    mode = str(rng.choice(["LSTM", "GRU", "RNN"]))
    inp, hid = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    kw = dict(num_layers=int(rng.integers(1, 3)), bidirectional=bool(rng.random() < 0.5),
              batch_first=bool(rng.random() < 0.5), bias=bool(rng.random() < 0.8))
    if mode == "LSTM" and hid > 1 and rng.random() < 0.3:
        kw["proj_size"] = int(rng.integers(1, hid))
    if mode == "RNN":
        kw["nonlinearity"] = str(rng.choice(["tanh", "relu"]))
    steps, batch = int(rng.integers(1, 7)), int(rng.integers(1, 4))
    dtype = str(rng.choice(["float32", "float64"]))
    x = rng.standard_normal((batch, steps, inp) if kw["batch_first"] else (steps, batch, inp)).astype(dtype)
    layers = kw["num_layers"] * (2 if kw["bidirectional"] else 1)
    h0 = rng.standard_normal((layers, batch, kw.get("proj_size") or hid)).astype(dtype)
    c0 = rng.standard_normal((layers, batch, hid)).astype(dtype)
    lengths = sorted((int(rng.integers(1, steps + 1)) for _ in range(batch)), reverse=True)
    lengths[0] = steps
    return dict(mode=mode, inp=inp, hid=hid, kw=kw, dtype=dtype, x=x, h0=h0, c0=c0,
                state=bool(rng.random() < 0.5), lengths=lengths if rng.random() < 0.3 else None,
                loss=str(rng.choice(["out", "h", "c", "all"] if mode == "LSTM" else ["out", "h", "all"])))


def _run(lib, module, c):
    rnn_utils = (torch if lib is torch else ember).nn.utils.rnn
    x, h0, c0 = (lib.from_numpy(a.copy()).requires_grad_() for a in (c["x"], c["h0"], c["c0"]))
    inp = x if c["lengths"] is None else rnn_utils.pack_padded_sequence(x, c["lengths"], c["kw"]["batch_first"])
    state = ((h0, c0) if c["mode"] == "LSTM" else h0) if c["state"] else None
    out, st = module(inp, state)
    if c["lengths"] is not None:
        out = rnn_utils.pad_packed_sequence(out, c["kw"]["batch_first"])[0]
    h_n, c_n = st if c["mode"] == "LSTM" else (st, None)
    terms = {"out": (out * out).sum(), "h": (h_n * 1.5).sum(), "c": c_n.sum() if c_n is not None else 0}
    (sum(terms.values()) if c["loss"] == "all" else terms[c["loss"]]).backward()
    got = [out, h_n, c_n, x.grad] + ([h0.grad, c0.grad if c["mode"] == "LSTM" else None] if c["state"] else [])
    return [None if t is None else t.detach().numpy() for t in got + [p.grad for p in module.parameters()]]


@pytest.mark.parametrize("seed", range(3))
def test_random_recurrent_layers_match_torch(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        c = _case(rng)
        torch.manual_seed(0)
        tm = getattr(torch.nn, c["mode"])(c["inp"], c["hid"], **c["kw"]).to(getattr(torch, c["dtype"]))
        em = getattr(ember.nn, c["mode"])(c["inp"], c["hid"], **c["kw"]).to(getattr(ember, c["dtype"]))
        em.load_state_dict(OrderedDict((k, ember.tensor(v.detach().numpy())) for k, v in tm.state_dict().items()))
        what = {k: v for k, v in c.items() if k not in ("x", "h0", "c0")}
        for i, (e, t) in enumerate(zip(_run(ember, em, c), _run(torch, tm, c))):
            assert (e is None) == (t is None), (what, i)
            if t is not None:
                assert e.shape == t.shape, (what, i)
                np.testing.assert_allclose(e, t, err_msg=f"{what} item {i}", **TOL[c["dtype"]])
