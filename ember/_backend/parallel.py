"""Intra-op threads for the big NumPy copies and elementwise loops that BLAS does not cover.

NumPy releases the GIL inside copies and ufunc loops, so splitting one large strided copy (an
im2col gather, a layout change) into slices along a leading axis and running them on two threads
takes ~0.55-0.65x the time of one call (measured: im2col gathers of 5-75 MB, 2 cores). Contiguous
elementwise work under a few MB does not gain (the hand-off costs ~50 us; 200-340 us on the 2-core
VM of 2026-11-28, whose idle vCPU wakes slowly), so only callers with
big strided work use this. run_blas splits work whose pieces are GEMMs (the dense convolutions),
with OpenBLAS on one thread meanwhile (Note [BLAS pieces]). The pool has ember.get_num_threads() - 1
workers (the calling thread does one share), is built lazily and is dropped in a forked child, where
its threads do not exist.
"""
import contextlib
import contextvars
import os
import threading
import time

import numpy as np

_MIN_BYTES = 1 << 21  # below ~2 MB a split costs more than it saves (Note [Split threshold])

_lock = threading.Lock()
_idle = []  # the pool's workers not running a piece (Note [Worker hand-off])
_made = 0  # workers started in this process


def threads():
    """How many threads a split may use: ember's intra-op setting."""
    import ember
    return max(1, ember.get_num_threads())


class _Worker:
    """A pool thread that runs one piece at a time (Note [Worker hand-off], Note [Spinning hand-off]): start()
    numbers the piece in cells[0], the worker numbers it in cells[1] once it has run. Each side may first spin
    on its cell, then sleeps on a lock (`go` for the worker, `done` for the caller) that the other side releases
    only when it finds the sleeper's flag set; `state` makes setting a cell and reading the flag one step."""
    __slots__ = ("go", "done", "job", "error", "cells", "state", "sleeping", "waiting", "count")

    def __init__(self, name):
        self.go = threading.Lock()
        self.go.acquire()
        self.done = threading.Lock()
        self.done.acquire()
        self.job = None
        self.error = None
        self.cells = np.zeros(2, np.int64)  # [pieces started, pieces run]
        self.state = threading.Lock()
        self.sleeping = False  # the worker sleeps on `go`
        self.waiting = False  # the caller sleeps on `done`
        self.count = 0  # pieces started (the caller's side)
        threading.Thread(target=self._loop, name=name, daemon=True).start()

    def _loop(self):
        cells, n, gap, ended = self.cells, 0, float("inf"), None  # no gap before the first two pieces: no spin
        clock = time.perf_counter
        while True:
            n += 1
            if not _wait_for(cells, 0, n, SPIN_WORKER_US if gap < SPIN_GAP_US else 0):
                with self.state:  # the flag as set here: start() may clear it before the next line
                    sleep = self.sleeping = cells[0] != n
                if sleep:
                    self.go.acquire()
            if ended is not None:
                gap = (clock() - ended) * 1e6
            fn, args = self.job
            self.job = None
            try:
                fn(*args)
            except BaseException as e:  # handed to the caller by result()
                self.error = e
            del fn, args  # the piece's arrays are not kept alive until the next piece comes
            ended = clock()
            with self.state:
                cells[1] = n
                wake, self.waiting = self.waiting, False
            if wake:
                self.done.release()

    def start(self, fn, *args):
        self.job = (fn, args)
        self.count += 1
        with self.state:
            self.cells[0] = self.count
            wake, self.sleeping = self.sleeping, False
        if wake:
            self.go.release()

    def result(self):
        """Wait for the piece; the worker goes back to the pool; re-raise the piece's error."""
        if not _wait_for(self.cells, 1, self.count, SPIN_CALLER_US):
            with self.state:  # the flag as set here: the worker may clear it before the next line
                wait = self.waiting = self.cells[1] != self.count
            if wait:
                self.done.acquire()
        error, self.error = self.error, None
        with _lock:
            _idle.append(self)
        if error is not None:
            raise error


