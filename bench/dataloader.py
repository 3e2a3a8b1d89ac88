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


def _cpu_seconds(pid):
    """User + system CPU time of a process so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_epoch(loader):
    """(wall seconds for the epoch, CPU seconds of the main process and the workers, batches)."""
    it = iter(loader)
    workers = [w.pid for w in getattr(it, "_workers", [])]
    cpu = time.process_time() + sum(_cpu_seconds(p) for p in workers)
    n = 0
    start = time.perf_counter()
    for batch in it:
        batch[0].sum()  # read the whole batch, as a training step would
        n += 1
    wall = time.perf_counter() - start
    cpu = time.process_time() + sum(_cpu_seconds(p) for p in workers) - cpu
    return wall, cpu, n


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
        wall = statistics.median(r[0] / r[2] for r in runs)
        cpu = statistics.median(r[1] / r[2] for r in runs)
        results[mode] = (wall, cpu)
        print(f"  {mode:22s} {wall * 1e3:7.2f} ms/batch wall (1 worker), {cpu * 1e3:6.2f} ms/batch CPU "
              "(main + worker)")
    (shm_wall, shm_cpu), (pipe_wall, pipe_cpu) = results["shared memory"], results["pickle through pipe"]
    print(f"  pickle / shared memory: {pipe_wall / shm_wall:.2f}x wall, {pipe_cpu / shm_cpu:.2f}x CPU")


def throughput(samples, rounds, repeats):
    ds = HeavyTransform(samples, rounds)
    rates = {}
    for workers in (0, 2):
        loader = DataLoader(ds, batch_size=16, num_workers=workers, persistent_workers=workers > 0)
        if workers:
            time_epoch(loader)  # warm-up: worker start
        runs = [time_epoch(loader) for _ in range(repeats)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        rates[workers] = samples / wall
        print(f"  num_workers={workers}: {rates[workers]:8.1f} samples/s, {cpu / samples * 1e3:.2f} ms CPU/sample, "
              f"{cpu / wall:.2f} cores busy on average")
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
