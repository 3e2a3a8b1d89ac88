"""scaled_dot_product_attention, MultiheadAttention and the Transformer modules against torch.

Weights are copied from torch into ember through NumPy; outputs, attention weights and gradients
w.r.t. inputs, float masks and every parameter must agree. Dropout is 0 in comparisons, plus
tests that dropout in train mode really drops.
"""
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF

from ._stories import check_story

torch.set_num_threads(1)  # the oracle's thread pool only adds contention on a shared 2-core machine

TOL = {torch.float32: dict(rtol=2e-4, atol=2e-5), torch.float64: dict(rtol=1e-9, atol=1e-11)}
EDTYPE = {torch.float32: ember.float32, torch.float64: ember.float64}


def E(t):
    return ember.tensor(t.detach().numpy().copy(), requires_grad=t.requires_grad)


def N(t):
    return t.detach().numpy()


def close(a, b, dtype=torch.float64, what=""):
    assert tuple(a.shape) == tuple(b.shape), (what, a.shape, b.shape)
    np.testing.assert_allclose(N(b), N(a), err_msg=what, equal_nan=True, **TOL[dtype])


def copy_weights(tmod, emod):
    assert list(tmod.state_dict()) == list(emod.state_dict())
    emod.load_state_dict(OrderedDict((k, E(v)) for k, v in tmod.state_dict().items()))


def raises_like(fn):
    out = []
    for lib in (torch, ember):
        with pytest.raises(Exception) as info:
            fn(lib)
        out.append(info)
    assert out[0].type is out[1].type, (out[0].value, out[1].value)
    assert str(out[0].value) == str(out[1].value).replace("ember.", "torch."), (out[0].value, out[1].value)


def grads_agree(touts, eouts, tleaves, eleaves, dtype, gen):
    """Random upstream gradients through both graphs; every leaf's gradient must agree."""
    ups = [torch.randn(t.shape, generator=gen, dtype=dtype) for t in touts]
    tg = torch.autograd.grad(touts, tleaves, ups, allow_unused=True)
    eg = ember.autograd.grad(eouts, eleaves, [E(u) for u in ups], allow_unused=True)
    for i, (a, b) in enumerate(zip(tg, eg)):
        assert (a is None) == (b is None), i
        if a is not None:
            close(a, b, dtype, f"grad {i}")


# ---- scaled_dot_product_attention ---------------------------------------------------------------

def _mask(kind, gen, dtype, lead=(2, 3), L=4, S=6):
    """A mask of the given kind for (lead..., L, S) scores; torch tensor or None, plus is_causal."""
    if kind == "none":
        return None, False
    if kind == "causal":
        return None, True
    if kind == "bool2d":
        m = torch.rand(L, S, generator=gen) > 0.3
        m[:, 0] = True
        return m, False
    if kind == "bool4d":
        m = torch.rand(*lead[:1], 1, L, S, generator=gen) > 0.3
        m[..., 0] = True
        return m, False
    if kind == "float2d":
        return torch.randn(L, S, generator=gen, dtype=dtype), False
    if kind == "float4d_grad":
        return torch.randn(*lead, L, S, generator=gen, dtype=dtype).requires_grad_(), False
    if kind == "fully_masked_rows":
        m = torch.rand(L, S, generator=gen) > 0.3
        m[1] = False
        return m, False
    raise ValueError(kind)


