"""examples/ddp_digits.py on 2 MPI processes: it trains, both processes end with the same weights (the
script checks it with all_gather and fails otherwise), and the accuracy is that of a real training run."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "ddp_digits.py")


def test_ddp_digits_trains_on_two_processes():
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    out = subprocess.run([mpiexec, "-n", "2", sys.executable, EXAMPLE, "--epochs", "2"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "2 process(es)" in out.stdout and "every process holds the same weights" in out.stdout
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", out.stdout).group(1))
    assert accuracy >= 0.95, out.stdout
