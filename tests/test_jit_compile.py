"""ember.jit / ember.compile / ember.compiler / ember._dynamo against torch 2.13: what user code observes
(types of results, state_dict keys, attribute forwarding, argument errors), values unchanged."""
import pickle
import warnings

import numpy as np
import pytest
import torch

import ember


def _pair(in_f=4, out_f=3, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((out_f, in_f)).astype(np.float32)
    b = rng.standard_normal(out_f).astype(np.float32)
    mods = []
    for lib in (torch, ember):
        m = lib.nn.Sequential(lib.nn.Linear(in_f, out_f), lib.nn.ReLU())
        with lib.no_grad():
            m[0].weight.copy_(lib.tensor(w))
            m[0].bias.copy_(lib.tensor(b))
        mods.append(m)
    x = rng.standard_normal((2, in_f)).astype(np.float32)
    return mods, x


def _double(x):
    return x * 2


def test_compile_module_is_optimized_module_like_torch():
    (tm, em), x = _pair()
    tc, ec = torch.compile(tm, backend="eager"), ember.compile(em)
    assert type(ec).__name__ == type(tc).__name__ == "OptimizedModule"
    assert isinstance(ec, ember.nn.Module) and not isinstance(ec, ember.nn.Sequential)
    assert ec._orig_mod is em and tc._orig_mod is tm
    assert list(ec.state_dict()) == list(tc.state_dict())  # '_orig_mod.' prefixes
    assert [n for n, _ in ec.named_parameters()] == [n for n, _ in tc.named_parameters()]
    assert [n for n, _ in ec.named_modules()] == [n for n, _ in tc.named_modules()]
    assert repr(ec) == repr(tc)
    assert len(ec) == len(tc) == 2
    # (torch's compiled call equals its eager call; calling it here would only spend seconds in dynamo)
    np.testing.assert_allclose(ec(ember.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    # attributes and modes forward to the original module
    ec.eval()
    tc.eval()
    assert em.training is tm.training is False
    ec.foo = 3
    tc.foo = 3
    assert em.foo == tm.foo == 3
    assert ec.get_submodule("_orig_mod.0").in_features == 4
    for c in (ec, tc):
        with pytest.raises(TypeError, match="'OptimizedModule' object is not subscriptable"):
            c[0]
    # loading the original module's state_dict into the wrapper fails on the missing prefix, as in torch
    with pytest.raises(RuntimeError, match="_orig_mod.0.weight"):
        ec.load_state_dict(em.state_dict())
    with pytest.raises(RuntimeError, match="_orig_mod.0.weight"):
        tc.load_state_dict(tm.state_dict())
    ec.load_state_dict(ec.state_dict())
    back = pickle.loads(pickle.dumps(ec))
    np.testing.assert_allclose(back(ember.tensor(x)).detach().numpy(), ec(ember.tensor(x)).detach().numpy())


def test_compile_module_gradients_and_hooks():
    (tm, em), x = _pair(seed=1)
    seen = []
    em.register_forward_hook(lambda mod, i, o: seen.append(o.shape))
    ec = ember.compile(em, mode="max-autotune")
    ec(ember.tensor(x)).sum().backward()
    tm(torch.tensor(x)).sum().backward()
    assert seen == [(2, 3)]
    np.testing.assert_allclose(em[0].weight.grad.numpy(), tm[0].weight.grad.numpy(), rtol=1e-6)


def test_compile_function_decorator_forms():
    def f(x):
        return x * 2 + 1
    for lib in (torch, ember):
        assert lib.compile(f, disable=True) is f
        assert lib.compile(lib.nn.Linear(2, 2), disable=True).__class__.__name__ == "Linear"
        deco = lib.compile(fullgraph=True, dynamic=False)
        assert callable(deco)
        with pytest.raises(RuntimeError, match="Model can't be None"):
            deco(None)
    ef = ember.compile(f)
    assert ef is f
    g = ember.compile()(f)
    assert g(ember.tensor([1.0])).tolist() == [3.0]

    @ember.compile(mode="reduce-overhead")
    def h(x):
        return x + 1
    assert h(ember.tensor([1.0])).tolist() == [2.0]


@pytest.mark.parametrize("kwargs", [dict(mode="foo"), dict(mode="default", options={}),
                                    dict(backend="nonexistent")])
def test_compile_argument_errors(kwargs):
    # torch checks these when compile() is called, before running anything
    with pytest.raises(RuntimeError) as te:
        torch.compile(torch.nn.Linear(2, 2), **kwargs)
    with pytest.raises(RuntimeError) as ee:
        ember.compile(ember.nn.Linear(2, 2), **kwargs)
    assert str(ee.value) == str(te.value)
    assert type(ee.value).__name__ == type(te.value).__name__
    for lib in (torch, ember):
        with pytest.raises(AssertionError, match="A callable function is expected"):
            lib.compile(5)


def test_module_compile_in_place():
    (tm, em), x = _pair(seed=2)
    assert em.compile() is None and tm.compile(backend="eager") is None
    assert list(em.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(em(ember.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def test_compiler_and_dynamo_namespaces():
    import ember.compiler
    import ember._dynamo
    import torch._dynamo

    def f(x):
        return x
    for lib in (torch, ember):
        assert lib.compiler.is_compiling() is False
        assert lib.compiler.is_dynamo_compiling() is False
        assert lib.compiler.disable(recursive=False)(f) is f or lib is torch
        assert lib.compiler.reset() is None
        assert lib.compiler.list_backends() == ["cudagraphs", "inductor", "openxla", "tvm"]
        with lib.compiler.set_stance("force_eager"):
            pass
    assert ember.compiler.disable(f) is f
    for name in ["suppress_errors", "cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "verbose", "capture_scalar_outputs", "automatic_dynamic_shapes", "optimize_ddp"]:
        assert getattr(ember._dynamo.config, name) == getattr(torch._dynamo.config, name), name
    old = ember._dynamo.config.cache_size_limit
    ember._dynamo.config.cache_size_limit = 64
    assert ember._dynamo.config.cache_size_limit == 64
    ember._dynamo.config.cache_size_limit = old
    for lib in (torch, ember):
        with pytest.raises(AttributeError, match="config.bogus_flag does not exist"):
            lib._dynamo.config.bogus_flag = 1
    ember._dynamo.mark_dynamic(ember.ones(2), 0)
    assert ember._dynamo.reset() is None


def test_jit_script_and_trace_return_what_they_get():
    import ember.jit

    @ember.jit.script
    def f(x):
        return x.relu() + 1

    class Block(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(3, 3)

        @ember.jit.export
        def extra(self, x):
            return x * 2

        @ember.jit.ignore
        def debug(self):
            return "python"

        @ember.jit.unused
        def unused(self):
            return 1

        def forward(self, x):
            if ember.jit.is_scripting() or ember.jit.is_tracing():
                raise AssertionError("never scripted in ember")
            return self.lin(x)

    @ember.jit.script
    class Pair:
        def __init__(self, a):
            self.a = a

    b = Block()
    assert ember.jit.script(b) is b
    x = ember.tensor([[-1.0, 0.5, 2.0]])
    assert ember.jit.trace(b, x) is b
    assert ember.jit.trace(b, example_inputs=(x,)) is b
    assert ember.jit.trace(f, (x,)) is f
    assert ember.jit.trace_module(b, {"forward": x}) is b
    assert f(x).tolist() == [[1.0, 1.5, 3.0]]
    assert b.debug() == "python" and b.unused() == 1 and b.extra(x).shape == (1, 3)
    assert Pair(2).a == 2
    assert not isinstance(b, ember.jit.ScriptModule)
    assert not isinstance(f, ember.jit.ScriptFunction)
    assert ember.jit.ignore(drop=True)(f) is f
    assert ember.jit.annotate(list, [1, 2]) == torch.jit.annotate(list, [1, 2]) == [1, 2]
    assert ember.jit.Final is torch.jit.Final
    fut = ember.jit.fork(f, x)
    tfut = torch.jit.fork(lambda y: y.relu() + 1, torch.tensor([[-1.0, 0.5, 2.0]]))
    assert fut.done() and tfut.done()
    assert ember.jit.wait(fut).tolist() == torch.jit.wait(tfut).tolist()
    with ember.jit.optimized_execution(False):
        pass
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="example_kwarg_inputs should be a dict"):
            lib.jit.trace(lib.nn.Linear(2, 2))
        with pytest.raises(TypeError, match="'NoneType' object is not iterable"):
            lib.jit.trace(lambda y: y)


def test_old_style_script_module_subclass():
    import ember.jit

    with pytest.warns(DeprecationWarning, match="script_method` is deprecated"):
        class Scale(ember.jit.ScriptModule):
            def __init__(self):
                super().__init__()
                self.w = ember.nn.Parameter(ember.tensor([2.0, 3.0]))

            @ember.jit.script_method
            def forward(self, x):
                return x * self.w
    m = Scale()
    assert isinstance(m, ember.nn.Module) and list(m.state_dict()) == ["w"]
    assert m(ember.ones(2)).tolist() == [2.0, 3.0]


def test_jit_save_load_raise_clearly(tmp_path):
    import ember.jit
    for lib in (torch, ember):
        with pytest.warns(DeprecationWarning, match=r"`torch.jit.script` is deprecated"):
            lib.jit.script(_double)
        with pytest.warns(DeprecationWarning, match=r"`torch.jit.trace` is deprecated"):
            lib.jit.trace(lambda y: y, lib.ones(1))
    with pytest.raises(RuntimeError, match="no TorchScript format"):
        ember.jit.save(ember.nn.Linear(2, 2), tmp_path / "m.pt")
    with pytest.raises(RuntimeError, match="no TorchScript format"):
        ember.jit.load(tmp_path / "m.pt")


def _jit_warnings(lib):
    def f(x):
        return x + 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.jit.script(f, optimize=True)
        lib.jit.trace(f, lib.ones(2))
    return [(w.category, w.filename == __file__) for w in caught]


def test_jit_deprecation_warnings_attributed_like_torch():
    """torch attributes the DeprecationWarning to its own file (the default filters hide it from a
    script's __main__), the optimize= FutureWarning to the caller."""
    ours = _jit_warnings(ember)
    assert ours == [(DeprecationWarning, False), (FutureWarning, True), (DeprecationWarning, False)]
    assert set(ours) == set(_jit_warnings(torch))


def test_old_style_script_module_subclass_as_in_torch():
    """test_old_style_script_module_subclass on torch too: the warning, the module and its output."""
    def story(lib):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")

            class Scale(lib.jit.ScriptModule):
                def __init__(self):
                    super().__init__()
                    self.w = lib.nn.Parameter(lib.tensor([2.0, 3.0]))

                @lib.jit.script_method
                def forward(self, x):
                    return x * self.w
            m = Scale()
        return [sorted({c.category.__name__ for c in w}), isinstance(m, lib.nn.Module), list(m.state_dict()),
                m(lib.ones(2)).tolist()]
    assert story(ember) == story(torch)
