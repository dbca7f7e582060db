"""The tests that decide a claim on our trials, and what each finds at each level (`Finding`).

A claim (netrepro.studykit.claims) is a source's sentence and one of these:

- `Better`: one series beats another in a metric, at each of the levels the
  sentence covers.  The unit is the trial: the ratio of the two series'
  geometric means (or their difference, for a metric that can be zero) with
  a 95 % Welch t interval over trials.  It holds when the interval excludes
  no effect in the claimed direction; it differs when the whole interval
  lies below the smallest effect the word is worth (`worth`), which
  includes no effect and the other direction.
- `Same`: series alike within a declared margin: an equivalence test, two
  one-sided tests at 5 % each (the 90 % interval inside the margin holds;
  wholly outside differs).
- `Trend`: a metric, or the ratio of two series, rising or falling over all
  the levels it names, not only their two ends: the slope of its least
  squares line over the levels, with a bootstrap interval over trials
  (scipy.stats.bootstrap; BCa, percentile where BCa is undefined).
- `Exact`: what a deterministic reading decides (a value read back from the
  kernel): holds or differs, nothing to estimate.
- `Computed`: a study's own test over its rows, for what the kinds above
  cannot say; it returns findings in the same terms.
- `Within`: a ratio inside a band the source states ("almost 40 %").
- `ByDesign`: the setup decides the outcome (variants that run the same code
  until a first loss, on a loss-free path): shown with the reason, counted
  in neither agrees nor differs; a derived figure whose setup no longer
  decides it (`--set loss=2%`) tests the sentence with its `otherwise` test.
- `AllOf`: several of the above that one sentence needs at once;
  `Regrouped`: one of them on another view of the trials (levels of the x
  factor compared as groups, or another parameter as the levels).

A level where the interval is too wide to decide is *undecided*, with the
trials per series that would decide it at the spread measured. Where neither
series has any spread, a t interval has nothing to stand on: trials that
each drew their own seed (a row's `draw_seed`, `independent`) are then a
measurement the draw does not move, and the exact rank test decides it
(`rank_exact`: the one arrangement that puts one series wholly beside the
other has the chance 1 / C(m + n, m) under no effect: four trials a series
decide at 95 %, five where a claim covers two levels); trials without their
own draws are replays and decide nothing: undecided, and saying so. So is a
level without trials (one a --quick run did not run, or whose trials all
failed), and a trend without trials at one of the levels it names, whatever
its slope over the rest: the sentence's trend is over all of them. A trend
whose cells have no spread, each trial its own draw, is decided by the
permutation test of its slope (`slope_permutation`).
The intervals themselves (Welch, the exact rank test, the slope's permutation test, the trials that
would decide): netrepro.studykit.intervals.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ground.units import numeric
from netrepro.studykit.intervals import (
    CONFIDENCE,
    differs_confidence,
    independent,
    rank_exact,
    rank_exact_trials,
    slope_exact_trials,
    slope_permutation,
    trials_to_clear,
    trials_to_decide,
    welch,
)

if TYPE_CHECKING:
    from netrepro.studykit.spec import Figure, Rows

HOLDS, DIFFERS, UNDECIDED, BY_DESIGN = "holds", "differs", "undecided", "set by design"
ALL_LEVELS = "all levels"  # where a finding over the whole figure (a trend, a reading) stands
OUTCOMES = (HOLDS, DIFFERS, UNDECIDED, BY_DESIGN)

BOOTSTRAP_RESAMPLES = 4000
# A bootstrap over two trials a cell draws from four resamples of each: an interval, but no spread's worth.
MIN_BOOTSTRAP_TRIALS = 3


@dataclass(frozen=True)
class Finding:
    """A test's outcome at one level (or over all its levels, for a trend), with its numbers."""

    outcome: str
    at: str  # the level, ALL_LEVELS for a trend
    estimate: str  # our numbers: the statistic, its interval, the trials it rests on
    trials_needed: int | None = None  # undecided: trials per series that would decide it, at the measured spread


