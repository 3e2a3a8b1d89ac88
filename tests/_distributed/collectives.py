"""Every ember.distributed collective, checked against the same reduction computed in NumPy.

Run by tests/test_distributed.py as `mpiexec -n N python collectives.py` (MPI) and as N processes given
RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (the TCP transport): one launch runs every check (process
start-up dominates the cost), each rank records pass/fail per check, and rank 0 prints one
`CHECK <name> <ok|FAIL> <message>` line per check, merged over ranks through mpi4py directly, or under
TCP each rank writes its results to REPORT_DIR for the test to merge (so the report does not depend on
the code under test). Inputs are small integers, so every sum, product and
average is exact in each dtype (bfloat16 included) and results are compared for equality.
"""
import datetime
import itertools
import json
import os
import sys
import time
import traceback

import ml_dtypes
import numpy as np

import ember
import ember.distributed as dist

DTYPES = {"float32": (ember.float32, np.float32), "float64": (ember.float64, np.float64),
          "int64": (ember.int64, np.int64), "bfloat16": (ember.bfloat16, ml_dtypes.bfloat16)}
SENTINEL = 77
SHAPE = (3, 4)


def data(key, dtype, shape=SHAPE, kind="small"):
    """The input a rank (or a (rank, peer) pair) contributes: deterministic, so every rank knows all of them."""
    rng = np.random.default_rng([("small", "prod", "bits").index(kind), *np.atleast_1d(key)])
    if kind == "prod":
        values = rng.choice([-1.0, 1.0, 2.0], size=shape)
    elif kind == "bits":
        values = rng.integers(0, 16, size=shape).astype(np.float64)
    else:
        values = rng.integers(-8, 9, size=shape).astype(np.float64)
    return values.astype(DTYPES[dtype][1])


def make(arr, layout):
    """An ember tensor holding arr: contiguous, or a strided view whose gaps hold SENTINEL (returns tensor, base)."""
    if layout == "contig":
        t = ember.tensor(arr)
        return t, t
    shape = arr.shape[:-1] + (2 * arr.shape[-1],) if arr.ndim else (2,)
    base = ember.tensor(np.full(shape, SENTINEL, dtype=arr.dtype))
    view = base[..., ::2]
    view.copy_(ember.tensor(arr))
    return view, base


MISMATCHES = []  # checks record instead of raising, so a wrong value never desynchronizes the ranks


def expect(condition, what=None):
    if not condition:
        line = sys._getframe(1).f_lineno
        MISMATCHES.append(f"line {line}: {what}" if what is not None else f"expectation at line {line} failed")


def same(t, base, expected, layout):
    """t holds expected (exactly, same dtype) and a strided view's gaps are untouched."""
    got = t.numpy()
    expected = np.asarray(expected)
    wide = np.complex128 if got.dtype.kind == "c" else np.float64
    if got.dtype != expected.dtype or got.shape != expected.shape:
        MISMATCHES.append(f"got {got.dtype}{list(got.shape)}, expected {expected.dtype}{list(expected.shape)}")
    elif not np.array_equal(got.astype(wide), expected.astype(wide)):
        MISMATCHES.append(f"got {got.tolist()}, expected {expected.tolist()}")
    if layout == "strided" and not (base.numpy()[..., 1::2].astype(np.float64) == SENTINEL).all():
        MISMATCHES.append(f"a strided collective wrote outside its view: {base.numpy().tolist()}")


def finish(work, async_op):
    if async_op:
        expect(work is not None and work.wait() is True and work.is_completed())
    else:
        expect(work is None)


REDUCE = {"SUM": lambda a: a.sum(0), "AVG": lambda a: a.sum(0) / a.shape[0], "PRODUCT": lambda a: a.prod(0),
          "MIN": lambda a: a.min(0), "MAX": lambda a: a.max(0), "BAND": np.bitwise_and.reduce,
          "BOR": np.bitwise_or.reduce, "BXOR": np.bitwise_xor.reduce}


def ops_for(dtype):
    if dtype == "int64":
        return ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
    return ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]


def reduced(op, arrays, dtype):
    kind = arrays[0].dtype
    if op in ("BAND", "BOR", "BXOR"):
        return REDUCE[op](np.stack(arrays).astype(np.int64)).astype(kind)
    return REDUCE[op](np.stack(arrays).astype(np.float64)).astype(kind)


def kind_of(op):
    return {"PRODUCT": "prod", "BAND": "bits", "BOR": "bits", "BXOR": "bits"}.get(op, "small")


