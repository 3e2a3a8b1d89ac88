"""torch.testing: assert_close and make_tensor (https://pytorch.org/docs/stable/testing.html)."""
import warnings

from ._comparison import assert_close
from ._creation import make_tensor

__all__ = ["assert_close", "make_tensor"]

# the defaults assert_allclose used before assert_close replaced it (torch 1.12)
_ALLCLOSE_PRECISIONS = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated (torch 1.12): assert_close with the old per-dtype tolerances, dtypes not compared."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    from .. import Tensor, tensor
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        precisions = [_ALLCLOSE_PRECISIONS.get(str(t.dtype).split(".")[-1], (0.0, 0.0)) for t in (actual, expected)]
        rtol = max(p[0] for p in precisions)
        atol = max(p[1] for p in precisions)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
