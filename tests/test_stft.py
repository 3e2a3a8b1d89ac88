"""stft / istft against torch: 1-D and batched signals, real and complex inputs and windows, hop/win
lengths, center and pad modes, normalized, onesided, return_complex, align_to_window, istft's length;
values, dtypes, gradients (input and window, random upstream gradient, second order for a few),
warnings and torch's errors. Through the op table's harness (tests/ops/harness.py)."""
import re
import warnings

import numpy as np
import pytest
import torch

import ember
from tests.ops.harness import Case, T, run_case

SINGLE = dict(atol=5e-5, rtol=5e-4)
STFT = [  # (signal shape, window length or None, stft keyword arguments)
    ((40,), 16, {}),
    ((2, 40), 16, {}),
    ((2, 37), 10, {"hop_length": 3, "win_length": 10}),
    ((37,), None, {"hop_length": 5, "win_length": 9}),
    ((2, 40), 16, {"center": False}),
    ((40,), 16, {"normalized": True}),
    ((2, 33), 16, {"onesided": False}),
    ((2, 40), 8, {"win_length": 8, "center": False, "align_to_window": True}),
    ((40,), 8, {"win_length": 8, "center": False, "align_to_window": False}),
    ((2, 40), 16, {"pad_mode": "constant"}),
    ((40,), 16, {"pad_mode": "replicate", "hop_length": 7}),
    ((40,), 16, {"pad_mode": "circular"}),
    ((16,), 16, {"center": False}),
]


def _stft_fn(kw, with_window, return_complex=True):
    def fn(lib, x, *w):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.stft(x, 16, window=w[0] if with_window else None, return_complex=return_complex, **kw)
    return fn


def _stft_cases():
    cases = []
    for shape, win, kw in STFT:
        for dtype in ("float32", "float64", "complex128"):
            window = [T((win,), low=0.2, high=1.0, dtype="float32" if dtype == "float32" else "float64")]
            cases.append(Case("stft", [T(shape)] + (window if win else []), _stft_fn(kw, bool(win)), dtypes=(dtype,),
                              id=f"{shape}-{win}-{kw}", **SINGLE))
    # a complex window on a real signal; a float32 signal with a float64 window (promotes)
    cases.append(Case("stft", [T((2, 40)), T((16,), dtype="complex128")], _stft_fn({}, True), dtypes=("float64",),
                      id="complex-window"))
    cases.append(Case("stft", [T((40,)), T((16,), dtype="float64")], _stft_fn({}, True), dtypes=("float32",),
                      id="mixed-window", **SINGLE))
    cases.append(Case("stft", [T((2, 40)), T((16,), dtype="float64")], _stft_fn({"hop_length": 6}, True, False),
                      dtypes=("float64",), id="return_complex=False"))
    cases.append(Case("stft", [T((2, 30)), T((12,), low=0.2, dtype="float64")], _stft_fn({"win_length": 12}, True),
                      dtypes=("float64",), gradgrad=True, id="gradgrad"))
    cases.append(Case("Tensor.stft", [T((30,)), T((16,), dtype="float64")],
                      lambda lib, x, w: x.stft(16, hop_length=5, window=w, return_complex=True),
                      dtypes=("float64",), id="method"))
    return cases


ISTFT = [  # (frames, window length or None, istft keyword arguments); n_fft = 16
    ((9, 11), 16, {}),
    ((2, 9, 11), 16, {"hop_length": 5}),
    ((2, 9, 7), 10, {"win_length": 10, "hop_length": 3}),
    ((9, 11), None, {}),
    ((2, 9, 11), 16, {"normalized": True}),
    ((2, 9, 11), 16, {"length": 30}),
    ((2, 9, 11), 16, {"length": 70}),
    ((2, 16, 11), 16, {"onesided": False}),
    ((2, 16, 11), 16, {"return_complex": True}),
    ((2, 16, 11), None, {"onesided": False, "return_complex": True, "center": False}),
    ((9, 6), 16, {"hop_length": 8, "center": False, "length": 50}),
]


def _istft_fn(kw, with_window):
    def fn(lib, s, *w):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.istft(s, 16, window=w[0] if with_window else None, **kw)
    return fn


def _istft_cases():
    cases = []
    for shape, win, kw in ISTFT:
        for dtype, real in (("complex64", "float32"), ("complex128", "float64")):
            inputs = [T(shape)] + ([T((win,), low=0.3, high=1.0, dtype=real)] if win else [])
            cases.append(Case("istft", inputs, _istft_fn(kw, bool(win)), dtypes=(dtype,), id=f"{shape}-{win}-{kw}",
                              **SINGLE))
    cases.append(Case("istft", [T((2, 9, 11)), T((16,), low=0.3, dtype="float64")], _istft_fn({}, True),
                      dtypes=("complex128",), gradgrad=True, id="gradgrad"))
    cases.append(Case("istft", [T((2, 16, 11)), T((16,), low=0.3, dtype="complex128")],
                      _istft_fn({"return_complex": True}, True), dtypes=("complex128",), id="complex-window"))
    cases.append(Case("Tensor.istft", [T((9, 11)), T((16,), low=0.3, dtype="float64")],
                      lambda lib, s, w: s.istft(16, window=w), dtypes=("complex128",), id="method"))
    return cases


CASES = _stft_cases() + _istft_cases()


@pytest.mark.parametrize("case,dtype", [pytest.param(c, d, id=c.param_id(d)) for c in CASES for d in c.dtypes])
def test_stft_istft(case, dtype):
    run_case(case, dtype)


