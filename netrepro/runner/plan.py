"""A figure's run before it runs: its grid, its trial count, an estimate of its time, its stored result.

`run.sh list` and `run.sh FIGURE --dry-run` print these; neither needs
root nor touches the machine.  The estimate rests on the stored reference
result (results/reference/<study>/<figure>.manifest.json): the mean of its
trials' own seconds per trial, plus LAB_SECONDS per path setting for the
lab and the verification of its path (`bench runner` measured 9.9 s of
fixed cost for iw/fig2's one setting).  A quick grid that shortens its
trials (`quick_fixed`) is estimated at full trial length: an upper bound.
A figure without a stored result is estimated from its trials' declared
durations (a workload's `duration_s`), which bound it from below; one whose
workload declares none has no estimate.  With `--jobs N` the
trials are dealt as the engine deals them (shards.tasks, largest first to
the lab that is free first, in phases of one tuning of each netrepro
variant), each task paying LAB_SECONDS for its lab, and the run
CLUSTER_SECONDS for the local cluster's start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ground import results
from ground.manifests import ManifestUnreadable, read_manifest
from netrepro.runner import shards
from netrepro.runner.session import tuning_phases
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit import trial
from netrepro.studykit.claims import MANY_TRIALS, needs_text
from netrepro.studykit.spec import Figure, Params
from netrepro.studykit.trial import Trial

LAB_SECONDS = 10.0
CLUSTER_SECONDS = 5.0  # --jobs: the local Dask cluster up, its workers connected


@dataclass(frozen=True)
class Stored:
    """A figure's stored result, as its manifest tells it."""

    manifest: Path
    commit: str  # the rows' code, as the list shows it: `rows 9e2d3b0c2b0d`, `rows of 6 commits`
    rows: int
    quick: bool
    seconds_per_trial: float | None
    # each judged claim as the stored result left it: (quote, outcome, trials per series that would decide it)
    claims: tuple[tuple[str, str, int | None], ...] = ()

    @classmethod
    def of(cls, fig: Figure, tree: Path = results.REFERENCE) -> Stored | None:
        try:
            stored = read_manifest(fig.manifest_in(tree))
        except ManifestUnreadable:
            return None
        # the code the rows ran from (the manifest's own `git` is the code that last drew it)
        codes = stored.rows_code
        if len(codes) == 1:
            commit = "rows " + codes[0][:12]
        elif codes:
            commit = f"rows of {len(codes)} commits"
        else:
            commit = str(stored.commit or "unknown")[:12] + ("+dirty" if stored.dirty else "")
        judged = tuple(
            (str(c.get("quote")), str(c.get("outcome")), c.get("trials_needed") or None) for c in stored.judged_claims
        )
        return cls(stored.path, commit, stored.rows, stored.quick, stored.seconds_per_trial, judged)

    def to_decide(self) -> str:
        """What the stored trials left open: `decided`, or the trials per series its undecided claims need."""
        open_ = [c for c in self.claims if c[1] == "undecided"]
        if not self.claims:
            return "no claims judged"
        if not open_:
            return "decided"
        needed = [n for _, _, n in open_ if n]
        most = ""
        if needed:
            most = f", > {MANY_TRIALS} trials" if max(needed) > MANY_TRIALS else f", >= {max(needed)} trials"
        return f"{len(open_)} of {len(self.claims)} undecided{most}"


