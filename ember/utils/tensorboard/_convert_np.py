"""What the writer accepts wherever torch accepts a tensor (ember tensors, NumPy arrays, Python and NumPy
numbers) made into a NumPy array."""
import numpy as np

from ..._tensor import Tensor


def make_np(x):
    """x as a NumPy array: an array as it is, a number as a 1-element array, a tensor detached (a bfloat16
    tensor through float16 first, as torch does: NumPy has no bfloat16 of its own)."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        return _prepare_tensor(x)
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def _prepare_tensor(x):
    from ... import bfloat16, float16
    if x.dtype is bfloat16:
        x = x.to(float16)
    return x.detach().cpu().numpy()
