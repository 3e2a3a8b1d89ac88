"""ember.fx against torch.fx: each scenario is written once as a function of `lib` (torch or ember), run with both,
and what is comparable must agree: the graph's node ops, names (torch's naming: a module's qualified path in
snake_case with dots as underscores, `_1`, `_2` for repeats, builtins such as `sum`/`input`/`getattr` never
shadowed), targets (strings for modules/attributes/methods, the function's `__name__` for call_function), the args
as names (`fx.node.map_arg`), users, the numeric results of the traced/rewritten GraphModules on the same seeded
NumPy inputs, and the types of the tracing errors. Scenarios follow the pytorch/examples fx programs (invert,
replace_op, custom_tracer, wrap_output_dynamically) plus symbolic_trace of modules and functions, Graph editing,
GraphModule construction, Interpreter/Transformer subclasses, fx.wrap and dead-code elimination. `.code` is only
checked to be Python source of `forward` (ember prints `ember.relu` where torch prints `torch.relu`)."""
import importlib
import operator

import numpy as np
import pytest
import torch

import ember


def _fx(lib):
    return importlib.import_module(lib.__name__ + ".fx")


def _wrapped_helper(x, y):
    # len() on a Proxy raises while tracing, so this only traces when fx.wrap keeps it as one call_function node
    return x * len(x) + y


for _lib in (torch, ember):  # fx.wrap must be called at module level, in the module that defines the function
    try:
        _fx(_lib).wrap("_wrapped_helper")
    except (ImportError, AttributeError):  # ember.fx not there (yet): its tests fail, torch's still run
        pass


def _np(v):
    """Tensors (nested in tuples/lists/dicts) to NumPy arrays, to compare across libraries."""
    if isinstance(v, (tuple, list)):
        return type(v)(_np(e) for e in v)
    if isinstance(v, dict):
        return {k: _np(e) for k, e in v.items()}
    return v.detach().numpy() if hasattr(v, "detach") else v


def _assert_same(got, want, path="result"):
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and (got.shape, got.dtype) == (want.shape, want.dtype), path
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=path)  # float32, two libraries
    elif isinstance(want, (tuple, list, dict)):  # by kind: torch's args are immutable_list/immutable_dict
        kind = lambda v: [k for k in (tuple, list, dict) if isinstance(v, k)]  # noqa: E731
        assert kind(got) == kind(want) and len(got) == len(want), f"{path}: {got!r} vs {want!r}"
        keys = list(want) if isinstance(want, dict) else range(len(want))
        assert not isinstance(want, dict) or list(got) == keys, f"{path}: {got!r} vs {want!r}"
        for k in keys:
            _assert_same(got[k], want[k], f"{path}[{k!r}]")
    else:
        assert got == want, f"{path}: {got!r} vs {want!r}"


def _check(scenario):
    want = scenario(torch)  # torch first: the oracle's own checks inside the scenario must hold
    _assert_same(scenario(ember), want)


def _target(t):
    return t if isinstance(t, str) else getattr(t, "__name__", str(t))


def _summary(lib, graph):
    """One comparable row per node. For nn.functional calls only the input nodes are compared, not args/kwargs:
    torch re-passes them through __torch_function__ (F.max_pool2d(y, 2) gets stride=None, padding=0, ...;
    F.leaky_relu(x, 0.01, False) becomes args (x,), kwargs {negative_slope, inplace}), not an fx promise."""
    name, map_arg, F = (lambda a: a.name), _fx(lib).node.map_arg, lib.nn.functional
    functional = lambda n: n.op == "call_function" and getattr(F, _target(n.target), None) is n.target  # noqa: E731
    return [(n.op, n.name, _target(n.target),
             [a.name for a in n.all_input_nodes] if functional(n) else map_arg(n.args, name),
             None if functional(n) else map_arg(n.kwargs, name), [u.name for u in n.users]) for n in graph.nodes]


