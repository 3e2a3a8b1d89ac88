"""In-place writes into an expanded tensor (elements sharing memory) against torch (Note [Expanded self] in
ember/_ops/_registry.py): torch refuses most with "more than one element of the written-to tensor refers to a
single memory location" and takes a few (fill_, zero_, masked_fill_, index_fill_, index_put_, item assignment,
threshold_, fill_diagonal_); the random ones refuse before or after their draw as torch does, which the default
generator's state shows."""
import re
import warnings

import numpy as np
import pytest
import torch

import ember

torch.set_num_threads(1)


def _cases(L):
    F = L.nn.functional
    ones = lambda: L.ones(2, 3)  # noqa: E731
    idx = lambda: L.tensor([0])  # noqa: E731
    col = lambda: L.zeros(2, 1, dtype=L.int64)  # noqa: E731
    return {
        # elementwise and composite in-place ops
        "add_": lambda e: e.add_(1), "sub_": lambda e: e.sub_(ones()), "mul_": lambda e: e.mul_(2),
        "div_": lambda e: e.div_(2), "neg_": lambda e: e.neg_(), "sigmoid_": lambda e: e.sigmoid_(),
        "torch.sigmoid_": lambda e: L.sigmoid_(e), "tanh_": lambda e: e.tanh_(), "exp_": lambda e: e.exp_(),
        "exp2_": lambda e: e.exp2_(), "sqrt_": lambda e: e.sqrt_(), "sign_": lambda e: e.sign_(),
        "round_": lambda e: e.round_(), "floor_": lambda e: e.floor_(), "trunc_": lambda e: e.trunc_(),
        "frac_": lambda e: e.frac_(), "erf_": lambda e: e.erf_(), "logit_": lambda e: e.logit_(),
        "digamma_": lambda e: e.digamma_(), "square_": lambda e: e.square_(), "nan_to_num_": lambda e: e.nan_to_num_(),
        "fmod_": lambda e: e.fmod_(2), "remainder_": lambda e: e.remainder_(2), "copysign_": lambda e: e.copysign_(ones()),
        "xlogy_": lambda e: e.xlogy_(ones()), "hypot_": lambda e: e.hypot_(ones()), "clamp_": lambda e: e.clamp_(0, 1),
        "clamp_max_": lambda e: e.clamp_max_(1), "pow_": lambda e: e.pow_(2), "lerp_": lambda e: e.lerp_(ones(), 0.5),
        "addcmul_": lambda e: e.addcmul_(ones(), ones()), "addcdiv_": lambda e: e.addcdiv_(ones(), ones()),
        "addmm_": lambda e: e.addmm_(L.ones(2, 2), L.ones(2, 3)), "renorm_": lambda e: e.renorm_(2, 0, 1.0),
        "cumsum_": lambda e: e.cumsum_(1), "cumprod_": lambda e: e.cumprod_(1), "copy_": lambda e: e.copy_(ones()), "add out=": lambda e: L.add(ones(), 1, out=e),
        "zero_": lambda e: e.zero_(), "fill_": lambda e: e.fill_(1), "fill_diagonal_": lambda e: e.fill_diagonal_(1.0),
        # activations in place
        "relu_": lambda e: e.relu_(), "torch.relu_": lambda e: L.relu_(e), "F.relu": lambda e: F.relu(e, inplace=True),
        "F.relu6": lambda e: F.relu6(e, inplace=True), "hardtanh_": lambda e: F.hardtanh_(e),
        "leaky_relu_": lambda e: F.leaky_relu_(e), "elu_": lambda e: F.elu_(e), "selu_": lambda e: F.selu_(e),
        "celu_": lambda e: F.celu_(e), "rrelu_": lambda e: F.rrelu_(e), "threshold_": lambda e: F.threshold_(e, 0.5, 0.0),
        "F.threshold": lambda e: F.threshold(e, 0.1, 0.0, inplace=True), "F.silu": lambda e: F.silu(e, inplace=True),
        "F.hardswish": lambda e: F.hardswish(e, inplace=True), "F.hardsigmoid": lambda e: F.hardsigmoid(e, inplace=True),
        "F.mish": lambda e: F.mish(e, inplace=True),
        # index and scatter writes
        "masked_fill_": lambda e: e.masked_fill_(ones() > 0, 1.0), "index_fill_": lambda e: e.index_fill_(1, idx(), 1.0),
        "index_put_": lambda e: e.index_put_((idx(),), L.tensor(1.0)), "setitem": lambda e: e.__setitem__(0, 1.0),
        "index_add_": lambda e: e.index_add_(1, idx(), L.ones(2, 1)), "index_copy_": lambda e: e.index_copy_(1, idx(), L.ones(2, 1)),
        "index_reduce_": lambda e: e.index_reduce_(1, idx(), L.ones(2, 1), "prod"),
        "scatter_": lambda e: e.scatter_(1, col(), 1.0), "scatter_add_": lambda e: e.scatter_add_(1, col(), L.ones(2, 1)),
        "scatter_reduce_": lambda e: e.scatter_reduce_(1, col(), L.ones(2, 1), "sum"),
        "masked_scatter_": lambda e: e.masked_scatter_(ones() > 0, ones()), "put_": lambda e: e.put_(idx(), L.tensor([1.0])),
    }


