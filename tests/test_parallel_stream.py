"""parallel.stream: a sequential producer on the calling thread, consumers on the intra-op threads.

Every position is produced once, in order, and consumed once, after it was produced; ranges keep
their alignment; an error in either side reaches the caller and nothing unproduced is consumed.
"""
import threading
import time

import pytest

from ember._backend import parallel

from ._threads import threads  # noqa: F401  (the fixture)


def _run(length, step, align, fail_produce=None, fail_consume=None):
    produced, consumed, order = [0] * length, [0] * length, []
    lock = threading.Lock()

    def produce(a, b):
        assert threading.current_thread() is threading.main_thread()
        order.append(a)
        time.sleep(0.0005)  # a slow source: consumers that ran ahead of it would see unproduced positions
        if fail_produce is not None and a >= fail_produce:
            raise ValueError("produce failed")
        for i in range(a, b):
            produced[i] += 1

    def consume(a, b):
        assert b == length or b % align == 0, (a, b)
        if fail_consume is not None and a <= fail_consume < b:
            raise KeyError("consume failed")
        with lock:
            for i in range(a, b):
                assert produced[i] == 1, f"position {i} consumed before it was produced"
                consumed[i] += 1

    parallel.stream(length, step, produce, consume, nbytes=1 << 40, align=align)
    return produced, consumed, order


@pytest.mark.parametrize("threads", [1, 2, 3], indirect=True)
@pytest.mark.parametrize("length,step,align", [(0, 16, 16), (5, 16, 16), (160, 16, 16), (1000, 32, 16),
                                               (1001, 64, 16), (97, 3, 1)])
def test_every_position_once(threads, length, step, align):
    produced, consumed, order = _run(length, step, align)
    assert produced == [1] * length and consumed == [1] * length
    assert order == list(range(0, length, step))


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
def test_errors_reach_the_caller(threads):
    with pytest.raises(ValueError, match="produce failed"):
        _run(1024, 32, 16, fail_produce=512)
    with pytest.raises(KeyError, match="consume failed"):
        _run(1024, 32, 16, fail_consume=700)


@pytest.mark.parametrize("threads", [2], indirect=True)
def test_workers_keep_the_callers_error_state(threads):
    """NumPy's error state is per thread: the consumes on the workers run under the caller's."""
    import numpy as np
    seen = []

    def consume(a, b):
        seen.append(np.geterr()["over"])

    with np.errstate(over="raise"):
        parallel.stream(64, 16, lambda a, b: time.sleep(0.002), consume, nbytes=1 << 40)
    assert seen and set(seen) == {"raise"}
