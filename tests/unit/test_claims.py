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

from ground.trials import Row
from netrepro.studykit import cells, claims, decisions, intervals
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import BY_DESIGN, DIFFERS, HOLDS, UNDECIDED, Better, ByDesign, Same, Trend
from netrepro.studykit.spec import Figure, Series


def figure(levels: tuple[Any, ...] = ("1%",)) -> Figure:
    return Figure(study="t", name="f", title="t", workload="bulk", x="loss", levels=levels, y="plt_ms",
                  fixed={}, series=(Series("A"), Series("B")))  # fmt: skip


def trials(series: str, level: str, mean: float, sd: float, n: int, seed: int) -> list[Row]:
    rng = random.Random(seed)
    return [Row(series=series, loss=level, status="ok", plt_ms=str(rng.gauss(mean, sd))) for _ in range(n)]


def claim(test: decisions.Test) -> Claim:
    return Claim("000_x.txt", "section 1", "a sentence", test)


def outcome(test: decisions.Test, rows: list[Row], levels: tuple[Any, ...] = ("1%",)) -> claims.Judged:
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


def spread_rows(series: str, mean: float, times: int) -> list[Row]:
    """Trials at mean - 200, mean, mean + 200, `times` over: the same mean and nearly the same spread at any n."""
    values = [mean - 200, mean, mean + 200] * times
    return [Row(series=series, loss="1%", status="ok", plt_ms=str(v)) for v in values]


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


def alike(series: str, value: str, n: int, level: str = "1%") -> list[Row]:
    """`n` trials of `series` alike to the last digit: a cell that does not vary."""
    return [Row(series=series, loss=level, status="ok", plt_ms=value) for _ in range(n)]


def test_a_gain_wholly_above_no_effect_but_below_its_worth_does_not_hold() -> None:
    """B 3 % faster than A, measured precisely: the interval excludes no effect, but the claim's word is
    worth 10 %: the interval lies wholly short of it, so the claim differs; it never holds."""
    rows = trials("A", "1%", 1000, 3, 20, 1) + trials("B", "1%", 970, 3, 20, 2)
    worth_10 = Better("plt_ms", winner="B", loser="A", higher=False, worth=0.10)
    judged = outcome(worth_10, rows)
    iv = intervals.welch([float(r["plt_ms"]) for r in rows[:20]], [float(r["plt_ms"]) for r in rows[20:]], 0.95, True)
    assert iv is not None and iv.high < 1.0  # B is faster beyond doubt ...
    assert judged.outcome == DIFFERS  # ... but not by the 10 % the word asks
    # between no effect and the threshold, undecided, never holds: B 8 % faster, wide
    wide = trials("A", "1%", 1000, 60, 6, 3) + trials("B", "1%", 920, 60, 6, 4)
    assert outcome(worth_10, wide).outcome == UNDECIDED


def test_a_gain_wholly_above_its_worth_holds() -> None:
    rows = trials("A", "1%", 1000, 10, 10, 1) + trials("B", "1%", 800, 10, 10, 2)  # 20 % faster, worth 10 %
    assert outcome(Better("plt_ms", winner="B", loser="A", higher=False, worth=0.10), rows).outcome == HOLDS


def test_cells_that_do_not_vary_are_read_deterministically_against_worth() -> None:
    """No spread in either series: no test is run; the point estimate is read against `worth` and the
    finding says so (deterministic): above it holds, below it differs, whatever the count of trials."""
    worth_10 = Better("plt_ms", winner="B", loser="A", higher=False, worth=0.10)
    above = outcome(worth_10, alike("A", "1000", 3) + alike("B", "800", 3))
    below = outcome(worth_10, alike("A", "1000", 3) + alike("B", "950", 3))
    assert above.outcome == HOLDS and above.deterministic and "deterministic" in above.evidence()
    assert below.outcome == DIFFERS and below.deterministic
    assert "Welch" not in above.evidence() and "rank" not in above.evidence()
    # two trials each decide as well as a hundred: the emulator replays, nothing to estimate
    assert outcome(worth_10, alike("A", "1000", 2) + alike("B", "800", 2)).deterministic
    same = outcome(SAME, alike("A", "1000", 4) + alike("B", "1020", 4))
    assert same.outcome == HOLDS and same.deterministic
    assert outcome(SAME, alike("A", "1000", 4) + alike("B", "1500", 4)).outcome == DIFFERS


