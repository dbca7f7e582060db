"""Study newcwv's summaries from synthetic rows: the gain per cell, its error, the notes beside the seed."""

from typing import Any

import matplotlib
import pytest

from expts import newcwv
from netrepro import params
from netrepro.workloads import WORKLOADS

matplotlib.use("Agg")


def row(series: str, kb: int, idles: str, ms: str, cwnd: str, retrans: str = "", flight: str = "") -> dict[str, str]:
    n = len(idles.split(";"))
    return {
        "series": series, "burst_kb": str(kb), "status": "ok", "idle_s": idles, "burst_ms": ms,
        "cwnd_resumed": cwnd, "retransmitted": retrans or ";".join(["0"] * n),
        "first_flight_ms": flight or ";".join(["0.1"] * n), "pacer_used": "none", "bulk_goodput_mbit": "1.5",
    }  # fmt: skip


ROWS = [
    row("NewReno+SACK", 5, "1;5", "400;402", "3;3"),
    row("NewReno+SACK", 5, "5;1", "404;398", "3;3"),
    row("newCWV", 5, "1;5", "200;201", "6;6"),
    row("newCWV", 5, "5;1", "202;199", "6;6"),
    row("Reno, no restart", 5, "1;5", "200;200", "8;8"),
    {"series": "newCWV", "burst_kb": "5", "status": "failed", "idle_s": "", "burst_ms": ""},
]


def test_the_gain_per_cell_is_between_mean_burst_times() -> None:
    points = newcwv.summarize_gain(newcwv.NEWCWV.label)(newcwv.FIG7, ROWS)
    cell = next(p for p in points if p.series == "newCWV, idle 1 s" and p.x == 5)
    assert cell.y == pytest.approx((399 - 199.5) / 399 * 100)
    assert cell.low < cell.y < cell.high and cell.n == 2
    kept = next(p for p in points if p.series == "Reno, no restart, all idle periods")
    assert kept.y == pytest.approx((401 - 200) / 401 * 100) and kept.n == 2


def test_a_single_burst_per_arm_has_no_error_bar() -> None:
    g = newcwv.gain([next(newcwv.bursts_of([ROWS[0]]))], [next(newcwv.bursts_of([ROWS[2]]))])
    assert g.pct == 50.0 and g.se == 0.0


def test_the_model_takes_each_bursts_own_window() -> None:
    cells = newcwv.cells(ROWS)
    base, ours = cells[("NewReno+SACK", 5, 1.0)], cells[("newCWV", 5, 1.0)]
    # 4 segments: from IW 3 two rounds, from 6 one; the wire time at 100 Mbit/s is under 1 ms
    assert newcwv.model_gain(newcwv.FIG7, base, ours) == pytest.approx(50, abs=0.5)
    assert newcwv.segments(80) == 56 and newcwv.iw_model_gain(newcwv.FIG7, 80) == pytest.approx(80, abs=1)


def test_fig7_notes_state_the_model_the_arms_and_the_verdict() -> None:
    import matplotlib.pyplot as plt

    points = newcwv.summarize_gain(newcwv.NEWCWV.label)(newcwv.FIG7, ROWS)
    _, ax = plt.subplots()
    notes = newcwv.annotate_fig7(newcwv.FIG7, points, ROWS, ax)
    plt.close("all")
    text = "\n".join(notes)
    assert "5 KB (4 segments), measured/model gain %: 1 s 50/50" in text
    assert "newCWV adds" in text


def test_fig8_verdict_checks_the_seeds_range_and_trend() -> None:
    import matplotlib.pyplot as plt

    def notes_for(small_ms: str, large_ms: str) -> str:
        rows = [
            row("NewReno+SACK", 5, "1;5", "400;400", "3;3"), row("newCWV", 5, "1;5", small_ms, "6;6"),
            row("NewReno+SACK", 80, "1;5", "1000;1000", "3;3"), row("newCWV", 80, "1;5", large_ms, "20;20"),
        ]  # fmt: skip
        points = newcwv.summarize_gain(newcwv.NEWCWV.label)(newcwv.FIG8, rows)
        _, ax = plt.subplots()
        text = "\n".join(newcwv.annotate_fig8(newcwv.FIG8, points, rows, ax))
        plt.close("all")
        return text

    # 5 KB gains 25 %, 80 KB 15 %: in the seed's 10-35 % and less for larger bursts
    assert "5 KB 25 %, 80 KB 15 % (seed: 10-35 %: agrees; less for larger bursts: agrees)" in notes_for(
        "300;300", "850;850"
    )
    # 5 KB gains 50 %, 80 KB 60 %: outside the range, and the trend reversed
    assert "(seed: 10-35 %: DIFFERS; less for larger bursts: DIFFERS)" in notes_for("200;200", "400;400")


def test_table_notes_set_each_cell_beside_the_seeds() -> None:
    import matplotlib.pyplot as plt

    rows = [
        row("NewReno+SACK", 80, "1;3", "2000;2000", "3;3", "1;1"),
        row("newCWV", 80, "1;3", "1000;2400", "14;14", "0;9"),
        row("newCWV, paced", 80, "1;3", "1500;1500", "14;14", "0;0", "160;150"),
        row("NewReno+SACK", 5, "1;3", "400;400", "3;3"),
        row("newCWV", 5, "1;3", "300;300", "5;5"),
    ]
    points = newcwv.summarize_gain(newcwv.NEWCWV.label)(newcwv.TABLE2, rows)
    _, ax = plt.subplots()
    notes = newcwv.annotate_table("table2", newcwv.NEWCWV.label)(newcwv.TABLE2, points, rows, ax)
    plt.close("all")
    text = "\n".join(notes)
    assert "80 KB, ours (seed): 1 s +50 (-10), 3 s -20 (-12)" in text
    assert "5 KB, ours (seed): 1 s +25 (+18), 3 s +25 (+18)" in text
    assert "3 of 4 cells have the seed's sign" in text
    assert "the seed's trend holds" in text
    assert "newCWV 4.5 ± 4.5 (n=2)" in text
    assert "first flight left over (median): " in text and "newCWV, paced 155 ms" in text


