"""Deciding a claim over several looks (netrepro.studykit.sequential): the design's spending, one look's
decision, the planner, the vectorised interval against intervals.welch, and the error over all looks."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from netrepro.studykit.decisions import DIFFERS, HOLDS, UNDECIDED, better_at
from netrepro.studykit.intervals import CONFIDENCE, welch
from netrepro.studykit.sequential import Design, Look, decide, false_holds_rate, next_batch, welch_arrays

WORTH = 0.10


@dataclass(frozen=True)
class Uncorrected:
    """The naive procedure the design replaces: a 95 % interval at every look."""

    looks: int

    def confidence_at(self, look: int) -> float:
        return CONFIDENCE


def _monte_carlo_margin(p: float, runs: int) -> float:
    return 3 * math.sqrt(p * (1 - p) / runs)


@pytest.mark.parametrize("looks", [1, 2, 4, 6])
def test_each_look_reads_a_wider_interval_than_one_look_and_the_error_spent_is_alpha(looks: int) -> None:
    design = Design(looks=looks)
    confidences = [design.confidence_at(k) for k in range(1, looks + 1)]
    if looks > 1:
        assert all(c > CONFIDENCE for c in confidences)
    else:
        assert confidences == [pytest.approx(CONFIDENCE)]
    spent = [design.spent(k) for k in range(looks + 1)]
    assert spent == sorted(spent) and spent[0] == 0
    assert sum(1 - c for c in confidences) <= design.alpha + 1e-12
    assert spent[-1] == design.alpha


def test_obrien_fleming_spending_saves_the_error_for_the_last_look() -> None:
    # the textbook O'Brien-Fleming-type alpha(t) = 2 - 2 Phi(1.96 / sqrt t) at t = 1/4, 1/2, 3/4
    design = Design(looks=4, alpha=0.05)
    assert [design.spent(k) for k in (1, 2, 3)] == pytest.approx([8.857e-5, 5.575e-3, 2.3625e-2], rel=1e-3)
    assert design.confidence_at(1) > design.confidence_at(2) > design.confidence_at(3) > design.confidence_at(4)


def test_a_design_refuses_looks_it_does_not_have() -> None:
    with pytest.raises(ValueError, match="outside"):
        Design(looks=4).confidence_at(5)
    with pytest.raises(ValueError, match="outside"):
        Design(looks=4).confidence_at(0)
    with pytest.raises(ValueError, match="at least one look"):
        Design(looks=0)


def _trials(rng: np.random.Generator, ratio: float, sd: float, n: int = 10) -> tuple[list[float], list[float]]:
    """Two groups of positive trials whose geometric means differ by about `ratio`, log spread `sd`."""
    a = np.exp(rng.normal(math.log(100.0), sd, n))
    b = np.exp(rng.normal(math.log(100.0 * ratio), sd, n))
    return [float(v) for v in a], [float(v) for v in b]


def test_decide_holds_on_an_effect_far_beyond_worth_even_at_the_strict_first_look() -> None:
    a, b = _trials(np.random.default_rng(1), ratio=2.0, sd=0.02)
    found = decide(a, b, WORTH, True, Design(looks=4), 1)
    assert found.decision == HOLDS
    assert found.trials == (10, 10) and found.look == 1
    assert found.low > 1 + WORTH and found.low < found.estimate < found.high
    assert found.confidence == Design(looks=4).confidence_at(1)


def test_decide_differs_on_an_effect_clearly_short_of_worth() -> None:
    a, b = _trials(np.random.default_rng(2), ratio=1.0, sd=0.02)
    found = decide(a, b, WORTH, True, Design(looks=4), 2)
    assert found.decision == DIFFERS
    assert found.high < 1 + WORTH


def test_decide_is_undecided_on_noisy_trials() -> None:
    a, b = _trials(np.random.default_rng(3), ratio=1.1, sd=0.5)
    found = decide(a, b, WORTH, True, Design(looks=4), 4)
    assert found.decision == UNDECIDED
    assert found.low < 1 + WORTH < found.high


def test_decide_reads_lower_is_better_the_other_way() -> None:
    a, b = _trials(np.random.default_rng(4), ratio=0.5, sd=0.02)  # b half of a: lower by far
    assert decide(a, b, WORTH, False, Design(looks=4), 1).decision == HOLDS
    assert decide(a, b, WORTH, True, Design(looks=4), 1).decision == DIFFERS


def test_decide_without_an_interval_is_undecided() -> None:
    found = decide([1.0], [2.0, 3.0], WORTH, True, Design(), 1)
    assert found.decision == UNDECIDED and math.isnan(found.estimate) and found.trials == (1, 2)


def test_a_look_is_stricter_than_one_fixed_95_percent_interval() -> None:
    # trials whose 95 % interval lies just beyond worth (3 standard errors clear of it): a single look at
    # 95 % holds, the design's first look (99.99 %) may not, and its last (97.4 %) does
    noise = np.array([0.3, -0.3, 0.2, -0.2, 0.1, -0.1, 0.25, -0.25, 0.05, -0.05])
    se = math.sqrt(2 * float(np.var(noise, ddof=1)) / len(noise))
    a = [float(v) for v in np.exp(noise)]
    b = [float(v) for v in np.exp(math.log1p(WORTH) + 3 * se + noise[::-1])]
    assert better_at("x", a, b, True, WORTH, True).outcome == HOLDS
    assert decide(a, b, WORTH, True, Design(looks=4), 1).decision == UNDECIDED
    assert decide(a, b, WORTH, True, Design(looks=4), 4).decision == HOLDS


def _look(look: int, decision: str, trials: int = 10) -> Look:
    return Look(look, (trials, trials), 1.0, 0.9, 1.2, 0.99, decision)


def test_the_planner_adds_trials_only_while_undecided() -> None:
    design = Design(looks=4)
    assert next_batch(_look(1, UNDECIDED), 10, design) == 10
    assert next_batch(_look(1, HOLDS), 10, design) == 0
    assert next_batch(_look(2, DIFFERS), 10, design) == 0


def test_the_planner_stops_at_the_budget() -> None:
    design = Design(looks=4)
    assert next_batch(_look(1, UNDECIDED, trials=10), 10, design, budget=25) == 10
    assert next_batch(_look(2, UNDECIDED, trials=20), 10, design, budget=25) == 5
    assert next_batch(_look(3, UNDECIDED, trials=25), 10, design, budget=25) == 0
    # the larger group sets what is left
    uneven = Look(2, (18, 25), 1.0, 0.9, 1.2, 0.99, UNDECIDED)
    assert next_batch(uneven, 10, design, budget=25) == 0


def test_the_planner_stops_after_the_last_look() -> None:
    design = Design(looks=4)
    assert next_batch(_look(3, UNDECIDED), 10, design) == 10
    assert next_batch(_look(4, UNDECIDED), 10, design) == 0


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_the_vectorised_interval_is_intervals_welch(seed: int) -> None:
    rng = np.random.default_rng(seed)
    na, nb = 5 + seed % 3, 9 - seed % 4  # unequal groups too
    logs_a, logs_b = rng.normal(1.0, 0.3, (3, na)), rng.normal(1.2, 0.6, (3, nb))
    for confidence in (CONFIDENCE, Design(looks=4).confidence_at(2)):
        d, low, high = welch_arrays(logs_a, logs_b, confidence)
        for row in range(3):
            iv = welch(list(np.exp(logs_a[row])), list(np.exp(logs_b[row])), confidence, True)
            assert iv is not None
            assert math.exp(d[row]) == pytest.approx(iv.estimate, abs=1e-9)
            assert math.exp(low[row]) == pytest.approx(iv.low, abs=1e-9)
            assert math.exp(high[row]) == pytest.approx(iv.high, abs=1e-9)
            plain = welch(list(logs_a[row]), list(logs_b[row]), confidence, False)
            assert plain is not None
            assert (d[row], low[row], high[row]) == pytest.approx((plain.estimate, plain.low, plain.high), abs=1e-9)


def test_one_look_of_the_simulation_errs_at_the_nominal_rate() -> None:
    # the simulator itself is calibrated: one 95 % look at the edge holds falsely 2.5 % of the time
    runs = 10_000
    rate = false_holds_rate(runs, Design(looks=1), 10, 10, WORTH, 0.2, np.random.default_rng(5))
    assert abs(rate - 0.025) <= _monte_carlo_margin(0.025, runs)


def test_false_holds_over_all_looks_stay_within_alpha_and_uncorrected_looks_do_not() -> None:
    # the true effect sits exactly at worth: every "holds" is false.  One tail: at most alpha / 2.
    runs, design = 10_000, Design(looks=4)
    level = design.alpha / 2
    bound = level + _monte_carlo_margin(level, runs)
    corrected = false_holds_rate(runs, design, 10, 10, WORTH, 0.2, np.random.default_rng(7))
    naive = false_holds_rate(runs, Uncorrected(looks=4), 10, 10, WORTH, 0.2, np.random.default_rng(7))
    print(f"false holds over 4 looks at n = 10, 20, 30, 40: corrected {corrected:.4f}, 95 % each look {naive:.4f}")
    assert corrected <= bound
    assert naive > bound