SDPA_MASKS = ["none", "causal", "bool2d", "bool4d", "float2d", "float4d_grad", "fully_masked_rows"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("mask_kind", SDPA_MASKS)
@pytest.mark.parametrize("scale", [None, 0.3])
def test_sdpa_matches_torch(mask_kind, scale, dtype):
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 4, 8, generator=gen, dtype=dtype, requires_grad=True)
    k = torch.randn(2, 3, 6, 8, generator=gen, dtype=dtype, requires_grad=True)
    v = torch.randn(2, 3, 6, 5, generator=gen, dtype=dtype, requires_grad=True)
    mask, causal = _mask(mask_kind, gen, dtype)
    tleaves = [q, k, v]
    eleaves = [E(q), E(k), E(v)]
    emask = None if mask is None else E(mask)
    if mask is not None and mask.requires_grad:
        tleaves.append(mask)
        eleaves.append(emask)
    t = TF.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=scale)
    e = EF.scaled_dot_product_attention(eleaves[0], eleaves[1], eleaves[2], attn_mask=emask, is_causal=causal,
                                        scale=scale)
    assert e.dtype == EDTYPE[dtype]
    close(t, e, dtype)
    grads_agree([t], [e], tleaves, eleaves, dtype, gen)


@pytest.mark.parametrize("shapes", [((4, 8), (6, 8), (6, 5)), ((3, 4, 8), (3, 6, 8), (3, 6, 5)),
                                    ((2, 1, 4, 8), (1, 3, 6, 8), (1, 3, 6, 8)), ((3, 0, 8), (3, 6, 8), (3, 6, 8)),
                                    ((3, 4, 8), (3, 0, 8), (3, 0, 8))],
                         ids=["2d", "3d", "broadcast", "empty_q", "empty_kv"])
def test_sdpa_shapes(shapes):
    gen = torch.Generator().manual_seed(0)
    ts = [torch.randn(*s, generator=gen, dtype=torch.float64, requires_grad=True) for s in shapes]
    es = [E(t) for t in ts]
    t = TF.scaled_dot_product_attention(*ts)
    e = EF.scaled_dot_product_attention(*es)
    close(t, e)
    if t.numel():
        grads_agree([t], [e], ts, es, torch.float64, gen)


