"""The kinds of test a claim can have, on synthetic trials whose truth is known.

Each series' trials are drawn from a normal distribution with a known mean
and spread (seeded), so that what each test must say is known beforehand:
an equivalence holds inside its margin and fails outside it, a difference
holds only in its direction, a spread too wide for the trials is undecided
and names the trials that would decide it, and a claim set by design is
shown and not counted.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from netrepro.studykit import claims, decisions, intervals
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import BY_DESIGN, DIFFERS, HOLDS, UNDECIDED, Better, ByDesign, Same, Trend
from netrepro.studykit.spec import Figure, Series


def figure(levels: tuple[Any, ...] = ("1%",)) -> Figure:
    return Figure(study="t", name="f", title="t", workload="bulk", x="loss", levels=levels, y="plt_ms",
                  fixed={}, series=(Series("A"), Series("B")))  # fmt: skip


def trials(series: str, level: str, mean: float, sd: float, n: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [{"series": series, "loss": level, "status": "ok", "plt_ms": str(rng.gauss(mean, sd))} for _ in range(n)]


def claim(test: decisions.Test) -> Claim:
    return Claim("000_x.txt", "section 1", "a sentence", test)


def outcome(test: decisions.Test, rows: list[dict[str, str]], levels: tuple[Any, ...] = ("1%",)) -> claims.Judged:
    return claims.judge([claim(test)], figure(levels), rows)[0]


SAME = Same("plt_ms", ("A", "B"), margin=0.10)


def test_equivalence_holds_inside_its_margin() -> None:
    rows = trials("A", "1%", 1000, 20, 20, 1) + trials("B", "1%", 1030, 20, 20, 2)  # 3 % apart, margin 10 %
    assert outcome(SAME, rows).outcome == HOLDS


def test_equivalence_fails_outside_its_margin() -> None:
    rows = trials("A", "1%", 1000, 20, 20, 1) + trials("B", "1%", 1300, 20, 20, 2)  # 30 % apart
    assert outcome(SAME, rows).outcome == DIFFERS


def test_equivalence_of_identical_means_with_a_wide_spread_is_undecided_and_names_the_trials() -> None:
    rows = trials("A", "1%", 1000, 150, 3, 1) + trials("B", "1%", 1000, 150, 3, 2)
    judged = outcome(SAME, rows)
    assert judged.outcome == UNDECIDED
    assert judged.trials_needed is not None and judged.trials_needed > 3


LOWER = Better("plt_ms", winner="B", loser="A", higher=False, worth=0.05)


def test_a_one_sided_difference_holds_only_in_its_direction() -> None:
    faster = trials("A", "1%", 1000, 30, 10, 1) + trials("B", "1%", 700, 30, 10, 2)
    slower = trials("A", "1%", 1000, 30, 10, 1) + trials("B", "1%", 1300, 30, 10, 2)
    assert outcome(LOWER, faster).outcome == HOLDS
    assert outcome(LOWER, slower).outcome == DIFFERS
    # the same data, the claim turned round
    assert outcome(Better("plt_ms", winner="B", loser="A", higher=True), slower).outcome == HOLDS


def test_no_effect_measured_precisely_differs_from_a_claimed_effect() -> None:
    rows = trials("A", "1%", 1000, 5, 20, 1) + trials("B", "1%", 1000, 5, 20, 2)
    assert outcome(LOWER, rows).outcome == DIFFERS  # the interval lies inside +-5 %: no effect worth the word


def spread_rows(series: str, mean: float, times: int) -> list[dict[str, str]]:
    """Trials at mean - 200, mean, mean + 200, `times` over: the same mean and nearly the same spread at any n."""
    values = [mean - 200, mean, mean + 200] * times
    return [{"series": series, "loss": "1%", "status": "ok", "plt_ms": str(v)} for v in values]


def test_a_difference_within_noise_at_small_n_is_undecided_with_the_trials_that_would_decide_it() -> None:
    judged = outcome(LOWER, spread_rows("A", 1000, 1) + spread_rows("B", 800, 1))
    assert judged.outcome == UNDECIDED
    needed = judged.trials_needed
    assert needed is not None and 3 < needed < 100
    # with that many trials at the spread measured, the interval decides: the claim holds
    times = -(-needed // 3)
    assert outcome(LOWER, spread_rows("A", 1000, times) + spread_rows("B", 800, times)).outcome == HOLDS
    # and the estimate is not generous: a third of them do not
    few = max(1, times // 3)
    assert outcome(LOWER, spread_rows("A", 1000, few) + spread_rows("B", 800, few)).outcome == UNDECIDED


def test_replayed_trials_decide_nothing() -> None:
    rows = [{"series": s, "loss": "1%", "status": "ok", "plt_ms": v} for s, v in (("A", "1000"), ("B", "700"))] * 2
    judged = outcome(LOWER, rows)
    assert judged.outcome == UNDECIDED and "replays" in judged.evidence()


def deterministic(series: str, value: str, n: int, draws: str = "{series}{i}") -> list[dict[str, str]]:
    """`n` trials of `series` alike to the last digit, each with the draw seed `draws` names."""
    return [
        {"series": series, "loss": "1%", "status": "ok", "plt_ms": value, "draw_seed": draws.format(series=series, i=i)}
        for i in range(n)
    ]


def test_trials_without_spread_that_each_drew_their_own_seed_are_decided_by_the_exact_rank_test() -> None:
    """A measurement the draw does not move (the same count of losses in every trial, whatever its order and
    start phase) is not a replay: four trials a series decide it at 95 %, three cannot (1/20 each side)."""
    faster = deterministic("A", "1000", 4) + deterministic("B", "700", 4)
    judged = outcome(LOWER, faster)
    assert judged.outcome == HOLDS and "exact rank test" in judged.evidence() and "1/70" in judged.evidence()
    assert outcome(LOWER, deterministic("A", "1000", 4) + deterministic("B", "1000", 4)).outcome == DIFFERS
    assert outcome(SAME, deterministic("A", "1000", 4) + deterministic("B", "1020", 4)).outcome == HOLDS
    assert outcome(SAME, deterministic("A", "1000", 5) + deterministic("B", "1500", 5)).outcome == DIFFERS
    three = outcome(LOWER, deterministic("A", "1000", 3) + deterministic("B", "700", 3))
    assert three.outcome == UNDECIDED and three.trials_needed == 4
    # a claim over two levels needs five to show it wrong at one of them (97.5 % at each)
    assert intervals.rank_exact_trials(intervals.differs_confidence(2)) == 5


def test_trials_without_spread_that_share_a_draw_are_replays() -> None:
    shared = deterministic("A", "1000", 5, draws="7") + deterministic("B", "700", 5, draws="7")
    missing = deterministic("A", "1000", 5, draws="") + deterministic("B", "700", 5, draws="")
    for rows in (shared, missing):
        judged = outcome(LOWER, rows)
        assert judged.outcome == UNDECIDED and "replays" in judged.evidence()


def test_the_exact_rank_bound_is_the_chance_of_one_arrangement_in_c_m_plus_n_m() -> None:
    assert intervals.rank_exact(4, 4, 0.95) and not intervals.rank_exact(3, 3, 0.95)  # 1/70 and 1/20 against 1/40
    assert intervals.rank_exact(3, 5, 0.95) and not intervals.rank_exact(2, 5, 0.95)  # 1/56 and 1/21
    assert intervals.rank_exact_trials(0.95) == 4


def test_too_few_trials_are_undecided_not_an_error() -> None:
    assert outcome(LOWER, trials("A", "1%", 1000, 30, 1, 1)).outcome == UNDECIDED
    assert outcome(LOWER, []).outcome == UNDECIDED


def test_a_mostly_positive_table_does_not_pass_a_claim_about_its_negative_row() -> None:
    """B faster than A at five levels; at 80 KB (the claim's level) B is slower: the claim differs."""
    levels = ("10", "20", "40", "60", "70", "80")
    rows = []
    for i, level in enumerate(levels):
        b_mean = 1200 if level == "80" else 800
        rows += trials("A", level, 1000, 30, 8, 2 * i) + trials("B", level, b_mean, 30, 8, 2 * i + 1)
    fig = figure(levels)
    everywhere = claims.judge([claim(LOWER)], fig, rows)[0]
    row_80 = claims.judge([claim(Better("plt_ms", "A", "B", higher=False, levels=("80",)))], fig, rows)[0]
    assert everywhere.outcome == DIFFERS  # one level against it is enough
    assert row_80.outcome == HOLDS  # the negative row is its own claim: A beats B there
    others = Better("plt_ms", winner="B", loser="A", higher=False, levels=levels[:-1])
    assert claims.judge([claim(others)], fig, rows)[0].outcome == HOLDS  # the other rows' own claim


def test_a_trend_is_tested_over_every_level_not_its_two_ends() -> None:
    levels = ("0%", "2%", "6%", "8%", "10%")
    rising = []
    falling_middle = []
    for i, level in enumerate(levels):
        rising += trials("A", level, 1000 + 100 * i, 20, 6, i)
        # the ends agree with a rise, the middle three do not: the slope over all of them falls
        mean = {0: 1000, 1: 1500, 2: 1300, 3: 1100, 4: 1050}[i]
        falling_middle += trials("A", level, mean, 20, 6, 10 + i)
    up = Trend("plt_ms", "A", rises=True)
    assert outcome(up, rising, levels).outcome == HOLDS
    assert outcome(Trend("plt_ms", "A", rises=False), rising, levels).outcome == DIFFERS
    assert outcome(up, falling_middle, levels).outcome == DIFFERS


def test_a_trend_in_the_ratio_of_two_series() -> None:
    levels = ("0%", "2%", "6%")
    rows = []
    for i, level in enumerate(levels):
        rows += trials("A", level, 1000 * (1 + i), 20, 6, i) + trials("B", level, 1000, 20, 6, 10 + i)
    assert outcome(Trend("plt_ms", "A", rises=True, against="B"), rows, levels).outcome == HOLDS


def test_a_claim_set_by_design_is_shown_and_not_counted() -> None:
    design = claim(ByDesign("the variants run the same code until a first loss, and the path has none"))
    held = claim(SAME)
    rows = trials("A", "1%", 1000, 20, 20, 1) + trials("B", "1%", 1010, 20, 20, 2)
    judged = claims.judge([design, held], figure(), rows)
    assert judged[0].outcome == BY_DESIGN
    summary = claims.verdict(judged)
    assert summary["verdict"] == "agrees"
    assert summary["counts"] == {HOLDS: 1, DIFFERS: 0, UNDECIDED: 0, BY_DESIGN: 1}
    assert claims.verdict(judged[:1])["verdict"] == "unjudged"


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        ((HOLDS, HOLDS), "agrees"),
        ((HOLDS, DIFFERS), "partly"),
        ((HOLDS, UNDECIDED), "partly"),
        ((DIFFERS, DIFFERS), "differs"),
        ((UNDECIDED, UNDECIDED), "undecided"),
        ((), "unjudged"),
    ],
)
def test_a_figures_verdict_counts_its_claims(outcomes: tuple[str, ...], expected: str) -> None:
    judged = [claims.Judged(claim(ByDesign("x")), o, ()) for o in outcomes]
    assert claims.verdict(judged)["verdict"] == expected


