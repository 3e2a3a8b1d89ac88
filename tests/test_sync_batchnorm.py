"""nn.SyncBatchNorm: on 2 MPI processes its outputs, input gradients, running statistics and (summed over the
processes) parameter gradients are those of torch's BatchNorm2d over the whole batch (Note [Synchronized batch
norm]); in one process (no process group) and in eval it is torch's SyncBatchNorm, which is then BatchNorm; and
convert_sync_batchnorm swaps modules as torch's does."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
from tests._distributed.sync_bn import C, N_PER_RANK, global_batch
from tests.test_distributed import ROOT, env, mpiexec

WORKER = os.path.join(ROOT, "tests", "_distributed", "sync_bn.py")


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("sync_bn")
    proc = subprocess.run([mpiexec(), "-n", "2", sys.executable, WORKER, str(out)], capture_output=True, text=True,
                          timeout=240, env=env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [dict(np.load(out / f"rank{r}.npz")) for r in range(2)]


def _torch_reference(world=2):
    bn = torch.nn.BatchNorm2d(C, momentum=0.3)
    with torch.no_grad():
        bn.weight.copy_(torch.tensor(np.linspace(0.5, 2.0, C, dtype=np.float32)))
        bn.bias.copy_(torch.tensor(np.linspace(-1.0, 1.0, C, dtype=np.float32)))
    ref = {}
    for step in range(2):
        x_all, w_all = global_batch(world, step)
        x = torch.tensor(x_all, requires_grad=True)
        y = bn(x)
        (y * torch.tensor(w_all)).sum().backward()
        ref.update({f"y{step}": y.detach().numpy(), f"gx{step}": x.grad.numpy(), f"gw{step}": bn.weight.grad.numpy(),
                    f"gb{step}": bn.bias.grad.numpy(), f"running_mean{step}": bn.running_mean.numpy().copy(),
                    f"running_var{step}": bn.running_var.numpy().copy()})
        bn.weight.grad = bn.bias.grad = None
    bn.eval()
    ref["eval"] = bn(torch.tensor(global_batch(world, 5)[0])).detach().numpy()
    return ref


@pytest.mark.parametrize("key", ["y", "gx", "gw", "gb", "running_mean", "running_var", "eval"])
def test_two_processes_compute_batch_norm_of_the_whole_batch(two_ranks, key):
    ref = _torch_reference()
    assert all(str(r["type"]) == "SyncBatchNorm" for r in two_ranks)
    for step in ([0, 1] if key != "eval" else [None]):
        name = key if step is None else f"{key}{step}"
        if key in ("y", "gx", "eval"):  # each rank holds its slice of the batch
            got = np.concatenate([r[name] for r in two_ranks])
        elif key in ("gw", "gb"):  # each rank's own slice's share: DDP would average them
            got = two_ranks[0][name] + two_ranks[1][name]
        else:  # the same statistics on every rank
            np.testing.assert_array_equal(two_ranks[0][name], two_ranks[1][name])
            got = two_ranks[0][name]
        np.testing.assert_allclose(got, ref[name], rtol=1e-5, atol=1e-5, err_msg=name)
    assert N_PER_RANK * 2 == ref["y0"].shape[0]


def _single(lib, train):
    rng = np.random.default_rng(1)
    m = lib.nn.SyncBatchNorm(3, momentum=None)
    if not train:
        m.eval()
    x = lib.tensor(rng.standard_normal((4, 3, 5)).astype(np.float32), requires_grad=True)
    y = m(x)
    (y * lib.tensor(rng.standard_normal((4, 3, 5)).astype(np.float32))).sum().backward()
    return [t.detach().numpy() for t in (y, x.grad, m.weight.grad, m.bias.grad, m.running_mean, m.running_var)]


@pytest.mark.parametrize("train", [True, False])
def test_one_process_is_torchs_sync_batch_norm(train):
    for a, b in zip(_single(ember, train), _single(torch, train)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_convert_sync_batchnorm_as_torch():
    def run(lib):
        net = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 1), lib.nn.BatchNorm2d(4), lib.nn.Sequential(lib.nn.BatchNorm1d(4)))
        net[1].running_mean.fill_(0.5)
        net.eval()
        old = net[1]
        out = lib.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        kinds = [type(m).__name__ for m in out.modules()]
        shared = out[1].weight is old.weight and out[1].running_mean is old.running_mean
        return kinds, shared, out[1].training, repr(out[2][0]), type(lib.nn.SyncBatchNorm.convert_sync_batchnorm(
            lib.nn.BatchNorm3d(2))).__name__
    assert run(ember) == run(torch)


@pytest.mark.parametrize("shape", [(4,), (4, 0, 3)])
def test_bad_inputs_raise_torchs_errors(shape):
    def run(lib):
        with pytest.raises(ValueError) as info:
            lib.nn.SyncBatchNorm(shape[1] if len(shape) > 1 else 4)(lib.zeros(shape))
        return str(info.value)
    assert run(ember) == run(torch)
