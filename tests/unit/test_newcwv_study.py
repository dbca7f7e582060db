"""Study newcwv's summaries from synthetic rows: the gain per cell, its error over trials, the notes beside the
seed (numbers and models, no verdict: the claims give it, tests/unit/test_newcwv_claims.py)."""

import csv
import shutil
from pathlib import Path

import matplotlib
import pytest

from expts import newcwv, newcwv_trials
from ground.results import REFERENCE
from ground.trials import Row
from netrepro.front import docfacts_newcwv, docrows
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit import params, trial

matplotlib.use("Agg")


def row(series: str, kb: int, idles: str, ms: str, cwnd: str, retrans: str = "", flight: str = "") -> Row:
    n = len(idles.split(";"))
    return Row({
        "series": series, "burst_kb": str(kb), "status": "ok", "idle_s": idles, "burst_ms": ms,
        "cwnd_resumed": cwnd, "retransmitted": retrans or ";".join(["0"] * n),
        "first_flight_ms": flight or ";".join(["0.1"] * n), "pacer_used": "none", "bulk_goodput_mbit": "1.5",
    })  # fmt: skip


ROWS = [
    row("NewReno+SACK", 5, "1;5", "400;402", "3;3"),
    row("NewReno+SACK", 5, "5;1", "404;398", "3;3"),
    row("newCWV", 5, "1;5", "200;201", "6;6"),
    row("newCWV", 5, "5;1", "202;199", "6;6"),
    row("Reno, no restart", 5, "1;5", "200;200", "8;8"),
    Row(series="newCWV", burst_kb="5", status="failed", idle_s="", burst_ms=""),
]


def test_the_gain_per_cell_is_between_mean_burst_times_over_trials() -> None:
    points = newcwv.summarize_gain(newcwv_trials.NEWCWV.label)(newcwv.FIG7, ROWS)
    cell = next(p for p in points if p.series == "newCWV, idle 1 s" and p.x == 5)
    assert cell.y == pytest.approx((399 - 199.5) / 399 * 100)
    assert cell.low < cell.y < cell.high and cell.n == 2
    # over all idle periods: a trial's mean burst time is its one value (one trial of Reno without the restart)
    kept = next(p for p in points if p.series == "Reno, no restart, all idle periods")
    assert kept.y == pytest.approx((401 - 200) / 401 * 100) and kept.n == 1


def test_a_single_trial_per_arm_has_no_error_bar() -> None:
    g = newcwv_trials.gain([400.0], [200.0])
    assert g.pct == 50.0 and g.se == 0.0


def test_a_trials_bursts_make_one_value() -> None:
    r = row("newCWV", 80, "1;1;5", "100;300;500", "6;6;6", retrans="0;3;3")
    assert newcwv_trials.trial_burst_ms(r) == 300 and newcwv_trials.trial_retransmitted(r) == 2
    assert newcwv_trials.burst_ms_by_idle(r) == {1.0: 200, 5.0: 500}
    assert newcwv_trials.trial_burst_ms(Row(burst_ms="")) is None and newcwv_trials.burst_ms_by_idle(Row()) == {}


def test_the_model_takes_each_bursts_own_window() -> None:
    cells = newcwv_trials.cells(ROWS)
    base, ours = cells[("NewReno+SACK", 5, 1.0)], cells[("newCWV", 5, 1.0)]
    # 4 segments: from IW 3 two rounds, from 6 one; the wire time at 100 Mbit/s is under 1 ms
    assert newcwv.model_gain(newcwv.FIG7, base, ours) == pytest.approx(50, abs=0.5)
    assert newcwv_trials.segments(80) == 56 and newcwv.iw_model_gain(newcwv.FIG7, 80) == pytest.approx(80, abs=1)


def test_fig7_notes_state_the_model_and_the_arms_and_no_verdict() -> None:
    import matplotlib.pyplot as plt

    points = newcwv.summarize_gain(newcwv_trials.NEWCWV.label)(newcwv.FIG7, ROWS)
    _, ax = plt.subplots()
    notes = newcwv.annotate_fig7(newcwv.FIG7, points, ROWS, ax)
    plt.close("all")
    text = "\n".join(notes)
    assert "5 KB (4 segments), measured/model gain %: 1 s 50/50" in text
    assert "newCWV adds" in text
    assert not any(word in text for word in ("agrees", "DIFFERS", "holds", "seed:"))


