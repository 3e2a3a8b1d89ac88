"""The autograd support DDP needs, against torch: Variable._execution_engine.queue_callback (callbacks that
run once backward's traversal ends) and post-accumulate-grad hooks firing in reverse order of use."""
import pytest
import torch

import ember

LIBS = (torch, ember)


def queue(lib, fn):
    lib.autograd.Variable._execution_engine.queue_callback(fn)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_queue_callback_outside_backward_raises(lib):
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass."):
        queue(lib, lambda: None)


def run_callback_order(lib, use_grad, create_graph=False):
    """Events of one backward in which a hook queues a callback that queues another."""
    events = []
    x = lib.ones(3, requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda p: events.append(("acc", p.grad.tolist())))
    y = x * 2

    def hook(g):
        events.append("hook")
        queue(lib, lambda: (events.append(("cb1", lib.is_grad_enabled())), queue(lib, lambda: events.append("cb2"))))
    y.register_hook(hook)
    if use_grad:
        lib.autograd.grad(y.sum(), x, create_graph=create_graph)
    else:
        y.sum().backward(create_graph=create_graph)
    events.append("end")
    try:
        queue(lib, lambda: None)  # the callback stack is empty again after backward
    except RuntimeError:
        events.append("closed")
    return events


@pytest.mark.parametrize("use_grad", [False, True])
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_callbacks_run_after_traversal_as_torch(use_grad, create_graph):
    assert run_callback_order(ember, use_grad, create_graph) == run_callback_order(torch, use_grad, create_graph)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_callback_error_propagates_and_stack_resets(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: queue(lib, lambda: 1 / 0))
    with pytest.raises(ZeroDivisionError):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="Final callbacks"):
        queue(lib, lambda: None)


def nested_backward_events(lib):
    """A hook that runs its own backward: its callback belongs to the inner backward."""
    events = []
    x = lib.ones(2, requires_grad=True)
    y = x * 2

    def hook(g):
        queue(lib, lambda: events.append("outer"))
        z = lib.ones(2, requires_grad=True)
        with lib.enable_grad():  # hooks run with grad mode off (create_graph=False)
            w = z * 5
            loss = w.sum()
        w.register_hook(lambda g2: queue(lib, lambda: events.append("inner")))
        loss.backward()
        events.append("inner-done")
    y.register_hook(hook)
    y.sum().backward()
    return events


def test_nested_backward_has_its_own_callbacks():
    assert nested_backward_events(ember) == nested_backward_events(torch) == ["inner", "inner-done", "outer"]


def accumulate_order(lib):
    """Post-accumulate hooks of a 3-layer MLP fire in reverse order of use, once per leaf."""
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 3), lib.nn.Tanh(),
                            lib.nn.Linear(3, 2))
    names = []
    for name, p in net.named_parameters():
        p.register_post_accumulate_grad_hook(lambda p, name=name: names.append(name))
    net(lib.ones(2, 4)).sum().backward()
    return names


def test_post_accumulate_hooks_fire_in_reverse_order_of_use():
    order = accumulate_order(ember)
    assert sorted(order) == sorted(accumulate_order(torch))
    layer = [int(n.split(".")[0]) for n in order]
    assert layer == sorted(layer, reverse=True)
