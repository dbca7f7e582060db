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
tasks, admitted by their measured CPU per lab), of the trials the run has
left in --out where it would resume.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import expts
from ground import results
from ground.errors import SetupError, UserError
from ground.manifests import ManifestUnreadable, read_manifest
from netrepro.front import exits, figure_commands, side_by_side
from netrepro.front.options import until_decided
from netrepro.runner import admission, estimate, preflight
from netrepro.runner.plan import Plan
from netrepro.studykit.spec import Figure

TRIALS_NOT_OK = figure_commands.TRIALS_NOT_OK

log = logging.getLogger("netrepro.reproduce")


def figures_of(what: str) -> list[Figure]:
    """The declared figures of a study, of several (`iw,spdy`), or of every study (`all`), each followed by
    the derived figures its study keeps (`KEPT`, netrepro.studykit.kept), owners of shared rows first."""
    names = [s.__name__.rsplit(".", 1)[-1] for s in expts.STUDIES]
    asked = what.split(",")
    allowed = f"the studies are {', '.join(names)} (one, or several joined by commas), or all"
    unknown = [a for a in asked if a not in names]
    if what != "all" and unknown:
        raise UserError(f"reproduce {what}: no such study {', '.join(map(repr, unknown))}; {allowed}")
    if len(set(asked)) < len(asked):
        raise UserError(f"reproduce {what}: a study named twice; {allowed}")
    chosen = list(expts.STUDIES) if what == "all" else [expts.STUDIES[names.index(a)] for a in asked]
    figures = expts.measured_of([fig for study in chosen for fig in study.FIGURES])
    return sorted(figures, key=lambda f: bool(f.trials_of))  # stable: a figure that plots another's rows after it


def label(what: str) -> str:
    """The name a run of `what` files its report, logs and schedule under: <out>/reproduce/<label>/."""
    return what.replace(",", "+")


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


def dry_run(figures: Sequence[Figure], args: argparse.Namespace) -> int:
    """The plan of each figure, and the time of those this machine runs: serially and packed into labs."""
    here = []
    for fig in figures:
        print("\n".join(Plan.of(fig, args.quick, trials=args.trials).describe()))
        why = cannot_run_here(fig, args)
        if why:
            print(f"  skipped on this machine: {why}")
            continue
        here.append(fig)
    wall = estimate.of(here, args.quick, args.trials, args.out.resolve(), left_in=args.out.resolve(), seed=args.seed)
    skipped = f", {len(figures) - len(here)} skipped here" if len(here) < len(figures) else ""
    unknown = wall.unknown
    resumed = (
        f"; {wall.trials_left} of their {wall.trials} trials left in {args.out} (resuming)"
        if wall.trials_left < wall.trials
        else ""
    )
    print(
        f"\nreproduce {args.study}: {len(figures)} figures{skipped}{resumed}; serially about {_clock(wall.serial_s)}"
        + (f" (and {len(unknown)} with no stored time: {', '.join(unknown)})" if unknown else "")
        + f"; packed into labs side by side on {admission.cores()} cores ({wall.settings} path settings, each lab "
        f"admitted by its figure's measured CPU; a figure on a fast path or loading a variant another loads, with "
        f"no other figure's lab beside it), about {_clock(wall.packed_s)}"
    )
    return 0


@dataclasses.dataclass
class Done:
    """One figure of the run, as it ended."""

    figure: str
    status: str  # ok, trials not ok, skipped
    why: str = ""
    verdict: str = ""
    log: Path | None = None  # what its child printed (side by side)
    labs: int = 0
    start_s: float | None = None  # from the run's start (side by side)
    end_s: float | None = None


def _verdict(fig: Figure, out: Path) -> str:
    try:
        judged = read_manifest(fig.manifest_in(out)).doc.get("verdict")
    except ManifestUnreadable:
        return ""
    return str(judged.get("verdict", "")) if isinstance(judged, dict) else ""


def _one_after_another(figures: Sequence[Figure], args: argparse.Namespace, out: Path) -> list[Done]:
    """The figures in this process, one after another (a cluster's run: its workers are the labs)."""
    plans = {f.full_name: Plan.of(f, args.quick, trials=args.trials) for f in figures}
    began = time.monotonic()
    done = []
    for k, fig in enumerate(figures, 1):
        left = sum(_estimate(plans[f.full_name]) for f in figures[k - 1 :] if not f.trials_of)
        print(
            f"\n== reproduce {args.study}: figure {k} of {len(figures)}, {fig.full_name}; "
            f"{_clock(time.monotonic() - began)} elapsed, about {_clock(left)} left by the stored estimates ==",
            flush=True,
        )
        status = figure_commands.cmd_run(side_by_side.figure_args(fig, args))
        done.append(Done(fig.full_name, "ok" if status == 0 else "trials not ok", verdict=_verdict(fig, out)))
    return done


def _write_schedule(here: Path, args: argparse.Namespace, began: float, done: Sequence[Done], out: Path) -> None:
    """<out>/reproduce/<label>/schedule.json: each figure's status, labs, start and end, and its log."""
    results.write_json(
        here / "schedule.json",
        {
            "reproduce": args.study,
            "cores": admission.cores(),
            "wall_s": round(time.monotonic() - began, 1),
            "figures": [dataclasses.asdict(d) | {"log": str(d.log) if d.log else None} for d in done],
        },
        out,
    )


def cmd_reproduce(args: argparse.Namespace) -> int:
    figures = figures_of(args.study)
    until_decided(args, figures)  # every figure's budget checked before the first runs
    if args.dry_run:
        return dry_run(figures, args)
    out = args.out.resolve()
    here_dir = out / "reproduce" / label(args.study)
    began = time.monotonic()
    done: list[Done] = []
    here = []
    for fig in figures:
        why = cannot_run_here(fig, args)
        if why is None:
            here.append(fig)
        else:
            print(f"{fig.full_name}: skipped: {why}", flush=True)
            done.append(Done(fig.full_name, "skipped", why))
    if args.hosts or args.scheduler:
        done += _one_after_another(here, args, out)  # a cluster's workers are the labs: one figure at a time
    else:

        def ended(e: side_by_side.Ended) -> None:
            status = "ok" if e.status == 0 else ("trials not ok" if e.status == TRIALS_NOT_OK else f"exit {e.status}")
            done.append(
                Done(e.figure.full_name, status, "", _verdict(e.figure, out), e.log, e.labs, e.start_s, e.end_s)
            )
            log.info(
                "%s: %s in %s on %d lab%s%s", e.figure.full_name, status, _clock(e.end_s - e.start_s), e.labs,
                "s" if e.labs > 1 else "", f"; see {e.log}" if e.status else "",
            )  # fmt: skip

        run_figure = functools.partial(exits.dispatch, command=figure_commands.cmd_run)
        try:
            side_by_side.run(here, args, run_figure, here_dir / "logs", ended)
        finally:  # stopped by a signal too: what ran, and how it ended
            _write_schedule(here_dir, args, began, done, out)
    done.sort(key=lambda d: [f.full_name for f in figures].index(d.figure))
    print(f"\nreproduce {args.study}: {len(figures)} figures in {_clock(time.monotonic() - began)}")
    for d in done:
        print(f"  {d.figure:<20} {d.status:<14} {d.verdict or '-':<13} {d.why}")
    if args.hosts or args.scheduler:
        _write_schedule(here_dir, args, began, done, out)
    page = here_dir / "index.html"
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
