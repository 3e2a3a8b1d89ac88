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
    # device strings and indices (torch's device parser)
    "device-type": lambda t: t.device("cpx"),
    "device-index-str": lambda t: t.device("cpu", "a"),
    "device-index-negative": lambda t: t.device("cpu", -1),
    "device-int-negative": lambda t: t.device(-1),
    "device-string-index": lambda t: t.device("cuda:x"),
    "device-string-leading-zero": lambda t: t.device("cpu:01"),
    "device-string-space": lambda t: t.device(" cpu"),
    "ones-device-type": lambda t: t.ones(2, device="cpx"),
    "sparse_coo_tensor-device": lambda t: t.sparse_coo_tensor(t.tensor([[0]]), t.ones(1), device="a"),
    # out= rules and input dims that torch checks
    "searchsorted-out-int8": lambda t: t.searchsorted(_x(t)[0].sort().values, _x(t), out=t.empty(0, dtype=t.int8)),
    "searchsorted-out-int64-out_int32": lambda t: t.searchsorted(_x(t)[0].sort().values, _x(t), out_int32=True,
                                                                 out=t.empty(0, dtype=t.int64)),
    "argsort-stable-out-int8": lambda t: t.argsort(_x(t), stable=True, out=t.empty(0, dtype=t.int8)),
    "add-out-int": lambda t: t.add(_x(t), _x(t), out=1),
    "max_unpool2d-2d-input": lambda t: t.nn.functional.max_unpool2d(_x(t), _i(t), 1),
    "max_unpool3d-2d-input": lambda t: t.nn.functional.max_unpool3d(_x(t), _i(t), 1),
    "max_unpool1d-4d-input": lambda t: t.nn.functional.max_unpool1d(_x(t)[None, None], _i(t)[None, None], 1),
    "rot90-k-float": lambda t: t.rot90(_x(t), 1.5),
    "dist-other-float": lambda t: t.dist(_x(t), 1.5),
    "tril_indices-col-float": lambda t: t.tril_indices(3, 2.5),
    "F.pad-dict": lambda t: t.nn.functional.pad(_x(t), {}),
    "F.leaky_relu-None": lambda t: t.nn.functional.leaky_relu(_x(t), None),
    "F.hardtanh_-None": lambda t: t.nn.functional.hardtanh_(_x(t), None),
    "tensor-requires_grad-None": lambda t: t.tensor([1.0], requires_grad=None),
    "fft2-dim-None": lambda t: t.fft.fft2(_x(t), None, None),
    "fftfreq-d-None": lambda t: t.fft.fftfreq(4, None),
    "contiguous-memory_format-None": lambda t: _x(t).contiguous(memory_format=None),
    "asarray-copy-str": lambda t: t.asarray([1.0], copy="a"),
    "index_copy-out-is-source": lambda t: (lambda x: t.index_copy(_x(t), 0, t.tensor([0, 1, 2]), x, out=x))(_x(t)),
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
    # None given where torch's overloads take none (ember's default None only means "not given")
    "max-dim-None": lambda t: t.max(_x(t), None),
    "logsumexp-dim-None": lambda t: t.logsumexp(_x(t), None),
    "max-method-dim-None": lambda t: _x(t).max(None),
    "min-dim-None-keyword": lambda t: t.min(_x(t), dim=None),
    "max-other-None": lambda t: t.max(_x(t), other=None),
    "median-dim-None": lambda t: t.median(_x(t), None),
    "prod-dim-None": lambda t: t.prod(_x(t), None),
    "squeeze-dim-None": lambda t: t.squeeze(_x(t), None),
    "std-unbiased-None": lambda t: t.std(_x(t), 1, None),
    "var-dim-unbiased-None": lambda t: t.var(_x(t), None, None),
    "var-unbiased-None-keyword": lambda t: t.var(_x(t), unbiased=None),
    "eye-m-None": lambda t: t.eye(3, None),
    "where-other-None": lambda t: t.where(_x(t) > 0, _x(t), None),
    "where-input-None": lambda t: t.where(_x(t) > 0, None),
    "where-condition-out": lambda t: t.where(_x(t) > 0, out=t.empty(0)),
    "lerp-weight-None": lambda t: t.lerp(_x(t), _x(t), None),
    "masked_fill-None": lambda t: t.masked_fill(_x(t), _x(t) > 0, None),
    "trapz-x-None": lambda t: t.trapz(_x(t), None),
    "trapezoid-dx-None": lambda t: t.trapezoid(_x(t), dx=None),
    "pinverse-rcond-None": lambda t: t.pinverse(_x(t), None),
    "vecdot-dim-None": lambda t: t.linalg.vecdot(_x(t), _x(t), dim=None),
    "normal_-mean-None": lambda t: _x(t).normal_(None),
    "sum_to_size-None": lambda t: _x(t).sum_to_size(None),
    "addmm-beta-None": lambda t: t.addmm(_x(t), _x(t).t(), _x(t), beta=None),
    "hamming_window-alpha-None": lambda t: t.hamming_window(5, True, None),
    "kaiser_window-beta-list": lambda t: t.kaiser_window(5, True, ["a"]),
    "argsort-stable-None": lambda t: t.argsort(_x(t), stable=None),
    # arange's and normal's overloads
    "arange-no-end": lambda t: t.arange(),
    "arange-keywords-only": lambda t: t.arange(dtype=t.float32),
    "arange-start-None": lambda t: t.arange(None, 2),
    "normal-std-None": lambda t: t.normal(_x(t), None),
    "normal-size-None": lambda t: t.normal(_x(t), 1.0, None),
    "normal-tensor-dtype-None": lambda t: t.normal(_x(t), dtype=None),
    "normal-tensor-requires_grad-None": lambda t: t.normal(_x(t), requires_grad=None),
    "normal-tensor-device": lambda t: t.normal(_x(t), device="cpu"),
    "sparse_coo_tensor-requires_grad-None": lambda t: t.sparse_coo_tensor(t.tensor([[0]]), t.ones(1), (2,),
                                                                          requires_grad=None),
    "sparse_coo_tensor-size-None": lambda t: t.sparse_coo_tensor(t.tensor([[0]]), t.ones(1), None),
    # out= that torch's overloads do not take
    "histogramdd-out": lambda t: t.histogramdd(_x(t), 2, out=t.empty(0)),
    "argsort-out-without-stable": lambda t: t.argsort(_x(t), out=t.empty(0, dtype=t.int64)),
    "unbind_copy-out-tensor": lambda t: t.unbind_copy(_x(t), out=t.empty(0)),
    "ldl_factor-out-float": lambda t: t.linalg.ldl_factor(_x(t), out=1.5),
    "lu-method-out": lambda t: _x(t).lu(True, False, None),
    "neg_-method-out": lambda t: _x(t).neg_(out=t.empty(3, 4)),
    "sigmoid_-method-out": lambda t: _x(t).sigmoid_(out=t.empty(3, 4)),
    "atan2-out-float": lambda t: t.atan2(_x(t), _x(t), out=1.5),
    # a value of a PLAIN class where torch takes another kind (the op would have taken it)
    "addcdiv-tensor2-float": lambda t: t.addcdiv(_x(t), _x(t), 1.5),
    "addcmul-tensor2-float": lambda t: _x(t).addcmul(_x(t), 1.5),
    "roll-shifts-float": lambda t: t.roll(_x(t), 1.5),
    "histogram-bins-float": lambda t: t.histogram(_x(t), 2.0),
    "repeat_interleave-float": lambda t: _x(t).repeat_interleave(2.0),
    "embedding-padding_idx-float": lambda t: t.embedding(_x(t), _i(t), 1.5),
    "cov-correction-float": lambda t: t.cov(_x(t), correction=1.5),
    "to_dense-masked_grad-str": lambda t: _x(t).to_dense(masked_grad="a"),
    "constant_pad_nd-dict": lambda t: t.constant_pad_nd(_x(t), {}),
    "bce_with_logits-weight-float": lambda t: t.nn.functional.binary_cross_entropy_with_logits(_x(t), _x(t), 1.5),
    "soft_margin_loss-target-float": lambda t: t.nn.functional.soft_margin_loss(_x(t), 1.5),
    "poisson_nll_loss-target-float": lambda t: t.nn.functional.poisson_nll_loss(_x(t), 1.5),
    # torch's boolean_dispatch reads return_indices for its truth value; its _list_with_default takes any iterable
    "adaptive_max_pool2d-return_indices-str": lambda t: t.nn.functional.adaptive_max_pool2d(_x(t), 2, "a"),
    "adaptive_max_pool3d-output_size-dict": lambda t: t.nn.functional.adaptive_max_pool3d(_x(t), {}),
    "adaptive_avg_pool3d-output_size-dict": lambda t: t.nn.functional.adaptive_avg_pool3d(_x(t), {}),
    "normalize-p-str": lambda t: t.nn.functional.normalize(_x(t), p="a"),  # Tensor.norm's matrix norm path
}


