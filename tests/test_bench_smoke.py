"""Every benchmark row builds and runs one step on ember and on torch (no timing is checked).

The fresh-interpreter rows run once in a minimal mode (the memory probe on the small MLP).
"""
import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402
from bench import harness, rows, rows_extra  # noqa: E402,F401
from bench import run as bench_run  # noqa: E402


@pytest.mark.parametrize("name", list(harness.ROWS))
def test_row_runs_one_step(name):
    harness.smoke_row(harness.ROWS[name], (ember, torch))


def test_runner_selects_and_reports(tmp_path, capsys):
    out = tmp_path / "r.json"
    bench_run.main(["--only", "TINY ADD (NO", "--quick", "--json", str(out)])
    text = capsys.readouterr().out
    assert "tiny add (no grad)" in text
    import json
    res = json.loads(out.read_text())
    assert [r["name"] for r in res["rows"]] == ["tiny add (no grad)"]
    assert res["rows"][0]["ratio"] > 0 and res["machine"]["cores"] >= 1
