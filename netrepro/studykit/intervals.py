"""Intervals over independent trials: the statistics the claims' tests stand on.

The trial is the unit: each function takes one value a trial.  `welch` is
the ratio of two series' geometric means (or the difference of their
means) with its Welch t interval; `trials_to_decide` scales its half-width
to the trials that would clear a gap at the spread measured;
`differs_confidence` widens an interval for a claim over many levels.
Where neither series has any spread, a t interval has nothing to stand on:
trials that each drew their own seed (`independent`) are decided by the
exact rank test (`rank_exact`), others are replays of one draw; a trend over
levels, by the permutation test of its slope (`slope_permutation`).
netrepro.studykit.decisions reads these into findings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

CONFIDENCE = 0.95  # of a difference's interval; an equivalence uses 1 - 2 x (1 - 0.95) / 2 = 90 %


@dataclass(frozen=True)
class Interval:
    """An estimate of an effect (a ratio of means, or a difference) and its interval over trials."""

    estimate: float
    low: float
    high: float
    se: float  # of the estimate on the scale the interval is built on (log for a ratio)
    n: tuple[int, int]
    ratio: bool


def welch(a: Sequence[float], b: Sequence[float], confidence: float, ratio: bool) -> Interval | None:
    """b against a over independent trials: the ratio of geometric means (or the difference of means) and
    its Welch t interval; None where either side has fewer than two trials or a ratio meets a value <= 0."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2 or (ratio and min(*a, *b) <= 0):
        return None
    xa = [math.log(v) for v in a] if ratio else list(a)
    xb = [math.log(v) for v in b] if ratio else list(b)
    ma, mb = sum(xa) / len(xa), sum(xb) / len(xb)
    va = sum((x - ma) ** 2 for x in xa) / (len(xa) - 1) / len(xa)
    vb = sum((x - mb) ** 2 for x in xb) / (len(xb) - 1) / len(xb)
    se = math.sqrt(va + vb)
    d = mb - ma
    if se == 0:
        low = high = d
    else:
        df = (va + vb) ** 2 / (va**2 / (len(xa) - 1) + vb**2 / (len(xb) - 1))
        t = float(stats.t.ppf(0.5 + confidence / 2, df))
        low, high = d - t * se, d + t * se
    if ratio:
        return Interval(math.exp(d), math.exp(low), math.exp(high), se, (len(a), len(b)), True)
    return Interval(d, low, high, se, (len(a), len(b)), False)


def z(confidence: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(0.5 + confidence / 2))


def trials_to_decide(iv: Interval, gap: float, confidence: float) -> int | None:
    """Trials per series that would bring the interval's half-width under `gap` (on the interval's own scale:
    log for a ratio) at the spread measured; None where nothing would (no spread, or no gap to clear)."""
    if iv.se == 0 or gap <= 0:
        return None
    n = max(iv.n)
    return max(n + 1, math.ceil(n * (z(confidence) * iv.se / gap) ** 2))


def trials_to_clear(point: float, low: float, high: float, edge: float, n: int, confidence: float) -> int | None:
    """Trials per cell that would bring an interval [low, high] around `point` (a bootstrap's, say) clear of
    `edge` at the spread measured: its half-width taken as a standard error (`trials_to_decide`)."""
    se = (high - low) / 2 / z(confidence)
    return trials_to_decide(Interval(point, low, high, se, (n, n), False), abs(point - edge), confidence)


def differs_confidence(levels: int, confidence: float = CONFIDENCE) -> float:
    """The confidence of the interval that may show a claim wrong at one of `levels` levels.

    A claim holds where it holds at every level it covers: an intersection-union test, each level at the
    claim's own confidence, needs no correction.  It differs where it differs at any one level: a union,
    whose error grows with the levels, so each level's "differs" is read off a Bonferroni-widened interval
    (a claim true at all of 30 levels must not be shown wrong at one of them one time in two)."""
    return 1 - (1 - confidence) / max(1, levels)


def rank_exact(m: int, n: int, confidence: float) -> bool:
    """Whether m and n trials without spread decide at `confidence` (two-sided): the exact Mann-Whitney
    test, which asks only that the trials be exchangeable under no effect.  With every trial of each series
    alike, the one arrangement of ranks that puts one series wholly beside the other (U = 0) has the chance
    1 / C(m + n, m) under no effect; where that is under (1 - confidence) / 2, the distribution-free
    (Moses) interval of the difference is the difference itself."""
    return 1 / math.comb(m + n, m) <= (1 - confidence) / 2


def rank_exact_trials(confidence: float) -> int:
    """Trials a series that `rank_exact` needs to decide at `confidence` (4 at 95 %, 5 at 97.5 %): two
    series in order are a trend over two levels (`slope_exact_trials`), 2 / C(2n, n) = 1 / C(2n, n) each side."""
    return slope_exact_trials(2, confidence)


def slope_permutation(xs: Sequence[float], cells: Sequence[Sequence[float]], resamples: int = 20_000) -> float:
    """The two-sided chance, under no trend, of a least-squares slope of the cells' means over `xs` at least
    as steep as the one measured: the trials' values permuted across the levels (exchangeable under no
    trend where each trial drew its own seed), `resamples` times, with the measured arrangement counted
    among them.  For cells without spread and in order along x, it tends to 2 / (the arrangements of the
    values over the cells)."""
    import numpy as np

    x = np.asarray(xs, dtype=float)
    xc = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
    sizes = np.array([len(c) for c in cells])
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    values = np.concatenate([np.asarray(c, dtype=float) for c in cells])

    def slopes(arranged: Any) -> Any:
        return (np.add.reduceat(arranged, starts, axis=-1) / sizes * xc).sum(axis=-1)

    measured = abs(float(slopes(values)))
    shuffled = np.random.default_rng(0).permuted(np.tile(values, (resamples, 1)), axis=1)
    as_steep = int((np.abs(slopes(shuffled)) >= measured * (1 - 1e-9)).sum())
    return (as_steep + 1) / (resamples + 1)


def slope_exact_trials(levels: int, confidence: float) -> int:
    """Trials a level that decide at `confidence` a trend whose cells have no spread and stand in order
    along x: the one arrangement of the values that steep each way has the chance 2 (n!)^levels / (levels x n)!
    (at two levels, the exact rank test's)."""
    n = 2
    while 2 * math.factorial(n) ** levels / math.factorial(levels * n) > 1 - confidence:
        n += 1
    return n


def independent(*draws: Iterable[str | None]) -> bool:
    """Whether trials are independent by construction: every one drew its own seed (its row's `draw_seed`,
    present and unlike any other's), so that trials alike to the last digit are what the draw does not
    move, not one draw replayed."""
    seeds = [d for ds in draws for d in ds]
    return bool(seeds) and all(seeds) and len(set(seeds)) == len(seeds)
