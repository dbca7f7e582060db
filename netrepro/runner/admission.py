"""How many labs a figure may run side by side on this machine (`--jobs auto`), from what its trials cost.

Each trial's row records the CPU its lab spent while it ran (`cpu_s`: the
delay line, the servers, the clients, the lab's shells and the trial's own
process, from the run's cgroup) beside its wall time (`trial_seconds`).  A
lab's cost is the share of one core its trials keep busy: the 90th
percentile of cpu_s / trial_seconds over a figure's measured rows (this
run's output tree first, then the stored reference).  `auto` admits labs
while their costs together stay under HEADROOM of the machine's cores, at
most one lab per trial and MAX_AUTO_JOBS; a figure whose one lab takes more
than half that budget (a path near a core's packet rate) runs one lab at a
time, as does a figure with a fast path (FAST_ALONE), and a figure with no
measured row runs one lab, each saying why.

What this does not see: packet work the kernel does outside the lab's
processes (softirq time spent in ksoftirqd is charged to no cgroup).  The
benchmark (`run.sh bench jobs`) measures what admission leaves out: each
row's delay-line lateness as labs are added.  Across figures (`reproduce`,
netrepro.runner.packing) two things keep a figure's labs from another's
(`Exclusive`): a netrepro variant or port it loads (one run at a time holds
one: kmod.loader), and a fast path (FAST_MBPS and up), whose unseen packet
work starved the tcp_probe readers of iw's labs beside spdy's three
100 Mbit/s labs (`bench reproduce` at ac66ed6: 78 of iw/fig5a's 210 trials
failed "tcp_probe reader did not catch up").
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ground import results
from ground.trials import Row, read_rows
from ground.units import QuantityError
from netrepro.studykit.spec import Figure

HEADROOM = 0.75  # the share of the machine's cores the labs may keep busy together
MAX_AUTO_JOBS = 8  # `auto` admits at most this many labs (past it, the machine lock and start-up dominate)
COST_QUANTILE = 0.9
MAX_JOBS = 32  # --jobs N: at most this many labs (each a Dask worker, its trial process and a lab of namespaces)


@dataclass(frozen=True)
class Cost:
    """What one lab of a figure keeps busy while its trials run, measured over `rows` rows."""

    cores: float  # the 90th percentile of cpu_s / trial_seconds
    rows: int
    source: str  # the CSV the rows came from

    def describe(self) -> str:
        return f"{self.cores:.2f} of a core per lab (p90 of {self.rows} trials in {self.source})"


@dataclass(frozen=True)
class Admission:
    """How many labs side by side, and why."""

    jobs: int
    why: str


def cost_of(rows: Iterable[Row], source: str) -> Cost | None:
    """A lab's cost from a figure's rows (successful ones recording cpu_s and trial_seconds), or None."""
    shares = []
    for row in rows:
        cpu, wall = row.number("cpu_s"), row.trial_seconds
        if cpu is None or wall is None:
            continue
        if row.ok and math.isfinite(cpu) and wall > 0:
            shares.append(cpu / wall)
    if not shares:
        return None
    shares.sort()
    return Cost(shares[min(len(shares) - 1, math.ceil(COST_QUANTILE * len(shares)) - 1)], len(shares), source)


def measured_cost(fig: Figure, out: Path | None = None) -> Cost | None:
    """The figure's lab cost from its rows in the output tree `out` (a run's own), else the reference's."""
    for tree in (out, results.REFERENCE):
        if tree is None:
            continue
        csv_path = tree / fig.directory / fig.csv_name
        if csv_path.is_file():
            cost = cost_of(read_rows(csv_path), _shown(csv_path))
            if cost is not None:
                return cost
    return None


def _shown(path: Path) -> str:
    return str(path.relative_to(results.REPO)) if path.is_relative_to(results.REPO) else str(path)


