"""A set of figures' time on this machine: serially, by each figure's stored estimate, and packed into labs
side by side (netrepro.runner.packing: one task per figure and path setting, at its measured CPU per lab, a
setting's trials split into more tasks where the figure has fewer settings than the labs `--jobs auto` would
admit it alone, as its run splits them: shards.split).

`reproduce --dry-run` prints both, of the trials a resumed run has left (`left_in`: a trial with an ok row in
that tree is done); `bench reproduce` sets the measured wall time beside them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ground.trials import DEFAULT_SEED, trial_key
from netrepro.runner import admission, packing, shards
from netrepro.runner.plan import LAB_SECONDS, Plan
from netrepro.studykit import evidence
from netrepro.studykit.spec import Figure


@dataclass(frozen=True)
class Estimate:
    """The figures' serial and packed wall time, in seconds; the figures without a stored time (left out
    of both), and the path settings packed."""

    serial_s: float
    packed_s: float
    unknown: tuple[str, ...]
    settings: int
    trials: int = 0  # the figures' trials
    trials_left: int = 0  # of them, those without an ok row in `left_in` (all, without it)


def of(
    figures: Sequence[Figure],
    quick: bool,
    trials: int | None,
    out: Path,
    left_in: Path | None = None,
    seed: int = DEFAULT_SEED,
) -> Estimate:
    """The estimate of running `figures` (those that draw another's rows run no trial of their own): every
    trial, or with `left_in` those a run resuming in that tree has left (at `seed`)."""
    serial = 0.0
    unknown = []
    tasks = []
    total = left = 0
    for fig in figures:
        if fig.trials_of:
            continue
        plan = Plan.of(fig, quick, trials=trials)
        done: set[str] = set()
        if left_in is not None:
            rows = evidence.judged_rows(fig, left_in / fig.directory / fig.csv_name, quick, trials, seed)
            done = {r.key for r in rows if r.ok}  # a failed trial runs again
        todo = [p for p in plan.grid for i in range(plan.trials_per_setting) if trial_key(p, i) not in done]
        total, left = total + plan.trials, left + len(todo)
        if not todo:
            continue
        per_trial = plan.stored.seconds_per_trial if plan.stored else None
        if not per_trial:
            unknown.append(fig.full_name)
            continue
        settings = dict(Counter(map(shards.setting, todo)))
        serial += len(todo) * per_trial + len(settings) * LAB_SECONDS
        cost = admission.measured_cost(fig, out)
        holds = admission.exclusive(fig, quick)
        # as a run with --jobs auto would split them
        labs = admission.admit(cost, sum(settings.values()), fast=holds.fast).jobs
        for s, pieces in shards.split(settings, labs).items():
            size, extra = divmod(settings[s], pieces)
            tasks += [
                packing.Task.of(fig.full_name, s, size + (k < extra), per_trial, cost, holds) for k in range(pieces)
            ]
    return Estimate(serial, packing.estimate(tasks, admission.cores()), tuple(unknown), len(tasks), total, left)
