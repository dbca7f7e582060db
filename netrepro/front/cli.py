"""The command line behind run.sh: its parser, and one function per command.

A figure's run (`run.sh iw/fig2 ...`) is parsed here and handed to the
sweep (netrepro/runner/sweep.py); how --set, --vary and --series change a figure
is netrepro/runner/derive.py; `--vm` hands the whole command to netrepro/lanes/vm.py.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import logging
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

import expts
from ground import figurelock, kernel, ledger, logs, results
from ground.errors import NetreproError, UserError
from ground.ledger import Ledger
from ground.path import PathSpec
from ground.results import REPO, RESULTS
from ground.trials import trial_key
from ground.units import QuantityError
from kmod import loader
from netrepro import __version__
from netrepro.engine.cluster import Engine
from netrepro.front import checks, studyfile
from netrepro.lanes import doctor
from netrepro.runner import derive, preflight, shards, sweep, verify
from netrepro.runner.plan import Plan
from netrepro.runner.shards import Shard
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit import params, plot
from netrepro.studykit.spec import Figure, trial_path
from topologies import topology
from topologies.lab import Lab

log = logging.getLogger("netrepro")

IMPL_HELP = "kernel (the kernel's own), lkm (a module) or bpf (netrepro's BPF program); default: the loader's choice"


def path_options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("path")
    for key in params.PATH_PARAMS:  # each declared once (netrepro.studykit.params), with its default
        form = key.form[1] if key.form else f"{key.low:g} to {key.high:g}"
        default = f" (default {key.default})" if key.default is not None else ""
        g.add_argument(key.option, default=key.default, help=f"{key.help}: {form}{default}".replace("%", "%%"))
    g.add_argument("--shaper", default="auto", choices=["auto", "netem", "delayline"])
    g.add_argument("--seed", type=int, default=1, help="seed of the emulated loss")
    g.add_argument(
        "--cc", default="cubic", help="congestion control of both hosts (the kernel's, a netrepro variant or port)"
    )
    g.add_argument("--cc-param", action="append", default=[], metavar="KEY=VALUE", help="a variant's parameter")
    g.add_argument("--impl", choices=loader.IMPLS, default=None, help=IMPL_HELP)
    return p


def topology_options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group(
        "topology (topologies/topology.py; the path options are every pair's and the bottleneck's)"
    )
    g.add_argument("--topo", default="path", help=f"the shape: {', '.join(topology.SHAPES)} (default path)")
    g.add_argument("--pairs", type=int, default=None, help="dumbbell: client/server pairs (client1..N, server1..N)")
    g.add_argument("--rtts", default=None, metavar="RTT1,RTT2,...", help="dumbbell: each pair's RTT, e.g. 40ms,120ms")
    g.add_argument("--routers", type=int, default=None, help="chain: routers r1..rK (default 2)")
    g.add_argument(
        "--cross",
        action="store_true",
        help="cross-traffic hosts xsender (at the server's router) and " "xreceiver (at the client's)",
    )
    g.add_argument(
        "--switch",
        default="auto",
        help="ovs, bridge or auto (Open vSwitch where the kernel has its "
        "datapath and the shaper is netem; else the Linux bridge)",
    )
    g.add_argument(
        "--link",
        action="append",
        default=[],
        metavar="A-B:KEY=VALUE,...",
        help="refine a link (A>B: one direction): rate, delay, loss, queue, e.g. r1-r2:rate=11mbit,"
        "delay=250ms,queue=15p",
    )
    return p


def parse_path(args: argparse.Namespace) -> PathSpec:
    given = {name: getattr(args, name) for name in params.PATH_KEYS}
    return PathSpec.parse(**{name: value for name, value in given.items() if value is not None})


def parse_topology(args: argparse.Namespace) -> topology.Topology:
    return topology.Topology.parse(
        args.topo, pairs=args.pairs, rtts=args.rtts, routers=args.routers, cross=args.cross, links=args.link
    )


class _Version(argparse.Action):
    """--version: the release and the checkout's commit (git is asked only when --version is given)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        print(f"netrepro {__version__} (commit {results.code_version()})")
        parser.exit()


# What runs without root: nothing here builds a lab or touches the kernel.
ROOTLESS = ("list", "workloads", "merge", "report")


