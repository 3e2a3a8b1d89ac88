"""A/B of ember settings on one benchmark row: the row's step with the settings as they are (A) and with some module
attributes changed (B), alternating in one process, and which is faster.

    python bench/ab.py gnmt --set ember._backend.parallel.ROW_WEIGHT=0
    python bench/ab.py resnet --set ember._ops.conv.SOME_THRESHOLD=1e9 --rounds 24 --idle 0
    python bench/ab.py "MLP 784" --set ember._backend.jit.ENABLED=False --min-time 0.25

On a shared or virtual machine one process may run the same code 1.0x or 1.4x as fast as the next, and its speed
drifts within seconds, so two runs of `bench/run.py` cannot tell a 3% change from the noise: only samples of A and
B taken side by side can. Each round takes one sample of each (A first in even rounds, B first in odd ones, so a
drift is shared); a sample sleeps `--idle` seconds (the bench's 0.2 by default), runs one step unmeasured (as
bench/run.py's first, calibrating step), then times steps for at least `--min-time` seconds. The report gives each
side's median time per step, B/A, and in how many rounds B was faster than the A of the same round: with a real
change both the ratio and the count lean the same way over 16 or more rounds; a count near half the rounds is
noise, whatever the ratio.

A setting is `MODULE.ATTRIBUTE=VALUE` (VALUE a Python literal, else a string), set with setattr on the imported
module for B's samples and put back for A's. It works for what ember reads when an op runs (thresholds, switches
such as ember._backend.jit.ENABLED, row weights), not for what a module copied at import or the row's build kept.
Both sides run ember; torch is not involved. As bench/run.py, it runs without the OpenBLAS pins unless --pinned-blas.
"""
import argparse
import ast
import importlib
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness, rows, rows_extra  # noqa: E402,F401  (rows, rows_extra: register the rows)


def parse_setting(text):
    """("module", "attribute", value) from "module.attribute=value"."""
    target, sep, raw = text.partition("=")
    module, dot, attribute = target.strip().rpartition(".")
    if not sep or not dot or not module or not attribute:
        raise ValueError(f"a setting is MODULE.ATTRIBUTE=VALUE, got {text!r}")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        value = raw.strip()
    return module, attribute, value


class Settings:
    """The B settings on imported modules: apply() sets them, restore() puts A's values back."""

    def __init__(self, texts):
        self.items = []
        for text in texts:
            module, attribute, value = parse_setting(text)
            mod = importlib.import_module(module)
            if not hasattr(mod, attribute):
                raise AttributeError(f"module {module!r} has no attribute {attribute!r}")
            self.items.append((mod, attribute, getattr(mod, attribute), value))

    def apply(self):
        for mod, attribute, _, value in self.items:
            setattr(mod, attribute, value)

    def restore(self):
        for mod, attribute, value, _ in self.items:
            setattr(mod, attribute, value)


def sample(step, idle, min_time):
    """Seconds per step: sleep `idle`, one unmeasured step, then steps for at least `min_time`."""
    if idle:
        time.sleep(idle)
    step()
    n, start = 0, time.perf_counter()
    while True:
        step()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return elapsed / n


def run(step, settings, rounds, idle, min_time):
    """{"A": [seconds per step], "B": [...]}, one sample of each per round, alternating who goes first."""
    samples = {"A": [], "B": []}
    try:
        for i in range(rounds):
            for side in ("A", "B") if i % 2 == 0 else ("B", "A"):
                settings.apply() if side == "B" else settings.restore()
                samples[side].append(sample(step, idle, min_time))
    finally:
        settings.restore()
    return samples


def summary(samples):
    """(median A, median B, B/A, rounds in which B was faster)."""
    a, b = statistics.median(samples["A"]), statistics.median(samples["B"])
    faster = sum(y < x for x, y in zip(samples["A"], samples["B"]))
    return a, b, b / a, faster


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="text in the row's name (case-insensitive); first match")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="MODULE.ATTRIBUTE=VALUE",
                   help="a setting of B (repeat for several)")
    p.add_argument("--rounds", type=int, default=16)
    p.add_argument("--min-time", type=float, default=0.5, help="seconds of timed steps per sample")
    p.add_argument("--idle", type=float, default=0.2, help="seconds of sleep before each sample")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--pinned-blas", action="store_true",
                   help="keep OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE as the environment sets them (Note [BLAS kernel])")
    args = p.parse_args(argv)
    if not args.settings:
        p.error("give B at least one --set")
    import ember
    settings = Settings(args.settings)
    r = harness.timed_row(args.name)
    harness.set_threads(args.threads, ember)
    step, _ = harness._unpack(r, r.fn(ember))
    samples = run(step, settings, args.rounds, args.idle, args.min_time)
    a, b, ratio, faster = summary(samples)
    print(f"# {r.name}, ember {harness.git_commit()}, {args.threads} thread(s), {args.rounds} rounds, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"A (as is)  {a * 1e3:9.3f} ms/step")
    print(f"B ({', '.join(args.settings)})  {b * 1e3:9.3f} ms/step")
    print(f"B/A time {ratio:.3f}; B faster in {faster} of {args.rounds} rounds")
    return samples


if __name__ == "__main__":
    from bench.run import _run_as_users_machine
    _run_as_users_machine()  # as bench/run.py: NumPy's BLAS as a user's machine picks it (Note [BLAS kernel])
    main()
