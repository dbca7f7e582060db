"""The commands of figures: `run` (a figure's trials, handed to the sweep; a study file's too),
`merge` (shards' CSVs into one), `plot` (a trial's time series), `list` (every figure with its plan
and stored result), `workloads` (what a trial can run) and `report` (the page of every stored figure).

A `run` or a `merge` that leaves a figure with trials not ok (failed, timed out, not run) exits
TRIALS_NOT_OK after one line that counts them by figure and names the command that runs them again;
a `run --plot-only` draws rows it did not run, and exits 0 whatever they hold (docs/commands.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import expts
from ground import figurelock, results, trials
from ground.errors import UserError
from ground.kernel import VM_ACCEL_ENV
from ground.manifests import ManifestUnreadable, read_manifest
from ground.results import REFERENCE, RESULTS
from ground.trials import trial_key
from ground.units import QuantityError
from netrepro.engine.cluster import Engine
from netrepro.front import checks, studyfile
from netrepro.front.options import parse_topology, until_decided
from netrepro.runner import admission, derive, shards, sweep
from netrepro.runner.looks import UntilDecided
from netrepro.runner.plan import Plan
from netrepro.runner.shards import Shard
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit import evidence, params, plot
from netrepro.studykit.spec import Figure
from netrepro.studykit.trial import trial_path, trial_topology

log = logging.getLogger("netrepro")

# The exit status of a run or a merge that finished with trials not ok: failed, timed out or not run.
TRIALS_NOT_OK = 3
# What a run again leaves out: the rows just made are resumed, and the failed trials run again.
_NOT_AGAIN = ("--fresh", "--plot-only", "--no-retry-failed")


def cmd_workloads(args: argparse.Namespace) -> int:
    """Each workload with its keys and metrics, then the keys every trial takes (netrepro.studykit.params)."""

    def show(keys: Sequence[params.Key]) -> None:
        for k in keys:
            print(f"    {k.name:<22} {k.allowed()}: {k.help}")

    for w in WORKLOADS.values():
        print(f"{w.name}: {w.doc}")
        print(f"  tools: {', '.join(w.tools) or '(none)'}")
        print(f"  metrics: {', '.join(w.metrics)}")
        print("  keys:" if w.keys else "  keys: only those every trial takes")
        show(w.keys)
    for title, keys in (
        ("every trial, the path", params.PATH_PARAMS),
        ("every trial, the hosts", params.HOST_PARAMS),
        ("every trial, the topology's size (a dumbbell's)", params.TOPOLOGY_PARAMS),
        ("a netrepro congestion control's parameters (with that cc)", tuple(params.variant_keys().values())),
    ):
        print(f"{title}:")
        show(keys)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from netrepro.front import report

    if not args.results.is_dir():
        raise UserError(f"--results {args.results}: no such directory of stored results")
    checks.writable_page(args.out)
    out, entries = report.write(args.results.resolve(), args.out.resolve())
    print(
        f"wrote {out} and {out.with_name('findings.md').name}: {len(entries)} figures with a stored result "
        f"under {args.results}"
    )
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Every figure: its trials and estimated time (full and quick), its stored result, its title."""
    figures = expts.all_figures()
    width = max(len(f.full_name) for f in figures)
    print(
        f"{'figure':<{width}} {'trials':>11} {'time full / quick':>20}  {'stored result':<32} "
        f"{'claims':>6} {'the stored trials decide':<34} title"
    )
    asked = admission.parse_jobs(args.jobs) if args.jobs is not None else 1
    for fig in figures:
        full, quick = Plan.of(fig), Plan.of(fig, quick=True)
        if args.jobs is not None:
            full, quick = (_with_jobs(plan, asked, RESULTS) for plan in (full, quick))
        stored = full.stored
        kept = f"{stored.rows}{' quick' if stored.quick else ''} trials, {stored.commit}" if stored else "none"
        if stored and _stale(fig):
            kept += ", STALE"
        decide = stored.to_decide() if stored else "-"
        print(
            f"{fig.full_name:<{width}} {f'{full.trials} / {quick.trials}':>11} "
            f"{f'{full.time()} / {quick.time()}':>20}  {kept:<32} {len(fig.claims):>6} {decide:<34} "
            f"{fig.heading}"
        )
    print(
        "time: estimated from the stored result (results/reference/); <=: an upper bound; "
        ">=: none stored, the trials' declared durations; ?: neither"
    )
    print("STALE: the rows its stored verdict read have changed since; `FIGURE --plot-only` judges it again")
    if args.jobs is not None:
        print(f"--jobs {args.jobs}: the time with that many labs side by side (auto: as each figure's cost admits)")
    print("claims: the source's sentences each figure tests; `FIGURE --dry-run` lists them and the trials each needs")
    return 0


