"""The commands of figures: `run` (a figure's trials, handed to the sweep; a study file's too),
`merge` (shards' CSVs into one), `list` (every figure with its plan and stored result), `workloads`
(what a trial can run) and `report` (the page of every stored figure).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import expts
from ground import figurelock, results, trials
from ground.errors import UserError
from ground.manifests import ManifestUnreadable, read_manifest
from ground.results import REFERENCE, RESULTS
from ground.trials import trial_key
from ground.units import QuantityError
from netrepro.engine.cluster import Engine
from netrepro.front import checks, studyfile
from netrepro.front.options import parse_topology
from netrepro.runner import admission, derive, shards, sweep
from netrepro.runner.plan import Plan
from netrepro.runner.shards import Shard
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit import evidence, params, plot
from netrepro.studykit.spec import Figure, trial_path

log = logging.getLogger("netrepro")


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
    print(
        f"{'figure':<16} {'trials':>11} {'time full / quick':>19}  {'stored result':<32} "
        f"{'claims':>6} {'the stored trials decide':<34} title"
    )
    asked = admission.parse_jobs(args.jobs) if args.jobs is not None else 1
    for fig in expts.all_figures():
        full, quick = Plan.of(fig), Plan.of(fig, quick=True)
        if args.jobs is not None:
            full, quick = (_with_jobs(plan, asked, RESULTS) for plan in (full, quick))
        stored = full.stored
        kept = f"{stored.rows}{' quick' if stored.quick else ''} trials, {stored.commit}" if stored else "none"
        if stored and _stale(fig):
            kept += ", STALE"
        decide = stored.to_decide() if stored else "-"
        print(
            f"{fig.full_name:<16} {f'{full.trials} / {quick.trials}':>11} "
            f"{f'{full.time()} / {quick.time()}':>19}  {kept:<32} {len(fig.claims):>6} {decide:<34} "
            f"{fig.heading}"
        )
    print("time: estimated from the stored result (results/reference/); <=: an upper bound; ?: none stored")
    print("STALE: the rows its stored verdict read have changed since; `FIGURE --plot-only` judges it again")
    if args.jobs is not None:
        print(f"--jobs {args.jobs}: the time with that many labs side by side (auto: as each figure's cost admits)")
    print("claims: the source's sentences each figure tests; `FIGURE --dry-run` lists them and the trials each needs")
    return 0


def _stale(fig: Figure) -> list[str]:
    """The inputs of the figure's stored verdict (results/reference) whose rows changed since it was judged."""
    path = REFERENCE / fig.directory / f"{fig.name}.manifest.json"
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
        drawn = plot.drawn_text_problem(fig)  # matplotlib parses a title's $...$ only when it draws
        if drawn:
            raise UserError(f"{fig.full_name}: {drawn}")
    asked = admission.parse_jobs(args.jobs) if args.jobs is not None else 1
    if args.dry_run:
        for fig in figures:
            plan = Plan.of(fig, args.quick, trials=args.trials)
            print("\n".join((_with_jobs(plan, asked, args.out.resolve()) if args.jobs else plan).describe()))
            if shard is not None:
                print(_shard_line(fig, args, shard))
        return 0
    for fig in figures:  # the CSV a resumed run or --plot-only reads
        if args.plot_only or not args.fresh:
            checks.readable_csv(args.out.resolve() / fig.directory / fig.csv_name, "")
    for fig in figures:
        if args.jobs is not None:
            jobs = _with_jobs(Plan.of(fig, args.quick, trials=args.trials), asked, args.out.resolve())
            if jobs.jobs_why:
                print(f"{fig.full_name}: --jobs {args.jobs}: {jobs.jobs_why}", flush=True)
            engine = Engine.parse(None, None, allow_mixed=args.allow_mixed, jobs=jobs.jobs)
        _run_one(fig, args, engine)
    return 0


def _with_jobs(plan: Plan, asked: int | None, out: Path) -> Plan:
    """The plan with the labs --jobs asks for (None: auto, admitted by the figure's measured cost)."""
    if asked is not None:
        return dataclasses.replace(plan, jobs=asked)
    admitted = admission.admit(admission.measured_cost(plan.fig, out), plan.trials)
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


def _run_one(fig: Figure, args: argparse.Namespace, engine: Engine | None) -> None:
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
    )
    sweep.run_figure(fig, opts)
    if fig.variant or opts.shard is not None:
        return
    # a figure whose claims read this one's rows is judged again on them (evidence: its inputs changed)
    for other in evidence.readers(fig, expts.all_figures()):
        if (opts.out / other.directory / other.csv_name).is_file():
            print(f"{other.full_name} reads {fig.full_name}'s rows: judged again (--plot-only)", flush=True)
            sweep.run_figure(other, dataclasses.replace(opts, plot_only=True, engine=None))


def cmd_merge(args: argparse.Namespace) -> int:
    """One figure's CSVs as its one CSV under --into, then its figure, manifest and table (--plot-only)."""
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
        keys = {r["trial_key"] for r in rows}
        quick = args.quick or _rows_are_quick(fig, keys)
        trials.write_rows(rows, target)
        results.hand_back(target, into)
        print(f"merge: {len(rows)} rows of {fig.full_name} ({len(keys)} trials, seed {seed}) into {target}", flush=True)
        sweep.run_figure(fig, sweep.Options(out=into, quick=quick, plot_only=True, seed=seed), locked=True)
    return 0


def _rows_are_quick(fig: Figure, keys: set[str]) -> bool:
    """Whether the trial keys are the quick grid's: all of it (a quick grid is often a part of the
    full one), or only trials the full grid does not have."""

    def grid_keys(quick: bool) -> set[str]:
        return {trial_key(p, i) for p in fig.grid(quick) for i in range(fig.trial_count(quick))}

    quick = grid_keys(True)
    return keys == quick or (keys <= quick and not keys <= grid_keys(False))
