"""Global state at start-up and calls without their size argument, pinned against torch (issue 19: no test held
them, so a changed default went unnoticed)."""
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember

_PROBE = """
import json, sys
lib = __import__(sys.argv[1])
print(json.dumps({
    "anomaly": lib.is_anomaly_enabled(), "anomaly_nan": lib.is_anomaly_check_nan_enabled(),
    "grad": lib.is_grad_enabled(), "inference": lib.is_inference_mode_enabled(),
    "default_dtype": str(lib.get_default_dtype()), "deterministic": lib.are_deterministic_algorithms_enabled(),
    "deterministic_warn_only": lib.is_deterministic_algorithms_warn_only_enabled(),
    "matmul_precision": lib.get_float32_matmul_precision(), "warn_always": lib.is_warn_always_enabled(),
    "default_device": str(lib.get_default_device()),
}))
"""


def test_global_state_at_startup_matches_torch():
    """Each library in a fresh interpreter: the flags a program sees before it sets any."""
    seen = []
    for name in ("torch", "ember"):
        out = subprocess.run([sys.executable, "-c", _PROBE, name], capture_output=True, text=True, timeout=120,
                             check=True)
        seen.append(json.loads(out.stdout))
    assert seen[1] == seen[0]


@pytest.mark.parametrize("call", ["view()", "reshape()", "view(())", "reshape(())", "expand()", "permute()"])
def test_size_argument_missing_or_empty(call):
    """view()/reshape() with no size raise torch's TypeError; an empty size is the 0-d shape."""
    results = []
    for lib in (torch, ember):
        x = lib.arange(6.0)
        one = x[:1]
        try:
            r = eval(f"one.{call}" if "(())" in call else f"x.{call}")  # noqa: S307 (a fixed list of calls)
            results.append(("ok", tuple(r.shape)))
        except Exception as e:  # noqa: BLE001 (the type is what is compared)
            results.append(type(e).__name__)
    assert results[0] == results[1]


@pytest.mark.parametrize("ignore_index", [0, 1, -100])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_probability_target_and_ignore_index(ignore_index, reduction):
    """Class-probability targets: torch refuses any ignore_index but the default (it applies to class indices)."""
    logits = np.random.RandomState(0).randn(4, 3)
    probs = np.random.RandomState(1).dirichlet([1, 1, 1], 4)
    got = []
    for lib in (torch, ember):
        x = lib.tensor(logits, requires_grad=True)
        try:
            loss = lib.nn.functional.cross_entropy(x, lib.tensor(probs), ignore_index=ignore_index,
                                                   reduction=reduction, label_smoothing=0.1)
        except RuntimeError as e:
            got.append(str(e))
            continue
        (g,) = lib.autograd.grad(loss.sum(), x)
        got.append((loss.detach().numpy(), g.numpy()))
    if isinstance(got[0], str):
        assert got[1] == got[0]
        return
    np.testing.assert_allclose(got[1][0], got[0][0], rtol=1e-12)
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-12)