# Note [Spinning hand-off]: a thread that sleeps on a lock leaves its vCPU idle, and on this VM an idle vCPU wakes
# slowly: a split's piece starts 35-50 us after the hand-off when the worker slept 0.5 ms, 360 us after 0.2 s.
# torch's OpenMP threads (libgomp) and NumPy's OpenBLAS workers spin for a while after each parallel region before
# they sleep. With ember[jit] a worker whose last piece came less than SPIN_GAP_US after the one before spins on
# its cell for SPIN_WORKER_US after its piece (reads with the CPU offered to any other runnable thread between
# them, spin_jit.spin_until, the GIL released) before it sleeps on `go`; a caller waiting for a piece spins
# SPIN_CALLER_US before it sleeps on `done`. Without numba, or with the budgets 0, both sides sleep on their locks
# at once. Measured (2-core VM, 2 threads, bench/ab.py: spinning as here vs both budgets 0, alternating in one
# process, 0.2 s idle and a warm step before each >= 0.5 s sample, B/A time and rounds the spinning pool was
# faster): ResNet-8 1.049 (13 of 16), without the idle 1.039 (11 of 16), AlexNet 1.036 (10 of 16), VGG 1.005 (17
# of 24), MobileNetV2 1.038 (6 of 16), GNMT 1.035 (23 of 40), BatchNorm2d fwd+bwd 1.048 (14 of 24), the MLP (no
# splits) 0.983 (7 of 16). A worker that spun 5 ms after every piece, gaps or not, lost GNMT 5.9% (26 of 40
# rounds slower): between its sparse splits (gaps median 2.4 ms, 16% under 1 ms; the convolution steps' 71-86%)
# it spun beside OpenBLAS's threads.
SPIN_WORKER_US = 2000
SPIN_GAP_US = 1000
SPIN_CALLER_US = 3000
_spin = None  # (spin_until, reads per microsecond) once the first pool thread is made; False: no spinning here


def _wait_for(cells, i, want, us):
    """Whether cells[i] == want, spinning for up to `us` microseconds first (Note [Spinning hand-off])."""
    if us and _spin:
        return _spin[0](cells, i, want, int(us * _spin[1]))
    return cells[i] == want


def _configure_spin():
    """spin_jit's wait and its speed here, or False without ember[jit] (or under NUMBA_DISABLE_JIT)."""
    global _spin
    _spin = False
    from . import jit
    kernels = jit.load("spin_jit")
    if kernels is None or kernels.YIELD is None:
        return
    import numba
    if numba.config.DISABLE_JIT:
        return
    _spin = (kernels.spin_until, kernels.reads_per_us())


def _take_workers(workers):
    """Up to `workers` idle pool threads, taken out of the pool until their result() (fewer when other
    callers hold them: their share then runs on the calling thread)."""
    global _made
    with _lock:
        while len(_idle) < workers and _made < threads() - 1:
            if _spin is None:
                _configure_spin()
            _made += 1
            _idle.append(_Worker(f"ember-intraop_{_made}"))
        taken = _idle[len(_idle) - min(workers, len(_idle)):]
        del _idle[len(_idle) - len(taken):]
        return taken


# Note [Worker hand-off]: a split hands each extra piece to a pool thread through two plain locks, one
# the worker sleeps on until a piece comes and one the caller sleeps on until it is done. parallel.run of an
# empty function in two pieces, 15 rounds of 300 alternating in one process on the 2-core VM (2026-11-28
# 14:05): medians 116-137 us through the locks, 144-156 us through concurrent.futures.ThreadPoolExecutor (a
# Future, a Condition and a queue per piece); a bare two-lock ping-pong 46-113 us. Most of it is the idle
# vCPU waking; a ResNet-8 step makes 9 splits and did not move. (Since 2026-11-30 each side may spin before it
# sleeps on its lock: Note [Spinning hand-off].)


def _forget_pool():
    global _made, _blas_lock, _blas_regions
    _idle.clear()  # the parent's workers do not exist in a forked child
    _made = 0
    _blas_lock = threading.Lock()
    if _blas_regions:  # forked while another thread ran BLAS pieces: its OpenBLAS setting comes back
        _blas_regions = 0
        from . import blas
        blas.set_threads(_blas_restore)


