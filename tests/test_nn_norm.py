"""Normalization layers against torch: F.batch_norm / instance_norm / layer_norm / group_norm /
rms_norm / local_response_norm and their modules — outputs, gradients (and second-order
gradients), running buffers after several training steps, num_batches_tracked, state_dict
keys and versions, reprs, and torch's exception types."""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember

from ._stories import check_story

# torch is the oracle on tiny tensors: its intra-op threads only spin-wait on a shared machine
torch.set_num_threads(1)

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-10)}
GTOL = {"float32": dict(rtol=1e-3, atol=1e-4), "float64": dict(rtol=1e-7, atol=1e-9)}


def lib_tensor(lib, arr, grad=False):
    t = lib.tensor(arr.copy())
    return t.requires_grad_(True) if grad else t


def dname(d):
    return str(d).split(".")[-1]


def N(t):
    return t.detach().numpy()


def close(e, t, dtype, grad=False, what=""):
    tol = (GTOL if grad else TOL)[dtype]
    np.testing.assert_allclose(N(e), N(t), err_msg=what, **tol)


def compare_call(fn, arrays, grads, dtype, seed=0, gradgrad=False):
    """fn(lib, *tensors) on both libraries; compare the output, then the gradients of the inputs
    marked in grads under a random upstream gradient (and second-order gradients if asked)."""
    rng = np.random.default_rng(seed)
    tt = [lib_tensor(torch, a, g) for a, g in zip(arrays, grads)]
    et = [lib_tensor(ember, a, g) for a, g in zip(arrays, grads)]
    to = fn(torch, *tt)
    eo = fn(ember, *et)
    assert tuple(to.shape) == tuple(eo.shape)
    assert dname(to.dtype) == dname(eo.dtype)
    close(eo, to, dtype, what="output")
    idx = [i for i, g in enumerate(grads) if g]
    if not idx:
        return tt, et
    go = rng.standard_normal(tuple(to.shape)).astype(dtype)
    tg = torch.autograd.grad(to, [tt[i] for i in idx], torch.tensor(go), create_graph=gradgrad, allow_unused=True)
    eg = ember.autograd.grad(eo, [et[i] for i in idx], ember.tensor(go), create_graph=gradgrad, allow_unused=True)
    for k, (a, b) in enumerate(zip(tg, eg)):
        assert (a is None) == (b is None), f"grad {k}: torch {a is None}, ember {b is None}"
        if a is not None:
            close(b, a, dtype, grad=True, what=f"grad of input {idx[k]}")
    if gradgrad:
        pairs = [(a, b) for a, b in zip(tg, eg) if a is not None and a.requires_grad]
        vs = [rng.standard_normal(tuple(a.shape)).astype(dtype) for a, _ in pairs]
        t_sum = sum((a * torch.tensor(v)).sum() for (a, _), v in zip(pairs, vs))
        e_sum = sum((b * ember.tensor(v)).sum() for (_, b), v in zip(pairs, vs))
        tgg = torch.autograd.grad(t_sum, [tt[i] for i in idx], allow_unused=True)
        egg = ember.autograd.grad(e_sum, [et[i] for i in idx], allow_unused=True)
        for k, (a, b) in enumerate(zip(tgg, egg)):
            a = torch.zeros_like(tt[idx[k]]) if a is None else a
            b = ember.zeros_like(et[idx[k]]) if b is None else b
            close(b, a, dtype, grad=True, what=f"second-order grad of input {idx[k]}")
    return tt, et


def raises_like(fn):
    """fn(lib) raises the same exception type in torch and ember."""
    types = []
    for lib in (torch, ember):
        with pytest.raises(Exception) as info:
            fn(lib)
        types.append(info.type)
    assert types[0] is types[1], types


def copy_state(tmod, emod):
    emod.load_state_dict(OrderedDict((k, ember.tensor(v.detach().numpy().copy())) for k, v in tmod.state_dict().items()))


