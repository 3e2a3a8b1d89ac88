"""Write pytest's assertion-rewritten bytecode for the test modules and plugins before a run (CI).

    python tools/rewrite_tests.py [-j N]

pytest rewrites the asserts of every test module it imports and caches the result as
tests/**/__pycache__/*-pytest-*.pyc, but not where PYTHONDONTWRITEBYTECODE is set (CI's containers
set it): then each pytest-xdist worker parses, rewrites and compiles all ~160 test modules again
while it collects (~15 s of CPU per worker, measured 2026-11-30: collection 34 -> 19 s a process).
This writes the same cache files pytest would (its own functions, a source-hash-checked pyc that
pytest ignores once the source changes), N files at a time (default: the CPU count), so the
workers only load them. pytest also rewrites the modules of its plugins' distributions (pytest-xdist,
hypothesis: ~2 s a worker), so those are written too, next to them in the venv. Nothing else changes: the asserts are rewritten exactly as pytest does.
If pytest's private helpers change, it says so and does nothing (the run is then just slower).
"""
import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_modules():
    """What pytest rewrites here: the test modules (python_files' default test_*.py) and conftest.py files."""
    tests = ROOT / "tests"
    return sorted(p for p in tests.rglob("*.py")
                  if (p.name.startswith("test_") or p.name == "conftest.py") and "__pycache__" not in p.parts)


def plugin_modules():
    """The files of the packages pytest marks for rewriting as plugins (Config._mark_plugins_for_rewrite)."""
    import importlib.metadata
    import importlib.util
    from _pytest.config import _iter_rewritable_modules
    files = []
    for dist in importlib.metadata.distributions():
        if not any(ep.group == "pytest11" for ep in dist.entry_points):
            continue
        for name in set(_iter_rewritable_modules(str(f) for f in dist.files or [])):
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                continue
            if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
                continue
            if spec.submodule_search_locations:
                files += sorted(Path(spec.submodule_search_locations[0]).rglob("*.py"))
            else:
                files.append(Path(spec.origin))
    return files


def rewrite(path):
    from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc_fp, get_cache_dir
    path = Path(path)
    pyc = get_cache_dir(path) / (path.name[:-3] + PYC_TAIL)
    if _read_pyc(path, pyc) is not None:  # already there and up to date
        return False
    source_hash, co = _rewrite_test(path, None)  # no config: enable_assertion_pass_hook off, pytest's default
    pyc.parent.mkdir(exist_ok=True)
    tmp = f"{pyc}.{os.getpid()}"
    with open(tmp, "wb") as fp:
        _write_pyc_fp(fp, source_hash, co)
    os.replace(tmp, pyc)  # atomic, as pytest writes it
    return True


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-j", type=int, default=os.cpu_count() or 1, help="processes (default: CPU count)")
    args = p.parse_args(argv)
    import _pytest.assertion.rewrite as pytest_rewrite
    missing = [n for n in ("PYC_TAIL", "_read_pyc", "_rewrite_test", "_write_pyc_fp", "get_cache_dir")
               if not hasattr(pytest_rewrite, n)]
    if missing:
        print(f"rewrite_tests: pytest's rewrite helpers not found ({missing}); nothing written", file=sys.stderr)
        return 0
    paths = [str(p) for p in test_modules()]
    try:
        paths += [str(p) for p in plugin_modules()]
    except ImportError as e:
        print(f"rewrite_tests: plugins left to pytest ({e})", file=sys.stderr)
    with ProcessPoolExecutor(max(1, args.j)) as pool:
        written = sum(pool.map(rewrite, paths, chunksize=4))
    print(f"rewrite_tests: {written} of {len(paths)} test and plugin modules rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
