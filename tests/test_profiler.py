"""ember.profiler against torch.profiler (2.13) on the same small MLP program: the ops the program calls and
the backward nodes the engine runs appear with torch's names and call counts; table layout, shapes,
schedule, record_function, chrome trace and the legacy autograd.profiler API."""
import json
from collections import Counter

import numpy as np
import pytest
import torch
import torch.profiler

import ember
import ember.autograd.profiler
import ember.profiler


def _program(lib, prof_mod):
    """A small MLP step in record_function spans "forward" and "backward"; returns the profiler and model."""
    rng = np.random.default_rng(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
    x = lib.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    with prof_mod.profile(activities=[prof_mod.ProfilerActivity.CPU], record_shapes=True) as prof:
        with prof_mod.record_function("forward"):
            loss = (model(x) - 1).pow(2).mean()
        with prof_mod.record_function("backward"):
            loss.backward()
    return prof, model


def _children(prof, span):
    """Names and counts of the calls directly inside a record_function span."""
    events = [e for e in prof.events() if e.name == span]
    assert len(events) == 1
    return Counter(c.name for c in events[0].cpu_children)


def _backward_nodes(prof):
    prefix = "autograd::engine::evaluate_function: "
    return Counter(e.name[len(prefix):] for e in prof.events() if e.name.startswith(prefix))


def _graph_nodes(loss):
    """Node names of a graph, each node once."""
    seen, stack, names = set(), [loss.grad_fn], Counter()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names[node.name()] += 1
        stack.extend(n for n, _ in node.next_functions)
    return names


def test_mlp_ops_and_backward_nodes_match_torch():
    tprof, tmodel = _program(torch, torch.profiler)
    eprof, emodel = _program(ember, ember.profiler)
    # the ops the program calls, with torch's names and counts
    assert _children(eprof, "forward") == _children(tprof, "forward")
    assert set(_children(eprof, "forward")) == {"aten::linear", "aten::relu", "aten::sub", "aten::pow", "aten::mean"}
    # every backward node ember's engine runs, named and counted as torch's engine does for the same node
    # (torch's graph also has TBackward0 nodes from the transposes inside its linear; ember's linear has none)
    t_nodes, e_nodes = _backward_nodes(tprof), _backward_nodes(eprof)
    assert e_nodes["torch::autograd::AccumulateGrad"] == 4
    for name, count in e_nodes.items():
        assert t_nodes[name] == count, name
    x = ember.ones(3, 4)
    loss = (emodel(x) - 1).pow(2).mean()
    expected = _graph_nodes(loss)
    expected["torch::autograd::AccumulateGrad"] = expected.pop("torch::autograd::AccumulateGrad", 0)
    assert {k: v for k, v in e_nodes.items()} == {k: v for k, v in expected.items() if v}
    # kernels reached inside an op are nested under it (aten::addmm inside aten::linear, as in torch)
    lin = [e for e in eprof.events() if e.name == "aten::linear" and e.cpu_parent.name == "forward"]
    assert all("aten::addmm" in {c.name for c in e.cpu_children} for e in lin)
    # self time never exceeds total, children fit inside their parent
    for e in eprof.events():
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-9
        for c in e.cpu_children:
            assert e.start_us <= c.start_us and c.end_us <= e.end_us + 1e-9


def test_table_layout_matches_torch():
    tprof, _ = _program(torch, torch.profiler)
    eprof, _ = _program(ember, ember.profiler)
    for kwargs in ({"sort_by": "self_cpu_time_total", "row_limit": 5}, {"sort_by": "cpu_time_total"}):
        t_lines = tprof.key_averages().table(**kwargs).splitlines()
        e_lines = eprof.key_averages().table(**kwargs).splitlines()
        assert e_lines[:3] == t_lines[:3]  # rules and header row, column for column
        assert e_lines[-1].startswith("Self CPU time total: ")
        if "row_limit" in kwargs:
            assert len(e_lines) == len(t_lines) == 5 + 5
    # sorted by self time, descending; counts add up
    avgs = eprof.key_averages()
    ordered = sorted(avgs, key=lambda a: a.self_cpu_time_total, reverse=True)
    table = avgs.table(sort_by="self_cpu_time_total")
    names = [line[:55].strip() for line in table.splitlines()[3:-2]]
    assert names == [a.key if len(a.key) < 52 else a.key[:52] + "..." for a in ordered]
    for key in ("cuda_time_total", "device_time_total", "cpu_time_total", "count"):
        assert len(eprof.key_averages().table(sort_by=key).splitlines()) == \
            len(tprof.key_averages().table(sort_by=key).splitlines()) - len(tprof.key_averages()) + len(avgs)
    by_shape = eprof.key_averages(group_by_input_shape=True)
    t_by_shape = tprof.key_averages(group_by_input_shape=True)
    assert "Input Shapes" in by_shape.table().splitlines()[1]
    assert {a.key for a in t_by_shape} >= {"aten::linear", "aten::relu"}

    def forward_shapes(prof):
        span = next(e for e in prof.events() if e.name == "forward")
        # tensor shapes only: torch lists every schema argument (defaults too), ember the ones passed
        return sorted((c.name, str([s for s in c.input_shapes if s])) for c in span.cpu_children)
    assert forward_shapes(eprof) == forward_shapes(tprof)


def test_schedule_step_and_trace_handler(tmp_path):
    seen = {"ember": [], "torch": []}
    for lib, prof_mod, key in ((ember, ember.profiler, "ember"), (torch, torch.profiler, "torch")):
        sched = prof_mod.schedule(wait=1, warmup=1, active=2, repeat=1)
        x = lib.ones(2, 2)

        def ready(p, key=key):
            seen[key].append(sum(1 for e in p.events() if e.name == "aten::add"))
        with prof_mod.profile(schedule=sched, on_trace_ready=ready) as p:
            for i in range(6):
                for _ in range(i + 1):
                    x = x + 1
                p.step()
    assert seen["ember"] == seen["torch"] == [3 + 4]
    assert [ember.profiler.schedule(wait=1, warmup=1, active=2, skip_first=1)(s) .name for s in range(7)] == \
        [torch.profiler.schedule(wait=1, warmup=1, active=2, skip_first=1)(s).name for s in range(7)]
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        ember.profiler.schedule(wait=0, warmup=0, active=0)
    # tensorboard_trace_handler writes the trace where TensorBoard looks
    with ember.profiler.profile(on_trace_ready=ember.profiler.tensorboard_trace_handler(str(tmp_path), "w")):
        ember.ones(2) * 2
    files = list(tmp_path.glob("w.*.pt.trace.json"))
    assert len(files) == 1
    assert any(e["name"] == "aten::mul" for e in json.loads(files[0].read_text())["traceEvents"])


def test_chrome_trace_and_record_function_decorator(tmp_path):
    @ember.profiler.record_function("my_block")
    def block(x):
        return (x * 2).sum()
    x = ember.ones(3)
    with ember.profiler.profile(record_shapes=True) as prof:
        block(x)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    names = [e["name"] for e in trace["traceEvents"]]
    assert names[:2] == ["my_block", "aten::mul"] and "aten::sum" in names
    for e in trace["traceEvents"]:
        assert e["ph"] == "X" and e["dur"] >= 0 and isinstance(e["ts"], float)
    mul = next(e for e in trace["traceEvents"] if e["name"] == "aten::mul")
    assert mul["args"]["Input Dims"] == [[3], []]
    block(ember.ones(3))  # outside a profiler: records nothing, runs normally
    with ember.profiler.profile(with_stack=True) as prof:
        block(x)
    mul = next(e for e in prof.events() if e.name == "aten::mul")
    assert mul.stack and "test_profiler.py" in mul.stack[0] and mul.stack[0].endswith("block")
    assert "Source Location" in prof.key_averages(group_by_stack_n=1).table().splitlines()[1]


def test_patches_removed_after_profiling():
    add, method, linear = ember.add, ember.Tensor.__add__, ember.nn.functional.linear
    from ember.autograd import engine
    call = engine._call
    with ember.profiler.profile():
        assert ember.add is not add
    assert ember.add is add and ember.Tensor.__add__ is method and ember.nn.functional.linear is linear
    assert engine._call is call


def test_legacy_autograd_profiler():
    x = ember.ones(2, 2, requires_grad=True)
    with ember.autograd.profiler.profile(use_cpu=True, record_shapes=True) as prof:
        (x * x).sum().backward()
    names = {e.key for e in prof.key_averages()}
    assert {"aten::mul", "aten::sum", "autograd::engine::evaluate_function: MulBackward0"} <= names
    assert "Self CPU time total" in prof.table()
    with ember.autograd.profiler.profile(use_cpu=False) as off:
        (x * x).sum()
    assert len(off.key_averages()) == 0
    with ember.autograd.profiler.emit_nvtx():
        (x * x).sum()
    with ember.autograd.profiler.record_function("outside"):
        pass


def test_profile_memory_counts_new_tensors_like_torch():
    usage = {}
    for lib, prof_mod in ((torch, torch.profiler), (ember, ember.profiler)):
        x, w = lib.ones(64, 32), lib.ones(16, 32)
        with prof_mod.profile(profile_memory=True) as p:
            x * 2
            x.t()
            lib.cat([x, x])
            lib.nn.functional.linear(x, w)
        avgs = {a.key: a for a in p.key_averages()}
        usage[lib] = {k: avgs[k].cpu_memory_usage for k in ("aten::mul", "aten::t", "aten::cat", "aten::linear")}
        assert "Self CPU Mem" in p.key_averages().table(sort_by="self_cpu_memory_usage").splitlines()[1]
    assert usage[ember] == usage[torch] == {"aten::mul": 8192, "aten::t": 0, "aten::cat": 16384, "aten::linear": 4096}


def _kernels_program(lib, prof_mod):
    """Ops whose aten names hold digits or are private kernels (stft's _fft_r2c, reflection_pad1d, ...)."""
    F = lib.nn.functional
    x = lib.tensor(np.random.default_rng(1).standard_normal((2, 1, 8, 8)).astype(np.float32), requires_grad=True)
    with prof_mod.profile(activities=[prof_mod.ProfilerActivity.CPU]) as prof:
        lib.stft(x.reshape(2, 64), 16, hop_length=4, window=lib.hann_window(16), return_complex=True).abs().sum()
        lib.fft.irfft(lib.fft.fft(x.reshape(2, 64).to(lib.complex64))).sum()
        F.max_pool2d(x, 2).sum() + F.avg_pool2d(x, 2).sum() + F.adaptive_max_pool2d(x, 3).sum()
        F.fold(F.unfold(x, 2), (8, 8), 2).sum()
    return {e.key for e in prof.key_averages()}


def test_kernel_names_with_digits_and_private_kernels_like_torch():
    expected = {"aten::stft", "aten::_fft_r2c", "aten::_fft_c2c", "aten::_fft_c2r", "aten::reflection_pad1d",
                "aten::max_pool2d_with_indices", "aten::avg_pool2d", "aten::adaptive_max_pool2d",
                "aten::im2col", "aten::col2im"}
    assert expected <= _kernels_program(torch, torch.profiler)
    assert expected <= _kernels_program(ember, ember.profiler)


def _special_program(lib, prof_mod):
    s = lib.special
    x = lib.tensor(np.random.default_rng(2).uniform(0.1, 1.0, (3, 4)).astype(np.float32), requires_grad=True)
    with prof_mod.profile(activities=[prof_mod.ProfilerActivity.CPU]) as prof:
        y = (s.entr(x).sum() + s.xlogy(x, x).sum() + s.erf(x).sum() + s.expit(x).sum() + s.i0(x).sum()
             + s.log_softmax(x, 1).sum() + s.logsumexp(x, 1).sum() + s.gammaln(x).sum() + s.xlog1py(x, x).sum()
             + (x - 1).sum())
        y.backward()
    return {e.key for e in prof.key_averages()}


def test_special_functions_and_private_rows_named_like_torch():
    """torch.special's functions record aten::special_<name> (around the aliased op's kernel); ember's private
    pointwise rows (`_add`, `_i1`, `_special_entr`) record the aten name torch gives that kernel."""
    t, e = _special_program(torch, torch.profiler), _special_program(ember, ember.profiler)
    assert {k for k in e if "special_" in k} == {k for k in t if "special_" in k}
    assert {"aten::special_entr", "aten::special_i1", "aten::special_xlog1py", "aten::xlogy", "aten::erf"} <= e
    assert not {k for k in e if k.startswith("aten::_")} - t


def _optimizer_program(lib, prof_mod):
    model = lib.nn.Linear(3, 2)
    adam, sgd = lib.optim.Adam(model.parameters()), lib.optim.SGD(model.parameters(), lr=0.1)
    with prof_mod.profile(activities=[prof_mod.ProfilerActivity.CPU]) as prof:
        for opt in (adam, sgd):
            opt.zero_grad()
            model(lib.ones(4, 3)).sum().backward()
            opt.step()
    spans = [e for e in prof.events() if e.name.startswith("Optimizer.")]
    return [e.name for e in spans], [sorted({c.name for c in e.cpu_children}) for e in spans]


def test_optimizer_step_and_zero_grad_spans_like_torch():
    """torch's optimizers record Optimizer.step#Adam.step / Optimizer.zero_grad#Adam.zero_grad spans around
    their work (the step's parameter updates nested inside)."""
    names, children = _optimizer_program(ember, ember.profiler)
    assert names == _optimizer_program(torch, torch.profiler)[0]
    assert names == ["Optimizer.zero_grad#Adam.zero_grad", "Optimizer.step#Adam.step",
                     "Optimizer.zero_grad#SGD.zero_grad", "Optimizer.step#SGD.step"]
    assert children[1] and children[3]  # the updates' ops are inside the step spans


def test_autograd_profile_keywords_and_defaults_match_torch():
    """torch.autograd.profiler.profile's keywords and their defaults (defaults are part of the API)."""
    import inspect
    t = inspect.signature(torch.autograd.profiler.profile.__init__).parameters
    e = inspect.signature(ember.autograd.profiler.profile.__init__).parameters
    common = [k for k in t if k in e]
    assert [k for k in e if k in t] == common and len(common) >= len(e) - 1, (list(e), list(t))
    assert {k: (e[k].kind, e[k].default) for k in common} == {k: (t[k].kind, t[k].default) for k in common}
