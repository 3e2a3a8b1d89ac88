"""torch.nn.utils.prune against torch: the same modules (weights from NumPy) pruned the same way in both
libraries give the same masks, pruned weights, forward outputs, state_dict keys, hook objects, remove()
results and errors. Inputs with many tied magnitudes check that ties are broken as torch's topk breaks them;
random methods after the same manual_seed check that both draw the same numbers."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.utils.prune as eprune
import torch.nn.utils.prune as tprune


def _linear(lib, w, b):
    m = lib.nn.Linear(w.shape[1], w.shape[0])
    with lib.no_grad():
        m.weight.copy_(lib.tensor(w))
        m.bias.copy_(lib.tensor(b))
    return m


def _conv(lib, w):
    m = lib.nn.Conv2d(w.shape[1], w.shape[0], w.shape[2], bias=False)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(w))
    return m


def _weights(seed, shape, ties):
    rng = np.random.default_rng(seed)
    if ties:  # few distinct magnitudes: every boundary is a tie
        return (rng.integers(-3, 4, size=shape) * 0.5).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def _same(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())


def _same_module(em, tm):
    assert list(em.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in em.named_buffers()] == [n for n, _ in tm.named_buffers()]
    for (ke, ve), (kt, vt) in zip(em.state_dict().items(), tm.state_dict().items()):
        _same(ve, vt)
    assert [type(h).__name__ for h in em._forward_pre_hooks.values()] == \
        [type(h).__name__ for h in tm._forward_pre_hooks.values()]


def _run(fn, *args):
    x = np.random.default_rng(9).standard_normal((3, args[0].shape[1])).astype(np.float32)
    out = {}
    for lib, prune in ((ember, eprune), (torch, tprune)):
        m = _linear(lib, *args)
        fn(prune, m)
        out[lib.__name__] = (m, m(lib.tensor(x)))
    (em, ey), (tm, ty) = out["ember"], out["torch"]
    _same_module(em, tm)
    _same(em.weight, tm.weight)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-6, atol=1e-6)
    return em, tm


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("amount", [0, 3, 0.3, 1.0, 24])
def test_l1_unstructured(ties, amount):
    w, b = _weights(0, (4, 6), ties), _weights(1, (4,), ties)
    em, tm = _run(lambda p, m: p.l1_unstructured(m, "weight", amount=amount), w, b)
    assert eprune.is_pruned(em) and tprune.is_pruned(tm)
    assert isinstance(em.weight_orig, ember.nn.Parameter) and not isinstance(em.weight, ember.nn.Parameter)


@pytest.mark.parametrize("ties", [False, True])
def test_iterative_pruning_container_and_remove(ties):
    w, b = _weights(2, (4, 6), ties), _weights(3, (4,), ties)

    def prune_three_times(p, m):
        p.l1_unstructured(m, "weight", amount=5)
        p.ln_structured(m, "weight", amount=1, n=2, dim=0)
        p.l1_unstructured(m, "weight", amount=0.25, importance_scores=m.weight_orig.detach().abs() + 1)
        p.identity(m, "bias")

    em, tm = _run(prune_three_times, w, b)
    (eh,) = [h for h in em._forward_pre_hooks.values() if h._tensor_name == "weight"]
    (th,) = [h for h in tm._forward_pre_hooks.values() if h._tensor_name == "weight"]
    assert isinstance(eh, eprune.PruningContainer) and len(eh) == len(th) == 3
    assert [type(x).__name__ for x in eh] == [type(x).__name__ for x in th]
    # the hook recomputes the weight from weight_orig before a forward
    for m, lib in ((em, ember), (tm, torch)):
        with lib.no_grad():
            m.weight_orig.mul_(2)
        m(lib.zeros(1, 6))
    _same(em.weight, tm.weight)
    for m, prune in ((em, eprune), (tm, tprune)):
        prune.remove(m, "weight")
        prune.remove(m, "bias")
    _same_module(em, tm)
    assert isinstance(em.weight, ember.nn.Parameter) and not eprune.is_pruned(em)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("n,dim,amount", [(1, 0, 2), (2, -1, 0.5), (float("inf"), 1, 1), (3, 0, 0.0), ("fro", 0, 1)])
def test_ln_structured_conv(ties, n, dim, amount):
    w = _weights(4, (4, 3, 2, 2), ties)
    if ties:
        w[1] = w[2]  # two output channels of equal norm
    ms = []
    for lib, prune in ((ember, eprune), (torch, tprune)):
        m = _conv(lib, w)
        if n == "fro":  # torch.norm's "fro" over three dims is a matrix norm: both refuse it
            with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
                prune.ln_structured(m, "weight", amount=amount, n=n, dim=dim)
        else:
            prune.ln_structured(m, "weight", amount=amount, n=n, dim=dim)
        ms.append(m)
    _same_module(*ms)
    _same(*(m.weight for m in ms))


def test_random_methods_consume_the_generator_alike():
    w, b = _weights(5, (5, 8), False), _weights(6, (5,), False)

    def prune_randomly(p, m):
        (torch if p is tprune else ember).manual_seed(123)
        p.random_unstructured(m, "weight", amount=0.4)
        p.random_structured(m, "weight", amount=2, dim=0)
        p.random_unstructured(m, "bias", amount=2)

    _run(prune_randomly, w, b)
    _same(ember.rand(4), torch.rand(4))  # the generators are still in step
    ember.manual_seed(7)
    torch.manual_seed(7)
    e, t = eprune.RandomUnstructured(0.5), tprune.RandomUnstructured(0.5)
    _same(e.prune(ember.tensor(w)), t.prune(torch.tensor(w)))
    _same(ember.rand(4), torch.rand(4))


@pytest.mark.parametrize("ties", [False, True])
def test_global_unstructured_and_custom_from_mask(ties):
    w1, w2, b = _weights(7, (4, 6), ties), _weights(8, (3, 4), ties), _weights(9, (3,), ties)
    results = []
    for lib, prune in ((ember, eprune), (torch, tprune)):
        a, c = _linear(lib, w1, b[:1].repeat(4)), _linear(lib, w2, b)
        prune.custom_from_mask(c, "bias", mask=lib.tensor([1.0, 0.0, 1.0]))
        prune.l1_unstructured(a, "weight", amount=2)
        params = [(a, "weight"), (c, "weight"), (c, "bias")]
        prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=10,
                                  importance_scores={(c, "weight"): c.weight.detach() * 2})
        results.append((a, c))
    (ea, ec), (ta, tc) = results
    _same_module(ea, ta)
    _same_module(ec, tc)


def test_errors_match_torch():
    w, b = _weights(10, (4, 6), False), _weights(11, (4,), False)
    calls = [
        lambda p, m: p.l1_unstructured(m, "weight", amount=-1),
        lambda p, m: p.l1_unstructured(m, "weight", amount=1.5),
        lambda p, m: p.l1_unstructured(m, "weight", amount="3"),
        lambda p, m: p.l1_unstructured(m, "weight", amount=25),
        lambda p, m: p.ln_structured(m, "bias", amount=1, n=2, dim=0),
        lambda p, m: p.ln_structured(m, "weight", amount=1, n=2, dim=2),
        lambda p, m: p.remove(m, "weight"),
        lambda p, m: p.l1_unstructured(m, "weight", amount=1, importance_scores=m.weight[:2]),
        lambda p, m: p.global_unstructured(3, pruning_method=p.L1Unstructured, amount=1),
        lambda p, m: p.global_unstructured([(m, "weight")], pruning_method=p.LnStructured, amount=1, n=1, dim=0),
        lambda p, m: p.global_unstructured([(m, "weight")], pruning_method=p.L1Unstructured, importance_scores=[],
                                           amount=1),
    ]
    for call in calls:
        seen = []
        for lib, prune in ((ember, eprune), (torch, tprune)):
            m = _linear(lib, w, b)
            with pytest.raises(Exception) as info:
                call(prune, m)
            seen.append(info)
            assert "weight_orig" not in dict(m.named_parameters())  # a failed prune leaves the module as it was
        e, t = seen
        assert e.type is t.type, (e.value, t.value)
        assert str(e.value).split(" ")[:3] == str(t.value).split(" ")[:3]


def test_tied_selection_is_torch_topks():
    """The entries pruned by magnitude are the ones torch.topk picks among ties: both of its CPU paths
    (partial sort when k * 64 <= n, else nth_element), NaN included, many ties across the k-th value."""
    rng = np.random.default_rng(12)
    for case in range(60):
        n = int(rng.integers(1, 80)) if case % 2 else int(rng.integers(200, 3000))
        x = rng.integers(0, int(rng.integers(1, 6)), size=n).astype(np.float32)
        if case % 5 == 0:
            x[rng.integers(0, n, size=max(1, n // 10))] = np.nan
        k = int(rng.integers(0, n + 1)) if case % 3 else int(rng.integers(0, n // 64 + 1))
        for largest in (True, False):
            want = torch.topk(torch.from_numpy(x), k, largest=largest).indices.numpy()
            got = eprune._topk_indices(ember.tensor(x), k, largest)
            assert sorted(got.tolist()) == sorted(want.tolist()), (case, n, k, largest)