# parameters declared by type (ember/_ops/_argcheck.py's KINDS_BY_NAME and OVERRIDES): a wrong type is torch's
# TypeError naming the argument (or, for an op with several overloads, torch's "invalid combination" words),
# where ember's kernels used to meet it only in a value check (RuntimeError, ValueError, NotImplementedError)
DECLARED_TYPES = {
    "div-rounding_mode-float": lambda t: t.div(_x(t), _x(t), rounding_mode=1.5),
    "quantile-interpolation-None": lambda t: t.quantile(_x(t), 0.5, interpolation=None),
    "searchsorted-side-list": lambda t: t.searchsorted(t.arange(4.0), _x(t), side=["a"]),
    "meshgrid-indexing-float": lambda t: t.meshgrid(t.ones(2), t.ones(3), indexing=1.5),
    "gelu-approximate-None": lambda t: t.nn.functional.gelu(_x(t), approximate=None),
    "eigh-UPLO-None": lambda t: t.linalg.eigh(t.eye(3), None),
    "svd-driver-list": lambda t: t.linalg.svd(t.eye(3), driver=["a"]),
    "qr-mode-None": lambda t: t.linalg.qr(t.eye(3), None),
    "pixel_shuffle-float": lambda t: t.pixel_shuffle(t.ones(1, 4, 2, 2), 2.0),
    "pixel_unshuffle-str": lambda t: t.nn.functional.pixel_unshuffle(t.ones(1, 1, 4, 4), "2"),
    "bincount-minlength-float": lambda t: t.bincount(t.tensor([1, 2]), minlength=2.5),
    "bincount-weights-list": lambda t: t.bincount(t.tensor([1, 2]), [1.0, 2.0]),
    "combinations-r-float": lambda t: t.combinations(t.arange(4), 1.5),
    "one_hot-num_classes-float": lambda t: t.nn.functional.one_hot(t.tensor([0, 1]), 3.0),
    "linspace-steps-float": lambda t: t.linspace(0, 1, 2.5),
    "gradient-edge_order-float": lambda t: t.gradient(_x(t), edge_order=1.5),
    "group_norm-num_groups-float": lambda t: t.group_norm(t.ones(2, 4, 3), 2.0),
    "roll-shifts-str": lambda t: t.roll(_x(t), "a"),
    "rot90-dims-str": lambda t: t.rot90(_x(t), 1, "ab"),
    "split_with_sizes-dict": lambda t: t.split_with_sizes(_x(t), {}),
    "layer_norm-shape-str": lambda t: t.nn.functional.layer_norm(_x(t), ["a"]),
    "max_pool2d-padding-str": lambda t: t.nn.functional.max_pool2d(t.ones(1, 1, 4, 4), 2, 2, "a"),
    "nan_to_num-nan-str": lambda t: t.nan_to_num(_x(t), nan="a"),
    "nan_to_num-posinf-tensor": lambda t: t.nan_to_num(_x(t), posinf=t.ones(2)),
    "margin_ranking-margin-str": lambda t: t.nn.functional.margin_ranking_loss(_x(t), _x(t), _x(t), margin="a"),
    "take_along_dim-None": lambda t: t.take_along_dim(_x(t), None),
    "gru_cell-w_hh-None": lambda t: t.gru_cell(t.ones(2, 3), t.ones(2, 4), t.ones(12, 3), None),
    "batch_norm-running_var-str": lambda t: t.nn.functional.batch_norm(t.ones(2, 3), t.zeros(3), "a"),
    "nll_loss-weight-float": lambda t: t.nn.functional.nll_loss(_x(t), t.tensor([0, 1, 2]), weight=2.0),
    "embedding-max_norm-str": lambda t: t.nn.functional.embedding(t.tensor([0, 1]), _x(t), max_norm="a"),
    "lu_solve-B-None": lambda t: t.linalg.lu_solve(t.eye(3), t.tensor([1, 2, 3], dtype=t.int32), None),
    "lstsq-rcond-str": lambda t: t.linalg.lstsq(t.eye(3), t.ones(3, 1), "a"),
    "matrix_norm-ord-list": lambda t: t.linalg.matrix_norm(t.eye(3), ord=["a"]),
    "histc-bins-float": lambda t: t.histc(_x(t), 4.5),
    "histogram-range-str": lambda t: t.histogram(_x(t), 4, range="ab"),
    "histogramdd-bins-str": lambda t: t.histogramdd(_x(t)[:, :2], "a"),
    "istft-win_length-float": lambda t: t.istft(t.ones(5, 3, dtype=t.complex64), 8, win_length=1.5),
    "normal_-mean-str": lambda t: _x(t).normal_(mean="a"),
    "geometric_-generator-str": lambda t: _x(t).geometric_(0.5, generator="a"),
    "repeat_interleave-None": lambda t: _x(t).repeat_interleave(None),
    "masked_fill-value-str": lambda t: t.masked_fill(_x(t), _x(t) > 0, "a"),
    "index_fill-value-list": lambda t: t.index_fill(_x(t), 0, t.tensor([0]), ["a"]),
    "threshold-value-str": lambda t: t.threshold(_x(t), 0.5, "a"),
    "tensordot-dims-ints": lambda t: t.tensordot(_x(t), _x(t).T, dims=(0, 0)),
    "where-one-of-two": lambda t: t.where(_x(t) > 0, _x(t)),
    "where-float-condition-str": lambda t: t.where(_x(t), _x(t), "a"),
    "prod-out-without-dim": lambda t: t.prod(_x(t), out=t.empty(0)),
    "unfold-padding-float": lambda t: t.nn.functional.unfold(t.ones(1, 1, 4, 4), 2, padding=1.5),
    "matrix_exp-out": lambda t: t.linalg.matrix_exp(t.eye(3), out=t.empty(0)),
    "renorm-maxnorm-tensor": lambda t: t.renorm(_x(t), 1, 1, _x(t)),
    "lp_pool2d-2d-stride-str": lambda t: t.nn.functional.lp_pool2d(_x(t), 2, 1, "a"),  # the parser before size(-3)
    "lu_unpack-out-tensor": lambda t: t.lu_unpack(_x(t), _x(t), out=_x(t)),  # before the pivots' dtype
    "lu_unpack-out-tensor-valid": lambda t: t.lu_unpack(*t.linalg.lu_factor(t.eye(3)), out=t.empty(3, 3)),
    "lu_solve-LU-None": lambda t: t.linalg.lu_solve(None, t.ones(3), t.ones(3, 1)),  # before the pivots' dtype
}

