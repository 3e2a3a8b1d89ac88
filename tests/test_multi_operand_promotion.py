"""Type promotion in multi-operand ops against torch 2.13: which mixed-dtype calls promote (and to what),
which raise (and with which exception and message). Note [einsum dtypes] in ember/_ops/linalg_contract.py."""
import itertools

import numpy as np
import pytest
import torch

import ember

EQUATIONS = [("i,j->ij", [(4,), (3,)]), ("ij,jk->ik", [(2, 3), (3, 2)]), ("i,i->", [(3,), (3,)]),
             ("i,i->i", [(3,), (3,)]), ("ij,k->", [(2, 3), (2,)]), ("bi,b->b", [(2, 3), (2,)]),
             ("i,j,k->ijk", [(2,), (3,), (2,)]), ("ij,jk,k->i", [(2, 3), (3, 2), (2,)]),
             ("i,j,i->j", [(2,), (3,), (2,)]), ("ij,k,jk->i", [(2, 3), (2,), (3, 2)]), ("ii->i", [(3, 3)])]
DTYPES = ["int64", "float32", "bool", "int32", "float64", "float16", "complex64"]


def _outcome(lib, fn, dtypes, shapes, seed=0):
    rng = np.random.default_rng(seed)
    ops = [lib.tensor(rng.integers(0, 3, s)).to(getattr(lib, d)) for s, d in zip(shapes, dtypes)]
    try:
        r = fn(lib, *ops)
    except Exception as e:  # the exception type and text are what is compared
        return type(e).__name__, str(e)
    wide = lib.complex128 if r.is_complex() else lib.float64
    return str(r.dtype), r.to(wide).tolist()


@pytest.mark.parametrize("eq,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_promotes_like_torch(eq, shapes):
    combos = list(itertools.product(DTYPES, repeat=len(shapes)))
    if len(shapes) == 3:
        combos = combos[::5]  # a spread of the 343 triples keeps the test short
    for dtypes in combos:
        fn = lambda L, *ops: L.einsum(eq, *ops)  # noqa: E731
        assert _outcome(ember, fn, dtypes, shapes) == _outcome(torch, fn, dtypes, shapes), dtypes


def test_einsum_issue_example_and_gradient():
    x = np.arange(3, dtype=np.float32)
    e_w = ember.tensor(x, requires_grad=True)
    t_w = torch.tensor(x, requires_grad=True)
    e = ember.einsum("i,j->ij", ember.arange(4), e_w)
    t = torch.einsum("i,j->ij", torch.arange(4), t_w)
    assert str(e.dtype) == str(t.dtype) == "torch.float32"
    g = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    e.backward(ember.tensor(g))
    t.backward(torch.tensor(g))
    np.testing.assert_allclose(e_w.grad.numpy(), t_w.grad.numpy(), rtol=1e-6)


OPS = {
    "addr": (lambda L, a, b: L.addr(L.ones(3, 2, dtype=b.dtype), a, b), [(3,), (2,)]),
    "addr_input": (lambda L, a, b: L.addr(a.reshape(3, 1).expand(3, 2), b[:3], b[:2]), [(3,), (3,)]),
    "dist": (lambda L, a, b: L.dist(a, b), [(3,), (3,)]),
    "vecdot": (lambda L, a, b: L.linalg.vecdot(a, b), [(2, 3), (2, 3)]),
    "searchsorted": (lambda L, a, b: L.searchsorted(L.arange(4).to(a.dtype), b), [(4,), (3,)]),
    "bucketize": (lambda L, a, b: L.bucketize(a, L.arange(4).to(b.dtype)), [(3,), (4,)]),
    "cross": (lambda L, a, b: L.linalg.cross(a, b), [(2, 3), (2, 3)]),
    "bmm": (lambda L, a, b: L.bmm(a, b), [(2, 2, 3), (2, 3, 2)]),
    "matmul": (lambda L, a, b: L.matmul(a, b), [(2, 3), (3, 2)]),
    "dot": (lambda L, a, b: L.dot(a, b), [(3,), (3,)]),
    "outer": (lambda L, a, b: L.outer(a, b), [(3,), (2,)]),
    "kron": (lambda L, a, b: L.kron(a, b), [(2, 2), (2, 1)]),
    "tensordot": (lambda L, a, b: L.tensordot(a, b, dims=1), [(2, 3), (3, 2)]),
    "inner": (lambda L, a, b: L.inner(a, b), [(2, 3), (2, 3)]),
    "addmm_input": (lambda L, a, b: L.addmm(a[:, :2], L.ones(2, 3, dtype=b.dtype), L.ones(3, 2, dtype=b.dtype)),
                    [(2, 3), (3, 2)]),
    "addcmul": (lambda L, a, b: L.addcmul(a, a, b), [(3,), (3,)]),
    "cdist": (lambda L, a, b: L.cdist(a, b), [(2, 3), (4, 3)]),
    "trapezoid": (lambda L, a, b: L.trapezoid(a, b), [(3,), (3,)]),
    "cartesian_prod": (lambda L, a, b: L.cartesian_prod(a, b), [(3,), (2,)]),
    "block_diag": (lambda L, a, b: L.block_diag(a, b), [(2, 3), (3, 2)]),
}
PAIRS = [("int64", "float32"), ("float32", "int64"), ("float32", "float64"), ("bool", "float32"),
         ("float32", "bool"), ("uint8", "int8"), ("complex64", "float32"), ("int64", "int64"),
         ("float16", "bfloat16"), ("bool", "bool")]


@pytest.mark.parametrize("name", sorted(OPS))
def test_two_operand_ops_like_torch(name):
    fn, shapes = OPS[name]
    for dtypes in PAIRS:
        assert _outcome(ember, fn, dtypes, shapes) == _outcome(torch, fn, dtypes, shapes), dtypes
