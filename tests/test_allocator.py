"""The caching allocator of CPU storage (Note [Caching allocator] in ember/_backend/allocator.py).

Safety first: a block is never handed to two live arrays, and comes back exactly when the last
array over it (views, reshapes, transposes, a Tensor's grad, a saved tensor of a graph node) dies.
Then reuse, the cap, empty_cache, the off switch, bit-identical results (a small CNN trains to the
same losses with the pool on and off), threads and fork (DataLoader workers).
"""
import gc
import os
import pickle
import random
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import torch

import ember
from ember import _backend as B
from ember._backend import allocator as A
from ember._backend.numpy_cpu import restride, storage_nelements, storage_root

KB = 1 << 10
MB = 1 << 20


@pytest.fixture(scope="module", autouse=True)
def frozen_heap():
    """The objects alive before this module (op databases of other modules in this worker) are moved out
    of the collector's sight after one full collection, so the per-test collections below scan only what
    these tests made: 1-3 s each otherwise, in a worker that loaded torch's OpInfo database."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture(autouse=True)
def pool():
    """Each test starts with an enabled, empty pool at the default settings, and leaves it so."""
    saved = (A.enabled, A.threshold, A.max_cached)
    gc.collect()
    A.set_enabled(True)
    A.configure(256 * KB, 256 * MB)
    A.empty_cache()
    A.reset_accumulated_stats()
    A.reset_peak_stats()
    yield A
    gc.collect()
    A.set_enabled(saved[0])
    A.configure(saved[1], saved[2])
    A.empty_cache()


def stats():
    return A.stats()


def live_blocks():
    return stats()["active.all.current"]


def check_invariants():
    """The free lists agree with each other and with the counters; no block is filed twice."""
    with A._lock:
        A._drain()
        blocks = [b for lst in A._cached.values() for b in lst]
        assert len(blocks) == len(set(map(id, blocks))) == len(A._lru)
        assert set(map(id, blocks)) == set(map(id, A._lru))
        assert sum(b.size for b in blocks) == A._stats.cached
        for size, lst in A._cached.items():
            assert lst and all(b.size == size for b in lst)
        assert A._stats.cached <= A.max_cached
        return blocks


def addr(a):
    return a.__array_interface__["data"][0]


# ---- the owner: a block comes back exactly when the last array over it dies ----------------------

def test_small_arrays_are_numpy_own_large_are_pooled():
    small = B.empty((100,), np.float32)
    big = B.empty((1000, 1000), np.float32)
    assert not A.is_pooled(small)
    assert A.is_pooled(big) and big.flags.c_contiguous and big.flags.writeable and big.flags.aligned
    assert big.shape == (1000, 1000) and big.dtype == np.float32
    assert addr(big) % 64 == 0
    assert storage_root(big) is big  # the owner is not an ndarray: storage queries see the array
    assert live_blocks() == 1


def test_views_of_views_keep_the_block():
    a = B.empty((512, 512), np.float32)
    a[...] = 7
    views = [a.T, a[1:, ::2], a.reshape(-1), a.reshape(64, -1).T[3:], a.view(np.int32), a[None].transpose(2, 0, 1)]
    vv = views[1][::3].T[2:, 1:][::-1]  # a view of a view of a view ...
    assert np.shares_memory(vv, a) and vv.base is not None
    strided = restride(a, (10, 10), (1, 512), 5)  # numpy_cpu's own view maker
    del a
    gc.collect()
    assert live_blocks() == 1
    for v in views:
        del v
    views.clear()
    assert live_blocks() == 1
    del vv
    assert live_blocks() == 1
    assert np.all(strided == 7)
    del strided
    assert live_blocks() == 0
    assert stats()["cached_bytes"] == A.bucket(512 * 512 * 4)


def test_block_returns_when_last_tensor_dies():
    x = ember.randn(1024, 1024)
    y = x * 2  # pooled output of a row op
    assert A.is_pooled(y._data)
    t = y.t()
    s = y[10:20]
    flat = y.reshape(-1)
    n = live_blocks()
    del y
    assert live_blocks() == n
    del t, s
    assert live_blocks() == n
    del flat
    assert live_blocks() == n - 1


def test_grad_and_saved_tensors_keep_their_blocks():
    w = ember.randn(512, 512, requires_grad=True)
    x = ember.randn(512, 512)
    y = (w * x).exp()  # exp saves its (pooled) output for backward
    saved = y.grad_fn._saved[0].obj
    assert A.is_pooled(saved)
    saved_addr = addr(saved)
    del saved
    z = y.sum()
    del y  # now only the graph node holds the output's array
    gc.collect()
    assert all(b.addr != saved_addr for b in check_invariants())
    del z  # the graph dies: its saved output's block comes back
    assert any(b.addr == saved_addr for b in check_invariants())

    z = (w * x).exp().sum()
    z.backward()
    del z
    g = w.grad
    assert A.is_pooled(g._data)  # the engine kept the pooled gradient (no copy)
    keep = g._data.copy()
    grad_addr = addr(g._data)
    del g
    gc.collect()
    assert all(b.addr != grad_addr for b in check_invariants())  # w.grad holds it
    A.empty_cache()
    filler = [B.empty((512, 512), np.float32) for _ in range(4)]  # cannot be handed w.grad's block
    for f in filler:
        f.fill(-1)
    np.testing.assert_array_equal(w.grad.numpy(), keep)
    w.grad = None
    assert any(b.addr == grad_addr for b in check_invariants())


def test_reuse_counts_and_addresses():
    a = B.empty((300, 1000), np.float32)
    p = addr(a)
    del a
    s0 = stats()
    b = B.empty((1000, 300), np.float32)  # same bytes: same bucket, same block
    assert addr(b) == p
    s1 = stats()
    assert s1["num_alloc_from_cache"] == s0["num_alloc_from_cache"] + 1
    assert s1["num_alloc_misses"] == s0["num_alloc_misses"]
    c = B.empty((1000, 300), np.float32)  # b is live: a miss, another block
    assert addr(c) != p and not np.shares_memory(b, c)
    assert stats()["num_alloc_misses"] == s0["num_alloc_misses"] + 1


def test_bucket_rounding():
    for n in [256 * KB, 256 * KB + 1, 300_000, MB - 1, MB, 40_000_000, 3 * MB + 17, (1 << 31) + 5]:
        b = A.bucket(n)
        assert b >= n and b % 4096 == 0
        assert b - n < n / 4 + 4096  # less than 25% wasted
    assert A.bucket(40_000_000) == 41_943_040  # 10M float32: 5% rounding
    sizes = {A.bucket(n) for n in range(MB + 1, 2 * MB + 1, 1000)}
    assert sizes == {5 * MB // 4, 3 * MB // 2, 7 * MB // 4, 2 * MB}  # four buckets per power of two


def test_zeros_ones_full_on_dirty_blocks():
    a = B.empty((1000, 1000), np.float32)
    a.fill(np.nan)
    del a
    z = B.zeros((1000, 1000), np.float32)
    assert stats()["num_alloc_from_cache"] == 1
    assert not z.any()
    del z
    e = ember.ones(1000, 1000, dtype=ember.float64)
    assert (e.numpy() == 1).all()
    f = ember.full((700, 700), 2.5, dtype=ember.bfloat16)
    assert A.is_pooled(f._data)
    assert (f.float().numpy() == 2.5).all()
    z = ember.zeros(700, 700, dtype=ember.bfloat16)
    assert A.is_pooled(z._data) and not z._data.view(np.uint16).any()


def test_memory_functions():
    cpu = ember.cpu
    base = cpu.memory_allocated()
    a = ember.empty(1024, 1024)
    assert cpu.memory_allocated() == base + 4 * MB
    b = ember.empty(1024, 1024)
    assert cpu.max_memory_allocated() == base + 8 * MB
    del a, b
    assert cpu.memory_allocated() == base
    assert cpu.memory_reserved() == base + 8 * MB
    assert cpu.max_memory_allocated() == base + 8 * MB
    cpu.reset_peak_memory_stats()
    assert cpu.max_memory_allocated() == base
    cpu.empty_cache()
    assert cpu.memory_reserved() == cpu.memory_allocated() == base
    s = cpu.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current",
                "num_alloc_from_cache", "num_alloc_misses", "cached_bytes"):
        assert key in s
    assert s["reserved_bytes.all.current"] == s["allocated_bytes.all.current"] + s["cached_bytes"]


def test_cpu_module_basics_match_torch():
    for name in ("is_available", "device_count", "current_device"):
        assert getattr(ember.cpu, name)() == getattr(torch.cpu, name)()
    ember.cpu.synchronize()


# ---- safety: never two live owners of one block ---------------------------------------------------

def test_no_overlap_among_live_arrays_fuzz():
    rng = random.Random(0)
    A.configure(threshold_bytes=64 * KB, max_cached_bytes=4 * MB)
    live = {}  # key -> (array or a view outliving it, fill value)
    sizes = [64 * KB, 70 * KB, 80 * KB, 100 * KB, 128 * KB, 200 * KB, 300 * KB]
    for step in range(1500):
        if live and rng.random() < 0.45:
            key = rng.choice(list(live))
            del live[key]
            continue
        n = rng.choice(sizes)
        dtype = rng.choice([np.float32, np.float64, np.int16, np.uint8])
        shape = (n // np.dtype(dtype).itemsize,)
        a = B.zeros(shape, dtype) if rng.random() < 0.3 else B.empty(shape, dtype)
        value = step % 100 + 1
        a.fill(value)
        kind = rng.random()
        if kind < 0.2:
            a = a[1:].reshape(-1)[::2]  # only a view survives its base
        elif kind < 0.3:
            a = a.reshape(2, -1).T
        live[step] = (a, value)
        if step % 50 == 0:
            arrays = list(live.values())
            for i in range(len(arrays)):
                assert (arrays[i][0] == arrays[i][1]).all(), "a live array was overwritten"
                for j in range(i):
                    assert not np.shares_memory(arrays[i][0], arrays[j][0])
            cached = check_invariants()
            for arr, _ in arrays:
                for blk in cached:
                    assert not np.shares_memory(arr, blk.buf), "a live array's block is in the free lists"
    assert stats()["num_alloc_from_cache"] > 100
    live.clear()
    del a, arrays, arr
    assert live_blocks() == 0
    check_invariants()


def test_owner_dying_while_lock_is_held_is_queued():
    a = B.empty((1000, 1000), np.float32)
    with A._lock:  # as if a garbage collection ran inside an allocation
        del a
        assert len(A._returned) == 1
    assert stats()["cached_bytes"] == 4 * MB  # drained by the next call
    assert not A._returned
    check_invariants()


# ---- cap, empty_cache, off switch -----------------------------------------------------------------

def test_cap_on_cached_bytes_evicts_least_recently_freed():
    A.configure(max_cached_bytes=10 * MB)
    arrays = [B.empty((MB,), np.uint8) for _ in range(12)]  # 1 MiB buckets
    addrs = [addr(a) for a in arrays]
    while arrays:
        del arrays[0]  # freed in allocation order
        assert stats()["cached_bytes"] <= 10 * MB
    s = stats()
    assert s["cached_bytes"] == 10 * MB and s["num_evictions"] == 2
    kept = {b.addr for b in check_invariants()}
    assert kept == set(addrs[2:])  # the two freed first went back to glibc
    A.configure(max_cached_bytes=3 * MB)  # a lower cap evicts at once
    assert stats()["cached_bytes"] == 3 * MB
    assert {b.addr for b in check_invariants()} == set(addrs[-3:])
    big = B.empty((4 * MB,), np.uint8)  # larger than the cap: never cached
    del big
    assert stats()["cached_bytes"] == 3 * MB and stats()["num_dropped"] == 1


def test_empty_cache_releases_everything_but_live_blocks():
    keep = B.empty((MB,), np.uint8)
    for _ in range(3):
        tmp = [B.empty((2 * MB,), np.uint8) for _ in range(4)]
        del tmp
    assert stats()["cached_bytes"] == 8 * MB
    ember.cpu.empty_cache()
    s = stats()
    assert s["cached_bytes"] == 0 and s["reserved_bytes.all.current"] == s["allocated_bytes.all.current"] == MB
    assert not check_invariants()
    keep[:] = 1
    del keep
    assert stats()["cached_bytes"] == MB


def test_disabled_mode():
    a = B.empty((MB,), np.uint8)
    ember.cpu.set_allocator_enabled(False)
    assert not ember.cpu.is_allocator_enabled()
    b = B.empty((MB,), np.uint8)
    x = ember.randn(1000, 1000)
    y = (x * x + 1).relu()
    assert not A.is_pooled(b) and not A.is_pooled(y._data)
    del a  # allocated while on: freed while off, dropped
    s = stats()
    assert s["cached_bytes"] == 0 and s["allocated_bytes.all.current"] == 0
    ember.cpu.set_allocator_enabled(True)
    assert A.is_pooled((x * x)._data)


def test_env_switch_turns_the_pool_off():
    code = textwrap.dedent("""
        import ember
        from ember._backend import allocator as A
        x = ember.randn(1000, 1000)
        y = (x * x).relu() @ x
        print(A.enabled, A.is_pooled(y._data), ember.cpu.memory_stats()["allocation.all.allocated"])
    """)
    env = dict(os.environ, EMBER_CACHING_ALLOCATOR="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "0"]
    env = dict(os.environ, EMBER_CACHING_ALLOCATOR="1", EMBER_ALLOCATOR_THRESHOLD="1M",
               EMBER_ALLOCATOR_MAX_CACHED="64M")
    code2 = "import ember; from ember._backend import allocator as A; print(A.enabled, A.threshold, A.max_cached)"
    out = subprocess.run([sys.executable, "-c", code2], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["True", str(MB), str(64 * MB)]


def test_default_threshold_follows_the_glibc_tuning():
    """32 MiB where ember tunes glibc (which keeps smaller buffers itself), 256 KiB without the tuning."""
    code = "import ember; from ember._backend import allocator as A; print(A.threshold)"
    glibc = hasattr(os, "register_at_fork") and sys.platform.startswith("linux")
    for keep, expected in (("1", 32 * MB if glibc else 256 * KB), ("0", 256 * KB)):
        env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_ALLOCATOR")}
        env["EMBER_KEEP_FREED_MEMORY"] = keep
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert int(out.stdout) == expected


def test_settings_strings():
    assert A.parse_bytes("512K") == 512 * KB and A.parse_bytes("1.5G") == 3 << 29 and A.parse_bytes(4096) == 4096
    assert 0 < A.parse_bytes("10%") < A.parse_bytes("20%")
    ember.cpu.set_allocator_settings(threshold="1M", max_cached="32M")
    assert A.threshold == MB and A.max_cached == 32 * MB
    assert not A.is_pooled(B.empty((MB - 4,), np.uint8))


# ---- results: bit-identical, NumPy's layouts -------------------------------------------------------

LAYOUT_CASES = [
    ((600, 600), (600, 600)), ((600, 600), (600,)), ((600, 1), (1, 600)), ((64, 32, 16, 16), (32, 1, 1)),
    ((300000,), ()), ((2, 300, 300), (300, 1)),
]


@pytest.mark.parametrize("shapes", LAYOUT_CASES)
@pytest.mark.parametrize("f", [np.add, np.multiply, np.greater, np.maximum, np.arctan2])
def test_pooled_ufunc_matches_numpy(shapes, f):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ref = f(*args)
    got = B.ufunc(f, *args)
    assert got.dtype == ref.dtype and got.shape == ref.shape and got.strides == ref.strides
    np.testing.assert_array_equal(got, ref)
    assert A.is_pooled(got) == (ref.nbytes >= A.threshold)


def test_pooled_ufunc_keeps_numpy_layout_for_strided_inputs():
    x = np.random.default_rng(0).standard_normal((600, 700)).astype(np.float32)
    for arg in (x.T, x[:, ::2], np.asfortranarray(x)):
        got = B.ufunc(np.exp, arg)
        ref = np.exp(arg)
        assert got.strides == ref.strides
        np.testing.assert_array_equal(got, ref)
    t = ember.from_numpy(np.asfortranarray(x))
    assert (t * 2).stride() == torch.from_numpy(np.asfortranarray(x)).mul(2).stride()


def test_pooled_ufunc_strides_match_numpy_for_views():
    """Slices, broadcast (expanded) views, size-1 dims, transposes, flips, Fortran order: pooled exactly
    where NumPy's own output is C-contiguous, with NumPy's strides."""
    A.configure(threshold_bytes=1)
    base = np.random.default_rng(0).standard_normal((6, 5, 4, 3)).astype(np.float32)
    full = (6, 5, 4, 3)
    cands = [base, base[:, ::2], base[::2, :, 1:], base[:, :1], base[:, :, :, :1], base[:, 2:3],
             np.broadcast_to(base[:, :1], full), np.broadcast_to(base[0], full), np.broadcast_to(base[..., :1], full),
             base.transpose(1, 0, 2, 3), base[:, ::-1], np.asfortranarray(base), base[None, 0], base[0, 0, 0]]
    pooled = 0
    for a in cands:
        for b in cands:
            try:
                ref = np.add(a, b)
            except ValueError:
                continue
            got = B.ufunc(np.add, a, b)
            assert got.strides == ref.strides, (a.strides, b.strides)
            np.testing.assert_array_equal(got, ref)
            pooled += A.is_pooled(got)
        got = B.ufunc(np.negative, a)
        assert got.strides == np.negative(a).strides
    assert pooled > 50


@pytest.mark.parametrize("shapes", [((512, 300), (300, 512)), ((4, 200, 100), (100, 300)),
                                    ((3, 1, 100, 200), (5, 200, 300))])
def test_pooled_matmul_matches_numpy(shapes):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    ref = np.matmul(a, b)
    got = B.matmul(a, b)
    assert A.is_pooled(got) and got.strides == ref.strides
    np.testing.assert_array_equal(got, ref)


def _cnn_losses(steps=4):
    ember.manual_seed(0)
    nn = ember.nn
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 8 * 8, 64), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, 10))
    opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(1)
    x = ember.from_numpy(rng.standard_normal((32, 3, 32, 32), dtype=np.float32))
    y = ember.from_numpy(rng.integers(0, 10, 32))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    weights = [p.detach().numpy().copy() for p in model.parameters()]
    return losses, weights


def test_training_identical_with_pool_on_and_off():
    A.set_enabled(False)
    off, w_off = _cnn_losses()
    A.set_enabled(True)
    on, w_on = _cnn_losses()
    assert stats()["num_alloc_from_cache"] > 20  # the pool did serve this loop
    A.configure(threshold_bytes=1)  # every buffer pooled
    every, w_every = _cnn_losses()
    assert off == on == every
    for a, b, c in zip(w_off, w_on, w_every):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    assert off[-1] < off[0]


def test_tensor_conversions_of_pooled_storage():
    x = ember.randn(512, 512) * 3
    assert A.is_pooled(x._data)
    assert storage_nelements(x._data) == 512 * 512  # the request, not the rounded block
    assert x[3:].storage_offset() == 3 * 512
    y = pickle.loads(pickle.dumps(x))
    assert ember.equal(x, y)
    n = x.numpy()
    assert np.shares_memory(n, x._data)
    x.share_memory_()
    assert x.is_shared() and np.array_equal(x.numpy(), n)


# ---- threads and fork -----------------------------------------------------------------------------

def test_two_threads_allocating_and_freeing():
    A.configure(max_cached_bytes=16 * MB)
    errors = []
    handoff = []  # arrays made in one thread die in the other

    def work(seed):
        rng = random.Random(seed)
        mine = []
        try:
            for i in range(3000):
                if mine and rng.random() < 0.5:
                    a, v = mine.pop(rng.randrange(len(mine)))
                    if not (a == v).all():
                        errors.append("overwritten")
                    if rng.random() < 0.3:
                        handoff.append(a)
                    continue
                n = rng.choice([256 * KB, 300 * KB, 512 * KB, MB])
                a = B.empty((n,), np.uint8)
                v = (seed * 7 + i) % 251
                a.fill(v)
                mine.append((a, v))
                if handoff and rng.random() < 0.5:
                    try:
                        handoff.pop()
                    except IndexError:
                        pass
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))
        for a, v in mine:
            if not (a == v).all():
                errors.append("overwritten at the end")

    threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    handoff.clear()
    gc.collect()
    s = stats()
    assert s["active.all.current"] == 0 and s["allocated_bytes.all.current"] == 0
    assert s["requested_bytes.all.current"] == 0
    check_invariants()
    assert s["num_alloc_from_cache"] > 1000


class _PooledDataset:
    """Each sample is computed with large temporaries (pooled in the worker), returned small."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        x = ember.full((512, 512), float(i))
        y = (x * 2 + 1).relu()  # pooled temporaries, freed in the worker
        z = y @ ember.eye(512)
        return z[:4, :4].clone(), A.stats()["num_alloc_from_cache"]


