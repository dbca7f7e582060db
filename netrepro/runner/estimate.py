"""A set of figures' time on this machine: serially, by each figure's stored estimate, and packed into labs
side by side (netrepro.runner.packing: one task per figure and path setting, at its measured CPU per lab, a
setting's trials split into more tasks where the figure has fewer settings than the labs `--jobs auto` would
admit it alone, as its run splits them: shards.split).

`reproduce --dry-run` prints both; `bench reproduce` sets the measured wall time beside them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from netrepro.runner import admission, packing, shards
from netrepro.runner.plan import Plan
from netrepro.studykit.spec import Figure


@dataclass(frozen=True)
class Estimate:
    """The figures' serial and packed wall time, in seconds; the figures without a stored time (left out
    of both), and the path settings packed."""

    serial_s: float
    packed_s: float
    unknown: tuple[str, ...]
    settings: int


def of(figures: Sequence[Figure], quick: bool, trials: int | None, out: Path) -> Estimate:
    """The estimate of running `figures` (those that draw another's rows run no trial of their own)."""
    serial = 0.0
    unknown = []
    tasks = []
    for fig in figures:
        if fig.trials_of:
            continue
        plan = Plan.of(fig, quick, trials=trials)
        seconds = plan.seconds()
        per_trial = plan.stored.seconds_per_trial if plan.stored else None
        if seconds is None or not per_trial:
            unknown.append(fig.full_name)
            continue
        serial += seconds
        cost = admission.measured_cost(fig, out)
        holds = admission.exclusive(fig, quick)
        settings = {s: n * plan.trials_per_setting for s, n in Counter(map(shards.setting, plan.grid)).items()}
        labs = admission.admit(cost, sum(settings.values())).jobs  # as a run with --jobs auto would split them
        for s, pieces in shards.split(settings, labs).items():
            size, extra = divmod(settings[s], pieces)
            tasks += [
                packing.Task.of(fig.full_name, s, size + (k < extra), per_trial, cost, holds) for k in range(pieces)
            ]
    return Estimate(serial, packing.estimate(tasks, admission.cores()), tuple(unknown), len(tasks))