# ---- checks: each a function of (dtype, layout, async_op) or of nothing ---------------------------
def check_all_reduce(dtype, layout, async_op):
    for op in ops_for(dtype):
        arrays = [data(r, dtype, kind=kind_of(op)) for r in range(N)]
        t, base = make(arrays[R], layout)
        finish(dist.all_reduce(t, op=getattr(dist.ReduceOp, op), async_op=async_op), async_op)
        same(t, base, reduced(op, arrays, dtype), layout)


def check_broadcast(dtype, layout, async_op):
    src = N - 1
    t, base = make(data(R, dtype), layout)
    finish(dist.broadcast(t, src=src, async_op=async_op), async_op)
    same(t, base, data(src, dtype), layout)


def check_reduce(dtype, layout, async_op):
    dst = 1 % N
    for op in ops_for(dtype):
        arrays = [data(r, dtype, kind=kind_of(op)) for r in range(N)]
        t, base = make(arrays[R], layout)
        finish(dist.reduce(t, dst=dst, op=getattr(dist.ReduceOp, op), async_op=async_op), async_op)
        same(t, base, reduced(op, arrays, dtype) if R == dst else arrays[R], layout)


def check_all_gather(dtype, layout, async_op):
    t, _ = make(data(R, dtype), layout)
    outs = [make(np.zeros(SHAPE, DTYPES[dtype][1]), layout) for _ in range(N)]
    finish(dist.all_gather([o for o, _ in outs], t, async_op=async_op), async_op)
    for r, (o, base) in enumerate(outs):
        same(o, base, data(r, dtype), layout)


def check_all_gather_into_tensor(dtype, layout, async_op):
    t, _ = make(data(R, dtype), layout)
    out, base = make(np.zeros((N * SHAPE[0], SHAPE[1]), DTYPES[dtype][1]), layout)
    finish(dist.all_gather_into_tensor(out, t, async_op=async_op), async_op)
    same(out, base, np.concatenate([data(r, dtype) for r in range(N)]), layout)


def check_gather(dtype, layout, async_op):
    dst = N - 1
    t, _ = make(data(R, dtype), layout)
    outs = [make(np.zeros(SHAPE, DTYPES[dtype][1]), layout) for _ in range(N)] if R == dst else []
    work = dist.gather(t, [o for o, _ in outs] if R == dst else None, dst=dst, async_op=async_op)
    finish(work, async_op)
    for r, (o, base) in enumerate(outs):
        same(o, base, data(r, dtype), layout)


def check_scatter(dtype, layout, async_op):
    src = 0
    t, base = make(np.zeros(SHAPE, DTYPES[dtype][1]), layout)
    ins = [make(data((src, r), dtype), layout)[0] for r in range(N)] if R == src else None
    finish(dist.scatter(t, ins, src=src, async_op=async_op), async_op)
    same(t, base, data((src, R), dtype), layout)


def check_reduce_scatter(dtype, layout, async_op):
    for op in ops_for(dtype):
        ins = [make(data((R, j), dtype, kind=kind_of(op)), layout)[0] for j in range(N)]
        out, base = make(np.zeros(SHAPE, DTYPES[dtype][1]), layout)
        finish(dist.reduce_scatter(out, ins, op=getattr(dist.ReduceOp, op), async_op=async_op), async_op)
        same(out, base, reduced(op, [data((r, R), dtype, kind=kind_of(op)) for r in range(N)], dtype), layout)


def check_reduce_scatter_tensor(dtype, layout, async_op):
    for op in ops_for(dtype):
        rows = [np.concatenate([data((r, j), dtype, kind=kind_of(op)) for j in range(N)]) for r in range(N)]
        inp, _ = make(rows[R], layout)
        out, base = make(np.zeros(SHAPE, DTYPES[dtype][1]), layout)
        finish(dist.reduce_scatter_tensor(out, inp, op=getattr(dist.ReduceOp, op), async_op=async_op), async_op)
        mine = [row[R * SHAPE[0]:(R + 1) * SHAPE[0]] for row in rows]
        same(out, base, reduced(op, mine, dtype), layout)


def _a2a_shape(src, dst):
    return (1 + (src + 2 * dst) % 3, 2)


def check_all_to_all(dtype, layout, async_op):
    ins = [make(data((R, j), dtype, _a2a_shape(R, j)), layout)[0] for j in range(N)]
    outs = [make(np.zeros(_a2a_shape(j, R), DTYPES[dtype][1]), layout) for j in range(N)]
    finish(dist.all_to_all([o for o, _ in outs], ins, async_op=async_op), async_op)
    for j, (o, base) in enumerate(outs):
        same(o, base, data((j, R), dtype, _a2a_shape(j, R)), layout)


