"""Whole seeded programs give torch's losses: tests/scripts/seeded_training.py (an MLP and a CNN on
the digits set, an LSTM language model; init, a shuffling DataLoader and dropout all draw from the
generator) runs under torch and under ember, and every step's loss agrees (float64 to 1e-12
relative, float32 to 1e-5) and the generator's final state is the same bytes.
"""
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")  # the digits data set ships with scikit-learn

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")
SCRIPT = os.path.join(SCRIPTS, "seeded_training.py")
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
           PYTHONDONTWRITEBYTECODE="1")
TOLERANCE = {"float64": 1e-12, "float32": 1e-5}


def _run_both():
    """Start torch's run and ember's run side by side; return both outputs."""
    torch_run = subprocess.Popen([sys.executable, SCRIPT], cwd=SCRIPTS, env=ENV, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    ember_run = subprocess.Popen([sys.executable, os.path.join(SCRIPTS, "_launch_ember.py"), SCRIPT], cwd=SCRIPTS,
                                 env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outs = []
    for proc in (torch_run, ember_run):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        outs.append(out)
    return outs


def _parse(out):
    losses = {}
    states = {}
    for line in out.splitlines():
        parts = line.split()
        if parts[0] == "loss":
            losses[tuple(parts[1:4])] = float.fromhex(parts[4])
        elif parts[0] == "state":
            states[parts[1]] = parts[2]
    return losses, states


def test_seeded_programs_match_torch_step_by_step():
    torch_out, ember_out = _run_both()
    torch_losses, torch_states = _parse(torch_out)
    ember_losses, ember_states = _parse(ember_out)
    assert len(torch_losses) == 2 * (20 + 20 + 12)
    assert ember_losses.keys() == torch_losses.keys()
    for key, expected in torch_losses.items():
        got = ember_losses[key]
        assert abs(got - expected) <= TOLERANCE[key[0]] * abs(expected), (key, got, expected)
    assert ember_states == torch_states
