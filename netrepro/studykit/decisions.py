"""The tests that decide a claim on our trials, and what each finds at each level (`Finding`).

A claim (netrepro.studykit.claims) is a source's sentence and one of these:

- `Better`: one series beats another in a metric by at least the smallest
  effect the sentence's word is worth (`worth`), at each of the levels it
  covers.  The unit is the trial: the ratio of the two series' geometric
  means (or their difference, for a metric that can be zero) with a 95 %
  Welch interval over trials.  It holds where the interval lies wholly
  beyond `worth`, differs where it lies wholly short of it (no effect and
  the other direction included), and is undecided otherwise: a minimum-
  effect test, so that a gain of 9 % never holds a claim read as "at least
  10 %".
- `Same`: series alike within a declared margin: an equivalence test, two
  one-sided tests at 5 % each (statsmodels' `ttost_ind`); wholly outside the
  margin differs.  A test of separation never stands in for it.
- `Within`: a ratio inside a band the source states ("almost 40 %"), the
  same equivalence.
- `Trend`: a metric, or the ratio of two series, rising or falling at every
  step of its levels (each adjacent pair, in order along x), each step a
  minimum-effect test of its own, so that a rise that falls again differs.
- `Exact`: what a deterministic reading decides (a value read back from the
  kernel): holds or differs, nothing to estimate.  A reading of the setup
  itself is a check (`Claim.check`), shown apart and counted in no verdict.
- `Computed`: a study's own test over its rows, for what the kinds above
  cannot say; it returns findings in the same terms.
- `ByDesign`: the setup decides the outcome: forced true ("set by design",
  counted in no verdict) or forced false ("differs by design", counted as
  differs); a derived figure whose setup no longer decides it (`--set
  loss=2%`) tests the sentence with its `otherwise` test.
- `AllOf`: several of the above that one sentence needs at once;
  `Regrouped`: one of them on another view of the trials (levels of the x
  factor compared as groups, or another parameter as the levels).

Cells that do not vary (netrepro.studykit.cells).  A cell whose trials spread by no more than their
own measured timer noise (`Cell.fixed`: for a time on a path without random
loss or jitter, each trial's delay-line lateness over the holds its round
trips took; for anything else only exact equality) is a deterministic reading of the emulation, not a sample of a
network: where every cell a finding compares is so, its point estimate is
read against `worth` (holds or differs), the finding is marked
`deterministic`, and no significance test is run on it.  Such outcomes are
counted apart and never by themselves make a figure agree (claims.verdict).

A level where the interval is too wide to decide is *undecided*, with the
trials per series that would decide it at 80 % power and the spread
measured (intervals.trials_for_power).  So is a level without trials (one a
--quick run did not run, or whose trials all failed), and a trend without
trials at one of the levels it names.  The intervals themselves:
netrepro.studykit.intervals.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ground.units import numeric
from netrepro.studykit.cells import Cell, Group, Metric, all_fixed, group
from netrepro.studykit.intervals import (
    CONFIDENCE,
    Interval,
    contrast,
    current_confidence,
    current_equivalence,
    differs_confidence,
    equivalent,
    trials_for_power,
    welch,
)

if TYPE_CHECKING:
    from netrepro.studykit.spec import Figure, Rows

HOLDS, DIFFERS, UNDECIDED, BY_DESIGN = "holds", "differs", "undecided", "set by design"
ALL_LEVELS = "all levels"  # where a finding over the whole figure (a reading) stands
OUTCOMES = (HOLDS, DIFFERS, UNDECIDED, BY_DESIGN)
EQUIVALENCE = 1 - 2 * (1 - CONFIDENCE)  # 90 %: inside a band is two one-sided tests at 5 % each
# The tests read intervals.current_confidence (and current_equivalence): CONFIDENCE and EQUIVALENCE, but
# at a sequential look's own confidence inside intervals.at_confidence; their descriptions say the nominal.

BOOTSTRAP_RESAMPLES = 4000
# A bootstrap over two trials a cell draws from four resamples of each: an interval, but no spread's worth.
MIN_BOOTSTRAP_TRIALS = 3
DETERMINISTIC = "deterministic: no cell varies beyond its trials' own timer noise, so the estimate is read"


@dataclass(frozen=True)
class Finding:
    """A test's outcome at one level (or over all its levels), with its numbers."""

    outcome: str
    at: str  # the level, the step ("2% -> 6%"), or ALL_LEVELS
    estimate: str  # our numbers: the statistic, its interval, the trials it rests on
    trials_needed: int | None = None  # undecided: trials per series that would decide it (80 % power)
    deterministic: bool = False  # decided by its point estimate: the cells it compares do not vary