Metric = str | Callable[[Mapping[str, str]], float | None]


@dataclass(frozen=True)
class Group:
    """The trials a test reads: one series (its label), or rows whose parameters match, at a level."""

    series: str | None = None
    where: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.series if self.series is not None else ", ".join(f"{k}={v}" for k, v in self.where.items())

    def trials(self, fig: Figure, rows: Rows, level: Any, metric: Metric) -> list[tuple[float, str]]:
        """The metric of each successful trial of this group at `level`, and the seed of the trial's draw
        ("" for a row from before trials drew their own)."""
        out = []
        for r in rows:
            if r.get("status") != "ok" or str(r.get(fig.x)) != str(level):
                continue
            if self.series is not None and r.get("series", "") != self.series:
                continue
            if any(str(r.get(k)) != str(v) for k, v in self.where.items()):
                continue
            value = metric(r) if callable(metric) else _number(r.get(metric))
            if value is not None and math.isfinite(value):
                out.append((value, str(r.get("draw_seed") or "")))
        return out

    def values(self, fig: Figure, rows: Rows, level: Any, metric: Metric) -> list[float]:
        """The metric of each successful trial of this group at `level` (one value a trial)."""
        return [value for value, _ in self.trials(fig, rows, level, metric)]


def _independent_at(fig: Figure, rows: Rows, level: Any, metric: Metric, *groups: Group) -> bool:
    return independent(*([d for _, d in g.trials(fig, rows, level, metric)] for g in groups))