def test_a_quote_is_found_verbatim_whitespace_aside_and_in_order() -> None:
    text = "CUBIC+ performed\n  better than CUBIC at high loss. The small page did not."
    assert claims.found_in("performed better than CUBIC", text)
    assert claims.found_in("CUBIC+ performed ... The small page", text)
    assert not claims.found_in("performed much better", text)
    assert not claims.found_in("The small page ... CUBIC+ performed", text)  # out of order


def test_a_judged_claim_prints_quote_place_test_numbers_and_outcome() -> None:
    rows = trials("A", "1%", 1000, 30, 10, 1) + trials("B", "1%", 700, 30, 10, 2)
    line = outcome(LOWER, rows).line()
    assert line.startswith('"a sentence" (section 1).') and "Welch" in line and line.endswith("HOLDS")


def test_a_derived_figure_that_undoes_the_design_tests_the_sentence_instead() -> None:
    loss_free = decisions.unchanged(loss="0%", queue=None)
    design = claim(ByDesign("loss-free: the same code", holds_while=loss_free, otherwise=SAME))
    bare = claim(ByDesign("loss-free: the same code", holds_while=loss_free))
    declared = dataclasses.replace(figure(("20ms",)), x="rtt", fixed={"loss": "0%"}, claims=(design, bare))
    lossy = declared.derive({"loss": "2%"})
    assert [c.test for c in lossy.claims] == [SAME]
    assert sum("set by design in the declared figure" in d for d in lossy.deviations) == 2
    assert declared.derive({"rate": "10mbit"}).claims == (design, bare)
    assert declared.derive({"queue": "20p"}).claims == (dataclasses.replace(design, test=SAME),)