def check_all_to_all_single(dtype, layout, async_op):
    for uneven in (False, True):
        rows_to = [(1 + (R + j) % 2) if uneven else 2 for j in range(N)]      # rows this rank sends to j
        rows_from = [(1 + (j + R) % 2) if uneven else 2 for j in range(N)]    # rows j sends to this rank
        inp, _ = make(np.concatenate([data((R, j), dtype, (rows_to[j], 3)) for j in range(N)]), layout)
        out, base = make(np.zeros((sum(rows_from), 3), DTYPES[dtype][1]), layout)
        splits = dict(output_split_sizes=rows_from, input_split_sizes=rows_to) if uneven else {}
        finish(dist.all_to_all_single(out, inp, async_op=async_op, **splits), async_op)
        same(out, base, np.concatenate([data((j, R), dtype, (rows_from[j], 3)) for j in range(N)]), layout)


def check_send_recv(dtype, layout, async_op):
    right, left = (R + 1) % N, (R - 1) % N
    t, _ = make(data(R, dtype), layout)
    out, base = make(np.zeros(SHAPE, DTYPES[dtype][1]), layout)
    if async_op:
        works = [dist.isend(t, right, tag=5), dist.irecv(out, src=None, tag=5)]
        while not works[1].is_completed():  # completed by polling: the receive's status must still be read
            time.sleep(0.001)
        for w in works:
            expect(w.wait() is True and w.is_completed())
        expect(works[1].source_rank() == left)
    elif R % 2 == 0:
        dist.send(t, right)
        expect(dist.recv(out, left) == left)
    else:
        expect(dist.recv(out, None) == left)
        dist.send(t, right)
    same(out, base, data(left, dtype), layout)


TENSOR_CHECKS = [check_all_reduce, check_broadcast, check_reduce, check_all_gather, check_all_gather_into_tensor,
                 check_gather, check_scatter, check_reduce_scatter, check_reduce_scatter_tensor, check_all_to_all,
                 check_all_to_all_single, check_send_recv]


# ---- checks without a dtype: other dtypes, errors, mismatches, groups, barriers, objects -------------
def raises_everywhere(fn, exc, match):
    """fn raises exc (message containing match) on this rank; then the group must still work."""
    try:
        fn()
    except exc as e:
        expect(match in str(e), f"{type(e).__name__}: {e!r} does not mention {match!r}")
    else:
        expect(False, f"no {exc.__name__} raised")
    t = ember.ones(2)
    dist.all_reduce(t)
    expect(t.tolist() == [N, N], t)


def check_other_dtypes():
    bools = [np.array([r % 2 == 0, True, r == 0, False]) for r in range(N)]
    for op, expected in (("SUM", np.any(bools, 0)), ("MAX", np.any(bools, 0)), ("PRODUCT", np.all(bools, 0)),
                         ("MIN", np.all(bools, 0)), ("BXOR", np.logical_xor.reduce(bools, 0))):
        t = ember.tensor(bools[R])
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        same(t, t, expected, "contig")
    for name in ("complex64", "complex128"):
        arrays = [(data(r, "float64") + 1j * data(r + 10, "float64")).astype(name) for r in range(N)]
        for op in ("SUM", "AVG"):
            t = ember.tensor(arrays[R])
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            same(t, t, (np.sum(arrays, 0) / (N if op == "AVG" else 1)).astype(name), "contig")
    for name in ("float16", "int8", "uint8", "int16", "int32"):
        arrays = [data(r, "float64").__abs__().astype(name) for r in range(N)]
        for op in ("SUM", "MAX"):
            t, base = make(arrays[R], "strided")
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            same(t, base, reduced(op, arrays, None), "strided")
    for name in ("float32", "bfloat16"):  # a transposed view: strided in the other order
        arrays = [data(r, name) for r in range(N)]
        t = ember.tensor(np.ascontiguousarray(arrays[R].T)).t()
        dist.all_reduce(t)
        same(t, t, reduced("SUM", arrays, None), "contig")
    scalar = ember.tensor(float(R))
    dist.all_reduce(scalar)
    expect(scalar.item() == sum(range(N)) and scalar.shape == ())
    empty = ember.zeros(0, 3)
    dist.all_reduce(empty)
    expect(empty.shape == (0, 3))


