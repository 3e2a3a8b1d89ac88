"""The pytorch/examples fx programs that tests/test_fx.py does not cover, each written as a scenario of `lib`
(torch or ember) and run with both: module_tracer (a Tracer recording the module path each node comes from, on a
small ResNet18-style model), primitive_library (fx.wrap'd composites inlined with Proxies after tracing, and by a
create_node override while tracing), profiling_tracer (a Tracer patching record_function so profiler ranges become
nodes), proxy_based_graph_creation (a Graph built from Proxies), inline_function (a call_module node replaced by
the module's inlined trace) and vmap (batching rules run on Proxies into a new graph, nested three times). What
the programs print or compute must agree: node ops, names, targets, args and users in order, module paths, the
profiled range names, and the traced modules' values on the same seeded NumPy inputs. Adaptations: resnet18 is a
small model defined here; Proxies that meet in one call share a GraphAppendingTracer (torch 2.13 refuses a call on
Proxies of two tracers, as the proxy_based_graph_creation and vmap programs make them); vmap's node.shape comes
from a small Interpreter (ShapeProp now fills node.meta["tensor_meta"]); ShapeProp itself is checked apart."""
import importlib

import numpy as np
import pytest
import torch

import ember

from .test_fx import _check, _fx, _module, _np, _summary, _x


def _sigmoid_lowp(x):  # composite "primitives": kept whole by fx.wrap, inlined on demand
    return x.float().sigmoid().half()


def _add_lowp(a, b):
    a, b = a.float(), b.float()
    return (a + b).half()


def _lowp_forward(self, x, y):
    return _add_lowp(_sigmoid_lowp(x), _sigmoid_lowp(y))


def _range_exit(handle):  # profiling_tracer: the end of a range, one call_function node when traced
    handle.__exit__(None, None, None)


for _lib in (torch, ember):  # fx.wrap at module scope, as the examples do
    for _fn in (_sigmoid_lowp, _add_lowp, _range_exit):
        _fx(_lib).wrap(_fn)


def _resnet(lib, width=4):
    """ResNet18's module tree (conv1/bn1/relu/maxpool, layer1-4 of two BasicBlocks with a downsample where the
    stride is 2, avgpool/flatten/fc) at a few channels, with seeded weights and positive running variances."""
    nn = lib.nn

    def block_forward(self, x):
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    def block(cin, cout, stride):
        down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)) if stride > 1 else None
        return _module(lib, block_forward, conv1=nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                       bn1=nn.BatchNorm2d(cout), relu=nn.ReLU(inplace=True),
                       conv2=nn.Conv2d(cout, cout, 3, 1, 1, bias=False), bn2=nn.BatchNorm2d(cout), downsample=down)

    def forward(self, x):
        x = self.layer4(self.layer3(self.layer2(self.layer1(self.maxpool(self.relu(self.bn1(self.conv1(x))))))))
        return self.fc(lib.flatten(self.avgpool(x), 1))

    w = [width] * 2 + [2 * width] * 3
    layers = {f"layer{i}": nn.Sequential(block(w[i - 1], w[i], 1 + (i > 1)), block(w[i], w[i], 1)) for i in range(1, 5)}
    model = _module(lib, forward, conv1=nn.Conv2d(3, width, 7, 2, 3, bias=False), bn1=nn.BatchNorm2d(width),
                    relu=nn.ReLU(inplace=True), maxpool=nn.MaxPool2d(3, 2, 1), **layers,
                    avgpool=nn.AdaptiveAvgPool2d((1, 1)), fc=nn.Linear(2 * width, 5))
    rng = np.random.default_rng(0)
    with lib.no_grad():
        for name, t in sorted(list(model.named_parameters()) + list(model.named_buffers()), key=lambda kv: kv[0]):
            if t.dim():  # not num_batches_tracked
                v = rng.standard_normal(tuple(t.shape)).astype(np.float32)
                t.copy_(lib.from_numpy(np.abs(v) + 0.5 if name.endswith("running_var") else 0.5 * v))
    return model.eval()