def test_a_time_varying_within_its_trials_timer_noise_is_deterministic() -> None:
    """A time whose trials spread by less than the delay line's measured lateness over their round trips
    is deterministic; the same spread with no lateness recorded is a spread."""

    def rows(series: str, values: tuple[float, ...], late: str) -> list[Row]:
        return [Row(series=series, loss="0%", status="ok", plt_ms=str(v), rtt="100ms", late_p99_ms=late)
                for v in values]  # fmt: skip

    # ten or eleven round trips of 100 ms: 20 or 22 holds of up to 0.2 ms each, 4 to 4.4 ms a trial
    noisy = rows("A", (1000.0, 1000.6, 1001.1), "0.2") + rows("B", (700.0, 700.9, 700.3), "0.2")
    assert outcome(LOWER, noisy, ("0%",)).deterministic
    quiet = rows("A", (1000.0, 1000.6, 1001.1), "") + rows("B", (700.0, 700.9, 700.3), "")
    assert not outcome(LOWER, quiet, ("0%",)).deterministic
    cell = cells.Group(series="A").cell(figure(("0%",)), noisy, "0%", "plt_ms")
    assert cell.fixed and cell.noise == pytest.approx((4.0, 4.4, 4.4))
    # on a path that drops at random, each trial's draw moves it: only equal values are alike
    lossy = [Row({**r, "loss": "2%"}) for r in noisy]
    assert not outcome(LOWER, lossy, ("2%",)).deterministic
    # a count (not a time) is deterministic only where its values are equal
    assert not cells.Group(series="A").cell(figure(("0%",)), noisy, "0%", "retransmits").values


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
    rise_then_fall = []
    for i, level in enumerate(levels):
        rising += trials("A", level, 1000 * 1.2**i, 20, 6, i)
        # rises to 2 %, then falls at every later step: its least-squares slope over all five still rises
        mean = {0: 1000, 1: 2000, 2: 1800, 3: 1600, 4: 1400}[i]
        rise_then_fall += trials("A", level, mean, 20, 6, 10 + i)
    up = Trend("plt_ms", "A", rises=True)
    assert outcome(up, rising, levels).outcome == HOLDS
    assert outcome(Trend("plt_ms", "A", rises=False), rising, levels).outcome == DIFFERS
    judged = outcome(up, rise_then_fall, levels)
    assert judged.outcome == DIFFERS
    assert [f.outcome for f in judged.findings] == [HOLDS, DIFFERS, DIFFERS, DIFFERS]
    assert [f.at for f in judged.findings] == ["0% -> 2%", "2% -> 6%", "6% -> 8%", "8% -> 10%"]


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
    assert summary["counts"][HOLDS] == 1 and summary["counts"][BY_DESIGN] == 1
    assert claims.verdict(judged[:1])["verdict"] == "unjudged"


def test_a_claim_the_design_forces_false_differs_by_design_and_counts() -> None:
    forced = claim(ByDesign("the path drops nothing: the variants cannot differ", forced=DIFFERS))
    judged = claims.judge([forced], figure(), [])
    assert judged[0].outcome == DIFFERS and judged[0].by_design
    summary = claims.verdict(judged)
    assert summary["verdict"] == "differs" and summary["counts"]["differs by design"] == 1
    assert "DIFFERS BY DESIGN" in judged[0].line()


