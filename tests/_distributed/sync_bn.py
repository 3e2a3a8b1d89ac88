"""Run by tests/test_sync_batchnorm.py as `mpiexec -n N python sync_bn.py OUTDIR`: each rank takes its slice of
one global batch through a SyncBatchNorm (two training steps, then eval), and saves what it computed (outputs,
input and parameter gradients, running statistics) to OUTDIR/rank<r>.npz for the test to hold against a plain
BatchNorm over the whole batch."""
import sys

import numpy as np

import ember
import ember.distributed as dist

N_PER_RANK, C, H, W = 3, 4, 2, 3


def global_batch(world, step):
    rng = np.random.default_rng(step)
    x = rng.standard_normal((world * N_PER_RANK, C, H, W)) * 2 + rng.standard_normal((1, C, 1, 1))
    weights = rng.standard_normal((world * N_PER_RANK, C, H, W))
    return x.astype(np.float32), weights.astype(np.float32)


def main(outdir):
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    net = ember.nn.Sequential(ember.nn.BatchNorm2d(C, momentum=0.3))
    net = ember.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    bn = net[0]
    with ember.no_grad():
        bn.weight.copy_(ember.tensor(np.linspace(0.5, 2.0, C, dtype=np.float32)))
        bn.bias.copy_(ember.tensor(np.linspace(-1.0, 1.0, C, dtype=np.float32)))
    saved = {"type": np.array(type(bn).__name__)}
    for step in range(2):
        x_all, w_all = global_batch(world, step)
        rows = slice(rank * N_PER_RANK, (rank + 1) * N_PER_RANK)
        x = ember.tensor(x_all[rows], requires_grad=True)
        y = net(x)
        (y * ember.tensor(w_all[rows])).sum().backward()
        saved[f"y{step}"] = y.detach().numpy()
        saved[f"gx{step}"] = x.grad.numpy()
        saved[f"gw{step}"] = bn.weight.grad.numpy().copy()
        saved[f"gb{step}"] = bn.bias.grad.numpy().copy()
        bn.weight.grad = bn.bias.grad = None
        saved[f"running_mean{step}"] = bn.running_mean.numpy().copy()
        saved[f"running_var{step}"] = bn.running_var.numpy().copy()
    net.eval()
    x_all, _ = global_batch(world, 5)
    saved["eval"] = net(ember.tensor(x_all[rank * N_PER_RANK:(rank + 1) * N_PER_RANK])).detach().numpy()
    np.savez(f"{outdir}/rank{rank}.npz", **saved)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