# torch's own check comes first (its Python-level functions, its kernels' order), with torch's exception and message
TORCH_ORDER = {
    "tensordot-dims-None": lambda t: t.tensordot(_x(t), _x(t).T, dims=None),
    "cat-out-int8": lambda t: t.cat([_x(t), _x(t)], out=t.empty(0, dtype=t.int8)),
    "stack-out-bool": lambda t: t.stack([_x(t), _x(t)], out=t.empty(0, dtype=t.bool)),
    "hstack-out-int8": lambda t: t.hstack([_x(t), _x(t)], out=t.empty(0, dtype=t.int8)),
    "median-out-without-dim": lambda t: t.median(_x(t), out=t.empty(0)),
    "nanmedian-out-without-dim": lambda t: t.nanmedian(_x(t), out=t.empty(0)),
    "nansum-out-int8": lambda t: t.nansum(_x(t), out=t.empty(0, dtype=t.int8)),
    "nanmean-out-int8": lambda t: t.nanmean(_x(t), out=t.empty(0, dtype=t.int8)),
    "addbmm-2d-batches": lambda t: t.addbmm(t.ones(4, 4), t.ones(4, 4), t.ones(4, 4)),
    "baddbmm-1d-batch1": lambda t: t.baddbmm(t.ones(4, 4), t.ones(4), t.ones(2, 4, 4)),
    "baddbmm-2d-batch1": lambda t: t.baddbmm(t.ones(4, 4), t.ones(4, 4), t.ones(2, 4, 4)),
    "index_fill-2d-index": lambda t: _x(t).index_fill(0, t.zeros(2, 2, dtype=t.long), 1.0),
    "frexp-out-tensor": lambda t: t.frexp(_x(t), out=t.empty(0)),
    "interpolate-no-size": lambda t: t.nn.functional.interpolate(_x(t), mode="a"),
    "interpolate-2d-size-str": lambda t: t.nn.functional.interpolate(_x(t), size="a"),
    "interpolate-2d-scale-dict": lambda t: t.nn.functional.interpolate(_x(t), scale_factor={}),
    "interpolate-antialias-3d": lambda t: t.nn.functional.interpolate(_x(t)[None], 2, mode="a", antialias=True),
    "unfold-kernel-dict": lambda t: t.nn.functional.unfold(t.ones(1, 1, 4, 4), {}),
    "fold-dilation-dict": lambda t: t.nn.functional.fold(t.ones(1, 4, 9), 4, 2, {}),
    "instance_norm-weight-str": lambda t: t.nn.functional.instance_norm(_x(t), weight="a"),
    "multi_margin-p-str": lambda t: t.nn.functional.multi_margin_loss(_x(t), t.tensor([0, 1, 2]), p="a"),
    "local_response_norm-size-str": lambda t: t.nn.functional.local_response_norm(_x(t), "a"),
    "fractional_max_pool2d-no-size": lambda t: t.nn.functional.fractional_max_pool2d(t.ones(1, 1, 4, 4), "a"),
    # torch's Python-level F code runs first: input.size(-3) of a 2-d input, len() of a bare float ratio, unpacking
    "fractional_max_pool2d-2d-size-str": lambda t: t.nn.functional.fractional_max_pool2d(_x(t), 1, "a"),
    "fractional_max_pool3d-2d-ratio": lambda t: t.nn.functional.fractional_max_pool3d(_x(t), 1, output_ratio=0.5),
    "fractional_max_pool2d-ratio-float": lambda t: t.nn.functional.fractional_max_pool2d(
        t.ones(1, 4, 4), 2, output_ratio=0.5),
    "fractional_max_pool2d-ratio-3": lambda t: t.nn.functional.fractional_max_pool2d(
        t.ones(1, 4, 4), 2, output_ratio=(0.5, 0.5, 0.5)),
    "fractional_max_pool2d-ratio-str": lambda t: t.nn.functional.fractional_max_pool2d(_x(t), 1, None, "a"),
    "max_unpool3d-2d-kernel-None": lambda t: t.nn.functional.max_unpool3d(_x(t), _x(t).long(), None),
    "max_unpool3d-2d-stride-float": lambda t: t.nn.functional.max_unpool3d(_x(t), _x(t).long(), 1, 1.5),
    "lp_pool2d-kernel-str": lambda t: t.nn.functional.lp_pool2d(t.ones(1, 4, 4), 2, "a"),
    "lp_pool3d-kernel-pair": lambda t: t.nn.functional.lp_pool3d(t.ones(1, 4, 4, 4), 2, [1, 1]),
    "lp_pool2d-2d-stride-None": lambda t: t.nn.functional.lp_pool2d(_x(t), 2, 1),
    "avg_pool2d-2d": lambda t: t.nn.functional.avg_pool2d(_x(t), 1),
    "avg_pool2d-1d": lambda t: t.nn.functional.avg_pool2d(_x(t)[0], 1),
    "bilinear-2d-weight": lambda t: t.nn.functional.bilinear(_x(t), _x(t), t.ones(4, 4)),
    "lu_solve-float-pivots": lambda t: t.linalg.lu_solve(t.eye(3), t.ones(3), t.ones(3, 1)),
    "tensor-None-float32": lambda t: t.tensor(None, dtype=t.float32),
    "tensor-None-in-list-int32": lambda t: t.tensor([1, None], dtype=t.int32),
    "new_tensor-None": lambda t: _x(t).new_tensor(None),
    "new_tensor-dict": lambda t: _x(t).new_tensor({}),
    # index_copy is structured in torch: out's dtype must be the input's, checked after dim and before the index
    "index_copy-out-float64": lambda t: t.index_copy(_x(t), 0, t.tensor([0, 1, 2]), _x(t), out=t.empty(0, dtype=t.float64)),
    "index_copy-out-int8-2d-index": lambda t: t.index_copy(_x(t), 1, t.zeros(2, 2, dtype=t.long), _x(t),
                                                           out=t.empty(0, dtype=t.int8)),
    "index_copy-out-int8-dim-5": lambda t: t.index_copy(_x(t), 5, t.tensor([0]), _x(t), out=t.empty(0, dtype=t.int8)),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(DECLARED_TYPES))
