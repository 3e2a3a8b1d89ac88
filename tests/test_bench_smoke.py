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


def test_ab_alternates_b_settings_and_puts_them_back(capsys):
    """bench/ab.py: B's samples run with the setting, A's without, in ABBA order; it is put back afterwards (also
    after an error); a bad setting is refused before anything runs."""
    from bench import ab
    from ember._backend import parallel
    before = parallel.ROW_WEIGHT
    order = []

    def step():
        order.append(parallel.ROW_WEIGHT)
    samples = ab.run(step, ab.Settings(["ember._backend.parallel.ROW_WEIGHT=7"]), rounds=2, idle=0, min_time=0.001)
    assert parallel.ROW_WEIGHT == before and len(samples["A"]) == len(samples["B"]) == 2
    runs = [v for i, v in enumerate(order) if i == 0 or order[i - 1] != v]  # the values in the order they ran
    assert runs == [before, 7, before]  # round 0: A then B; round 1: B then A

    def failing():
        raise KeyError("step failed")
    with pytest.raises(KeyError):
        ab.run(failing, ab.Settings(["ember._backend.parallel.ROW_WEIGHT=7"]), rounds=1, idle=0, min_time=0.001)
    assert parallel.ROW_WEIGHT == before
    with pytest.raises(ValueError, match="MODULE.ATTRIBUTE=VALUE"):
        ab.Settings(["ROW_WEIGHT"])
    with pytest.raises(AttributeError, match="no attribute 'NO_SUCH'"):
        ab.Settings(["ember._backend.parallel.NO_SUCH=1"])
    assert ab.parse_setting("ember._backend.jit.ENABLED=False") == ("ember._backend.jit", "ENABLED", False)
    threads = ember.get_num_threads()
    try:
        ab.main(["TINY ADD (NO", "--set", "ember._backend.parallel.ROW_WEIGHT=0", "--rounds", "2", "--idle", "0",
                 "--min-time", "0.01", "--threads", "1"])
    finally:
        ember.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "tiny add (no grad)" in out and "B faster in" in out and parallel.ROW_WEIGHT == before
