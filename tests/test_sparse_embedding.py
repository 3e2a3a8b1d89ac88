"""Embedding(sparse=True), F.embedding(sparse=True) and F.embedding_bag(sparse=True) give the table a sparse
COO gradient, as torch; optim.SGD (with momentum) and optim.SparseAdam step on it, Adam refuses it."""
import numpy as np
import pytest
import torch

import ember

IDX = np.array([[1, 2, 1], [4, 0, 1]])


def _pair(shape=(5, 3), seed=0):
    w = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.from_numpy(w.copy()).requires_grad_(), ember.from_numpy(w.copy()).requires_grad_()


def _same_sparse(e, t):
    assert t.is_sparse and e.is_sparse
    assert tuple(e.shape) == tuple(t.shape) and str(e.dtype) == str(t.dtype)
    np.testing.assert_allclose(e.to_dense().numpy(), t.to_dense().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 0}, {"padding_idx": -4}])
def test_embedding_sparse_grad(kwargs):
    tw, ew = _pair()
    g = np.random.default_rng(1).standard_normal((2, 3, 3)).astype(np.float32)
    torch.nn.functional.embedding(torch.from_numpy(IDX), tw, sparse=True, **kwargs).backward(torch.from_numpy(g))
    ember.nn.functional.embedding(ember.from_numpy(IDX), ew, sparse=True, **kwargs).backward(ember.from_numpy(g))
    _same_sparse(ew.grad, tw.grad)
    # one uncoalesced entry per looked-up index (padding left out), in lookup order, as torch
    np.testing.assert_array_equal(ew.grad._indices().numpy(), tw.grad._indices().numpy())
    np.testing.assert_allclose(ew.grad._values().numpy(), tw.grad._values().numpy(), rtol=1e-6)
    assert ew.grad.is_coalesced() == tw.grad.is_coalesced()


def test_sparse_grads_accumulate_and_mix():
    tw, ew = _pair()
    for lib, w in ((torch, tw), (ember, ew)):
        idx = lib.from_numpy(IDX)
        lib.nn.functional.embedding(idx, w, sparse=True).sum().backward()
        lib.nn.functional.embedding(idx[:1], w, sparse=True).pow(2).sum().backward()
    _same_sparse(ew.grad, tw.grad)
    tw2, ew2 = _pair(seed=3)
    for lib, w in ((torch, tw2), (ember, ew2)):  # a dense term in the same backward makes the gradient dense
        (lib.nn.functional.embedding(lib.from_numpy(IDX), w, sparse=True).sum() + (w * 2).sum()).backward()
    assert not tw2.grad.is_sparse and not ew2.grad.is_sparse
    np.testing.assert_allclose(ew2.grad.numpy(), tw2.grad.numpy(), rtol=1e-6)
    tw3, ew3 = _pair(seed=4)
    tg = torch.autograd.grad(torch.nn.functional.embedding(torch.from_numpy(IDX), tw3, sparse=True).sum(), tw3)[0]
    eg = ember.autograd.grad(ember.nn.functional.embedding(ember.from_numpy(IDX), ew3, sparse=True).sum(), ew3)[0]
    _same_sparse(eg, tg)


@pytest.mark.parametrize("mode,psw", [("sum", False), ("mean", False), ("sum", True)])
def test_embedding_bag_sparse_grad(mode, psw):
    tw, ew = _pair()
    idx = np.array([1, 2, 4, 1, 0])
    off = np.array([0, 2])
    w = np.linspace(0.5, 1.5, 5).astype(np.float32)
    outs = []
    for lib, table in ((torch, tw), (ember, ew)):
        kw = {"per_sample_weights": lib.from_numpy(w)} if psw else {}
        out = lib.nn.functional.embedding_bag(lib.from_numpy(idx), table, lib.from_numpy(off), mode=mode,
                                              sparse=True, padding_idx=0, **kw)
        out.backward(lib.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3)))
        outs.append(out)
    _same_sparse(ew.grad, tw.grad)
    np.testing.assert_array_equal(ew.grad._indices().numpy(), tw.grad._indices().numpy())


def test_scale_grad_by_freq_refused_with_sparse():
    for lib in (torch, ember):
        w = lib.ones(5, 3, requires_grad=True)
        out = lib.nn.functional.embedding(lib.from_numpy(IDX), w, sparse=True, scale_grad_by_freq=True)
        with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse gradients"):
            out.sum().backward()


@pytest.mark.parametrize("make_opt", [
    lambda lib, ps: lib.optim.SGD(ps, lr=0.1),
    lambda lib, ps: lib.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1),
    lambda lib, ps: lib.optim.SparseAdam(ps, lr=0.05),
    lambda lib, ps: lib.optim.SparseAdam(ps, lr=0.05, betas=(0.8, 0.9), maximize=True),
    lambda lib, ps: lib.optim.SparseAdam(ps, lr=0.05, eps=0.5),  # eps the size of sqrt(v): its sign shows
], ids=["sgd", "sgd-momentum", "sparse-adam", "sparse-adam-maximize", "sparse-adam-eps"])
def test_optimizers_step_on_sparse_grads(make_opt):
    results = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        m = lib.nn.Embedding(6, 3, sparse=True)
        with lib.no_grad():
            m.weight.copy_(lib.from_numpy(np.arange(18, dtype=np.float32).reshape(6, 3) / 7))
        assert repr(m) == "Embedding(6, 3, sparse=True)"
        opt = make_opt(lib, m.parameters())
        for step in range(3):
            opt.zero_grad()
            idx = lib.from_numpy(np.array([[1, 2, 1], [4, step, 1]]))
            m(idx).pow(2).sum().backward()
            assert m.weight.grad.is_sparse
            opt.step()
        results.append(m.weight.detach().numpy().copy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


def test_optimizer_errors():
    for lib in (torch, ember):
        m = lib.nn.Embedding(5, 3, sparse=True)
        m(lib.from_numpy(IDX)).sum().backward()
        with pytest.raises(RuntimeError, match="Adam does not support sparse gradients"):
            lib.optim.Adam(m.parameters()).step()
        with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
            lib.optim.SGD(m.parameters(), lr=0.1, weight_decay=0.1).step()
        p = lib.ones(2, requires_grad=True)
        p.sum().backward()
        with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
            lib.optim.SparseAdam([p]).step()
        with pytest.raises(ValueError, match="Invalid learning rate"):
            lib.optim.SparseAdam([p], lr=0.0)
        with pytest.raises(ValueError, match="Complex params at indices"):
            lib.optim.SparseAdam([lib.zeros(2, dtype=lib.complex64, requires_grad=True)])
