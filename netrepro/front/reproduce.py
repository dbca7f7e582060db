"""`run.sh reproduce STUDY|all`: every declared figure of a study (or of all of them) in one command.

The figures run one after another, each exactly as `run.sh run <figure>`
with the same options would run it: its CSV, figure, caption and manifest
where a single run writes them, resumed where it left off (so the same
command again resumes the whole, and finds nothing to do once done).  A
figure that plots another's rows (`trials_of`) runs after it and only
draws.  A figure this machine cannot run (the preflight's SetupError: a
qdisc, a module, a browser it lacks) is skipped, saying why, and counted
as not run: `run.sh --vm reproduce ...` runs it in the stock-kernel lane.
Before each figure a line gives the whole run's progress: figures done,
elapsed time, and the time the rest should take (each figure's estimate
from its stored reference, netrepro.runner.plan).  At the end a table
lists every figure's outcome and verdict, and the report of the output
tree is written to <out>/reproduce/<what>/index.html (with findings.md).

`--dry-run` prints the plan: each figure's grid and estimate, the figures
it would skip here and why, the serial time, and the wall time at the labs
it would use (netrepro.runner.packing: every figure's path settings as
tasks, admitted by their measured CPU per lab).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import expts
from ground.errors import SetupError, UserError
from ground.manifests import ManifestUnreadable, read_manifest
from netrepro.front import figure_commands
from netrepro.front.options import until_decided
from netrepro.runner import admission, packing, preflight, shards
from netrepro.runner.plan import Plan
from netrepro.studykit.spec import Figure

TRIALS_NOT_OK = figure_commands.TRIALS_NOT_OK


def figures_of(what: str) -> list[Figure]:
    """The declared figures of a study, or of every study (`all`), owners of shared rows first."""
    names = [s.__name__.rsplit(".", 1)[-1] for s in expts.STUDIES]
    if what == "all":
        chosen = list(expts.STUDIES)
    elif what in names:
        chosen = [expts.STUDIES[names.index(what)]]
    else:
        raise UserError(f"reproduce {what}: no such study; the studies are {', '.join(names)}, or all")
    figures = [fig for study in chosen for fig in study.FIGURES]
    return sorted(figures, key=lambda f: bool(f.trials_of))  # stable: a figure that plots another's rows after it


def cannot_run_here(fig: Figure, args: argparse.Namespace) -> str | None:
    """Why this machine cannot run the figure (the preflight's probe of tools, backend, variants, browsers,
    qdiscs), or None."""
    grid = fig.grid(args.quick)
    try:
        needs = preflight.figure_needs(fig, grid, fig.overrides, args.shaper, args.impl)
        preflight.check_machine(needs)
    except SetupError as e:
        return str(e)
    return None


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _estimate(plan: Plan) -> float:
    """A figure's serial estimate in seconds (0 where no stored result gives one)."""
    return plan.seconds() or 0.0


def packed_estimate(figures: Sequence[Figure], args: argparse.Namespace) -> tuple[float, int]:
    """(wall seconds, tasks) of the figures' trials packed into labs side by side on this machine
    (netrepro.runner.packing): one task per figure and path setting, at its measured CPU per lab."""
    tasks = []
    for fig in figures:
        if fig.trials_of:
            continue  # its trials are another figure's
        plan = Plan.of(fig, args.quick, trials=args.trials)
        per_trial = plan.stored.seconds_per_trial if plan.stored and plan.stored.seconds_per_trial else None
        if per_trial is None:
            continue
        cost = admission.measured_cost(fig, args.out.resolve())
        settings = Counter(shards.setting(setting) for setting in plan.grid)
        trials = plan.trials_per_setting
        tasks += [packing.Task.of(fig.full_name, s, n * trials, per_trial, cost) for s, n in settings.items()]
    return packing.estimate(tasks, admission.cores()), len(tasks)


