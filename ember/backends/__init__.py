"""torch.backends: flags scripts set (cudnn.benchmark ...) and availability checks."""
from types import SimpleNamespace


class _Mps:
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def is_built():
        return False


mps = _Mps()
cudnn = SimpleNamespace(enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
                        is_available=lambda: False, version=lambda: None)
cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True),
                       is_built=lambda: False)
mkldnn = SimpleNamespace(enabled=False, is_available=lambda: False)
openmp = SimpleNamespace(is_available=lambda: False)


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
