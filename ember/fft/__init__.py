"""ember.fft: torch.fft's namespace (https://pytorch.org/docs/stable/fft.html).

The transforms are declared in ember/_ops/fft.py; this module only names them.
"""
from .._ops.fft import (fft, fft2, fftfreq, fftn, fftshift, hfft, hfft2, hfftn, ifft, ifft2, ifftn, ifftshift,
                        ihfft, ihfft2, ihfftn, irfft, irfft2, irfftn, rfft, rfft2, rfftfreq, rfftn)

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

from ..amp._dispatch import wrap_namespace as _wrap_namespace  # noqa: E402

_wrap_namespace(globals(), "fft_")  # autocast policies (Note [Autocast dispatch] in ember/amp/_dispatch.py)

from .._ops._argcheck import guard_namespace as _guard_namespace  # noqa: E402

_guard_namespace(globals(), "fft_", precheck=True)  # C-level in torch: Note [Checked at the boundary] in ember/_ops/_argcheck.py