def _stale(fig: Figure) -> list[str]:
    """The inputs of the figure's stored verdict (results/reference) whose rows changed since it was judged."""
    path = fig.manifest_in(REFERENCE)
    try:
        return evidence.stale(fig, read_manifest(path).doc, REFERENCE)
    except ManifestUnreadable:
        return []


def writable_out(out: Path, fig: Figure, option: str = "--out") -> Path:
    """--out resolved, its figure's directory made and shown writable (a probe file made and removed).

    Refused as a UserError naming `option`; an existing CSV is not touched.  A directory inside
    the git checkout but not under its results/ is refused before anything is made: git would
    count the run's own files as uncommitted code, and every row would name its commit `+dirty`.
    """
    out = out.resolve()
    if results.in_the_code(out):
        repo = results.REPO.resolve()
        raise UserError(
            f"{option} {out}: inside the checkout {repo} but not under its results/; the run's own files "
            "would count as uncommitted code and mark every row's commit +dirty; give a directory "
            f"under {repo / 'results'} or outside the checkout"
        )
    study_dir = out / fig.study  # a derived figure's own directory is made once the run begins
    probe = study_dir / f".netrepro-write-probe.{os.getpid()}"
    try:
        study_dir.mkdir(parents=True, exist_ok=True)
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        probe.unlink()
    except OSError as e:
        raise UserError(
            f"{option} {out}: cannot write results there ({e.strerror or e}); give a writable directory"
        ) from None
    return out


def cmd_run(args: argparse.Namespace) -> int:
    # a study file: each of its figures, in order
    toml = args.figure.endswith(".toml")
    declared = studyfile.load(Path(args.figure)) if toml else [expts.find(args.figure)]
    if args.trials is not None and not 1 <= args.trials <= 1000:
        raise QuantityError("--trials", args.trials, "allowed range is 1 to 1000")
    elsewhere = [n for n, v in (("--hosts", args.hosts), ("--scheduler", args.scheduler)) if v]
    if args.jobs is not None and elsewhere:
        raise UserError(
            f"--jobs {args.jobs} and {elsewhere[0]}: --jobs runs labs side by side on this machine, "
            f"{elsewhere[0]} on other machines; give one"
        )
    engine = Engine.parse(
        args.hosts,
        args.scheduler,
        args.ssh_config,
        args.allow_mixed,
        tls_ca_file=args.tls_ca_file,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        insecure=args.insecure,
    )
    topo = parse_topology(args) if args.topo != "path" or args.link else None
    figures = [derive.derived_figure(fig, args, topo) for fig in declared]
    shard = Shard.parse(args.shard) if args.shard else None  # K/N, with --dry-run too
    for fig in figures:
        for setting in fig.grid(args.quick):  # refuse a bad value before anything is built
            trial_path(setting)
            trial_topology(setting, fig.topology)
        drawn = plot.drawn_text_problem(fig)  # matplotlib parses a title's $...$ only when it draws
        if drawn:
            raise UserError(f"{fig.full_name}: {drawn}")
    asked = admission.parse_jobs(args.jobs) if args.jobs is not None else 1
    until = until_decided(args, figures)
    if args.dry_run:
        for fig in figures:
            plan = Plan.of(fig, args.quick, trials=args.trials)
            print("\n".join((_with_jobs(plan, asked, args.out.resolve()) if args.jobs else plan).describe()))
            if shard is not None:
                print(_shard_line(fig, args, shard))
            if until is not None:
                print(_until_line(fig, args, until))
        return 0
    for fig in figures:  # the CSV a resumed run or --plot-only reads
        if args.plot_only or not args.fresh:
            checks.readable_csv(args.out.resolve() / fig.directory / fig.csv_name, "")
    outcomes = []
    for fig in figures:
        if args.jobs is not None:
            jobs = _with_jobs(Plan.of(fig, args.quick, trials=args.trials), asked, args.out.resolve())
            if jobs.jobs_why:
                print(f"{fig.full_name}: --jobs {args.jobs}: {jobs.jobs_why}", flush=True)
            engine = Engine.parse(None, None, allow_mixed=args.allow_mixed, jobs=jobs.jobs)
        outcomes.append(_run_one(fig, args, engine))
    if args.plot_only:
        # A redraw runs no trial: the failed rows it drew are the run's that made them, which said so
        # in its own exit status; its line above names the command that runs them again.
        return 0
    return finished("run", outcomes, f"`{again_command(getattr(args, 'typed', [args.figure]))}` runs them again")