def _init(lib, module, seed=0):
    """Same parameters and buffers in both libraries: seeded NumPy values in sorted-name order."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for _, t in sorted(list(module.named_parameters()) + list(module.named_buffers()), key=lambda kv: kv[0]):
            t.copy_(lib.from_numpy(0.5 * rng.standard_normal(tuple(t.shape)).astype(np.float32)))
    return module


def _x(lib, *shape, seed=1):
    return lib.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _code_ok(gm):
    assert isinstance(gm.code, str) and "def forward" in gm.code


def _module(lib, forward, **attrs):
    """A `lib.nn.Module` whose forward is `forward`, with `attrs` (submodules, parameters) set on it."""
    m = type("M", (lib.nn.Module,), {"forward": forward})()
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


def test_mlp_symbolic_trace():
    def scenario(lib):
        fx, nn = _fx(lib), lib.nn
        m = _init(lib, _module(lib, lambda self, x: self.fc2(self.act(self.fc1(x))),
                               fc1=nn.Linear(4, 8), act=nn.ReLU(), fc2=nn.Linear(8, 3)))
        gm = fx.symbolic_trace(m)
        assert isinstance(gm, fx.GraphModule) and isinstance(gm, nn.Module) and isinstance(gm.graph, fx.Graph)
        gm.graph.lint()
        _code_ok(gm)
        x = _x(lib, 5, 4)
        np.testing.assert_allclose(_np(gm(x)), _np(m(x)), rtol=1e-6, atol=1e-6)
        assert all(n.name in str(gm.graph) for n in gm.graph.nodes if n.op != "output")
        return _summary(lib, gm.graph), sorted(gm.state_dict()), _np(gm(x))

    _check(scenario)


def test_convnet_operators_and_structured_output():
    def scenario(lib):
        nn, F = lib.nn, lib.nn.functional

        def forward(self, x):
            y = F.max_pool2d(self.features(x), 2)
            a, b = y.view(y.size(0), -1), lib.flatten(y, 1)
            h = self.sub["a"](F.relu(self.head(a + b * 2.0 - b)) @ self.w)
            c = h[:, 0]
            return (h, c), {"s": h.sum(), "r": F.relu(c)}

        block = _module(lib, lambda self, x: F.relu(self.conv(x)), conv=nn.Conv2d(2, 3, 3, padding=1))
        m = _init(lib, _module(lib, forward, features=nn.Sequential(block, nn.Conv2d(3, 3, 3, padding=1)),
                               head=nn.Linear(3 * 4 * 4, 5), w=nn.Parameter(lib.ones(5, 5)),
                               sub=nn.ModuleDict({"a": nn.Linear(5, 5)})))
        gm = _fx(lib).symbolic_trace(m)
        gm.graph.lint()
        _code_ok(gm)
        x = _x(lib, 2, 2, 8, 8)
        _assert_same(_np(gm(x)), _np(m(x)))
        return _summary(lib, gm.graph), sorted(gm.state_dict()), _np(gm(x))

    _check(scenario)


def test_parameters_and_buffers_become_get_attr():
    def scenario(lib):
        nn = lib.nn
        inner = _module(lib, lambda self, x: x + self.bias * self.running, bias=nn.Parameter(lib.zeros(3)))
        inner.register_buffer("running", lib.ones(3))
        # self.scale is used twice but gives one get_attr node; `unused` is not copied into the GraphModule
        m = _init(lib, _module(lib, lambda self, x: self.inner(x * self.scale + self.scale),
                               scale=nn.Parameter(lib.ones(3)), inner=inner, unused=nn.Linear(3, 3)))
        gm = _fx(lib).symbolic_trace(m)
        gm.graph.lint()
        x = _x(lib, 4, 3)
        np.testing.assert_allclose(_np(gm(x)), _np(m(x)), rtol=1e-6)
        return (_summary(lib, gm.graph), sorted(gm.state_dict()), gm.scale is m.scale, hasattr(gm, "unused"),
                sorted(k for k, _ in gm.named_modules()), _np(gm(x)))

    _check(scenario)


def test_naming_rules():
    def scenario(lib):
        nn = lib.nn

        def forward(self, input):  # `input` is a builtin: the placeholder is named input_1, its target stays input
            e = self.ALLCaps(self.layer_2(self.myLayer(self.myLayer(input))))
            s = e.sum() + e.sum(1).max()
            return e.__add__(s).float().type_as(e) * e.shape[0]

        m = _init(lib, _module(lib, forward, myLayer=nn.Linear(3, 3), layer_2=nn.Linear(3, 3), ALLCaps=nn.Tanh()))
        gm = _fx(lib).symbolic_trace(m)
        x = _x(lib, 4, 3)
        np.testing.assert_allclose(_np(gm(x)), _np(m(x)), rtol=1e-5)
        return _summary(lib, gm.graph), _np(gm(x))

    _check(scenario)


def test_trace_function_and_invert():
    def scenario(lib):
        fx = _fx(lib)
        inverse = {lib.exp: lib.log, lib.log: lib.exp, lib.tan: lib.arctan, lib.arctan: lib.tan}

        def f(x):
            return lib.exp(lib.tan(x))

        traced = fx.symbolic_trace(f)
        _code_ok(traced)
        assert "exp" in traced.code and "tan" in traced.code
        new_graph, env = fx.Graph(), {}
        for node in reversed(traced.graph.nodes):
            if node.op == "call_function":
                env[node.args[0].name] = new_graph.call_function(inverse[node.target], (env[node.name],))
            elif node.op == "output":
                env[node.args[0].name] = new_graph.placeholder(node.name)
            elif node.op == "placeholder":
                new_graph.output(env[node.name])
        new_graph.lint()
        inv = fx.GraphModule(traced, new_graph)
        _code_ok(inv)
        y = lib.arange(1, 6, dtype=lib.float32) / 10
        np.testing.assert_allclose(_np(f(inv(y))), _np(y), rtol=1e-5)
        return _summary(lib, traced.graph), _summary(lib, new_graph), _np(inv(y))

    _check(scenario)


def test_replace_op():
    def scenario(lib):
        traced = _fx(lib).symbolic_trace(_module(lib, lambda self, x, y: (x + y, lib.add(x, y), x.add(y))))
        before = _summary(lib, traced.graph)
        for n in list(traced.graph.nodes):
            if any(n.target == p for p in (operator.add, lib.add, "add")):
                with traced.graph.inserting_after(n):
                    new_node = traced.graph.call_function(lib.bitwise_and, n.args, n.kwargs)
                    replaced = n.replace_all_uses_with(new_node)
                    assert [u.op for u in replaced] == ["output"]
                traced.graph.erase_node(n)
        traced.graph.lint()
        traced.recompile()
        rng = np.random.default_rng(3)
        x, y = (lib.from_numpy(rng.integers(0, 64, (4,))) for _ in range(2))
        out = traced(x, y)
        for o in out:
            np.testing.assert_array_equal(_np(o), _np(x) & _np(y))
        return before, _summary(lib, traced.graph), _np(out)

    _check(scenario)


def test_custom_tracers():
    def scenario(lib):
        fx, nn = _fx(lib), lib.nn

        class LowerReluTracer(fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return False if isinstance(m, nn.ReLU) else super().is_leaf_module(m, qualname)

        class TaggingTracer(fx.Tracer):
            def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
                n = super().create_node(kind, target, args, kwargs, name)
                n.tag = "foo"
                return n

        def m1():
            return _module(lib, lambda self, x: self.relu(x), relu=nn.ReLU())

        default = fx.symbolic_trace(m1())
        lowered = LowerReluTracer().trace(m1())
        assert isinstance(lowered, fx.Graph)
        lowered.lint()
        relu = [n for n in lowered.nodes if n.op == "call_function"]
        assert len(relu) == 1 and relu[0].kwargs == {"inplace": False}
        tagged = TaggingTracer().trace(_module(lib, lambda self, a, b: a + b))
        assert all(getattr(n, "tag", None) == "foo" for n in tagged.nodes)
        x = _x(lib, 3, 4)
        gm = fx.GraphModule(m1(), lowered)
        np.testing.assert_allclose(_np(gm(x)), np.maximum(_np(x), 0))
        return (_summary(lib, default.graph), _summary(lib, lowered), dict(relu[0].kwargs),
                _summary(lib, tagged), _np(gm(x)))

    _check(scenario)


def _small(lib):
    return _init(lib, _module(lib, lambda self, x: lib.relu(self.fc(x)) * 2, fc=lib.nn.Linear(4, 4)))


def test_interpreter_subclass():
    def scenario(lib):
        fx, m = _fx(lib), _small(lib)
        gm = fx.symbolic_trace(m)

        class Swap(fx.Interpreter):
            def call_function(self, target, args, kwargs):
                if target is lib.relu:
                    target = lib.sigmoid
                return super().call_function(target, args, kwargs)

            def call_module(self, target, args, kwargs):
                self.modules_called.append(target)
                return super().call_module(target, args, kwargs)

            def run_node(self, n):
                self.seen.append((n.op, n.name))
                return super().run_node(n)

        x = _x(lib, 3, 4)
        plain = fx.Interpreter(gm).run(x)
        np.testing.assert_allclose(_np(plain), _np(m(x)), rtol=1e-6)
        interp = Swap(gm)
        interp.modules_called, interp.seen = [], []
        swapped = interp.run(x)
        np.testing.assert_allclose(_np(swapped), _np(lib.sigmoid(m.fc(x)) * 2), rtol=1e-6)
        return _np(plain), _np(swapped), interp.modules_called, interp.seen

    _check(scenario)


def test_transformer_relu_to_gelu():
    def scenario(lib):
        fx, m, F = _fx(lib), _small(lib), lib.nn.functional
        gm = fx.symbolic_trace(m)

        class ReluToGelu(fx.Transformer):
            def call_function(self, target, args, kwargs):
                return super().call_function(F.gelu if target is lib.relu else target, args, kwargs)

        new = ReluToGelu(gm).transform()
        assert isinstance(new, fx.GraphModule)
        new.graph.lint()
        _code_ok(new)
        x = _x(lib, 3, 4)
        np.testing.assert_allclose(_np(new(x)), _np(F.gelu(m.fc(x)) * 2), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_np(gm(x)), _np(m(x)), rtol=1e-6)  # the original is untouched
        return _summary(lib, new.graph), sorted(new.state_dict()), _np(new(x))

    _check(scenario)


def test_wrap_output_dynamically_with_proxy():
    def scenario(lib):
        fx = _fx(lib)
        traced = fx.symbolic_trace(_module(lib, lambda self, x, y: lib.cat([x, y])))
        output_node = next(n for n in reversed(traced.graph.nodes) if n.op == "output")
        assert len(output_node.all_input_nodes) == 1
        wrap_node = output_node.all_input_nodes[0]
        act = fx.symbolic_trace(lib.nn.LeakyReLU())
        act_summary = _summary(lib, act.graph)
        # the example inserts *before* wrap_node, which uses cat before it is defined; after is the working form
        with traced.graph.inserting_after(wrap_node):
            result = act(fx.Proxy(wrap_node))
            assert isinstance(result, fx.Proxy)
            output_node.args = (result.node,)
        traced.graph.lint()
        traced.recompile()
        x, y = _x(lib, 2, 3, seed=4), _x(lib, 2, 3, seed=5)
        want = np.concatenate([_np(x), _np(y)])
        np.testing.assert_allclose(_np(traced(x, y)), np.where(want > 0, want, 0.01 * want), rtol=1e-6)
        return act_summary, _summary(lib, traced.graph), _np(traced(x, y))

    _check(scenario)


def test_wrap_keeps_function_as_one_node():
    def scenario(lib):
        def f(x, y):
            return lib.relu(_wrapped_helper(x, y))

        gm = _fx(lib).symbolic_trace(f)
        gm.graph.lint()
        assert "relu" in gm.code
        x, y = _x(lib, 3, 2), _x(lib, 3, 2, seed=2)
        np.testing.assert_allclose(_np(gm(x, y)), _np(f(x, y)), rtol=1e-6)
        return _summary(lib, gm.graph), _np(gm(x, y))

    _check(scenario)


def test_tracing_errors():
    def scenario(lib):
        fx = _fx(lib)
        assert issubclass(fx.proxy.TraceError, ValueError)

        def control_flow(x):
            return x if x.sum() > 0 else -x

        def iterate(x):
            return [r for r in x]

        def length(x):
            return x * len(x)

        kinds = []
        for f in (control_flow, iterate, length):
            with pytest.raises(Exception) as info:
                fx.symbolic_trace(f)
            kinds.append((type(info.value).__name__, isinstance(info.value, fx.proxy.TraceError)))
        return kinds

    _check(scenario)


def test_unpacking_a_proxy_with_known_length():
    def scenario(lib):
        def f(x):
            a, b = x.chunk(2, 1)  # unpacking a proxy is allowed: torch reads the length off the caller's bytecode
            return a - b

        gm = _fx(lib).symbolic_trace(f)
        x = _x(lib, 3, 4)
        np.testing.assert_allclose(_np(gm(x)), _np(f(x)))
        return _summary(lib, gm.graph), _np(gm(x))

    _check(scenario)


def test_eliminate_dead_code():
    def scenario(lib):
        def f(x):
            unused = x + 1  # noqa: F841
            return lib.relu(x) * 2

        gm = _fx(lib).symbolic_trace(f)
        before = _summary(lib, gm.graph)
        changed = gm.graph.eliminate_dead_code()
        again = gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
        x = _x(lib, 5)
        return before, changed, again, _summary(lib, gm.graph), _np(gm(x))

    _check(scenario)


def test_graph_building_and_editing():
    def scenario(lib):
        fx = _fx(lib)
        g = fx.Graph()
        x = g.placeholder("x")
        w = g.get_attr("w")
        lin = g.call_module("lin", (x,))
        mm = g.call_function(operator.matmul, (lin, w))
        t = g.call_method("tanh", (mm,))
        s = g.create_node("call_function", operator.add, (t, x), name="total")
        g.output(s)
        g.lint()
        nodes = list(g.nodes)
        assert [n.op for n in reversed(g.nodes)] == [n.op for n in nodes][::-1]
        links = [(n.prev.op, n.next.op) for n in nodes]
        text = str(g)
        assert all(n.name in text for n in nodes[:-1]) and "return total" in text
        root = {"lin": _init(lib, lib.nn.Linear(3, 3)), "w": lib.nn.Parameter(_x(lib, 3, 3, seed=9))}
        gm = fx.GraphModule(root, g)
        _code_ok(gm)
        xv = _x(lib, 2, 3)
        first = _np(gm(xv))
        np.testing.assert_allclose(first, _np(lib.tanh(root["lin"](xv) @ root["w"]) + xv), rtol=1e-6)
        # insert a relu between tanh and its user, then drop the tanh
        with g.inserting_before(s):
            r = g.call_function(lib.relu, (mm,))
        t.replace_all_uses_with(r)
        errors = []
        try:
            g.erase_node(mm)  # still used
        except Exception as e:
            errors.append(type(e).__name__)
        g.erase_node(t)
        g.lint()
        gm.recompile()
        np.testing.assert_allclose(_np(gm(xv)), _np(lib.relu(root["lin"](xv) @ root["w"]) + xv), rtol=1e-6)
        return (_summary(lib, g), gm.graph is g, [n.name for n in nodes], links, errors, first, _np(gm(xv)),
                [n.name for n in s.all_input_nodes], sorted(gm.state_dict()))

    _check(scenario)


def test_replace_pattern_as_in_the_subgraph_rewriter_example():
    """pytorch/examples fx/subgraph_rewriter_basic_use.py: both neg-cat-sum chains become one stack each, placed
    just before the value's first use; a chain whose inner value is read elsewhere is left alone."""
    def scenario(lib):
        fx = _fx(lib)

        def forward(self, x, w1, w2):
            m1 = lib.cat([lib.neg(w1), w2]).sum()
            m2 = lib.cat([lib.neg(w1), w2]).sum()
            kept = lib.neg(w2)
            m3 = lib.cat([kept, w1]).sum()  # kept is also returned: not replaced
            return x + lib.max(m1) + lib.max(m2) + m3, kept

        def pattern(a1, a2):
            return lib.cat([lib.neg(a1), a2]).sum()

        def replacement(w1, w2):
            return lib.stack([w1, w2])
        traced = fx.symbolic_trace(_module(lib, forward))
        matches = fx.replace_pattern(traced, pattern, replacement)
        traced.graph.lint()
        x, w1, w2 = (lib.tensor(v) for v in ([1.0, 2.0], [1.0, 2.0], [3.0, 4.0]))
        return len(matches), _summary(lib, traced.graph), _np(traced(x, w1, w2))

    _check(scenario)


