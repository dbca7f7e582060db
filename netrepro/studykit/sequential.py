"""Deciding a claim over several looks at growing trials (`--until-decided`), with the error held over all looks.

Trials are added in batches only while a minimum-effect claim (decisions.Better's rule) is undecided; each
added batch is a look at the data, and reading every look at a fixed 95 % interval would show a claim right
(or wrong) more often than 5 % of the time when it sits at its edge.  Here: the `Design` (planned looks, the
overall error, and the confidence of each look's interval from an alpha-spending function), `decide` (one
look: the Welch interval at that look's confidence read against `worth` by decisions.beyond), `next_batch`
(how many trials to add next), `Plan` (the looks `--until-decided` takes, fixed from the declared trials,
the batch and the budget before any trial of it: netrepro.runner.looks runs them), and `false_holds_rate`
(a vectorised simulation of the whole procedure at a true effect exactly `worth`, for the tests: the share
of runs that ever hold a false claim).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from netrepro.studykit.decisions import UNDECIDED, beyond
from netrepro.studykit.intervals import CONFIDENCE, welch

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Design:
    """The planned looks and the error they share: `alpha` two-sided over all `looks` (0.05: a 95 %
    procedure, each of "holds" and "differs" wrong at most alpha / 2 of the time at a claim's edge).

    The spending function is Lan-DeMets' O'Brien-Fleming type, alpha(t) = 2 - 2 Phi(z_{1 - alpha/2} / sqrt t)
    at t = look / looks: it spends almost nothing on the first looks, whose few trials give unsteady spreads,
    and keeps the last look, where the claims that are hard to decide end up, near the single-look 95 %
    (97.4 % for 4 looks; Pocock's type would read every look near 98-99 %, Bonferroni's at 98.75 %).  Each
    look's interval is read at 1 - (alpha(t_k) - alpha(t_{k-1})): by the union bound the error over all
    looks is at most the sum of those increments, alpha, whatever the looks' correlation, so no recursive
    boundary need be solved (the exact boundary would be a little less strict: this is conservative)."""

    looks: int = 4
    alpha: float = 1 - CONFIDENCE

    def __post_init__(self) -> None:
        if self.looks < 1:
            raise ValueError(f"a design needs at least one look, not {self.looks}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha is a probability strictly between 0 and 1, not {self.alpha}")

    def spent(self, look: int) -> float:
        """The error spent by the end of look `look` (0: none yet; `looks`: all of alpha)."""
        from scipy.stats import norm

        self._check(look, first=0)
        if look == 0:
            return 0.0
        if look == self.looks:  # exactly alpha, not alpha up to rounding: the increments then sum to it
            return self.alpha
        return float(2 * norm.sf(norm.isf(self.alpha / 2) / math.sqrt(look / self.looks)))

    def confidence_at(self, look: int) -> float:
        """The confidence of the interval read at look `look` (1-based): one less the error it spends."""
        self._check(look, first=1)
        return 1 - (self.spent(look) - self.spent(look - 1))

    def _check(self, look: int, first: int) -> None:
        if not first <= look <= self.looks:
            raise ValueError(f"look {look} is outside the design's looks {first}..{self.looks}")


# The most looks a default plan takes.  O'Brien-Fleming's spending leaves the first of many looks almost
# nothing: at 100 looks (a budget of 1000 over 10 trials) its confidence rounds to exactly 1 and decides
# nothing; at 5 the first look reads 99.9987 % and the last 96.9 %.  Group-sequential designs seldom take
# more than about five.
MOST_LOOKS = 5


@dataclass(frozen=True)
class Plan:
    """The looks of `--until-decided`, fixed before any of its trials: the first at the `declared` trials a
    setting, each later one `batch` more (the last cut to the `budget`), so `looks` is known in advance and
    the design spends its error over exactly those (`design`).  A setting at look k has `trials_at(k)`,
    what `next_batch` adds look by look to a claim left undecided."""

    declared: int
    budget: int
    batch: int

    def __post_init__(self) -> None:
        if self.declared < 1 or self.batch < 1:
            raise ValueError(f"a plan needs declared trials and a batch, not {self.declared} and {self.batch}")
        if self.budget <= self.declared:
            raise ValueError(f"a budget of {self.budget} trials is not above the declared {self.declared}")

    @classmethod
    def of(cls, declared: int, budget: int, batch: int | None = None) -> Plan:
        """The plan of `--until-decided budget` over `declared` trials: by default a batch is the declared
        count (each look adds as many trials as the first had), or more where the budget would then take
        more than MOST_LOOKS looks."""
        if batch is None:
            batch = max(declared, math.ceil((budget - declared) / (MOST_LOOKS - 1)))
        return cls(declared, budget, batch)

    @property
    def looks(self) -> int:
        return 1 + math.ceil((self.budget - self.declared) / self.batch)

    @property
    def design(self) -> Design:
        return Design(looks=self.looks)

    def trials_at(self, look: int) -> int:
        """The trials a setting has at look `look` (1-based) while its claims are undecided."""
        if not 1 <= look <= self.looks:
            raise ValueError(f"look {look} is outside the plan's looks 1..{self.looks}")
        return min(self.budget, self.declared + (look - 1) * self.batch)


class Schedule(Protocol):
    """What the simulation reads of a design: its looks and each look's confidence (a `Design`, or in the
    tests the uncorrected 95 % at every look it is checked against)."""

    @property
    def looks(self) -> int: ...

    def confidence_at(self, look: int) -> float: ...


@dataclass(frozen=True)
class Look:
    """One look at a claim: the trials each group has (the loser's, the winner's), the effect (a ratio of
    geometric means, or a difference) and its interval at this look's confidence, and what it decides.
    Without an interval (fewer than two trials a group, or a ratio of a value <= 0) the numbers are NaN
    and the look is undecided."""

    look: int
    trials: tuple[int, int]
    estimate: float
    low: float
    high: float
    confidence: float
    decision: str  # HOLDS, DIFFERS or UNDECIDED (netrepro.studykit.decisions)


def decide(
    a: Sequence[float],
    b: Sequence[float],
    worth: float,
    higher: bool,
    design: Design,
    look: int,
    ratio: bool = True,
) -> Look:
    """`b` better than `a` by at least `worth` (higher, or lower with `higher=False`), read at look `look`
    of `design`: the Welch interval (intervals.welch) at the look's confidence wholly beyond `worth` holds,
    wholly short of it differs, else undecided (decisions.beyond: the very rule a single look uses).  `a`
    and `b` are all the trials so far, in decisions.better_at's order (loser, winner)."""
    confidence = design.confidence_at(look)
    trials = (len(a), len(b))
    iv = welch(a, b, confidence, ratio)
    if iv is None:
        return Look(look, trials, math.nan, math.nan, math.nan, confidence, UNDECIDED)
    # One interval serves both directions: the look's confidence already holds each tail to its share.
    found = beyond(str(look), iv, iv, higher, worth, False, "")
    return Look(look, trials, iv.estimate, iv.low, iv.high, confidence, found.outcome)


