"""`--until-decided`: after the declared trials, more in batches for the settings whose claims are undecided.

Look 1 judges every claim on the declared trials; each later look gives the settings an undecided claim
read (netrepro.studykit.reads) another batch (sequential.Plan: the declared count by default, up to the
budget) and judges the claims still open again.  Every look reads its intervals at the confidence its
alpha spending leaves it (sequential.Design, Lan-DeMets' O'Brien-Fleming type, through
intervals.at_confidence), so that over all looks a claim at its edge is wrongly decided at most as often as
one look at 95 % would (tests/unit/test_sequential.py simulates it with this same plan's design).  A claim
is frozen at the first look that decides it.  Claims no trial can decide (checks, claims set by design,
exact readings) drive no trials; a claim whose cells do not vary is decided at its first look.

The looks are a function of the rows (`run_looks`): `select` picks the rows at given trial counts, `more`
makes sure the rows of the next counts exist (the sweep runs them; a --plot-only replay only checks), so
the same command run again finds the same looks and goes on where they stopped.  `Looks.manifest` is what
the figure's manifest records of them (`sequential`): the plan and its design, every look's claims with
their numbers and decisions, why the looks stopped, and the trials each setting reached (`trials_judged`,
which netrepro.studykit.evidence selects the judged rows by).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ground.errors import UserError
from ground.manifests import ManifestUnreadable, read_manifest
from ground.trials import Row, latest_rows, setting_key, setting_of
from netrepro.studykit import evidence, intervals, reads
from netrepro.studykit.claims import Judged
from netrepro.studykit.decisions import UNDECIDED, AllOf, ByDesign, Exact, Regrouped, Test
from netrepro.studykit.sequential import Plan
from netrepro.studykit.spec import Figure, Params, Rows

log = logging.getLogger("netrepro.runner.looks")

LIMIT = 1000  # the most trials a setting may reach (as --trials)


@dataclass(frozen=True)
class UntilDecided:
    """What `--until-decided TRIALS [--until-hours H]` asks: at most `trials` a setting; no batch begun
    after `hours` of this command's looks (None: no limit of time)."""

    trials: int
    hours: float | None = None

    def plan(self, fig_name: str, declared: int) -> Plan:
        """The plan of the looks over a figure's `declared` trials; a UserError where the budget is not
        above them."""
        if not declared < self.trials <= LIMIT:
            raise UserError(
                f"--until-decided {self.trials}: {fig_name} has {declared} trials per setting before any look is "
                f"added; the budget is the most trials a setting may reach, above {declared} and at most {LIMIT}"
            )
        return Plan.of(declared, self.trials)


def trials_decide(test: Test) -> bool:
    """Whether more trials could decide a claim of this test: not a reading of the setup (Exact) nor one set
    by design; one of several parts (AllOf) that trials could decide is enough."""
    if isinstance(test, Exact | ByDesign):
        return False
    if isinstance(test, AllOf):
        return any(trials_decide(t) for t in test.tests)
    if isinstance(test, Regrouped):
        return trials_decide(test.test)
    return True


STOPPED = {
    "decided": "every claim trials could decide is decided",
    "budget": "the budget's last look",
    "hours": "the --until-hours budget was spent",
    "missing": "the next look's trials are not all in the CSV",
}


@dataclass
class Looks:
    """What the looks found: each claim's judgement (frozen at its deciding look, else its last), the trials
    each setting reached, and the record of every look."""

    plan: Plan
    judged: list[Judged]
    reached: dict[str, int]
    looks: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = "decided"
    hours: float | None = None

    def manifest(self) -> dict[str, Any]:
        design = self.plan.design
        return {
            "design": {
                "spending": "Lan-DeMets, O'Brien-Fleming type (netrepro.studykit.sequential.Design)",
                "alpha": design.alpha,
                "looks": design.looks,
                "confidence": [design.confidence_at(k) for k in range(1, design.looks + 1)],
                "declared": self.plan.declared,
                "batch": self.plan.batch,
                "budget": self.plan.budget,
                "hours": self.hours,
            },
            "looks": self.looks,
            "stopped": STOPPED[self.stopped],
            # only the settings taken past the declared trials (ground.trials.setting_key: trials)
            "trials_judged": {s: n for s, n in sorted(self.reached.items()) if n != self.plan.declared},
        }