def test_fig8_notes_give_the_gain_per_burst_size_without_a_verdict() -> None:
    import matplotlib.pyplot as plt

    rows = [
        row("NewReno+SACK", 5, "1;5", "400;400", "3;3"), row("newCWV", 5, "1;5", "300;300", "6;6"),
        row("NewReno+SACK", 80, "1;5", "1000;1000", "3;3"), row("newCWV", 80, "1;5", "850;850", "20;20"),
    ]  # fmt: skip
    points = newcwv.summarize_gain(newcwv_trials.NEWCWV.label)(newcwv.FIG8, rows)
    _, ax = plt.subplots()
    notes = newcwv.annotate_fig8(newcwv.FIG8, points, rows, ax)
    plt.close("all")
    assert notes == ["newCWV's gain, mean over idle periods: 5 KB 25 %, 80 KB 15 %"]


def test_table_notes_set_each_cell_beside_the_seeds() -> None:
    import matplotlib.pyplot as plt

    rows = [
        row("NewReno+SACK", 80, "1;3", "2000;2000", "3;3", "1;1"),
        row("newCWV", 80, "1;3", "1000;2400", "14;14", "0;9"),
        row("newCWV, paced", 80, "1;3", "1500;1500", "14;14", "0;0", "160;150"),
        row("NewReno+SACK", 5, "1;3", "400;400", "3;3"),
        row("newCWV", 5, "1;3", "300;300", "5;5"),
    ]
    points = newcwv.summarize_gain(newcwv_trials.NEWCWV.label)(newcwv.TABLE2, rows)
    _, ax = plt.subplots()
    notes = newcwv.annotate_table("table2", newcwv_trials.NEWCWV.label)(newcwv.TABLE2, points, rows, ax)
    plt.close("all")
    text = "\n".join(notes)
    assert "80 KB, ours (seed): 1 s +50 (-10), 3 s -20 (-12)" in text
    assert "5 KB, ours (seed): 1 s +25 (+18), 3 s +25 (+18)" in text
    assert "ours less the seed's, over 4 cells: mean +16.6 points, largest +60.2" in text
    assert "newCWV 4.5 ± 0.0 (n=1)" in text  # a trial's retransmitted segments per burst: one value
    assert "seed's sign" not in text and "holds" not in text
    assert "first flight left over (median): " in text and "newCWV, paced 155 ms" in text


def test_fig11_gives_the_bulk_flows_goodput_beside_each_arm() -> None:
    rows = [
        Row(series=s, burst_kb="80", status="ok", bulk_goodput_mbit=g)
        for s, g in [("NewReno+SACK", "1.50"), ("NewReno+SACK", "1.52"), ("newCWV", "1.49"), ("newCWV", "1.53")]
    ]
    points = newcwv.summarize_bulk(newcwv.FIG11, rows)
    assert [round(p.y, 2) for p in points] == [1.51, 1.51]
    notes = newcwv.annotate_bulk(newcwv.FIG11, points, rows, None)
    assert notes == [
        "bulk flow's goodput beside NewReno+SACK: 1.510 ± 0.010 Mbit/s over 2 trials",
        "bulk flow's goodput beside newCWV: 1.510 ± 0.020 Mbit/s over 2 trials",
    ]


def test_the_study_declares_only_keys_its_consumers_take() -> None:
    keys = params.trial_keys(WORKLOADS["http_bursts"].keys)
    for fig in newcwv.FIGURES:
        for quick in (False, True):
            trial.check_grid(fig.full_name, fig.grid(quick), keys)
    grid = newcwv.FIG7.grid(True)
    assert {p["idle_s"] for p in grid} == {"1,5"} and {p["burst_kb"] for p in grid} == {5, 80}


def test_pacing_by_tcp_needs_a_congestion_control_that_asks_for_it() -> None:
    keys = params.trial_keys(WORKLOADS["http_bursts"].keys)
    found = trial.problems({"cc": "reno", "pacer": "tcp", "burst_kb": 5}, keys)
    assert any("pacer=tcp: TCP paces only where the congestion control asks" in p for p in found)
    found = trial.problems({"cc": "newcwv", "pacer": "auto", "burst_kb": 5}, keys)
    assert any("without pacing=1" in p for p in found)
    assert not trial.problems({"cc": "newcwv", "pacing": 1, "pacer": "auto", "burst_kb": 5}, keys)
    assert not trial.problems({"cc": "reno", "pacer": "fq", "burst_kb": 5}, keys)
    found = trial.problems({"cc": "reno", "idle_s": "1,x", "burst_kb": 5}, keys)
    assert any("idle periods in seconds separated by commas" in p for p in found)


@pytest.mark.parametrize(("typed", "normal"), [("1", "1"), ("1, 3.0,15", "1,3,15"), ("0.5", "0.5")])
def test_idle_periods_typed_on_the_command_line_are_taken(typed: str, normal: str) -> None:
    """`--set idle_s=1` once failed with "not '[1.0]'": the key's parser returned a list."""
    (key,) = [k for k in WORKLOADS["http_bursts"].keys if k.name == "idle_s"]
    assert key.parse(typed) == normal


