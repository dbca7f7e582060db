"""Figures declared as data: the types a figure spec in `expts/` is made of.

A figure is a study's name for one plot: a workload run over a grid (one
factor on the x axis, with levels, times a few series such as congestion
control variants), fixed parameters for everything else, repeated trials,
and what the source reported.  Every parameter of a trial is one flat
mapping: path keys (`rtt`, `rate`, `rate_up`, `loss`, `loss_up`, `queue`,
`mtu`, `jitter`), host keys (`cc`, `cc_params`, `initcwnd`, `slow_start_after_idle`,
...) and workload keys (`protocol`, `object_bytes`, `page`, ...), each declared
once by what consumes it (netrepro.studykit.params, netrepro.runner.workloads).

A figure run with other parameters than its spec declares (`--set`,
`--vary`, `--series`) is a *derived* figure (`Figure.derive`): a figure of
its own, whose fixed parameters, levels and series are the effective ones
(so its title, model lines and notes follow them) and whose results go to
their own directory, `<study>/<figure>@<what differs>/`, never over the
declared figure's.

A figure's judgement is data too: its `claims` (netrepro.studykit.claims), each a
sentence of the source quoted verbatim with the test that decides it on the
trials, judged once per run into the manifest's verdict (agrees, partly,
differs, undecided; unjudged without a claim) and printed in the caption.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ground.errors import UserError
from ground.path import PathSpec
from ground.trials import Row
from ground.units import parse_duration, parse_rate
from netrepro.studykit.cells import Metric
from netrepro.studykit.claims import Claim, as_derived
from netrepro.studykit.trial import Trial, trial_path
from netrepro.studykit.variation import KEY as VARIATION_KEY
from netrepro.studykit.variation import NO_VARIATION, NONE, Variation
from topologies.topology import Topology

Params = dict[str, Any]
Rows = Sequence[Row]


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


def in_file(meaning: str, key: str = "") -> dict[str, str]:
    """A Figure field's metadata where a study file's figure table has it: what the key means, and the
    key where it is not the field's name (netrepro.front.studyfile reads its schema from these)."""
    return {"file_key": key, "file_meaning": meaning}


def file_keys() -> dict[str, str]:
    """A study file's figure keys, each with what it means, in Figure's order (the one declaration)."""
    return {
        f.metadata["file_key"] or f.name: f.metadata["file_meaning"]
        for f in dataclasses.fields(Figure)
        if "file_meaning" in f.metadata
    }