def test_sdpa_causal_rectangular_and_gqa():
    gen = torch.Generator().manual_seed(0)
    for lq, lk in ((3, 5), (5, 3)):
        q = torch.randn(1, 2, lq, 4, generator=gen, dtype=torch.float64)
        k = torch.randn(1, 2, lk, 4, generator=gen, dtype=torch.float64)
        v = torch.randn(1, 2, lk, 4, generator=gen, dtype=torch.float64)
        close(TF.scaled_dot_product_attention(q, k, v, is_causal=True),
              EF.scaled_dot_product_attention(E(q), E(k), E(v), is_causal=True))
    q = torch.randn(2, 4, 3, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 2, 5, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 1, 5, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    t = TF.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    es = [E(q), E(k), E(v)]
    e = EF.scaled_dot_product_attention(*es, enable_gqa=True)
    close(t, e)
    grads_agree([t], [e], [q, k, v], es, torch.float64, gen)


def test_sdpa_double_backward():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 4, generator=gen, dtype=torch.float64, requires_grad=True) for _ in range(3))
    m = torch.randn(3, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    results = []
    for lib, F, leaves in ((torch, TF, [q, k, v, m]), (ember, EF, [E(q), E(k), E(v), E(m)])):
        out = F.scaled_dot_product_attention(*leaves[:3], attn_mask=leaves[3])
        gs = lib.autograd.grad((out * out).sum(), leaves, create_graph=True)
        results.append(lib.autograd.grad(sum((g * g).sum() for g in gs), leaves))
    for a, b in zip(*results):
        close(a, b)


def test_sdpa_dropout():
    q = ember.randn(2, 2, 16, 8)
    k = ember.randn(2, 2, 16, 8)
    v = ember.ones(2, 2, 16, 8)
    ember.manual_seed(0)
    a = EF.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    b = EF.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert not np.allclose(N(a), N(b))
    # with v = 1 each output is the sum of the kept weights / (1 - p): 1 on average
    zeros = ember.zeros(1, 1, 200, 4)
    big = EF.scaled_dot_product_attention(zeros, zeros, ember.ones(1, 1, 200, 1), dropout_p=0.5)
    assert abs(float(big.mean()) - 1) < 0.05
    assert float(EF.scaled_dot_product_attention(q, k, v, dropout_p=1.0).abs().sum()) == 0
    qg = q.clone().requires_grad_()
    EF.scaled_dot_product_attention(qg, k, ember.randn(2, 2, 16, 8), dropout_p=0.3).sum().backward()
    assert qg.grad is not None and np.isfinite(N(qg.grad)).all()


def test_sdpa_errors_match_torch():
    def qkv(lib, **kw):
        lib.manual_seed(0)
        shapes = kw.pop("shapes", ((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 6)))
        return [lib.randn(*s) for s in shapes]

    F = {torch: TF, ember: EF}
    raises_like(lambda lib: F[lib].scaled_dot_product_attention(*qkv(lib), attn_mask=lib.ones(3, 5, dtype=lib.bool),
                                                                is_causal=True))
    raises_like(lambda lib: F[lib].scaled_dot_product_attention(*qkv(lib, shapes=((1, 2, 3, 4), (1, 2, 5, 4),
                                                                                 (1, 2, 3, 6)))))
    raises_like(lambda lib: F[lib].scaled_dot_product_attention(*qkv(lib, shapes=((1, 2, 3, 4), (1, 2, 5, 3),
                                                                                 (1, 2, 5, 6)))))
    raises_like(lambda lib: F[lib].scaled_dot_product_attention(*qkv(lib)[:2], qkv(lib)[2].double()))
    raises_like(lambda lib: F[lib].scaled_dot_product_attention(*qkv(lib), attn_mask=lib.zeros(3, 5, dtype=lib.int64)))
    raises_like(lambda lib: F[lib].scaled_dot_product_attention(*qkv(lib),
                                                                attn_mask=lib.zeros(3, 5, dtype=lib.float64)))
    raises_like(lambda lib: F[lib].scaled_dot_product_attention(*qkv(lib), dropout_p=1.5))
    raises_like(lambda lib: F[lib].scaled_dot_product_attention(lib.randn(4), lib.randn(4), lib.randn(4)))
    raises_like(lambda lib: F[lib].scaled_dot_product_attention(*qkv(lib, shapes=((2, 4, 3, 8), (2, 3, 5, 8),
                                                                                 (2, 3, 5, 8))), enable_gqa=True))
    raises_like(lambda lib: F[lib].scaled_dot_product_attention(*qkv(lib, shapes=((2, 4, 3, 8), (2, 2, 5, 8),
                                                                                 (2, 2, 5, 8)))))


# ---- MultiheadAttention -----------------------------------------------------------------------

MHA_MASKS = ["none", "kpm_bool", "kpm_float", "attn_bool2d", "attn_float2d", "attn_bool3d", "attn_float3d",
             "causal", "kpm_and_causal"]


def _mha_masks(kind, gen, dtype, batch, heads, L, S):
    """(attn_mask, key_padding_mask, is_causal) as torch tensors."""
    kpm_bool = torch.zeros(batch, S, dtype=torch.bool)
    kpm_bool[0, S - 2:] = True
    causal = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=dtype)[:, :S] if L == S else None
    if kind == "none":
        return None, None, False
    if kind == "kpm_bool":
        return None, kpm_bool, False
    if kind == "kpm_float":
        return None, torch.zeros(batch, S, dtype=dtype).masked_fill(kpm_bool, -1e9), False
    if kind == "attn_bool2d":
        m = torch.rand(L, S, generator=gen) > 0.7
        m[:, 0] = False
        return m, None, False
    if kind == "attn_float2d":
        return torch.randn(L, S, generator=gen, dtype=dtype), None, False
    if kind == "attn_bool3d":
        m = torch.rand(batch * heads, L, S, generator=gen) > 0.7
        m[..., 0] = False
        return m, None, False
    if kind == "attn_float3d":
        return torch.randn(batch * heads, L, S, generator=gen, dtype=dtype), None, False
    if kind == "causal":
        return causal, None, True
    if kind == "kpm_and_causal":
        return causal.isinf(), kpm_bool, True
    raise ValueError(kind)


