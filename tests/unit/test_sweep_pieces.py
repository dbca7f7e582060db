"""The sweep runner's pure parts: grids, the trial log, summaries, figure names."""

import json
from pathlib import Path

import pytest

import expts
from expts import iw
from ground.cwnd import slow_start_rounds
from ground.trials import Row, TrialLog, read_rows, trial_key
from ground.units import numeric
from netrepro.runner.manifest import earlier_verifications, figure_manifest
from netrepro.runner.sweep import Options
from netrepro.studykit.plot import quartiles, summarize
from netrepro.studykit.spec import Figure, Series


def test_slow_start_model_of_studies_md() -> None:
    assert iw.segments() == 26  # 37,000 bytes and Apache's headers
    assert [slow_start_rounds(w, 26) for w in (3, 6, 10, 16, 26, 42)] == [4, 3, 2, 2, 1, 1]
    # IW 26 at 3 Mbit/s and 100 ms: handshake + one round + the wire bytes at the bottleneck
    wire = 37_297 + 26 * 66
    assert iw.model_ms(26, 100, 3e6) == pytest.approx(200 + wire * 8 / 3e6 * 1e3)
    assert iw.model_ms(3, 100, 3e6) - iw.model_ms(26, 100, 3e6) == pytest.approx(300)


def test_reference_values_are_read_from_the_csv() -> None:
    ref = dict(iw.reference_fig2())
    assert ref[3] == 490 and min(ref, key=lambda w: ref[w]) == 16


def test_grid_series_and_overrides() -> None:
    grid = iw.FIG5A.grid(quick=True, overrides={"rate": "2mbit"})
    assert len(grid) == 3 * 3
    assert {p["initcwnd"] for p in grid} == {3, 10, 26}
    assert all(p["rate"] == "2mbit" for p in grid)
    assert iw.FIG5C.fixed["rtt"] == "1000ms" and iw.FIG5B.fixed["rtt"] == "100ms"
    assert iw.FIG2.trial_count(quick=True) == 3 and iw.FIG2.trial_count(trials=7) == 7


def test_figure_names() -> None:
    assert expts.find("fig2") is iw.FIG2
    assert expts.find("iw/fig5c") is iw.FIG5C
    with pytest.raises(expts.UnknownFigure, match="run.sh list"):
        expts.find("fig99")


def test_ambiguous_bare_name_lists_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    other = Figure(
        study="other", name="fig2", title="t", workload="download", x="initcwnd", levels=(1,), y="y", fixed={}
    )
    monkeypatch.setattr(expts, "all_figures", lambda: [iw.FIG2, other])
    with pytest.raises(expts.UnknownFigure, match="iw/fig2, other/fig2"):
        expts.find("fig2")


def test_trial_log_appends_widens_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "fig.csv"
    log = TrialLog(path)
    log.append({"trial_key": trial_key({"a": 1}, 0), "a": 1, "status": "failed"})
    log.append({"trial_key": trial_key({"a": 1}, 1), "a": 1, "status": "ok", "download_time_ms": 3.5})
    rows = read_rows(path)
    assert [r["status"] for r in rows] == ["failed", "ok"]
    assert rows[0]["download_time_ms"] == "" and rows[1]["download_time_ms"] == "3.5"
    again = TrialLog(path)
    assert again.done() == {trial_key({"a": 1}, 1)}  # the failed trial runs again
    assert again.done(retry_failed=False) == {trial_key({"a": 1}, 0), trial_key({"a": 1}, 1)}
    assert TrialLog(path, fresh=True).done() == set()


def test_trial_key_ignores_order() -> None:
    assert trial_key({"a": 1, "b": "x"}, 2) == trial_key({"b": "x", "a": 1}, 2)
    assert trial_key({"a": 1}, 0) != trial_key({"a": 1}, 1)


