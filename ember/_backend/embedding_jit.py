"""Embedding's backward scatter, out[index[i]] += src[i], as a compiled loop (numba): numpy_cpu.index_add_rows'
jit counterpart for the dense embedding gradient. One pass in index order: each row sums its gradients
first occurrence first onto zeros (as the NumPy rounds do for rows repeated up to 8 times; more often
repeated ones it sums with reduceat, in another order). Loaded through jit.load("embedding_jit")
(Note [JIT kernels]); tests/test_embedding_jit.py holds it to torch.
"""
import numba
import numpy as np


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _index_add_rows(out, index, src):
    for i in range(index.shape[0]):
        orow = out[index[i]]
        srow = src[i]
        for j in range(srow.shape[0]):
            orow[j] += srow[j]


def index_add_rows(out, index, src):
    """out[index[i]] += src[i] for a C-contiguous 2-D out and src of one float dtype and int64 indices known to
    lie in [0, out.shape[0]) (the caller checks: the loop does not)."""
    _index_add_rows(out, np.ascontiguousarray(index, dtype=np.int64), np.ascontiguousarray(src))
    return out
