"""The packer of a study's figures: labs admitted by measured CPU and lateness, cheap labs beside busy ones,
and the simulated plan's wall time."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from ground.trials import Row
from netrepro.runner import admission
from netrepro.runner.admission import Exclusive
from netrepro.runner.packing import (
    UNMEASURED_CORES,
    RecentLateness,
    Schedule,
    Task,
    admitted,
    estimate,
    schedule,
)
from netrepro.runner.plan import CLUSTER_SECONDS


def _mix(seed: int) -> list[Task]:
    """A seeded mix of tasks from several figures, from 0.02 to 1.2 cores a lab."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    cores = rng.uniform(0.02, 1.2, n)
    trials = rng.integers(1, 30, n)
    seconds = rng.uniform(1.0, 60.0, n)
    return [Task(f"s/fig{k % 5}", f"path{k}", int(trials[k]), float(seconds[k]), float(cores[k])) for k in range(n)]


def _load(plan: Schedule) -> tuple[npt.NDArray[np.int_], npt.NDArray[np.float64]]:
    """At each lab's start, the labs running and their cores, from the starts and ends alone."""
    at = np.array([s.at for s in plan.starts])
    ends = np.array([s.ends for s in plan.starts])
    cores = np.array([s.task.cores for s in plan.starts])
    running = (at[None, :] <= at[:, None]) & (at[:, None] < ends[None, :])  # [moment, lab]
    return running.sum(axis=1), running @ cores


@pytest.mark.parametrize("machine_cores", [1, 2, 4])
def test_the_packer_never_admits_more_labs_than_the_measured_cpu_allows(machine_cores: int) -> None:
    budget = admission.HEADROOM * machine_cores
    for seed in range(30):
        tasks = _mix(seed)
        plan = schedule(tasks, machine_cores)
        assert sorted(s.task.setting for s in plan.starts) == sorted(t.setting for t in tasks)  # each task once
        labs, cores = _load(plan)
        over = cores > budget + 1e-9
        assert not np.any(over & (labs > 1)), f"seed {seed}: {cores[over & (labs > 1)]} cores, budget {budget}"
        assert labs.max() <= admission.MAX_AUTO_JOBS


def test_a_figure_whose_lateness_grows_is_given_fewer_labs() -> None:
    tasks = [Task("iw/fig2", f"path{k}", 10, 3.0, 0.05) for k in range(12)]  # the CPU alone admits 8 of them
    bound_ms = 5.0
    peaks = []
    for share in (0.1, 0.6, 0.9):
        late = RecentLateness(share * bound_ms, bound_ms, labs=4)
        peaks.append(max(len(m.labs) for m in schedule(tasks, 2, late).moments()))
    assert np.all(np.diff(peaks) <= 0), peaks  # never rises
    assert peaks[-1] < peaks[0], peaks  # falls at least once
    assert peaks == [admission.MAX_AUTO_JOBS, 4, 3]  # the CPU's 8; as many as ran (4); one fewer


def test_cheap_waiting_tasks_fill_the_room_a_busy_one_leaves() -> None:
    busy = Task("cubicplus/fig12", "100mbit", 20, 30.0, 0.9)
    cheap = [Task("iw/fig2", f"path{k}", 5, 10.0, 0.04) for k in range(10)]
    tasks = [busy, *cheap]
    plan = schedule(tasks, 2)
    (busy_lab,) = [s for s in plan.starts if s.task == busy]
    beside = [s for s in plan.starts if s.task != busy and s.at < busy_lab.ends]
    assert len(beside) == len(cheap)  # every cheap lab ran while the busy one did
    serial = sum(t.seconds for t in tasks)
    assert estimate(tasks, 2) == pytest.approx(CLUSTER_SECONDS + busy.seconds)  # the busy lab is the wall
    assert estimate(tasks, 2) < serial


def test_one_lab_always_starts_when_nothing_runs_even_above_the_budget() -> None:
    huge = Task("x/fig1", "a", 3, 10.0, 5.0)  # 5 cores: over the 1.5 of 2 cores
    unmeasured = Task.of("x/fig2", "b", 3, 10.0, None)
    assert unmeasured.cores == UNMEASURED_CORES
    very_late = RecentLateness(9.5, 10.0, labs=1)  # past LATE_SHED with one lab: one fewer would be none
    for task in (huge, unmeasured):
        assert admitted([], task, 2)
        assert admitted([], task, 2, very_late)
    cheap = Task("x/fig3", "c", 3, 10.0, 0.02)
    assert not admitted([huge], cheap, 2)  # nothing starts beside a lab over the budget
    assert not admitted([unmeasured], cheap, 2)  # nor beside one whose cost is unknown
    plan = schedule([huge, unmeasured, cheap], 2)
    assert plan.seconds == pytest.approx(huge.seconds + unmeasured.seconds + cheap.seconds)  # one at a time


def test_the_recent_lateness_is_the_worst_row_against_its_own_bound() -> None:
    rows = [
        Row(late_p99_ms="4.0", late_bound_ms="20"),  # 20 %
        Row(late_p99_ms="3.0", late_bound_ms="5"),  # 60 %: the worst, though not the latest in ms
        Row(late_p99_ms="", late_bound_ms="5"),  # a row that measured nothing
        Row(late_p99_ms="x", late_bound_ms="5"),
    ]
    late = RecentLateness.of(rows, labs=3)
    assert late == RecentLateness(3.0, 5.0, 3)
    assert late.share == pytest.approx(0.6)
    assert RecentLateness.of([Row(status="ok")], labs=3) is None


def test_labs_of_figures_that_share_a_variant_or_run_a_fast_path_are_never_side_by_side() -> None:
    plus = Exclusive(frozenset({"cubic_plus"}))
    fast = Exclusive(fast=True)
    a, b = Task("spdy/conns", "s1", 5, 1.0, 0.1, plus), Task("spdy/backoff", "s1", 5, 1.0, 0.1, plus)
    assert a.clashes(b) and not a.clashes(Task("spdy/conns", "s2", 5, 1.0, 0.1, plus))  # its own labs share it
    quick = Task("iw/fig2", "s", 5, 1.0, 0.1)
    assert admitted([quick], a, 8) and not admitted([a], b, 8)
    busy = Task("cubicplus/fig3", "s", 5, 1.0, 0.1, fast)
    assert not admitted([quick], busy, 8) and not admitted([busy], quick, 8) and admitted([], busy, 8)
    assert busy.clashes(Task("cubicplus/fig3", "s2", 5, 1.0, 0.1, fast)), "a fast path's own labs too"
    # the simulated schedule keeps them apart too: the fast task's lab runs alone
    plan = schedule([busy, quick, Task("iw/fig5a", "s", 5, 1.0, 0.1)], 8)
    for start in plan.starts:
        others = [s for s in plan.starts if s is not start and s.at < start.ends and start.at < s.ends]
        assert not any(start.task.clashes(o.task) for o in others), (start, others)
