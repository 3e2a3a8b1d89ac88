"""The op table: every row is a Case (see harness.py). Rows live in cases_<family>.py
files, one per op family; this module gathers them."""
import importlib
import pkgutil
import os

from .harness import Case, T  # noqa: F401  (re-exported for the family files)


def all_cases():
    here = os.path.dirname(__file__)
    cases = []
    for info in sorted(pkgutil.iter_modules([here]), key=lambda m: m.name):
        if info.name.startswith("cases_"):
            mod = importlib.import_module(f"{__package__}.{info.name}")
            cases.extend(mod.CASES)
    return cases