def _mha_pair(dtype, **kw):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, **kw).to(dtype)
    em = ember.nn.MultiheadAttention(8, 2, **kw).to(EDTYPE[dtype])
    for name, p in tm.named_parameters():
        if name.endswith("bias") and "bias_" not in name:
            with torch.no_grad():
                p.normal_()  # torch initializes them to 0; random biases test their gradients
    copy_weights(tm, em)
    return tm, em


def _mha_inputs(gen, dtype, batch_first, self_attn, kdim=8, vdim=8, L=5, S=5, batch=3):
    def shape(n, d):
        return (batch, n, d) if batch_first else (n, batch, d)
    q = torch.randn(*shape(L, 8), generator=gen, dtype=dtype, requires_grad=True)
    if self_attn:
        return q, q, q
    k = torch.randn(*shape(S, kdim), generator=gen, dtype=dtype, requires_grad=True)
    v = torch.randn(*shape(S, vdim), generator=gen, dtype=dtype, requires_grad=True)
    return q, k, v


def _run_mha(tm, em, q, k, v, masks, dtype, gen, need_weights=True, average=True, check_grads=True):
    am, kpm, causal = masks
    eq = E(q)
    ek = eq if k is q else E(k)
    ev = ek if v is k else E(v)
    kw = dict(need_weights=need_weights, average_attn_weights=average, is_causal=causal)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        to, tw = tm(q, k, v, attn_mask=am, key_padding_mask=kpm, **kw)
        eo, ew = em(eq, ek, ev, attn_mask=None if am is None else E(am),
                    key_padding_mask=None if kpm is None else E(kpm), **kw)
    close(to, eo, dtype, "output")
    assert (tw is None) == (ew is None)
    if tw is not None:
        close(tw, ew, dtype, "weights")
    if check_grads and torch.is_grad_enabled():
        tleaves = [t for t in dict.fromkeys([q, k, v])] + list(tm.parameters())
        eleaves = [t for t in dict.fromkeys([eq, ek, ev])] + list(em.parameters())
        touts = [to] + ([tw] if tw is not None and not torch.isnan(tw).any() else [])
        eouts = [eo] + ([ew] if len(touts) == 2 else [])
        if not torch.isnan(to).any():
            grads_agree(touts, eouts, tleaves, eleaves, dtype, gen)


@pytest.mark.parametrize("batch_first", [False, True], ids=["tf", "bf"])
@pytest.mark.parametrize("weights", ["avg", "per_head", "none"])
@pytest.mark.parametrize("mask", MHA_MASKS)
def test_mha_masks_match_torch(mask, weights, batch_first):
    dtype = torch.float64
    gen = torch.Generator().manual_seed(1)
    tm, em = _mha_pair(dtype, batch_first=batch_first)
    q, k, v = _mha_inputs(gen, dtype, batch_first, self_attn=False)
    masks = _mha_masks(mask, gen, dtype, 3, 2, 5, 5)
    _run_mha(tm, em, q, k, v, masks, dtype, gen, need_weights=weights != "none", average=weights == "avg")


