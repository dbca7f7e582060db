"""Study linuxcc's own tests of the seed's claims, on synthetic trials whose truth is known.

The claims compare algorithms (the figures' levels) in each flow, or in the
mean over the four flows that the seed's Figures 5 and 6 take: each trial's
values here are drawn around a known mean with a known spread (seeded), so
what each test must say is known beforehand: a lead holds where it is there
in every flow and differs where one flow turns it round, an equivalence
holds inside its margin and differs outside it, too few trials or too wide
a spread are undecided, and CUBIC "on the top" needs both of the seed's
grounds against every other algorithm.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping

import pytest

from expts import linuxcc, linuxcc_claims, linuxcc_trials
from ground.trials import Row
from netrepro.studykit import claims, decisions
from netrepro.studykit.decisions import DIFFERS, HOLDS, UNDECIDED

Means = Mapping[str, float]  # an algorithm's mean in a flow, by flow (a missing flow takes "*")


def trials(metric: str, means: Mapping[str, Means], sd: float = 0.02, n: int = 6, seed: int = 1) -> list[Row]:
    """n trials of each algorithm in each flow, `metric` drawn around its mean with a relative spread `sd`."""
    rng = random.Random(seed)
    rows = []
    for cc, by_flow in means.items():
        for flow in linuxcc_claims.FLOWS:
            mean = by_flow.get(flow, by_flow.get("*", 0.0))
            for k in range(n):
                value = mean * (1 + rng.gauss(0, sd))
                rows.append(Row({"series": flow, "cc": cc, "trial": str(k), "status": "ok", metric: repr(value)}))
    return rows


def windows(rows: list[Row]) -> list[Row]:
    """Each row's "window" value as a flat window series (its mean is the value) and drops per fall."""
    out = []
    for r in rows:
        w = max(1, round(float(r.pop("window"))))
        drops = r.pop("drops", "10")
        series = ";".join([str(w)] * 4 + [str(w // 2)])
        out.append(Row({**r, "window_step_s": "0.5", "cwnd_series": series, "bottleneck_drops": drops}))
    return out


def decide(test: decisions.Test, rows: list[Row]) -> claims.Judged:
    claim = claims.Claim(linuxcc_claims.SEED, "section 5", "a sentence of the seed", test)
    return claims.judge([claim], linuxcc.FIG5, rows)[0]


EVERYWHERE = {"*": 1.0}


def test_the_mean_over_the_four_flows_is_one_value_per_trial_index() -> None:
    rows = trials("drop_rate", {"reno": {"WrFl-1": 0.1, "WrFl-1a": 0.2, "WrFl-2": 0.3, "WrFl-2a": 0.4}}, sd=0, n=2)
    rows.append(Row(series="WrFl-1", cc="reno", trial="2", status="ok", drop_rate="0.9"))  # one flow only
    rows.append(Row(series="WrFl-2", cc="reno", trial="0", status="failed", drop_rate="5"))
    pooled = linuxcc_claims.pooled_rows(rows, linuxcc_trials.drop_rate)
    assert [(r["cc"], r["trial"], r["series"]) for r in pooled] == [
        ("reno", t, linuxcc_claims.POOLED) for t in ("0", "1")
    ]
    assert [float(r["value"]) for r in pooled] == pytest.approx([0.25, 0.25])


def test_a_lead_over_each_other_algorithm_holds_on_the_mean_over_the_flows() -> None:
    rows = trials("drop_rate", {"hybla": {"*": 0.30}, "reno": {"*": 0.01}, "cubic": {"*": 0.02}})
    judged = decide(
        linuxcc_claims.beats(linuxcc_trials.drop_rate, ("hybla",), ("reno", "cubic"), True, 0.43, pooled=True), rows
    )
    assert judged.outcome == HOLDS, judged.evidence()
    assert "hybla against reno: ratio 29.9 [29.8, 30.1], n = 6, 6: holds" in judged.evidence()
    # the other way round differs, and so does no lead at all, measured precisely
    assert (
        decide(linuxcc_claims.beats(linuxcc_trials.drop_rate, ("reno",), ("hybla",), True, 0.43, True), rows).outcome
        == DIFFERS
    )
    level = trials("drop_rate", {"hybla": {"*": 0.01}, "reno": {"*": 0.01}}, sd=0.01)
    lead = linuxcc_claims.beats(linuxcc_trials.drop_rate, ("hybla",), ("reno",), True, 0.43, pooled=True)
    assert decide(lead, level).outcome == DIFFERS  # the interval lies under 1.43: no "high as compare to"


def test_a_lead_in_each_flow_differs_where_one_flow_turns_it_round() -> None:
    means = {"vegas": {"*": 50.0, "WrFl-2": 120.0}, "cubic": {"*": 100.0}}
    rows = windows(trials("window", means))
    slow = linuxcc_claims.beats(linuxcc_trials.mean_window, ("vegas",), ("cubic",), False, 0.2, pooled=False)
    judged = decide(slow, rows)
    assert judged.outcome == DIFFERS, judged.evidence()
    by_flow = {f.at: f.outcome for f in judged.findings}
    assert by_flow == {"WrFl-1": HOLDS, "WrFl-1a": HOLDS, "WrFl-2": DIFFERS, "WrFl-2a": HOLDS}


def test_alike_is_every_pair_within_the_margin() -> None:
    rows = trials("first_10s_mbit", {"reno": EVERYWHERE, "vegas": {"*": 1.03}, "lp": {"*": 0.98}}, sd=0.01, n=10)
    same = linuxcc_claims.alike(linuxcc_trials.first_10s, ("reno", "vegas", "lp"), 0.10, pooled=True)
    judged = decide(same, rows)
    assert judged.outcome == HOLDS, judged.evidence()
    assert judged.evidence().count(": holds") == 3  # three pairs (one level: its outcome is the claim's)
    apart = trials("first_10s_mbit", {"reno": EVERYWHERE, "vegas": {"*": 1.03}, "lp": {"*": 1.5}}, sd=0.01, n=10)
    judged = decide(same, apart)
    assert judged.outcome == DIFFERS and "reno and lp" in judged.evidence()  # lp 50 % above both


def test_too_few_trials_or_too_wide_a_spread_is_undecided() -> None:
    same = linuxcc_claims.alike(linuxcc_trials.first_10s, ("reno", "vegas"), 0.10, pooled=True)
    wide = trials("first_10s_mbit", {"reno": EVERYWHERE, "vegas": EVERYWHERE}, sd=0.3, n=3)
    judged = decide(same, wide)
    assert judged.outcome == UNDECIDED and judged.trials_needed is not None and judged.trials_needed > 3
    one = trials("first_10s_mbit", {"reno": EVERYWHERE, "vegas": EVERYWHERE}, n=1)
    assert decide(same, one).outcome == UNDECIDED
    replays = trials("first_10s_mbit", {"reno": EVERYWHERE, "vegas": {"*": 2.0}}, sd=0, n=3)
    judged = decide(linuxcc_claims.beats(linuxcc_trials.first_10s, ("vegas",), ("reno",), True, 0.1, True), replays)
    assert judged.outcome == HOLDS and judged.deterministic


def top_rows(cubic_drops: float, cubic_window: float) -> list[Row]:
    """CUBIC against the other twelve, all alike Reno but Hybla: drop rates and windows (Hybla's window the largest
    and its drop rate the highest)."""
    drop_means = {cc: {"*": 0.3 if cc == "hybla" else 0.01} for cc in linuxcc_trials.ALGORITHMS} | {
        "cubic": {"*": cubic_drops}
    }
    window_means = {cc: {"*": 1500.0 if cc == "hybla" else 60.0} for cc in linuxcc_trials.ALGORITHMS}
    drops = trials("drop_rate", drop_means, seed=1)
    wins = windows(trials("window", window_means | {"cubic": {"*": cubic_window}}, seed=2))
    merged = {(r["series"], r["cc"], r["trial"]): Row(r) for r in wins}
    for r in drops:
        merged[(r["series"], r["cc"], r["trial"])]["drop_rate"] = r["drop_rate"]
    return list(merged.values())


def on_top(rows: list[Row]) -> claims.Judged:
    claim = claims.Claim(linuxcc_claims.SEED, "section 6", "a sentence of the seed", linuxcc_claims.on_top("cubic"))
    return claims.judge([claim], linuxcc.WHOLE, rows)[0]


@pytest.mark.parametrize(
    ("cubic_drops", "cubic_window", "expected"),
    [
        (0.004, 200, HOLDS),  # less loss than all, a larger window than all but Hybla: its larger one is no ground
        (0.02, 200, DIFFERS),  # twice the others' drop rate
        (0.004, 60, DIFFERS),  # the others' window, precisely: no lead on the window ground
    ],
)
def test_cubic_on_the_top_needs_both_of_the_seeds_grounds(
    cubic_drops: float, cubic_window: float, expected: str
) -> None:
    judged = on_top(top_rows(cubic_drops, cubic_window))
    assert judged.outcome == expected, judged.evidence()
    assert "window against hybla" not in judged.evidence() and "drop rate against hybla" in judged.evidence()


@pytest.mark.parametrize(
    ("series", "expected"),
    [("10;20;40;20;25;30;15;16", 2), ("10;20;40;30;20;25", 1), ("10;20;40", 0), ("50;40;30;20", 1)],
)
def test_the_falls_of_the_window_count_runs_of_falling_samples(series: str, expected: int) -> None:
    row = Row(window_step_s="0.5", cwnd_series=series, bottleneck_drops="12")
    assert linuxcc_trials.window_reductions(row) == expected
    assert linuxcc_trials.drops_per_reduction(row) == (12 / expected if expected else None)


@pytest.mark.parametrize(
    "metric", [linuxcc_trials.mean_window, linuxcc_trials.drops_per_reduction, linuxcc_trials.drop_rate]
)
def test_an_old_row_without_the_column_gives_no_value(metric: Callable[[Row], float | None]) -> None:
    assert metric(Row(series="WrFl-1", cc="reno", status="ok")) is None