def randomize(tmod, seed):
    """Non-trivial affine parameters (torch initializes them to ones/zeros)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in tmod.parameters():
            p.copy_(torch.rand(p.shape, generator=g, dtype=p.dtype) + 0.5)


# ---- F.batch_norm ----------------------------------------------------------------------------

BN_SHAPES = [(6, 3), (4, 3, 5), (2, 3, 4, 5), (2, 3, 2, 3, 2)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", BN_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_batch_norm_functional(dtype, shape, training, affine):
    rng = np.random.default_rng(len(shape) * 7 + training)
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)
    w = rng.uniform(0.5, 1.5, c).astype(dtype)
    b = rng.standard_normal(c).astype(dtype)
    rm0 = rng.standard_normal(c).astype(dtype)
    rv0 = rng.uniform(0.5, 2, c).astype(dtype)
    bufs = {}

    def fn(lib, x, w, b):
        rm, rv = lib.tensor(rm0.copy()), lib.tensor(rv0.copy())
        bufs[lib.__name__] = (rm, rv)
        weight = w if affine != "none" else None
        bias = b if affine == "both" else None
        return lib.nn.functional.batch_norm(x, rm, rv, weight, bias, training, 0.3, 1e-4)

    compare_call(fn, [x, w, b], [True, affine != "none", affine == "both"], dtype,
                 gradgrad=len(shape) <= 3 and affine == "both")
    for t, e in zip(bufs["torch"], bufs["ember"]):
        close(e, t, dtype, what="running buffer")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_without_running_stats(dtype):
    x = np.random.default_rng(1).standard_normal((5, 4, 3)).astype(dtype)
    compare_call(lambda lib, x: lib.nn.functional.batch_norm(x, None, None, training=True), [x], [True], dtype,
                 gradgrad=True)


def test_batch_norm_half_input_with_float_params():
    x = np.random.default_rng(2).standard_normal((4, 3, 5)).astype(np.float16)
    outs = []
    for lib in (torch, ember):
        rm, rv = lib.zeros(3), lib.ones(3)
        outs.append(lib.nn.functional.batch_norm(lib.tensor(x), rm, rv, lib.ones(3), lib.zeros(3), True))
        outs.append(rm)
    assert outs[2].dtype == ember.float16
    np.testing.assert_allclose(N(outs[2]).astype(np.float32), N(outs[0]).astype(np.float32), atol=2e-3, rtol=2e-3)
    np.testing.assert_allclose(N(outs[3]), N(outs[1]), atol=1e-4)


# ---- BatchNorm modules: several training steps, then eval ------------------------------------

BN_MODULES = [("BatchNorm1d", (8, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (3, 3, 4, 4)),
              ("BatchNorm3d", (2, 3, 2, 3, 3))]
BN_CONFIGS = [dict(), dict(momentum=None), dict(affine=False), dict(track_running_stats=False),
              dict(momentum=0.5, eps=1e-3), dict(bias=False)]


@pytest.mark.parametrize("name,shape", BN_MODULES, ids=lambda v: v if isinstance(v, str) else "x".join(map(str, v)))
@pytest.mark.parametrize("config", BN_CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_module_steps(name, shape, config, dtype):
    tdtype = getattr(torch, dtype)
    tm = getattr(torch.nn, name)(3, dtype=tdtype, **config)
    em = getattr(ember.nn, name)(3, dtype=getattr(ember, dtype), **config)
    randomize(tm, 3)
    copy_state(tm, em)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    rng = np.random.default_rng(11)
    for step in range(3):
        x = (rng.standard_normal(shape) * (step + 1) + step).astype(dtype)
        tx, ex = lib_tensor(torch, x, True), lib_tensor(ember, x, True)
        to, eo = tm(tx), em(ex)
        close(eo, to, dtype, what=f"step {step} output")
        go = rng.standard_normal(shape).astype(dtype)
        to.backward(torch.tensor(go))
        eo.backward(ember.tensor(go))
        close(ex.grad, tx.grad, dtype, grad=True, what=f"step {step} input grad")
    for (k, tv), (k2, ev) in zip(tm.named_parameters(), em.named_parameters()):
        assert k == k2
        close(ev.grad, tv.grad, dtype, grad=True, what=f"{k}.grad")
    for (k, tv), (k2, ev) in zip(tm.state_dict().items(), em.state_dict().items()):
        assert k == k2
        assert dname(tv.dtype) == dname(ev.dtype)
        if tv.dtype == torch.int64:
            assert int(tv) == int(ev), k
        else:
            close(ev, tv, dtype, what=k)
    tm.eval()
    em.eval()
    x = rng.standard_normal(shape).astype(dtype)
    close(em(lib_tensor(ember, x)), tm(lib_tensor(torch, x)), dtype, what="eval output")


def test_batch_norm_state_dict_version_and_old_checkpoints():
    for lib in (torch, ember):
        m = lib.nn.BatchNorm2d(3)
        sd = m.state_dict()
        assert sd._metadata[""]["version"] == 2
        assert list(sd) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
        assert sd["num_batches_tracked"].dtype == lib.int64
    # a version-1 checkpoint has no num_batches_tracked: both libraries fill it in
    for lib in (torch, ember):
        m = lib.nn.BatchNorm1d(2)
        m.num_batches_tracked.fill_(5)
        old = OrderedDict((k, v) for k, v in m.state_dict().items() if k != "num_batches_tracked")
        old._metadata = OrderedDict({"": {"version": 1}})
        fresh = lib.nn.BatchNorm1d(2)
        result = fresh.load_state_dict(old)
        assert not result.missing_keys and not result.unexpected_keys
        assert int(fresh.num_batches_tracked) == 0


def test_norm_module_reprs_and_state_dicts():
    cases = [("BatchNorm1d", (4,), {}), ("BatchNorm2d", (3,), dict(momentum=None, affine=False)),
             ("BatchNorm3d", (2,), dict(track_running_stats=False, eps=1e-3)), ("InstanceNorm1d", (3,), {}),
             ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True)), ("InstanceNorm3d", (2,), {}),
             ("LayerNorm", (5,), {}), ("LayerNorm", ([2, 3],), dict(elementwise_affine=False)),
             ("LayerNorm", ((4,),), dict(bias=False, eps=1e-6)), ("GroupNorm", (2, 4), {}),
             ("GroupNorm", (1, 3), dict(affine=False)), ("RMSNorm", (3,), {}), ("RMSNorm", ([2, 2],), dict(eps=1e-5)),
             ("RMSNorm", (4,), dict(elementwise_affine=False)), ("LocalResponseNorm", (3,), {}),
             ("LocalResponseNorm", (2,), dict(alpha=0.1, beta=0.5, k=2.0))]
    for name, args, kwargs in cases:
        tm = getattr(torch.nn, name)(*args, **kwargs)
        em = getattr(ember.nn, name)(*args, **kwargs)
        assert repr(em) == repr(tm), name
        assert list(em.state_dict()) == list(tm.state_dict()), name
        assert em.state_dict()._metadata[""]["version"] == tm.state_dict()._metadata[""]["version"], name


def test_batch_norm_reset_and_num_batches_tracked():
    em = ember.nn.BatchNorm1d(3, momentum=None)
    x = ember.randn(5, 3)
    for _ in range(4):
        em(x)
    assert int(em.num_batches_tracked) == 4 and em.num_batches_tracked.dtype == ember.int64
    np.testing.assert_allclose(N(em.running_mean), N(x.mean(0)), rtol=1e-5, atol=1e-6)
    em.reset_running_stats()
    assert int(em.num_batches_tracked) == 0
    np.testing.assert_array_equal(N(em.running_var), np.ones(3, np.float32))
    em.eval()
    em(x)
    assert int(em.num_batches_tracked) == 0


# ---- layer_norm, group_norm, rms_norm, instance_norm, local_response_norm ---------------------

LN_CASES = [((4, 5), (5,)), ((2, 3, 4), (4,)), ((2, 3, 4), (3, 4)), ((3, 2, 2, 3), (2, 2, 3)), ((6,), (6,))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,ns", LN_CASES, ids=str)
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm_functional(dtype, shape, ns, affine):
    rng = np.random.default_rng(len(shape) + len(ns))
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.uniform(0.5, 1.5, ns).astype(dtype)
    b = rng.standard_normal(ns).astype(dtype)

    def fn(lib, x, w, b):
        return lib.nn.functional.layer_norm(x, list(ns), w if affine != "none" else None,
                                            b if affine == "both" else None, 1e-3)

    compare_call(fn, [x, w, b], [True, affine != "none", affine == "both"], dtype, gradgrad=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,groups", [((2, 4, 3), 2), ((3, 6, 2, 2), 3), ((2, 4), 4), ((2, 3, 5), 1)], ids=str)
def test_group_norm_functional(dtype, shape, groups):
    rng = np.random.default_rng(groups)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.uniform(0.5, 1.5, shape[1]).astype(dtype)
    b = rng.standard_normal(shape[1]).astype(dtype)
    compare_call(lambda lib, x, w, b: lib.nn.functional.group_norm(x, groups, w, b, 1e-4), [x, w, b],
                 [True, True, True], dtype, gradgrad=True)
    compare_call(lambda lib, x: lib.nn.functional.group_norm(x, groups), [x], [True], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,ns", [((3, 4), (4,)), ((2, 3, 4), (3, 4))], ids=str)
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm_functional(dtype, shape, ns, eps):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.uniform(0.5, 1.5, ns).astype(dtype)
    compare_call(lambda lib, x, w: lib.nn.functional.rms_norm(x, list(ns), w, eps), [x, w], [True, True], dtype,
                 gradgrad=True)
    compare_call(lambda lib, x: lib.nn.functional.rms_norm(x, list(ns), eps=eps), [x], [True], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("use_input_stats", [True, False])
@pytest.mark.parametrize("shape", [(2, 3, 5), (3, 2, 3, 4)], ids=str)
def test_instance_norm_functional(dtype, use_input_stats, shape):
    rng = np.random.default_rng(9)
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    w = rng.uniform(0.5, 1.5, c).astype(dtype)
    b = rng.standard_normal(c).astype(dtype)
    rm0 = rng.standard_normal(c).astype(dtype)
    rv0 = rng.uniform(0.5, 2, c).astype(dtype)
    bufs = {}

    def fn(lib, x, w, b):
        rm, rv = lib.tensor(rm0.copy()), lib.tensor(rv0.copy())
        bufs[lib.__name__] = (rm, rv)
        return lib.nn.functional.instance_norm(x, rm, rv, w, b, use_input_stats, 0.2, 1e-4)

    compare_call(fn, [x, w, b], [True, True, True], dtype, gradgrad=True)
    for t, e in zip(bufs["torch"], bufs["ember"]):
        close(e, t, dtype, what="running buffer")
    compare_call(lambda lib, x: lib.nn.functional.instance_norm(x), [x], [True], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 5, 4), (2, 6, 3, 3), (1, 4, 2, 2, 3)], ids=str)
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_local_response_norm_functional(dtype, shape, size):
    x = np.random.default_rng(size).standard_normal(shape).astype(dtype)
    compare_call(lambda lib, x: lib.nn.functional.local_response_norm(x, size, alpha=0.5, beta=0.75, k=1.5), [x],
                 [True], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normalization_modules(dtype):
    rng = np.random.default_rng(21)
    tdt, edt = getattr(torch, dtype), getattr(ember, dtype)
    cases = [("LayerNorm", ((3, 4),), {}, (2, 5, 3, 4)), ("LayerNorm", (4,), dict(bias=False), (3, 4)),
             ("GroupNorm", (2, 6), {}, (2, 6, 3)), ("RMSNorm", (4,), dict(eps=1e-4), (3, 2, 4)),
             ("LocalResponseNorm", (3,), {}, (2, 4, 3, 3)), ("InstanceNorm1d", (3,), dict(affine=True), (2, 3, 6)),
             ("InstanceNorm1d", (3,), {}, (3, 6)), ("InstanceNorm2d", (2,), dict(affine=True), (2, 2, 3, 3)),
             ("InstanceNorm3d", (2,), {}, (2, 2, 2, 2, 3))]
    for name, args, kwargs, shape in cases:
        extra = {} if name == "LocalResponseNorm" else dict(dtype=tdt)
        tm = getattr(torch.nn, name)(*args, **kwargs, **extra)
        em = getattr(ember.nn, name)(*args, **kwargs, **({} if name == "LocalResponseNorm" else dict(dtype=edt)))
        randomize(tm, 4)
        copy_state(tm, em)
        x = rng.standard_normal(shape).astype(dtype)
        tx, ex = lib_tensor(torch, x, True), lib_tensor(ember, x, True)
        to, eo = tm(tx), em(ex)
        close(eo, to, dtype, what=name)
        go = rng.standard_normal(shape).astype(dtype)
        to.backward(torch.tensor(go))
        eo.backward(ember.tensor(go))
        close(ex.grad, tx.grad, dtype, grad=True, what=name)
        for (k, tp), (_, ep) in zip(tm.named_parameters(), em.named_parameters()):
            close(ep.grad, tp.grad, dtype, grad=True, what=f"{name}.{k}")


@pytest.mark.parametrize("dims", [2, 3])
def test_instance_norm_module_tracks_running_stats(dims):
    shape = (3, 2, 5) if dims == 2 else (2, 2, 3, 4)
    name = f"InstanceNorm{dims - 1}d"
    tm = getattr(torch.nn, name)(2, affine=True, track_running_stats=True, momentum=0.3)
    em = getattr(ember.nn, name)(2, affine=True, track_running_stats=True, momentum=0.3)
    randomize(tm, 1)
    copy_state(tm, em)
    rng = np.random.default_rng(dims)
    for _ in range(3):
        x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
        close(em(ember.tensor(x)), tm(torch.tensor(x)), "float32")
    for k in ("running_mean", "running_var"):
        close(getattr(em, k), getattr(tm, k), "float32", what=k)
    assert int(em.num_batches_tracked) == int(tm.num_batches_tracked)
    tm.eval()
    em.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    close(em(ember.tensor(x)), tm(torch.tensor(x)), "float32", what="eval")


# ---- errors ---------------------------------------------------------------------------------

def f(lib):
    return lib.nn.functional


def test_norm_errors():
    raises_like(lambda lib: lib.nn.BatchNorm1d(3)(lib.randn(1, 3)))          # one value per channel: ValueError
    raises_like(lambda lib: lib.nn.BatchNorm2d(3)(lib.randn(1, 3, 1, 1)))
    raises_like(lambda lib: f(lib).batch_norm(lib.randn(1, 3, 1), None, None, training=True))
    raises_like(lambda lib: lib.nn.BatchNorm2d(3)(lib.randn(2, 3, 4)))         # wrong number of dims
    raises_like(lambda lib: lib.nn.BatchNorm1d(3)(lib.randn(2, 4)))            # channel mismatch
    raises_like(lambda lib: f(lib).batch_norm(lib.randn(2, 3), None, None))  # eval without running stats
    raises_like(lambda lib: f(lib).batch_norm(lib.randn(2, 3), lib.zeros(3), lib.ones(3), lib.ones(4)))
    raises_like(lambda lib: f(lib).batch_norm(lib.randn(2, 3), lib.zeros(3), lib.ones(3), training=True, eps=0.0))
    raises_like(lambda lib: f(lib).batch_norm(lib.ones(2, 3, dtype=lib.int64), None, None, training=True))
    raises_like(lambda lib: f(lib).batch_norm(lib.randn(2, 3), lib.zeros(3).double(), lib.ones(3).double()))
    raises_like(lambda lib: f(lib).layer_norm(lib.randn(2, 3), (4,)))
    raises_like(lambda lib: f(lib).layer_norm(lib.randn(2, 3), 3))
    raises_like(lambda lib: f(lib).layer_norm(lib.randn(2, 3), (3,), lib.ones(4)))
    raises_like(lambda lib: f(lib).layer_norm(lib.ones(2, 3, dtype=lib.int64), (3,)))
    raises_like(lambda lib: f(lib).group_norm(lib.randn(2, 3, 4), 2))
    raises_like(lambda lib: f(lib).group_norm(lib.randn(2, 4, 4), 2, lib.ones(3)))
    raises_like(lambda lib: f(lib).group_norm(lib.randn(1, 2, 1), 2))
    raises_like(lambda lib: f(lib).group_norm(lib.randn(4), 2))
    raises_like(lambda lib: lib.nn.GroupNorm(2, 3))
    raises_like(lambda lib: f(lib).instance_norm(lib.randn(2, 3, 1)))
    raises_like(lambda lib: lib.nn.InstanceNorm1d(3)(lib.randn(2, 3, 4, 5)))
    raises_like(lambda lib: lib.nn.InstanceNorm1d(3, affine=True)(lib.randn(2, 4, 5)))
    raises_like(lambda lib: f(lib).rms_norm(lib.randn(2, 3), (4,)))
    raises_like(lambda lib: f(lib).local_response_norm(lib.randn(2, 3), 2))


def test_instance_norm_channel_mismatch_warns_without_affine():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="does not match num_features"):
            lib.nn.InstanceNorm1d(3)(lib.randn(2, 4, 5))


def test_batch_norm_double_backward_is_differentiable_twice():
    """grad of grad through the training statistics (a gradient penalty on a BatchNorm net)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 3)).astype(np.float64)
    outs = []
    for lib in (torch, ember):
        bn = lib.nn.BatchNorm1d(3, dtype=lib.float64)
        lin = lib.nn.Linear(3, 3, dtype=lib.float64)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(np.eye(3) + 0.1))
            lin.bias.zero_()
        xt = lib.tensor(x, requires_grad=True)
        y = (bn(lin(xt)) ** 3).sum()
        (g,) = lib.autograd.grad(y, xt, create_graph=True)
        penalty = (g ** 2).sum()
        penalty.backward()
        outs.append((N(xt.grad), N(lin.weight.grad), N(bn.weight.grad)))
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-10)



