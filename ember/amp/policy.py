"""torch 2.13's CPU autocast policy, by ember's public op names.

From aten/src/ATen/autocast_mode.cpp (the AutocastCPU registrations) and checked op by op
against torch's CPU autocast (tests/test_amp.py). A name is the op's registry name (what
`install()` receives: `ember.mm` and `Tensor.mm`), or its torch.nn.functional name, or
`linalg_<name>` for torch.linalg. Ops named nowhere here run in the dtypes they are given.
A policy is a kind, or a function of the call's (args, kwargs) giving the kind (or None: no
casts) where the ATen op torch reaches depends on the arguments.
"""
LOWER = "lower_precision_fp"  # inputs cast to the autocast dtype (bfloat16 by default on cpu)
FP32 = "fp32"                 # inputs cast to float32
PROMOTE = "promote"           # inputs cast to the widest floating dtype among them
# torch's composite runs its last step (a matmul) in the lower precision; ember computes the op on
# the inputs as given and rounds its floating results to the autocast dtype: torch's dtype, values
# equal to bfloat16 rounding
LOWER_RESULT = "lower_precision_result"

_LOWER = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc",
    "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm", "linear", "matmul", "prelu",
    "scaled_dot_product_attention",
    # composites in torch whose first ATen kernel is one of the above, so they run in the lower precision
    "linalg_matmul", "einsum", "tensordot", "chain_matmul", "linalg_multi_dot",
    "rnn_tanh", "rnn_relu", "rnn_tanh_cell", "rnn_relu_cell",  # their steps are linear layers
)

_FP32 = (
    "avg_pool3d", "binary_cross_entropy", "grid_sample", "polar", "prod", "quantile", "nanquantile", "stft",
    "cdist", "trace", "view_as_complex", "cholesky", "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve",
    "orgqr", "ormqr", "pinverse", "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d",
    "mse_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss",
    "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "ctc_loss", "kl_div", "multilabel_margin_loss", "binary_cross_entropy_with_logits",
    "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfft2",
    "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft",
    "linalg_cond", "linalg_matrix_rank", "linalg_solve", "linalg_cholesky", "linalg_svdvals", "linalg_eigvals",
    "linalg_eigvalsh", "linalg_inv", "linalg_householder_product", "linalg_tensorinv", "linalg_tensorsolve",
    "fake_quantize_per_tensor_affine", "geqrf", "qr", "svd", "triangular_solve", "fractional_max_pool2d",
    "fractional_max_pool3d", "adaptive_max_pool3d", "linalg_qr", "linalg_cholesky_ex", "linalg_svd", "linalg_eig",
    "linalg_eigh", "linalg_lstsq", "linalg_inv_ex",
)

_PROMOTE = ("stack", "cat", "index_copy")



def _arg(args, kwargs, i, name, default):
    if name in kwargs:
        return kwargs[name]
    return args[i] if len(args) > i else default


def _pad(args, kwargs):
    """F.pad reaches reflection_pad1d/2d and replication_pad1d/2d/3d (float32); other modes, nothing."""
    mode = _arg(args, kwargs, 2, "mode", "constant")
    dims = len(_arg(args, kwargs, 1, "pad", ())) // 2
    if (mode == "reflect" and dims <= 2) or (mode == "replicate" and dims <= 3):
        return FP32
    return None


def _max_pool3d(args, kwargs):
    """max_pool3d is float32; with return_indices torch calls max_pool3d_with_indices (no policy)."""
    return None if _arg(args, kwargs, 6, "return_indices", False) else FP32


def _inner(args, kwargs):
    """inner reaches mm through tensordot, except with a 0-d operand (a multiplication)."""
    a = _arg(args, kwargs, 0, "input", None)
    b = _arg(args, kwargs, 1, "other", None)
    if getattr(a, "ndim", 1) == 0 or getattr(b, "ndim", 1) == 0:
        return None
    return LOWER


def _matrix_power(args, kwargs):
    """matrix_power multiplies (matmul) for |n| >= 2; n = 0, 1 copy or make an identity."""
    n = _arg(args, kwargs, 1, "n", 2)
    return LOWER_RESULT if abs(n) >= 2 else None


POLICY = {}
for _names, _kind in ((_LOWER, LOWER), (_FP32, FP32), (_PROMOTE, PROMOTE)):
    for _n in _names:
        POLICY[_n] = _kind
del _names, _kind, _n
POLICY.update(pad=_pad, max_pool3d=_max_pool3d, inner=_inner, matrix_power=_matrix_power,
              linalg_matrix_power=_matrix_power, linalg_pinv=LOWER_RESULT)
