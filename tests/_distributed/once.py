"""Run an expensive launch once per test session, even when pytest-xdist spreads its tests over workers."""
import fcntl
import json
import os
import tempfile

_memo = {}


def once(key, compute):
    """compute() (JSON-serializable) once per session: xdist workers share it through a locked file."""
    if key in _memo:
        return _memo[key]
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None:
        _memo[key] = compute()
        return _memo[key]
    path = os.path.join(tempfile.gettempdir(), f"ember-{key}-{run_id}.json")
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other workers wait here until the first has written the result
        if os.path.exists(path):
            with open(path) as f:
                _memo[key] = json.load(f)
        else:
            _memo[key] = compute()
            with open(path, "w") as f:
                json.dump(_memo[key], f)
    return _memo[key]