@dataclass(frozen=True)
class Plan:
    fig: Figure
    quick: bool
    grid: list[Params]
    trials_per_setting: int
    stored: Stored | None
    jobs: int = 1  # labs side by side
    jobs_why: str = ""  # how --jobs auto chose them, or why the figure runs one lab at a time

    @classmethod
    def of(
        cls,
        fig: Figure,
        quick: bool = False,
        overrides: dict[str, Any] | None = None,
        trials: int | None = None,
        jobs: int = 1,
        jobs_why: str = "",
    ) -> Plan:
        return cls(
            fig, quick, fig.grid(quick, overrides), fig.trial_count(quick, trials), Stored.of(fig), jobs, jobs_why
        )

    @property
    def trials(self) -> int:
        return len(self.grid) * self.trials_per_setting

    @property
    def settings(self) -> int:
        """Distinct path settings: each a lab verified once."""
        return len({shards.setting(p) for p in self.grid})

    @property
    def upper_bound(self) -> bool:
        return self.quick and bool(self.fig.quick_fixed)

    def declared_per_trial(self) -> float | None:
        """The mean of the trials' declared durations (a workload's `duration_s`), which bound a trial's own
        time from below; None where its workload declares none."""
        keys_type = WORKLOADS[self.fig.workload].keys_type
        cells = trial.build_all(self.grid, 1, self.fig.x, keys_type, self.fig.topology)
        durations = [getattr(t.workload, "duration_s", None) for t in cells]
        if not durations or not all(isinstance(d, (int, float)) for d in durations):
            return None
        return sum(float(d) for d in durations if d is not None) / len(durations)

    @property
    def from_declared(self) -> bool:
        """The estimate rests on the declared durations (no stored result): a lower bound."""
        return self.stored is None or self.stored.seconds_per_trial is None

    def seconds_per_trial(self) -> float | None:
        """A trial's estimated time: the stored result's, else its declared duration; None without either."""
        stored = self.stored.seconds_per_trial if self.stored is not None else None
        return stored if stored is not None else self.declared_per_trial()

    def seconds(self) -> float | None:
        """The estimated wall time, or None without a stored result or declared durations to rest on."""
        per = self.seconds_per_trial()
        if per is None:
            return None
        if self.jobs <= 1:
            return self.trials * per + self.settings * LAB_SECONDS
        return CLUSTER_SECONDS + sum(
            makespan([len(t) * per + LAB_SECONDS for t in tasks], self.jobs) for tasks in self.phases()
        )

    def phases(self) -> list[list[list[Trial]]]:
        """The trials as the engine would deal them to `jobs` labs: in phases of one tuning of each
        netrepro variant (session.tuning_phases), each phase's trials in tasks (shards.tasks)."""
        keys_type = WORKLOADS[self.fig.workload].keys_type
        todo = trial.build_all(self.grid, self.trials_per_setting, self.fig.x, keys_type, self.fig.topology)
        return [shards.tasks(phase, self.jobs) for phase in tuning_phases(todo)]

    def time(self) -> str:
        """The estimate as a reader wants it: `~4 min`, `<=40 s`, or `?`."""
        seconds = self.seconds()
        if seconds is None:
            return "?"
        mark = ">=" if self.from_declared else ("<=" if self.upper_bound else "~")
        if seconds < 90:
            return f"{mark}{seconds:.0f} s"
        if seconds < 90 * 60:
            return f"{mark}{seconds / 60:.0f} min"
        return f"{mark}{seconds / 3600:.1f} h"

    def describe(self) -> list[str]:
        """What --dry-run prints: the figure, the grid cell by cell, the counts, the estimate."""
        fig = self.fig
        lines = [f"{fig.full_name}: {fig.heading}" + (" (--quick)" if self.quick else "")]
        cells = trial.build_all(self.grid, 1, fig.x, WORKLOADS[fig.workload].keys_type, fig.topology)
        series = [s for s in dict.fromkeys(t.series for t in cells) if s]
        lines.append(f"  x: {fig.x}" + (f"; series: {', '.join(series)}" if series else ""))
        for t in cells:
            path = ", ".join(f"{k}={v}" for k, v in sorted(t.lab_setting.items()))
            lines.append(f"    {fig.x}={t.level}  {t.series}  [{path}]")
        lines.append(
            f"  {len(self.grid)} settings x {self.trials_per_setting} trials = {self.trials} trials "
            f"on {self.settings} path settings; estimated time {self.time()}"
        )
        if self.jobs > 1:
            phases = self.phases()
            lines.append(
                f"  --jobs {self.jobs}: {self.jobs} labs side by side, {sum(map(len, phases))} labs built in all"
                + (
                    f", in {len(phases)} phases (its trials tune a netrepro variant {len(phases)} ways, and the "
                    "labs share one tuning at a time)"
                    if len(phases) > 1
                    else ""
                )
                + (f" ({self.jobs_why})" if self.jobs_why else "")
            )
        elif self.jobs_why:
            lines.append(f"  --jobs: {self.jobs_why}")
        if self.stored is None:
            lines.append(
                "  no stored result (results/reference/) to estimate from"
                + ("; >=: the trials' declared durations, a lower bound" if self.seconds() is not None else "")
            )
        else:
            kind = "quick" if self.stored.quick else "full"
            lines.append(
                f"  estimate from the stored {kind} result: {self.stored.rows} trials, "
                f"{self.stored.commit} ({self.stored.manifest.relative_to(results.REPO)})"
            )
        if self.upper_bound:
            lines.append("  the quick grid shortens its trials: the estimate is an upper bound")
        lines += self.claim_lines()
        return lines

    def claim_lines(self) -> list[str]:
        """The figure's claims, each with what the stored trials made of it and the trials it needs."""
        if not self.fig.claims:
            return ["  claims: none (the source states nothing this figure can test): unjudged"]
        stored = {quote: (outcome, n) for quote, outcome, n in self.stored.claims} if self.stored else {}
        lines = [f"  claims ({len(self.fig.claims)}), and what the stored trials made of each:"]
        for c in self.fig.claims:
            words = " ".join(c.quote.split()[:12]) + (" ..." if len(c.quote.split()) > 12 else "")
            outcome, n = stored.get(c.quote, ("not yet judged", None))
            needs = ""
            if n:
                enough = "this run's count would" if n <= self.trials_per_setting else "more than this run's count"
                needs = f": {needs_text(n)} ({enough})"
            lines.append(f'    {c.where}: "{words}": {outcome}{needs}')
        return lines


def makespan(seconds: list[float], labs: int) -> float:
    """When the last of these tasks ends, each given, largest first, to the lab that is free first."""
    free = [0.0] * max(labs, 1)
    for task in sorted(seconds, reverse=True):
        free[free.index(min(free))] += task
    return max(free)
