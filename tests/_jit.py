"""Helpers of the compiled-kernel tests (tests/test_*_jit.py)."""


def count_calls(monkeypatch, module, *names):
    """Wrap each named kernel of module so that a call appends its name to the returned list (the tests check a
    path ran the compiled kernels, or did not)."""
    calls = []
    for name in names:
        fn = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _fn=fn, _name=name: calls.append(_name) or _fn(*a))
    return calls