def _levels(fig: Figure, levels: Sequence[Any] | None) -> list[Any]:
    return list(fig.levels if levels is None else levels)


def _fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1e5 else f"{v:.4g}"


def _pct(v: float) -> str:
    return f"{v * 100:.3g} %"


def _too_few(a: Sequence[float], b: Sequence[float]) -> str:
    """Why two groups of trials give no interval: too few, or none at all (a level the run did not run)."""
    if not a or not b:
        return f"no trials here in {'either group' if not (a or b) else 'one group'} (n = {len(b)}, {len(a)})"
    return f"too few trials to estimate a spread (n = {len(b)}, {len(a)})"


def _values(c: Cell | Sequence[float]) -> list[float]:
    return list(c.values) if isinstance(c, Cell) else list(c)


def beyond(at: str, iv: Interval, wide: Interval, higher: bool, worth: float, fixed: bool, text: str) -> Finding:
    """A minimum-effect decision: the effect `iv` (its interval widened to `wide` for showing the claim
    wrong) in the claimed direction against the smallest effect worth the word: wholly beyond it holds,
    wholly short of it differs, else undecided with the trials that would decide at 80 % power; `fixed`:
    no cell varies, so the point estimate is read against it (deterministic)."""
    if iv.ratio:
        gain, low, high = (iv.estimate, iv.low, wide.high) if higher else (1 / iv.estimate, 1 / iv.high, 1 / wide.low)
        enough = 1.0 + worth
        gap = abs(math.log(gain) - math.log(enough))
    else:
        gain, low, high = (iv.estimate, iv.low, wide.high) if higher else (-iv.estimate, -iv.high, -wide.low)
        enough = worth
        gap = abs(gain - enough)
    if fixed:  # "at least": the threshold itself is enough
        return Finding(HOLDS if gain >= enough else DIFFERS, at, f"{text}; {DETERMINISTIC}", deterministic=True)
    if low > enough:
        return Finding(HOLDS, at, text)
    if high < enough:
        return Finding(DIFFERS, at, text)
    return Finding(UNDECIDED, at, text, trials_for_power(iv, gap, current_confidence()))


def better_at(
    at: str,
    a: Cell | Sequence[float],
    b: Cell | Sequence[float],
    higher: bool,
    worth: float,
    ratio: bool,
    levels: int = 1,
) -> Finding:
    """`b` better than `a` by at least `worth` at one of a claim's `levels` levels (Better's rule, for a
    study's own tests): cells given as plain values are without spread only where their values are equal."""
    va, vb = _values(a), _values(b)
    iv = welch(va, vb, current_confidence(), ratio)
    wide = welch(va, vb, differs_confidence(levels), ratio)
    if iv is None or wide is None:
        return Finding(UNDECIDED, at, _too_few(va, vb))
    kind = "ratio" if ratio else "difference"
    text = f"{kind} {_fmt(iv.estimate)} [{_fmt(iv.low)}, {_fmt(iv.high)}], n = {iv.n[1]}, {iv.n[0]}"
    return beyond(at, iv, wide, higher, worth, all_fixed(a, b), text)


