"""nn.AdaptiveLogSoftmaxWithLoss against torch: with the same parameters, forward's output and loss, the
gradients of the input and of the head and tail layers, log_prob and predict agree for targets in the shortlist,
in each cluster, and mixed, batched and unbatched; construction and bad targets raise torch's errors."""
import numpy as np
import pytest
import torch

import ember


def _module(lib, head_bias=True, div_value=2.0):
    lib.manual_seed(0)
    m = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10, 15], div_value=div_value, head_bias=head_bias)
    rng = np.random.default_rng(0)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5))
    return m


def _run(lib, targets, batched, head_bias, div_value):
    m = _module(lib, head_bias, div_value)
    x = lib.from_numpy(np.random.default_rng(1).standard_normal((len(targets), 8)).astype(np.float32))
    t = lib.tensor(targets)
    if not batched:
        x, t = x[0], t[0]
    x.requires_grad_(True)
    out, loss = m(x, t)
    loss.backward()
    rows = x.detach() if batched else x.detach()[None]
    got = [out, loss, x.grad, m.log_prob(rows), m.predict(rows)]
    got += [p.grad if p.grad is not None else "no grad" for p in m.parameters()]
    return [g if isinstance(g, str) else g.detach().numpy() for g in got], [n for n, _ in m.named_parameters()]


@pytest.mark.parametrize("targets", [[0, 5, 12, 19, 3, 11], [0, 1, 2, 3, 0, 1], [19, 18, 17, 16, 15, 15], [9]])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("head_bias, div_value", [(True, 2.0), (False, 4.0)])
def test_matches_torch(targets, batched, head_bias, div_value):
    (got, names), (want, want_names) = (_run(lib, targets, batched, head_bias, div_value) for lib in (ember, torch))
    assert names == want_names
    for g, w in zip(got, want):
        if isinstance(w, str):
            assert g == w
        else:
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cutoffs", [[], [10, 4], [0, 5], [5, 20], [5, 5], [2.5]])
def test_bad_cutoffs_raise_torchs_error(cutoffs):
    def run(lib):
        with pytest.raises(ValueError) as info:
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs)
        return str(info.value)
    assert run(ember) == run(torch)


@pytest.mark.parametrize("case", ["target_too_big", "negative_target", "batch_mismatch", "3d_input", "2d_target",
                                  "0d_target_2d_input"])
def test_bad_calls_raise_torchs_errors(case):
    def run(lib):
        m = _module(lib)
        x, t = lib.zeros(3, 8), lib.tensor([1, 2, 3])
        args = {"target_too_big": (x, lib.tensor([1, 20, 3])), "negative_target": (x, lib.tensor([1, -1, 3])),
                "batch_mismatch": (x, lib.tensor([1, 2])), "3d_input": (lib.zeros(3, 2, 8), t),
                "2d_target": (x, t[None]), "0d_target_2d_input": (x, t[0])}[case]
        with pytest.raises(RuntimeError) as info:
            m(*args)
        return str(info.value)
    assert run(ember) == run(torch)


def test_state_dict_keys_and_repr_as_torch():
    e, t = _module(ember), _module(torch)
    assert list(e.state_dict()) == list(t.state_dict())
    assert repr(e) == repr(t)