def test_default_summary_is_median_and_iqr_counting_failures() -> None:
    fig = Figure(study="s", name="f", title="t", workload="download", x="w", levels=(1, 2), y="t_ms", fixed={},
                 series=(Series("a"),))  # fmt: skip
    rows = [Row(series="a", w="1", status="ok", t_ms=str(v)) for v in (10, 20, 30, 40)]
    rows += [Row(series="a", w="2", status="timeout", t_ms="")]
    points = summarize(fig, rows)
    assert (points[0].y, points[0].n, points[0].failed) == (25.0, 4, 0)
    assert points[0].low == pytest.approx(17.5) and points[0].high == pytest.approx(32.5)
    assert points[1].n == 0 and points[1].failed == 1
    assert quartiles([5.0]) == (5.0, 5.0, 5.0)


def test_fig5_improvements_pair_trials() -> None:
    rows = []
    for trial, (base, target) in enumerate([(500.0, 300.0), (520.0, 310.0)]):
        rows.append(Row(series="IW 3", rtt="100ms", trial=str(trial), status="ok", download_time_ms=str(base)))
        rows.append(Row(series="IW 26", rtt="100ms", trial=str(trial), status="ok", download_time_ms=str(target)))
    points = iw.summarize_fig5(iw.FIG5A, rows)
    assert len(points) == 1 and points[0].series == "IW 3 -> 26"
    assert points[0].y == pytest.approx((40 + 210 / 520 * 100) / 2)


def test_numeric_levels() -> None:
    assert numeric("100ms") == 100 and numeric("56kbit") == pytest.approx(0.056) and numeric(26) == 26


def test_a_figure_sharing_trials_has_the_same_grid() -> None:
    """`trials_of` shares a CSV, so both figures must ask for exactly the same trials."""
    sharing = [f for f in expts.all_figures() if f.trials_of]
    assert sharing  # cubicplus fig6 plots fig3's page loads
    for fig in sharing:
        owner = expts.find(f"{fig.study}/{fig.trials_of}")
        assert fig.csv_name == owner.csv_name
        for quick in (False, True):
            keys = {trial_key(p, i) for p in fig.grid(quick) for i in range(fig.trial_count(quick))}
            owned = {trial_key(p, i) for p in owner.grid(quick) for i in range(owner.trial_count(quick))}
            assert keys == owned, (fig.full_name, quick)


def test_a_resumed_figure_keeps_the_earlier_runs_verification(tmp_path: Path) -> None:
    manifest = tmp_path / "fig.manifest.json"
    assert earlier_verifications(manifest, fresh=False) == {}
    manifest.write_text(json.dumps({"verification": {"rtt 20 ms": {"ok": True}}}))
    assert earlier_verifications(manifest, fresh=False) == {"rtt 20 ms": {"ok": True}}
    assert earlier_verifications(manifest, fresh=True) == {}
    manifest.write_text("{not json")
    assert earlier_verifications(manifest, fresh=False) == {}


def test_the_manifest_says_what_its_rows_ran_on() -> None:
    """Code, shaper, CC and loss repeatability come from the rows, not from the run that wrote the manifest."""
    fig = expts.find("cubicplus/fig3")
    grid = fig.grid(quick=True)
    rows = [
        Row(code="10854c6", backend="delayline", loss_seeded="true", cc="cubic", cc_impl="builtin", status="ok",
            trial_seconds="2.5"),
        Row(backend="netem", loss_seeded="false", cc="cubic_plus", cc_impl="bpf", status="timeout",
            trial_seconds="60"),
    ]  # fmt: skip
    doc = figure_manifest(fig, Options(quick=True), grid, 2, 0, rows, {"rtt 20 ms": {"ok": True}}, [], ["a note"])
    assert doc["code_of_rows"] == ["10854c6", "unrecorded"]
    assert doc["shaper"] == ["delayline", "netem"] and doc["loss_repeatable"] is False
    assert doc["congestion_control"] == ["cubic (builtin)", "cubic_plus (bpf)"]
    assert doc["rows"] == 2 and doc["failed_trials"] == 1 and doc["trial_seconds_all_rows"] == 62.5
    assert doc["factor"]["levels"] == [str(p[fig.x]) for p in grid[:: len(fig.series)]]
    assert doc["verification"] == {"rtt 20 ms": {"ok": True}} and doc["git"]
    assert doc["notes"] == ["a note"] and doc["points"] == []
    assert figure_manifest(fig, Options(quick=True), grid, 2, 0, rows[:1], {}, [], [])["loss_repeatable"] is True
