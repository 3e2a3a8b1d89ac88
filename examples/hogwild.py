"""Hogwild training: several processes update one shared model at once, without locks.

The model's parameters are moved to shared memory (Module.share_memory()); each process builds its
own optimizer over those same parameters and trains on its own shuffled pass over scikit-learn's
8x8 digits. The main process never trains: if its test accuracy improves, the children's updates
reached it through the shared memory.

    python examples/hogwild.py
    python examples/hogwild.py --num-processes 2 --epochs 5 --start-method spawn
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import ember as torch  # noqa: E402
import ember.multiprocessing as mp  # noqa: E402
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.utils.data import DataLoader, TensorDataset  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def load_digits_split(seed=0):
    """Digits scaled to [0, 1], split 80/20 with a fixed permutation."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    train, test = order[:cut], order[cut:]
    return (torch.from_numpy(x[train]), torch.from_numpy(y[train]), torch.from_numpy(x[test]),
            torch.from_numpy(y[test]))


def train(rank, model, x, y, args):
    """One Hogwild worker: plain SGD steps written straight into the shared parameters."""
    torch.manual_seed(args.seed + rank)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    for _ in range(args.epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()


@torch.no_grad()
def accuracy(model, x, y):
    return (model(x).argmax(1) == y).float().mean().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-processes", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start-method", default=None, choices=mp.get_all_start_methods())
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = load_digits_split()
    model = Net()
    model.share_memory()  # the children write into these very parameters
    before = accuracy(model, x_test, y_test)
    print(f"test accuracy before: {before:.3f}")

    ctx = mp.get_context(args.start_method)
    start = time.perf_counter()
    processes = []
    for rank in range(args.num_processes):
        p = ctx.Process(target=train, args=(rank, model, x_train, y_train, args))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"training process {p.pid} failed with exit code {p.exitcode}")
    after = accuracy(model, x_test, y_test)
    print(f"test accuracy after:  {after:.3f}  ({args.num_processes} processes x {args.epochs} epochs, "
          f"{time.perf_counter() - start:.1f}s, start method {ctx.get_start_method()})")


if __name__ == "__main__":
    main()
