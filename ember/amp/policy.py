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
    # composites in torch that reach one of the above, so they run in the lower precision (einsum,
    # tensordot, inner, chain_matmul: see their functions below)
    "linalg_matmul", "linalg_multi_dot",
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
    """inner reaches mm through tensordot, except with a 0-d operand (a multiplication) or two
    vectors (a dot product)."""
    a = getattr(_arg(args, kwargs, 0, "input", None), "ndim", 1)
    b = getattr(_arg(args, kwargs, 1, "other", None), "ndim", 1)
    if a == 0 or b == 0 or a + b == 2:
        return None
    return LOWER


def _tensordot(args, kwargs):
    """tensordot is an mm, except when it contracts every dim of both (a 0-d result: a dot)."""
    a = getattr(_arg(args, kwargs, 0, "a", None), "ndim", 1)
    b = getattr(_arg(args, kwargs, 1, "b", None), "ndim", 1)
    dims = _arg(args, kwargs, 2, "dims", 2)
    if isinstance(dims, int):
        n = dims
    elif isinstance(dims, (list, tuple)) and dims and isinstance(dims[0], (list, tuple)):
        n = len(dims[0])
    else:
        n = 1
    return None if a + b - 2 * n == 0 else LOWER


def _chain_matmul(args, kwargs):
    """chain_matmul of one matrix returns it (no mm)."""
    matrices = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    return LOWER if len(matrices) > 1 else None


def _einsum(args, kwargs):
    """einsum contracts operand pairs with bmm when a label shared by two operands is summed
    (absent from the output); otherwise it multiplies, sums and permutes in the given dtype."""
    if not args:
        return None
    if isinstance(args[0], str):
        lhs, arrow, out = args[0].replace(" ", "").replace("...", ".").partition("->")
        terms = lhs.split(",")
    else:  # the sublist form: operand, sublist, operand, sublist, ..., [output sublist]
        terms = [tuple(args[i]) for i in range(1, len(args), 2)]
        arrow = len(args) % 2 == 1
        out = tuple(args[-1]) if arrow else ()
    counts = {}
    for term in terms:
        for label in set(term):
            counts[label] = counts.get(label, 0) + 1
    if not arrow:  # implicit output: the labels used once (and the ellipsis)
        used = [label for term in terms for label in term]
        out = [label for label in used if used.count(label) == 1 or label == "."]
    for label, n in counts.items():
        if n >= 2 and label not in out:
            return LOWER
    return None


def _matrix_power(args, kwargs):
    """matrix_power multiplies (matmul) for |n| >= 2; n = 0, 1 copy or make an identity."""
    n = _arg(args, kwargs, 1, "n", 2)
    return LOWER_RESULT if abs(n) >= 2 else None


POLICY = {}
for _names, _kind in ((_LOWER, LOWER), (_FP32, FP32), (_PROMOTE, PROMOTE)):
    for _n in _names:
        POLICY[_n] = _kind
del _names, _kind, _n
POLICY.update(pad=_pad, max_pool3d=_max_pool3d, inner=_inner, tensordot=_tensordot, chain_matmul=_chain_matmul,
              einsum=_einsum, matrix_power=_matrix_power,
              linalg_matrix_power=_matrix_power, linalg_pinv=LOWER_RESULT)