def test_an_undecided_trend_names_the_trials_that_would_decide_it() -> None:
    levels = ("0%", "2%", "6%")
    rows = [
        {"series": "A", "loss": level, "status": "ok", "plt_ms": str(mean + d)}
        for level, mean in zip(levels, (1000, 1004, 1012), strict=True)
        for d in (-100, -30, 30, 100)
    ]
    judged = outcome(Trend("plt_ms", "A", rises=True), rows, levels)
    assert judged.outcome == UNDECIDED and judged.trials_needed is not None and judged.trials_needed > 4


def alike_at_levels(
    series: str, values: dict[str, int], n: int, draws: str = "{series}{level}{i}"
) -> list[dict[str, str]]:
    """`n` trials of `series` at each level, alike to the last digit there, each with the draw seed `draws` names."""
    return [
        {
            "series": series,
            "loss": level,
            "status": "ok",
            "plt_ms": str(value),
            "draw_seed": draws.format(series=series, level=level, i=i),
        }
        for level, value in values.items()
        for i in range(n)
    ]


def test_a_trend_without_spread_in_trials_that_each_drew_their_own_seed_is_decided_by_permuting_them() -> None:
    """Each level's trials alike, each its own draw: the slope's permutation test decides, as the exact rank
    test does for two series; in order along x, two levels need four trials each (2/70), three need two
    (2/90); out of order, a slope that permuting often matches decides nothing, and names no count."""
    three = ("0%", "2%", "6%")
    rising = alike_at_levels("A", dict(zip(three, (1000, 1100, 1200), strict=True)), 2)
    judged = outcome(Trend("plt_ms", "A", rises=True), rising, three)
    assert judged.outcome == HOLDS and "permutation test of the slope" in judged.evidence()
    assert outcome(Trend("plt_ms", "A", rises=False), rising, three).outcome == DIFFERS
    unordered = alike_at_levels("A", dict(zip(three, (1000, 1200, 1100), strict=True)), 2)
    judged = outcome(Trend("plt_ms", "A", rises=True), unordered, three)
    assert judged.outcome == UNDECIDED and judged.trials_needed is None
    two = ("0%", "2%")
    short = alike_at_levels("A", {"0%": 1000, "2%": 1100}, 3)
    judged = outcome(Trend("plt_ms", "A", rises=True), short, two)
    assert judged.outcome == UNDECIDED and judged.trials_needed == 4
    assert (
        outcome(Trend("plt_ms", "A", rises=True), alike_at_levels("A", {"0%": 1000, "2%": 1100}, 4), two).outcome
        == HOLDS
    )
    # the ratio of two series, alike at each level: A / B rises from 1 to 2
    paired = alike_at_levels("A", dict(zip(three, (1000, 1500, 2000), strict=True)), 2) + alike_at_levels(
        "B", dict.fromkeys(three, 1000), 2
    )
    assert outcome(Trend("plt_ms", "A", rises=True, against="B"), paired, three).outcome == HOLDS
    # one draw replayed, or none recorded: replays, whatever the order
    for draws in ("7", ""):
        replayed = alike_at_levels("A", dict(zip(three, (1000, 1100, 1200), strict=True)), 2, draws=draws)
        judged = outcome(Trend("plt_ms", "A", rises=True), replayed, three)
        assert judged.outcome == UNDECIDED and "replays" in judged.evidence()
    assert intervals.slope_exact_trials(2, 0.95) == 4 and intervals.slope_exact_trials(3, 0.95) == 2