def test_declared_types_raise_torchs_type_error(name):
    fn = DECLARED_TYPES[name]
    want = _outcome(lambda t: fn(t), torch)
    got = _outcome(lambda t: fn(t), ember)
    assert want[0] == "TypeError" and got[0] == "TypeError", (got, want)
    if "invalid combination of arguments" in want[1]:
        assert want[1].split(" - got")[0] in got[1], (got, want)  # "<op>() received an invalid combination ..."
    else:
        argument = want[1].split("argument ")[1].split(" ")[0] if "argument '" in want[1] else ""
        assert argument in got[1], (got, want)  # the argument torch names


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(TORCH_ORDER))
def test_torchs_check_order_and_message(name):
    fn = TORCH_ORDER[name]
    want = _outcome(lambda t: fn(t), torch)
    got = _outcome(lambda t: fn(t), ember)
    assert want[0] != "no exception"
    assert got == want


def test_valid_forms_beside_the_declared_types():
    """The declarations refuse only what torch refuses: conv's padding='same', a 0-d Tensor for a float, a Tensor
    of sizes, where's two numbers, a truthy return_indices, None in an adaptive output_size."""
    out = []
    for t in (torch, ember):
        F = t.nn.functional
        x = t.tensor(np.random.RandomState(4).rand(1, 2, 5).astype(np.float32))
        w = t.tensor(np.random.RandomState(5).rand(3, 2, 3).astype(np.float32))
        out.append([F.conv1d(x, w, padding="same").tolist(), t.nan_to_num(x / 0, posinf=t.tensor(7.0)).tolist(),
                    F.unfold(x[None], t.tensor([1, 2])).tolist(), t.tensordot(x[0], x[0], ([0, 1], [0, 1])).item(),
                    t.where(x > 0.5, 1.0, 2.0).tolist(), t.histc(x, bins=3).tolist(),
                    F.adaptive_max_pool2d(x, 2, 1)[1].tolist(), F.adaptive_avg_pool2d(x, (None, 2)).tolist()])
    np.testing.assert_allclose(np.array(out[1][0]), np.array(out[0][0]), rtol=1e-5)
    for a, b in zip(out[0][1:], out[1][1:]):
        np.testing.assert_allclose(np.array(b), np.array(a), rtol=1e-5)


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


