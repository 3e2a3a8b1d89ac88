"""A torch-tutorial-style DDP script: mp.spawn starts the ranks, each calls init_process_group with its rank
and the world size (no MPI launcher: ember runs the group on its TCP transport). Run by
tests/test_distributed_tcp.py as `python spawn_ddp.py torch|ember OUT INIT_METHOD`; rank 0 saves the trained
weights and the ranks' all_gather_object of their last losses to OUT/<lib>.npz.

INIT_METHOD is env:// (MASTER_ADDR/MASTER_PORT set by the caller) or tcp://host:port.
"""
import datetime
import os
import sys

import numpy as np

LIB, OUT, INIT = sys.argv[1], sys.argv[2], sys.argv[3]
WORLD = 2
STEPS = 6


def worker(rank, world_size):
    if LIB == "torch":
        import torch as lib
        lib.set_num_threads(1)
    else:
        import ember as lib
    dist = lib.distributed
    dist.init_process_group("gloo", init_method=INIT, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=60))
    nn = lib.nn
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    rng = np.random.default_rng(rank)  # different weights per rank: DDP's broadcast from rank 0 must win
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = lib.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    data = np.random.default_rng(100 + rank)
    loss = None
    for _ in range(STEPS):
        x = lib.from_numpy(data.standard_normal((5, 8)).astype(np.float32))
        y = lib.from_numpy(data.integers(0, 3, 5))
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
    losses = [None] * world_size
    dist.all_gather_object(losses, round(float(loss), 4))
    total = lib.tensor([float(rank + 1)])
    dist.all_reduce(total)
    if rank == 0:
        state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
        np.savez(os.path.join(OUT, f"{LIB}.npz"), losses=np.array(losses), total=total.numpy(), **state)
    dist.barrier()  # both ranks leave together: torch's gloo aborted rank 1 (SIGABRT) when it tore its group
    dist.destroy_process_group()  # down while rank 0 was still saving (seen once, a loaded CI run, 2026-11-30)


if __name__ == "__main__":
    if LIB == "torch":
        import torch.multiprocessing as mp
    else:
        import ember.multiprocessing as mp
    mp.spawn(worker, args=(WORLD,), nprocs=WORLD)
