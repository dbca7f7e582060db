"""A resume that cannot mix: a figure's rows must agree on what changes the measurement.

Every row records the topology, the backend, the switch, the congestion
control's implementation and the kernel it ran with.  Before a run resumes a figure,
`check_resume` compares the setup it will use (`planned_setup`, decided by
the same functions that will decide it when the lab comes up) with the
figure's successful rows of the same seed (`resumed_rows`), and refuses,
naming both values and the way on, where they differ.  Where the setup is
known only once the lab is up (a cluster's workers decide their own),
`ResumeGuard` checks each row as it comes and stops the run at the first
that differs.  Rows older than a column are accepted, and said so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ground import kernel
from ground.errors import UserError
from ground.trials import Row, TrialLog, row_ok, trial_key
from netrepro.studykit.spec import Figure, Params
from netrepro.studykit.trial import congestion_control, trial_path

log = logging.getLogger("netrepro.runner.resume")

# What changes the measurement, as each row records it: a figure's rows must agree on them.  A figure on
# another topology by --topo is a derived figure with its own directory and CSV (spec.Figure.on), but a
# study file's figure keeps its name when its `topology` table changes: the rows say which they ran on.
# The seed is in each row's (trial key, seed); the host may differ (shards).
RESUME_COLUMNS = ("topology", "backend", "switch", "cc_impl", "kernel")
# The option that chooses each, for the message that names the way on.
RESUME_OPTIONS = {"backend": "--shaper", "switch": "--switch", "cc_impl": "--impl"}


class RowSink(Protocol):
    """Where run_trials puts each trial's row: the figure's TrialLog, a cluster worker's pipe home, or a
    ResumeGuard in front of either."""

    def append(self, row: dict[str, Any]) -> None: ...


class ResumeMismatch(UserError):
    """The figure's rows ran with another topology, backend, switch, implementation or kernel than this run would."""


@dataclass(frozen=True)
class Setup:
    """What a run measures with, as its rows will record it: `impls` maps each congestion control its grid
    names (None: the hosts' default) to the implementation it will run as (`kernel` for the kernel's own)."""

    backend: str
    switch: str
    kernel: str
    impls: Mapping[str | None, str]
    topology: str = ""  # its label (topologies.topology.Topology.label); "": not checked

    def value(self, column: str, row: Row) -> str:
        if column == "cc_impl":
            return self.impls.get(row.cc or None, "")
        return str(getattr(self, column))


def planned_setup(
    fig: Figure, grid: Sequence[Mapping[str, Any]], shaper: str, switch: str, cc_impl: str | None
) -> Setup:
    """What this run's lab and session will use, decided by the functions that will decide it when they come
    up (topologies.emulation.choose_backend, topologies.ovs.choose_switch, kmod.loader.choose_impl), before
    anything is built.  Probes the machine as the preflight does (check_machine first: its errors come first)."""
    from kmod import loader
    from topologies import emulation, ovs
    from topologies.topology import SWITCH

    backend = emulation.choose_backend(shaper)
    has_switches = any(n.kind == SWITCH for n in fig.topology.place(trial_path(grid[0])).nodes) if grid else True
    chosen = ovs.choose_switch(switch, backend) if has_switches else "none"
    impls: dict[str | None, str] = {}
    for setting in grid:
        name = congestion_control(setting).name
        if name not in impls:
            impls[name] = loader.choose_impl(name, cc_impl) if name in loader.ALGORITHMS else "kernel"
    return Setup(backend=backend, switch=chosen, kernel=kernel.release(), impls=impls, topology=fig.topology.label)


def resumed_rows(trial_log: TrialLog, grid: list[Params], trials: int, seed: int) -> list[Row]:
    """The rows a run's new rows will be drawn beside: the successful rows of the figure's trials and seed
    (a failed row holds no measurement, and is run again)."""
    wanted = {trial_key(p, i) for p in grid for i in range(trials)}
    return [r for r in trial_log.rows if r.key in wanted and r.seed == seed and r.ok]