def test_round_trip():
    """istft(stft(x)) gives x back in both libraries (a hann window, the default hop)."""
    x = np.random.default_rng(3).standard_normal((2, 50))
    for lib in (torch, ember):
        w = lib.hann_window(16, dtype=lib.float64)
        s = lib.stft(lib.from_numpy(x), 16, window=w, return_complex=True)
        y = lib.istft(s, 16, window=w, length=50)
        np.testing.assert_allclose(y.numpy(), x, atol=1e-12)


WARNINGS = {
    "no-window": "lib.stft(lib.zeros(40), 16, return_complex=True)",
    "return_complex=False": "lib.stft(lib.zeros(40), 16, window=lib.ones(16), return_complex=False)",
    "istft-no-window": "lib.istft(lib.ones(9, 11, dtype=lib.complex64), 16)",
    "istft-length": "lib.istft(lib.ones(9, 11, dtype=lib.complex64), 16, window=lib.ones(16), length=80)",
}


def _warned(lib, code):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        eval(code, {"lib": lib})
    return sorted(str(m.message).split(" (Triggered")[0] for m in w)


def _torch_warnings_in_subprocess():
    import inspect
    import json
    import subprocess
    import sys
    script = (f"import json, warnings, torch\nWARNINGS = {WARNINGS!r}\n{inspect.getsource(_warned)}\n"
              "print(json.dumps({k: _warned(torch, v) for k, v in WARNINGS.items()}))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# torch warns once per process (TORCH_WARN_ONCE): its warnings are collected when this module is imported,
# before any test here calls stft; if something earlier in the process already drew them, in a fresh process
_TORCH_WARNINGS = {k: _warned(torch, v) for k, v in WARNINGS.items()}


@pytest.fixture(scope="module")
def torch_warnings():
    if all(_TORCH_WARNINGS.values()):
        return _TORCH_WARNINGS
    return _torch_warnings_in_subprocess()


@pytest.mark.parametrize("name", sorted(WARNINGS))
def test_warnings(name, torch_warnings):
    assert torch_warnings[name]  # torch does warn here
    assert _warned(ember, WARNINGS[name]) == torch_warnings[name]


def _c(lib, *shape):
    return lib.ones(*shape, dtype=lib.complex64)


ERRORS = {
    "return_complex-missing": lambda lib: lib.stft(lib.zeros(40), 16, window=lib.ones(16)),
    "n_fft-zero": lambda lib: lib.stft(lib.zeros(40), 0, return_complex=True, center=False),
    "n_fft-too-long": lambda lib: lib.stft(lib.zeros(40), 41, center=False, return_complex=True),
    "hop-zero": lambda lib: lib.stft(lib.zeros(40), 16, hop_length=0, return_complex=True),
    "win-too-long": lambda lib: lib.stft(lib.zeros(40), 16, win_length=17, return_complex=True),
    "win-zero": lambda lib: lib.stft(lib.zeros(40), 16, win_length=0, return_complex=True),
    "window-size": lambda lib: lib.stft(lib.zeros(40), 16, window=lib.ones(15), return_complex=True),
    "window-2d": lambda lib: lib.stft(lib.zeros(40), 16, window=lib.ones(4, 4), return_complex=True),
    "input-3d": lambda lib: lib.stft(lib.zeros(2, 2, 40), 16, return_complex=True),
    "input-int": lambda lib: lib.stft(lib.arange(40), 16, return_complex=True),
    "onesided-complex": lambda lib: lib.stft(_c(lib, 40), 16, onesided=True, return_complex=True),
    "onesided-complex-window": lambda lib: lib.stft(lib.zeros(40), 16, window=_c(lib, 16), onesided=True,
                                                    return_complex=True),
    "align-center": lambda lib: lib.stft(lib.zeros(40), 16, align_to_window=True, return_complex=True),
    "pad-mode": lambda lib: lib.stft(lib.zeros(40), 16, pad_mode="bad", return_complex=True),
    "reflect-too-short": lambda lib: lib.stft(lib.zeros(5), 16, return_complex=True),
    "istft-real": lambda lib: lib.istft(lib.zeros(9, 11), 16),
    "istft-1d": lambda lib: lib.istft(_c(lib, 9), 16),
    "istft-onesided-size": lambda lib: lib.istft(_c(lib, 9, 11), 15),
    "istft-full-size": lambda lib: lib.istft(_c(lib, 9, 11), 16, onesided=False),
    "istft-hop": lambda lib: lib.istft(_c(lib, 9, 11), 16, hop_length=20),
    "istft-hop-zero": lambda lib: lib.istft(_c(lib, 9, 11), 16, hop_length=0),
    "istft-win": lambda lib: lib.istft(_c(lib, 9, 11), 16, win_length=20),
    "istft-window-size": lambda lib: lib.istft(_c(lib, 9, 11), 16, window=lib.ones(15)),
    "istft-nola": lambda lib: lib.istft(_c(lib, 9, 11), 16, window=lib.hann_window(16), center=False),
    "istft-onesided-complex": lambda lib: lib.istft(_c(lib, 9, 11), 16, window=lib.ones(16), return_complex=True),
    "istft-complex-window": lambda lib: lib.istft(_c(lib, 9, 11), 16, window=_c(lib, 16)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as te:
            ERRORS[name](torch)
        with pytest.raises(type(te.value)) as ee:
            ERRORS[name](ember)
    if type(te.value) is RuntimeError:  # the message after torch's argument dump, first line
        assert _message(ee.value) == _message(te.value)


def _message(e):
    return re.sub(r"^i?stft\(.*?\) (: )?", "", str(e)).split("\n")[0]
