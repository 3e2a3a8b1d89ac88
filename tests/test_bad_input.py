"""Bad input gets torch's exception, never a silent answer (issue 18): each call runs on torch and ember; both must
raise the same exception type with the same message (messages name the op and the dtype)."""
import numpy as np
import pytest
import torch

import ember


def _complex(t):
    return t.tensor(np.random.RandomState(0).randn(3, 4) + 1j * np.random.RandomState(1).randn(3, 4),
                    dtype=t.complex64)


# complex input to ordering ops (ember used to answer silently with NumPy's lexicographic order)
COMPLEX_ORDERING = {
    "argmax": lambda t, c: t.argmax(c, 1), "argmax-all": lambda t, c: t.argmax(c), "argmin": lambda t, c: t.argmin(c, 1),
    "amax": lambda t, c: t.amax(c, 1), "amin": lambda t, c: t.amin(c), "max-all": lambda t, c: t.max(c),
    "min-all": lambda t, c: c.min(), "max-dim": lambda t, c: t.max(c, 1), "min-dim": lambda t, c: t.min(c, 0),
    "aminmax": lambda t, c: t.aminmax(c), "cummax": lambda t, c: t.cummax(c, 1), "cummin": lambda t, c: c.cummin(0),
    "median": lambda t, c: t.median(c), "median-dim": lambda t, c: t.median(c, 1), "nanmedian": lambda t, c: c.nanmedian(),
    "mode": lambda t, c: t.mode(c, 1), "sort": lambda t, c: t.sort(c), "argsort": lambda t, c: c.argsort(stable=True),
    "msort": lambda t, c: t.msort(c), "topk": lambda t, c: t.topk(c, 1), "kthvalue": lambda t, c: t.kthvalue(c, 1),
    "unique": lambda t, c: t.unique(c), "unique-dim": lambda t, c: t.unique(c, dim=0),
    "unique_consecutive": lambda t, c: t.unique_consecutive(c), "nansum": lambda t, c: t.nansum(c),
    "nanmean": lambda t, c: c.nanmean(1), "searchsorted": lambda t, c: t.searchsorted(c[0], c[0]),
}


def _outcome(fn, lib, *args):
    try:
        fn(lib, *args)
    except Exception as e:  # noqa: BLE001 (the exception is the result compared)
        return type(e).__name__, str(e)
    return "no exception", ""


@pytest.mark.parametrize("name", sorted(COMPLEX_ORDERING))
def test_complex_input_to_ordering_ops_raises_like_torch(name):
    fn = COMPLEX_ORDERING[name]
    want = _outcome(fn, torch, _complex(torch))
    got = _outcome(fn, ember, _complex(ember))
    assert want[0] != "no exception"
    assert got == want


def _x(t):
    return t.tensor(np.random.RandomState(2).randn(3, 4), dtype=t.float32)


def _i(t):
    return t.tensor(np.random.RandomState(3).randint(0, 3, (3, 4)))


# value checks beside the op: integer inputs to losses, bounds, flags torch refuses on CPU, out= dtypes
VALUE_CHECKS = {
    "float_power-out-float32": lambda t: t.float_power(_x(t), 2, out=t.empty(0)),
    "float_power-out-complex": lambda t: t.float_power(_x(t).double(), 2, out=t.empty(0, dtype=t.complex128)),
    "kl_div-int": lambda t: t.nn.functional.kl_div(_i(t), _i(t), reduction="sum"),
    "kl_div-float-int": lambda t: t.nn.functional.kl_div(_x(t), _i(t), reduction="sum"),
    "mse-int": lambda t: t.nn.functional.mse_loss(_i(t), _i(t)),
    "smooth_l1-int": lambda t: t.nn.functional.smooth_l1_loss(_i(t), _i(t)),
    "huber-int": lambda t: t.nn.functional.huber_loss(_i(t), _i(t)),
    "huber-int-float": lambda t: t.nn.functional.huber_loss(_i(t), _x(t)),
    "soft_margin-int": lambda t: t.nn.functional.soft_margin_loss(_i(t), _i(t)),
    "hinge-int-mean": lambda t: t.nn.functional.hinge_embedding_loss(_i(t), _i(t)),
    "multi_margin-int": lambda t: t.nn.functional.multi_margin_loss(_i(t), _i(t)[:, 0]),
    "multilabel_margin-int": lambda t: t.nn.functional.multilabel_margin_loss(_i(t), _i(t)),
    "gaussian_nll-int-var": lambda t: t.nn.functional.gaussian_nll_loss(_x(t), _x(t), _i(t)),
    "bce-int": lambda t: t.nn.functional.binary_cross_entropy(_i(t), _i(t)),
    "hardtanh-min-above-max": lambda t: t.nn.functional.hardtanh(_x(t), 2.0, 1.0),
    "hardtanh-inplace-min-above-max": lambda t: t.nn.functional.hardtanh(_x(t), 2.0, 1.0, inplace=True),
    "max_pool2d-dilation-0": lambda t: t.nn.functional.max_pool2d(_x(t)[None, None], 2, dilation=0),
    "max_pool3d-dilation-0": lambda t: t.nn.functional.max_pool3d(_x(t)[None, None, None], 1, dilation=(1, 0, 1)),
    "adaptive_avg_pool1d-None": lambda t: t.nn.functional.adaptive_avg_pool1d(_x(t), None),
    "adaptive_max_pool1d-None": lambda t: t.nn.functional.adaptive_max_pool1d(_x(t), None),
    "adaptive_avg_pool2d-None": lambda t: t.nn.functional.adaptive_avg_pool2d(_x(t)[None], None),
    "logsumexp-empty-dims": lambda t: t.logsumexp(_x(t), dim=()),
    "index_select-negative": lambda t: t.index_select(_x(t), 0, t.tensor([-1])),
    "index_add-negative": lambda t: _x(t).index_add(0, t.tensor([-1]), t.ones(1, 4)),
    "index_copy-too-large": lambda t: _x(t).index_copy(0, t.tensor([3]), t.ones(1, 4)),
    "index_fill-too-negative": lambda t: _x(t).index_fill(0, t.tensor([-4]), 2.0),
    "index_reduce-negative": lambda t: _x(t).index_reduce(0, t.tensor([-1]), t.ones(1, 4), "prod"),
    "svd-driver": lambda t: t.linalg.svd(_x(t), driver="gesvd"),
    "svdvals-driver": lambda t: t.linalg.svdvals(_x(t), driver="gesvd"),
}