def needs_root(args: argparse.Namespace) -> bool:
    if args.command in ROOTLESS:
        return False
    return not (args.command == "run" and (args.dry_run or args.plot_only))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run.sh", description="netrepro: reproduce network papers on an emulated path"
    )
    verbose_help = "show every command run, in which host"
    parser.add_argument("-v", "--verbose", action="store_true", help=verbose_help)
    parser.add_argument("--version", action=_Version, nargs=0, help="netrepro's version and the commit it runs from")
    # Also after the command; SUPPRESS, so that a subcommand's default does not undo `run.sh -v <command>`.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=verbose_help)
    sub = parser.add_subparsers(dest="command", required=True)

    d = sub.add_parser("doctor", parents=[common], help="what this kernel and userland offer")
    d.add_argument("--json", action="store_true")

    s = sub.add_parser(
        "shell",
        parents=[common, path_options(), topology_options()],
        help="the lab in Mininet's CLI (--topo: its shape)",
    )
    s.add_argument("--script", type=Path, help="run the Mininet CLI commands in FILE, then tear down")

    c = sub.add_parser(
        "check", parents=[common, path_options(), topology_options()], help="build the lab, measure its paths, compare"
    )
    c.add_argument("--json", action="store_true")

    sub.add_parser("list", parents=[common], help="every figure, as <study>/<figure> with its title")
    rep = sub.add_parser("report", parents=[common], help="one page of every stored figure beside its paper")
    rep.add_argument("--results", type=Path, default=results.REFERENCE, help="the stored results (results/reference)")
    rep.add_argument("--out", type=Path, default=results.RESULTS / "index.html", help="the page (results/index.html)")
    sub.add_parser("workloads", parents=[common], help="what a trial can run: keys, types, allowed values, metrics")

    r = sub.add_parser("run", parents=[common, topology_options()], help="run a figure (also: `run.sh <figure>`)")
    r.add_argument("figure", help="a figure (fig2 or iw/fig2), or a study file (my-study.toml: each of its figures)")
    r.add_argument("--trials", type=int, default=None, help="trials per setting (default: the figure's)")
    r.add_argument("--quick", action="store_true", help="a reduced grid and trial count that shows the shape")
    derived = "; a derived figure, written to <study>/<figure>@<what differs>/"
    r.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a fixed parameter's value" + derived
    )
    r.add_argument("--vary", metavar="KEY=V1,V2,...", help="the x axis: these levels of KEY" + derived)
    r.add_argument("--series", metavar="KEY=V1,V2,...", help="one series per value of KEY" + derived)
    r.add_argument(
        "--out",
        type=Path,
        default=RESULTS,
        help="results directory (default: results/; the project's reference reproduction is results/reference/)",
    )
    r.add_argument(
        "--seed", type=int, default=1, help="seed of the trial order and of each trial's draw (loss seed, start phase)"
    )
    r.add_argument("--strict", action="store_true", help="stop when a path is measured outside tolerance")
    again = r.add_mutually_exclusive_group()
    again.add_argument(
        "--fresh",
        action="store_true",
        help="start over instead of resuming; the old CSV is kept as <name>.csv.<time>.bak once the first row comes",
    )
    again.add_argument("--plot-only", action="store_true", help="redraw figure, manifest and table from the CSV")
    again.add_argument(
        "--dry-run",
        action="store_true",
        help="print the grid, the trial count and an estimate of the time; run nothing",
    )
    r.add_argument(
        "--no-retry-failed",
        dest="retry_failed",
        action="store_false",
        help="resume past failed and timed-out trials instead of running them again",
    )
    r.add_argument("--shaper", default="auto", choices=["auto", "netem", "delayline"])
    r.add_argument("--impl", choices=loader.IMPLS, default=None, help=IMPL_HELP)
    r.add_argument(
        "--shard", metavar="K/N", default=None, help="run only the K-th of N parts of the trials (whole path settings)"
    )
    dask = r.add_argument_group("a cluster (Dask): one lab per worker, this process writes the CSV")
    dask.add_argument(
        "--hosts",
        metavar="[USER@]VM,...",
        default=None,
        help="start one: Dask's SSH launcher, the scheduler on the first VM, a worker on each, as root; "
        "TLS with certificates made for the run, each process bound to its VM's address",
    )
    dask.add_argument(
        "--scheduler",
        metavar="tls://HOST:PORT",
        default=None,
        help="use a running one, whose workers offer the resource lab=1 (tcp:// only to loopback, or --insecure)",
    )
    dask.add_argument("--tls-ca-file", type=Path, default=None, metavar="FILE", help="--scheduler: the cluster's CA")
    dask.add_argument(
        "--tls-cert", type=Path, default=None, metavar="FILE", help="--scheduler: this client's certificate"
    )
    dask.add_argument(
        "--tls-key", type=Path, default=None, metavar="FILE", help="--scheduler: its key (if not in --tls-cert)"
    )
    dask.add_argument(
        "--insecure",
        action="store_true",
        help="--scheduler tcp:// to a host not on loopback: no encryption, no authentication (trusted networks only)",
    )
    dask.add_argument(
        "--ssh-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="--hosts: an OpenSSH config (Port, User, IdentityFile, UserKnownHostsFile)",
    )
    dask.add_argument("--allow-mixed", action="store_true", help="accept workers of several kernels or backends")

    m = sub.add_parser("merge", parents=[common], help="join one figure's CSVs (e.g. its shards'), then draw it")
    m.add_argument("csvs", nargs="+", type=Path, metavar="CSV", help="the CSVs, each of the same figure")
    m.add_argument("--into", type=Path, required=True, help="results directory to write the figure into")
    m.add_argument("--quick", action="store_true", help="the shards ran --quick (found from the rows if not given)")
    m.add_argument("--allow-mixed", action="store_true", help="merge rows of several kernels or backends")

    k = sub.add_parser("cc", parents=[common], help="congestion-control variants and ports: list, load, set, unload")
    k.add_argument("action", choices=["list", "load", "set", "unload"])
    k.add_argument("name", nargs="?", help=f"one of {', '.join(loader.ALGORITHMS)}")
    k.add_argument("params", nargs="*", metavar="KEY=VALUE", help="parameters, e.g. n=6 beta=717")
    k.add_argument("--impl", choices=loader.IMPLS, default=None, help=IMPL_HELP)

    sub.add_parser("clean", parents=[common], help="undo what interrupted runs left behind (from their ledgers)")

    b = sub.add_parser("bench", parents=[common], help="benchmarks that report numbers (not tests)")
    b.add_argument("which", choices=["cluster", "delayline", "delayline-links", "ports", "runner", "soak"])
    b.add_argument("--figure", default="iw/fig5b", help="cluster: the figure")
    b.add_argument("--quick", action="store_true", help="cluster: the figure's quick grid")
    b.add_argument("--rtt", default=None, help="delayline: 20ms; ports: 100ms")
    b.add_argument("--rate", default="10mbit", help="ports: the bottleneck's rate")
    b.add_argument("--runs", type=int, default=5, help="ports: flows per implementation and path")
    b.add_argument("--seconds", type=int, default=20, help="ports: each flow's length")
    b.add_argument("--algorithms", default=",".join(loader.PORTS), help="ports: which, comma-separated")
    b.add_argument(
        "--paths",
        default="random,droptail",
        help="ports: which paths, comma-separated (random: 1 %% loss, 100p; droptail: 20p; droptail100: 100p)",
    )
    b.add_argument("--control", action="store_true", help="ports: each module against itself, for the noise floor")
    b.add_argument("--out", type=Path, default=None)
    b.add_argument("--kills", type=int, default=100, help="soak: SIGKILLed runs (then SIGINT, SIGTERM, SIGHUP)")
    b.add_argument("--seed", type=int, default=1, help="soak: seed of the kill moments")
    b.add_argument(
        "--cluster",
        action="store_true",
        help="soak: each run with --hosts root@127.0.0.1, through an sshd of the soak's own on a loopback port",
    )

    t = sub.add_parser(
        "test", parents=[common], help="the whole test suite (lint, types, layers, unit and root integration tests)"
    )
    t.add_argument("pytest_args", nargs=argparse.REMAINDER)
    return parser