@dataclass(frozen=True)
class Figure:
    study: str
    name: str = field(metadata=in_file("the figure's name, e.g. iw50 (letters, digits, - and _)"))
    title: str = field(
        metadata=in_file(
            "its title; {KEY} fields are filled from the fixed parameters ({{ and }} are braces; $...$ is "
            "matplotlib's mathtext, \\$ a dollar sign)"
        )
    )
    # a name in netrepro.runner.workloads.WORKLOADS
    workload: str = field(metadata=in_file("what one trial runs (run.sh list shows the workloads)"))
    # the factor on the x axis, with its levels and quick_levels in one table of a study file
    x: str = field(metadata=in_file("{ factor = KEY, levels = [...], quick = [...] }"))
    levels: tuple[Any, ...]
    # the metric plotted (a workload metric, or a derived one)
    y: str = field(metadata=in_file("the metric on the y axis"))
    fixed: Mapping[str, Any] = field(metadata=in_file("the parameters every trial has"))
    series: tuple[Series, ...] = field(
        default=(Series(""),), metadata=in_file("[ { label = ..., KEY = VALUE, ... }, ... ]")
    )
    trials: int = field(default=10, metadata=in_file("trials per setting (default 10)"))
    quick_levels: tuple[Any, ...] | None = None
    quick_trials: int = field(default=3, metadata=in_file("trials per setting with --quick (default 3)"))
    quick_series: tuple[str, ...] | None = None  # labels of the series a quick run keeps
    quick_note: str = ""
    quick_fixed: Mapping[str, Any] = field(default_factory=dict)  # fixed parameters a quick run changes
    x_label: str = field(default="", metadata=in_file("the x axis' label"))
    y_label: str = field(default="", metadata=in_file("the y axis' label"))
    x_log: bool = field(default=False, metadata=in_file("a log x axis (true/false)"))
    # for a metric that spans decades (throughput under 0 to 10 % loss)
    y_log: bool = field(default=False, metadata=in_file("a log y axis (true/false)"))
    spread: str = "median and interquartile range over trials"  # what a point and its bar are, as the caption says
    finding: str = field(default="", metadata=in_file("what the source reports, set beside the result"))
    deviations: tuple[str, ...] = field(
        default=(), metadata=in_file("how this setup differs from the source's, a list of strings")
    )
    # Turns the trial rows into the plotted points (default: median and
    # interquartile range of `y` per series and level).
    summarize: Callable[[Figure, Rows], list[Point]] | None = None
    # Adds model lines, reference panels and notes; returns the notes.
    annotate: Callable[[Figure, list[Point], Rows, Any], list[str]] | None = None
    # The source's sentences, verbatim, each with the test that decides it (netrepro.studykit.claims).
    claims: tuple[Claim, ...] = field(
        default=(),
        metadata=in_file(
            "[[figure.claim]] tables: the source's sentences, each with its test (see CLAIM_KEYS)", "claim"
        ),
    )
    # A figure that is not points over its x axis (windows over time) draws itself instead of
    # netrepro.studykit.plot.draw, with the same arguments (figure, points, rows, png, quick, reference), and
    # returns its notes; its points still make the table and the manifest.
    drawing: Callable[..., list[str]] | None = None
    # Trial time limit in seconds, from the trial (netrepro.studykit.trial.Trial).
    trial_timeout: Callable[[Trial], float] = field(
        default=lambda trial: 120.0, metadata=in_file("a trial's time limit in seconds (default 120)", "timeout_s")
    )
    # Another figure of the study with the same grid whose trials this one
    # plots (another metric of the same page loads): its CSV is shared, and
    # running either one runs only the trials the CSV lacks.
    trials_of: str = ""
    # A derived figure: what differs from the declared one (`rtt=50ms`); empty for the figure as declared.
    variant: str = ""
    overrides: Mapping[str, Any] = field(default_factory=dict)  # a derived figure's --set, for its manifest
    # A derived figure's figure as its study declares it (None for that one itself): what the runner sets
    # a derived figure's numbers beside, without looking the study up.
    declared: Figure | None = field(default=None, compare=False, repr=False)
    # What its paths vary from trial to trial (netrepro.studykit.variation): the study's declaration.
    variation: Variation = NO_VARIATION
    # The one value a trial gives, where `y` is computed across trials (a gain between two arms): what says
    # whether a cell's trials vary (netrepro.studykit.cells.of_figure); None: `y` itself.
    trial_metric: Metric | None = None
    # The lab's shape (topologies.topology): `path`, today's client - s1 - server, unless declared or derived.
    topology: Topology = field(
        default_factory=Topology,
        metadata=in_file(
            '{ shape = path|dumbbell|chain, pairs = N, rtts = ["40ms", "120ms"], routers = K, cross = true, '
            'links = ["r1-r2:rate=11mbit,queue=15p"] } (default: path)'
        ),
    )

    @property
    def series_labels(self) -> tuple[str, ...]:
        return tuple(s.label for s in self.series)

    @property
    def full_name(self) -> str:
        return f"{self.study}/{self.name}" + (f"@{self.variant}" if self.variant else "")

    @property
    def directory(self) -> str:
        """Where its results go, below the results tree: the study's folder, or a derived figure's own."""
        return f"{self.study}/{self.name}@{self.variant}" if self.variant else self.study

    @property
    def path(self) -> PathSpec:
        """The path its fixed parameters set, typed (its model lines read the RTT and rate from it).
        A path key the figure varies (its x, a series') is not fixed: it takes ground.path's default
        here, so read only what the figure fixes (fig5b varies the rate: its RTT is this path's)."""
        return trial_path(self.fixed)

    @property
    def heading(self) -> str:
        """The title with its {parameter} fields filled from the effective fixed parameters."""
        return self.title.format_map(_Pretty(self.fixed)) if "{" in self.title else self.title

    def derive(
        self,
        overrides: Mapping[str, Any] | None = None,
        vary: tuple[str, Sequence[Any]] | None = None,
        series: tuple[str, Sequence[Any]] | None = None,
    ) -> Figure:
        """The figure with other fixed parameters, another factor or levels, or other series.

        `vary` (factor, levels) replaces the x axis: the same factor at other
        levels, or another factor, in which case the declared factor needs a
        value in `overrides`.  `series` (key, values) replaces the series by
        one per value.  A figure's own summary and annotations (the source's
        findings, models) are kept where its x factor and series are; else
        the default summary is drawn, with a note saying why.
        """
        overrides = dict(overrides or {})
        if not (overrides or vary or series):
            return self
        x, levels, quick_levels, x_label, x_log = self.x, self.levels, self.quick_levels, self.x_label, self.x_log
        parts = [f"{k}={v}" for k, v in overrides.items()]
        fixed = {**self.fixed, **overrides}
        if vary is not None:
            key, values = vary
            if key != self.x:
                if self.x not in overrides:
                    raise UserError(
                        f"--vary {key}=...: {self.full_name} sweeps {self.x}; "
                        f"give it one value with --set {self.x}=VALUE"
                    )
                x, x_label, x_log = key, key, False
            else:
                fixed.pop(self.x, None)
            fixed.pop(key, None)
            levels, quick_levels = tuple(values), None
            parts.append(f"{key}={','.join(map(str, values))}")
        kept_series = self.series
        quick_series = self.quick_series
        if series is not None:
            key, values = series
            if key == x:
                raise UserError(f"--series {key}=...: {key} is the figure's x factor; a series varies another key")
            kept_series = tuple(Series(str(v) if key == "cc" else f"{key}={v}", {key: v}) for v in values)
            quick_series = None
            fixed.pop(key, None)
            parts.append(f"series-{key}={','.join(map(str, values))}")
        own_view = x == self.x and series is None
        derived = dataclasses.replace(
            self,
            x=x,
            levels=levels,
            quick_levels=quick_levels,
            x_label=x_label,
            x_log=x_log,
            fixed=fixed,
            series=kept_series,
            quick_series=quick_series,
            summarize=self.summarize if own_view else None,
            annotate=self.annotate if own_view else None,
            drawing=self.drawing if own_view else None,
            claims=self.claims if own_view else (),
            # a key the user set is set in the quick run too (a quick run's own value would undo --set)
            quick_fixed={k: v for k, v in self.quick_fixed.items() if k not in overrides},
            trials_of="",
            deviations=self.deviations
            + (
                ()
                if own_view
                else ("derived with another x factor or other series: the source's claims are not judged",)
            ),
            variant=variant_name("+".join(parts)),
            overrides={**self.overrides, **overrides},
            declared=self.declared or self,
        )
        # a claim set by design on the declared figure's setup is tested where this one's setup undoes it
        kept, notes = as_derived(derived.claims, derived)
        return dataclasses.replace(derived, claims=kept, deviations=derived.deviations + tuple(notes))

    def on(self, topology: Topology) -> Figure:
        """The figure on another topology: a derived figure (its directory names the topology)."""
        if topology == self.topology:
            return self
        label = topology.label
        derived = dataclasses.replace(
            self,
            topology=topology,
            variant=variant_name("+".join(p for p in (self.variant, label) if p)),
            declared=self.declared or self,
        )
        kept, notes = as_derived(derived.claims, derived)
        return dataclasses.replace(derived, claims=kept, deviations=derived.deviations + tuple(notes))

    def manifest_in(self, tree: Path) -> Path:
        """Where its manifest is in the results tree `tree` (its directory, beside its CSV)."""
        return tree / self.directory / f"{self.name}.manifest.json"

    @property
    def csv_name(self) -> str:
        return f"{self.trials_of or self.name}.csv"

    def unvaried(self) -> Figure | None:
        """The figure without its study's variation (`<figure>@variation=none`: the emulator whose trials
        differ by their start phase and random loss alone, as the reference was measured at af4479f), where
        that is another figure: a declared one's, or a figure derived by --set alone (a kept one's,
        `pacing@idle_s=5+variation=none`); None where the figure names a variation, is derived otherwise, or
        the variation changes nothing."""
        if VARIATION_KEY in self.overrides:
            return None
        base = self.declared or self
        if self.variant and base.derive(dict(self.overrides)).full_name != self.full_name:
            return None  # derived by --vary or --series too
        twin = base.derive({**self.overrides, VARIATION_KEY: NONE})
        return twin if twin.grid() != self.grid() else None

    def grid(self, quick: bool = False, overrides: Mapping[str, Any] | None = None) -> list[Params]:
        """Every parameter setting of the figure, in declaration order, each under its variation
        (netrepro.studykit.variation: the study's jitter where the setting's `variation` takes it)."""
        levels = self.quick_levels if quick and self.quick_levels is not None else self.levels
        series = [s for s in self.series if not quick or self.quick_series is None or s.label in self.quick_series]
        out = []
        for level in levels:
            for s in series:
                quick_fixed = self.quick_fixed if quick else {}
                params: Params = {
                    **self.fixed,
                    **quick_fixed,
                    **(overrides or {}),
                    **s.params,
                    self.x: level,
                    "series": s.label,
                }
                out.append(self.variation.applied(params))
        return out

    def trial_count(self, quick: bool = False, trials: int | None = None) -> int:
        if trials is not None:
            return trials
        return self.quick_trials if quick else self.trials


