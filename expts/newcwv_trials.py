"""Study newcwv's source and arms, and what one trial's row gives: its bursts and its values.

The figures (expts/newcwv.py) and the claims (expts/newcwv_claims.py) read
a trial through these: the trial is the unit of every claim and every bar,
so each value here is a function of one row (a trial's mean burst time, its
retransmitted segments per burst, its burst time after each idle period),
and `bursts_of` takes a row apart into its bursts for the slow-start model
and the notebook.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ground.path import MSS
from ground.trials import Row
from netrepro.studykit.cells import Cell, time_ms, timer_noise
from netrepro.studykit.spec import Rows, Series
from servers.burst_trace import gain_pct

BURSTS_KB = (5, 10, 20, 40, 80)

IW = 3
RESPONSE_HEADER_BYTES = 250  # Apache's status line and headers for these objects, about

BASELINE = Series("NewReno+SACK", {"cc": "reno", "slow_start_after_idle": 1})
NEWCWV = Series("newCWV", {"cc": "newcwv", "slow_start_after_idle": 0})
RENO_KEPT = Series("Reno, no restart", {"cc": "reno", "slow_start_after_idle": 0})
PACED = Series("newCWV, paced", {"cc": "newcwv", "slow_start_after_idle": 0, "pacing": 1, "pacer": "auto"})
# Figure 5's two ways to compute pipeACK (section 3), each traced (newcwv's own counters every 0.1 s).
EVERY_RTT = Series(
    "(a) pipeACK every RTT", {"cc": "newcwv", "slow_start_after_idle": 0, "no_filter": 1, "pipeack_trace": 1}
)
MAX_FILTER = Series(
    "(b) pipeACK, max filter", {"cc": "newcwv", "slow_start_after_idle": 0, "no_filter": 0, "pipeack_trace": 1}
)
ARMS = (BASELINE, NEWCWV, RENO_KEPT)

# -- a trial's values -----------------------------------------------------------------
# Each a function of one row: the trial is the unit of every claim and every bar.


def _floats(row: Row, column: str) -> list[float] | None:
    """A column listing one value per burst (in the order they ran), or None where the row has none."""
    text = row.text(column)
    try:
        return [float(v) for v in text.split(";")] if text else None
    except ValueError:
        return None


@time_ms
def trial_burst_ms(row: Row) -> float | None:
    """a trial's mean burst time (ms)"""
    values = _floats(row, "burst_ms")
    return statistics.fmean(values) if values else None


def trial_retransmitted(row: Row) -> float | None:
    """a trial's retransmitted segments per burst"""
    values = _floats(row, "retransmitted")
    return statistics.fmean(values) if values else None


@time_ms
def trial_first_flight_ms(row: Row) -> float | None:
    """a trial's mean time from the first to the last segment of a burst's first flight (ms)"""
    values = _floats(row, "first_flight_ms")
    return statistics.fmean(values) if values else None


def burst_ms_by_idle(row: Row) -> dict[float, float]:
    """A trial's burst time after each idle period it ran (the mean, for a period it ran more than once)."""
    idles, ms = _floats(row, "idle_s"), _floats(row, "burst_ms")
    if not idles or not ms or len(idles) != len(ms):
        return {}
    by: dict[float, list[float]] = defaultdict(list)
    for idle, value in zip(idles, ms, strict=True):
        by[idle].append(value)
    return {idle: statistics.fmean(values) for idle, values in by.items()}


def arm_trials(rows: Rows, arm: str, kb: Any) -> list[Row]:
    """The successful trials of `arm` at `kb` KB."""
    return [r for r in rows if r.ok and r.series == arm and r.text("burst_kb") == str(kb)]


def trial_values(rows: Rows, arm: str, kb: Any, idle: float | None = None) -> list[float]:
    """One value per successful trial of `arm` at `kb` KB: its mean burst time, or its burst time after `idle`."""
    out = []
    for r in arm_trials(rows, arm, kb):
        value = trial_burst_ms(r) if idle is None else burst_ms_by_idle(r).get(idle)
        if value is not None:
            out.append(value)
    return out


def trial_cell(rows: Rows, arm: str, kb: Any, idle: float | None = None) -> Cell:
    """`trial_values` as a cell: each trial's burst time with the delay line's timer noise on it
    (cells.timer_noise), so that trials that do not vary are recognised from their values."""
    values, noise = [], []
    for r in arm_trials(rows, arm, kb):
        value = trial_burst_ms(r) if idle is None else burst_ms_by_idle(r).get(idle)
        if value is not None:
            values.append(value)
            noise.append(timer_noise(r, "burst_ms", value))
    return Cell(tuple(values), tuple(noise))


def idles_of(rows: Rows) -> list[float]:
    """The idle periods the successful trials ran."""
    return sorted({idle for r in rows if r.ok for idle in burst_ms_by_idle(r)})


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """The mean and its standard error (0 for a single value)."""
    mean = statistics.fmean(values)
    return mean, (statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0)


@dataclass(frozen=True)
class Gain:
    pct: float
    se: float
    n: int  # the other arm's trials


def gain(baseline: Sequence[float] | Sequence[Burst], other: Sequence[float] | Sequence[Burst]) -> Gain:
    """The seed's gain between two arms' mean burst times, with a delta-method standard error over the values:
    the figures give one value a trial; bursts (notebooks/newcwv.ipynb) are taken by their times."""
    tr, se_r = mean_se([v.ms if isinstance(v, Burst) else v for v in baseline])
    tc, se_c = mean_se([v.ms if isinstance(v, Burst) else v for v in other])
    ratio = tc / tr
    return Gain(gain_pct(tr, tc), 100 * ratio * math.hypot(se_c / tc, se_r / tr), len(other))


def idle_label(idle: float) -> str:
    return f"idle {idle:g} s"


# -- the bursts, for the model --------------------------------------------------------


@dataclass(frozen=True)
class Burst:
    """One burst of one trial, from its row."""

    arm: str
    burst_kb: int
    idle_s: float
    ms: float
    cwnd_resumed: int
    retransmitted: int
    first_flight_ms: float


def bursts_of(rows: Rows) -> Iterator[Burst]:
    """Every burst of every successful trial (a row lists its bursts in the order they ran)."""
    for row in rows:
        if not row.ok:
            continue
        columns = [
            row.text(c).split(";") for c in ("idle_s", "burst_ms", "cwnd_resumed", "retransmitted", "first_flight_ms")
        ]
        for idle, ms, cwnd, retrans, flight in zip(*columns, strict=True):
            yield Burst(
                row.series, int(row.text("burst_kb")), float(idle), float(ms), int(cwnd), int(retrans), float(flight)
            )


def cells(rows: Rows) -> dict[tuple[str, int, float], list[Burst]]:
    """The bursts by (arm, burst size, idle period)."""
    out: dict[tuple[str, int, float], list[Burst]] = defaultdict(list)
    for b in bursts_of(rows):
        out[(b.arm, b.burst_kb, b.idle_s)].append(b)
    return out


def segments(burst_kb: int) -> int:
    return math.ceil((burst_kb * 1000 + RESPONSE_HEADER_BYTES) / MSS)