def _number(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def group(g: str | Group) -> Group:
    return g if isinstance(g, Group) else Group(series=g)


def _levels(fig: Figure, levels: Sequence[Any] | None) -> list[Any]:
    return list(fig.levels if levels is None else levels)


def _fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1e5 else f"{v:.4g}"


def _too_few(a: Sequence[float], b: Sequence[float]) -> str:
    """Why two groups of trials give no interval: too few, or none at all (a level the run did not run)."""
    if not a or not b:
        return f"no trials here in {'either group' if not (a or b) else 'one group'} (n = {len(b)}, {len(a)})"
    return f"too few trials to estimate a spread (n = {len(b)}, {len(a)})"


def _no_spread(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(set(a)) == 1 and len(set(b)) == 1 and len(a) > 1 and len(b) > 1


_REPLAYS = "; no spread in either series and no draw of their own: the trials are replays"


def _decided_exactly(
    at: str, text: str, a: Sequence[float], b: Sequence[float], checks: Sequence[tuple[str, bool, float]]
) -> Finding:
    """Two series without spread, each trial its own draw: the first of `checks` (an outcome, whether the
    difference shows it, the confidence it needs) that the difference shows, where `rank_exact` lets m and n
    trials decide it at that confidence; else undecided, with the trials that would."""
    text += (
        f"; no spread in either series, each trial its own draw: the exact rank test (chance of the "
        f"separation under no effect 1/{math.comb(len(a) + len(b), len(a))} each side)"
    )
    for outcome, shown, confidence in checks:
        if shown:
            if rank_exact(len(a), len(b), confidence):
                return Finding(outcome, at, text)
            return Finding(UNDECIDED, at, text, rank_exact_trials(confidence))
    return Finding(UNDECIDED, at, text)


@dataclass(frozen=True)
class Better:
    """`winner` beats `loser` in `metric` at each level: higher (or lower, `higher=False`).

    It holds where the 95 % interval of the ratio of geometric means (the difference of means with
    `ratio=False`) excludes no effect in the claimed direction; it differs where the interval, widened for
    the levels the claim covers (`differs_confidence`), lies wholly below a gain of `worth`: no effect worth
    the word, or the other way round."""

    metric: Metric
    winner: str | Group
    loser: str | Group
    higher: bool = True
    levels: Sequence[Any] | None = None
    worth: float = 0.05
    ratio: bool = True
    family: int = 1  # the tests beside this one whose "differs" shows the claim wrong (differs_confidence)

    def describe(self) -> str:
        way = "higher" if self.higher else "lower"
        worth = f"{self.worth:.0%}" if self.ratio else _fmt(self.worth)
        scale = "ratio of geometric means" if self.ratio else "difference of means"
        return (
            f"{group(self.winner)} {way} than {group(self.loser)} in {_name(self.metric)} ({scale}, "
            f"{CONFIDENCE:.0%} Welch interval over trials: holds where it excludes no effect, differs where it "
            f"excludes a gain of {worth})"
        )

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        levels = _levels(fig, self.levels)
        out = []
        loser, winner = group(self.loser), group(self.winner)
        for level in levels:
            a = loser.values(fig, rows, level, self.metric)
            b = winner.values(fig, rows, level, self.metric)
            alone = _independent_at(fig, rows, level, self.metric, loser, winner)
            out.append(
                better_at(str(level), a, b, self.higher, self.worth, self.ratio, len(levels) * self.family, alone)
            )
        return out


def better_at(
    at: str,
    a: list[float],
    b: list[float],
    higher: bool,
    worth: float,
    ratio: bool,
    levels: int = 1,
    independent: bool = False,
) -> Finding:
    """`b` better than `a` at one of a claim's `levels` levels (Better's rule, for a study's own tests);
    `independent`: each trial drew its own seed, so that no spread at all is decided by `rank_exact`."""
    iv = welch(a, b, CONFIDENCE, ratio)
    wide = welch(a, b, differs_confidence(levels), ratio)
    if iv is None or wide is None:
        return Finding(UNDECIDED, at, _too_few(a, b))
    # on the scale of "how much better": above 1 (or 0) is the claimed direction
    if ratio:
        gain, low = (iv.estimate, iv.low) if higher else (1 / iv.estimate, 1 / iv.high)
        high = wide.high if higher else 1 / wide.low
        none, enough = 1.0, 1.0 + worth
        text = f"ratio {_fmt(iv.estimate)} [{_fmt(iv.low)}, {_fmt(iv.high)}]"
        scale: Callable[[float], float] = math.log
    else:
        gain, low = (iv.estimate, iv.low) if higher else (-iv.estimate, -iv.high)
        high = wide.high if higher else -wide.low
        none, enough = 0.0, worth
        text = f"difference {_fmt(iv.estimate)} [{_fmt(iv.low)}, {_fmt(iv.high)}]"
        scale = float
    text += f", n = {iv.n[1]}, {iv.n[0]}"
    if _no_spread(a, b):
        if not independent:
            return Finding(UNDECIDED, at, text + _REPLAYS)
        checks = ((HOLDS, low > none, CONFIDENCE), (DIFFERS, high < enough, differs_confidence(levels)))
        return _decided_exactly(at, text, a, b, checks)
    if low > none:
        return Finding(HOLDS, at, text)
    if high < enough:
        return Finding(DIFFERS, at, text)
    # to decide: the interval must leave `none` (holds) or fall below `enough` (differs), whichever is nearer
    gap = max(abs(scale(gain) - scale(none)), abs(scale(enough) - scale(gain)))
    return Finding(UNDECIDED, at, text, trials_to_decide(iv, gap, CONFIDENCE))


def within_band(
    at: str,
    a: list[float],
    b: list[float],
    low: float,
    high: float,
    ratio: bool = True,
    levels: int = 1,
    independent: bool = False,
) -> Finding:
    """`b` against `a` inside [low, high] at one of a claim's `levels` levels: the ratio of geometric means
    (or the difference of means) whose 90 % Welch interval lies inside the band holds (two one-sided tests
    at 5 %), whose interval widened for the levels (`differs_confidence`) lies wholly outside differs.
    An open band (`low` 0 for a ratio, or an infinite edge) is one one-sided test.  `independent`: each
    trial drew its own seed, so that no spread at all is decided by `rank_exact`."""
    iv = welch(a, b, 1 - 2 * (1 - CONFIDENCE), ratio)
    wide = welch(a, b, 1 - 2 * (1 - differs_confidence(levels)), ratio)
    if iv is None or wide is None:
        return Finding(UNDECIDED, at, _too_few(a, b))
    kind = "ratio" if ratio else "difference"
    text = f"{kind} {_fmt(iv.estimate)} [{_fmt(iv.low)}, {_fmt(iv.high)}], n = {len(b)}, {len(a)}"
    if _no_spread(a, b):
        if not independent:
            return Finding(UNDECIDED, at, text + _REPLAYS)
        checks = (
            (HOLDS, low <= iv.low and iv.high <= high, 1 - 2 * (1 - CONFIDENCE)),
            (DIFFERS, wide.high < low or wide.low > high, 1 - 2 * (1 - differs_confidence(levels))),
        )
        return _decided_exactly(at, text, a, b, checks)
    if low <= iv.low and iv.high <= high:
        return Finding(HOLDS, at, text)
    if wide.high < low or wide.low > high:
        return Finding(DIFFERS, at, text)
    f = math.log if ratio else float
    edges = [e for e in (low, high) if math.isfinite(e) and (e > 0 or not ratio)]
    gap = min((abs(f(iv.estimate) - f(e)) for e in edges), default=0.0)
    return Finding(UNDECIDED, at, text, trials_to_decide(iv, gap, 1 - 2 * (1 - CONFIDENCE)))


@dataclass(frozen=True)
class Same:
    """Every group alike the first in `metric` at each level: the ratio of geometric means within
    1 +- `margin` (1 / (1 + margin) to 1 + margin), or the difference within +- margin with `ratio=False`
    (`within_band`: an equivalence, two one-sided tests at 5 %)."""

    metric: Metric
    groups: Sequence[str | Group]
    margin: float
    levels: Sequence[Any] | None = None
    ratio: bool = True
    family: int = 1  # the tests beside this one whose "differs" shows the claim wrong (differs_confidence)

    def describe(self) -> str:
        band = f"within {self.margin:.0%} of each other" if self.ratio else f"within +- {_fmt(self.margin)}"
        names = ", ".join(str(group(g)) for g in self.groups)
        return f"{names} {band} in {_name(self.metric)} (equivalence: two one-sided tests at 5 %, trials as unit)"

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        low, high = (1 / (1 + self.margin), 1 + self.margin) if self.ratio else (-self.margin, self.margin)
        first, *others = [group(g) for g in self.groups]
        levels = _levels(fig, self.levels)
        out = []
        for level in levels:
            base = first.values(fig, rows, level, self.metric)
            found = [
                (
                    other,
                    within_band(
                        str(level),
                        base,
                        other.values(fig, rows, level, self.metric),
                        low,
                        high,
                        self.ratio,
                        len(levels) * len(others) * self.family,
                        _independent_at(fig, rows, level, self.metric, first, other),
                    ),
                )
                for other in others
            ]
            out.append(joined(str(level), [(str(other), f) for other, f in found]))
        return out


@dataclass(frozen=True)
class Within:
    """`of` against `to` in `metric` inside [low, high], a number the source states ("almost 40 %" as a
    ratio of 1.35 to 1.45, "50%" as 0.45 to 0.55), at each level: `within_band`.  An open band (`low` 0
    or `high` infinite) is a one-sided test."""

    metric: Metric
    of: str | Group
    to: str | Group
    low: float = 0.0
    high: float = math.inf
    levels: Sequence[Any] | None = None
    ratio: bool = True

    def describe(self) -> str:
        if self.low > 0 and math.isfinite(self.high):
            band = f"between {_fmt(self.low)} and {_fmt(self.high)}"
        else:
            band = f"at most {_fmt(self.high)}" if self.low <= 0 else f"at least {_fmt(self.low)}"
        kind = "ratio of geometric means" if self.ratio else "difference of means"
        return (
            f"{group(self.of)} against {group(self.to)} in {_name(self.metric)}: the {kind} {band} (its 90 % "
            "Welch interval over trials inside the band holds, wholly outside differs)"
        )

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        levels = _levels(fig, self.levels)
        to, of = group(self.to), group(self.of)
        return [
            within_band(
                str(level),
                to.values(fig, rows, level, self.metric),
                of.values(fig, rows, level, self.metric),
                self.low,
                self.high,
                self.ratio,
                len(levels),
                _independent_at(fig, rows, level, self.metric, to, of),
            )
            for level in levels
        ]


def joined(at: str, parts: Sequence[tuple[str, Finding]]) -> Finding:
    """One finding of several tests at one place (each group against the first): holds where all hold,
    differs where any differs; undecided with the most trials any of them needs."""
    outcome = all_of([f.outcome for _, f in parts])
    needed = [f.trials_needed for _, f in parts if f.outcome == UNDECIDED and f.trials_needed]
    text = "; ".join(f"{name}: {f.estimate}" + (f": {f.outcome}" if len(parts) > 1 else "") for name, f in parts)
    return Finding(outcome, at, text, max(needed) if outcome == UNDECIDED and needed else None)


@dataclass(frozen=True)
class Trend:
    """`metric` of `series` (or the ratio `series` / `against`) rising (`rises=True`) or falling over the
    levels: the least-squares slope over all of them, with a bootstrap interval over trials."""

    metric: Metric
    series: str | Group
    rises: bool
    against: str | Group | None = None
    levels: Sequence[Any] | None = None
    x: Callable[[Any], float] | None = None  # a level's position (default: the level as a number)

    def describe(self) -> str:
        what = f"{group(self.series)}" + (f" / {group(self.against)}" if self.against is not None else "")
        return (
            f"{_name(self.metric)} of {what} {'rises' if self.rises else 'falls'} over the levels "
            f"(least-squares slope over all levels, {CONFIDENCE:.0%} bootstrap interval over trials)"
        )

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        position = self.x or numeric
        paired = self.against is not None
        xs: list[float] = []
        samples: list[list[float]] = []  # per level: the series' trials, then (paired) the other's
        draws: list[list[str]] = []  # the seed of each of those trials' draws
        not_run: list[str] = []  # levels the sentence names without a trial (a --quick run's, say)
        for level in _levels(fig, self.levels):
            trials = [group(self.series).trials(fig, rows, level, self.metric)]
            if self.against is not None:
                trials.append(group(self.against).trials(fig, rows, level, self.metric))
            cells = [[value for value, _ in t] for t in trials]
            if not all(cells):
                not_run.append(str(level))
                continue
            if paired and min(v for c in cells for v in c) <= 0:
                continue
            xs.append(position(level))
            samples += cells
            draws += [[draw for _, draw in t] for t in trials]
        missing = f"no trials at {', '.join(not_run)}" if not_run else ""
        if len(xs) < 2:
            text = f"trials at {len(xs)} level(s): a trend needs two"
            return [Finding(UNDECIDED, ALL_LEVELS, text + (f" ({missing})" if missing else ""))]
        found = self._over(xs, samples, independent(*draws))
        if missing:
            # a slope over some of the levels is not the sentence's, which names all of them: more trials at
            # the levels run would not decide it either
            why = "a trend over fewer levels than the sentence names is not its claim"
            return [Finding(UNDECIDED, ALL_LEVELS, f"{found.estimate}; {missing}: {why}")]
        return [found]

    def _over(self, xs: list[float], samples: list[list[float]], independent_trials: bool = False) -> Finding:
        """The slope over the levels at `xs` with each level's trials in `samples`, and what it decides."""
        import numpy as np
        from scipy import stats

        paired = self.against is not None
        x = np.array(xs, dtype=float)
        xc = x - x.mean()

        def slope(*cells: Any, axis: int = -1) -> Any:
            means = [np.mean(c, axis=axis) for c in cells]
            if paired:
                y = np.log(np.stack([means[i] / means[i + 1] for i in range(0, len(means), 2)], axis=-1))
            else:
                y = np.stack(means, axis=-1)
            return (y * xc).sum(axis=-1) / (xc**2).sum()

        arrays = [np.asarray(s, dtype=float) for s in samples]
        point = float(slope(*arrays))
        n = min(len(s) for s in samples)
        spread = any(len(set(s)) > 1 for s in samples)
        low = high = point
        if spread and n >= MIN_BOOTSTRAP_TRIALS:
            kw = {
                "n_resamples": BOOTSTRAP_RESAMPLES,
                "confidence_level": CONFIDENCE,
                "vectorized": True,
                "random_state": np.random.default_rng(0),
            }
            res = stats.bootstrap(arrays, slope, method="BCa", **kw)
            low, high = res.confidence_interval
            if not (math.isfinite(low) and math.isfinite(high)):
                res = stats.bootstrap(arrays, slope, method="percentile", **kw)
                low, high = res.confidence_interval
        unit = "log ratio per unit" if self.against is not None else "per unit"
        interval = f" [{_fmt(float(low))}, {_fmt(float(high))}]" if spread and n >= MIN_BOOTSTRAP_TRIALS else ""
        text = f"slope {_fmt(point)}{interval} {unit} of the level over {len(xs)} levels, n >= {n} per cell"
        if not spread and n < 2:
            return Finding(
                UNDECIDED, ALL_LEVELS, f"{text}; one trial a cell: no spread to speak of", MIN_BOOTSTRAP_TRIALS
            )
        if not spread and independent_trials:
            return self._without_spread(xs, samples, point, text)
        if not spread:
            return Finding(
                UNDECIDED,
                ALL_LEVELS,
                text + "; no spread among trials, which share a draw (or have none): replays, no interval",
            )
        if n < MIN_BOOTSTRAP_TRIALS:
            return Finding(
                UNDECIDED,
                ALL_LEVELS,
                text + f"; a bootstrap needs {MIN_BOOTSTRAP_TRIALS} trials a cell: resampling two gives no spread to "
                "speak of",
                MIN_BOOTSTRAP_TRIALS,
            )
        up, down = low > 0, high < 0
        if (up and self.rises) or (down and not self.rises):
            return Finding(HOLDS, ALL_LEVELS, text)
        if up or down:
            return Finding(DIFFERS, ALL_LEVELS, text)
        # the interval's half-width, as a standard error, scaled to the trials that would clear zero
        return Finding(UNDECIDED, ALL_LEVELS, text, trials_to_clear(point, float(low), float(high), 0.0, n, CONFIDENCE))

    def _without_spread(self, xs: list[float], samples: list[list[float]], point: float, text: str) -> Finding:
        """Every trial of each cell alike, each its own draw: the permutation test of the slope decides."""
        import numpy as np

        cells = samples
        if self.against is not None:  # a trial's value is its level's log ratio; pairs as many as the fewer
            pairs = zip(samples[::2], samples[1::2], strict=True)
            cells = [[math.log(a[0] / b[0])] * min(len(a), len(b)) for a, b in pairs]
        chance = slope_permutation(xs, cells)
        text += (
            f"; no spread among trials, each its own draw: the permutation test of the slope (chance of one as "
            f"steep under no trend {_fmt(chance)})"
        )
        if chance <= 1 - CONFIDENCE:
            return Finding(HOLDS if (point > 0) == self.rises else DIFFERS, ALL_LEVELS, text)
        in_order = [c[0] for c, _ in sorted(zip(cells, xs, strict=True), key=lambda cx: cx[1])]
        steps = np.diff(in_order)
        ordered = bool(np.all(steps > 0) or np.all(steps < 0))
        return Finding(UNDECIDED, ALL_LEVELS, text, slope_exact_trials(len(cells), CONFIDENCE) if ordered else None)


@dataclass(frozen=True)
class Exact:
    """A deterministic reading (a value read back from the kernel): `check(fig, rows)` returns (holds,
    our numbers), or None where the rows hold nothing to read."""

    what: str
    check: Callable[[Figure, Rows], tuple[bool, str] | None]

    def describe(self) -> str:
        return self.what

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        got = self.check(fig, rows)
        if got is None:
            return [Finding(UNDECIDED, ALL_LEVELS, "nothing to read in the rows")]
        holds, text = got
        return [Finding(HOLDS if holds else DIFFERS, ALL_LEVELS, text)]


@dataclass(frozen=True)
class Computed:
    """A study's own test: `decide(fig, rows)` returns findings, each over independent trials."""

    what: str
    decide_: Callable[[Figure, Rows], list[Finding]]

    def describe(self) -> str:
        return self.what

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        return self.decide_(fig, rows)


@dataclass(frozen=True)
class AllOf:
    """Several tests one sentence needs at once ("outperforms both"): its findings are all of theirs."""

    tests: tuple[Test, ...]

    def describe(self) -> str:
        return "; and ".join(t.describe() for t in self.tests)

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        return [f for t in self.tests for f in t.decide(fig, rows)]


@dataclass(frozen=True)
class ByDesign:
    """The setup decides the outcome: not tested, and counted in neither agrees nor differs.

    `holds_while(fig)` says whether a figure's setup still decides it (a loss-free path; a response that
    fits the first flight); a derived figure whose setup does not (`--set loss=2%`) tests the sentence with
    `otherwise` instead, or, without one, leaves the claim out and says so (`as_derived`)."""

    reason: str
    could_fail: str = ""  # a derived figure that would let it fail, where there is one
    holds_while: Callable[[Figure], bool] | None = None
    otherwise: Test | None = None

    def describe(self) -> str:
        return f"set by design: {self.reason}" + (f"; {self.could_fail}" if self.could_fail else "")

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        return [Finding(BY_DESIGN, ALL_LEVELS, "not tested: the setup decides it (above)")]


def unchanged(**values: str | None) -> Callable[[Figure], bool]:
    """A figure whose fixed parameters are still these (None: not set, the lab's default): the usual
    `holds_while` of a claim set by design (`unchanged(loss="0%", queue=None)`)."""

    def still(fig: Figure) -> bool:
        return all((str(fig.fixed[k]) if k in fig.fixed else None) == v for k, v in values.items())

    return still


@dataclass(frozen=True)
class Regrouped:
    """`test` on another view of the figure's trials, for a sentence that compares what the figure's own
    x factor keeps apart: without `x`, one level holding every trial, so that the test's groups
    (`Group(where=...)`) may name levels of the x factor (IW 10 against IW 3; an algorithm against another
    where the algorithms are the levels); with `x`, another parameter of the rows as the levels (a trend
    over n at one loss rate).  The trial stays the unit: each row is one trial, in one group."""

    test: Test
    at: str = "{}"  # where each finding stands, "{}" taking the view's own place ("IW 3 -> 10", "0.1 %, over n")
    x: str | None = None
    levels: tuple[Any, ...] = ()

    def describe(self) -> str:
        scope = "groups drawn across the figure's x factor" if self.x is None else f"over {self.x} as the levels"
        return f"{self.test.describe()} [{scope}]"

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        if self.x is None:
            view = dataclasses.replace(fig, x=_VIEW_KEY, levels=(ALL_LEVELS,))
            rows = [{**r, _VIEW_KEY: ALL_LEVELS} for r in rows]
        else:
            view = dataclasses.replace(fig, x=self.x, levels=self.levels)
        return [dataclasses.replace(f, at=self.at.format(f.at)) for f in self.test.decide(view, rows)]


_VIEW_KEY = "__level__"


Test = Better | Same | Within | Trend | Exact | Computed | ByDesign | AllOf | Regrouped


def all_of(outcomes: Sequence[str]) -> str:
    if not outcomes:
        return UNDECIDED
    if all(o == BY_DESIGN for o in outcomes):
        return BY_DESIGN
    if any(o == DIFFERS for o in outcomes):
        return DIFFERS
    if all(o == HOLDS for o in outcomes):
        return HOLDS
    return UNDECIDED


def _name(metric: Metric) -> str:
    return metric if isinstance(metric, str) else getattr(metric, "__doc__", None) or metric.__name__