# torch's exception type, where its words are its overload parser's (ember names the op and the argument)
TYPE_CHECKS = {
    "flip-float-dim": lambda t: t.flip(_x(t), [1.5]),
    "isnan-out": lambda t: t.isnan(_x(t), out=t.empty(3, 4, dtype=t.bool)),
    "signbit-int-out": lambda t: t.signbit(_x(t), out=t.empty(3, 4, dtype=t.int8)),
    "exp-method-out": lambda t: _x(t).exp(out=t.empty(3, 4)),
    "eq-method-out": lambda t: _x(t).eq(_x(t), out=t.empty(3, 4, dtype=t.bool)),
    "sum-method-out": lambda t: _x(t).sum(0, out=t.empty(4)),
    "argmax-int8-out": lambda t: t.argmax(_x(t), 1, out=t.empty(3, dtype=t.int8)),
    "any-int8-out": lambda t: t.any(_x(t), 1, out=t.empty(3, dtype=t.int8)),
    "nonzero-int8-out": lambda t: t.nonzero(_x(t), out=t.empty(0, dtype=t.int8)),
    "triu-float-diagonal": lambda t: t.triu(_x(t), 1.5),
    "hann_window-periodic-str": lambda t: t.hann_window(5, "yes"),
    "dropout-training-str": lambda t: t.nn.functional.dropout(_x(t), 0.5, "yes"),
    "cholesky_ex-upper-str": lambda t: t.linalg.cholesky_ex(t.eye(3), upper="yes"),
    "fftfreq-layout-str": lambda t: t.fft.fftfreq(4, layout="x"),
    "resolve_conj-str": lambda t: t.resolve_conj("x"),
    "resize_as_-None": lambda t: _x(t).resize_as_(None),
    "chunk-float": lambda t: t.chunk(_x(t), 1.5),
    "sparse_coo_tensor-pin_memory-str": lambda t: t.sparse_coo_tensor(t.tensor([[0]]), t.ones(1), (2,), pin_memory="x"),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(VALUE_CHECKS))
def test_value_checks_raise_like_torch(name):
    fn = VALUE_CHECKS[name]
    want = _outcome(lambda t: fn(t), torch)
    got = _outcome(lambda t: fn(t), ember)
    assert want[0] != "no exception"
    assert got == want


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(TYPE_CHECKS))
def test_type_checks_raise_like_torch(name):
    fn = TYPE_CHECKS[name]
    want = _outcome(lambda t: fn(t), torch)
    got = _outcome(lambda t: fn(t), ember)
    assert want[0] != "no exception"
    assert got[0] == want[0], (got, want)
    assert got[1].split("(")[0].split(" ")[0] in want[1], (got, want)  # the same op named first


@pytest.mark.parametrize("call", ["margin_ranking", "hinge-sum", "l1-sum", "hardtanh_-min-above-max"])
def test_integer_inputs_torch_accepts(call):
    """Where torch computes on integer inputs, ember gives the same dtype and values."""
    out = []
    for t in (torch, ember):
        F = t.nn.functional
        i = _i(t)
        r = {"margin_ranking": lambda: F.margin_ranking_loss(i, i.flip(0), i - 1),
             "hinge-sum": lambda: F.hinge_embedding_loss(i, i - 1, reduction="sum"),
             "l1-sum": lambda: F.l1_loss(i, i.flip(1), reduction="sum"),
             "hardtanh_-min-above-max": lambda: F.hardtanh_(_x(t), 2.0, 1.0)}[call]()
        out.append((str(r.dtype).replace("torch.", ""), r.tolist()))
    assert out[1][0] == out[0][0]
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-6)
