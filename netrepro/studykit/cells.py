"""What a claim's test reads from a figure's rows: a group's trials at a level, as a cell of values.

A `Group` names the trials (a series, or rows whose parameters match); its `cell` at a level is one
value a successful trial with that trial's own timer noise (`timer_noise`: for a time on a path without
random loss or jitter, the delay line's lateness over the holds its round trips took; for anything
else none), so that a cell whose trials do not vary beyond it (`Cell.fixed`) is recognised from its
values.  The tests that read them: netrepro.studykit.decisions.  A figure's own cells (`of_figure`: each
series at each level) say which of its cells do not vary; a judgement records them and the caption and the
report name them (`fixed_text`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ground.trials import Row
from ground.units import parse_duration

Rows = Sequence[Row]


class Figure(Protocol):
    """What a group needs of a figure (netrepro.studykit.spec.Figure): the row column its levels are in."""

    @property
    def x(self) -> str: ...


Metric = str | Callable[[Row], float | None]


class Drawn(Figure, Protocol):
    """What `of_figure` needs of a figure: its series' labels, its levels, the metric of its y axis and,
    where that is computed across trials (a gain between arms), the one value each trial gives."""

    @property
    def y(self) -> str: ...

    @property
    def levels(self) -> Sequence[Any]: ...

    @property
    def series_labels(self) -> Sequence[str]: ...

    @property
    def trial_metric(self) -> Metric | None: ...


@dataclass(frozen=True)
class Cell:
    """One group's trials at one level: a value each, and each trial's own timer noise in the value's unit
    (0 where only exact equality says the trial could not have come out otherwise)."""

    values: tuple[float, ...]
    noise: tuple[float, ...] = ()

    @property
    def fixed(self) -> bool:
        """Whether the trials do not vary: two or more, whose spread is within the noise of the two that
        bound it (the delay line's lateness can move each of them that far)."""
        if len(self.values) < 2:
            return False
        noise = self.noise or (0.0,) * len(self.values)
        hi = max(range(len(self.values)), key=lambda i: self.values[i])
        lo = min(range(len(self.values)), key=lambda i: self.values[i])
        return self.values[hi] - self.values[lo] <= noise[hi] + noise[lo]


def cell(values: Sequence[float], noise: Sequence[float] = ()) -> Cell:
    return Cell(tuple(values), tuple(noise))


def all_fixed(*cells: Cell | Sequence[float]) -> bool:
    """Whether every cell is without spread (plain values: only exact equality)."""
    return all((c if isinstance(c, Cell) else cell(c)).fixed for c in cells)


RowMetric = TypeVar("RowMetric", bound=Callable[[Row], float | None])


def time_ms(metric: RowMetric) -> RowMetric:
    """Marks a metric computed from a row as a time in milliseconds of the emulated path (`timer_noise`)."""
    metric.__dict__["time_ms"] = True
    return metric


def is_time(metric: Metric) -> bool:
    """A metric measured in milliseconds of the emulated path's time (named *_ms, or a function so marked)."""
    return metric.endswith("_ms") if isinstance(metric, str) else bool(getattr(metric, "time_ms", False))


RANDOM = ("loss", "loss_down", "loss_up", "jitter")  # a path that draws these moves a trial by its draw


def timer_noise(row: Row, metric: Metric, value: float) -> float:
    """How far the delay line's timer alone could move a trial's time: its measured lateness (`late_p99_ms`)
    at each hold on the way, two a round trip (one each way) over the round trips the time spans.  0 for
    anything but a time, where the row has no lateness (netem) or no RTT, and on a path that drops or
    jitters at random: there each trial's own draw moves it, and only equal values are alike."""
    if not is_time(metric) or any(number((row.text(k) or "0").rstrip("%ms")) for k in RANDOM):
        return 0.0
    late = row.number("late_p99_ms")
    try:
        rtt = parse_duration(row.text("rtt")).ms
    except ValueError:
        return 0.0
    if late is None or rtt <= 0:
        return 0.0
    return 2 * math.ceil(max(value, 0.0) / rtt) * late


@dataclass(frozen=True)
class Group:
    """The trials a test reads: one series (its label), or rows whose parameters match, at a level."""

    series: str | None = None
    where: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.series if self.series is not None else ", ".join(f"{k}={v}" for k, v in self.where.items())

    def cell(self, fig: Figure, rows: Rows, level: Any, metric: Metric) -> Cell:
        """The metric of each successful trial of this group at `level`, with each trial's timer noise."""
        values, noise = [], []
        for r in rows:
            if not r.ok or r.text(fig.x) != str(level):
                continue
            if self.series is not None and r.series != self.series:
                continue
            if any(r.text(k) != str(v) for k, v in self.where.items()):
                continue
            value = metric(r) if callable(metric) else r.number(metric)
            if value is not None and math.isfinite(value):
                values.append(value)
                noise.append(timer_noise(r, metric, value))
        return Cell(tuple(values), tuple(noise))

    def values(self, fig: Figure, rows: Rows, level: Any, metric: Metric) -> list[float]:
        """The metric of each successful trial of this group at `level` (one value a trial)."""
        return list(self.cell(fig, rows, level, metric).values)


def number(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def group(g: str | Group) -> Group:
    return g if isinstance(g, Group) else Group(series=g)


def of_figure(fig: Drawn, rows: Rows) -> dict[tuple[str, str], Cell]:
    """Each series' cell at each level of the figure with two trials or more: the value each successful
    trial gives (the figure's `trial_metric`, else its y), with its timer noise.  A fixed one (`Cell.fixed`)
    is a cell whose trials do not vary: the report and the caption say which (manifest's `trials.fixed`)."""
    metric = fig.trial_metric or fig.y
    found = {}
    for label in fig.series_labels:
        for level in fig.levels:
            c = Group(series=label).cell(fig, rows, level, metric)
            if len(c.values) > 1:
                found[(label, str(level))] = c
    return found


def cell_name(fig: Figure, series: str, level: str) -> str:
    """A figure's cell as a caption, the report and a study's page name it: `<series> at <level>`, or
    `<x>=<level>` in a figure of one unnamed series."""
    return f"{series} at {level}" if series else f"{fig.x}={level}"


def fixed_text(trials: Mapping[str, Any]) -> str:
    """The cells whose trials do not vary, as a caption and the report say it (judgement's `trials`)."""
    fixed = list(trials.get("fixed") or [])
    shown = "; ".join(fixed[:4]) + (f"; and {len(fixed) - 4} more" if len(fixed) > 4 else "")
    return (
        f"{len(fixed)} of {trials.get('cells', len(fixed))} cells do not vary (their trials equal within the "
        f"delay line's timer noise: {shown}); where that is physics, the study's page says why under \"Cells "
        "that do not vary\""
    )
