"""Figures declared as data: the types a figure spec in `expts/` is made of.

A figure is a study's name for one plot: a workload run over a grid (one
factor on the x axis, with levels, times a few series such as congestion
control variants), fixed parameters for everything else, repeated trials,
and what the source reported.  Every parameter of a trial is one flat
mapping: path keys (`rtt`, `rate`, `rate_up`, `loss`, `loss_up`, `queue`),
host keys (`cc`, `cc_params`, `initcwnd`, `slow_start_after_idle`, ...)
and workload keys (`protocol`, `object_bytes`, `page`, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PATH_KEYS = ("rtt", "rate", "rate_up", "loss", "loss_up", "queue")

Params = dict[str, Any]
Rows = Sequence[Mapping[str, str]]


@dataclass(frozen=True)
class Series:
    """One line of a figure: a label and the parameters that make it."""

    label: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Point:
    """One summarised point: a central value and its spread, over n trials."""

    series: str
    x: Any
    y: float
    low: float
    high: float
    n: int
    failed: int = 0


@dataclass(frozen=True)
class Figure:
    study: str
    name: str
    title: str
    workload: str  # a name in netrepro.workloads.WORKLOADS
    x: str  # the factor on the x axis
    levels: tuple[Any, ...]
    y: str  # the metric plotted (a workload metric, or a derived one)
    fixed: Mapping[str, Any]
    series: tuple[Series, ...] = (Series(""),)
    trials: int = 10
    quick_levels: tuple[Any, ...] | None = None
    quick_trials: int = 3
    quick_series: tuple[str, ...] | None = None  # labels of the series a quick run keeps
    quick_note: str = ""
    x_label: str = ""
    y_label: str = ""
    x_log: bool = False
    y_log: bool = False  # for a metric that spans decades (throughput under 0 to 10 % loss)
    finding: str = ""  # what the source reports, to set beside ours
    deviations: tuple[str, ...] = ()
    # Turns the trial rows into the plotted points (default: median and
    # interquartile range of `y` per series and level).
    summarize: Callable[[Figure, Rows], list[Point]] | None = None
    # Adds model lines, reference panels and notes; returns the notes.
    annotate: Callable[[Figure, list[Point], Rows, Any], list[str]] | None = None
    # Trial time limit in seconds, from the trial's parameters.
    trial_timeout: Callable[[Params], float] = lambda params: 120.0
    # Another figure of the study with the same grid whose trials this one
    # plots (another metric of the same page loads): its CSV is shared, and
    # running either one runs only the trials the CSV lacks.
    trials_of: str = ""

    @property
    def full_name(self) -> str:
        return f"{self.study}/{self.name}"

    @property
    def csv_name(self) -> str:
        return f"{self.trials_of or self.name}.csv"

    def grid(self, quick: bool = False, overrides: Mapping[str, Any] | None = None) -> list[Params]:
        """Every parameter setting of the figure, in declaration order."""
        levels = self.quick_levels if quick and self.quick_levels is not None else self.levels
        series = [s for s in self.series if not quick or self.quick_series is None or s.label in self.quick_series]
        out = []
        for level in levels:
            for s in series:
                params: Params = {**self.fixed, **(overrides or {}), **s.params, self.x: level, "series": s.label}
                out.append(params)
        return out

    def trial_count(self, quick: bool = False, trials: int | None = None) -> int:
        if trials is not None:
            return trials
        return self.quick_trials if quick else self.trials


def path_params(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: params[k] for k in PATH_KEYS if k in params}