def within_band(
    at: str,
    a: Cell | Sequence[float],
    b: Cell | Sequence[float],
    low: float,
    high: float,
    ratio: bool = True,
    levels: int = 1,
) -> Finding:
    """`b` against `a` inside [low, high] at one of a claim's `levels` levels: the ratio of geometric means
    (or the difference of means) shown inside the band by two one-sided tests at 5 % (statsmodels'
    ttost_ind; its 90 % Welch interval inside the band) holds; its interval widened for the levels
    (`differs_confidence`) wholly outside differs.  An open band (`low` 0 for a ratio, or an infinite edge)
    is one one-sided test.  Cells without spread are read by their estimate (deterministic)."""
    va, vb = _values(a), _values(b)
    iv = welch(va, vb, current_equivalence(), ratio)
    wide = welch(va, vb, 1 - 2 * (1 - differs_confidence(levels)), ratio)
    if iv is None or wide is None:
        return Finding(UNDECIDED, at, _too_few(va, vb))
    kind = "ratio" if ratio else "difference"
    text = f"{kind} {_fmt(iv.estimate)} [{_fmt(iv.low)}, {_fmt(iv.high)}], n = {len(vb)}, {len(va)}"
    if all_fixed(a, b):
        inside = low <= iv.estimate <= high
        return Finding(HOLDS if inside else DIFFERS, at, f"{text}; {DETERMINISTIC}", deterministic=True)
    if iv.se > 0 and equivalent(va, vb, low, high, ratio) < 1 - current_confidence():
        return Finding(HOLDS, at, text)
    if wide.high < low or wide.low > high:
        return Finding(DIFFERS, at, text)
    f = math.log if ratio else float
    edges = [e for e in (low, high) if math.isfinite(e) and (e > 0 or not ratio)]
    gap = min((abs(f(iv.estimate) - f(e)) for e in edges), default=0.0)
    inside = low <= iv.estimate <= high
    # inside the band: its interval must shrink inside the nearer edge; outside: clear of that edge
    return Finding(
        UNDECIDED, at, text, trials_for_power(iv, gap, current_equivalence() if inside else current_confidence())
    )


@dataclass(frozen=True)
class Better:
    """`winner` beats `loser` in `metric` at each level by at least `worth`: higher (or lower,
    `higher=False`), as a ratio of geometric means (or a difference of means, `ratio=False`)."""

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
        if self.ratio:
            size = f"by at least {_pct(self.worth)} (ratio of geometric means {'>' if self.higher else '<'} "
            size += f"{_fmt(1 + self.worth) if self.higher else _fmt(1 / (1 + self.worth))})"
        else:
            size = f"by at least {_fmt(self.worth)} (difference of means)"
        where = f" at {_list(self.levels)}" if self.levels is not None else " at every level"
        return (
            f"{group(self.winner)} {way} than {group(self.loser)} in {_name(self.metric)} {size}{where}: "
            f"holds where the {CONFIDENCE:.0%} Welch interval over trials lies wholly beyond that, differs where "
            "it lies wholly short of it"
        )

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        levels = _levels(fig, self.levels)
        loser, winner = group(self.loser), group(self.winner)
        return [
            better_at(
                str(level),
                loser.cell(fig, rows, level, self.metric),
                winner.cell(fig, rows, level, self.metric),
                self.higher,
                self.worth,
                self.ratio,
                len(levels) * self.family,
            )
            for level in levels
        ]


