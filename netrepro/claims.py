"""Claims as data: a source's sentence, quoted verbatim, and the test that decides it on our trials.

A figure declares its claims once (`Figure.claims`).  Each is the source's
own sentence as it stands in the source's text (`quote`, with where it
stands), how we read it (`reading`: which metric, which series, what margin
a word like "same" or "little" gets), and a test:

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
- `ByDesign`: the setup decides the outcome (variants that run the same code
  until a first loss, on a loss-free path): shown with the reason, counted
  in neither agrees nor differs.

A level where the interval is too wide to decide is *undecided*, with the
trials per series that would decide it at the spread measured.  Trials that
are exact replays (no spread in either series) decide nothing: they are
undecided too, and say so.  A claim holds when it holds at every level it
covers, differs when it differs at any, and is undecided otherwise.  A
figure's verdict (`verdict`) counts its claims: agrees, partly, differs,
undecided, or unjudged (no claim, or only claims set by design).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netrepro.spec import Figure, Rows

HOLDS, DIFFERS, UNDECIDED, BY_DESIGN = "holds", "differs", "undecided", "set by design"
OUTCOMES = (HOLDS, DIFFERS, UNDECIDED, BY_DESIGN)
VERDICTS = ("agrees", "partly", "differs", "undecided", "unjudged")

CONFIDENCE = 0.95  # of a difference's interval; an equivalence uses 1 - 2 x (1 - 0.95) / 2 = 90 %
BOOTSTRAP_RESAMPLES = 4000


@dataclass(frozen=True)
class Finding:
    """A test's outcome at one level (or over all its levels, for a trend), with its numbers."""

    outcome: str
    at: str  # the level, "all levels" for a trend
    estimate: str  # our numbers: the statistic, its interval, the trials it rests on
    trials_needed: int | None = None  # undecided: trials per series that would decide it, at the measured spread


@dataclass(frozen=True)
class Group:
    """The trials a test reads: one series (its label), or rows whose parameters match, at a level."""

    series: str | None = None
    where: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.series if self.series is not None else ", ".join(f"{k}={v}" for k, v in self.where.items())

    def values(
        self, fig: Figure, rows: Rows, level: Any, metric: str | Callable[[Mapping[str, str]], float | None]
    ) -> list[float]:
        """The metric of each successful trial of this group at `level` (one value a trial)."""
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
                out.append(value)
        return out