# -- commands -------------------------------------------------------------------


def cmd_doctor(args: argparse.Namespace) -> int:
    doc = doctor.report()
    print(json.dumps(doc, indent=2) if args.json else doctor.render(doc))
    return 0


def _cc_values(args: argparse.Namespace) -> dict[str, int]:
    """--cc-param checked against --cc's variant (input, refused before anything is built)."""
    if args.cc in loader.ALGORITHMS:
        return loader.parse_params(loader.ALGORITHMS[args.cc], dict(_pairs("--cc-param", args.cc_param)))
    if args.cc_param:
        raise QuantityError("--cc-param", " ".join(args.cc_param), f"{args.cc} has no netrepro parameters")
    return {}


def _lab(
    args: argparse.Namespace, path: PathSpec, topo: topology.Topology, run_ledger: Ledger, values: dict[str, int]
) -> Lab:
    """The lab of `shell` and `check`, with the variant or port of --cc loaded and tuned first (the
    kernel's own, e.g. bbr, its module loaded where it is not)."""
    cc = args.cc
    if args.cc in loader.ALGORITHMS:
        algorithm = loader.load(args.cc, run_ledger, args.impl)
        cc = algorithm.registered
        print(
            f"*** {args.cc} ({algorithm.impl}, as {cc}): "
            f"{json.dumps(algorithm.set(**values) if values else algorithm.read())}"
        )
    else:
        loader.load_kernel_own(cc, run_ledger)
    return Lab(path, run_ledger, shaper=args.shaper, seed=args.seed, cc=cc, topology=topo, switch=args.switch)