def test_idle_periods_out_of_range_are_refused_by_name() -> None:
    (key,) = [k for k in WORKLOADS["http_bursts"].keys if k.name == "idle_s"]
    with pytest.raises(ValueError, match="from 0.5 to 600 s, not '0.1'"):
        key.parse("0.1")


def test_the_losses_of_the_first_flight_are_counted_apart() -> None:
    with_column = [
        Row({**row("newCWV", 80, "1;5", "900;910", "20;20", retrans="3;1"), "first_flight_retransmitted": "1;0"}),
        Row(
            {**row("newCWV, paced", 80, "1;5", "950;960", "20;20", retrans="2;2"), "first_flight_retransmitted": "0;0"}
        ),
        row("NewReno+SACK", 80, "1;5", "1300;1310", "3;3", retrans="1;0"),  # recorded before the column
    ]
    assert newcwv.first_flight_share(with_column, 80) == {"newCWV": (1, 4), "newCWV, paced": (0, 4)}
    notes = newcwv._losses_at(with_column, 80)
    assert notes[-1].endswith("newCWV 1 of 4, newCWV, paced 0 of 4"), notes


def bursts_row(series: str, retrans: list[int], flight_again: list[int], ms: int) -> Row:
    n = len(retrans)
    return Row({
        **row(series, 80, ";".join(["1"] * n), ";".join([str(ms)] * n), ";".join(["12"] * n),
              retrans=";".join(map(str, retrans))),
        "first_flight_retransmitted": ";".join(map(str, flight_again)), "first_flight": ";".join(["12"] * n),
    })  # fmt: skip


def test_the_pacing_figure_plots_and_notes_one_value_per_trial() -> None:
    import matplotlib.pyplot as plt

    rows = [
        bursts_row("NewReno+SACK", [1, 2, 1, 2, 1, 2], [0] * 6, 1500),
        bursts_row("NewReno+SACK", [1, 1, 1, 1, 1, 1], [0] * 6, 1400),
        bursts_row("newCWV", [4, 5, 4, 5, 4, 5], [3, 4, 3, 4, 3, 4], 1200),
        bursts_row("newCWV, paced", [4, 5, 5, 4, 4, 4], [2, 3, 2, 3, 2, 3], 1000),
    ]
    points = newcwv.summarize_losses(newcwv.PACING, rows)
    base = next(p for p in points if p.series == "NewReno+SACK")
    assert base.y == pytest.approx(1.25) and base.n == 2 and base.high - base.y == pytest.approx(0.25)
    _, ax = plt.subplots()
    notes = newcwv.annotate_pacing(newcwv.PACING, points, rows, ax)
    plt.close("all")
    assert notes[0] == "bulk flow's goodput beside NewReno+SACK: 1.500 ± 0.000 Mbit/s over 2 trials", notes
    assert "newCWV 21 of 72 (0.292), newCWV, paced 15 of 72 (0.208)" in notes[3], notes
    assert notes[4] == "gain of newCWV over NewReno+SACK at 80 KB (over trials): 17.2 ± 2.9 %", notes


def test_the_pacing_figure_runs_thirty_bursts_a_trial_after_a_second_of_idle_time() -> None:
    grid = newcwv.PACING.grid()
    assert {(p["idle_s"], p["repeats"], p["burst_kb"], p["bulk"]) for p in grid} == {("1", 30, 80, 1)}
    keys = params.trial_keys(WORKLOADS["http_bursts"].keys)
    assert not any(trial.problems(p, keys) for p in grid)


def test_the_pages_numbers_follow_the_stored_rows(tmp_path: Path) -> None:
    """docs/studies/newcwv.md's numbers are facts of the stored rows: one more segment sent again in a stored
    fig8 trial of newCWV moves fig9's loss count on the page."""
    tree = tmp_path / "reference"
    shutil.copytree(REFERENCE / "newcwv", tree / "newcwv", ignore=shutil.ignore_patterns("*.png", "*.svg", "logs"))
    before = docfacts_newcwv.newcwv_facts(docrows.Stored(tree))
    path = tree / "newcwv" / "fig8.csv"
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    row = next(r for r in rows if r["series"] == "newCWV" and r["burst_kb"] == "5" and r["status"] == "ok")
    first, *rest = row["retransmitted"].split(";")
    row["retransmitted"] = ";".join([str(int(first) + 1), *rest])
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    after = docfacts_newcwv.newcwv_facts(docrows.Stored(tree))
    assert before["newcwv.fig9.lost"].startswith("NewReno+SACK 0, newCWV 35,")
    assert after["newcwv.fig9.lost"].startswith("NewReno+SACK 0, newCWV 36,")
    assert after["newcwv.fig8.lost_small"] == "1" and before["newcwv.fig8.lost_small"] == "0"