def next_batch(last: Look, batch: int, design: Design, budget: int | None = None) -> int:
    """Trials to add to each group after the look `last`: a batch while it is undecided and the design has
    looks left, cut to what keeps the larger group within `budget` trials (None: no cap); 0 otherwise."""
    if batch < 1:
        raise ValueError(f"a batch adds at least one trial, not {batch}")
    if last.decision != UNDECIDED or last.look >= design.looks:
        return 0
    room = batch if budget is None else budget - max(last.trials)
    return max(0, min(batch, room))


def welch_arrays(a: Array, b: Array, confidence: float) -> tuple[Array, Array, Array]:
    """The Welch interval of mean(b) - mean(a) over the last axis, for many samples at once (each row one
    pair of groups), already on the interval's scale (logs, for a ratio of geometric means): the estimate,
    low and high.  The same interval as intervals.welch (scipy's ttest_ind with unequal variances): the
    variance va / na + vb / nb, Welch-Satterthwaite's degrees of freedom, a t quantile."""
    import numpy as np
    from scipy import stats

    na, nb = a.shape[-1], b.shape[-1]
    ua = np.var(a, axis=-1, ddof=1) / na
    ub = np.var(b, axis=-1, ddof=1) / nb
    d = np.mean(b, axis=-1) - np.mean(a, axis=-1)
    var = ua + ub
    with np.errstate(divide="ignore", invalid="ignore"):  # no spread: an interval of zero width, as welch
        df = var**2 / (ua**2 / (na - 1) + ub**2 / (nb - 1))
        half = np.where(var > 0, stats.t.ppf(0.5 + confidence / 2, df) * np.sqrt(var), 0.0)
    return d, d - half, d + half


def false_holds_rate(
    n_runs: int,
    design: Schedule,
    n0: int,
    batch: int,
    worth: float,
    sd: float,
    rng: np.random.Generator,
) -> float:
    """The share of `n_runs` runs of the whole procedure that ever hold a claim whose true effect is exactly
    `worth`: each run is two groups of trials whose logs are normal with spread `sd` and whose geometric
    means differ by exactly the ratio 1 + worth (so the claim "higher by at least worth" sits on its edge,
    and holding it is a false positive); it is looked at with n0, n0 + batch, ... trials a group, up to the
    design's looks, and stops at its first decision, as `next_batch` does."""
    import numpy as np

    edge = math.log1p(worth)
    most = n0 + (design.looks - 1) * batch
    a = rng.normal(0.0, sd, size=(n_runs, most))
    b = rng.normal(edge, sd, size=(n_runs, most))
    held = np.zeros(n_runs, dtype=bool)
    going = np.ones(n_runs, dtype=bool)
    for look in range(1, design.looks + 1):
        n = n0 + (look - 1) * batch
        _, low, high = welch_arrays(a[:, :n], b[:, :n], design.confidence_at(look))
        holds, differs = going & (low > edge), going & (high < edge)  # decisions.beyond's rule, on logs
        held |= holds
        going &= ~(holds | differs)
    return float(held.mean())