def test_module_path_tracer():
    def scenario(lib):
        fx = _fx(lib)

        class ModulePathTracer(fx.Tracer):
            current, origin = "", {}

            def call_module(self, m, forward, args, kwargs):
                saved, self.current = self.current, self.path_of_module(m)
                try:
                    return super().call_module(m, forward, args, kwargs)
                finally:
                    self.current = saved

            def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None):
                proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr)
                self.origin[proxy.node] = self.current
                return proxy

        model, tracer = _resnet(lib), ModulePathTracer()
        graph = tracer.trace(model)
        graph.lint()
        rows = [(n.name, n.op, tracer.origin.get(n)) for n in graph.nodes]
        assert rows[-1] == ("output", "output", None) and ("add_7", "call_function", "layer4.1") in rows
        x = _x(lib, 2, 3, 32, 32)
        with lib.no_grad():
            out, ref = _np(fx.GraphModule(model, graph)(x)), _np(model(x))
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
        return rows, _summary(lib, graph), out

    _check(scenario)


def test_primitive_library_inlining():
    def scenario(lib):
        fx = _fx(lib)
        proxies = lambda a: fx.node.map_arg(a, fx.Proxy)  # noqa: E731
        traced = fx.symbolic_trace(_module(lib, _lowp_forward))
        wrapped = _summary(lib, traced.graph)
        assert [n.target for n in traced.graph.nodes if n.op == "call_function"] == [_sigmoid_lowp] * 2 + [_add_lowp]
        x, y = _x(lib, 3, 4, seed=11), _x(lib, 3, 4, seed=12)
        want = _np(traced(x, y))
        assert want.dtype == np.float16
        for n in traced.graph.nodes:  # inline the sigmoids after tracing
            if n.op == "call_function" and n.target is _sigmoid_lowp and n.target.__module__ == __name__:
                with n.graph.inserting_before(n):
                    n.replace_all_uses_with(n.target(*proxies(n.args), **proxies(n.kwargs)).node)
                    n.graph.erase_node(n)
        traced.graph.lint()
        traced.recompile()
        np.testing.assert_array_equal(_np(traced(x, y)), want)

        class InliningTracer(fx.Tracer):  # inline add while tracing
            def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
                if kind == "call_function" and target in [_add_lowp]:
                    return target(*proxies(args), **proxies(kwargs)).node
                return super().create_node(kind, target, args, kwargs, name, type_expr)

        f = _module(lib, _lowp_forward)
        graph = InliningTracer().trace(f)
        graph.lint()
        np.testing.assert_array_equal(_np(fx.GraphModule(f, graph)(x, y)), want)
        return wrapped, _summary(lib, traced.graph), _summary(lib, graph), want

    _check(scenario)


def _profiled_names(lib, fn, x):
    with lib.autograd.profiler.profile() as prof:
        fn(x)
    return [e.name for e in prof.function_events if e.name == "foo" or "relu" in e.name]