CONFIGS = {"packed": {}, "kdim_vdim": dict(kdim=3, vdim=7),
           "bias_kv_zero_attn": dict(add_bias_kv=True, add_zero_attn=True), "no_bias": dict(bias=False),
           "zero_attn": dict(add_zero_attn=True)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_mha_configs_match_torch(config, need_weights, dtype):
    kw = CONFIGS[config]
    gen = torch.Generator().manual_seed(2)
    tm, em = _mha_pair(dtype, batch_first=True, **kw)
    assert list(em.state_dict()) == list(tm.state_dict())
    q, k, v = _mha_inputs(gen, dtype, True, self_attn=False, kdim=kw.get("kdim", 8), vdim=kw.get("vdim", 8), S=6)
    masks = (torch.rand(5, 6, generator=gen) > 0.8, torch.zeros(3, 6, dtype=torch.bool), False)
    masks[1][1, 4:] = True
    _run_mha(tm, em, q, k, v, masks, dtype, gen, need_weights=need_weights)
    # self-attention (one packed projection) and key is value (split projection)
    if config in ("packed", "no_bias"):
        q, _, _ = _mha_inputs(gen, dtype, True, self_attn=True)
        _run_mha(tm, em, q, q, q, (None, None, False), dtype, gen, need_weights=need_weights)
        kv = torch.randn(3, 6, 8, generator=gen, dtype=dtype, requires_grad=True)
        _run_mha(tm, em, q, kv, kv, (None, None, False), dtype, gen, need_weights=need_weights)


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_unbatched(need_weights):
    gen = torch.Generator().manual_seed(3)
    tm, em = _mha_pair(torch.float64)
    q = torch.randn(4, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    k = torch.randn(6, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    kpm = torch.tensor([False, False, False, False, True, True])
    am = torch.randn(2, 4, 6, generator=gen, dtype=torch.float64)
    _run_mha(tm, em, q, k, k, (am, kpm.double().masked_fill(kpm, float("-inf")), False), torch.float64, gen,
             need_weights=need_weights)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("mask", ["kpm_fully_masked", "attn_fully_masked", "none"])
def test_mha_inference_fast_path_values(mask, need_weights):
    """eval + no_grad + batch_first self-attention: torch's fused path, including its NaN for all-masked queries."""
    gen = torch.Generator().manual_seed(4)
    tm, em = _mha_pair(torch.float32, batch_first=True)
    tm.eval()
    em.eval()
    x = torch.randn(3, 5, 8, generator=gen)
    am = kpm = None
    if mask == "kpm_fully_masked":
        kpm = torch.zeros(3, 5, dtype=torch.bool)
        kpm[1] = True
    elif mask == "attn_fully_masked":
        am = torch.zeros(5, 5, dtype=torch.bool)
        am[2] = True
    with torch.no_grad(), ember.no_grad():
        _run_mha(tm, em, x, x, x, (am, kpm, False), torch.float32, gen, need_weights=need_weights)
    # the same module in train mode (no fast path): all-masked queries give zeros without weights
    tm.train()
    em.train()
    _run_mha(tm, em, x, x, x, (am, kpm, False), torch.float32, gen, need_weights=need_weights, check_grads=False)


def test_mha_dropout_drops_in_training():
    em = ember.nn.MultiheadAttention(8, 2, dropout=0.5)
    x = ember.randn(6, 2, 8)
    a, wa = em(x, x, x)
    b, wb = em(x, x, x)
    assert not np.allclose(N(a), N(b)) and not np.allclose(N(wa), N(wb))
    em.eval()
    c, _ = em(x, x, x)
    d, _ = em(x, x, x)
    np.testing.assert_array_equal(N(c), N(d))


def test_mha_init_repr_and_errors():
    em = ember.nn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=4, vdim=6)
    tm = torch.nn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=4, vdim=6)
    assert repr(em) == repr(tm)
    assert [(n, tuple(p.shape)) for n, p in em.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    assert float(em.in_proj_bias.abs().sum()) == 0 and float(em.out_proj.bias.abs().sum()) == 0
    bound = np.sqrt(6 / (8 + 4))
    assert np.abs(N(em.k_proj_weight)).max() <= bound
    assert ember.nn.modules.activation.MultiheadAttention is ember.nn.MultiheadAttention
    raises_like(lambda lib: lib.nn.MultiheadAttention(8, 3))
    raises_like(lambda lib: lib.nn.MultiheadAttention(0, 2))

    def mha(lib):
        lib.manual_seed(0)
        return lib.nn.MultiheadAttention(8, 2)

    x3 = (5, 3, 8)
    raises_like(lambda lib: mha(lib)(lib.randn(*x3), lib.randn(5, 8), lib.randn(5, 8)))
    raises_like(lambda lib: mha(lib)(lib.randn(*x3), lib.randn(*x3), lib.randn(*x3), attn_mask=lib.zeros(4, 5)))
    raises_like(lambda lib: mha(lib)(lib.randn(*x3), lib.randn(*x3), lib.randn(*x3), attn_mask=lib.zeros(2, 5, 5)))
    raises_like(lambda lib: mha(lib)(lib.randn(*x3), lib.randn(*x3), lib.randn(*x3), is_causal=True))
    raises_like(lambda lib: mha(lib)(lib.randn(*x3), lib.randn(*x3), lib.randn(*x3),
                                     key_padding_mask=lib.zeros(3, 4, dtype=lib.bool)))
    raises_like(lambda lib: mha(lib)(lib.randn(*x3), lib.randn(*x3), lib.randn(*x3),
                                     key_padding_mask=lib.zeros(3, 5, dtype=lib.int64)))
    raises_like(lambda lib: mha(lib)(lib.randn(5, 3, 4), lib.randn(5, 3, 4), lib.randn(5, 3, 4)))
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask"):
            mha(lib)(lib.randn(*x3), lib.randn(*x3), lib.randn(*x3), key_padding_mask=lib.zeros(3, 5, dtype=lib.bool),
                     attn_mask=lib.zeros(5, 5))


# ---- Transformer layers -------------------------------------------------------------------------

def _activation(name, lib):
    return {"relu": "relu", "gelu": "gelu", "gelu_module": lib.nn.GELU(), "silu_fn": lib.nn.functional.silu}[name]


@pytest.mark.parametrize("batch_first", [False, True], ids=["tf", "bf"])
@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_module", "silu_fn"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post", "pre"])
def test_encoder_layer_matches_torch(norm_first, activation, batch_first):
    dtype = torch.float64
    gen = torch.Generator().manual_seed(5)
    torch.manual_seed(0)
    kw = dict(dim_feedforward=16, dropout=0.0, norm_first=norm_first, batch_first=batch_first, layer_norm_eps=1e-6)
    tl = torch.nn.TransformerEncoderLayer(8, 2, activation=_activation(activation, torch), **kw).to(dtype)
    el = ember.nn.TransformerEncoderLayer(8, 2, activation=_activation(activation, ember), **kw).to(EDTYPE[dtype])
    copy_weights(tl, el)
    assert el.activation_relu_or_gelu == tl.activation_relu_or_gelu
    x = torch.randn(*((3, 5, 8) if batch_first else (5, 3, 8)), generator=gen, dtype=dtype, requires_grad=True)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=dtype)
    kpm = torch.zeros(3, 5, dtype=torch.bool)
    kpm[2, 3:] = True
    for m, p, causal in ((None, None, False), (mask, None, True), (mask, kpm, False), (None, kpm, False)):
        ex = E(x)
        t = tl(x, src_mask=m, src_key_padding_mask=p, is_causal=causal)
        e = el(ex, src_mask=None if m is None else E(m), src_key_padding_mask=None if p is None else E(p),
               is_causal=causal)
        close(t, e, dtype)
        grads_agree([t], [e], [x] + list(tl.parameters()), [ex] + list(el.parameters()), dtype, gen)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post", "pre"])