def test_a_trend_without_trials_at_a_level_it_names_is_undecided_whatever_its_slope() -> None:
    """A --quick run's levels, or a level whose trials all failed: the slope over the levels run is shown,
    and decides nothing, since the sentence's trend is over every level it names."""
    levels = ("0%", "2%", "6%", "8%", "10%")
    rows = [r for i, level in enumerate(levels) for r in trials("A", level, 1000 + 100 * i, 20, 6, i)]
    up, down = Trend("plt_ms", "A", rises=True), Trend("plt_ms", "A", rises=False)
    assert outcome(up, rows, levels).outcome == HOLDS and outcome(down, rows, levels).outcome == DIFFERS
    quick = [r for r in rows if r["loss"] in ("0%", "6%", "10%")]
    for test in (up, down):
        judged = outcome(test, quick, levels)
        assert judged.outcome == UNDECIDED and judged.trials_needed is None
        assert "over 3 levels" in judged.evidence() and "no trials at 2%, 8%" in judged.evidence()
    one = outcome(up, [r for r in rows if r["loss"] == "0%"], levels)
    assert one.outcome == UNDECIDED and "no trials at 2%, 6%, 8%, 10%" in one.evidence()


def test_a_level_without_trials_says_so_not_too_few() -> None:
    """A comparison at a level the run did not run: undecided, and said as such (not 'too few trials')."""
    levels = ("1%", "2%")
    rows = trials("A", "1%", 1000, 30, 6, 1) + trials("B", "1%", 700, 30, 6, 2)
    judged = outcome(Better("plt_ms", "B", "A", higher=False), rows, levels)
    assert judged.outcome == UNDECIDED
    assert "no trials here in either group (n = 0, 0)" in judged.evidence()
    one_each = trials("A", "1%", 1000, 30, 1, 1) + trials("B", "1%", 700, 30, 1, 2)
    assert "too few trials to estimate a spread (n = 1, 1)" in outcome(LOWER, one_each).evidence()
