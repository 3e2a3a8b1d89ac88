"""ember.multiprocessing against torch.multiprocessing: shared tensors across processes.

A tensor sent through a queue or pipe is moved to shared memory and the receiver maps the same
memory, so in-place changes on either side are seen by the other; spawn()/start_processes() run
fn(i, *args) and report a failed child the way torch does.
"""
import multiprocessing
import os
from multiprocessing.reduction import ForkingPickler
import re
import subprocess
import sys

import pytest
import torch
import torch.multiprocessing as tmp

import ember
import ember.multiprocessing as emp
from ember import _shared_memory as shm

from ._mp_helpers import add_in_child, echo_slice, fail_in_child, fill_slot

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


def test_reexports_multiprocessing_and_torch_names():
    missing = set(tmp.__all__) - set(emp.__all__) - {"ENV_VAR_PARALLEL_START"}
    assert missing == set()
    for name in multiprocessing.__all__:
        assert getattr(emp, name) is getattr(multiprocessing, name)
    assert emp.get_sharing_strategy() == "file_descriptor" == tmp.get_sharing_strategy()
    assert emp.get_all_sharing_strategies() == {"file_descriptor"}
    emp.set_sharing_strategy("file_descriptor")
    with pytest.raises(AssertionError):
        emp.set_sharing_strategy("no-such-strategy")
    with pytest.raises(AssertionError, match="file_system"):
        emp.set_sharing_strategy("file_system")  # not implemented in ember


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16", "complex64", "float16"])
def test_share_memory_in_place_keeps_values_and_geometry(dtype):
    for lib in (torch, ember):
        t = lib.arange(12).reshape(3, 4).to(getattr(lib, dtype)).t()  # a transposed view
        assert not t.is_shared()
        values, stride, offset = t.tolist(), t.stride(), t.storage_offset()
        assert t.share_memory_() is t
        assert t.is_shared() and t._base.is_shared()
        assert (t.tolist(), t.stride(), t.storage_offset()) == (values, stride, offset)
        t._base.view(-1)[0] = 1  # the view and its base still share one storage
        assert t[0, 0].item() == 1
        assert t.share_memory_() is t  # a second call changes nothing


def test_share_memory_of_empty_and_zero_dim_tensors():
    for shape in ((0,), (), (2, 0, 3)):
        e, t = ember.zeros(shape), torch.zeros(shape)
        assert e.share_memory_().is_shared() and t.share_memory_().is_shared()
        assert e.shape == t.shape


def test_module_share_memory_keeps_parameter_identity():
    torch_model, model = torch.nn.BatchNorm1d(3), ember.nn.BatchNorm1d(3)
    params = list(model.parameters())
    optimizer = ember.optim.SGD(params, lr=0.1)
    assert model.share_memory() is model and torch_model.share_memory() is torch_model
    for m in (torch_model, model):
        assert all(t.is_shared() for t in list(m.parameters()) + list(m.buffers()))
    assert list(model.parameters()) == params and optimizer.param_groups[0]["params"] == params


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_tensor_on_queue_modified_in_child_is_seen_in_parent(method):
    ctx = emp.get_context(method)
    inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    t = ember.arange(6.0)
    p = ember.nn.Parameter(ember.ones(2))
    child = ctx.Process(target=add_in_child, args=(inbox, outbox, done), daemon=True)
    child.start()
    inbox.put(t)
    inbox.put(p)
    try:
        info = outbox.get(timeout=60)
    finally:
        done.set()
        child.join(60)
    assert t.is_shared() and p.is_shared()  # moved when sent, as torch does
    assert child.exitcode == 0
    assert info == ("Parameter", True, True)
    assert t.tolist() == [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]
    assert p.tolist() == [2.0, 2.0]


def test_tensor_sent_back_aliases_the_original():
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    child = ctx.Process(target=echo_slice, args=(there,), daemon=True)
    child.start()
    t = ember.arange(5.0)
    here.send(t)  # through a plain multiprocessing Pipe: the reducers are registered globally
    back = here.recv()
    here.send(None)
    child.join(30)
    assert back.data_ptr() == t.data_ptr() + 2 * 4 and back.storage_offset() == 2
    back.fill_(-1)
    assert t.tolist() == [0.0, 1.0, -1.0, -1.0, -1.0]