def _label(fig: Figure, rows: Rows, keys: set[str]) -> dict[str, int]:
    """The trials a claim read, by setting as the terminal names them (`x=level series`)."""
    counts: dict[str, int] = {}
    for r in rows:
        if r.key in keys:
            name = f"{fig.x}={r.text(fig.x)} {r.series}".strip()
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def run_looks(
    fig: Figure,
    grid: list[Params],
    plan: Plan,
    select: Callable[[Mapping[str, int]], Rows],
    more: Callable[[Mapping[str, int]], bool],
    hours: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    say: Callable[[str], None] = print,
) -> Looks:
    """The looks of `plan` over the figure's claims.  `select(reached)`: the latest rows of the trials each
    setting (setting_key) has by then; `more(reached)`: true once every one of those trials has a row (the
    sweep runs the missing ones first).  One line a look goes to `say`."""
    began = clock()
    design = plan.design
    parameters = {k for p in grid for k in p}
    reached = {setting_key(p): plan.declared for p in grid}
    judged: dict[int, Judged] = {}
    frozen: set[int] = set()
    out = Looks(plan, [], reached, hours=hours)
    look = 1
    while True:
        rows = select(reached)
        confidence = design.confidence_at(look)
        grow: set[str] = set()
        entries = []
        with intervals.at_confidence(confidence):
            for i, claim in enumerate(fig.claims):
                if i in frozen:
                    continue
                found, keys = reads.judge_reading(claim, fig, rows, parameters)
                judged[i] = found
                entries.append(
                    {
                        "where": claim.where,
                        "check": claim.check,
                        "outcome": found.outcome,
                        "trials": _label(fig, rows, keys),
                        "findings": [
                            {"at": f.at, "estimate": f.estimate, "outcome": f.outcome} for f in found.findings
                        ],
                    }
                )
                if found.outcome != UNDECIDED:
                    frozen.add(i)
                elif not claim.check and trials_decide(claim.test):
                    grow |= {setting_of(k) for k in keys} & reached.keys()
        out.looks.append(
            {"look": look, "confidence": confidence, "most_trials": max(reached.values(), default=0), "claims": entries}
        )
        outcomes = [e["outcome"] for e in entries]
        counted = ", ".join(f"{outcomes.count(o)} {o}" for o in dict.fromkeys(outcomes))
        say(
            f"  look {look} of {design.looks} at {confidence:.4%}: {len(entries)} claims open ({counted or 'none'}); "
            f"{sum(1 for n in reached.values() if n > plan.declared)} of {len(reached)} settings past "
            f"{plan.declared} trials, the most {max(reached.values(), default=0)}"
        )
        if not grow:
            out.stopped = "decided"
            break
        if look == design.looks:
            out.stopped = "budget"
            break
        if hours is not None and clock() - began >= hours * 3600:
            out.stopped = "hours"
            break
        after = dict(reached)
        for s in grow:
            after[s] = max(after[s], plan.trials_at(look + 1))
        if not more(after):
            out.stopped = "missing"
            break
        reached = after
        out.reached = reached
        look += 1
    out.judged = [judged[i] for i in range(len(fig.claims))]
    say(f"  looks stopped after look {look}: {STOPPED[out.stopped]}")
    return out


def stored_plan(manifest_path: Path, trials: int, seed: int, quick: bool) -> Plan | None:
    """The plan of the looks a figure's manifest records, where it judged the same declared trials, seed and
    grid: a --plot-only replays them, judging what the run judged; None where it records none."""
    try:
        doc = read_manifest(manifest_path).doc
    except ManifestUnreadable:
        return None
    sequential = doc.get("sequential")
    design = sequential.get("design") if isinstance(sequential, dict) else None
    same = doc.get("trials_per_setting") == trials and doc.get("seed") == seed and bool(doc.get("quick")) == quick
    if not isinstance(design, dict) or not same:
        return None
    try:
        return Plan(int(design["declared"]), int(design["budget"]), int(design["batch"]))
    except (KeyError, TypeError, ValueError) as e:
        log.warning("%s: its looks are not replayed (%s)", manifest_path, e)
        return None


T = TypeVar("T")


def until_decided(
    fig: Figure,
    grid: list[Params],
    trials: int,
    plan: Plan,
    hours: float | None,
    rows: Callable[[], Iterable[Row]],
    todo_of: Callable[[Mapping[str, int]], list[T]],
    run: Callable[[list[T]], object] | None,
) -> Looks:
    """The looks of `plan` over a figure's CSV: `rows()` its rows at the run's seed as they stand, `todo_of`
    the trials a look's counts still lack, `run` runs them (None: a --plot-only, which runs none and stops
    its looks where the rows do)."""

    def select(reached: Mapping[str, int]) -> Rows:
        keys = evidence.wanted(grid, trials, reached)
        return latest_rows(r for r in rows() if r.key in keys)

    def more(reached: Mapping[str, int]) -> bool:
        todo = todo_of(reached)
        if todo and run is not None:
            print(f"  {len(todo)} trials more, for the settings of the undecided claims", flush=True)
            run(todo)
        return evidence.wanted(grid, trials, reached) <= {r.key for r in rows()}

    design = plan.design
    confidences = ", ".join(f"{design.confidence_at(k):.4%}" for k in range(1, design.looks + 1))
    print(
        f"  until decided: up to {design.looks} looks, at {plan.declared} trials a setting and {plan.batch} more "
        f"a look up to {plan.budget}; each look's confidence {confidences}",
        flush=True,
    )
    return run_looks(fig, grid, plan, select, more, hours, say=lambda line: print(line, flush=True))