def test_decoder_layer_matches_torch(norm_first, activation):
    dtype = torch.float64
    gen = torch.Generator().manual_seed(6)
    torch.manual_seed(0)
    kw = dict(dim_feedforward=16, dropout=0.0, norm_first=norm_first, activation=activation)
    tl = torch.nn.TransformerDecoderLayer(8, 2, **kw).to(dtype)
    el = ember.nn.TransformerDecoderLayer(8, 2, **kw).to(EDTYPE[dtype])
    copy_weights(tl, el)
    tgt = torch.randn(4, 3, 8, generator=gen, dtype=dtype, requires_grad=True)
    mem = torch.randn(6, 3, 8, generator=gen, dtype=dtype, requires_grad=True)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=dtype)
    mkpm = torch.zeros(3, 6, dtype=torch.bool)
    mkpm[1, 4:] = True
    etgt, emem = E(tgt), E(mem)
    t = tl(tgt, mem, tgt_mask=tmask, memory_key_padding_mask=mkpm, tgt_is_causal=True)
    e = el(etgt, emem, tgt_mask=E(tmask), memory_key_padding_mask=E(mkpm), tgt_is_causal=True)
    close(t, e, dtype)
    grads_agree([t], [e], [tgt, mem] + list(tl.parameters()), [etgt, emem] + list(el.parameters()), dtype, gen)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post", "pre"])
