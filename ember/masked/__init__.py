"""ember.masked: torch.masked's reductions and normalizations with a `mask=` argument.

https://pytorch.org/docs/stable/masked.html. ember has the functions on strided tensors; the prototype
MaskedTensor class (torch.masked.MaskedTensor, masked_tensor, as_masked_tensor) is not provided.
"""
from ._ops import (amax, amin, argmax, argmin, cumprod, cumsum, log_softmax, logaddexp, logsumexp, mean,
                   median, norm, normalize, prod, softmax, softmin, std, sum, var)

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp", "logsumexp",
           "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var"]
