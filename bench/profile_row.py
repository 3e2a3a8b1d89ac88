"""Where a row's time goes: a line sampler and cProfile over its step, by line, function and file.

    python bench/profile_row.py resnet                 # ember, the first row matching 'resnet'
    python bench/profile_row.py resnet --lib torch     # the same row on torch (torch.profiler, per aten op)
    python bench/profile_row.py gnmt --steps 5 --top 30 --threads 1

Two views, because neither alone is right:

- The sampler (default) looks at the main thread's innermost frame every millisecond and counts
  source lines. NumPy ufuncs and operators (`x @ w`, `a * b`, np.matmul in NumPy 2) are not
  function calls a profiler sees, so their time shows on the line that runs them; the report
  prints each hot line's source so a kernel line (np.matmul, a strided copy) is told from
  bookkeeping. Lines are classed as BLAS (matmul/dot/einsum/tensordot/@), other NumPy (the line
  calls np./xp./an ndarray method), or Python (the rest: dispatch, autograd bookkeeping).
  The class is a heuristic on the source text; the lines themselves are the evidence.
- cProfile (--cprofile) gives exact call counts and per-function self time, with the caveat above
  and a roughly constant cost per Python call that overstates Python's share.
"""
import argparse
import cProfile
import linecache
import os
import pstats
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness, rows, rows_extra, rows_func  # noqa: E402,F401

BLAS = ("matmul", "dot", "einsum", "tensordot", "vdot", "inner", "c_einsum")


def _label(key):
    """(function label, file label, kind) for a pstats key."""
    filename, lineno, func = key
    if filename == "~":  # a C function: "<built-in method numpy.matmul>", "<method 'sum' of ...>"
        name = func.strip("<>{}")
        short = name.replace("built-in method ", "").replace("method ", "")
        base = short.split(" of ")[0].strip("'").split(".")[-1]
        if base in BLAS:
            kind = "BLAS (matmul/dot/einsum)"
        elif "numpy" in name or "ndarray" in name or "ufunc" in name:
            kind = "NumPy C (other)"
        else:
            kind = "Python builtins"
        return short, "(C)", kind
    path = filename.replace("\\", "/")
    if "/ember/" in path:
        rel = "ember/" + path.split("/ember/", 1)[1]
        return f"{rel}:{func}", rel, "ember Python"
    if "/numpy/" in path:
        rel = "numpy/" + path.split("/numpy/", 1)[1]
        return f"{rel}:{func}", rel, "NumPy Python wrappers"
    if "/torch/" in path:
        rel = "torch/" + path.split("/torch/", 1)[1]
        return f"{rel}:{func}", rel, "torch Python"
    return f"{os.path.basename(path)}:{func}", os.path.basename(path), "other Python"


def summarise(stats, top):
    total = sum(v[2] for v in stats.stats.values())
    by_func, by_file, by_kind = {}, {}, {}
    for key, (cc, nc, tt, ct, callers) in stats.stats.items():
        func, file, kind = _label(key)
        f = by_func.setdefault(func, [0.0, 0])
        f[0] += tt
        f[1] += nc
        by_file[file] = by_file.get(file, 0.0) + tt
        by_kind[kind] = by_kind.get(kind, 0.0) + tt
    lines = [f"total self time {total:.3f}s"]
    lines.append("\nby kind:")
    for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {100 * v / total:5.1f}%  {k}")
    lines.append("\nby ember file:")
    for k, v in sorted(by_file.items(), key=lambda kv: -kv[1]):
        if k.startswith("ember/") and v / total >= 0.005:
            lines.append(f"  {100 * v / total:5.1f}%  {k}")
    lines.append(f"\ntop {top} functions by self time:")
    for k, (tt, nc) in sorted(by_func.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"  {100 * tt / total:5.1f}%  {nc:7d} calls  {k}")
    return "\n".join(lines)


_BLAS_LINE = re.compile(r"(\bmatmul\b|\bdot\(|einsum|tensordot|\s@\s|@=)")
_NUMPY_LINE = re.compile(r"(\bnp\.|\bxp\.|\bnumpy\.|_np\.|\.astype\(|\.copy\(|\.sum\(|\.reshape\(|"
                         r"\.transpose\(|\[.*\]\s*[-+*/]?=|as_strided|\bufunc)")


def _line_kind(filename, text):
    if "/numpy/" in filename:
        return "NumPy Python wrappers"
    if _BLAS_LINE.search(text):
        return "BLAS line (matmul/dot/einsum/@)"
    if _NUMPY_LINE.search(text):
        return "other NumPy line"
    if "/ember/" in filename:
        return "ember Python (dispatch, autograd, checks)"
    return "other Python"


class LineSampler:
    """Counts the innermost source line of one thread every `interval` seconds."""

    def __init__(self, thread_id, interval=0.001):
        self.thread_id = thread_id
        self.interval = interval
        self.counts = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        frames = sys._current_frames
        while not self._stop.is_set():
            frame = frames().get(self.thread_id)
            if frame is not None:
                key = (frame.f_code.co_filename, frame.f_lineno or 0, frame.f_code.co_name)
                self.counts[key] = self.counts.get(key, 0) + 1
            time.sleep(self.interval)

    def __enter__(self):
        self._old_interval = sys.getswitchinterval()
        sys.setswitchinterval(self.interval / 4)  # let the sampler in while the main thread holds the GIL
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        sys.setswitchinterval(self._old_interval)