def test_dataloader_workers_do_not_disturb_the_parents_pool():
    kept = []
    for i in range(6):
        a = B.empty((MB,), np.uint8)
        a.fill(i + 1)
        kept.append(a)
    for _ in range(3):  # some cached blocks too
        tmp = B.empty((2 * MB,), np.uint8)
        del tmp
    before_cached = {b.addr for b in check_invariants()}
    before = stats()
    loader = ember.utils.data.DataLoader(_PooledDataset(), batch_size=4, num_workers=2)
    seen = []
    worker_hits = []
    for epoch in range(2):
        for xb, hits in loader:
            seen.append(xb[:, 0, 0].tolist())
            worker_hits += hits.tolist()
            # the parent keeps allocating while the workers run
            t = B.empty((2 * MB,), np.uint8)
            t.fill(9)
            del t
    assert sorted(v for b in seen for v in b) == sorted([2.0 * i + 1 for i in range(16)] * 2)
    assert max(worker_hits) > 0  # the workers reused blocks from their own (forked, emptied) pools
    del loader
    gc.collect()
    for i, a in enumerate(kept):
        assert (a == i + 1).all()
    after = stats()
    assert after["allocated_bytes.all.current"] == before["allocated_bytes.all.current"]
    assert {b.addr for b in check_invariants()} >= before_cached
    kept.clear()
    del a
    assert stats()["allocated_bytes.all.current"] == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_forked_child_frees_into_its_own_lists():
    a = B.empty((MB,), np.uint8)
    a.fill(5)
    b = B.empty((MB,), np.uint8)
    b.fill(6)
    held = A._lock.acquire()  # a lock held at fork (another thread mid-allocation) must not hang the child
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.close(r)
            ok = stats()["cached_bytes"] == 0  # new lock, empty cache
            del a  # inherited live block: back to the child's own lists
            c = B.empty((MB,), np.uint8)  # reuses it, in the child's memory only
            c.fill(99)
            ok = ok and stats()["num_alloc_from_cache"] == 1 and (b == 6).all()
            os.write(w, b"1" if ok else b"0")
            code = 0
        finally:
            os._exit(code)
    A._lock.release()
    assert held
    os.close(w)
    result = os.read(r, 1)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert status == 0 and result == b"1"
    assert (a == 5).all() and (b == 6).all()  # the child's reuse wrote its own copy
    del a
    c = B.empty((MB,), np.uint8)
    assert stats()["num_alloc_from_cache"] == 1
    assert not np.shares_memory(c, b)
    check_invariants()


def test_threshold_is_inclusive():
    """A buffer of exactly `threshold` bytes comes from the pool (the documented "at least"), one item less does not."""
    n = A.threshold // 4
    assert A.is_pooled(A.empty((n,), np.float32)) and A.is_pooled(A.zeros((n,), np.float32))
    assert not A.is_pooled(A.empty((n - 1,), np.float32))
