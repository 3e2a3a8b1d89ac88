"""ember against torch where the NumPy this project runs on (2.4) gives wrong answers by itself.

np.negative writes wrong values into some strided outputs (every 4th float32/int32 element, every
8th float64/int64: a column of an (n, 4) float32 array), in place or not. ember routes negation
through `ember._backend.negative`, which writes such outputs through a fresh result.
"""
import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("step", [2, 3, 4, 8, 16])
def test_negation_into_strided_views_matches_torch(dtype, step):
    results = []
    for lib in (torch, ember):
        d = getattr(lib, dtype)
        a = lib.arange(1, 6 * step + 1).to(d).reshape(6, step)
        a[:, step - 1].neg_()
        b = lib.arange(1, 6 * step + 1).to(d)
        lib.neg(b[::step], out=b[::step])
        c = lib.arange(1, 6 * step + 1).to(d).reshape(6, step)
        c[:, 0] = -c[:, step - 1]
        results.append([a.tolist(), b.tolist(), c.tolist()])
    assert results[1] == results[0]


def test_lstm_with_one_hidden_unit_matches_torch():
    """The LSTM sequence op activates gate columns in place; with hidden size 1 a gate column is every
    4th element of the gates, the stride np.negative gets wrong inside the sigmoid."""
    torch.manual_seed(0)
    tm = torch.nn.LSTM(1, 1, bidirectional=True)
    em = ember.nn.LSTM(1, 1, bidirectional=True)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3, 1)).astype(np.float32)
    t = tm(torch.from_numpy(x))[0].detach().numpy()
    e = em(ember.from_numpy(x))[0].detach().numpy()
    np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)
