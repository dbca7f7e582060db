"""Which labs of a study's figures run side by side: admission by measured CPU and lateness, and the plan.

A study's run has one task per path setting of each figure (a lab is built
and verified once for a setting's trials: shards.setting), a setting split
into several where the figure has fewer settings than labs (shards.split).  A task's lab
keeps `cores` of a core busy (the figure's admission.Cost, p90 of cpu_s /
trial_seconds), so cheap waiting labs (a few % of a core) can run beside a
busy one (a 100 Mbit/s path, most of a core).  `admitted` lets a lab start
while the running labs' cores and its own stay within admission's budget
(HEADROOM of the machine's cores, at most MAX_AUTO_JOBS labs), fewer labs
when the delay lines' recent p99 lateness nears its bound (`labs_allowed`),
and always one lab when none runs.  `schedule` simulates a run over the
tasks' estimated durations (longest first, each free moment filled with the
tasks that fit); `estimate` is its wall time, for --dry-run.

Pure: values in, values out.  The caller reads the rows (admission.
measured_cost, RecentLateness.of) and runs the labs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ground.trials import Row
from netrepro.runner.admission import HEADROOM, MAX_AUTO_JOBS, Cost, Exclusive
from netrepro.runner.plan import CLUSTER_SECONDS, LAB_SECONDS

# A figure with no measured row (no cpu_s yet) is taken to fill the whole budget, whatever the machine: its
# lab runs alone and no lab starts beside it, as admission.admit runs such a figure one lab at a time.
UNMEASURED_CORES = math.inf

# The delay lines' lateness against the bound past which a trial fails (attempts.late_bound_ms).  Past half of
# it no lab is added: lateness comes in bursts (CI saw one trial's p99 at 10 ms, and at 18 ms on a later
# run: nearly twice), so at half the bound one such burst fails trials.  Past 80 % a rise of a quarter
# fails them: one lab fewer than were running when it was measured.
LATE_HOLD = 0.5
LATE_SHED = 0.8


@dataclass(frozen=True)
class Task:
    """One path setting of one figure: its trials, run in one lab."""

    figure: str  # the figure's full name, e.g. iw/fig2
    setting: str  # shards.setting: the path the lab is built and verified for
    trials: int
    seconds_per_trial: float  # the estimate (the stored result's mean)
    cores: float = UNMEASURED_CORES  # the share of one core the lab keeps busy: the figure's Cost.cores
    holds: Exclusive = Exclusive()  # what no other figure's lab may hold or do beside it

    def __post_init__(self) -> None:
        if self.trials < 1 or self.seconds_per_trial < 0 or not self.cores >= 0:
            raise ValueError(
                f"{self.figure} {self.setting}: {self.trials} trials, {self.seconds_per_trial} s, "
                f"{self.cores} cores"
            )

    @classmethod
    def of(
        cls,
        figure: str,
        setting: str,
        trials: int,
        seconds_per_trial: float,
        cost: Cost | None,
        holds: Exclusive = Exclusive(),
    ) -> Task:
        cores = UNMEASURED_CORES if cost is None else cost.cores
        return cls(figure, setting, trials, seconds_per_trial, cores, holds)

    def clashes(self, other: Task) -> bool:
        """Whether the two labs may not run side by side (admission.Exclusive.clashes)."""
        return self.holds.clashes(other.holds, same_figure=self.figure == other.figure)

    @property
    def seconds(self) -> float:
        """The lab's estimated time: its trials, and building and verifying it once."""
        return self.trials * self.seconds_per_trial + LAB_SECONDS


@dataclass(frozen=True)
class RecentLateness:
    """The running labs' delay-line lateness of late: the worst p99 against its trial's bound, and how many
    labs ran when it was measured."""

    p99_ms: float  # late_p99_ms
    bound_ms: float  # late_bound_ms: past it the trial failed
    labs: int  # labs side by side while it was measured

    @property
    def share(self) -> float:
        """The p99 as a share of the bound."""
        return self.p99_ms / self.bound_ms if self.bound_ms > 0 else math.inf

    @classmethod
    def of(cls, rows: Iterable[Row], labs: int) -> RecentLateness | None:
        """The worst of these rows (the running labs' latest) against its own bound, or None where no row
        records both."""
        worst: RecentLateness | None = None
        for row in rows:
            p99_ms, bound_ms = row.number("late_p99_ms"), row.number("late_bound_ms")
            if p99_ms is None or bound_ms is None:
                continue
            late = cls(p99_ms, bound_ms, labs)
            if (
                math.isfinite(late.p99_ms)
                and math.isfinite(late.bound_ms)
                and (worst is None or late.share > worst.share)
            ):
                worst = late
        return worst