def test_a_check_is_shown_apart_and_counted_in_no_verdict() -> None:
    read_back = dataclasses.replace(
        claim(decisions.Exact("the table read back", lambda f, r: (True, "12 of 12"))), check=True
    )
    judged = claims.judge([read_back], figure(), [])
    summary = claims.verdict(judged)
    assert summary["verdict"] == "unjudged" and summary["claims"] == [] and len(summary["checks"]) == 1
    assert summary["counts"][HOLDS] == 0


def made(outcome_: str, deterministic: bool = False) -> claims.Judged:
    return claims.Judged(claim(SAME), outcome_, (decisions.Finding(outcome_, "1%", "x", None, deterministic),))


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        ((HOLDS, HOLDS), "agrees"),
        ((HOLDS, DIFFERS), "partly"),
        ((HOLDS, UNDECIDED), "undecided"),
        ((DIFFERS, UNDECIDED), "differs"),
        ((DIFFERS, UNDECIDED, UNDECIDED), "differs"),
        ((DIFFERS, DIFFERS), "differs"),
        ((UNDECIDED, UNDECIDED), "undecided"),
        ((), "unjudged"),
    ],
)
def test_a_figures_verdict_counts_its_claims(outcomes: tuple[str, ...], expected: str) -> None:
    """'partly' needs a claim that holds and one that differs: a figure where nothing holds is not partly."""
    assert claims.verdict([made(o) for o in outcomes])["verdict"] == expected


def test_deterministic_holds_alone_never_make_a_figure_agree() -> None:
    assert claims.verdict([made(HOLDS, True), made(HOLDS, True)])["verdict"] == "deterministic"
    assert claims.verdict([made(HOLDS, True), made(HOLDS)])["verdict"] == "agrees"
    assert claims.verdict([made(HOLDS, True), made(HOLDS)])["counts"]["deterministic"] == 1


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
    assert "by at least 5 %" in line  # the reading, generated from the test's worth


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
        Row(series="A", loss=level, status="ok", plt_ms=str(mean + d))
        for level, mean in zip(levels, (1000, 1004, 1012), strict=True)
        for d in (-100, -30, 30, 100)
    ]
    judged = outcome(Trend("plt_ms", "A", rises=True), rows, levels)
    assert judged.outcome == UNDECIDED and judged.trials_needed is not None and judged.trials_needed > 4


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
        assert "no trials at 2%, 8%" in judged.evidence()
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


def test_the_contrast_of_two_groups_is_scipys_welch_interval() -> None:
    from scipy import stats

    a, b = [9.1, 10.2, 11.0, 9.7], [12.5, 13.9, 12.2, 14.4, 13.1]
    mine = intervals.contrast([a, b], [-1.0, 1.0], 0.95, False)
    ci = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    assert mine.low == pytest.approx(ci.low) and mine.high == pytest.approx(ci.high)
    # four groups, two of them constant: the step of a ratio is that Welch interval, moved by their gap
    four = intervals.contrast([b, a, [1.0, 1.0], [3.0, 3.0]], [1.0, -1.0, -1.0, 1.0], 0.95, False)
    assert four.low == pytest.approx(ci.low + 2.0) and four.high == pytest.approx(ci.high + 2.0)
    # Welch-Satterthwaite by hand (a textbook's formula): the half-width at these numbers
    va, vb = stats.tvar(a) / 4, stats.tvar(b) / 5
    df = (va + vb) ** 2 / (va**2 / 3 + vb**2 / 4)
    assert (four.high - four.low) / 2 == pytest.approx(stats.t.ppf(0.975, df) * (va + vb) ** 0.5)


def test_the_trials_that_would_decide_come_from_a_power_computation() -> None:
    """Cohen's textbook case: an effect of half a standard deviation, 5 % two-sided, 80 % power: 64 a group."""
    iv = intervals.Interval(0.5, 0.0, 1.0, 0.5, (4, 4), False, sd=1.0)
    assert intervals.trials_for_power(iv, 0.5, 0.95) == 64
    assert intervals.trials_for_power(iv, 0.0, 0.95) is None  # an estimate on the edge: nothing decides it
