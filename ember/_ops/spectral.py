"""stft / istft (torch 2.x semantics) as composites of ember ops over the FFT primitives of fft.py, so
their gradients (and higher ones) come from the ops they are made of.

stft: frames of n_fft samples every hop_length (Tensor.unfold), times the window zero-padded to n_fft
in the middle, through a onesided r2c (real input and window) or a c2c; (batch, freq, frames) out.
With align_to_window (center=False only) each frame is win_length samples and the window keeps its
place in the middle of the n_fft points, so frames start hop_length apart from the input's first sample.
istft: the inverse transform of each frame, times the window, overlap-added (unfold's adjoint) and
divided by the overlap-added squared window (which must not vanish: torch's NOLA check).
"""
import warnings

from .. import _dtype as D
from .._backend import fft_numpy as K
from .._tensor import Tensor
from ._registry import install
from .fft import FftC2C, FftC2R, FftR2C
from .sampling import ConstantPad, pad as _pad

_NAMES = D.SCALAR_NAMES


def _error(fname, input, message):
    return RuntimeError(f"{fname}({_NAMES[input._dtype]}Type{list(input.shape)}, ...) : {message}")


def _centered(window, n_fft, win_length):
    """A window of win_length zero-padded on both sides to n_fft, the extra zero on the right."""
    left = (n_fft - win_length) // 2
    return ConstantPad.apply(window, pads=(left, n_fft - win_length - left), value=0)


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """torch.stft: https://pytorch.org/docs/stable/generated/torch.stft.html"""
    if not isinstance(input, Tensor):
        raise TypeError(f"stft(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:  # torch pads in its Python wrapper, before any other check
        signal_dim = input.dim()
        extended = [1] * (3 - signal_dim) + list(input.shape)
        p = n_fft // 2
        input = _pad(input.view(extended), [p, p], pad_mode)
        input = input.view(input.shape[-signal_dim:])
    complex_input = input._dtype.category == D.COMPLEX
    complex_window = window is not None and window._dtype.category == D.COMPLEX
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is known to cause "
                      "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                      "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    if return_complex is None:
        if not (complex_input or complex_window):
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                               "require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                      "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                      "still call torch.view_as_real on the complex output to recover the old return format.",
                      UserWarning, stacklevel=2)
    if input._dtype.category < D.FLOAT:
        raise _error("stft", input, "expected a tensor of floating point or complex values")
    if input.dim() not in (1, 2):
        raise _error("stft", input, "expected a 1D or 2D tensor")
    hop_length = n_fft >> 2 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    length = input.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise _error("stft", input, f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise _error("stft", input, f"expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise _error("stft", input, f"expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise _error("stft", input, f"expected a 1D window tensor of size equal to win_length={win_length}, but got "
                                    f"window with size {list(window.shape)}")
    onesided = (not (complex_input or complex_window)) if onesided is None else onesided
    if onesided and (complex_input or complex_window):
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    x = input if input.dim() == 2 else input.unsqueeze(0)
    if window is None:
        window = x.new_ones(win_length) if x._dtype.category >= D.FLOAT else None
    if align_to_window and win_length < n_fft:
        frames = _centered(x.unfold(-1, win_length, hop_length) * window, n_fft, win_length)
    else:
        if win_length < n_fft:
            window = _centered(window, n_fft, win_length)
        frames = x.unfold(-1, n_fft, hop_length) * window  # (batch, n_frames, n_fft)
    frames = _promote(frames)
    scaling = K.SQRT_N if normalized else K.NONE
    if frames._dtype.category == D.COMPLEX:
        spec = FftC2C.apply(frames, dims=(2,), scaling=scaling, forward=True)
    else:
        spec = FftR2C.apply(frames, dims=(2,), scaling=scaling, onesided=onesided)
    out = spec.transpose(1, 2)
    if input.dim() == 1:
        out = out.squeeze(0)
    if not return_complex:
        from .complex import view_as_real
        return view_as_real(out.contiguous())
    return out


def _promote(t):
    """FFT inputs: half precision is refused as torch's FFT refuses it (integers cannot occur here)."""
    if t._dtype is D.float16 or t._dtype is D.bfloat16:
        raise RuntimeError(f"Unsupported dtype {_NAMES[t._dtype]}")
    return t


def _overlap_add(frames, hop, length):
    """Frames (batch, n, size) summed into (batch, length) at offsets 0, hop, 2 hop ... (Tensor.unfold's
    adjoint) for hop <= size, in ceil(size / hop) steps: columns [lo, lo + hop) of every frame tile the
    signal from lo on without overlapping, so each step is a reshape and a shifted (zero-padded) add."""
    batch, n, size = frames.shape
    total = None
    for lo in range(0, size, hop):
        part = frames[:, :, lo:lo + hop]
        if part.shape[2] < hop:
            part = ConstantPad.apply(part, pads=(0, hop - part.shape[2]), value=0)
        placed = ConstantPad.apply(part.reshape(batch, n * hop), pads=(lo, length - lo - n * hop), value=0)
        total = placed if total is None else total + placed
    return total


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """torch.istft: https://pytorch.org/docs/stable/generated/torch.istft.html"""
    if not isinstance(input, Tensor):
        raise TypeError(f"istft(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please provide the same window "
                      "used by stft to make the inversion lossless.To suppress this warning and use a rectangular "
                      "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    hop_length = n_fft >> 2 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if input._dtype.category != D.COMPLEX:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if input.dim() < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-2, 1], but got -3)")
    n_frames = input.shape[-1]
    fft_size = input.shape[-2]
    expected_len = n_fft + hop_length * (n_frames - 1)
    if input.numel() == 0:
        raise _error("istft", input, "istft input tensor cannot be empty")
    if input.dim() not in (2, 3):
        raise _error("istft", input, f"expected a tensor with 3 or 4 dimensions of float, but got {input.dim() + 1}")
    onesided = fft_size != n_fft if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != fft_size:
        raise _error("istft", input, "expected the frequency dimension (3rd to the last) of the input tensor to match "
                                     f"n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and n_fft != fft_size:
        raise _error("istft", input, "expected the frequency dimension (3rd to the last) of the input tensor to match "
                                     f"n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop_length <= win_length:
        raise _error("istft", input, "expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise _error("istft", input, "expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise _error("istft", input, "Invalid window shape. window has to be 1D and length of `win_length`")
    real_dtype = D.float32 if input._dtype is D.complex64 else D.float64
    w = window if window is not None else input.new_ones(win_length, dtype=real_dtype)
    if win_length != n_fft:
        w = _centered(w, n_fft, win_length)
    x = input if input.dim() == 3 else input.unsqueeze(0)
    x = x.transpose(1, 2)  # (batch, n_frames, freq)
    scaling = K.SQRT_N if normalized else K.N
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = FftC2C.apply(x, dims=(2,), scaling=scaling, forward=False)
    else:
        if window is not None and window._dtype.category == D.COMPLEX:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            x = x.narrow(-1, 0, n_fft // 2 + 1)
        frames = FftC2R.apply(x, dims=(2,), scaling=scaling, last_size=n_fft)
    y = _overlap_add(frames * w, hop_length, expected_len)
    envelope = _overlap_add(w.pow(2).expand(1, n_frames, n_fft), hop_length, expected_len)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = expected_len - n_fft // 2
    else:
        end = expected_len
    y = y[:, start:end]
    envelope = envelope[:, start:end]
    if bool((envelope.abs().min() < 1e-11).item()):
        raise RuntimeError(f"istft({_NAMES[input._dtype]}Type{list(input.shape)}, ...) window overlap add min: 1")
    y = y / envelope
    if input.dim() == 2:
        y = y.squeeze(0)
    if end > expected_len:
        warnings.warn("The length of signal is shorter than the length parameter. Result is being padded with zeros "
                      "in the tail. Please check your center and hop_length settings.", UserWarning, stacklevel=2)
        y = ConstantPad.apply(y, pads=(0, end - expected_len), value=0)
    return y


install(stft, "stft")
install(istft, "istft")