def check_bfloat16_avg_rounds_once():
    """bfloat16 is reduced in float32 and rounded once (Note [Buffers to MPI])."""
    values = [np.array([1 + 2 ** -7 * (r + 1), 3.0], dtype=np.float32) for r in range(N)]
    t = ember.tensor(values[R].astype(ml_dtypes.bfloat16))
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    exact = np.mean([v.astype(ml_dtypes.bfloat16).astype(np.float32) for v in values], 0)
    same(t, t, exact.astype(ml_dtypes.bfloat16), "contig")


def check_zero_copy():
    """Contiguous tensors are MPI's buffers themselves; strided ones and reductions of 16-bit floats use copies."""
    from ember.distributed._mpi import Buffer
    for dtype in (ember.float32, ember.int64, ember.bfloat16):
        t = ember.zeros(3, 4, dtype=dtype)
        expect(np.shares_memory(Buffer(t).msg[0], t._data), dtype)
        expect(not np.shares_memory(Buffer(t[:, ::2]).msg[0], t._data), dtype)
    half = ember.zeros(3, dtype=ember.bfloat16)
    expect(np.shares_memory(Buffer(half).msg[0], half._data))
    expect(not np.shares_memory(Buffer(half, reduce=True).msg[0], half._data))


def check_version_and_work():
    t = ember.ones(4)
    before = t._version
    work = dist.all_reduce(t, async_op=True)
    while not work.is_completed():
        pass
    expect(work.is_success() and work.exception() is None and work.result()[0] is t)
    expect(t._version > before and t.tolist() == [N] * 4)


def check_reduce_op_errors():
    raises_everywhere(lambda: dist.all_reduce(ember.ones(2, dtype=ember.int64), op=dist.ReduceOp.AVG),
                      RuntimeError, "can't be cast")
    raises_everywhere(lambda: dist.all_reduce(ember.ones(2), op=dist.ReduceOp.BAND), RuntimeError, "non-integral")
    raises_everywhere(lambda: dist.all_reduce(ember.ones(2, dtype=ember.complex64), op=dist.ReduceOp.MAX),
                      ValueError, "complex")
    raises_everywhere(lambda: dist.all_reduce(ember.ones(2), op="sum"), TypeError, "ReduceOp")
    raises_everywhere(lambda: dist.all_reduce([ember.ones(2)]), TypeError, "torch.Tensor")
    raises_everywhere(lambda: dist.broadcast(ember.ones(2)), ValueError, "global_rank or group_rank")
    raises_everywhere(lambda: dist.broadcast(ember.ones(2), src=N), RuntimeError, "invalid root rank")


def check_mismatched_shapes():
    raises_everywhere(lambda: dist.all_reduce(ember.ones(2 if R == 0 else 3)), RuntimeError, "do not match")
    raises_everywhere(lambda: dist.broadcast(ember.ones(2, 2) if R == 0 else ember.ones(4), src=0),
                      RuntimeError, "shape [2, 2]")


def check_mismatched_dtypes():
    raises_everywhere(lambda: dist.all_reduce(ember.ones(2, dtype=ember.float64 if R == 0 else ember.float32)),
                      RuntimeError, "float64")


def check_mismatched_collectives():
    raises_everywhere(lambda: dist.broadcast(ember.ones(2), src=0) if R == 0 else dist.all_reduce(ember.ones(2)),
                      RuntimeError, "called different collectives")
    raises_everywhere(lambda: dist.barrier() if R == 0 else dist.all_gather_object([None] * N, R),
                      RuntimeError, "rank 0 called barrier")


def check_mismatched_roots_and_ops():
    raises_everywhere(lambda: dist.broadcast(ember.ones(2), src=R % 2), RuntimeError, "root")
    raises_everywhere(lambda: dist.all_reduce(ember.ones(2), op=dist.ReduceOp.MAX if R else dist.ReduceOp.SUM),
                      RuntimeError, "op MAX")


def check_one_rank_bad_arguments():
    """Only the last rank's arguments are wrong: it raises its own error, the others one naming it."""
    outs = [ember.zeros(2) for _ in range(N + (1 if R == N - 1 else 0))]
    expected = "invalid output tensor list" if R == N - 1 else f"rank(s) [{N - 1}]"
    raises_everywhere(lambda: dist.all_gather(outs, ember.ones(2)), RuntimeError, expected)
    out = ember.zeros(N + (1 if R == 0 else 0))
    raises_everywhere(lambda: dist.all_to_all_single(out, ember.ones(N)), RuntimeError, "split" if R == 0 else "[0]")


