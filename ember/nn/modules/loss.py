"""Loss modules: each holds its options and hands them, with its reduction, to the functional form in
ember.nn.functional. See https://pytorch.org/docs/stable/nn.html#loss-functions

Class weights are buffers (they move with .to() and appear in state_dict when given), as torch.
"""
import math
import warnings

from ..._ops.loss import _legacy_reduction
from .. import functional as F
from .distance import PairwiseDistance
from ._options import OptionsModule

__all__ = ["L1Loss", "NLLLoss", "NLLLoss2d", "PoissonNLLLoss", "GaussianNLLLoss", "KLDivLoss", "MSELoss", "BCELoss",
           "BCEWithLogitsLoss", "HingeEmbeddingLoss", "MultiLabelMarginLoss", "SmoothL1Loss", "HuberLoss",
           "SoftMarginLoss", "CrossEntropyLoss", "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss",
           "MarginRankingLoss", "MultiMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss",
           "LinearCrossEntropyLoss"]


class _Loss(OptionsModule):
    """Base of the losses: the reduction ('mean', 'sum' or 'none'; the legacy size_average/reduce pair, when
    either is given, decides it instead and warns). Subclasses keep their own options with _keep."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        legacy = size_average is not None or reduce is not None
        self.reduction = _legacy_reduction(size_average, reduce) if legacy else reduction

    def _settings(self, *names):
        """The named attributes and the reduction, as keyword arguments of the functional form."""
        return {name: getattr(self, name) for name in (*names, "reduction")}


class _WeightedLoss(_Loss):
    """A loss with an optional per-class weight, kept as a buffer."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


# ---- elementwise regression losses --------------------------------------------------------------

class L1Loss(_Loss):
    """Mean (or sum) absolute error."""
    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.l1_loss(input, target, **self._settings())


class MSELoss(_Loss):
    """Mean (or sum) squared error."""
    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.mse_loss(input, target, **self._settings())


class SmoothL1Loss(_Loss):
    """Squared error below beta, absolute error (shifted) above it."""
    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self._keep(beta=beta)

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, **self._settings("beta"))


class HuberLoss(_Loss):
    """SmoothL1Loss scaled by delta: squared error below delta, delta times absolute error above."""
    __constants__ = ["reduction", "delta"]

    def __init__(self, reduction="mean", delta=1.0):
        if not isinstance(delta, (float, int)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self._keep(delta=delta)

    def forward(self, input, target):
        return F.huber_loss(input, target, **self._settings("delta"))


# ---- likelihood losses ---------------------------------------------------------------------------

class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class targets given log-probabilities."""
    __constants__ = ["ignore_index", "reduction"]

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self._keep(ignore_index=ignore_index)

    def forward(self, input, target):
        return F.nll_loss(input, target, **self._settings("weight", "ignore_index"))


class NLLLoss2d(NLLLoss):
    """NLLLoss under its deprecated name."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and see "
                      "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.", FutureWarning,
                      stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax followed by NLLLoss, with optional label smoothing (targets may also be probabilities)."""
    __constants__ = ["ignore_index", "reduction", "label_smoothing"]

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self._keep(ignore_index=ignore_index, label_smoothing=label_smoothing)

    def forward(self, input, target):
        return F.cross_entropy(input, target, **self._settings("weight", "ignore_index", "label_smoothing"))


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson target given its rate (or log-rate)."""
    __constants__ = ["log_input", "full", "eps", "reduction"]

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self._keep(log_input=log_input, full=full, eps=eps)

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, **self._settings("log_input", "full", "eps"))


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of a Gaussian target given its mean (input) and variance (var)."""
    __constants__ = ["full", "eps", "reduction"]

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self._keep(full=full, eps=eps)

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, **self._settings("full", "eps"))


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of target from input (input as log-probabilities)."""
    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self._keep(log_target=log_target)

    def forward(self, input, target):
        return F.kl_div(input, target, **self._settings("log_target"))


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities."""
    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, **self._settings("weight"))


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits (sigmoid folded in), with optional weight and positive-class weight buffers."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        for name, value in (("weight", weight), ("pos_weight", pos_weight)):
            self.register_buffer(name, value)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, **self._settings("weight", "pos_weight"))


class LinearCrossEntropyLoss(_WeightedLoss):
    """cross entropy of a learned Linear projection of the input (F.linear_cross_entropy); the weight of
    shape (C, *out_features, in_features) is stored flat in self.linear, as torch does."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or 1.0 < label_smoothing:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight, reduction=reduction)
        self._keep(num_classes=num_classes, out_features=out_features, ignore_index=ignore_index,
                   label_smoothing=label_smoothing)
        from .linear import Linear
        rows = math.prod(out_features, start=num_classes)
        self.linear = Linear(in_features, rows, bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        grid = (self.num_classes, *self.out_features)
        bias = self.linear.bias
        return F.linear_cross_entropy(input, self.linear.weight.reshape((*grid, self.linear.in_features)), target,
                                      linear_bias=None if bias is None else bias.reshape(grid),
                                      **self._settings("weight", "ignore_index", "label_smoothing", "options"))

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")


# ---- margin and classification losses -------------------------------------------------------------

class HingeEmbeddingLoss(_Loss):
    """x where the target is 1, max(0, margin - x) where it is -1."""
    __constants__ = ["margin", "reduction"]

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self._keep(margin=margin)

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, **self._settings("margin"))


