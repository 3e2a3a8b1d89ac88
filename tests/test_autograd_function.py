"""ember.autograd.Function against torch.autograd.Function: the same custom functions
are declared on both libraries and must give the same values, gradients and errors."""
import warnings

import numpy as np
import pytest
import torch

import ember

from .test_autograd import LIBS, assert_same, rand, same_error


def functions(lib):
    """The custom Functions of this file, declared on `lib` (torch or ember)."""
    F = lib.autograd.Function
    once_differentiable = lib.autograd.function.once_differentiable

    class Cube(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x * x * g

    class ExpOut(F):
        """Saves its output, like torch's exp."""
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    class ScaleShift(F):
        """Non-tensor arguments between tensors; needs_input_grad skips work."""
        @staticmethod
        def forward(ctx, x, scale, w, shift=0.0):
            ctx.scale = scale
            ctx.save_for_backward(x, w)
            ctx.seen_needs = ctx.needs_input_grad
            return x * w * scale + shift

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            gx = g * w * ctx.scale if ctx.needs_input_grad[0] else None
            gw = g * x * ctx.scale if ctx.needs_input_grad[2] else None
            return gx, None, gw, None

    class SplitTwo(F):
        """Several outputs, one integer output marked non-differentiable (setup_context style)."""
        @staticmethod
        def forward(x):
            return x.sin(), x.cos(), (x > 0).long()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_non_differentiable(output[2])
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g_sin, g_cos, g_idx):
            x, = ctx.saved_tensors
            return g_sin * x.cos() - g_cos * x.sin()

    class SumAndMax(F):
        """set_materialize_grads(False): unused outputs arrive as None."""
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x.sum(), x * 2

        @staticmethod
        def backward(ctx, g_sum, g_double):
            x, = ctx.saved_tensors
            ctx.got_none = (g_sum is None, g_double is None)
            res = lib.zeros_like(x)
            if g_sum is not None:
                res = res + g_sum
            if g_double is not None:
                res = res + 2 * g_double
            return res

    class Materialized(F):
        @staticmethod
        def forward(ctx, x):
            return x * 1, x * 3

        @staticmethod
        def backward(ctx, g1, g3):
            ctx.kinds = (g1 is None, g3 is None, float(g3.abs().sum()))
            return g1 + 3 * g3

    class AddOneInPlace(F):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class MulInPlace(F):
        """In place, saving the result: x *= k."""
        @staticmethod
        def forward(ctx, x, k):
            x.mul_(k)
            ctx.mark_dirty(x)
            ctx.k = k
            return x

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class Identity(F):
        @staticmethod
        def forward(ctx, x, y):
            return x, y * 2

        @staticmethod
        def backward(ctx, gx, gy):
            return gx * 10, gy * 2

    class SetupCube(F):
        """The setup_context style: forward without ctx."""
        @staticmethod
        def forward(x, power):
            return x ** power

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, power = inputs
            ctx.power = power
            ctx.save_for_backward(x, output)

        @staticmethod
        def backward(ctx, g):
            x, out = ctx.saved_tensors
            return g * ctx.power * out / x, None

    class OnceSquare(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    class TooFew(F):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    class TooMany(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    class ExtraNone(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    class GradForNumber(F):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    class WrongShape(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum(0)

    class WrongJacobian(F):
        """A deliberately wrong derivative (of x^2), for gradcheck."""
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x

    class CubeDetachedBackward(F):
        """Right first derivative, wrong second one (the backward detaches x)."""
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x.detach() * x.detach() * g

    class DirtyNotReturned(F):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    class SaveNumber(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    class Checkpointed(F):
        """Recomputes its forward inside backward: a reentrant call of the engine."""
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return (x * w).tanh().exp()

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            with lib.enable_grad():
                xd = x.detach().requires_grad_(True)
                wd = w.detach().requires_grad_(True)
                y = (xd * wd).tanh().exp()
                return lib.autograd.grad(y, (xd, wd), g)

    class ConstantGrad(F):
        """Its backward returns a tensor it keeps: that tensor must not become x.grad."""
        const = lib.tensor([1.0, 2.0])

        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return ConstantGrad.const

    return {k: v for k, v in locals().items() if isinstance(v, type)}


FNS = {lib: functions(lib) for lib in LIBS}


def both(fn, *arrays):
    """fn(lib, F, *leaves) for each library, F the dict of that library's Functions."""
    res = []
    for lib in LIBS:
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        res.append(fn(lib, FNS[lib], *xs))
    return res


def test_save_for_backward_and_grad_fn():
    def fn(lib, F, x):
        y = F["Cube"].apply(x)
        assert type(y.grad_fn).__name__ == "CubeBackward" and y.grad_fn.name() == "CubeBackward"
        assert y.grad_fn.next_functions[0][0] is x.grad_fn or y.grad_fn.next_functions[0][0].variable is x
        y.sum().backward()
        return y, x.grad
    t, e = both(fn, rand(4))
    assert_same(t, e)


def test_saved_output_and_double_backward():
    def fn(lib, F, x):
        y = F["ExpOut"].apply(x * 2)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return y, g, gg
    t, e = both(fn, rand(3))
    assert_same(t, e)


def test_saved_tensors_freed_after_backward():
    def fn(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = FNS[lib]["Cube"].apply(x)
        y.sum().backward()
        y.grad_fn.saved_tensors
    same_error(fn)
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = FNS[lib]["Cube"].apply(x)
        y.sum().backward(retain_graph=True)
        assert y.grad_fn.saved_tensors[0] is x


def test_saved_input_modified_in_place_raises():
    def fn(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 1
        y = FNS[lib]["Cube"].apply(h)
        h.mul_(2)
        y.sum().backward()
    same_error(fn)

    def out(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = FNS[lib]["ExpOut"].apply(x)
        y.add_(1)
        y.sum().backward()
    same_error(out)


def test_non_tensor_arguments_and_needs_input_grad():
    def fn(lib, F, x, w):
        y = F["ScaleShift"].apply(x, 2.5, w, 1.0)
        needs_all = y.grad_fn.seen_needs
        y.sum().backward()
        z = F["ScaleShift"].apply(x, 3.0, w.detach())
        needs_x = z.grad_fn.seen_needs
        gx, = lib.autograd.grad(z.sum(), x)
        return y, x.grad, w.grad, gx, list(needs_all), list(needs_x)
    t, e = both(fn, rand(3, seed=1), rand(3, seed=2))
    assert_same(t, e)


def test_multiple_outputs_non_differentiable_and_setup_context():
    def fn(lib, F, x):
        s, c, idx = F["SplitTwo"].apply(x)
        assert not idx.requires_grad and s.requires_grad and c.requires_grad
        (s * 2 + c).sum().backward()
        return s, c, idx, x.grad, s.grad_fn is c.grad_fn, s.output_nr if hasattr(s, "output_nr") else None
    t, e = both(fn, rand(4))
    assert_same(t, e)


def test_only_one_output_used_gets_zeros():
    def fn(lib, F, x):
        a, b = F["Materialized"].apply(x)
        a.sum().backward()
        return x.grad, list(a.grad_fn.kinds)
    t, e = both(fn, rand(3))
    assert_same(t, e)


def test_set_materialize_grads_false():
    def fn(lib, F, x):
        s, d = F["SumAndMax"].apply(x)
        d.sum().backward()
        first = list(s.grad_fn.got_none)
        s2, _ = F["SumAndMax"].apply(x)
        s2.backward()
        return first, list(s2.grad_fn.got_none), x.grad
    t, e = both(fn, rand(3))
    assert_same(t, e)


def test_mark_dirty_in_place():
    def fn(lib, F, x):
        h = x * 2
        y = F["AddOneInPlace"].apply(h)
        assert y is h, "a dirty input is returned as the same tensor"
        name = y.grad_fn.name()
        (y * y).sum().backward()
        return y, x.grad, name
    t, e = both(fn, rand(3))
    assert_same(t, e)


def test_mark_dirty_on_view():
    def fn(lib, F, x):
        h = x * 1
        F["MulInPlace"].apply(h[1:3], 5.0)
        (h * h).sum().backward()
        return h, x.grad, h.grad_fn.name()
    t, e = both(fn, rand(4))
    assert_same(t, e)


def test_mark_dirty_errors():
    same_error(lambda lib: FNS[lib]["AddOneInPlace"].apply(lib.ones(2, requires_grad=True)))
    same_error(lambda lib: FNS[lib]["AddOneInPlace"].apply(lib.ones(2, 2, requires_grad=True)[0]))
    same_error(lambda lib: FNS[lib]["DirtyNotReturned"].apply(lib.ones(2, requires_grad=True) * 1))


def test_returning_inputs_unchanged():
    def fn(lib, F, x, y):
        a, b = F["Identity"].apply(x, y)
        assert a is not x and a.grad_fn.name() == "IdentityBackward"
        (a.sum() + b.sum()).backward()
        with lib.no_grad():
            c, _ = F["Identity"].apply(x, y)
        assert c is not x and not c.requires_grad
        return a, b, x.grad, y.grad
    t, e = both(fn, rand(3, seed=1), rand(3, seed=2))
    assert_same(t, e)


def test_setup_context_style():
    def fn(lib, F, x):
        y = F["SetupCube"].apply(x, 3)
        y.sum().backward()
        return y, x.grad
    t, e = both(fn, rand(4, low=0.5, high=2.0))
    assert_same(t, e)


def test_once_differentiable():
    def fn(lib, F, x, w):
        y = F["OnceSquare"].apply(x)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        plain = not g.requires_grad  # upstream gradient has no history: nothing to guard
        y = F["OnceSquare"].apply(x)
        g2, = lib.autograd.grad((y * w).sum(), x, create_graph=True)
        return g, g2, plain, g2.grad_fn.name()
    t, e = both(fn, rand(3, seed=1), rand(3, seed=2))
    assert_same(t, e)

    def twice(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        y = FNS[lib]["OnceSquare"].apply(x)
        g, = lib.autograd.grad((y * w).sum(), x, create_graph=True)
        g.sum().backward()
    same_error(twice)


@pytest.mark.parametrize("name", ["TooFew", "TooMany", "GradForNumber", "WrongShape", "SaveNumber"])
def test_backward_result_errors(name):
    def fn(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        F = FNS[lib][name]
        args = (x, x * 2) if name == "TooFew" else (x, 3.0) if name == "GradForNumber" else (x,)
        F.apply(*args).sum().backward()
    same_error(fn)


def test_reentrant_backward_checkpoint_style():
    def fn(lib, F, x, w):
        h = x * 2
        y = F["Checkpointed"].apply(h, w)
        (y * y).sum().backward()
        return y, x.grad, w.grad, lib.is_grad_enabled()
    t, e = both(fn, rand(4, seed=1), rand(4, seed=2))
    assert_same(t, e)


def test_returned_tensor_is_not_aliased_into_grad():
    for lib in LIBS:
        F = FNS[lib]["ConstantGrad"]
        x = lib.tensor([0.0, 0.0], requires_grad=True)
        F.apply(x).backward()
        F.apply(x).backward()
        assert F.const.tolist() == [1.0, 2.0] and x.grad.tolist() == [2.0, 4.0]


def test_trailing_none_grads_are_accepted():
    def fn(lib, F, x):
        F["ExtraNone"].apply(x).sum().backward()
        return x.grad
    t, e = both(fn, rand(2))
    assert_same(t, e)


def test_no_input_requires_grad():
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0])
        y = FNS[lib]["Cube"].apply(x)
        assert not y.requires_grad and y.grad_fn is None
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.no_grad():
            z = FNS[lib]["Cube"].apply(w)
        assert not z.requires_grad


def test_instantiating_warns_and_hooks_work():
    for lib in LIBS:
        with pytest.warns(DeprecationWarning):
            FNS[lib]["Cube"]()
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = FNS[lib]["Cube"].apply(x)
        y.register_hook(lambda g: g * 0 + 1)
        y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        y.sum().backward()
        assert x.grad.tolist() == [6.0, 24.0]


# ---- gradcheck / gradgradcheck --------------------------------------------------------------

def test_gradcheck_on_ops_and_functions():
    x = ember.tensor(rand(3, seed=1, low=0.5, high=1.5), requires_grad=True)
    w = ember.tensor(rand(3, seed=2), requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: (a.log() * b.exp()).sin(), (x, w))
    assert ember.autograd.gradcheck(lambda a: (a.sum(), a * 2), x)
    assert ember.autograd.gradcheck(FNS[ember]["Cube"].apply, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)
    assert ember.autograd.gradcheck(FNS[ember]["ScaleShift"].apply, (x, 2.0, w))
    assert ember.autograd.gradcheck(lambda a: a.exp(), (x,), fast_mode=True)
    assert ember.autograd.gradgradcheck(lambda a, b: (a * b).tanh(), (x, w))
    assert ember.autograd.gradgradcheck(FNS[ember]["Cube"].apply, (x,))
    assert x.tolist() == rand(3, seed=1, low=0.5, high=1.5).tolist(), "inputs are restored after perturbation"
    assert x._version == 0 and x.grad is None


def test_gradcheck_catches_wrong_backward():
    for lib in LIBS:
        x = lib.tensor(rand(3, seed=1), requires_grad=True)
        bad = FNS[lib]["WrongJacobian"].apply
        with pytest.raises(RuntimeError) as info:
            lib.autograd.gradcheck(bad, (x,))
        assert type(info.value).__name__ == "GradcheckError"
        assert str(info.value).startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
        assert lib.autograd.gradcheck(bad, (x,), raise_exception=False) is False
        with pytest.raises(RuntimeError, match="Jacobian mismatch"):
            lib.autograd.gradcheck(bad, (x,), fast_mode=True)
        assert lib.autograd.gradcheck(FNS[lib]["CubeDetachedBackward"].apply, (x,))
        with pytest.raises(RuntimeError, match="Jacobian mismatch"):
            lib.autograd.gradgradcheck(FNS[lib]["CubeDetachedBackward"].apply, (x,))


def test_gradcheck_input_checks_and_nondeterminism():
    import itertools
    for lib in LIBS:
        with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
            lib.autograd.gradcheck(lambda a: a * 2, (lib.ones(2, dtype=lib.float64),))
        with pytest.warns(UserWarning, match="is not a double precision floating point"):
            lib.autograd.gradcheck(lambda a: a * 2, (lib.ones(2, requires_grad=True),), eps=1e-3, atol=1e-2)
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="Numerical gradient for function expected to be zero"):
            lib.autograd.gradcheck(lambda a: a.detach() * 2, (x,))
        counter = itertools.count()

        class Noisy(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * (2 + next(counter) * 1e-8)

        class Offset(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2 + 1e-9
        with pytest.raises(RuntimeError, match="Backward is not reentrant"):
            lib.autograd.gradcheck(Noisy.apply, (x,))
        assert lib.autograd.gradcheck(Noisy.apply, (x,), nondet_tol=1e-6)
        with pytest.raises(RuntimeError, match="backward not multiplied by grad_output"):
            lib.autograd.gradcheck(Offset.apply, (x,))


# ---- autograd.functional ----------------------------------------------------------------------

def _f(lib):
    return lambda x, y: (x.exp() * y.sin()).sum() + (x * x * y).sum()


@pytest.mark.parametrize("api", ["jacobian", "hessian", "vjp", "jvp", "vhp", "hvp"])
def test_functional_against_torch(api):
    a, b = rand(3, seed=1), rand(3, seed=2)
    v1, v2 = rand(3, seed=3), rand(3, seed=4)
    res = []
    for lib in LIBS:
        F = lib.autograd.functional
        x, y = lib.tensor(a), lib.tensor(b)
        u = (lib.tensor(v1), lib.tensor(v2))
        vec = lambda p, q: (p.exp() * q, p * q.sin())  # noqa: E731  (R^3 x R^3 -> R^3 x R^3)
        if api == "jacobian":
            r = (F.jacobian(vec, (x, y)), F.jacobian(lambda p: p.sin() * 2, x))
        elif api == "hessian":
            r = (F.hessian(_f(lib), (x, y)), F.hessian(lambda p: (p ** 3).sum(), x))
        elif api == "vjp":
            r = F.vjp(vec, (x, y), u)
        elif api == "jvp":
            r = F.jvp(vec, (x, y), u)
        elif api == "vhp":
            r = F.vhp(_f(lib), (x, y), u)
        else:
            r = F.hvp(_f(lib), (x, y), u)
        res.append(r)
    assert_same(res[0], res[1])


def test_functional_create_graph_and_strict():
    for lib in LIBS:
        F = lib.autograd.functional
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        out, g = F.vjp(lambda p: (p ** 3).sum(), x, create_graph=True)
        assert g.requires_grad
        gg, = lib.autograd.grad(g.sum(), x)
        assert gg.tolist() == [6.0, 12.0]
        _, g = F.vjp(lambda p: (p ** 3).sum(), x)
        assert not g.requires_grad
        with pytest.raises(RuntimeError, match="independent of input 1"):
            F.vjp(lambda p, q: (p * 2).sum(), (x, x.detach()), strict=True)
        j = F.jacobian(lambda p, q: p * 2, (x, x.detach()))
        assert j[1].abs().sum().item() == 0.0
        with pytest.raises(RuntimeError, match="can only be None if the user-provided function returns a single"):
            F.vjp(lambda p: p * 2, x)


@pytest.mark.parametrize("order", ["none_first", "none_last"])
def test_branch_given_none_still_releases_shared_inputs(order):
    """A Function's None gradient prunes its branch; the leaf that branch shares with another still gets its grad."""
    grads = []
    for lib in (ember, torch):
        class NoGrad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, y):
                return y * 1.0

            @staticmethod
            def backward(ctx, g):
                return None

        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        f = NoGrad.apply((x * 2.0).exp())
        z = (x * 3.0).sin()
        loss = (f + z).sum() if order == "none_first" else (z + f).sum()
        loss.backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_save_for_backward_keeps_none():
    """ctx.save_for_backward(None, x): saved_tensors gives None back in its place, as torch's."""
    seen = {}
    for lib in (torch, ember):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(None, x)
                return x * 3

            @staticmethod
            def backward(ctx, g):
                nothing, x = ctx.saved_tensors
                seen[lib] = (nothing is None, type(x).__name__)
                return g * 3

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        Scale.apply(x).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
    assert seen[ember] == seen[torch] == (True, "Tensor")