def _list(levels: Sequence[Any] | None) -> str:
    return ", ".join(str(v) for v in levels or ())


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
        band = f"within {_pct(self.margin)} of each other" if self.ratio else f"within +- {_fmt(self.margin)}"
        names = ", ".join(str(group(g)) for g in self.groups)
        where = f" at {_list(self.levels)}" if self.levels is not None else " at every level"
        return (
            f"{names} {band} in {_name(self.metric)}{where} (equivalence: two one-sided tests at 5 %, trials as "
            "unit; wholly outside the margin differs)"
        )

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        low, high = (1 / (1 + self.margin), 1 + self.margin) if self.ratio else (-self.margin, self.margin)
        first, *others = [group(g) for g in self.groups]
        levels = _levels(fig, self.levels)
        out = []
        for level in levels:
            base = first.cell(fig, rows, level, self.metric)
            found = [
                (
                    other,
                    within_band(
                        str(level),
                        base,
                        other.cell(fig, rows, level, self.metric),
                        low,
                        high,
                        self.ratio,
                        len(levels) * len(others) * self.family,
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
        where = f" at {_list(self.levels)}" if self.levels is not None else " at every level"
        if self.ratio and self.high <= 1:  # a fall as a gain: 1 - ratio
            gain = f"a gain of {_pct(1 - self.high)} or more"
            band += f", {gain}" if self.low <= 0 else f", {gain} and {_pct(1 - self.low)} at most"
        return (
            f"{group(self.of)} against {group(self.to)} in {_name(self.metric)}: the {kind} {band}{where} (two "
            "one-sided tests at 5 %: its 90 % Welch interval over trials inside the band holds, wholly outside "
            "differs)"
        )

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        levels = _levels(fig, self.levels)
        to, of = group(self.to), group(self.of)
        return [
            within_band(
                str(level),
                to.cell(fig, rows, level, self.metric),
                of.cell(fig, rows, level, self.metric),
                self.low,
                self.high,
                self.ratio,
                len(levels),
            )
            for level in levels
        ]


def deterministic_in(outcome: str, findings: Sequence[Finding]) -> bool:
    """Whether an outcome over several findings rests on deterministic ones: a hold (all hold) where any
    part held only so; a difference where every part that differs does so only deterministically."""
    if outcome == HOLDS:
        return any(f.deterministic for f in findings)
    if outcome == DIFFERS:
        return all(f.deterministic for f in findings if f.outcome == DIFFERS)
    return False


def joined(at: str, parts: Sequence[tuple[str, Finding]]) -> Finding:
    """One finding of several tests at one place (each group against the first): holds where all hold,
    differs where any differs; undecided with the most trials any of them needs."""
    outcome = all_of([f.outcome for _, f in parts])
    needed = [f.trials_needed for _, f in parts if f.outcome == UNDECIDED and f.trials_needed]
    text = "; ".join(f"{name}: {f.estimate}" + (f": {f.outcome}" if len(parts) > 1 else "") for name, f in parts)
    det = deterministic_in(outcome, [f for _, f in parts])
    return Finding(outcome, at, text, max(needed) if outcome == UNDECIDED and needed else None, det)


@dataclass(frozen=True)
class Trend:
    """`metric` of `series` (or the ratio `series` / `against`) rising (`rises=True`) or falling at every
    step of the levels: each adjacent pair, in order along x (`x`: a level's position, default the level as
    a number), a minimum-effect test of its own (the ratio of geometric means from one level to the next,
    or of the two series' ratios, by at least `worth`).  It holds where every step does, differs where one
    step is wholly short of `worth` (a fall, or no rise worth the word)."""

    metric: Metric
    series: str | Group
    rises: bool
    against: str | Group | None = None
    levels: Sequence[Any] | None = None
    x: Callable[[Any], float] | None = None
    worth: float = 0.05  # the smallest step that counts: this project's smallest effect (5 %)
    family: int = 1

    def describe(self) -> str:
        what = f"{group(self.series)}" + (f" / {group(self.against)}" if self.against is not None else "")
        where = f" {_list(self.levels)}" if self.levels is not None else ""
        return (
            f"{_name(self.metric)} of {what} {'rising' if self.rises else 'falling'} by at least "
            f"{_pct(self.worth)} at every step of the levels{where} (each adjacent pair in order: ratio of "
            f"geometric means, {CONFIDENCE:.0%} Welch interval over trials; holds where every step's interval "
            "lies wholly beyond that, differs where one lies wholly short of it)"
        )

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        position = self.x or numeric
        levels = sorted(_levels(fig, self.levels), key=position)
        cells: list[list[Cell]] = []
        not_run: list[str] = []
        for level in levels:
            c = [group(self.series).cell(fig, rows, level, self.metric)]
            if self.against is not None:
                c.append(group(self.against).cell(fig, rows, level, self.metric))
            if not all(x.values for x in c):
                not_run.append(str(level))
            cells.append(c)
        if not_run:
            return [
                Finding(
                    UNDECIDED,
                    ALL_LEVELS,
                    f"no trials at {', '.join(not_run)}: a trend over fewer levels than the sentence names is not "
                    "its claim",
                )
            ]
        if len(levels) < 2:
            return [Finding(UNDECIDED, ALL_LEVELS, f"trials at {len(levels)} level(s): a trend needs two")]
        steps = len(levels) - 1
        return [
            self._step(f"{levels[i]} -> {levels[i + 1]}", cells[i], cells[i + 1], steps * self.family)
            for i in range(steps)
        ]

    def _step(self, at: str, before: list[Cell], after: list[Cell], family: int) -> Finding:
        values = [v for c in (*before, *after) for v in c.values]
        n = min(len(c.values) for c in (*before, *after))
        if n < 2:
            return Finding(UNDECIDED, at, f"too few trials to estimate a spread (n = {n} in a cell)")
        ratio = min(values) > 0
        fixed = all_fixed(*before, *after)
        if self.against is None:
            iv = welch(before[0].values, after[0].values, current_confidence(), ratio)
            wide = welch(before[0].values, after[0].values, differs_confidence(family), ratio)
        else:
            if not ratio:
                return Finding(UNDECIDED, at, "a ratio of series needs values above 0")
            logs = [[math.log(v) for v in c.values] for c in (after[0], after[1], before[0], before[1])]
            iv = contrast(logs, [1.0, -1.0, -1.0, 1.0], current_confidence(), True)
            wide = contrast(logs, [1.0, -1.0, -1.0, 1.0], differs_confidence(family), True)
        assert iv is not None and wide is not None  # two or more trials a cell, all above 0 for a ratio
        kind = "step ratio" if ratio else "step difference"
        text = f"{kind} {_fmt(iv.estimate)} [{_fmt(iv.low)}, {_fmt(iv.high)}], n >= {n}"
        worth = self.worth if ratio else 0.0
        return beyond(at, iv, wide, self.rises, worth, fixed, text)


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
    """A study's own test: `decide(fig, rows)` returns findings, each over independent trials.  `reads`:
    the other figures of the study whose rows it reads too (their digests go into the judgement)."""

    what: str
    decide_: Callable[[Figure, Rows], list[Finding]]
    reads: tuple[str, ...] = ()

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
    """The setup decides the outcome: `forced` HOLDS (set by design: counted in no verdict) or DIFFERS (the
    design makes the sentence false: counted as differs, with the reason).

    `holds_while(fig)` says whether a figure's setup still decides it (a loss-free path; a response that
    fits the first flight); a derived figure whose setup does not (`--set loss=2%`) tests the sentence with
    `otherwise` instead, or, without one, leaves the claim out and says so (`as_derived`)."""

    reason: str
    could_fail: str = ""  # a derived figure that would let it fail (or hold), where there is one
    holds_while: Callable[[Figure], bool] | None = None
    otherwise: Test | None = None
    forced: str = HOLDS

    def describe(self) -> str:
        kind = "set by design" if self.forced == HOLDS else "differs by design"
        text = f"{kind}: {self.reason}" + (f"; {self.could_fail}" if self.could_fail else "")
        if self.otherwise is not None:
            text += f"; where the setup does not decide it, tested as: {self.otherwise.describe()}"
        return text

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        if self.forced == HOLDS:
            return [Finding(BY_DESIGN, ALL_LEVELS, "not tested: the setup decides it (above)")]
        return [Finding(DIFFERS, ALL_LEVELS, "differs by design: the setup makes the sentence false (above)")]


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
            view = dataclasses.replace(fig, x=VIEW_KEY, levels=(ALL_LEVELS,))
            rows = [type(r)({**r, VIEW_KEY: ALL_LEVELS}) for r in rows]  # a Reading stays one (reads.py)
        else:
            view = dataclasses.replace(fig, x=self.x, levels=self.levels)
        found = self.test.decide(view, rows)
        return [
            dataclasses.replace(f, at=self.at.format(f.at) if f.at != ALL_LEVELS else self.at.format("")) for f in found
        ]


VIEW_KEY = "__level__"  # the column of a Regrouped view's one level: it chooses rows, measures nothing


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


def ratio_of_ratios(at: str, cells: Sequence[Cell], worth: float, levels: int = 1) -> Finding:
    """(A / B) over (C / D) in geometric means, greater by at least `worth`, for `cells` A, B, C, D: a
    gain on one figure (A over B) against a gain on another (C over D), the four series' trials as units
    (intervals.contrast), decided as `Better` is."""
    if any(len(c.values) < 2 for c in cells) or min((v for c in cells for v in c.values), default=0) <= 0:
        return Finding(
            UNDECIDED, at, f"too few trials to estimate a spread (n = {', '.join(str(len(c.values)) for c in cells)})"
        )
    logs = [[math.log(v) for v in c.values] for c in cells]
    iv = contrast(logs, [1.0, -1.0, -1.0, 1.0], current_confidence(), True)
    wide = contrast(logs, [1.0, -1.0, -1.0, 1.0], differs_confidence(levels), True)
    gains = [math.exp(sum(logs[i]) / len(logs[i]) - sum(logs[i + 1]) / len(logs[i + 1])) for i in (0, 2)]
    text = (
        f"gains {_fmt(gains[0])}x and {_fmt(gains[1])}x: ratio {_fmt(iv.estimate)} [{_fmt(iv.low)}, "
        f"{_fmt(iv.high)}], n >= {min(iv.n)} per series"
    )
    return beyond(at, iv, wide, True, worth, all_fixed(*cells), text)