class SoftMarginLoss(_Loss):
    """Two-class logistic loss log(1 + exp(-y x))."""
    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, **self._settings())


class MultiLabelMarginLoss(_Loss):
    """Multi-class multi-label hinge loss (targets: class indices padded with -1)."""
    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, **self._settings())


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss."""
    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, **self._settings("weight"))


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss, p = 1 or 2."""
    __constants__ = ["p", "margin", "reduction"]

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self._keep(p=p, margin=margin)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D instead")

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, **self._settings("p", "margin", "weight"))


class _PairMarginLoss(_Loss):
    """CosineEmbeddingLoss and MarginRankingLoss: a margin (default 0) for pairs of inputs labelled by target."""
    __constants__ = ["margin", "reduction"]

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self._keep(margin=margin)


class CosineEmbeddingLoss(_PairMarginLoss):
    """1 - cos(x1, x2) for similar pairs (target 1), max(0, cos(x1, x2) - margin) for dissimilar ones (-1)."""

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, **self._settings("margin"))


class MarginRankingLoss(_PairMarginLoss):
    """max(0, -y (x1 - x2) + margin): x1 should rank above x2 where y is 1, below where it is -1."""

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, **self._settings("margin"))


def _check_triplet_margin(owner, margin):
    if margin <= 0:
        raise ValueError(f"{owner}: expected margin to be greater than 0, got {margin} instead")


class TripletMarginLoss(_Loss):
    """max(0, d(a, p) - d(a, n) + margin) with d the p-norm distance."""
    __constants__ = ["margin", "p", "eps", "swap", "reduction"]

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        _check_triplet_margin("TripletMarginLoss", margin)
        self._keep(margin=margin, p=p, eps=eps, swap=swap)

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, **self._settings("margin", "p", "eps", "swap"))


class TripletMarginWithDistanceLoss(_Loss):
    """TripletMarginLoss with any distance function (PairwiseDistance by default)."""
    __constants__ = ["margin", "swap", "reduction"]

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        _check_triplet_margin("TripletMarginWithDistanceLoss", margin)
        self._keep(distance_function=PairwiseDistance() if distance_function is None else distance_function,
                   margin=margin, swap=swap)

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   **self._settings("distance_function", "margin", "swap"))


class CTCLoss(_Loss):
    """Connectionist temporal classification: -log of the total probability of all alignments of the target."""
    __constants__ = ["blank", "reduction"]

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self._keep(blank=blank, zero_infinity=zero_infinity)

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths,
                          **self._settings("blank", "zero_infinity"))