def _describe(lab: Lab) -> str:
    """What the user has: the path, the shape, each host's address, each pair's round trip."""
    hosts = ", ".join(f"{n.name} ({lab.ip(n.name)})" for n in lab.network.nodes if n.kind == topology.HOST)
    pairs = "".join(f"\n*** {p.client} <- {p.server}: {lab.network.view(p)}" for p in lab.pairs)
    switch = f", switches: {lab.switch_kind}" if lab.switch_kind != "none" else ""
    return f"*** {lab.network.shape} via {lab.backend}{switch}; hosts {hosts}{pairs}"


def cmd_shell(args: argparse.Namespace) -> int:
    from mininet.cli import CLI
    from mininet.log import setLogLevel

    path, topo = parse_path(args), parse_topology(args)
    if args.script is not None and not args.script.is_file():
        raise QuantityError("--script", str(args.script), "no such file")
    values = _cc_values(args)
    preflight.preflight(preflight.lab_needs("shell", args.cc, args.shaper, args.impl))
    with Ledger() as run_ledger, _lab(args, path, topo, run_ledger, values) as lab:
        setLogLevel("output")
        print(_describe(lab))
        if args.script is not None:
            # Mininet's CLI polls its stdin while a node's command runs (waitForNode): one at end of
            # file (/dev/null, a closed terminal) is always readable, and the poll spins a whole core.
            # A pipe that stays open and empty never is: the poll waits for the node's output only.
            read_end, write_end = os.pipe()
            try:
                with open(read_end, encoding="utf-8") as nothing:
                    CLI(lab.net, stdin=nothing, script=str(args.script))
            finally:
                os.close(write_end)
        else:
            CLI(lab.net)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    path, topo = parse_path(args), parse_topology(args)
    values = _cc_values(args)
    preflight.preflight(preflight.lab_needs("check", args.cc, args.shaper, args.impl))
    with Ledger() as run_ledger, _lab(args, path, topo, run_ledger, values) as lab:
        print(_describe(lab).replace("***", "checking", 1) + " ...", file=sys.stderr)
        result = verify.verify(lab)
    if args.json:
        doc = {
            "path": path.describe(),
            "network": lab.network.describe(),
            "backend": lab.backend,
            "switch": lab.switch_kind,
        }
        print(json.dumps({**doc, **result.as_dict()}, indent=2))
    else:
        for c in result.checks:
            print(c.line())
        print(f"{'all within tolerance' if result.ok else 'OUT OF TOLERANCE'} ({result.seconds:.1f} s)")
    # check exists to answer "is the path what was asked for": no is exit 1.
    return 0 if result.ok else 1


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
    for fig in expts.all_figures():
        full, quick = Plan.of(fig), Plan.of(fig, quick=True)
        stored = full.stored
        kept = f"{stored.rows}{' quick' if stored.quick else ''} trials, {stored.commit}" if stored else "none"
        decide = stored.to_decide() if stored else "-"
        print(
            f"{fig.full_name:<16} {f'{full.trials} / {quick.trials}':>11} "
            f"{f'{full.time()} / {quick.time()}':>19}  {kept:<32} {len(fig.claims):>6} {decide:<34} "
            f"{fig.heading}"
        )
    print("time: estimated from the stored result (results/reference/); <=: an upper bound; ?: none stored")
    print("claims: the source's sentences each figure tests; `FIGURE --dry-run` lists them and the trials each needs")
    return 0