def _short(filename):
    path = filename.replace("\\", "/")
    for root in ("ember", "numpy", "torch"):
        if f"/{root}/" in path:
            return root + "/" + path.split(f"/{root}/", 1)[1]
    return os.path.basename(path)


def summarise_lines(counts, top):
    total = sum(counts.values()) or 1
    by_kind, by_file, by_func, lines = {}, {}, {}, []
    for (filename, lineno, func), n in counts.items():
        text = linecache.getline(filename, lineno).strip()
        kind = _line_kind(filename, text)
        by_kind[kind] = by_kind.get(kind, 0) + n
        short = _short(filename)
        by_file[short] = by_file.get(short, 0) + n
        by_func[f"{short}:{func}"] = by_func.get(f"{short}:{func}", 0) + n
        lines.append((n, f"{short}:{lineno}", text[:90]))
    out = [f"{total} samples"]
    out.append("\nby kind (line heuristic):")
    for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        out.append(f"  {100 * v / total:5.1f}%  {k}")
    out.append("\nby file:")
    for k, v in sorted(by_file.items(), key=lambda kv: -kv[1]):
        if v / total >= 0.01:
            out.append(f"  {100 * v / total:5.1f}%  {k}")
    out.append("\nby function:")
    for k, v in sorted(by_func.items(), key=lambda kv: -kv[1])[:top]:
        out.append(f"  {100 * v / total:5.1f}%  {k}")
    out.append(f"\ntop {top} lines:")
    for n, where, text in sorted(lines, key=lambda t: -t[0])[:top]:
        out.append(f"  {100 * n / total:5.1f}%  {where:45s} {text}")
    return "\n".join(out)


def _calls(fn, steps):
    """Python function calls per call of fn (cProfile's count, builtins included), after a warm-up."""
    fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        fn()
    prof.disable()
    return pstats.Stats(prof).total_calls / steps


def print_calls(r, lib, steps):
    """Calls per step of a row; a training row (bench/training.py) also by phase: zero_grad, forward
    with the loss, backward, optimizer step. Deterministic, unlike timings on a shared machine."""
    from bench import training
    parts = {}
    make_step = training._step

    def capture(model, opt, loss_of):
        parts.update(model=model, opt=opt, loss_of=loss_of)
        return make_step(model, opt, loss_of)
    training._step = capture
    try:
        step, _ = harness._unpack(r, r.fn(lib))
    finally:
        training._step = make_step
    print(f"# {r.name} on {lib.__name__}: {_calls(step, steps):.0f} Python calls per step")
    if not parts:
        return
    model, opt, loss_of = parts["model"], parts["opt"], parts["loss_of"]
    loss = [None]

    def forward():
        loss[0] = loss_of(model)

    def backward():
        opt.zero_grad()
        loss_of(model).backward()
    counts = {"zero_grad": _calls(opt.zero_grad, steps), "forward": _calls(forward, steps)}
    counts["backward"] = _calls(backward, steps) - counts["zero_grad"] - counts["forward"]
    counts["step"] = _calls(opt.step, steps)
    print("  " + ", ".join(f"{k} {v:.0f}" for k, v in counts.items()))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="text in the row's name (case-insensitive); first match")
    p.add_argument("--lib", default="ember", choices=("ember", "torch"))
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cprofile", action="store_true", help="cProfile by function instead of the line sampler")
    p.add_argument("--dump", help="also write the raw pstats file here (with --cprofile)")
    p.add_argument("--calls", action="store_true", help="Python calls per step (cProfile), per phase for training rows")
    args = p.parse_args()
    r = harness.timed_row(args.name)
    if args.lib == "torch":
        import torch as lib
    else:
        import ember as lib
    lib.set_num_threads(args.threads)
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(args.threads, user_api="blas")
    except ImportError:
        pass
    if args.calls:
        return print_calls(r, lib, args.steps)
    step, _ = harness._unpack(r, r.fn(lib))
    step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    plain = (time.perf_counter() - t0) / args.steps
    print(f"# {r.name} on {args.lib}, {args.threads} thread(s); {plain * 1e3:.1f} ms/step unprofiled; "
          f"load {os.getloadavg()[0]:.1f}")
    if args.lib == "torch" and not args.cprofile:  # torch's own per-op profiler: where torch spends the same step
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(args.steps):
                step()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))
        return
    if not args.cprofile:
        with LineSampler(threading.get_ident()) as sampler:
            for _ in range(args.steps):
                step()
        print(summarise_lines(sampler.counts, args.top))
        return
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.steps):
        step()
    prof.disable()
    stats = pstats.Stats(prof)
    if args.dump:
        stats.dump_stats(args.dump)
    print(summarise(stats, args.top))


if __name__ == "__main__":
    main()