@pytest.mark.parametrize("ranges", ["ops", "own"])
def test_profiler_tracer(ranges):
    def scenario(lib):
        fx, rf = _fx(lib), lib.autograd.profiler.record_function
        if ranges == "ops":  # the example's range ops
            enter_fn, exit_fn = lib.ops.profiler._record_function_enter, lib.ops.profiler._record_function_exit
        else:  # ours: exit looks _range_exit up when called, so fx.wrap's patch applies while tracing
            def _range_enter(name):
                return lib.profiler.record_function(name).__enter__()
            enter_fn, exit_fn = _range_enter, (lambda handle: _range_exit(handle))

        def forward(self, x):
            with lib.profiler.record_function("foo"):
                return lib.relu(x)

        class ProfilerTracer(fx.Tracer):
            def trace(self, root, concrete_args=None):
                tracer, enter, exit_ = self, rf.__enter__, rf.__exit__

                def fake_enter(rec):
                    assert getattr(rec, "_fx_ctx", None) is None
                    rec._fx_ctx = tracer.create_proxy("call_function", enter_fn, (rec.name,), {})
                    return rec._fx_ctx

                def fake_exit(rec, exc_type, exc_value, traceback):
                    exit_fn(rec._fx_ctx)
                    rec._fx_ctx = None

                rf.__enter__, rf.__exit__ = fake_enter, fake_exit
                try:
                    return super().trace(root, concrete_args)
                finally:
                    rf.__enter__, rf.__exit__ = enter, exit_

        f, x = _module(lib, forward), _x(lib, 5, 3, 2)
        plain, pt = fx.symbolic_trace(f), ProfilerTracer()
        graph = pt.trace(f)
        graph.lint()
        ranged = fx.GraphModule(pt.root, graph)
        np.testing.assert_array_equal(_np(ranged(x)), _np(f(x)))
        profiles = [_profiled_names(lib, m, x) for m in (f, plain, ranged)]
        assert ["foo" in p for p in profiles] == [True, False, True]
        return _summary(lib, plain.graph), _summary(lib, graph), profiles, _np(ranged(x))

    _check(scenario)


def test_graph_built_from_proxies():
    def scenario(lib):
        fx = _fx(lib)
        graph = fx.Graph()
        tracer = fx.proxy.GraphAppendingTracer(graph)  # shared: see the next test
        y, z = fx.Proxy(graph.placeholder("x"), tracer), fx.Proxy(graph.placeholder("y"), tracer)
        graph.output(lib.neg(lib.tanh(lib.cat([y, z]))).node)
        graph.lint()
        a, b = _x(lib, 2, 3, seed=21), _x(lib, 1, 3, seed=22)
        out = _np(fx.GraphModule(lib.nn.Module(), graph)(a, b))
        np.testing.assert_allclose(out, -np.tanh(np.concatenate([_np(a), _np(b)])), rtol=1e-6)
        return _summary(lib, graph), out

    _check(scenario)


def test_a_call_on_proxies_of_two_tracers_is_refused():
    def scenario(lib):  # proxy_based_graph_creation as written: Proxy(node) makes a GraphAppendingTracer each
        fx = _fx(lib)
        graph = fx.Graph()
        y, z = fx.Proxy(graph.placeholder("x")), fx.Proxy(graph.placeholder("y"))
        with pytest.raises(RuntimeError, match="multiple different tracers"):
            lib.cat([y, z])
        return [n.name for n in graph.nodes]

    _check(scenario)


def test_inline_a_module_call():
    def scenario(lib):
        fx = _fx(lib)
        m = fx.symbolic_trace(_module(lib, lambda self, x: self.relu(x) + 1.0, relu=lib.nn.ReLU()))
        before = _summary(lib, m.graph)
        for node in m.graph.nodes:
            if (node.op, node.target) == ("call_module", "relu"):
                with m.graph.inserting_before(node):
                    out = m.relu(*fx.node.map_arg(node.args, fx.Proxy), **fx.node.map_arg(node.kwargs, fx.Proxy))
                    node.replace_all_uses_with(out.node)
                    m.graph.erase_node(node)
        m.graph.lint()
        m.recompile()
        x = _x(lib, 4, 3)
        np.testing.assert_allclose(_np(m(x)), np.maximum(_np(x), 0) + 1.0, rtol=1e-6)
        return before, _summary(lib, m.graph), _np(m(x))

    _check(scenario)


