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
    assert res["machine"]["processes"] == "one"


def test_runner_in_separate_processes(tmp_path):
    out = tmp_path / "r.json"
    bench_run.main(["--only", "TINY ADD (NO", "--quick", "--separate", "--json", str(out)])
    import json
    res = json.loads(out.read_text())
    assert res["machine"]["processes"] == "separate" and res["rows"][0]["ratio"] > 0
    assert all(len(v) >= 3 for v in res["rows"][0]["samples"].values())


def test_worker_reports_errors_and_stays_up():
    w = harness.Worker("ember")
    try:
        with pytest.raises(RuntimeError, match="KeyError"):
            w.ask(cmd="build", threads=1, row="no such row")
        assert w.ask(cmd="build", threads=1, model="mlp", batch=4, warm=0.01)["items"] == 4
        assert w.ask(cmd="sample", min_time=0.01)["seconds"] > 0
    finally:
        w.close()
    assert w.proc.returncode == 0