def again_command(typed: Sequence[str]) -> str:
    """The command that runs a run's trials not ok again: the one typed, resuming (without --fresh)
    and running the failed trials (without --no-retry-failed or --plot-only; also as abbreviated)."""
    kept = [a for a in typed if not (a.startswith("--") and len(a) > 2 and any(f.startswith(a) for f in _NOT_AGAIN))]
    return shlex.join(["sudo", "./run.sh", *(["--vm"] if os.environ.get(VM_ACCEL_ENV) else []), *kept])


def finished(command: str, outcomes: Sequence[sweep.Outcome], again: str) -> int:
    """The exit status of a command that ran or merged figures: 0 when every trial of each is ok, else
    TRIALS_NOT_OK, with one line on stderr that counts the trials not ok by figure and says `again`."""
    line = not_ok_line(outcomes)
    if line is None:
        return 0
    print(f"run.sh {command}: {line}; {again} (exit {TRIALS_NOT_OK})", file=sys.stderr, flush=True)
    return TRIALS_NOT_OK


def not_ok_line(outcomes: Sequence[sweep.Outcome]) -> str | None:
    """How many trials are not ok, in which figures: e.g. `3 trials not ok, 3 failed (iw/fig2: 3 failed of 12)`."""
    bad = [o for o in outcomes if o.not_ok]
    if not bad:
        return None

    def counted(failed: int, missing: int) -> str:
        return " and ".join(
            w for w in (f"{failed} failed" if failed else "", f"{missing} not run" if missing else "") if w
        )

    failed, missing = sum(o.failed for o in bad), sum(o.missing for o in bad)
    noun = "trial" if failed + missing == 1 else "trials"
    each = "; ".join(f"{o.figure}: {counted(o.failed, o.missing)} of {o.trials}" for o in bad)
    return f"{failed + missing} {noun} not ok, {counted(failed, missing)} ({each})"


def _with_jobs(plan: Plan, asked: int | None, out: Path) -> Plan:
    """The plan with the labs --jobs asks for (None: auto, admitted by the figure's measured cost)."""
    if asked is not None:
        return dataclasses.replace(plan, jobs=asked)
    fast = admission.exclusive(plan.fig, plan.quick).fast
    admitted = admission.admit(admission.measured_cost(plan.fig, out), plan.trials, fast=fast)
    return dataclasses.replace(plan, jobs=admitted.jobs, jobs_why=admitted.why)


def _shard_line(fig: Figure, args: argparse.Namespace, shard: Shard) -> str:
    """What --dry-run says of --shard: how many of the figure's trials, on how many path settings, are its."""
    grid, trials = fig.grid(args.quick), fig.trial_count(args.quick, args.trials)
    mine = shards.keys_of(grid, trials, shard)
    settings = {shards.setting(p) for p in grid}
    own = {shards.setting(p) for p in grid for i in range(trials) if trial_key(p, i) in mine}
    whole = "the counts and the estimate above are the whole figure's"
    return (
        f"  --shard {shard}: {len(mine)} of the {len(grid) * trials} trials are this shard's, on {len(own)} "
        f"of the {len(settings)} path settings ({whole})"
    )


