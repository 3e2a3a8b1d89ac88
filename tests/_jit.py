"""Helpers of the tests that check which kernel ran (the compiled-kernel tests, tests/test_*_jit.py, and the
convolution path tests)."""


def count_calls(monkeypatch, module, *names, record=None):
    """Wrap each named kernel of module so that a call appends its name (or record(*args), e.g. an argument's
    shape) to the returned list (the tests check a path ran the kernels, or did not)."""
    calls = []
    for name in names:
        fn = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _fn=fn, _name=name: calls.append(
            _name if record is None else record(*a)) or _fn(*a))
    return calls