def check_all_to_all_counts_disagree():
    """Each rank's own splits are valid, but rank 0 expects more rows from rank 1 than rank 1 sends."""
    rows_in = [1] * N
    rows_out = [1] * N
    if R == 0:
        rows_out = [1, 2] + [1] * (N - 2)
    inp = ember.ones(sum(rows_in), 2)
    out = ember.zeros(sum(rows_out), 2)
    raises_everywhere(lambda: dist.all_to_all_single(out, inp, rows_out, rows_in), RuntimeError, "do not match")


def check_new_group():
    members = [0, N - 1]
    g = dist.new_group([N - 1, 0])
    if R in members:
        expect(dist.get_rank(g) == members.index(R) and dist.get_world_size(g) == 2)
        expect(dist.get_process_group_ranks(g) == members and dist.get_global_rank(g, 1) == N - 1)
        expect(dist.get_group_rank(g, N - 1) == 1 and dist.get_backend(g) == "gloo")
        t = ember.tensor([float(R)])
        dist.all_reduce(t, group=g)
        expect(t.tolist() == [float(N - 1)], t)
        b = ember.tensor([float(R)])
        dist.broadcast(b, src=N - 1, group=g)
        expect(b.tolist() == [float(N - 1)])
        b = ember.tensor([float(R)])
        dist.broadcast(b, group=g, group_src=0)
        expect(b.tolist() == [0.0])
        objs = [None, None]
        dist.all_gather_object(objs, R, group=g)
        expect(objs == members)
        dist.destroy_process_group(g)
    else:
        expect(g == dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1 and dist.get_world_size(g) == -1)
        import warnings
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            expect(dist.all_reduce(ember.ones(1), group=g) is None)
    whole = dist.new_group()
    t = ember.ones(1)
    dist.all_reduce(t, group=whole)
    expect(t.tolist() == [float(N)])


def check_barriers():
    expect(dist.barrier() is None)
    work = dist.barrier(async_op=True)
    expect(work.wait() and work.is_completed())
    expect(dist.monitored_barrier() is None)
    expect(dist.monitored_barrier(wait_all_ranks=True) is None)


def check_monitored_barrier_names_late_rank():
    short = datetime.timedelta(seconds=1)
    if R == N - 1:
        pass  # skips the monitored barrier: waits in the barrier below until the others gave up on it
    elif R == 0:
        raises_everywhere_no_sync(lambda: dist.monitored_barrier(timeout=short, wait_all_ranks=True),
                                  RuntimeError, f"Ranks {N - 1} failed to pass monitoredBarrier in 1000 ms")
    else:
        raises_everywhere_no_sync(lambda: dist.monitored_barrier(timeout=short), dist.DistBackendError, "timed out")
    dist.barrier()
    dist.monitored_barrier()


def raises_everywhere_no_sync(fn, exc, match):
    try:
        fn()
    except exc as e:
        expect(match in str(e), f"{type(e).__name__}: {e!r} does not mention {match!r}")
    else:
        expect(False, f"no {exc.__name__} raised")


def check_objects():
    objs = [{"rank": R, "t": ember.arange(3) * R}, "x" * (R + 1)] if R == 1 % N else [None, None]
    dist.broadcast_object_list(objs, src=1 % N)
    expect(objs[0]["rank"] == 1 % N and objs[0]["t"].tolist() == [0, 1 % N, 2 * (1 % N)])
    expect(objs[1] == "x" * (1 % N + 1))
    gathered = [None] * N
    dist.all_gather_object(gathered, {"r": R, "pad": "y" * R})
    expect(gathered == [{"r": r, "pad": "y" * r} for r in range(N)])
    out = [None] * N if R == 0 else None
    dist.gather_object((R, [R] * R), out, dst=0)
    if R == 0:
        expect(out == [(r, [r] * r) for r in range(N)])
    right, left = (R + 1) % N, (R - 1) % N
    incoming = [None, None]
    if R % 2 == 0:
        dist.send_object_list([R, {"from": R}], dst=right)
        expect(dist.recv_object_list(incoming, src=left) == left)
    else:
        expect(dist.recv_object_list(incoming) == left)
        dist.send_object_list([R, {"from": R}], dst=right)
    expect(incoming == [left, {"from": left}], incoming)
    received = [None]
    dist.scatter_object_list(received, [f"to {r}" * (r + 1) for r in range(N)] if R == N - 1 else None, src=N - 1)
    expect(received == [f"to {R}" * (R + 1)])