def _until_line(fig: Figure, args: argparse.Namespace, until: UntilDecided) -> str:
    """What --dry-run says of --until-decided: the looks it may take, and each one's confidence."""
    plan = until.plan(fig.full_name, fig.trial_count(args.quick, args.trials))
    design = plan.design
    each = ", ".join(f"{design.confidence_at(k):.4%}" for k in range(1, design.looks + 1))
    return (
        f"  --until-decided {until.trials}: up to {design.looks} looks, {plan.batch} trials more a look for the "
        f"settings of undecided claims, up to {plan.budget} a setting (up to {plan.budget - plan.declared} more "
        f"each); the looks' confidences {each}"
    )


def _run_one(fig: Figure, args: argparse.Namespace, engine: Engine | None) -> sweep.Outcome:
    """The figure's run, then the judgement again of each figure that reads its rows; what its run left."""
    opts = sweep.Options(
        out=writable_out(args.out, fig),
        trials=args.trials,
        quick=args.quick,
        seed=args.seed,
        strict=args.strict,
        fresh=args.fresh,
        retry_failed=args.retry_failed,
        plot_only=args.plot_only,
        shaper=args.shaper,
        switch=args.switch,
        cc_impl=args.impl,
        shard=Shard.parse(args.shard) if args.shard else None,
        engine=engine,
        until=until_decided(args, [fig]),
        declaration=expts.declaration,
    )
    outcome = sweep.run_figure(fig, opts)
    if fig.variant or opts.shard is not None:
        return outcome
    # a figure whose claims read this one's rows is judged again on them (evidence: its inputs changed);
    # a redraw of rows this run did not make, which does not count in its exit status
    for other in evidence.readers(fig, expts.all_figures()):
        if (opts.out / other.directory / other.csv_name).is_file():
            print(f"{other.full_name} reads {fig.full_name}'s rows: judged again (--plot-only)", flush=True)
            # its own looks, if its manifest records any, not this run's --until-decided
            sweep.run_figure(other, dataclasses.replace(opts, plot_only=True, engine=None, until=None))
    return outcome


def cmd_merge(args: argparse.Namespace) -> int:
    """One figure's CSVs as its one CSV under --into, then its figure, manifest and table (--plot-only).

    Exits TRIALS_NOT_OK when the merged figure has trials failed or missing: a merge is the step that
    completes a sharded run, and the only one that sees all of its trials (a shard's machine may be gone)."""
    for csv_path in args.csvs:
        checks.readable_csv(csv_path, "merge: ")
    name = shards.figure_of(args.csvs)
    if "@" in name:
        raise UserError(
            f"merge: {name} is a derived figure: merge into a directory by hand and draw it with "
            "`run.sh <figure> <its --set/--vary/--series> --plot-only --out DIR`"
        )
    fig = expts.find(name)
    into = writable_out(args.into, fig, "--into")
    target = into / fig.directory / fig.csv_name
    # Locked before the CSVs are read: no run of the figure writes the merged CSV meanwhile (ground.figurelock)
    with figurelock.holding(target, tree=into):
        if target.exists() and not any(c.resolve() == target.resolve() for c in args.csvs):
            raise UserError(f"merge: {target} exists and is not among the CSVs: give it too, or another --into")
        rows = shards.merge_files(args.csvs, args.allow_mixed)
        seed = shards.merged_seed(rows)
        keys = {r.key for r in rows}
        quick = args.quick or _rows_are_quick(fig, keys)
        trials.write_rows(rows, target)
        results.hand_back(target, into)
        _copy_series(args.csvs, target, into)
        print(f"merge: {len(rows)} rows of {fig.full_name} ({len(keys)} trials, seed {seed}) into {target}", flush=True)
        outcome = sweep.run_figure(
            fig,
            sweep.Options(out=into, quick=quick, plot_only=True, merged=True, seed=seed, declaration=expts.declaration),
            locked=True,
        )
    again = "each shard's own command (its --shard K/N) runs its trials again, then merge them again"
    return finished("merge", [outcome], again)


