"""differentiable=True optimizers against torch (Note [Differentiable steps]): the parameter is a non-leaf function
of a meta-parameter, each step's .grad comes from autograd.grad(create_graph=True), and after a few steps the
meta-gradient through all the updates must be torch's, as must the updated values; where torch's recorded graph
breaks (an in-place update of a value its graph saved), ember must raise the same error type."""
import numpy as np
import pytest
import torch

import ember

CASES = [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
         ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
         ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.2, maximize=True)),
         ("Adam", dict(lr=0.1)), ("Adam", dict(lr=0.1, weight_decay=0.1)), ("Adam", dict(lr=0.1, amsgrad=True)),
         ("AdamW", dict(lr=0.1)), ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("RMSprop", dict(lr=0.01)),
         ("RMSprop", dict(lr=0.01, momentum=0.9)), ("RMSprop", dict(lr=0.01, centered=True)),
         ("Adadelta", dict()), ("Adamax", dict(lr=0.1)), ("NAdam", dict(lr=0.1)), ("RAdam", dict(lr=0.1)),
         ("ASGD", dict(lr=0.1)), ("Rprop", dict(lr=0.1))]


def _meta(lib, name, options, steps):
    rng = np.random.default_rng(0)
    w0 = lib.tensor(rng.standard_normal(5), requires_grad=True)
    p = w0 * 1.5
    opt = getattr(lib.optim, name)([p], differentiable=True, **options)
    for _ in range(steps):
        x = lib.tensor(rng.standard_normal(5))
        loss = ((p * x).sum() - 1.0) ** 2 + (p * p).sum() * 0.1
        p.grad, = lib.autograd.grad(loss, p, create_graph=True)
        opt.step()
    (p * p * p).sum().backward()
    return p.detach().numpy(), w0.grad.numpy()


def _outcome(lib, name, options, steps):
    try:
        return _meta(lib, name, options, steps)
    except Exception as e:  # noqa: BLE001 -- compared by type with torch's
        return type(e)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("steps", [1, 3])
@pytest.mark.parametrize("name, options", CASES, ids=[f"{n}-{'-'.join(o)}" for n, o in CASES])
def test_meta_gradient_through_steps_is_torchs(name, options, steps):
    want = _outcome(torch, name, options, steps)
    got = _outcome(ember, name, options, steps)
    if isinstance(want, type):
        assert got is want
        return
    assert not isinstance(got, type), got
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)


def test_a_leaf_parameter_still_cannot_be_updated_in_place_with_grad():
    def run(lib):
        p = lib.ones(3, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1, differentiable=True)
        p.grad = lib.ones(3)
        with pytest.raises(RuntimeError) as info:
            opt.step()
        return str(info.value)
    assert run(ember) == run(torch)