def _number(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def group(g: str | Group) -> Group:
    return g if isinstance(g, Group) else Group(series=g)


Metric = str | Callable[[Mapping[str, str]], float | None]


def _levels(fig: Figure, levels: Sequence[Any] | None) -> list[Any]:
    return list(fig.levels if levels is None else levels)


def _fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1e5 else f"{v:.4g}"


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


def trials_to_decide(iv: Interval, gap: float, confidence: float) -> int | None:
    """Trials per series that would bring the interval's half-width under `gap` (on the interval's own scale:
    log for a ratio) at the spread measured; None where nothing would (no spread, or no gap to clear)."""
    if iv.se == 0 or gap <= 0:
        return None
    z = 0.5 + confidence / 2
    from scipy import stats

    n = max(iv.n)
    return max(n + 1, math.ceil(n * (float(stats.norm.ppf(z)) * iv.se / gap) ** 2))


def _replays(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(set(a)) == 1 and len(set(b)) == 1 and len(a) > 1 and len(b) > 1


@dataclass(frozen=True)
class Better:
    """`winner` beats `loser` in `metric` at each level: higher (or lower, `higher=False`) by at least
    `worth` (a ratio's fraction, or the metric's units with `ratio=False`) to count as the word's effect."""

    metric: Metric
    winner: str | Group
    loser: str | Group
    higher: bool = True
    levels: Sequence[Any] | None = None
    worth: float = 0.05
    ratio: bool = True

    def describe(self) -> str:
        way = "higher" if self.higher else "lower"
        scale = (
            f"ratio of means, at least {self.worth:.0%} to count"
            if self.ratio
            else (f"difference of means, at least {_fmt(self.worth)} to count")
        )
        return (
            f"{group(self.winner)} {way} than {group(self.loser)} in {_name(self.metric)} ({scale}; "
            f"{CONFIDENCE:.0%} Welch interval over trials)"
        )

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        out = []
        for level in _levels(fig, self.levels):
            a = group(self.loser).values(fig, rows, level, self.metric)
            b = group(self.winner).values(fig, rows, level, self.metric)
            out.append(_better_at(str(level), a, b, self.higher, self.worth, self.ratio))
        return out


def _better_at(at: str, a: list[float], b: list[float], higher: bool, worth: float, ratio: bool) -> Finding:
    iv = welch(a, b, CONFIDENCE, ratio)
    if iv is None:
        return Finding(UNDECIDED, at, f"too few trials to estimate a spread (n = {len(b)}, {len(a)})")
    # on the scale of "how much better": >1 (or >0) is the claimed direction
    if ratio:
        gain, low, high = (iv.estimate, iv.low, iv.high) if higher else (1 / iv.estimate, 1 / iv.high, 1 / iv.low)
        none, enough = 1.0, 1.0 + worth
        text = f"ratio {_fmt(iv.estimate)} [{_fmt(iv.low)}, {_fmt(iv.high)}]"
        gap_scale: Callable[[float], float] = math.log
    else:
        gain, low, high = (iv.estimate, iv.low, iv.high) if higher else (-iv.estimate, -iv.high, -iv.low)
        none, enough = 0.0, worth
        text = f"difference {_fmt(iv.estimate)} [{_fmt(iv.low)}, {_fmt(iv.high)}]"
        gap_scale = float
    text += f", n = {iv.n[1]}, {iv.n[0]}"
    if _replays(a, b):
        return Finding(UNDECIDED, at, text + "; no spread in either series: the trials are replays", None)
    if low > none:
        return Finding(HOLDS, at, text)
    if high < enough:
        return Finding(DIFFERS, at, text)
    # to decide: the interval must leave `none` (holds) or fall below `enough` (differs), whichever is nearer
    gap = max(abs(gap_scale(gain) - gap_scale(none)), abs(gap_scale(enough) - gap_scale(gain)))
    return Finding(UNDECIDED, at, text, trials_to_decide(iv, gap, CONFIDENCE))


@dataclass(frozen=True)
class Same:
    """Every group alike the first in `metric` at each level: the ratio of means within 1 +- `margin` (the
    90 % interval inside it holds, wholly outside differs), or the difference within +- margin with
    `ratio=False`."""

    metric: Metric
    groups: Sequence[str | Group]
    margin: float
    levels: Sequence[Any] | None = None
    ratio: bool = True

    def describe(self) -> str:
        band = f"within {self.margin:.0%} of each other" if self.ratio else f"within +- {_fmt(self.margin)}"
        names = ", ".join(str(group(g)) for g in self.groups)
        return f"{names} {band} in {_name(self.metric)} (equivalence: two one-sided tests at 5 %, trials as unit)"

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        out = []
        confidence = 1 - 2 * (1 - CONFIDENCE)  # 90 %: TOST at 5 % each side
        first, *others = [group(g) for g in self.groups]
        for level in _levels(fig, self.levels):
            base = first.values(fig, rows, level, self.metric)
            parts = []
            for other in others:
                iv = welch(base, other.values(fig, rows, level, self.metric), confidence, self.ratio)
                parts.append((other, iv))
            out.append(self._combine(str(level), base, parts, fig, rows, level, confidence))
        return out

    def _combine(
        self,
        at: str,
        base: list[float],
        parts: list[tuple[Group, Interval | None]],
        fig: Figure,
        rows: Rows,
        level: Any,
        confidence: float,
    ) -> Finding:
        if self.ratio:
            lo_edge, hi_edge = 1 / (1 + self.margin), 1 + self.margin
        else:
            lo_edge, hi_edge = -self.margin, self.margin
        texts, outcomes, needed = [], [], []
        for other, iv in parts:
            if iv is None:
                texts.append(f"{other}: too few trials")
                outcomes.append(UNDECIDED)
                continue
            kind = "ratio" if iv.ratio else "difference"
            texts.append(f"{other} {kind} {_fmt(iv.estimate)} [{_fmt(iv.low)}, {_fmt(iv.high)}]")
            if _replays(base, other.values(fig, rows, level, self.metric)):
                texts[-1] += " (replays: no spread)"
                outcomes.append(UNDECIDED)
            elif lo_edge <= iv.low and iv.high <= hi_edge:
                outcomes.append(HOLDS)
            elif iv.high < lo_edge or iv.low > hi_edge:
                outcomes.append(DIFFERS)
            else:
                outcomes.append(UNDECIDED)
                f = math.log if iv.ratio else float
                # inside the band the interval must shrink inside the nearer edge; outside, past the edge it crosses
                distance = min(abs(f(iv.estimate) - f(lo_edge)), abs(f(hi_edge) - f(iv.estimate)))
                needed.append(trials_to_decide(iv, distance, confidence))
        n = f"n = {len(base)}" + "".join(f", {len(other.values(fig, rows, level, self.metric))}" for other, _ in parts)
        outcome = _all_of(outcomes)
        wanted = max((x for x in needed if x is not None), default=None) if outcome == UNDECIDED else None
        return Finding(outcome, at, "; ".join(texts) + f" ({n})", wanted)


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
        import numpy as np
        from scipy import stats

        from netrepro.plot import numeric

        position = self.x or numeric
        paired = self.against is not None
        xs: list[float] = []
        samples: list[list[float]] = []  # per level: the series' trials, then (paired) the other's
        for level in _levels(fig, self.levels):
            cells = [group(self.series).values(fig, rows, level, self.metric)]
            if self.against is not None:
                cells.append(group(self.against).values(fig, rows, level, self.metric))
            if not all(cells) or (paired and min(v for c in cells for v in c) <= 0):
                continue
            xs.append(position(level))
            samples += cells
        if len(xs) < 2:
            return [Finding(UNDECIDED, "all levels", f"trials at {len(xs)} level(s): a trend needs two")]
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
        if spread and n > 1:
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
        text = (
            f"slope {_fmt(point)} [{_fmt(float(low))}, {_fmt(float(high))}] {unit} of the level over "
            f"{len(xs)} levels, n >= {n} per cell"
        )
        if not spread or n < 2:
            return [Finding(UNDECIDED, "all levels", text + "; no spread among trials: no interval")]
        up, down = low > 0, high < 0
        if (up and self.rises) or (down and not self.rises):
            return [Finding(HOLDS, "all levels", text)]
        if up or down:
            return [Finding(DIFFERS, "all levels", text)]
        return [Finding(UNDECIDED, "all levels", text)]


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
            return [Finding(UNDECIDED, "all levels", "nothing to read in the rows")]
        holds, text = got
        return [Finding(HOLDS if holds else DIFFERS, "all levels", text)]


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
class ByDesign:
    """The setup decides the outcome: not tested, and counted in neither agrees nor differs."""

    reason: str
    could_fail: str = ""  # a derived figure that would let it fail, where there is one

    def describe(self) -> str:
        return f"set by design: {self.reason}" + (f"; {self.could_fail}" if self.could_fail else "")

    def decide(self, fig: Figure, rows: Rows) -> list[Finding]:
        return [Finding(BY_DESIGN, "all levels", self.reason)]


Test = Better | Same | Trend | Exact | Computed | ByDesign


@dataclass(frozen=True)
class Claim:
    """One sentence of the source, verbatim, and the test that decides it on our trials."""

    source: str  # the source's text file (e.g. "000_156489580aaffd1b.txt"), whose words `quote` are
    where: str  # where it stands there: "section 7.1, Figure 5"
    quote: str  # verbatim (whitespace aside); "..." joins two parts of one passage, each verbatim, in order
    test: Test
    reading: str = ""  # how we read it: the metric, the series, what a word like "little" is taken as


@dataclass(frozen=True)
class Judged:
    """A claim and what our trials say of it."""

    claim: Claim
    outcome: str
    findings: tuple[Finding, ...]

    @property
    def trials_needed(self) -> int | None:
        if self.outcome != UNDECIDED:
            return None
        return max((f.trials_needed for f in self.findings if f.trials_needed), default=None)

    def evidence(self) -> str:
        return "; ".join(
            f"{f.at}: {f.estimate}: {f.outcome}" if f.at != "all levels" else f"{f.estimate}: {f.outcome}"
            for f in self.findings
        )

    def line(self) -> str:
        return line_of(self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        return {
            "quote": self.claim.quote,
            "source": self.claim.source,
            "where": self.claim.where,
            "reading": self.claim.reading,
            "test": self.claim.test.describe(),
            "outcome": self.outcome,
            "evidence": self.evidence(),
            "findings": [dataclasses.asdict(f) for f in self.findings],
            "trials_needed": self.trials_needed,
        }


def line_of(judged: Mapping[str, Any]) -> str:
    """A judged claim (as the manifest keeps it) as the caption and the terminal print it: quote, where,
    reading, test, our numbers, outcome, and for an undecided one the trials that would decide it."""
    needed = judged.get("trials_needed")
    needs = f" (about {needed} trials per series would decide it)" if needed else ""
    reading = f" Read as: {judged['reading']}." if judged.get("reading") else ""
    return (
        f'"{judged["quote"]}" ({judged["where"]}).{reading} Test: {judged["test"]}. '
        f"Ours: {judged['evidence']}. {str(judged['outcome']).upper()}{needs}"
    )


def _all_of(outcomes: Sequence[str]) -> str:
    if not outcomes:
        return UNDECIDED
    if all(o == BY_DESIGN for o in outcomes):
        return BY_DESIGN
    if any(o == DIFFERS for o in outcomes):
        return DIFFERS
    if all(o == HOLDS for o in outcomes):
        return HOLDS
    return UNDECIDED


def judge(claims: Sequence[Claim], fig: Figure, rows: Rows) -> list[Judged]:
    """Each claim decided on the figure's rows (the latest row of each trial)."""
    out = []
    for c in claims:
        findings = tuple(c.test.decide(fig, rows))
        out.append(Judged(c, _all_of([f.outcome for f in findings]), findings))
    return out


def verdict(judged: Sequence[Judged]) -> dict[str, Any]:
    """The figure's verdict: agrees when every counted claim holds, differs when every one differs, undecided
    when none is decided, partly otherwise; unjudged without a counted claim.  Claims set by design are
    shown and counted apart."""
    counted = [j for j in judged if j.outcome != BY_DESIGN]
    outcomes = [j.outcome for j in counted]
    if not counted:
        kind = "unjudged"
    elif all(o == HOLDS for o in outcomes):
        kind = "agrees"
    elif all(o == DIFFERS for o in outcomes):
        kind = "differs"
    elif all(o == UNDECIDED for o in outcomes):
        kind = "undecided"
    else:
        kind = "partly"
    return {
        "verdict": kind,
        "counts": {o: sum(1 for j in judged if j.outcome == o) for o in OUTCOMES},
        "claims": [j.as_dict() for j in judged],
    }


def _name(metric: Metric) -> str:
    return metric if isinstance(metric, str) else getattr(metric, "__doc__", None) or metric.__name__


_SPACE = re.compile(r"\s+")
_GAP = re.compile(r"\s*(?:\.\.\.|…)\s*")


def normalized(text: str) -> str:
    """Text with every run of white space one space (a quote is verbatim "whitespace aside")."""
    return _SPACE.sub(" ", text).strip()


def found_in(quote: str, text: str) -> bool:
    """Whether the quote stands in the text: each part between "..." verbatim, in order, whitespace aside."""
    haystack, at = normalized(text), 0
    for part in _GAP.split(normalized(quote)):
        if not part:
            continue
        i = haystack.find(part, at)
        if i < 0:
            return False
        at = i + len(part)
    return True