@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_row_blocks(dtype, monkeypatch):
    """The layer-norm kernels work on blocks of rows (Note [Row blocks]); tiny blocks exercise the
    block boundaries, including a last partial block."""
    from ember._ops import norm
    monkeypatch.setattr(norm, "_BLOCK_BYTES", 3 * 6 * 4)
    rng = np.random.default_rng(12)
    x = (rng.standard_normal((7, 2, 6)) * 2 + 3).astype(dtype)
    w = rng.uniform(0.5, 1.5, 6).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    compare_call(lambda lib, x, w, b: lib.nn.functional.layer_norm(x, [6], w, b), [x, w, b], [True, True, True],
                 dtype)
    compare_call(lambda lib, x: lib.nn.functional.layer_norm(x, [2, 6]), [x], [True], dtype)


def test_torch_level_norm_functions():
    rng = np.random.default_rng(13)
    x = rng.standard_normal((4, 3, 5))
    w, b = rng.random(3) + 0.5, rng.standard_normal(3)
    for lib_fn, args in (("batch_norm", lambda L: (L.tensor(x), L.tensor(w), L.tensor(b), None, None, True, 0.1,
                                                   1e-5, False)),
                         ("instance_norm", lambda L: (L.tensor(x), L.tensor(w), L.tensor(b), None, None, True, 0.1,
                                                      1e-5, False)),
                         ("layer_norm", lambda L: (L.tensor(x), [3, 5])),
                         ("group_norm", lambda L: (L.tensor(x), 3, L.tensor(w), L.tensor(b))),
                         ("rms_norm", lambda L: (L.tensor(x), [5]))):
        close(getattr(ember, lib_fn)(*args(ember)), getattr(torch, lib_fn)(*args(torch)), "float64", what=lib_fn)


