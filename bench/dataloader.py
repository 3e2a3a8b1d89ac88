"""DataLoader worker benchmarks: batch transport (shared memory vs pickling through the pipe) and
throughput with a CPU-heavy per-sample transform (num_workers=2 vs 0).

    python bench/dataloader.py                  # both
    python bench/dataloader.py --only transport
    python bench/dataloader.py --only throughput --samples 256

Timings are wall-clock medians; the load average is printed alongside, since other processes on
the machine change them.
"""
import argparse
import os
import pickle
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from ember.utils.data import DataLoader, Dataset  # noqa: E402
from ember.utils.data import _collate, _worker  # noqa: E402


class CachedImages(Dataset):
    """Samples that cost nothing to make: what is left is collation and transport."""

    def __init__(self, n, shape=(3, 64, 64)):
        rng = np.random.default_rng(0)
        self.samples = [ember.from_numpy(rng.standard_normal(shape).astype(np.float32)) for _ in range(8)]
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.samples[i % 8], i


class HeavyTransform(Dataset):
    """A CPU-bound per-sample augmentation in single-threaded NumPy (no BLAS, so no hidden threads)."""

    def __init__(self, n, rounds):
        self.n = n
        self.rounds = rounds

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = np.random.default_rng(i).standard_normal((3, 64, 64)).astype(np.float32)
        for _ in range(self.rounds):
            x = np.tanh(x * 1.01 + np.sin(x))
        return ember.from_numpy(x), i


def _pickled_transport():
    """Patch the worker path to pickle batches through the pipe (fork workers inherit the patch)."""
    saved = (_collate.stack_shared, _worker.dump_result)
    _collate.stack_shared = lambda batch: None
    _worker.dump_result = lambda data: pickle.dumps(data, pickle.HIGHEST_PROTOCOL)
    return saved


def _restore(saved):
    _collate.stack_shared, _worker.dump_result = saved


def time_epoch(loader):
    """(seconds for the epoch, seconds the main process spent inside next(), batches)."""
    it = iter(loader)
    inside = 0.0
    n = 0
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            break
        inside += time.perf_counter() - t0
        batch[0][0, 0, 0, 0].item()  # touch the batch
        n += 1
    return time.perf_counter() - start, inside, n


def transport(batches, rounds):
    ds = CachedImages(64 * batches)
    results = {}
    for mode in ("shared memory", "pickle through pipe"):
        saved = _pickled_transport() if mode != "shared memory" else None
        try:
            loader = DataLoader(ds, batch_size=64, num_workers=1, persistent_workers=True)
            time_epoch(loader)  # warm-up: worker start
            runs = [time_epoch(loader) for _ in range(rounds)]
            del loader
        finally:
            if saved is not None:
                _restore(saved)
        per_batch = statistics.median(r[0] / r[2] for r in runs)
        main_side = statistics.median(r[1] / r[2] for r in runs)
        results[mode] = (per_batch, main_side)
        print(f"  {mode:22s} {per_batch * 1e3:7.2f} ms/batch end to end (1 worker), "
              f"{main_side * 1e3:6.2f} ms/batch inside next()")
    shm_t, pipe_t = results["shared memory"][0], results["pickle through pipe"][0]
    print(f"  pickle / shared memory: {pipe_t / shm_t:.2f}x per batch")


def throughput(samples, rounds, repeats):
    ds = HeavyTransform(samples, rounds)
    rates = {}
    for workers in (0, 2):
        loader = DataLoader(ds, batch_size=16, num_workers=workers, persistent_workers=workers > 0)
        if workers:
            time_epoch(loader)  # warm-up: worker start
        runs = [time_epoch(loader)[0] for _ in range(repeats)]
        rates[workers] = samples / statistics.median(runs)
        print(f"  num_workers={workers}: {rates[workers]:8.1f} samples/s")
        del loader
    print(f"  speed-up 2 workers vs 0: {rates[2] / rates[0]:.2f}x")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=("transport", "throughput"))
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--samples", type=int, default=192)
    parser.add_argument("--transform-rounds", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} (cpus: {os.cpu_count()})")
    if args.only in (None, "transport"):
        print("transport of a 64x3x64x64 float32 batch (+ 64 int64 labels):")
        transport(args.batches, args.repeats)
    if args.only in (None, "throughput"):
        print(f"throughput, CPU-heavy per-sample transform ({args.transform_rounds} rounds of tanh/sin on 3x64x64):")
        throughput(args.samples, args.transform_rounds, args.repeats)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
