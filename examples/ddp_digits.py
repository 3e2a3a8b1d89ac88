"""The digits CNN of train_digits.py trained data-parallel with DistributedDataParallel, ember as torch.

    python -m ember.distributed.run --nproc-per-node 2 examples/ddp_digits.py   # 2 processes, torchrun-style
    OMP_NUM_THREADS=1 mpiexec -n 2 python examples/ddp_digits.py            # the same, straight on MPI
    python examples/ddp_digits.py                                           # 1 process (world size 1)

(The launcher sets OMP_NUM_THREADS=1 as torchrun does; with mpiexec set it yourself, or every process
starts a thread per core and they compete for the cores.)

Plain PyTorch DDP code: init_process_group("gloo") (on MPI in ember), a DistributedSampler giving each
process its share of every epoch, DistributedDataParallel averaging the gradients. --batch-size is the
global batch: each of the N processes takes batch_size / N samples per step, so the optimizer sees the
same number of steps and the same learning-rate schedule as the single-process run and reaches the same
accuracy. BatchNorm statistics are per process (on its smaller batch), as in torch without SyncBatchNorm.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember as torch  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from ember.utils.data import DataLoader, DistributedSampler  # noqa: E402
from train_digits import DigitsNet, evaluate, load_data  # noqa: E402


def train_one_epoch(model, loader, optimizer, scheduler):
    """One pass over this process's share; returns (mean local loss, samples seen by this process)."""
    model.train()
    total_loss = 0.0
    seen = 0
    for images, labels in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels, label_smoothing=0.05)
        loss.backward()  # gradients are averaged across processes during this call
        optimizer.step()
        scheduler.step()
        total_loss += loss.item() * len(labels)
        seen += len(labels)
    return total_loss / seen, seen


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train the digits CNN with DistributedDataParallel")
    parser.add_argument("--epochs", type=int, default=8, help="epochs to train (default: 8)")
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size, split over the "
                        "processes (default: 64)")
    parser.add_argument("--lr", type=float, default=0.01, help="peak learning rate of OneCycleLR (default: 0.01)")
    parser.add_argument("--weight-decay", type=float, default=1e-4, help="AdamW weight decay (default: 1e-4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, the model and the sampler")
    args = parser.parse_args(argv)

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        raise SystemExit(f"--batch-size {args.batch_size} is not divisible by the {world} processes")
    torch.manual_seed(args.seed)
    train_set, test_set = load_data(args.seed)
    sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size // world, sampler=sampler, drop_last=True)
    test_loader = DataLoader(test_set, batch_size=512)
    model = DDP(DigitsNet())  # rank 0's initial weights are broadcast to every process
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                                    steps_per_epoch=len(train_loader))
    if rank == 0:
        print(f"{world} process(es); {len(train_set)} training images, {len(sampler)} per process per epoch, "
              f"batch {args.batch_size // world} per process")

    train_time = 0.0
    samples = 0
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every process
        dist.barrier()
        start = time.perf_counter()
        train_loss, seen = train_one_epoch(model, train_loader, optimizer, scheduler)
        dist.barrier()
        train_time += time.perf_counter() - start
        samples += seen * world
        test_loss, accuracy = evaluate(model.module, test_loader)
        if rank == 0:
            print(f"epoch {epoch:2d}  train loss {train_loss:.4f} (rank 0)  test loss {test_loss:.4f}  "
                  f"test accuracy {accuracy:.2%}")
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    copies = [torch.zeros_like(weights) for _ in range(world)]
    dist.all_gather(copies, weights)
    if any(not torch.equal(c, weights) for c in copies):
        raise RuntimeError("the processes' models diverged")
    if rank == 0:
        print(f"trained {args.epochs} epochs in {train_time:.1f} s: {samples / train_time:.0f} samples/s "
              f"on {world} process(es); every process holds the same weights")
        print(f"test accuracy: {accuracy:.4f}")
    dist.destroy_process_group()
    return accuracy


if __name__ == "__main__":
    main()