@pytest.mark.parametrize("affine,training", [(True, True), (False, True), (True, False)])
def test_batch_norm_split_across_intraop_threads(monkeypatch, affine, training):
    """With the split threshold at zero the batch-norm kernels run on two threads over channel ranges
    (odd C, so the ranges differ in size); outputs, running stats and gradients must match torch."""
    from ember._backend import parallel
    monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "threads", lambda: 2)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5, 3, 6)) * 3 + 1
    g = rng.standard_normal(x.shape)
    outs = []
    for lib in (torch, ember):
        bn = lib.nn.BatchNorm2d(5, affine=affine).double()
        if affine:
            with lib.no_grad():
                bn.weight.copy_(lib.from_numpy(np.linspace(0.5, 2, 5)))
                bn.bias.copy_(lib.from_numpy(np.linspace(-1, 1, 5)))
        bn.train(training)
        xs = lib.from_numpy(x.copy()).requires_grad_()
        y = bn(xs)
        y.backward(lib.from_numpy(g))
        grads = [xs.grad] + ([bn.weight.grad, bn.bias.grad] if affine else [])
        outs.append([a.detach().numpy() for a in [y, bn.running_mean, bn.running_var] + grads])
    for t, e in zip(*outs):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", ["bn-empty-train", "bn-empty-eval", "bn-empty-affine", "gn-empty", "bn-1d-eval",
                                  "bn-1d-train", "bn-2d"])