def test_save_load_and_deepcopy_keep_the_graph_and_values():
    """A GraphModule saved with lib.save (pickled) and loaded, or deep-copied, has the same nodes, state_dict
    keys, class name and outputs (ember's function targets travel by name)."""
    import copy
    import io

    def scenario(lib):
        nn, F = lib.nn, lib.nn.functional

        def forward(self, x):
            return F.gelu(self.seq(x) * self.scale + lib.exp(x).sum(1, keepdim=True))[:, 0]
        m = _init(lib, _module(lib, forward, seq=nn.Sequential(nn.Linear(3, 2), nn.ReLU()),
                               scale=nn.Parameter(lib.ones(2))))
        gm = _fx(lib).symbolic_trace(m)
        buf = io.BytesIO()
        lib.save(gm, buf)
        buf.seek(0)
        loaded = lib.load(buf, weights_only=False)
        copied = copy.deepcopy(gm)
        x = lib.from_numpy(np.random.default_rng(4).standard_normal((2, 3)).astype(np.float32))
        outs = [_np(g(x)) for g in (gm, loaded, copied)]
        np.testing.assert_array_equal(outs[0], outs[1])
        np.testing.assert_array_equal(outs[0], outs[2])
        return (_summary(lib, loaded.graph), _summary(lib, copied.graph), list(loaded.state_dict()),
                type(loaded).__name__, outs[0])

    _check(scenario)


