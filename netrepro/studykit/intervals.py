"""Intervals over independent trials: the statistics the claims' tests stand on.

The trial is the unit: each function takes one value a trial.  `welch` is
the ratio of two series' geometric means (or the difference of their
means) with its Welch t interval (scipy's `ttest_ind`); `equivalent` is
statsmodels' two one-sided tests (`ttost_ind`); `contrast` is a Welch
interval of a linear contrast of several groups' means (a step of a ratio
between two levels: no library has it, tests/unit/test_claims.py checks it
against scipy and a textbook value); `trials_for_power` is statsmodels'
power of a t test, for the trials that would decide; `differs_confidence`
widens an interval for a claim over many levels.  Which cells vary at all
is the caller's question (netrepro.studykit.cells.Cell).  The confidence the
tests read (`current_confidence`) is CONFIDENCE but inside `at_confidence`, which a
sequential look (netrepro.studykit.sequential) judges its claims in.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95  # of a difference's interval; an equivalence uses 1 - 2 x (1 - 0.95) / 2 = 90 %
POWER = 0.80  # of the trials an undecided claim names: the chance that that many would decide it

_CONFIDENCE: contextvars.ContextVar[float] = contextvars.ContextVar("confidence", default=CONFIDENCE)


def current_confidence() -> float:
    """The confidence the tests read their intervals at: CONFIDENCE, or the one `at_confidence` sets."""
    return _CONFIDENCE.get()


def current_equivalence() -> float:
    """The confidence of an equivalence's interval: two one-sided tests each at half the error of
    `current_confidence` (90 % at 95 %)."""
    return 1 - 2 * (1 - current_confidence())


@contextlib.contextmanager
def at_confidence(level: float) -> Iterator[None]:
    """Every test judged inside reads its intervals at `level` instead of CONFIDENCE (a look of a
    sequential design spends less than the whole error: netrepro.studykit.sequential.Design)."""
    if not 0 < level < 1:
        raise ValueError(f"a confidence is strictly between 0 and 1, not {level}")
    token = _CONFIDENCE.set(level)
    try:
        yield
    finally:
        _CONFIDENCE.reset(token)


@dataclass(frozen=True)
class Interval:
    """An estimate of an effect (a ratio of means, or a difference) and its interval over trials."""

    estimate: float
    low: float
    high: float
    se: float  # of the estimate on the scale the interval is built on (log for a ratio)
    n: tuple[int, ...]
    ratio: bool
    sd: float = 0.0  # one trial's standard deviation on that scale, pooled over the groups (for power)


def _scale(values: Sequence[float], ratio: bool) -> list[float]:
    return [math.log(v) for v in values] if ratio else [float(v) for v in values]


def welch(a: Sequence[float], b: Sequence[float], confidence: float, ratio: bool) -> Interval | None:
    """b against a over independent trials: the ratio of geometric means (or the difference of means) and
    its Welch t interval (scipy.stats.ttest_ind, unequal variances); None where either side has fewer than
    two trials or a ratio meets a value <= 0.  Where neither side varies, the interval is the estimate."""
    if len(a) < 2 or len(b) < 2 or (ratio and min(*a, *b) <= 0):
        return None
    return contrast([_scale(a, ratio), _scale(b, ratio)], [-1.0, 1.0], confidence, ratio)


def contrast(groups: Sequence[Sequence[float]], weights: Sequence[float], confidence: float, ratio: bool) -> Interval:
    """The contrast sum(w_i x mean_i) of the groups' means (already on their scale: logs for a ratio) with a
    Welch t interval: its variance sum(w_i^2 s_i^2 / n_i), its degrees of freedom Welch-Satterthwaite's.
    Two groups weighted -1, +1 are scipy's Welch interval; four weighted +1, -1, -1, +1 are the step of a
    ratio of two series from one level to the next (a ratio of ratios, for `ratio`)."""
    from scipy import stats

    means = [sum(g) / len(g) for g in groups]
    parts = [
        w * w * sum((x - m) ** 2 for x in g) / (len(g) - 1) / len(g)
        for g, w, m in zip(groups, weights, means, strict=True)
    ]
    d = sum(w * m for w, m in zip(weights, means, strict=True))
    var = sum(parts)
    se = math.sqrt(var)
    if se == 0:
        low = high = d
    elif len(groups) == 2 and list(weights) == [-1.0, 1.0]:
        ci = stats.ttest_ind(groups[1], groups[0], equal_var=False).confidence_interval(confidence)
        low, high = float(ci.low), float(ci.high)
    else:
        df = var**2 / sum(p**2 / (len(g) - 1) for p, g in zip(parts, groups, strict=True) if p > 0)
        t = float(stats.t.ppf(0.5 + confidence / 2, df))
        low, high = d - t * se, d + t * se
    # one trial's spread, as if every group had the same: se = sd x sqrt(sum w_i^2 / n_i)
    sd = se / math.sqrt(sum(w * w / len(g) for g, w in zip(groups, weights, strict=True)))
    n = tuple(len(g) for g in groups)
    if ratio:
        return Interval(_exp(d), _exp(low), _exp(high), se, n, True, sd)
    return Interval(d, low, high, se, n, False, sd)


def _exp(x: float) -> float:
    """e to the x, infinite past what a float holds: a look's interval at 99.999 % over two trials a group
    may reach a t quantile of thousands, and an interval to infinity decides nothing, as it should."""
    return math.exp(x) if x < 709.0 else math.inf


def equivalent(a: Sequence[float], b: Sequence[float], low: float, high: float, ratio: bool) -> float:
    """The p value of b against a lying inside [low, high] (on the ratio's or the difference's own scale):
    statsmodels' two one-sided Welch tests (ttost_ind); an open band (low <= 0 for a ratio, or an infinite
    edge) is the one one-sided test at its finite edge."""
    from statsmodels.stats.weightstats import ttost_ind

    xa, xb = _scale(a, ratio), _scale(b, ratio)
    lo = (math.log(low) if low > 0 else -math.inf) if ratio else low
    hi = (math.log(high) if math.isfinite(high) else math.inf) if ratio else high
    # ttost_ind tests x1 - x2 inside (low, upp); an infinite edge gives its one-sided test a p of 0
    p, _, _ = ttost_ind(xb, xa, max(lo, -1e300), min(hi, 1e300), usevar="unequal")
    return float(p)


def trials_for_power(iv: Interval, gap: float, confidence: float, power: float = POWER) -> int | None:
    """Trials per series that would bring the interval clear of an edge `gap` away (on the interval's own
    scale) with chance `power`, if the effect is what was measured and one trial spreads as measured:
    statsmodels' power of a one-sided two-sample t test at (1 - confidence) / 2.  None where nothing
    would: no spread, or an estimate sitting on the edge."""
    from statsmodels.stats.power import TTestIndPower

    if iv.sd == 0 or gap <= 0:
        return None
    size = gap / iv.sd
    n = TTestIndPower().solve_power(
        effect_size=size, alpha=(1 - confidence) / 2, power=power, ratio=1.0, alternative="larger"
    )
    return max(max(iv.n) + 1, math.ceil(float(n)))


def differs_confidence(levels: int, confidence: float | None = None) -> float:
    """The confidence of the interval that may show a claim wrong at one of `levels` levels.

    A claim holds where it holds at every level it covers: an intersection-union test, each level at the
    claim's own confidence, needs no correction.  It differs where it differs at any one level: a union,
    whose error grows with the levels, so each level's "differs" is read off a Bonferroni-widened interval
    (a claim true at all of 30 levels must not be shown wrong at one of them one time in two).  Without
    `confidence`: the tests' own (`current_confidence`)."""
    level = _CONFIDENCE.get() if confidence is None else confidence
    return 1 - (1 - level) / max(1, levels)