def test_norm_edge_inputs_like_torch(case):
    """Zero-size batches (torch: output = input * weight[0] + bias[0], running stats untouched, a gradient path to
    the parameters), group_norm on an empty batch, batch_norm of 1-d and 2-d inputs."""
    results = []
    for lib in (torch, ember):
        F = lib.nn.functional
        try:
            if case.startswith("bn-empty"):
                m = lib.nn.BatchNorm2d(3)
                with lib.no_grad():
                    m.weight.copy_(lib.tensor([2.0, 3.0, 4.0]))
                    m.bias.copy_(lib.tensor([0.5, 0.25, 1.0]))
                if case == "bn-empty-eval":
                    m.eval()
                x = lib.zeros(0, 3, 2, 2, requires_grad=True)
                y = m(x)
                y.sum().backward()
                got = (tuple(y.shape), m.running_mean.tolist(), m.running_var.tolist(),
                       int(m.num_batches_tracked), m.weight.grad.tolist(), tuple(x.grad.shape))
            elif case == "gn-empty":
                x = lib.zeros(0, 4, 3, requires_grad=True)
                y = F.group_norm(x, 2, lib.ones(4), lib.zeros(4))
                got = (tuple(y.shape), y.requires_grad)
            elif case == "bn-1d-eval":
                got = F.batch_norm(lib.arange(4.0), lib.zeros(4), lib.ones(4), training=False)
            elif case == "bn-1d-train":
                got = F.batch_norm(lib.arange(4.0), None, None, training=True)
            else:
                y = F.batch_norm(lib.arange(8.0).reshape(2, 4), lib.zeros(4), lib.ones(4), training=True)
                got = np.round(y.numpy(), 5).tolist()
        except Exception as e:  # noqa: BLE001 (the exception type is the result compared)
            got = type(e).__name__ if type(e).__name__ != "LinAlgError" else "RuntimeError"
        results.append(got)
    assert results[0] == results[1] or (isinstance(results[0], str) and results[1] == results[0]), results