def test_non_leaf_requiring_grad_is_refused_like_torch():
    for lib in (torch, ember):
        x = lib.ones(3, requires_grad=True) * 2
        here, there = multiprocessing.Pipe()
        with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
            here.send(x)
        here.close()
        there.close()


def test_received_segments_free_their_descriptors():
    """Counted in a fresh interpreter: the descriptors are process-wide, and objects other tests left in a
    worker (loaders, pipes, segments closed by the cycle collector) would move the count."""
    code = "from tests._mp_helpers import count_received_segment_descriptors as f; f(); print('ok')"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


def test_parameter_survives_forking_pickler_round_trip():
    p = ember.nn.Parameter(ember.randn(3, 2))
    p.note = "kept"
    q = ForkingPickler.loads(ForkingPickler.dumps(p))
    assert type(q) is ember.nn.Parameter and q.requires_grad and not hasattr(q, "note")  # torch drops attributes
    assert q.data_ptr() == p.data_ptr() and shm.segment_of(q._data) is shm.segment_of(p._data)


def _square(t):
    return (t * t).sum().item()


def test_pool_map_passes_tensors():
    with multiprocessing.get_context("fork").Pool(2) as pool:
        assert pool.map(_square, [ember.full((3,), float(i)) for i in range(4)]) == [0.0, 3.0, 12.0, 27.0]


def test_spawn_runs_fn_with_its_index_and_warns_like_torch_on_other_methods():
    t = ember.zeros(2).share_memory_()
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        assert emp.spawn(fill_slot, args=(t, 10.0), nprocs=2, start_method="fork") is None  # runs with spawn
    assert t.tolist() == [10.0, 11.0]


def test_start_processes_join_false_returns_a_context():
    t = ember.zeros(2).share_memory_()
    context = emp.start_processes(fill_slot, args=(t, 5.0), nprocs=2, join=False, start_method="fork")
    assert isinstance(context, emp.ProcessContext) and len(context.pids()) == 2
    while not context.join(timeout=30):
        pass
    assert t.tolist() == [5.0, 6.0]


@pytest.mark.parametrize("mode, exc, message", [
    ("raise", emp.ProcessRaisedException, r"-- Process 1 terminated with the following error:\nTraceback"),
    ("signal", emp.ProcessExitedException, r"^process 1 terminated with signal SIGKILL$"),
    ("exit", emp.ProcessExitedException, r"^process 1 terminated with exit code 3$"),
])
def test_failed_child_raises_like_torch(mode, exc, message):
    with pytest.raises(exc, match=message) as info:
        emp.start_processes(fail_in_child, args=(mode,), nprocs=2, start_method="fork")
    assert info.value.error_index == 1 and info.value.error_pid > 0
    if mode == "raise":
        assert "ValueError: child 1 failed" in str(info.value)
    if mode == "signal":
        assert info.value.signal_name == "SIGKILL" and info.value.exit_code == -9


def test_hogwild_example_trains_the_shared_model():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "hogwild.py"), "--epochs", "2",
                          "--num-processes", "2"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    before = float(re.search(r"accuracy before: ([0-9.]+)", out.stdout).group(1))
    after = float(re.search(r"accuracy after:  ([0-9.]+)", out.stdout).group(1))
    assert before < 0.3 and after > 0.8, out.stdout


def _t_square(t):
    return (t * t).sum().item()


def test_forking_pickler_and_pool_map_as_in_torch():
    """test_parameter_survives_forking_pickler_round_trip and test_pool_map_passes_tensors on torch too: the
    parameter comes back a shared Parameter with its attributes and memory, and a Pool maps over tensors alike."""
    def story(lib, pickler):  # torch.multiprocessing registers its reductions on multiprocessing's ForkingPickler
        lib.manual_seed(0)
        p = lib.nn.Parameter(lib.randn(3, 2))
        p.note = "kept"
        q = pickler.loads(pickler.dumps(p))
        t = lib.ones(2)
        t.note = "dropped too"
        u = pickler.loads(pickler.dumps(t))
        return [type(q).__name__, q.requires_grad, hasattr(q, "note"), q.data_ptr() == p.data_ptr(), q.tolist(),
                p.is_shared(), hasattr(u, "note"), u.is_shared()]
    assert story(ember, ForkingPickler) == story(torch, ForkingPickler)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        ours = pool.map(_square, [ember.full((3,), float(i)) for i in range(4)])
        theirs = pool.map(_t_square, [torch.full((3,), float(i)) for i in range(4)])
    assert ours == theirs
