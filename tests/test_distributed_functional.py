"""ember.distributed.nn.functional (collectives autograd differentiates) against torch's: two gloo processes of
torch and two MPI processes of ember run tests/_distributed/functional_collectives.py (every collective, uneven
all_to_all_single splits, a reduce op other than sum) and their outputs, input gradients and deprecation
warnings must agree on each rank."""
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.test_ddp import free_port
from tests.test_distributed import ROOT, env, mpiexec

WORKER = os.path.join(ROOT, "tests", "_distributed", "functional_collectives.py")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("functional_collectives")
    port = str(free_port())
    base = {k: v for k, v in env().items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    torch_procs = [subprocess.Popen([sys.executable, WORKER, "torch", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True,
                                    env=dict(base, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(r),
                                             WORLD_SIZE="2", OMP_NUM_THREADS="1")) for r in range(2)]
    ember_run = subprocess.run([mpiexec(), "-n", "2", sys.executable, WORKER, "ember", str(out)], capture_output=True,
                               text=True, timeout=240, env=env(), cwd=ROOT)
    logs = [p.communicate(timeout=240)[0] for p in torch_procs]
    assert ember_run.returncode == 0, ember_run.stdout[-3000:] + ember_run.stderr[-3000:]
    assert all(p.returncode == 0 for p in torch_procs), "\n".join(log[-3000:] for log in logs)
    return [(np.load(out / f"ember_r{r}.npz"), np.load(out / f"torch_r{r}.npz")) for r in range(2)]


@pytest.mark.parametrize("rank", [0, 1])
def test_outputs_gradients_and_warnings_match_torch(results, rank):
    ours, theirs = results[rank]
    assert sorted(ours.files) == sorted(theirs.files)
    assert len([k for k in theirs.files if k.endswith("_grad")]) == 11
    for k in theirs.files:
        if k.endswith("_warned"):
            assert str(ours[k]) == str(theirs[k]), k
        else:
            np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-5, atol=1e-6, err_msg=k)