def test_concrete_args_specialize_with_torchs_checks():
    def scenario(lib):
        def f(x, flag, mode=None, k=3):
            if flag:
                x = x * 2
            if mode is None:
                x = x + k
            return x
        g = _fx(lib).symbolic_trace(f, concrete_args={"flag": True, "mode": None, "k": 3})
        x = lib.ones(2)
        errors = []
        for bad in ((x, False, None, 3), (x, True, "other", 3), (x, True, None, 4)):
            with pytest.raises(AssertionError) as info:
                g(*bad)
            errors.append(str(info.value))
        return _summary(lib, g.graph), _np(g(x, True, None, 3)), errors

    _check(scenario)


def test_star_args_keyword_only_and_star_kwargs_become_placeholders_as_in_torch():
    def scenario(lib):
        fx = _fx(lib)

        class M(lib.nn.Module):
            def forward(self, x, *args):
                return x + args[0] * args[1]

        def h(x, *args, k=1):
            return x * k + args[0]

        def q(x, **kw):
            return x * kw["a"]
        x = lib.ones(2)
        graphs, outs = [], []
        for traced, call in ((fx.symbolic_trace(M()), lambda g: g(x, x * 2, x * 3)),
                             (fx.symbolic_trace(h), lambda g: g(x, 3, x)),
                             (fx.symbolic_trace(q), lambda g: g(x, a=5))):
            graphs.append(_summary(lib, traced.graph))
            outs.append(_np(call(traced)))
            _code_ok(traced)
        return graphs, outs

    _check(scenario)