def resume_mismatches(
    rows: list[Row], value_of: Callable[[str, Row], str], columns: tuple[str, ...]
) -> tuple[list[tuple[str, str, str, int]], dict[str, int]]:
    """(column, the rows' value, this run's, how many rows) for each value of the rows that differs from this
    run's; and for each column, how many rows lack it (written before it was recorded: accepted)."""
    differ: dict[tuple[str, str, str], int] = {}
    lacking: dict[str, int] = {}
    for row in rows:
        for column in columns:
            theirs = row.text(column)
            if not theirs:
                lacking[column] = lacking.get(column, 0) + 1
                continue
            ours = value_of(column, row)
            if ours and theirs != ours:
                key = (column, theirs, ours)
                differ[key] = differ.get(key, 0) + 1
    return [(c, theirs, ours, n) for (c, theirs, ours), n in differ.items()], lacking


def mismatch_line(fig: Figure, csv_path: Path, column: str, theirs: str, ours: str, count: int) -> str:
    """One refusal: both values, and the way on."""
    option = RESUME_OPTIONS.get(column)
    keep = f"{option} {theirs} resumes them, " if option and theirs != "none" else ""
    return (
        f"{fig.full_name}: {csv_path} holds {count} trials run with {column} {theirs}; this run would use "
        f"{column} {ours}, and one figure would mix both: {keep}--fresh starts it over (the old CSV kept as a "
        "backup), or --out DIR (or a derived figure, --set ...) runs it beside them"
    )


def check_resume(
    fig: Figure, csv_path: Path, rows: list[Row], setup: Setup, columns: tuple[str, ...] = RESUME_COLUMNS
) -> None:
    """Refuse (ResumeMismatch, one line per difference) a run whose rows would differ from the figure's rows in
    what changes the measurement; rows without a column (older than it) are accepted, and said so."""
    differ, lacking = resume_mismatches(rows, setup.value, columns)
    for column, n in sorted(lacking.items()):
        log.info(
            "%s: %d of its %d earlier rows record no %s (written before it was recorded): resumed as they are",
            csv_path.name,
            n,
            len(rows),
            column,
        )
    if differ:
        raise ResumeMismatch("\n".join(mismatch_line(fig, csv_path, *d) for d in differ))


class ResumeGuard:
    """A RowSink that refuses a row whose setup differs from the figure's earlier rows: where the setup is known
    only once the lab is up (a cluster's workers decide theirs), or differs from what was planned.  The first
    such row is not written and the run stops (ResumeMismatch): the rows before it are kept."""

    def __init__(
        self, fig: Figure, csv_path: Path, sink: RowSink, earlier: list[Row], allow_mixed: bool = False
    ) -> None:
        self.fig = fig
        self.csv_path = csv_path
        self.sink = sink
        self.earlier = earlier
        # a cluster's --allow-mixed takes workers of several kernels and backends: the earlier rows' too
        self.columns = tuple(c for c in RESUME_COLUMNS if not (allow_mixed and c in ("kernel", "backend")))

    def append(self, row: dict[str, Any]) -> None:
        if self.earlier and row_ok(row):
            cells = {k: ("" if v is None else str(v)) for k, v in row.items()}

            def value_of(column: str, earlier: Row) -> str:
                if column == "cc_impl" and earlier.cc != cells.get("cc", ""):
                    return ""  # another congestion control: its own implementation
                return cells.get(column, "")

            differ, _ = resume_mismatches(self.earlier, value_of, self.columns)
            if differ:
                raise ResumeMismatch(
                    "\n".join(mismatch_line(self.fig, self.csv_path, *d) for d in differ)
                    + f"\n(the trial {cells.get('trial_key')} that showed it is not written; the rows before are kept)"
                )
        self.sink.append(row)