def check_p2p_errors():
    raises_everywhere_no_sync(lambda: dist.send(ember.ones(2), dst=R), ValueError, "should not be the same")
    if R == 0:
        dist.send(ember.ones(3), dst=1)
    elif R == 1:
        raises_everywhere_no_sync(lambda: dist.recv(ember.zeros(4), src=0), RuntimeError, "sent 3 elements")
    dist.barrier()


def check_state():
    from ember.distributed import _mpi
    expect(_mpi.on_tcp() == bool(os.environ.get("REPORT_DIR")), "the transport is not the one the launch asked for")
    if _mpi.on_tcp():  # after every other check: no matched receive's entry is kept (one per collective would grow;
        # the unexpected messages may hold a faster peer's part of the next collective already)
        expect(not _mpi.mpi()._net.posted, _mpi.mpi()._net.posted)
    expect(dist.is_available() and dist.is_initialized() and dist.get_backend() == "gloo")
    expect(dist.group.WORLD is dist.GroupMember.WORLD and dist.group.WORLD is not None)
    expect(dist.get_process_group_ranks(dist.group.WORLD) == list(range(N)))
    expect(repr(dist.ReduceOp.SUM) == "<RedOpType.SUM: 0>" and int(dist.ReduceOp.BXOR) == 7)
    try:
        dist.init_process_group()
    except ValueError as e:
        expect("twice" in str(e))
    else:
        raise AssertionError("a second init_process_group did not raise")


def measure_costs():
    """Per-call time of a 2-element all_reduce and of its agreement step alone (reported, not asserted)."""
    from ember.distributed import _check
    pg = dist.group.WORLD
    t = ember.ones(2)
    timings = {}
    for name, fn in (("all_reduce", lambda: dist.all_reduce(t)),
                     ("agreement", lambda: _check.agree(pg, "all_reduce", ember.float32, (2,)))):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(100):
            fn()
        timings[name] = (time.perf_counter() - start) / 100 * 1e6
    if R == 0:
        print(f"METRIC all_reduce_us={timings['all_reduce']:.0f} agreement_us={timings['agreement']:.0f}")


MORE_CHECKS = [check_zero_copy, check_other_dtypes, check_bfloat16_avg_rounds_once, check_version_and_work, check_reduce_op_errors,
               check_mismatched_shapes, check_mismatched_dtypes, check_mismatched_collectives,
               check_mismatched_roots_and_ops, check_one_rank_bad_arguments, check_all_to_all_counts_disagree,
               check_new_group, check_barriers, check_monitored_barrier_names_late_rank, check_objects,
               check_p2p_errors, check_state]


def main():
    results = {}
    start = time.perf_counter()
    for check, dtype, layout, async_op in itertools.product(TENSOR_CHECKS, DTYPES, ("contig", "strided"),
                                                            (False, True)):
        name = f"{check.__name__[6:]}[{dtype}-{layout}-{'async' if async_op else 'sync'}]"
        results[name] = run_check(check, dtype, layout, async_op)
    for check in MORE_CHECKS:
        results[check.__name__[6:]] = run_check(check)
    elapsed = time.perf_counter() - start
    measure_costs()
    report(results, elapsed)
    dist.destroy_process_group()


def run_check(check, *args):
    MISMATCHES.clear()
    try:
        check(*args)
    except Exception:
        sys.stderr.write(f"[rank{R}] {check.__name__}{args}: {traceback.format_exc(limit=4)}\n")
        return traceback.format_exc(limit=4)
    if MISMATCHES:
        return "; ".join(MISMATCHES)
    return None


def report(results, elapsed):
    """Merge per-rank results on rank 0 with mpi4py itself, and print one line per check (under TCP: write
    this rank's results to REPORT_DIR)."""
    if os.environ.get("REPORT_DIR"):
        with open(os.path.join(os.environ["REPORT_DIR"], f"rank{R}.json"), "w") as f:
            json.dump({"results": results, "elapsed": elapsed}, f)
        return
    from mpi4py import MPI
    everyone = MPI.COMM_WORLD.gather(results, root=0)
    if R != 0:
        return
    for name in results:
        failures = {r: res[name] for r, res in enumerate(everyone) if res.get(name)}
        status = "FAIL" if failures else "ok"
        print(f"CHECK {name} {status} {json.dumps(failures) if failures else ''}")
    print(f"ELAPSED {elapsed:.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
    R = dist.get_rank()
    N = dist.get_world_size()
    main()
