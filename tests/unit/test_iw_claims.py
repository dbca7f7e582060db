"""Study iw's claims, on synthetic trials whose truth is known, and on the stored reference rows.

Figure 2's x is the initial window, so its claims compare levels of the x
factor (`decisions.Regrouped`); figure 5b's compare a gain with the numbers seed 001
states (`decisions.Within`); figure 2's "little to no benefit in going to 42"
is set by the design on the declared path and tested on a derived one.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import expts
from expts import iw
from ground.results import REFERENCE
from ground.trials import Row, latest_rows, read_rows
from netrepro.studykit import cells, claims, decisions
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import BY_DESIGN, DIFFERS, HOLDS, UNDECIDED, Better, Same
from netrepro.studykit.spec import Figure


def download(level_key: str, level: Any, mean: float, sd: float, n: int, seed: int, series: str = "") -> list[Row]:
    rng = random.Random(seed)
    return [
        Row({"series": series, level_key: str(level), "status": "ok", "download_time_ms": str(rng.gauss(mean, sd))})
        for _ in range(n)
    ]


def judged(test: decisions.Test, fig: Figure, rows: list[Row]) -> claims.Judged:
    return claims.judge([Claim("x.txt", "here", "a sentence here", test)], fig, rows)[0]


# -- levels of the x factor compared as groups --------------------------------------------------------


def faster_than_3(w: int, worth: float) -> decisions.Test:
    better = Better("download_time_ms", iw.initcwnd(w), iw.initcwnd(3), higher=False, worth=worth)
    return decisions.Regrouped(better, f"IW 3 -> {w}")


def test_a_faster_initial_window_beats_iw_3_across_the_levels_of_the_x_factor() -> None:
    rows = download("initcwnd", 3, 513, 5, 10, 1) + download("initcwnd", 10, 357, 5, 10, 2)
    found = judged(faster_than_3(10, 0.10), iw.FIG2, rows)
    assert found.outcome == HOLDS
    assert found.findings[0].at == "IW 3 -> 10" and "n = 10, 10" in found.evidence()


def test_no_gain_measured_precisely_differs_and_so_does_a_loss() -> None:
    same = download("initcwnd", 3, 513, 2, 10, 1) + download("initcwnd", 10, 513, 2, 10, 2)
    assert judged(faster_than_3(10, 0.10), iw.FIG2, same).outcome == DIFFERS
    slower = download("initcwnd", 3, 513, 2, 10, 1) + download("initcwnd", 10, 600, 2, 10, 2)
    assert judged(faster_than_3(10, 0.10), iw.FIG2, slower).outcome == DIFFERS


def test_other_levels_and_failed_trials_are_left_out_of_the_groups() -> None:
    rows = download("initcwnd", 3, 513, 5, 10, 1) + download("initcwnd", 10, 357, 5, 10, 2)
    noise = download("initcwnd", 26, 10, 5, 10, 3) + [
        Row({**r, "status": "failed"}) for r in download("initcwnd", 10, 9e9, 1, 5, 4)
    ]
    assert "n = 10, 10" in judged(faster_than_3(10, 0.10), iw.FIG2, rows + noise).evidence()


def test_regrouped_replays_and_missing_levels_are_undecided() -> None:
    replays = [
        Row(series="", initcwnd=w, status="ok", download_time_ms=v) for w, v in (("3", "513"), ("10", "357"))
    ] * 3
    replayed = judged(faster_than_3(10, 0.10), iw.FIG2, replays)
    assert replayed.outcome == HOLDS and replayed.deterministic  # read by its estimate, no test run
    assert judged(faster_than_3(10, 0.10), iw.FIG2, download("initcwnd", 3, 513, 5, 10, 1)).outcome == UNDECIDED


def test_regrouped_with_another_x_runs_the_test_over_that_parameter() -> None:
    """A trend over n at one loss: n as the levels, the loss a row filter."""
    fig = expts.find("spdy/backoff")
    rows = []
    for n in range(1, 7):
        for r in download("loss", "0.1%", 40 + 10 * n, 1, 5, n, series=f"n={n}"):
            rows.append(Row({**r, "n": str(n), "throughput_mbit": r["download_time_ms"]}))
    rising = decisions.Trend("throughput_mbit", cells.Group(where={"loss": "0.1%"}), rises=True)
    found = judged(decisions.Regrouped(rising, "0.1%, over n", "n", (1, 2, 3, 4, 5, 6)), fig, rows)
    assert found.outcome == HOLDS and found.findings[0].at == "0.1%, over n"
    falling = decisions.Trend("throughput_mbit", cells.Group(where={"loss": "0.1%"}), rises=False)
    assert judged(decisions.Regrouped(falling, "x", "n", (1, 2, 3, 4, 5, 6)), fig, rows).outcome == DIFFERS


# -- a ratio against a number the source states ------------------------------------------------------


def fig5b_rows(ratio: float, sd: float, n: int = 10) -> list[Row]:
    top = iw.FIG5B.levels[-1]
    return download("rate", top, 500, sd, n, 1, "IW 3") + download("rate", top, 500 * ratio, sd, n, 2, "IW 26")


ALMOST_40 = decisions.Within("download_time_ms", "IW 26", "IW 3", 0.55, 0.65, levels=iw.RATES[-1:])


def test_a_ratio_inside_the_band_holds_outside_differs_and_a_wide_spread_is_undecided() -> None:
    assert judged(ALMOST_40, iw.FIG5B, fig5b_rows(0.60, 3)).outcome == HOLDS
    assert judged(ALMOST_40, iw.FIG5B, fig5b_rows(0.51, 3)).outcome == DIFFERS  # a 49 % gain
    wide = judged(ALMOST_40, iw.FIG5B, fig5b_rows(0.60, 150, n=3))
    assert wide.outcome == UNDECIDED and wide.trials_needed is not None and wide.trials_needed > 3


def test_the_band_is_read_at_the_highest_level_only() -> None:
    low = download("rate", "56kbit", 500, 3, 10, 5, "IW 3") + download("rate", "56kbit", 500, 3, 10, 6, "IW 26")
    found = judged(ALMOST_40, iw.FIG5B, fig5b_rows(0.60, 3) + low)
    assert [f.at for f in found.findings] == ["5mbit"] and found.outcome == HOLDS


def test_an_open_band_is_one_sided() -> None:
    above_25 = decisions.Within("download_time_ms", "IW 26", "IW 3", high=0.75, levels=iw.RATES[-1:])
    assert judged(above_25, iw.FIG5B, fig5b_rows(0.51, 3)).outcome == HOLDS
    assert judged(above_25, iw.FIG5B, fig5b_rows(0.95, 3)).outcome == DIFFERS


def test_a_ratio_with_too_few_or_replayed_trials_is_undecided() -> None:
    assert judged(ALMOST_40, iw.FIG5B, fig5b_rows(0.6, 3, n=1)).outcome == UNDECIDED
    top = iw.FIG5B.levels[-1]
    replays = [
        Row(series=s, rate=str(top), status="ok", download_time_ms=v) for s, v in (("IW 3", "500"), ("IW 26", "300"))
    ] * 3
    found = judged(ALMOST_40, iw.FIG5B, replays)
    assert found.outcome == HOLDS and found.deterministic and "deterministic" in found.evidence()


def test_fig5s_gain_rises_over_all_levels() -> None:
    rows = []
    for i, level in enumerate(iw.FIG5A.levels):
        rows += download("rtt", level, 500 * (1 + 0.2 * i), 3, 6, 2 * i, "IW 3")
        rows += download("rtt", level, 500, 3, 6, 2 * i + 1, "IW 26")
    assert judged(iw.gain_rises("26"), iw.FIG5A, rows).outcome == HOLDS
    flat = [r for r in rows if r["series"] == "IW 26"] + [
        Row({**r, "series": "IW 3"}) for r in rows if r["series"] == "IW 26"
    ]
    assert judged(iw.gain_rises("26"), iw.FIG5A, flat).outcome in (UNDECIDED, DIFFERS)


# -- set by design on the declared path, tested on a derived one ---------------------------------------


def little_to_no_benefit(fig: Figure = iw.FIG2) -> claims.Claim:
    (claim,) = [c for c in fig.claims if "going to 42" in c.quote]
    return claim


def test_iw_26_against_42_is_set_by_design_on_the_declared_path() -> None:
    claim = little_to_no_benefit()
    assert iw.first_flight_holds_the_response(iw.FIG2)
    assert claims.judge([claim], iw.FIG2, [])[0].outcome == BY_DESIGN
    assert claims.verdict(claims.judge([claim], iw.FIG2, []))["verdict"] == "unjudged"


@pytest.mark.parametrize("overrides", [{"loss": "1%"}, {"object_bytes": "55000"}, {"queue": "10p"}])
def test_a_derived_figure_that_lets_it_fail_tests_it(overrides: dict[str, str]) -> None:
    fig = iw.FIG2.derive(overrides)
    assert not iw.first_flight_holds_the_response(fig)
    claim = little_to_no_benefit(fig)
    assert not isinstance(claim.test, decisions.ByDesign)
    alike = download("initcwnd", 26, 400, 3, 10, 1) + download("initcwnd", 42, 402, 3, 10, 2)
    apart = download("initcwnd", 26, 400, 3, 10, 1) + download("initcwnd", 42, 300, 3, 10, 2)
    assert claims.judge([claim], fig, alike)[0].outcome == HOLDS
    assert claims.judge([claim], fig, apart)[0].outcome == DIFFERS


def test_a_derived_figure_that_cannot_let_it_fail_keeps_it_by_design() -> None:
    fig = iw.FIG2.derive({"rtt": "50ms", "rate": "10mbit"})
    assert iw.first_flight_holds_the_response(fig)
    assert claims.judge([little_to_no_benefit(fig)], fig, [])[0].outcome == BY_DESIGN
    assert iw.segments(55000) == 39 and iw.segments() == 26


# -- the declared claims on the stored rows (test_verdicts.py judges every figure's on none and on a quick run's)


def stored(fig: Figure) -> list[Row]:
    path = REFERENCE / fig.directory / fig.csv_name
    return latest_rows(read_rows(path)) if path.exists() else []


def test_the_stored_fig2_is_judged_with_its_design_apart() -> None:
    judged_ = claims.judge(iw.FIG2.claims, iw.FIG2, stored(iw.FIG2))
    assert [j.outcome for j in judged_][2] == BY_DESIGN
    assert claims.verdict(judged_)["counts"][BY_DESIGN] == 1


def test_same_across_levels_is_an_equivalence() -> None:
    alike = decisions.Regrouped(Same("download_time_ms", (iw.initcwnd(26), iw.initcwnd(42)), margin=0.05), "26 -> 42")
    rows = download("initcwnd", 26, 297, 1, 10, 1) + download("initcwnd", 42, 298, 1, 10, 2)
    assert judged(alike, iw.FIG2, rows).outcome == HOLDS