def _vmap(lib, model, in_axes, example_args):
    """The example's vmap: trace, annotate shapes, rebuild the graph node by node, batching rules on Proxies."""
    fx = _fx(lib)

    class Shapes(fx.Interpreter):  # node.shape, as the example's (older) ShapeProp set it
        def run_node(self, n):
            n.shape = (value := super().run_node(n)).shape
            return value

    def to_front(x, result_ndim=None):
        ndim, bdim = len(x.shape), x.bdim
        x = lib.unsqueeze(x, 0) if bdim is None else lib.movedim(x, bdim, 0)
        for _ in range(0 if result_ndim is None else result_ndim - ndim - (bdim is None)):
            x = lib.unsqueeze(x, 1)
        return x

    def mul_rule(a, b):
        ndim = max(len(a.shape), len(b.shape))
        return lib.mul(to_front(a, ndim), to_front(b, ndim)), 0

    rules = {lib.mul: mul_rule,
             lib.unsqueeze: lambda x, d: (lib.unsqueeze(to_front(x), d + 1 if d >= 0 else d), 0),
             lib.movedim: lambda x, s, d: (lib.movedim(to_front(x), s + 1, d + 1), 0)}

    def apply_rule(target, *args):
        tracer = fx.proxy.GraphAppendingTracer(new_graph)  # one for all the rule's Proxies

        def lift(n):
            p = fx.Proxy(n, tracer)
            p.shape, p.bdim = n.shape, n.bdim
            return p
        out, bdim = rules[target](*[lift(a) if isinstance(a, fx.Node) else a for a in args])
        out.node.bdim = bdim
        return out.node

    in_axes, traced = iter(in_axes), fx.symbolic_trace(model)
    Shapes(traced).run(*example_args)
    new_graph, env = fx.Graph(), {}
    for node in traced.graph.nodes:
        if node.op == "placeholder":
            new = new_graph.placeholder(node.name)
            new.bdim = next(in_axes)
        elif node.op == "output":
            new_graph.output(env[node.args[0].name])
            continue
        elif node.op == "call_function":
            args = fx.node.map_aggregate(node.args, lambda v: env[v.name] if isinstance(v, fx.Node) else v)
            if any(a.bdim is not None for a in args if isinstance(a, fx.Node)):
                new = apply_rule(node.target, *args)
            else:
                new = new_graph.node_copy(node, lambda v: env[v.name])
                new.bdim = None
        else:
            raise RuntimeError("Not yet implemented")
        new.shape = node.shape
        env[node.name] = new
    res = fx.GraphModule(traced, new_graph)
    res.graph.lint()
    return res


def test_vmap_by_batching_rules():
    def scenario(lib):
        x, y = _x(lib, 3, 5, seed=31), _x(lib, 2, seed=32)
        m1 = _vmap(lib, _module(lib, lambda self, a, b: lib.mul(a, b)), (None, 0), (x[0][0], y[0]))
        m2 = _vmap(lib, m1, (0, None), (x[0][0], y))
        m3 = _vmap(lib, m2, (0, None), (x[0], y))
        outs = [_np(m1(x[0][0], y)), _np(m2(x[0], y)), _np(m3(x, y))]
        assert [o.shape for o in outs] == [(2,), (5, 2), (3, 5, 2)]
        np.testing.assert_allclose(outs[2], _np(x)[:, :, None] * _np(y), rtol=1e-6)
        graphs = [m.graph for m in (m1, m2, m3)]
        return [_summary(lib, g) for g in graphs], [[getattr(n, "bdim", "-") for n in g.nodes] for g in graphs], outs

    _check(scenario)


def test_shape_prop_pass():
    def scenario(lib):
        gm = _fx(lib).symbolic_trace(_module(lib, lambda self, a, b: lib.mul(a, b).sum(0)))
        shape_prop = importlib.import_module(lib.__name__ + ".fx.passes.shape_prop")
        shape_prop.ShapeProp(gm).propagate(_x(lib, 3, 5), _x(lib, 5))
        return [(n.name, tuple(n.meta["tensor_meta"].shape), str(n.meta["tensor_meta"].dtype))
                for n in gm.graph.nodes if n.op != "output"]

    _check(scenario)