def test_fig11_says_whether_the_bulk_flow_moved() -> None:
    rows: list[dict[str, Any]] = [
        {"series": s, "burst_kb": "80", "status": "ok", "bulk_goodput_mbit": g}
        for s, g in [("NewReno+SACK", "1.50"), ("NewReno+SACK", "1.52"), ("newCWV", "1.49"), ("newCWV", "1.53")]
    ]
    points = newcwv.summarize_bulk(newcwv.FIG11, rows)
    assert [round(p.y, 2) for p in points] == [1.51, 1.51]
    notes = newcwv.annotate_bulk(newcwv.FIG11, points, rows, None)
    assert notes[-1].endswith("(seed: no significant difference: agrees)")


def test_the_study_declares_only_keys_its_consumers_take() -> None:
    keys = params.trial_keys(WORKLOADS["http_bursts"].keys)
    for fig in newcwv.FIGURES:
        for quick in (False, True):
            params.check_grid(fig.full_name, fig.grid(quick), keys)
    grid = newcwv.FIG7.grid(True)
    assert {p["idle_s"] for p in grid} == {"1,5"} and {p["burst_kb"] for p in grid} == {5, 80}


def test_pacing_by_tcp_needs_a_congestion_control_that_asks_for_it() -> None:
    keys = params.trial_keys(WORKLOADS["http_bursts"].keys)
    found = params.problems({"cc": "reno", "pacer": "tcp", "burst_kb": 5}, keys)
    assert any("pacer=tcp: TCP paces only where the congestion control asks" in p for p in found)
    found = params.problems({"cc": "newcwv", "pacer": "auto", "burst_kb": 5}, keys)
    assert any("without pacing=1" in p for p in found)
    assert not params.problems({"cc": "newcwv", "pacing": 1, "pacer": "auto", "burst_kb": 5}, keys)
    assert not params.problems({"cc": "reno", "pacer": "fq", "burst_kb": 5}, keys)
    found = params.problems({"cc": "reno", "idle_s": "1,x", "burst_kb": 5}, keys)
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
        {**row("newCWV", 80, "1;5", "900;910", "20;20", retrans="3;1"), "first_flight_retransmitted": "1;0"},
        {**row("newCWV, paced", 80, "1;5", "950;960", "20;20", retrans="2;2"), "first_flight_retransmitted": "0;0"},
        row("NewReno+SACK", 80, "1;5", "1300;1310", "3;3", retrans="1;0"),  # recorded before the column
    ]
    assert newcwv.first_flight_share(with_column, 80) == {"newCWV": (1, 4), "newCWV, paced": (0, 4)}
    notes = newcwv._losses_at(with_column, 80)
    assert notes[-1].endswith("newCWV 1 of 4, newCWV, paced 0 of 4"), notes


def bursts_row(series: str, retrans: list[int], flight_again: list[int], ms: int) -> dict[str, str]:
    n = len(retrans)
    return {
        **row(series, 80, ";".join(["1"] * n), ";".join([str(ms)] * n), ";".join(["12"] * n),
              retrans=";".join(map(str, retrans))),
        "first_flight_retransmitted": ";".join(map(str, flight_again)), "first_flight": ";".join(["12"] * n),
    }  # fmt: skip


def test_the_pacing_figure_judges_each_difference_against_its_standard_error() -> None:
    import matplotlib.pyplot as plt

    rows = [
        bursts_row("NewReno+SACK", [1, 2, 1, 2, 1, 2], [0] * 6, 1500),
        bursts_row("newCWV", [4, 5, 4, 5, 4, 5], [3, 4, 3, 4, 3, 4], 1200),
        bursts_row("newCWV, paced", [4, 5, 5, 4, 4, 4], [2, 3, 2, 3, 2, 3], 1000),  # fewer, within noise
    ]
    points = newcwv.summarize_losses(newcwv.PACING, rows)
    more, paced, bulk = newcwv.checks_pacing(newcwv.PACING, points, rows)
    assert bulk.holds, bulk  # every row's bulk flow got 1.5 Mbit/s
    assert more.holds and "4.50 ± 0.22 (n=6) against 1.50 ± 0.22 (n=6)" in more.evidence, more
    assert not paced.holds and paced.evidence.endswith("0.5 SE") and "not shown" in paced.note, paced
    _, ax = plt.subplots()
    notes = newcwv.annotate_pacing(newcwv.PACING, points, rows, ax)
    plt.close("all")
    assert "newCWV 21 of 72 (0.292), newCWV, paced 15 of 72 (0.208)" in notes[6], notes
    assert notes[7] == "gain of newCWV over NewReno+SACK at 80 KB: 20.0 ± 0.0 %", notes
    # the same difference, over many more bursts, is more than two standard errors
    many = [rows[1]] * 20 + [rows[2]] * 20
    paced = newcwv.checks_pacing(newcwv.PACING, newcwv.summarize_losses(newcwv.PACING, many), many)[-1]
    assert paced.holds, paced


def test_the_pacing_figure_runs_thirty_bursts_a_trial_after_a_second_of_idle_time() -> None:
    grid = newcwv.PACING.grid()
    assert {(p["idle_s"], p["repeats"], p["burst_kb"], p["bulk"]) for p in grid} == {("1", 30, 80, 1)}
    keys = params.trial_keys(WORKLOADS["http_bursts"].keys)
    assert not any(params.problems(p, keys) for p in grid)