# valid calls next to the refused ones above: torch computes, ember gives the same dtype, shape and values
ACCEPTED = {
    "add-out-float": lambda t: t.add(_x(t), _x(t), out=1.5),  # torch's numbers-as-tensors: a new float64 out
    "div-rounding-out-float": lambda t: t.div(_x(t), 2, rounding_mode="floor", out=2.5),
    "mul-out-complex": lambda t: t.mul(_x(t), _x(t), out=1j),
    "cumsum-out-int8": lambda t: t.cumsum(_x(t) * 3, 0, out=t.empty(0, dtype=t.int8)),  # sums in out's dtype
    "cumprod-out-int8": lambda t: t.cumprod(_x(t) + 2, 1, out=t.empty(0, dtype=t.int8)),
    "randperm-out-int8-dtype": lambda t: t.randperm(5, out=t.empty(0, dtype=t.int8)).sort().values,
    "normalize-p-None": lambda t: t.nn.functional.normalize(_x(t), None),
    "normalize-p-fro": lambda t: t.nn.functional.normalize(_x(t), "fro"),  # Tensor.norm's 'fro' over one dim
    "renorm-maxnorm-0d": lambda t: t.renorm(_x(t), 1, 1, t.tensor(1.0)),
    "index_copy-out-float32": lambda t: t.index_copy(_x(t), 1, t.tensor([3, 2, 1, 0]), _x(t), out=t.empty(0)),
    "index_copy-out-is-input": lambda t: (lambda x: t.index_copy(x, 0, t.tensor([2, 1, 0]), _x(t) * 2, out=x))(_x(t)),
    "fractional_max_pool3d-ratio-float": lambda t: t.nn.functional.fractional_max_pool3d(
        t.ones(1, 4, 4, 4), 2, output_ratio=0.5),
    "normal-size-dtype-None": lambda t: t.normal(0.0, 0.0, (2,), dtype=None, device=None, layout=None),
    "argsort-stable-out": lambda t: t.argsort(_x(t), stable=True, out=t.empty(0, dtype=t.int64)),
    "arange-end-keyword": lambda t: t.arange(end=3),
    "std-dim-None-unbiased": lambda t: t.std(_x(t), None, True),
    "fft2-s-None": lambda t: t.fft.fft2(_x(t), None),
    "max-other-tensor": lambda t: t.max(_x(t), _x(t).flip(0)),
    "where-method": lambda t: _x(t).where(_x(t) > 0, 0.5),
    "device-index-str": lambda t: t.ones(2, device=t.device("cpu:0")),
    "sparse_coo_tensor-dtype-None": lambda t: t.sparse_coo_tensor(t.tensor([[0]]), t.ones(1), dtype=None).to_dense(),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_valid_calls_beside_the_refused_ones_compute_like_torch(name):
    fn = ACCEPTED[name]
    want = fn(torch)
    got = fn(ember)
    assert isinstance(got, ember.Tensor), got
    assert (str(got.dtype), tuple(got.shape)) == (str(want.dtype), tuple(want.shape))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


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


# max_unpool: torch's F computes the output size in Python (a dict is an iterable of its keys, short strides index
# out of range), then the C++ kernel checks it: a grid of kernel/stride/padding forms over input ranks
_UNPOOL_ARGS = [dict(kernel_size={}), dict(kernel_size=2, stride={}), dict(kernel_size={1: 0, 2: 0}),
                dict(kernel_size=(1, 1)), dict(kernel_size=(1,)), dict(kernel_size=(1, 1, 1)), dict(kernel_size=1.5),
                dict(kernel_size=2, padding={}), dict(kernel_size=2, stride=1), dict(kernel_size={"a": 1}),
                dict(kernel_size=None), dict(kernel_size=2, stride=(2, 2, 2, 2)),
                dict(kernel_size=2, padding=(0, 0, 0, 0)), dict(kernel_size=1, stride=-1),
                dict(kernel_size=1, stride=0),
                dict(kernel_size=1, stride=(2, 2.5, 2)), dict(kernel_size=1, padding=(0.5, 0, 0)),
                dict(kernel_size=1, padding=(0, 0, 0.5)), dict(kernel_size=(4, 4, 4), padding=(0, 0, 3)),
                dict(kernel_size=1, stride=1, output_size=(3, 4, 5)), dict(kernel_size=(1, 1.5, 1)),
                dict(kernel_size=1, stride=(1, 1.5, 1), padding=(0, 0.5, 0), output_size=(3, 4.5, 5)),
                dict(kernel_size=1, stride=(1, 1.5, 1), output_size=(3, 4.5, 5))]


@pytest.mark.parametrize("nd,rank", [(1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (2, 3), (2, 4), (2, 5), (3, 2), (3, 4),
                                     (3, 5)])
def test_max_unpool_argument_forms_like_torch(nd, rank):
    shape = (1, 2, 3, 4, 5)[-rank:]
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    for kwargs in _UNPOOL_ARGS:
        out = {}
        for lib in (torch, ember):
            f = getattr(lib.nn.functional, f"max_unpool{nd}d")
            try:
                out[lib] = f(lib.tensor(x), lib.zeros(shape, dtype=lib.int64), **kwargs)
            except Exception as e:  # noqa: BLE001 (the exception is the result compared)
                out[lib] = (type(e).__name__, str(e))
        if isinstance(out[torch], tuple):
            assert out[ember] == out[torch], kwargs
        else:
            np.testing.assert_array_equal(out[ember].numpy(), out[torch].numpy())


def _raises_as_torch(fn):
    """fn(lib) raises on torch, and on ember an exception of the same type; returns the type's name."""
    want = _outcome(fn, torch)
    got = _outcome(fn, ember)
    assert want[0] != "no exception"
    assert got[0] == want[0], (want, got)
    return want[0]


# a float inside an int list (kernel_size=(1, 1.5), size=(2, 1.5), normalized_shape=...): torch's parser refuses it,
# ember used to truncate it silently in pooling, adaptive pooling, interpolate, empty_strided and layer_norm
def _img(t):
    return t.tensor(np.random.RandomState(4).randn(1, 2, 6, 6).astype(np.float32))


FLOAT_IN_INT_LIST = [
    lambda t: t.nn.functional.avg_pool2d(_img(t), (1, 1.5)),
    lambda t: t.nn.functional.avg_pool2d(_img(t), (1.5, 1)),
    lambda t: t.nn.functional.avg_pool2d(_img(t), 2, (1, 1.5)),
    lambda t: t.nn.functional.avg_pool2d(_img(t), 2, 2, (0, 0.5)),
    lambda t: t.nn.functional.max_pool2d(_img(t), (1, 1.5)),
    lambda t: t.nn.functional.max_pool2d(_img(t), 2, (1, 1.5)),
    lambda t: t.nn.functional.max_pool2d(_img(t), 2, 2, 0, (1, 1.5)),
    lambda t: t.nn.functional.max_pool1d(_img(t)[0], (1.5, )),
    lambda t: t.nn.functional.avg_pool1d(_img(t)[0], (1.5, )),
    lambda t: t.nn.functional.avg_pool3d(_img(t), (1, 1, 1.5)),
    lambda t: t.nn.functional.max_pool3d(_img(t), (1, 1, 1.5)),
    lambda t: t.nn.functional.lp_pool2d(_img(t), 2, (1, 1.5)),
    lambda t: t.nn.functional.adaptive_avg_pool2d(_img(t), (1, 1.5)),
    lambda t: t.nn.functional.adaptive_max_pool2d(_img(t), (1, 1.5)),
    lambda t: t.nn.functional.conv2d(_img(t), t.ones(2, 2, 1, 1), stride=(1, 1.5)),
    lambda t: t.nn.functional.conv2d(_img(t), t.ones(2, 2, 1, 1), padding=(1, 1.5)),
    lambda t: t.nn.functional.conv2d(_img(t), t.ones(2, 2, 1, 1), dilation=(1, 1.5)),
    lambda t: t.nn.functional.conv_transpose2d(_img(t), t.ones(2, 2, 1, 1), stride=(1, 1.5)),
    lambda t: t.nn.functional.conv_transpose2d(_img(t), t.ones(2, 2, 1, 1), output_padding=(0, 0.5)),
    lambda t: t.nn.functional.unfold(_img(t), (1, 1.5)),
    lambda t: t.nn.functional.interpolate(_img(t), size=(3, 3.5)),
    lambda t: t.nn.functional.pad(_img(t), (1, 1.5)),
    lambda t: _img(t).view(2, 1.5),
    lambda t: _img(t).reshape(2, 1.5),
    lambda t: _img(t).permute(0, 1, 2, 1.5),
    lambda t: _img(t).repeat(1, 1.5),
    lambda t: _img(t).expand(1, 2, 6, 6.0),
    lambda t: _img(t).sum((0, 1.5)),
    lambda t: _img(t).mean((0, 1.5)),
    lambda t: _img(t).amax((0, 1.5)),
    lambda t: _img(t).flip((0, 1.5)),
    lambda t: _img(t).roll((1, 1.5), (0, 1)),
    lambda t: _img(t).tile((1, 1.5)),
    lambda t: t.zeros((2, 1.5)),
    lambda t: _img(t).new_zeros((2, 1.5)),
    lambda t: _img(t).squeeze((0, 1.5)),
    lambda t: _img(t).std((0, 1.5)),
    lambda t: _img(t).norm(2, (0, 1.5)),
    lambda t: _img(t).logsumexp((0, 1.5)),
    lambda t: _img(t).movedim((0, 1.5), (1, 0)),
    lambda t: t.fft.fftn(_img(t), s=(2, 1.5)),
    lambda t: _img(t).as_strided((2, 2), (1, 1.5)),
    lambda t: t.empty_strided((2, 2), (1, 1.5)),
    lambda t: _img(t).split([1, 1.5], 1),
    lambda t: t.nn.functional.layer_norm(_img(t), (6, 6.0)),
    lambda t: _img(t).unflatten(2, (2, 3.0)),
]


@pytest.mark.parametrize("i", range(len(FLOAT_IN_INT_LIST)))
def test_float_in_an_int_list_raises_like_torch(i):
    assert _raises_as_torch(FLOAT_IN_INT_LIST[i]) == "TypeError"


# calls that match none of torch's overloads although each argument has a valid type (sum's out= needs dim, the
# one-bound arange is (end) alone, Tensor.repeat_interleave needs repeats), and torch's Python-level Tensor.unflatten
OVERLOAD_SHAPES = {
    "sum-out-no-dim": lambda t: t.sum(_x(t), out=t.empty(0)),
    "sum-out-int8-no-dim": lambda t: t.sum(_x(t), out=t.empty(0, dtype=t.int8)),
    "sum-dtype-out-no-dim": lambda t: t.sum(_x(t), dtype=t.float64, out=t.empty(0, dtype=t.float64)),
    "arange-start-only": lambda t: t.arange(start=2),
    "arange-start-step": lambda t: t.arange(start=1, step=2),
    "arange-one-bound-step": lambda t: t.arange(2, step=2),
    "repeat_interleave-method-no-repeats": lambda t: _i(t).flatten().repeat_interleave(),
    "repeat_interleave-method-output_size": lambda t: _i(t).flatten().repeat_interleave(output_size=3),
    "repeat_interleave-function-output_size": lambda t: t.repeat_interleave(t.tensor([1, 2]), output_size=4),
    "unflatten-method-None": lambda t: _x(t).unflatten(0, None),
    "unflatten-method-dict": lambda t: _x(t).unflatten(0, {}),
    "unflatten-method-str-item": lambda t: _x(t).unflatten(0, [3, "a"]),
    "unflatten-function-None": lambda t: t.unflatten(_x(t), 0, None),
    "sum-dtype-positional": lambda t: t.sum(_x(t), t.float64),
    "sum-method-dtype-positional": lambda t: _x(t).sum(t.float64),
    "prod-dtype-positional": lambda t: t.prod(_x(t), t.float64),
    "prod-method-dtype-positional": lambda t: _x(t).prod(t.float64),
    "mean-method-dtype-positional": lambda t: _x(t).mean(t.float64),
    "nansum-method-dtype-positional": lambda t: _x(t).nansum(t.float64),
    "scatter_-src-and-value": lambda t: t.zeros(3).scatter_(0, t.tensor([0, 1]), t.ones(2), "add"),
    "scatter-src-and-value": lambda t: t.scatter(t.zeros(3), 0, t.tensor([0, 1]), t.ones(2), 1.0),
    "scatter-value-and-value": lambda t: t.zeros(3).scatter(0, t.tensor([0, 1]), 1.0, 2.0),
}
OVERLOAD_SHAPES_VALID = {
    "sum-None-out": lambda t: t.sum(_x(t), None, out=t.empty(0)),
    "sum-dim-out": lambda t: t.sum(_x(t), (0, 1), out=t.empty(0)),
    "sum-dtype-keyword": lambda t: t.sum(_x(t), dtype=t.float64),
    "arange-end-keyword": lambda t: t.arange(end=3),
    "arange-start-end-keywords": lambda t: t.arange(start=1, end=7, step=2),
    "repeat_interleave-repeats-only": lambda t: t.repeat_interleave(t.tensor([1, 2]), output_size=3),
    "unflatten-method": lambda t: _x(t).unflatten(1, (2, 2)),
    "scatter-value-keyword": lambda t: t.zeros(3).scatter(0, t.tensor([0, 1]), value=2.0),
    "scatter-value-positional-reduce": lambda t: t.scatter(t.zeros(3), 0, t.tensor([0, 1]), 2.0, reduce="add"),
}


@pytest.mark.parametrize("name", sorted(OVERLOAD_SHAPES))
def test_calls_matching_no_overload_raise_like_torch(name):
    _raises_as_torch(OVERLOAD_SHAPES[name])


@pytest.mark.parametrize("name", sorted(OVERLOAD_SHAPES_VALID))
def test_calls_beside_them_compute_like_torch(name):
    got, want = OVERLOAD_SHAPES_VALID[name](ember), OVERLOAD_SHAPES_VALID[name](torch)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


# the Tensor's own protocol and attributes: setters, conversions, `in`, autograd.grad's arguments
def _set(t, name, value):
    setattr(t, name, value)
    return getattr(t, name)


PROTOCOL = {
    **{f"requires_grad-{k}": (lambda t, v=v: _set(t.ones(2), "requires_grad", v))
       for k, v in {"None": None, "str": "x", "float": 1.5, "int": 1, "list": [1]}.items()},
    "layout-set": lambda t: _set(t.ones(2), "layout", t.strided),
    "int-multi": lambda t: int(t.ones(3)),
    "float-multi": lambda t: float(t.ones(3)),
    "complex-multi": lambda t: complex(t.ones(3)),
    "float-empty": lambda t: float(t.ones(0)),
    "contains-str": lambda t: "a" in t.ones(2),
    "contains-None": lambda t: None in t.ones(2),
    "grad-input-str": lambda t: t.autograd.grad(t.ones(2, requires_grad=True).sum(), "a"),
    "grad-input-int": lambda t: (lambda x: t.autograd.grad(x.sum(), (x, 1)))(t.ones(2, requires_grad=True)),
    "grad-output-str": lambda t: t.autograd.grad("a", t.ones(2, requires_grad=True)),
}
PROTOCOL_VALID = {
    "requires_grad-True": lambda t: _set(t.ones(2), "requires_grad", True),
    "float-one": lambda t: float(t.ones(1, 1)),
    "contains-number": lambda t: 1.0 in t.ones(2),
    "contains-tensor": lambda t: t.ones(1) in t.ones(2),
    "contains-bool": lambda t: True in t.ones(2),
}


@pytest.mark.parametrize("name", sorted(PROTOCOL))
def test_tensor_protocol_raises_like_torch(name):
    _raises_as_torch(PROTOCOL[name])


@pytest.mark.parametrize("name", sorted(PROTOCOL_VALID))
def test_tensor_protocol_valid_like_torch(name):
    assert PROTOCOL_VALID[name](ember) == PROTOCOL_VALID[name](torch)


# size(dim) / stride(dim) of a 0-d tensor: torch's IndexError at every dim (ember used to leak Python's
# "tuple index out of range" for 0 and -1)
@pytest.mark.parametrize("method", ["size", "stride"])
@pytest.mark.parametrize("dim", [0, -1, 1, -2])
def test_size_and_stride_of_a_0d_tensor(method, dim):
    got = [_outcome(lambda t: getattr(t.tensor(1.5), method)(dim), lib) for lib in (torch, ember)]
    assert got[0][0] == "IndexError" and got[1] == got[0]
    assert _outcome(lambda t: getattr(t.ones(2, 3), method)(dim), ember) == _outcome(
        lambda t: getattr(t.ones(2, 3), method)(dim), torch)


# batch_norm's parameter checks in torch's order: evaluation mode's missing statistics, then the sizes of
# running_mean, running_var, weight and bias (ember checked weight and bias first)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("sizes", [(4, 4, 4, 4), (3, 4, 4, 4), (3, 3, 4, 4), (3, 3, 3, 4), (None, None, 4, 4),
                                   (None, 4, 4, 4)])
def test_batch_norm_parameter_checks_in_torchs_order(sizes, training):
    def call(t):
        made = [None if n is None else t.ones(n) for n in sizes]
        t.nn.functional.batch_norm(t.zeros(2, 3), *made, training=training)
    assert _outcome(call, ember) == _outcome(call, torch)