def writable_out(out: Path, fig: Figure) -> Path:
    """--out resolved, its figure's directory made and shown writable (a probe file made and removed).

    Refused as a UserError naming --out; an existing CSV is not touched.
    """
    out = out.resolve()
    study_dir = out / fig.study  # a derived figure's own directory is made once the run begins
    probe = study_dir / f".netrepro-write-probe.{os.getpid()}"
    try:
        study_dir.mkdir(parents=True, exist_ok=True)
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        probe.unlink()
    except OSError as e:
        raise UserError(
            f"--out {out}: cannot write results there ({e.strerror or e}); give a writable directory"
        ) from None
    return out


def cmd_run(args: argparse.Namespace) -> int:
    # a study file: each of its figures, in order
    toml = args.figure.endswith(".toml")
    declared = studyfile.load(Path(args.figure)) if toml else [expts.find(args.figure)]
    if args.trials is not None and not 1 <= args.trials <= 1000:
        raise QuantityError("--trials", args.trials, "allowed range is 1 to 1000")
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
    if args.dry_run:
        for fig in figures:
            print("\n".join(Plan.of(fig, args.quick, trials=args.trials).describe()))
            if shard is not None:
                print(_shard_line(fig, args, shard))
        return 0
    for fig in figures:  # the CSV a resumed run or --plot-only reads
        if args.plot_only or not args.fresh:
            checks.readable_csv(args.out.resolve() / fig.directory / fig.csv_name, "")
    for fig in figures:
        _run_one(fig, args, engine)
    return 0


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
    into = writable_out(args.into, fig)
    target = into / fig.directory / fig.csv_name
    # Locked before the CSVs are read: no run of the figure writes the merged CSV meanwhile (ground.figurelock)
    with figurelock.holding(target, tree=into):
        if target.exists() and not any(c.resolve() == target.resolve() for c in args.csvs):
            raise UserError(f"merge: {target} exists and is not among the CSVs: give it too, or another --into")
        rows = shards.merge_files(args.csvs, args.allow_mixed)
        seed = shards.merged_seed(rows)
        keys = {r["trial_key"] for r in rows}
        quick = args.quick or _rows_are_quick(fig, keys)
        shards.write_rows(rows, target)
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


