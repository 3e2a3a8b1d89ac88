"""Helpers for the tests that force ember's intra-op splits: a spy on the splits and a thread-count fixture."""
import pytest

import ember
from ember._backend import parallel


def spy_splits(monkeypatch):
    """The list that receives the piece count of every split run through parallel._run_parts from now on."""
    seen = []
    real = parallel._run_parts

    def spy(fn, parts):
        seen.append(len(parts))
        return real(fn, parts)
    monkeypatch.setattr(parallel, "_run_parts", spy)
    return seen


@pytest.fixture
def threads(request, monkeypatch):
    """ember on request.param intra-op threads, every split taken whatever its size (parametrize indirect)."""
    monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
    before = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(before)