def dry_run(figures: Sequence[Figure], args: argparse.Namespace) -> int:
    """The plan of each figure, and the time of those this machine runs: serially and packed into labs."""
    total = 0.0
    unknown, here = [], []
    for fig in figures:
        plan = Plan.of(fig, args.quick, trials=args.trials)
        print("\n".join(plan.describe()))
        why = cannot_run_here(fig, args)
        if why:
            print(f"  skipped on this machine: {why}")
            continue
        here.append(fig)
        if fig.trials_of:
            continue
        if plan.seconds() is None:
            unknown.append(fig.full_name)
        total += _estimate(plan)
    packed, tasks = packed_estimate(here, args)
    skipped = f", {len(figures) - len(here)} skipped here" if len(here) < len(figures) else ""
    print(
        f"\nreproduce {args.study}: {len(figures)} figures{skipped}; serially about {_clock(total)}"
        + (f" (and {len(unknown)} with no stored time: {', '.join(unknown)})" if unknown else "")
        + f"; packed into labs side by side on {admission.cores()} cores ({tasks} path settings, each lab "
        f"admitted by its figure's measured CPU), about {_clock(packed)}"
    )
    return 0


@dataclasses.dataclass
class Done:
    """One figure of the run, as it ended."""

    figure: str
    status: str  # ok, trials not ok, skipped
    why: str = ""
    verdict: str = ""


def _verdict(fig: Figure, out: Path) -> str:
    try:
        judged = read_manifest(out / fig.directory / f"{fig.name}.manifest.json").doc.get("verdict")
    except ManifestUnreadable:
        return ""
    return str(judged.get("verdict", "")) if isinstance(judged, dict) else ""


def cmd_reproduce(args: argparse.Namespace) -> int:
    figures = figures_of(args.study)
    until_decided(args, figures)  # every figure's budget checked before the first runs
    if args.dry_run:
        return dry_run(figures, args)
    out = args.out.resolve()
    plans = {f.full_name: Plan.of(f, args.quick, trials=args.trials) for f in figures}
    began = time.monotonic()
    done: list[Done] = []
    for k, fig in enumerate(figures, 1):
        left = sum(_estimate(plans[f.full_name]) for f in figures[k - 1 :] if not f.trials_of)
        print(
            f"\n== reproduce {args.study}: figure {k} of {len(figures)}, {fig.full_name}; "
            f"{_clock(time.monotonic() - began)} elapsed, about {_clock(left)} left by the stored estimates ==",
            flush=True,
        )
        why = cannot_run_here(fig, args)
        if why is not None:
            print(f"{fig.full_name}: skipped: {why}", flush=True)
            done.append(Done(fig.full_name, "skipped", why))
            continue
        one = argparse.Namespace(**{**vars(args), "figure": fig.full_name})
        status = figure_commands.cmd_run(one)
        done.append(Done(fig.full_name, "ok" if status == 0 else "trials not ok", verdict=_verdict(fig, out)))
    print(f"\nreproduce {args.study}: {len(figures)} figures in {_clock(time.monotonic() - began)}")
    for d in done:
        print(f"  {d.figure:<20} {d.status:<14} {d.verdict or '-':<13} {d.why}")
    page = out / "reproduce" / args.study / "index.html"
    from netrepro.front import report

    written, entries = report.write(out, page)
    print(f"wrote {written} and {written.with_name('findings.md').name}: {len(entries)} figures under {out}")
    skipped = [d.figure for d in done if d.status == "skipped"]
    if skipped:
        print(
            f"run.sh reproduce: {len(skipped)} figures not run here ({', '.join(skipped)}); "
            f"`sudo ./run.sh --vm reproduce {args.study}` runs them in the stock-kernel lane (exit {TRIALS_NOT_OK})",
            file=sys.stderr,
        )
    bad = [d for d in done if d.status != "ok"]
    return TRIALS_NOT_OK if bad else 0