class _Pretty(dict[str, str]):
    """Fixed parameters as a title shows them: 3 Mbit/s, RTT 100 ms, CUBIC."""

    def __init__(self, fixed: Mapping[str, Any]) -> None:
        super().__init__({k: _pretty(k, v) for k, v in fixed.items()})

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _pretty(key: str, value: Any) -> str:
    text = str(value)
    try:
        if key in ("rate", "rate_up"):
            return f"{parse_rate(text).mbps:g} Mbit/s"
        if key in ("rtt",):
            return f"{parse_duration(text).ms:g} ms"
    except ValueError:
        return text
    return {"cubic": "CUBIC", "reno": "Reno", "bbr": "BBR"}.get(text, text) if key == "cc" else text


_UNSAFE = re.compile(r"[^A-Za-z0-9._,%=+-]")


def variant_name(description: str, limit: int = 60) -> str:
    """A derived figure's directory suffix: what differs, in characters safe in a file name, and short.

    A long description is cut and given a hash of the whole, so that two
    different derivations never share a directory.
    """
    safe = _UNSAFE.sub("-", description)
    if len(safe) <= limit and safe == description:
        return safe
    digest = hashlib.sha256(description.encode()).hexdigest()[:8]
    return f"{safe[: limit - 9]}~{digest}"