def _copy_series(csvs: Sequence[Path], target: Path, into: Path) -> None:
    """The time series the merged rows name (ground.series), from beside each CSV to beside the merged one."""
    from ground import series

    for csv_path in csvs:
        for row in trials.read_rows(csv_path):
            name = row.text(series.FILE_COLUMN)
            if not name:
                continue
            source, dest = csv_path.parent / name, target.parent / name
            if not source.is_file():
                log.warning("merge: %s names the time series %s, which is not beside it: not copied", csv_path, name)
            elif source.resolve() != dest.resolve():
                results.replace_file(dest, source.read_bytes())
                results.hand_back(dest, into)


def cmd_plot(args: argparse.Namespace) -> int:
    """A trial's time series (ground.series): with no --trial, the figure's trials that have one, numbered;
    with --trial N, that trial's flows over time drawn beside its stored series (PNG and SVG)."""
    from ground import series
    from netrepro.studykit import trial_plot

    if args.figure.endswith(".csv"):  # a figure's CSV: a study file's, a merged one, one anywhere
        csv_path = Path(args.figure)
        name, folder, tree = csv_path.stem, csv_path.parent, csv_path.parent
    else:
        base, _, variant = args.figure.partition("@")
        fig = expts.find(base)
        folder = args.results / (f"{fig.study}/{fig.name}@{variant}" if variant else fig.directory)
        name, csv_path, tree = fig.full_name + (f"@{variant}" if variant else ""), folder / fig.csv_name, args.results
    checks.readable_csv(csv_path, "plot: ")
    if not csv_path.is_file():
        raise UserError(f"plot: {csv_path}: no such file: no rows of {name} there")
    rows = [r for r in trials.latest_rows(trials.read_rows(csv_path)) if r.text(series.FILE_COLUMN)]
    if not rows:
        storing = ", ".join(w.name for w in WORKLOADS.values() if w.time_series)
        raise UserError(f"plot: {csv_path} holds no trial with a time series (the workloads that store one: {storing})")
    if args.trial is None:
        print(f"{name}: {len(rows)} trials with a time series ({csv_path}); draw one with --trial N")
        for n, row in enumerate(rows, 1):
            setting = json.loads(row.key)["params"]
            shown = ", ".join(f"{k}={v}" for k, v in setting.items())
            print(f"  {n:>3}  trial {'?' if row.trial is None else row.trial}, {row.status}: {shown}")
        return 0
    if not 1 <= args.trial <= len(rows):
        raise UserError(f"plot: --trial {args.trial}: {name} has trials 1 to {len(rows)} with a series")
    row = rows[args.trial - 1]
    stored = folder / row.text(series.FILE_COLUMN)
    if not stored.is_file():
        raise UserError(f"plot: {stored}: the row names this series file, and it is not there")
    path = trial_path(json.loads(row.key)["params"])
    title = f"{name}, trial {args.trial} of {len(rows)}: {row.cc} {path}".replace("  ", " ")
    values = series.read(stored)
    written = trial_plot.draw(values, stored.with_suffix(".png"), title, base_rtt_ms=path.rtt.ms)
    for w in written:
        results.hand_back(w, tree)
    print(f"plot: wrote {written[0]} ({len(values.flows())} flows)")
    return 0


def _rows_are_quick(fig: Figure, keys: set[str]) -> bool:
    """Whether the trial keys are the quick grid's: all of it (a quick grid is often a part of the
    full one), or only trials the full grid does not have."""

    def grid_keys(quick: bool) -> set[str]:
        return {trial_key(p, i) for p in fig.grid(quick) for i in range(fig.trial_count(quick))}

    quick = grid_keys(True)
    return keys == quick or (keys <= quick and not keys <= grid_keys(False))