def budget(machine_cores: int) -> float:
    """The cores the labs may keep busy together."""
    return HEADROOM * machine_cores


def labs_allowed(lateness: RecentLateness | None) -> int:
    """How many labs may run side by side as the delay lines' lateness allows (the CPU aside): MAX_AUTO_JOBS
    while the p99 is within LATE_HOLD of the bound; past it as many as were running (a lab that ends may be
    replaced, none added); past LATE_SHED one fewer (the next lab to end is not replaced); never under one."""
    if lateness is None or lateness.share <= LATE_HOLD:
        return MAX_AUTO_JOBS
    allowed = lateness.labs if lateness.share <= LATE_SHED else lateness.labs - 1
    return max(1, min(allowed, MAX_AUTO_JOBS))


def admitted(
    running: Sequence[Task], candidate: Task, machine_cores: int, lateness: RecentLateness | None = None
) -> bool:
    """May `candidate`'s lab start now beside the `running` labs?  Always when none runs (a lab over the
    budget on its own must still run); else while it clashes with none of them (Task.clashes), the labs
    stay within labs_allowed and their cores with the candidate's within the budget."""
    if not running:
        return True
    if any(candidate.clashes(t) for t in running):
        return False
    if len(running) + 1 > labs_allowed(lateness):
        return False
    return sum(t.cores for t in running) + candidate.cores <= budget(machine_cores) + 1e-9  # float sums


@dataclass(frozen=True)
class Start:
    """A task's lab, from `at` to `ends` seconds after the labs' start."""

    task: Task
    at: float
    ends: float


@dataclass(frozen=True)
class Moment:
    """The labs running from `at` (seconds) until the next moment."""

    at: float
    labs: tuple[Task, ...]

    @property
    def cores(self) -> float:
        return sum(t.cores for t in self.labs)


@dataclass(frozen=True)
class Schedule:
    """A simulated run: when each task's lab starts and ends."""

    starts: tuple[Start, ...]  # in the order they start

    @property
    def seconds(self) -> float:
        """From the first lab's start to the last one's end."""
        return max((s.ends for s in self.starts), default=0.0)

    def together(self) -> list[list[Task]]:
        """The tasks that start at one moment, moment by moment."""
        groups: dict[float, list[Task]] = {}
        for s in self.starts:
            groups.setdefault(s.at, []).append(s.task)
        return list(groups.values())

    def moments(self) -> list[Moment]:
        """The labs over time: at each start or end, the labs running from then on."""
        times = sorted({s.at for s in self.starts} | {s.ends for s in self.starts})
        return [Moment(t, tuple(s.task for s in self.starts if s.at <= t < s.ends)) for t in times]


def schedule(tasks: Sequence[Task], machine_cores: int, lateness: RecentLateness | None = None) -> Schedule:
    """Simulate the run: at each moment a lab ends (and at the start) the waiting tasks are taken longest
    first, each started if admitted beside those running, so cheap tasks fill the room a busy one leaves
    and a task that does not fit waits for labs to end.  `lateness` is held fixed: the live scheduler asks
    `admitted` with the lateness it reads as it goes."""
    waiting = sorted(tasks, key=lambda t: (-t.seconds, t.figure, t.setting))
    running: list[Start] = []
    starts: list[Start] = []
    now = 0.0
    while waiting:
        for task in list(waiting):
            if admitted([s.task for s in running], task, machine_cores, lateness):
                start = Start(task, now, now + task.seconds)
                running.append(start)
                starts.append(start)
                waiting.remove(task)
        now = min(s.ends for s in running)  # one lab always runs: nothing running admits the next task
        running = [s for s in running if s.ends > now]
    return Schedule(tuple(starts))


def estimate(tasks: Sequence[Task], machine_cores: int, lateness: RecentLateness | None = None) -> float:
    """The run's estimated wall time in seconds: the local cluster's start, then the simulated labs."""
    return (CLUSTER_SECONDS + schedule(tasks, machine_cores, lateness).seconds) if tasks else 0.0