# A path this fast keeps the kernel's packet work (softirq: charged to no lab's cgroup) busy enough that a
# lab beside it may not keep up: its figure runs with no other figure's lab beside it, and one lab of its
# own.  Its own labs starve one another's tcp_probe readers as they do another figure's: cubicplus/fig12
# (100 Mbit/s, p90 cost 0.49 of a core, so three labs fit the budget of two cores) failed "tcp_probe
# reader did not catch up" in 0 of 314 attempts with one lab (af4479f), 9 of 161 with two and 23 of 40
# with three (bc2b8a3, reproduce all, 2026-12-06).
FAST_MBPS = 50.0
FAST_ALONE = (
    f"a path of {FAST_MBPS:g} Mbit/s or more: its packet work, charged to no lab, starves the tcp_probe "
    "readers of labs beside it, its own too: one lab at a time"
)


@dataclass(frozen=True)
class Exclusive:
    """What a figure's labs hold that another figure's labs beside them must not: the netrepro variants
    and ports it loads, and whether one of its paths is fast (FAST_MBPS and up)."""

    variants: frozenset[str] = frozenset()
    fast: bool = False

    def clashes(self, other: Exclusive, same_figure: bool) -> bool:
        """Whether a lab holding this may not run beside one holding `other`: a fast path in either, its own
        figure's other labs too (FAST_ALONE), or a variant both load, of two figures (a figure's own labs
        share its variants)."""
        if self.fast or other.fast:
            return True
        return not same_figure and bool(self.variants & other.variants)


def exclusive(fig: Figure, quick: bool) -> Exclusive:
    """The figure's Exclusive, from its grid (a figure that draws another's rows runs no trial: none)."""
    from kmod import loader
    from netrepro.runner import preflight
    from netrepro.studykit.trial import trial_path

    if fig.trials_of:
        return Exclusive()
    grid = fig.grid(quick)
    named = preflight.figure_needs(fig, grid, fig.overrides, "auto", None).congestion_controls
    paths = [trial_path(setting) for setting in grid]
    fast = any(max(p.rate_down.mbps, p.rate_up.mbps) >= FAST_MBPS for p in paths)
    return Exclusive(frozenset(n for n in named if n in loader.ALGORITHMS), fast)


def cores() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


def admit(cost: Cost | None, trials: int, machine_cores: int | None = None, fast: bool = False) -> Admission:
    """`--jobs auto`: as many labs as the budget carries at the measured cost, at most one per trial; one
    lab for a figure with a fast path (`fast`: Exclusive.fast), whatever its measured cost."""
    machine_cores = machine_cores or cores()
    budget = HEADROOM * machine_cores
    if trials <= 1:
        return Admission(1, f"{trials} trial to run: one lab")
    if fast:
        return Admission(1, FAST_ALONE)
    if cost is None:
        return Admission(
            1, "no trial of this figure has recorded its CPU (cpu_s) yet: one lab; give --jobs N, or run it once"
        )
    if cost.cores > budget / 2:
        return Admission(
            1,
            f"its trials saturate the machine: {cost.describe()}, over half of the {budget:.1f}-core budget "
            f"({HEADROOM:.0%} of {machine_cores} cores): one lab at a time",
        )
    fits = int(budget // max(cost.cores, 1e-3))
    jobs = max(1, min(fits, trials, MAX_AUTO_JOBS))
    limit = (
        "the budget"
        if fits <= min(trials, MAX_AUTO_JOBS)
        else ("one lab per trial" if trials <= MAX_AUTO_JOBS else f"at most {MAX_AUTO_JOBS}")
    )
    return Admission(jobs, f"{cost.describe()}; {jobs} labs fit {HEADROOM:.0%} of {machine_cores} cores ({limit})")


def parse_jobs(text: str) -> int | None:
    """--jobs: a number of labs (1 to MAX_JOBS), or None for `auto`; QuantityError naming what was typed."""
    if text.strip().lower() == "auto":
        return None
    try:
        jobs = int(text)
    except ValueError:
        raise QuantityError("--jobs", text, f"write a number of labs from 1 to {MAX_JOBS}, or auto") from None
    if not 1 <= jobs <= MAX_JOBS:
        raise QuantityError("--jobs", text, f"from 1 to {MAX_JOBS} labs, or auto")
    return jobs