def _random_cases(L):
    F = L.nn.functional
    return {
        "uniform_": lambda e: e.uniform_(), "normal_": lambda e: e.normal_(), "random_": lambda e: e.random_(0, 5),
        "random_ bad bounds": lambda e: e.random_(5, 1), "uniform_ bad bounds": lambda e: e.uniform_(2, 1),
        "bernoulli_": lambda e: e.bernoulli_(), "bernoulli_ tensor p": lambda e: e.bernoulli_(L.full((2, 3), 0.5)),
        "exponential_": lambda e: e.exponential_(), "geometric_": lambda e: e.geometric_(0.5),
        "cauchy_": lambda e: e.cauchy_(), "log_normal_": lambda e: e.log_normal_(),
        "F.dropout": lambda e: F.dropout(e, 0.5, True, inplace=True), "F.dropout eval": lambda e: F.dropout(e, 0.5, False, inplace=True),
        "F.dropout p=0": lambda e: F.dropout(e, 0.0, True, inplace=True), "F.dropout p=1": lambda e: F.dropout(e, 1.0, True, inplace=True),
        "F.dropout1d": lambda e: F.dropout1d(e, 0.5, True, inplace=True), "F.alpha_dropout": lambda e: F.alpha_dropout(e, 0.5, True, inplace=True),
        "F.feature_alpha_dropout": lambda e: F.feature_alpha_dropout(e, 0.5, True, inplace=True),
        "rrelu_ training": lambda e: F.rrelu_(e, training=True),
    }


def _expanded(L, grad):
    if grad:  # a non-leaf view: torch's checks for leaves do not come first
        return (L.zeros(1, 3, requires_grad=True) + 0.5).expand(2, 3)
    return (L.zeros(1, 3) + 0.5).expand(2, 3)


def _outcome(L, fn, grad):
    """'ok', or the exception type with 'overlap' when it is torch's expanded-self message."""
    e = _expanded(L, grad)
    try:
        fn(e)
    except Exception as ex:  # the type is what is compared
        return type(ex).__name__ + (" overlap" if "single memory location" in str(ex) else "")
    return "ok"


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("name", sorted(_cases(torch)))
def test_expanded_self_like_torch(name, grad):
    assert _outcome(ember, _cases(ember)[name], grad) == _outcome(torch, _cases(torch)[name], grad)


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("name", sorted(_random_cases(torch)))
def test_expanded_self_random_like_torch(name, grad):
    """The outcome, and whether the default generator moved: refused before the draw or after it."""
    got = []
    for L in (ember, torch):
        L.manual_seed(7)
        before = L.get_rng_state().numpy().copy()
        out = _outcome(L, _random_cases(L)[name], grad)
        got.append((out, not np.array_equal(before, L.get_rng_state().numpy())))
    assert got[0] == got[1]


def test_contiguous_and_strided_selves_are_written():
    """The check refuses only shared elements: a transposed or sliced self is written as before."""
    x = ember.zeros(3, 4)
    x.t().relu_()
    x[:, ::2].uniform_()
    ember.nn.functional.relu6(x[1:], inplace=True)
    assert x[:, ::2].min().item() >= 0 and x[:, 1::2].abs().max().item() == 0


@pytest.mark.parametrize("name", ["masked_fill_", "index_fill_", "index_put_"])
def test_expanded_self_taken_with_torchs_deprecation_warning(name):
    """The ops torch still lets write into an expanded self warn as torch does, each call; a self that is not
    expanded gives no warning."""
    got = []
    for L in (ember, torch):
        fn = _cases(L)[name]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(_expanded(L, False))
            fn(L.zeros(2, 3))
        got.append([(w.category, re.sub(r" \(Triggered internally at .*\)$", "", str(w.message))) for w in caught])
    assert got[0] == got[1] and len(got[1]) == 1