# Note [Split threshold]: a ResNet-8 training step at batch 32 makes ~36 splits, nearly all of
# 2.0-2.3 MB (batch-norm channel ranges, padding, im2col, contiguous copies). With 2 threads and
# NumPy's OpenBLAS at 2, those splits cost ~10%: 378 images/s with the 2 MB threshold, 420 with 4 MB
# or with no split at all, 355 on one thread (medians of 12-14 quiet 0.25 s windows, 2 cores, 2026-11;
# 5 of 6 such alternating runs favoured 4 MB or no split by 4-11%, one favoured 2 MB by 2.5%).
# Splits of 4.5-18 MB in that step neither gained nor lost; the im2col gathers of 5-75 MB above gain.
# That was with OpenBLAS's worker spinning beside every split (Note [Parked BLAS workers] in blas.py). With it
# parked, 2 MB wins (2026-11-29, pieces on, alternating with torch in one process, medians of 16 steps, ember/torch
# throughput at 4 / 2 / 1 MB): ResNet-8 0.50 / 0.53 / 0.54, VGG 0.63 / 0.66 / 0.64; the MLP makes no split at
# 2 or 4 MB (at 1 MB its SGD updates split: 1.10 / 1.06 / 0.99).


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def chunks(length, nbytes):
    """[(start, stop)] splitting range(length) in one piece per thread, or one piece when the work
    (nbytes) is too small to gain or we are already on a pool thread."""
    if nbytes < _MIN_BYTES or length < 2:  # the common case first: no thread count asked for
        return [(0, length)]
    n = min(threads(), length)
    if n <= 1 or threading.current_thread().name.startswith("ember-intraop"):
        return [(0, length)]
    step = -(-length // n)
    return [(a, min(length, a + step)) for a in range(0, length, step)]


def run(fn, length, nbytes):
    """fn(start, stop) over range(length) split across the intra-op threads; returns when all are done.
    The pieces must write disjoint memory."""
    parts = chunks(length, nbytes)
    if len(parts) == 1:
        fn(0, length)
        return
    _run_parts(fn, parts)


def run_flat(fn, arrays, nbytes):
    """fn(*pieces) over ranges of the flat elements of same-shaped C-contiguous arrays (an elementwise kernel
    reading some and writing others), split across the intra-op threads as run() decides from nbytes."""
    flat = [a.reshape(-1) for a in arrays]
    run(lambda i, j: fn(*(a[i:j] for a in flat)), flat[0].shape[0], nbytes)


# Row kernels give run() their bytes times ROW_WEIGHT (Note [Row pieces]): 2 splits them from 1 MiB arrays, 0 runs
# them whole on the calling thread.
ROW_WEIGHT = 2


def run_rows(fn, arrays, dim=None):
    """fn(*arrays) over ranges of their axis 0 on the intra-op threads (arrays[0] sets the length and the
    work; None entries pass through), for row kernels of several NumPy passes (Note [Row pieces]). A kernel
    that reduces along axis 0 (dim == 0) runs whole."""
    lead = arrays[0]
    if lead.ndim == 0 or dim == 0:
        fn(*arrays)
        return
    run(lambda a, b: fn(*(None if x is None else x[a:b] for x in arrays)), lead.shape[0], lead.nbytes * ROW_WEIGHT)


# Note [Row pieces]: row kernels (layer norm, softmax / log_softmax, cross_entropy, gelu) make 4-17 NumPy
# passes over the same rows, one call each. Two threads that both make many short NumPy calls lose much to
# GIL hand-offs, so each thread takes one contiguous range and makes every pass over it (its own row blocks
# inside); the per-row arithmetic is the same on any range, so the results do not depend on the thread count.
# The work they give run() is their bytes x ROW_WEIGHT (weighting by all the passes, so that 1 MB arrays split,
# lost here). Measured 2026-11-28 12:08-12:57 (2-core AMD EPYC VM; split vs not at 2 threads in one process,
# alternating, medians of 11 steps a round, rounds with another process on the CPU dropped; time split/unsplit,
# fwd+bwd): 1 MB (256x1024 float32) layer norm 1.10-1.27, gelu 0.89-1.05, softmax 0.95-1.16, log_softmax
# 0.82-0.97, cross_entropy 256x1000 1.14; 2 MB (512 rows) layer norm 0.75, gelu 0.70, softmax 0.73,
# log_softmax 0.70, cross_entropy 512x1000 0.85; 4 MB (1024 rows) layer norm 0.68-0.70, gelu 0.64-0.68,
# softmax 0.64-0.65, log_softmax 0.61, cross_entropy 1024x1000 0.59-0.70. (Against main's code in separate
# processes the figures scatter more: a process here runs these kernels either ~1.0x or ~1.4x as fast, at random,
# on main's code as on this.) A thread hand-off here costs ~0.2-0.3 ms, which a 1 MB kernel does not win back.
# Those were kernels measured alone. Inside training steps they lose (2026-11-29, 2 threads, ROW_WEIGHT 2 vs 0
# alternating in one process, medians of 16 rounds): GNMT's cross_entropy on 512x2000 logits forward 1.77 -> 1.49
# ms, backward 0.99 -> 0.83 (step 41.9 -> 41.4 ms); the 16-block Linear-LayerNorm-GELU MLP at 1024x512 (bench
# deep_mlp) 406 -> 370 and 337 -> 312 ms a step. A row kernel there follows a GEMM, after which NumPy's OpenBLAS
# keeps its worker thread spinning for ~0.1 s before it sleeps (OPENBLAS_THREAD_TIMEOUT, 2^28
# cycles by default), and the pool thread shares that core with it: exp rows of 512x2000 after a 512x512 GEMM
# took 1.41-1.83 ms split against 1.28 ms whole, 0.78 ms split with OPENBLAS_THREAD_TIMEOUT=4 (the worker
# asleep). Alone, with no GEMM before them, the splits still win (the bench's cross_entropy fwd+bwd on 1024x1000,
# alternating: 1.85 ms split, 3.02 ms whole), but a training step is where these kernels run, so ROW_WEIGHT was 0.
# (Tried: a check before each split for this process's running threads in /proc, splitting only with the cores
# free. In GNMT, the deep MLP and ResNet-8 every split decision saw OpenBLAS's worker running, so it came to the
# same as ROW_WEIGHT 0 plus ~30 us a check; not kept.) Since every split parks that worker (Note [Parked BLAS
# workers] in blas.py; its spin is a loop of nops, not sched_yield), ROW_WEIGHT is 2 again: deep_mlp 370.9 ->
# 331.7 ms a step (0.83 -> 0.92 of torch's throughput, alternating with torch in one process, medians of 12),
# GNMT 56.2 ms either way (30 rounds).


# Note [BLAS pieces]: NumPy's OpenBLAS splits each GEMM across its own threads, with a barrier at
# the end of every call. A convolution makes many narrow GEMMs (one per kernel tap, K = C), and on
# 2 cores those barriers cost what the second core gains (on a loaded machine far more: a
# descheduled BLAS thread stalls every call). run_blas gives each intra-op thread a whole piece
# (half the batch) and runs OpenBLAS on one thread meanwhile, so both cores do their piece's
# copies and GEMMs with one hand-off per kernel. The setting is process-wide: it is put back when
# the last region in flight ends. Measured on 2 cores shared with other jobs (load ~11), step time at
# 1 thread / at 2 threads in one process, alternating, medians of 8, before -> after: ResNet-8 x0.24
# -> x1.12, VGG x0.09 -> x1.22, Conv2d(64, 64, 3, padding=1) fwd+bwd x0.43 -> x1.40 (OpenBLAS's own
# split made the second thread a loss there); at 1 thread the CPU time per step did not grow. The
# 4 MB threshold of the copies, re-measured with this in place (load ~9), still beat 2 MB and 1 MB.
# Measured on a quiet machine (2026-11-28 10:10-10:25, the same 2-core VM at load ~2, bench/run.py, 2
# threads, pieces on at 16 MFLOP vs off, alternating): ResNet-8 0.41/0.43/0.41/0.45 vs 0.50/0.47/0.46/0.46
# of torch, VGG 0.59/0.64 vs 0.64/0.69, AlexNet 0.44/0.54 vs 0.59/0.52, Conv2d(64,64,3) 1.38/1.43 vs
# 1.49/1.33x torch's time. Idle cores make OpenBLAS's own split cheap, so the pieces lose there; they won
# only under oversubscription (above). So they were off by default. What made them lose on idle cores was
# OpenBLAS's worker, left spinning by the GEMM before each piece on the core the pool thread needs; with it parked
# during every split (Note [Parked BLAS workers] in blas.py) they are on from 16 MFLOP. Whole steps, 2026-11-29,
# alternating with torch in one process, ms and ember/torch throughput, medians of 16-24 steps: pieces with the
# worker parked vs pieces without: ResNet-8 105.2 (0.56) vs 131.8 (0.45), VGG 158.8 (0.66) vs 200.0 (0.52),
# AlexNet 120.5 (0.57) vs 155.1 (0.44). Everything of that change (parking, pieces, 2 MB splits, ROW_WEIGHT 2)
# against none of it: AlexNet 122.0 (0.56) vs 133.2 (0.51), VGG 151.3 (0.74) vs 161.4 (0.69), ResNet-8 103.9
# (0.55) vs 109.3 (0.52), MobileNetV2 117.7 (0.91) vs 129.7 (0.83); GNMT 56.2 vs 57.1 and NCF 8.2 vs 8.2 (30
# rounds). tests/test_conv_threads.py forces the pieces on any shape.
_blas_lock = threading.Lock()
_blas_regions = 0
_blas_restore = None
_MIN_FLOPS = 1 << 24  # ~16 MFLOP: pieces from there (Note [BLAS pieces]); 1 << 62 turns them off


def blas_chunks(length, flops):
    """chunks() for pieces that are GEMMs: split when the work (flops) is worth a hand-off."""
    return chunks(length, _MIN_BYTES if flops >= _MIN_FLOPS else 0)


def run_blas(fn, length, flops):
    """run() for pieces that call BLAS (the GEMMs of fn(start, stop) run on the calling thread):
    NumPy's OpenBLAS is on one thread while the pieces run (Note [BLAS pieces])."""
    parts = blas_chunks(length, flops)
    if len(parts) == 1:
        fn(0, length)
        return
    global _blas_regions, _blas_restore
    from . import blas
    with _blas_lock:
        if _blas_regions == 0:
            _blas_restore = blas.get_threads()
            blas.set_threads(1)
        _blas_regions += 1
    try:
        _run_parts(fn, parts)
    finally:
        with _blas_lock:
            _blas_regions -= 1
            if _blas_regions == 0:
                blas.set_threads(_blas_restore)


def run_compiled(fn, length, flops):
    """run() for compiled compute loops that call no BLAS (ember/_backend/conv_direct_jit.py): split, as
    run_blas, when the work (flops) is worth a hand-off."""
    parts = blas_chunks(length, flops)
    if len(parts) == 1:
        fn(0, length)
        return
    _run_parts(fn, parts)


def _in_callers_errstate(fn):
    """fn, to run on another thread under the calling thread's NumPy error state, which a new thread does not
    inherit. NumPy 2 keeps it in a context variable: the piece runs in a copy of the caller's context (one copy
    per call, as a context is entered by one thread at a time), ~1 us where np.geterr and np.errstate took
    ~5 (13 in a training step's splits). NumPy 1.x keeps it per thread: it is read and set again."""
    if _ERRSTATE_IN_CONTEXT:
        ctx = contextvars.copy_context()
        return lambda *args: ctx.copy().run(fn, *args)
    err = np.geterr()

    def call(*args):
        with np.errstate(**err):
            return fn(*args)
    return call


_ERRSTATE_IN_CONTEXT = int(np.__version__.split(".")[0]) >= 2  # NumPy 2 keeps np.errstate in a context variable


def _run_parts(fn, parts):
    """fn over parts[0] on this thread and over the others on pool threads; returns when all are done,
    raising the first error (this thread's first)."""
    piece = _in_callers_errstate(fn)
    workers = _take_workers(len(parts) - 1)
    with _blas_parked(workers):
        for w, (a, b) in zip(workers, parts[1:]):
            w.start(piece, a, b)
        try:
            for a, b in [parts[0]] + parts[1 + len(workers):]:  # ours, and any no worker was free for
                fn(a, b)
        except BaseException:
            _wait(workers, raise_error=False)
            raise
        _wait(workers)


@contextlib.contextmanager
def _blas_parked(workers):
    """OpenBLAS's spinning workers asleep while our pool `workers` run (Note [Parked BLAS workers] in blas.py);
    nothing to do when no pool thread was taken."""
    if not workers:
        yield
        return
    from . import blas
    blas.park()
    try:
        yield
    finally:
        blas.unpark()


def _wait(workers, raise_error=True):
    """result() of every worker, all waited for before the first error is raised."""
    error = None
    for w in workers:
        try:
            w.result()
        except BaseException as e:
            error = error or e
    if error is not None and raise_error:
        raise error


def stream(length, step, produce, consume, nbytes, align=1):
    """produce(a, b) over range(length) in order, `step` at a time, on the calling thread (a sequential
    source, e.g. a random stream), and consume(a, b) over the produced ranges on the intra-op threads,
    in ranges as long as the GIL hand-offs ask (Note [Streamed work]). The consumes must write disjoint
    memory; range ends other than `length` are multiples of `align` (`step` is one)."""
    workers = len(chunks(-(-length // step), nbytes)) - 1
    if workers < 1:
        for a in range(0, length, step):
            produce(a, min(length, a + step))
        if length:
            consume(0, length)
        return
    cond = threading.Condition()
    state = {"produced": 0, "claimed": 0, "ended": False}
    least = max(align, int(step * _STREAM_LEAST) // align * align)

    def claim():
        """The next range to consume (None when all is claimed), waiting for the producer if need be."""
        with cond:
            while state["claimed"] == state["produced"] and not state["ended"]:
                cond.wait()
            a, end = state["claimed"], state["produced"]
            if a == end:
                return None
            if state["ended"]:  # shrinking ranges, so that the threads finish together
                size = max(least, -(-(end - a) // (2 * workers + 2) // align) * align)
            else:
                size = _STREAM_STEPS * step
            b = min(end, a + size)
            state["claimed"] = b
            return a, b

    def work():
        while True:
            r = claim()
            if r is None:
                return
            consume(*r)

    worker = _in_callers_errstate(work)
    pool = _take_workers(workers)
    with _blas_parked(pool):
        for w in pool:
            w.start(worker)
        try:
            try:
                for a in range(0, length, step):
                    b = min(length, a + step)
                    produce(a, b)
                    with cond:
                        state["produced"] = b
                        cond.notify()
            finally:
                with cond:
                    state["ended"] = True
                    cond.notify_all()
            work()
        except BaseException:  # the workers are done before this raises (this thread's error first)
            _wait(pool, raise_error=False)
            raise
        _wait(pool)


# Note [Streamed work]: a normal fill is ~100 NumPy passes over its draws, each call releasing the GIL for its
# loop. Two threads both calling NumPy on short arrays spend much of their time handing the GIL to each other
# (2 cores: 2 x 200 passes over 16,384 float64 took 1.6x the time of one thread's, over 65,536 1.08x), so
# stream() keeps the consumes long: while the producer draws (one long NumPy call per step, the GIL
# released), a worker takes up to _STREAM_STEPS steps of what is drawn; once all is drawn, each thread takes
# 1/(2 * threads) of what is left, at least _STREAM_LEAST steps, so that the threads finish close together.
# randn(1_000_000) float32 on 2 threads, alternating in one process, medians of 31-41 (2026-11-28, 2-core
# AMD EPYC VM), ember/torch time: this 2.43-2.45x (least 0.5 step: 2.79-2.92x, one range per thread at the
# end: 2.44-2.76x); the earlier pipeline (each 65,536-draw piece a job of its own) 3.85-4.16x; the producer
# on a worker and every consume on the caller 2.85-3.30x. Both threads filling at once still run each NumPy
# pass ~1.5x slower than one thread alone (the GIL hand-offs and the shared cache), which bounds the gain.
_STREAM_STEPS = 2
_STREAM_LEAST = 1.0


def copyto(dst, src):
    """np.copyto(dst, src) for same-shaped arrays, split along axis 0."""
    if dst.ndim == 0 or dst.shape != src.shape:
        np.copyto(dst, src)
        return
    run(lambda a, b: np.copyto(dst[a:b], src[a:b]), dst.shape[0], dst.nbytes)
