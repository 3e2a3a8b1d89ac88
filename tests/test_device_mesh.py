"""torch.distributed.device_mesh against torch's: 4 processes of each library build a 2 x 2 mesh (torch on gloo,
ember on its TCP transport) and every rank's record must be equal (tests/_distributed/device_mesh.py: shapes,
coordinates, each dimension's group and an all-reduce over it, slices, flattening, from_group, an explicit
grid, torch's errors and messages, DistributedDataParallel over the mesh's data-parallel dimension)."""
import json
import os
import subprocess
import sys

from .test_distributed import ROOT, free_port, tcp_env

SCRIPT = os.path.join(ROOT, "tests", "_distributed", "device_mesh.py")


def _run(lib, out):
    port = free_port()
    procs = [subprocess.Popen([sys.executable, SCRIPT, lib, str(out)], env=dict(tcp_env(r, 4, port), OMP_NUM_THREADS="1"),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(4)]
    try:
        logs = [p.communicate(timeout=180)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0] * 4, "\n".join(log[-2000:] for log in logs)
    return [json.loads((out / f"{lib}-{r}.json").read_text()) for r in range(4)]


def test_device_mesh_matches_torch(tmp_path):
    ours, theirs = _run("ember", tmp_path), _run("torch", tmp_path)
    for rank, (a, b) in enumerate(zip(ours, theirs)):
        assert sorted(a) == sorted(b)
        differ = {k: (a[k], b[k]) for k in b if a[k] != b[k]}
        assert not differ, (rank, differ)
