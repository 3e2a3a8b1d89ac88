"""torch.backends: flags scripts set at the top (cudnn.benchmark, cuda.matmul.allow_tf32 ...) and
availability checks. Each submodule says which flags are recorded only: ember computes with NumPy on the
CPU, so none of them changes a result."""
from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401


class _Mha:
    """torch.backends.mha: whether MultiheadAttention / TransformerEncoder take torch's inference fast
    path (ember computes the same values; the flag selects the fast path's fully-masked-row and
    nested-tensor padding behaviour, see ember/nn/modules/attention.py)."""
    _enabled = True

    def get_fastpath_enabled(self):
        return _Mha._enabled

    def set_fastpath_enabled(self, value):
        _Mha._enabled = bool(value)


mha = _Mha()