def test_transformer_matches_torch(norm_first, dtype):
    gen = torch.Generator().manual_seed(7)
    torch.manual_seed(0)
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
              batch_first=True, norm_first=norm_first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tt = torch.nn.Transformer(**kw).to(dtype)
        et = ember.nn.Transformer(**kw).to(EDTYPE[dtype])
    copy_weights(tt, et)
    assert repr(et) == repr(tt)
    src = torch.randn(3, 6, 8, generator=gen, dtype=dtype, requires_grad=True)
    tgt = torch.randn(3, 4, 8, generator=gen, dtype=dtype, requires_grad=True)
    skpm = torch.zeros(3, 6, dtype=torch.bool)
    skpm[0, 4:] = True
    tmask = tt.generate_square_subsequent_mask(4, dtype=dtype)
    esrc, etgt = E(src), E(tgt)
    t = tt(src, tgt, tgt_mask=tmask, src_key_padding_mask=skpm, memory_key_padding_mask=skpm)
    e = et(esrc, etgt, tgt_mask=E(tmask), src_key_padding_mask=E(skpm), memory_key_padding_mask=E(skpm))
    close(t, e, dtype)
    grads_agree([t], [e], [src, tgt] + list(tt.parameters()), [esrc, etgt] + list(et.parameters()), dtype, gen)


def test_transformer_without_bias_and_unbatched():
    torch.manual_seed(0)
    kw = dict(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16, dropout=0.0,
              bias=False, layer_norm_eps=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tt = torch.nn.Transformer(**kw, activation=TF.gelu).double()
        et = ember.nn.Transformer(**kw, activation=EF.gelu).double()
    copy_weights(tt, et)
    gen = torch.Generator().manual_seed(9)
    src = torch.randn(5, 2, 8, generator=gen, dtype=torch.float64)
    tgt = torch.randn(4, 2, 8, generator=gen, dtype=torch.float64)
    close(tt(src, tgt), et(E(src), E(tgt)))
    close(tt(src[:, 0], tgt[:, 0]), et(E(src[:, 0]), E(tgt[:, 0])))


def test_encoder_stack_eval_nested_padding():
    """TransformerEncoder in eval without grad: torch's nested-tensor path gives zeros at padded positions."""
    gen = torch.Generator().manual_seed(8)
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    el = ember.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    copy_weights(tl, el)
    te = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8)).eval()
    ee = ember.nn.TransformerEncoder(el, 2, norm=ember.nn.LayerNorm(8)).eval()
    copy_weights(te, ee)
    x = torch.randn(3, 5, 8, generator=gen)
    left = torch.tensor([[False] * 5, [False, False, False, True, True], [True] * 5])
    not_left = torch.tensor([[True, False, False, False, False], [False] * 5, [False] * 5])
    for kpm in (left, not_left):
        with torch.no_grad(), ember.no_grad():
            close(te(x, src_key_padding_mask=kpm), ee(E(x), src_key_padding_mask=E(kpm)), torch.float32)
        # with grad enabled and parameters requiring grad torch takes the ordinary path
        close(te(x, src_key_padding_mask=kpm), ee(E(x), src_key_padding_mask=E(kpm)), torch.float32)
    with torch.no_grad(), ember.no_grad():
        mask = torch.nn.Transformer.generate_square_subsequent_mask(5)
        close(te(x, mask=mask, is_causal=True), ee(E(x), mask=E(mask), is_causal=True), torch.float32)


