"""ember.futures against torch.futures: set_result / set_exception, then() chains (an error reaching the
callback through value()), add_done_callback, collect_all and wait_all, done() and the errors of misuse. The
futures of started operations (Work.get_future) are exercised by DDP's communication hooks (tests/test_ddp.py)."""
import pytest
import torch

import ember


def _run(lib, scenario):
    F = lib.futures
    log = []
    if scenario == "chain":
        a = F.Future()
        b = a.then(lambda f: f.value() * 2)
        c = b.then(lambda f: f.value() + 1)
        a.add_done_callback(lambda f: log.append(("done", f.value())))
        a.set_result(3)
        return log, b.wait(), c.wait(), a.done(), c.done()
    if scenario == "error":
        a = F.Future()
        b = a.then(lambda f: f.value() + 1)
        a.set_exception(ValueError("bad"))
        with pytest.raises(RuntimeError) as info:  # torch wraps the callback's error
            b.wait()
        return str(info.value).split("\n")[0], a.done(), b.done()
    if scenario == "collect":
        fs = [F.Future() for _ in range(3)]
        for i, f in enumerate(fs):
            f.set_result(i * 10)
        all_ = F.collect_all(fs)
        return [f.value() for f in all_.wait()], F.wait_all(fs)
    if scenario == "twice":
        a = F.Future()
        a.set_result(1)
        with pytest.raises(RuntimeError):
            a.set_result(2)
        return a.value()
    raise AssertionError(scenario)


@pytest.mark.parametrize("scenario", ["chain", "error", "collect", "twice"])
def test_futures_as_torch(scenario):
    assert _run(ember, scenario) == _run(torch, scenario)


def test_value_of_an_incomplete_future_raises():
    with pytest.raises(RuntimeError):
        ember.futures.Future().value()