@pytest.mark.parametrize("call", [
    lambda lib: f(lib).instance_norm(lib.randn(2, 3, 1)),
    lambda lib: lib.nn.InstanceNorm2d(3)(lib.randn(2, 3, 1, 1)),
    lambda lib: lib.nn.BatchNorm1d(3)(lib.randn(1, 3)),
], ids=["instance-1d", "instance-2d-module", "batch-one-value"])
def test_norm_error_messages(call):
    """One spatial element (instance norm) and one value per channel (batch norm) when training: torch's
    ValueError texts, which tell the two apart."""
    msgs = []
    for lib in (torch, ember):
        with pytest.raises(ValueError) as info:
            call(lib)
        msgs.append(str(info.value).replace("ember.", "torch."))
    assert msgs[1] == msgs[0]


def test_batch_norm_reset_and_num_batches_tracked_matches_torch():
    """test_batch_norm_reset_and_num_batches_tracked on both libraries: counters, dtypes and running stats."""
    def story(lib):
        lib.manual_seed(0)
        m = lib.nn.BatchNorm1d(3, momentum=None)
        x = lib.randn(5, 3)
        for _ in range(4):
            m(x)
        out = [m.num_batches_tracked.clone(), m.running_mean.clone(), m.running_var.clone()]
        m.reset_running_stats()
        out += [m.num_batches_tracked.clone(), m.running_mean.clone(), m.running_var.clone()]
        m.eval()
        return out + [m(x), m.num_batches_tracked]
    check_story(story, atol=3e-7)  # the running variance: float32 summation order