def _pairs(option: str, pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise QuantityError(option, pair, "give KEY=VALUE")
        out[key] = value
    return out


def cmd_cc(args: argparse.Namespace) -> int:
    if args.action == "list":
        available, allowed = kernel.congestion_controls()
        for v in loader.ALGORITHMS.values():
            params = ", ".join(f"{p.name} {p.low}..{p.high} (default {p.default}, {p.unit})" for p in v.params)
            state = "registered" if v.name in available else "not loaded"
            kind = "port" if v.port else "variant"
            print(f"{v.name:<11} {kind:<8} {state:<11} {params or '(no parameters)'}")
        print(f"kernel: available {' '.join(available)}; allowed in namespaces {' '.join(allowed)}")
        return 0
    if args.name not in loader.ALGORITHMS:
        given = f"{args.name!r} is not a netrepro variant or port: " if args.name else ""
        raise loader.CongestionControlInputError(f"{given}name one of {', '.join(loader.ALGORITHMS)}")
    variant = loader.ALGORITHMS[args.name]
    values = loader.parse_params(variant, dict(_pairs("cc", args.params)))
    if args.action == "load":
        # Not unwound here: `cc unload` or `clean` ends the algorithm's stay.
        held = Ledger(purpose=f"cc load {args.name}")
        algorithm = loader.load(args.name, held, args.impl)
        print(json.dumps(algorithm.set(**values) if values else algorithm.read()))
        print(
            f"{args.name} loaded as {algorithm.impl} (sockets use {algorithm.registered}); "
            f"`run.sh cc unload {args.name}` (or `run.sh clean`) removes it"
        )
        return 0
    if args.action == "set":
        print(json.dumps(loader.attach(args.name).set(**values)))
        return 0
    # Only what `cc load` left: other dead runs' ledgers are for `clean`.
    lines = ledger.clean(only=ledger.with_purpose(f"cc load {args.name}"))
    print("\n".join(lines) if lines else f"no ledger holds {args.name}; nothing unloaded")
    return 0 if lines else 1


def cmd_clean(args: argparse.Namespace) -> int:
    lines = ledger.clean() + figurelock.remove_stale()
    print("\n".join(lines) if lines else "nothing to clean")
    return 1 if any("failed" in line for line in lines) else 0


def cmd_bench(args: argparse.Namespace) -> int:
    from netrepro.lanes import bench

    if args.which == "delayline":
        bench.delayline(rtt=args.rtt or "20ms", out=args.out)
    elif args.which == "ports":
        names = tuple(a for a in args.algorithms.split(",") if a)
        for name in names:
            if name not in loader.PORTS:
                raise QuantityError("--algorithms", name, f"the ports are {', '.join(loader.PORTS)}")
        if not 1 <= args.runs <= 100:
            raise QuantityError("--runs", args.runs, "allowed range is 1 to 100")
        if not 2 <= args.seconds <= 600:
            raise QuantityError("--seconds", args.seconds, "allowed range is 2 to 600")
        paths = tuple(p for p in args.paths.split(",") if p)
        unknown = [p for p in paths if p not in bench.PORT_PATH_NAMES]
        if unknown or not paths:
            named = unknown[0] if unknown else args.paths
            raise QuantityError("--paths", named, f"the paths are {', '.join(bench.PORT_PATH_NAMES)}")
        bench.ports(
            names,
            runs=args.runs,
            seconds=args.seconds,
            rate=args.rate,
            rtt=args.rtt or "100ms",
            out=args.out,
            paths=tuple(bench.PORT_PATH_NAMES[p] for p in paths),
            control=args.control,
        )
    elif args.which == "delayline-links":
        bench.delayline_links(out=args.out)
    elif args.which == "cluster":
        expts.find(args.figure)  # a UserError naming it, before anything starts
        bench.cluster(args.figure, quick=args.quick, out=args.out)
    elif args.which == "soak":
        if not 1 <= args.kills <= 10_000:
            raise QuantityError("--kills", args.kills, "allowed range is 1 to 10000")
        return 0 if bench.soak(kills=args.kills, seed=args.seed, out=args.out, cluster=args.cluster) else 1
    else:
        bench.runner(out=args.out)
    return 0


def cmd_test(args: argparse.Namespace) -> int:
    lint = [
        [sys.executable, "-m", "ruff", "check", str(REPO)],
        [sys.executable, "-m", "ruff", "format", "--check", str(REPO)],
        [sys.executable, "-m", "mypy"],
    ]
    layers = Path(sys.executable).with_name("lint-imports")  # the layers of ground/__init__.py
    if layers.exists():
        lint.append([str(layers)])
    else:
        print("(no import-linter: it needs Python 3.11; the layers go unchecked)", flush=True)
    if kernel.guest_info() is not None:
        # The source is the host's, linted there; under software emulation mypy alone takes minutes.
        print("(in the stock-kernel guest: the source was linted on the host; only pytest runs)", flush=True)
        lint = []
    steps = [*lint, [sys.executable, "-m", "pytest", *args.pytest_args]]
    for argv in steps:
        print("+ " + " ".join(argv), flush=True)
        # Not proc.run: the suite's output streams to the terminal as it comes (proc.run captures it),
        # it has no time limit, and Ctrl-C must reach pytest in our own session and group.
        code = _wait_through_ctrl_c(subprocess.Popen(argv, cwd=REPO))
        if code != 0:
            return code
    return 0


def _wait_through_ctrl_c(child: subprocess.Popen[bytes]) -> int:
    """The child's exit status.  Ctrl-C reaches the child too (the terminal signals the whole
    group): it stops and undoes its labs, and is waited for, never killed (as subprocess.run would,
    0.25 s after a KeyboardInterrupt)."""
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


COMMANDS = {
    "cc": cmd_cc,
    "list": cmd_list,
    "report": cmd_report,
    "workloads": cmd_workloads,
    "run": cmd_run,
    "merge": cmd_merge,
    "doctor": cmd_doctor,
    "shell": cmd_shell,
    "check": cmd_check,
    "clean": cmd_clean,
    "bench": cmd_bench,
    "test": cmd_test,
}


def _in_vm(argv: list[str]) -> int:
    """`run.sh --vm <command ...>`: the command inside the distribution's stock kernel (netrepro.lanes.vm)."""
    from netrepro.lanes import vm

    if not argv or argv[0] == "--vm":
        print("run.sh --vm <command ...>: e.g. run.sh --vm check --rtt 50ms --shaper netem", file=sys.stderr)
        return 2
    # A closed terminal ends a --vm run as SIGTERM does: the guest is stopped, the ledger unwound.
    _stop_on_signals()
    try:
        return vm.run_in_vm(argv)
    except UserError as e:
        print(f"run.sh --vm: {e}", file=sys.stderr)
        return 2
    except NetreproError as e:
        print(f"run.sh --vm: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("run.sh --vm: interrupted; the guest was stopped", file=sys.stderr)
        return 130


def _terminate(signum: int, frame: FrameType | None) -> None:
    # SystemExit, not KeyboardInterrupt: Mininet's CLI swallows the latter.
    # Either way every `finally` and `with` unwinds what the run made.
    print(f"run.sh: signal {signum}: stopping, undoing what this run created", file=sys.stderr)
    raise SystemExit(128 + signum)


def _stop_on_signals() -> None:
    """SIGINT stops a run as KeyboardInterrupt, SIGTERM and SIGHUP as SystemExit, whatever this
    process inherited: a shell starts a background job (`./run.sh fig3 &`, `nohup`) with SIGINT or
    SIGHUP ignored, and a run sent one must still stop and undo what it created."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--vm"] or (argv[:1] == ["doctor"] and "--vm" in argv):
        return _in_vm([a for a in argv if a != "--vm"])
    lead = []
    while argv[:1] in (["-v"], ["--verbose"]):
        lead.append(argv.pop(0))
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        argv.insert(0, "run")  # `run.sh fig2` is `run.sh run fig2`
    if argv[:1] == ["test"]:
        # everything after `test` goes to pytest unchanged
        args = build_parser().parse_args([*lead, "test"])
        args.pytest_args = argv[1:]
    else:
        args = build_parser().parse_args([*lead, *argv])
    logs.configure(args.verbose)
    if os.geteuid() != 0 and needs_root(args):
        allowed = ", ".join([*ROOTLESS, "--help", "--version", "run --dry-run", "run --plot-only"])
        print(
            f"run.sh {args.command}: needs root (network namespaces, qdiscs, sysctls, BPF): "
            f"sudo ./run.sh {' '.join(argv)}; without root: {allowed}",
            file=sys.stderr,
        )
        return 1
    _stop_on_signals()
    try:
        return COMMANDS[args.command](args)
    except UserError as e:
        _report(args, e)
        return 2
    except NetreproError as e:
        _report(args, e)
        return 1
    except KeyboardInterrupt:
        print(f"run.sh {args.command}: interrupted; everything it created has been undone", file=sys.stderr)
        return 130
    except BrokenPipeError:  # whoever read the output has gone (`| head`): stop quietly, as a filter does
        _discard_stdout()
        return 128 + signal.SIGPIPE
    except Exception as e:  # anything else is a bug in netrepro, but a full disk
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            named = f" ({e.filename})" if e.filename else ""
            print(
                f"run.sh {args.command}: {e.strerror}{named}: free some space and run the command again",
                file=sys.stderr,
            )
            return 1
        if args.verbose:
            traceback.print_exception(e, file=sys.stderr)
            print(f"run.sh {args.command}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        else:
            print(
                f"run.sh {args.command}: internal error: {type(e).__name__}: {e} (run with -v for the traceback)",
                file=sys.stderr,
            )
        return 1


def _discard_stdout() -> None:
    """Standard output to /dev/null, so that the interpreter's last flush at exit finds no broken pipe."""
    with contextlib.suppress(OSError, ValueError):  # not a file descriptor (a test's captured stdout)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _report(args: argparse.Namespace, e: NetreproError) -> None:
    """The error in one message; a setup error's traceback above it under -v (never a user error's)."""
    if args.verbose and not isinstance(e, UserError):
        traceback.print_exception(e, file=sys.stderr)
    print(f"run.sh {args.command}: {e}", file=sys.stderr)