def test_encoder_nested_tensor_warning():
    for lib in (torch, ember):
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16)
        with pytest.warns(UserWarning, match="enable_nested_tensor is True, but self.use_nested_tensor is False "
                                             "because encoder_layer.self_attn.batch_first was not True"):
            enc = lib.nn.TransformerEncoder(layer, 2)
        assert enc.use_nested_tensor is False and enc.enable_nested_tensor is True
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def test_square_subsequent_mask_and_causal_detection():
    for n in (1, 4):
        t = torch.nn.Transformer.generate_square_subsequent_mask(n)
        e = ember.nn.Transformer.generate_square_subsequent_mask(n)
        np.testing.assert_array_equal(N(t), N(e))
        assert e.dtype == ember.float32
    assert ember.nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64).dtype == ember.float64
    from ember.nn.modules.transformer import _detect_is_causal_mask
    m = ember.nn.Transformer.generate_square_subsequent_mask(4)
    assert _detect_is_causal_mask(m) is True
    assert _detect_is_causal_mask(m, size=3) is False
    assert _detect_is_causal_mask(ember.zeros(4, 4)) is False
    assert _detect_is_causal_mask(None, True) is True


def test_transformer_dropout_and_errors():
    torch.manual_seed(0)
    et = ember.nn.Transformer(8, 2, 1, 1, 16, dropout=0.5)
    src = ember.randn(5, 2, 8)
    tgt = ember.randn(4, 2, 8)
    a = et(src, tgt)
    b = et(src, tgt)
    assert not np.allclose(N(a), N(b))
    et.eval()
    np.testing.assert_array_equal(N(et(src, tgt)), N(et(src, tgt)))

    def tr(lib):
        lib.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.nn.Transformer(8, 2, 1, 1, 16)

    raises_like(lambda lib: tr(lib)(lib.randn(5, 2, 8), lib.randn(4, 3, 8)))
    raises_like(lambda lib: tr(lib)(lib.randn(5, 2, 8), lib.randn(4, 2, 6)))
    raises_like(lambda lib: lib.nn.TransformerEncoderLayer(8, 2, activation="tanh"))


# ---- the seeded dropout tests above, drawn again on torch (issue 19) ------------------------------------------

def _story_sdpa_dropout(lib):
    lib.manual_seed(0)
    sdpa = lib.nn.functional.scaled_dot_product_attention
    q, k, v = lib.randn(2, 2, 16, 8), lib.randn(2, 2, 16, 8), lib.ones(2, 2, 16, 8)
    out = [sdpa(q, k, v, dropout_p=0.5), sdpa(q, k, v, dropout_p=0.5), sdpa(q, k, v, dropout_p=1.0)]
    qg = q.clone().requires_grad_()
    y = sdpa(qg, k, lib.randn(2, 2, 16, 8), dropout_p=0.3)
    y.sum().backward()
    return out + [y, qg.grad]


def _story_mha_dropout(lib):
    lib.manual_seed(1)
    m = lib.nn.MultiheadAttention(8, 2, dropout=0.5)
    x = lib.randn(6, 2, 8, requires_grad=True)
    out = [*m(x, x, x), *m(x, x, x)]
    out[0].sum().backward()
    m.eval()
    return out + [x.grad, *m(x, x, x)]


@pytest.mark.parametrize("story", [_story_sdpa_dropout, _story_mha_dropout], ids=["sdpa_dropout", "mha_dropout"])
def test_seeded_attention_dropout_matches_torch(story):
    """test_sdpa_dropout / test_mha_dropout_drops_in_training seeded alike on both libraries: torch's masks, outputs,
    weights and gradients (within 1e-5: the matmuls' summation order)."""
    check_story(story, atol=1e-5)
