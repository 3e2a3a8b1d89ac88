"""A spy on ember's intra-op splits, for the tests that force them."""
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
