"""How training throughput scales with the batch and the intra-op threads, ember beside torch.

    python bench/scaling.py                                  # ResNet-8 and GNMT, batch 8/32/128, 1 and 2 threads
    python bench/scaling.py --models resnet --batches 32 --threads 1 2 --rounds 3

Each cell is one training step of bench/training.py's model (forward, loss, backward, optimizer
step) timed as bench/run.py times a row: both libraries built from the same weights and batch, in
this process (--separate: each in its own, as bench/run.py's), alternated, the median of --rounds
samples. Threads: torch.set_num_threads for torch, NumPy's BLAS pool (threadpoolctl) and ember's
intra-op splits for ember (bench/run.py's set_threads). Prints a markdown table of items/s (images,
or target tokens for GNMT), each library's speedup from 1 to 2 threads and the ratio ember/torch
(>1: ember faster). On a machine shared with other jobs the thread speedups say little: print the
load average beside the table.
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MODELS = {"resnet": ("ResNet-8+BN, 32x32", "images/s"), "gnmt": ("GNMT (16+16 tokens)", "tokens/s")}


def measure(torch, ember, model, batch, threads, rounds, min_time, workers=None):
    """Items/s of each library (dict by module name) for one cell, in `workers` when given (Note [Separate
    processes] in bench/harness.py)."""
    from bench import harness, run, training
    run.set_threads(threads, torch, ember)
    if workers:
        med, _, items = harness.run_timed_apart(workers, {"model": model, "batch": batch}, rounds, min_time)
        return {name: items / sec for name, sec in med.items()}
    builder = getattr(training, model)
    r = harness.Row(f"{model} b{batch} t{threads}", "scaling", "throughput", lambda lib: builder(lib, batch=batch),
                    MODELS[model][1], rounds=rounds, min_time=min_time)
    med, _, items = harness.run_timed(r, (ember, torch), rounds, min_time)
    return {name: items / sec for name, sec in med.items()}


def table(results, models, batches, threads):
    lo, hi = threads[0], threads[-1]
    head = ["model", "batch"] + [f"{lib} {t} thr" for lib in ("ember", "torch") for t in threads]
    if len(threads) > 1:
        head += [f"ember {hi}/{lo}", f"torch {hi}/{lo}"]
    head += [f"ember/torch {t} thr" for t in threads]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for m in models:
        for b in batches:
            cell = {t: results[m, b, t] for t in threads}
            row = [MODELS[m][0], str(b)]
            row += [f"{cell[t][lib]:.0f}" for lib in ("ember", "torch") for t in threads]
            if len(threads) > 1:
                row += [f"{cell[hi][lib] / cell[lo][lib]:.2f}x" for lib in ("ember", "torch")]
            row += [f"{cell[t]['ember'] / cell[t]['torch']:.2f}" for t in threads]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv=None):
    from bench import run
    run._run_as_users_machine()  # NumPy's BLAS as a user's machine picks it (Note [BLAS kernel] in run.py)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--batches", nargs="+", type=int, default=[8, 32, 128])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--separate", action="store_true", help="each library in a process of its own (bench/run.py's)")
    args = ap.parse_args(argv)
    import torch

    import ember
    from bench import harness
    start = os.getloadavg()
    t0 = time.time()
    results = {}
    workers = [harness.Worker("ember"), harness.Worker("torch")] if args.separate else None
    try:
        for m in args.models:
            for b in args.batches:
                for t in args.threads:
                    results[m, b, t] = measure(torch, ember, m, b, t, args.rounds, args.min_time, workers)
                    print(f"# {m} batch {b} threads {t}: " + ", ".join(
                        f"{k} {v:.0f} {MODELS[m][1]}" for k, v in results[m, b, t].items()), flush=True)
    finally:
        for w in workers or ():
            w.close()
    print()
    print(f"ember {harness.git_commit()} vs torch {torch.__version__}; {harness.cpu_model()}, "
          f"{os.cpu_count()} logical cores, {'each in its own process' if args.separate else 'both in one process'}; "
          f"{args.rounds} rounds of >= {args.min_time}s; "
          f"load average {start[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end ({time.time() - t0:.0f}s)")
    print()
    print(table(results, args.models, args.batches, args.threads))


if __name__ == "__main__":
    main()
