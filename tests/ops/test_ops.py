"""Differential tests: each row of the op table runs on ember and torch and must agree."""
import pytest

from .cases import all_cases
from .harness import run_case

_PARAMS = [pytest.param(case, dtype, id=case.param_id(dtype)) for case in all_cases() for dtype in case.dtypes]


@pytest.mark.parametrize("case,dtype", _PARAMS)
def test_op(case, dtype):
    run_case(case, dtype)
