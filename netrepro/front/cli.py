"""The command line behind run.sh: its parser, the dispatch to each command, and what it says on error.

Each command is a function of the module of what it works on: a lab and the machine
(netrepro/front/lab_commands.py: shell, check, doctor, cc, clean), figures
(figure_commands.py: run, merge, list, workloads, report) and the project
(project_commands.py: bench, test, docs); the options that shape a lab are options.py.
A figure's run (`run.sh iw/fig2 ...`) is handed to the sweep
(netrepro/runner/sweep.py); how --set, --vary and --series change a figure is
netrepro/runner/derive.py; `--vm` hands the whole command to netrepro/lanes/vm.py.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ground import logs, results
from ground.errors import NetreproError, UserError
from ground.results import RESULTS
from kmod import loader
from netrepro import __version__
from netrepro.front import exits
from netrepro.front.figure_commands import cmd_list, cmd_merge, cmd_plot, cmd_report, cmd_run, cmd_workloads
from netrepro.front.lab_commands import cmd_cc, cmd_check, cmd_clean, cmd_doctor, cmd_shell
from netrepro.front.options import IMPL_HELP, path_options, topology_options
from netrepro.front.project_commands import cmd_bench, cmd_docs, cmd_test
from netrepro.front.reproduce import cmd_reproduce

log = logging.getLogger("netrepro")


class _Version(argparse.Action):
    """--version: the release and the checkout's commit (git is asked only when --version is given)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        print(f"netrepro {__version__} (commit {results.code_version()})")
        parser.exit()


# What runs without root: nothing here builds a lab or touches the kernel.
ROOTLESS = ("list", "workloads", "merge", "report", "docs", "plot")


def needs_root(args: argparse.Namespace) -> bool:
    if args.command in ROOTLESS:
        return False
    return not (args.command in ("run", "reproduce") and (args.dry_run or args.plot_only))


def run_options() -> argparse.ArgumentParser:
    """The options of `run`, which `reproduce` takes too."""
    r = argparse.ArgumentParser(add_help=False)
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
        help="results directory (default: results/; the project's reference reproduction is results/reference/); "
        "inside the checkout only under results/, where the run's own files do not make its code +dirty",
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
    r.add_argument(
        "--until-decided",
        type=int,
        metavar="TRIALS",
        default=None,
        help="after the declared trials, more in batches (as many again each look, up to 5 looks) for the "
        "settings whose claims are still undecided, until each is decided or a setting has TRIALS; each look "
        "judged at the share of the 5%% error its O'Brien-Fleming alpha spending gives it, every look in the "
        "manifest",
    )
    r.add_argument(
        "--until-hours", type=float, metavar="H", default=None, help="--until-decided: begin no batch after H hours"
    )
    r.add_argument("--shaper", default="auto", choices=["auto", "netem", "delayline"])
    r.add_argument("--impl", choices=loader.IMPLS, default=None, help=IMPL_HELP)
    r.add_argument(
        "--shard", metavar="K/N", default=None, help="run only the K-th of N parts of the trials (whole path settings)"
    )
    r.add_argument(
        "--jobs",
        metavar="N|auto",
        default=None,
        help="N labs side by side on this machine (a local Dask cluster, TLS on loopback); auto: as many as "
        "the figure's measured CPU per trial fits in 75%% of the cores",
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
    return r


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

    li = sub.add_parser("list", parents=[common], help="every figure, as <study>/<figure> with its title")
    li.add_argument("--jobs", metavar="N|auto", default=None, help="also the time with N labs side by side (or auto)")
    rep = sub.add_parser("report", parents=[common], help="one page of every stored figure beside its paper")
    rep.add_argument("--results", type=Path, default=results.REFERENCE, help="the stored results (results/reference)")
    rep.add_argument("--out", type=Path, default=results.RESULTS / "index.html", help="the page (results/index.html)")
    sub.add_parser("workloads", parents=[common], help="what a trial can run: keys, types, allowed values, metrics")
    dn = sub.add_parser(
        "docs", parents=[common], help="rewrite the numbers README.md and docs/ state about the stored results"
    )
    dn.add_argument(
        "--check", action="store_true", help="only list the numbers that differ from the rows; exit 1 if any"
    )

    r = sub.add_parser(
        "run", parents=[common, topology_options(), run_options()], help="run a figure (also: `run.sh <figure>`)"
    )
    r.add_argument("figure", help="a figure (fig2 or iw/fig2), or a study file (my-study.toml: each of its figures)")
    rp = sub.add_parser(
        "reproduce",
        parents=[common, topology_options(), run_options()],
        help="every declared figure of a study, or of all, in one run (the same command resumes it)",
    )
    rp.add_argument("study", help="a study (iw, cubicplus, spdy, newcwv, linuxcc, web, bufferbloat) or all")

    pl = sub.add_parser("plot", parents=[common], help="a trial's flows over time: cwnd, RTT, goodput")
    pl.add_argument("figure", help="a figure (iw/fig2; a derived one, cubicplus/fig3@cc=bbr), or a figure's CSV")
    pl.add_argument("--trial", type=int, metavar="N", help="the trial to draw, as the list without it numbers them")
    pl.add_argument("--results", type=Path, default=results.RESULTS, help="the results tree (results/)")
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
    b.add_argument(
        "which",
        choices=["cluster", "delayline", "delayline-links", "jobs", "ports", "reproduce", "runner", "soak", "ssthresh"],
    )
    b.add_argument("--figure", default=None, help="cluster: the figure (iw/fig5b); jobs: one figure only")
    b.add_argument(
        "--quick", action="store_true", help="cluster, reproduce: the figures' quick grids (jobs: always quick)"
    )
    b.add_argument(
        "--studies", default="iw,spdy,web", help="reproduce: the studies whose figures run side by side (iw,spdy,web)"
    )
    b.add_argument("--keep", type=Path, default=None, help="reproduce: the output tree to keep (default: removed)")
    b.add_argument(
        "--summarize",
        type=Path,
        default=None,
        metavar="TREE",
        help="reproduce: run nothing; sum the tree a `reproduce` run made in chunks left (its "
        "reproduce/<studies>/schedule-N.json) into results/bench/reference.json",
    )
    b.add_argument("--labs", default="2,4,8", help="jobs: the labs side by side after the serial runs")
    b.add_argument("--rtt", default=None, help="delayline: 20ms; ports: 100ms; ssthresh: 20ms")
    b.add_argument("--rate", default=None, help="ports: the bottleneck's rate (10mbit); ssthresh: 100mbit")
    b.add_argument("--loss", default=None, help="ssthresh: the path's random loss (10%%)")
    b.add_argument("--runs", type=int, default=None, help="ports: flows per implementation and path (5); ssthresh: 8")
    b.add_argument("--flows", type=int, default=4, help="ssthresh: parallel flows in each run")
    b.add_argument("--seconds", type=int, default=None, help="ports: each flow's length (20); ssthresh: 30")
    b.add_argument(
        "--algorithms",
        default=None,
        help="ports: which, comma-separated (all ports); ssthresh: reno_beta,cubic_plus,reno,cubic "
        "(netrepro's own and the ports load as BPF, any other name is the kernel's own)",
    )
    b.add_argument(
        "--paths",
        default="random,droptail",
        help="ports: which paths, comma-separated (random: 1 %% loss, 100p; droptail: 20p; droptail100: 100p)",
    )
    b.add_argument("--control", action="store_true", help="ports: each module against itself, for the noise floor")
    b.add_argument("--out", type=Path, default=None)
    b.add_argument(
        "--kills",
        type=int,
        default=100,
        help="soak: SIGKILLed runs, each then cleaned and resumed to its end (then SIGINT, SIGTERM, SIGHUP)",
    )
    b.add_argument("--seed", type=int, default=1, help="soak: seed of the kill moments")
    b.add_argument(
        "--cluster",
        action="store_true",
        help="soak: each run with --hosts root@127.0.0.1, through an sshd of the soak's own on a loopback port",
    )
    b.add_argument("--jobs", default=None, metavar="N", help="soak: each run with N labs side by side")
    b.add_argument(
        "--lose-host",
        action="store_true",
        help="soak: N --hosts runs over two loopback hosts (127.0.0.1, 127.0.0.2), the second host's SSH session "
        "killed mid-trial; its trials must finish on the first",
    )

    t = sub.add_parser(
        "test", parents=[common], help="the whole test suite (lint, types, layers, unit and root integration tests)"
    )
    t.add_argument("pytest_args", nargs=argparse.REMAINDER)
    return parser


# -- commands -------------------------------------------------------------------

COMMANDS = {
    "cc": cmd_cc,
    "list": cmd_list,
    "report": cmd_report,
    "workloads": cmd_workloads,
    "run": cmd_run,
    "reproduce": cmd_reproduce,
    "merge": cmd_merge,
    "plot": cmd_plot,
    "doctor": cmd_doctor,
    "shell": cmd_shell,
    "check": cmd_check,
    "clean": cmd_clean,
    "bench": cmd_bench,
    "test": cmd_test,
    "docs": cmd_docs,
}


def _in_vm(argv: list[str]) -> int:
    """`run.sh --vm <command ...>`: the command inside the distribution's stock kernel (netrepro.lanes.vm)."""
    from netrepro.lanes import vm

    if not argv or argv[0] == "--vm":
        print("run.sh --vm <command ...>: e.g. run.sh --vm check --rtt 50ms --shaper netem", file=sys.stderr)
        return 2
    # A closed terminal ends a --vm run as SIGTERM does: the guest is stopped, the ledger unwound.
    exits.stop_on_signals()
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


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--vm"] or (argv[:1] == ["doctor"] and "--vm" in argv):
        return _in_vm([a for a in argv if a != "--vm"])
    typed = list(argv)  # as given: a run with trials not ok names it again (figure_commands.again_command)
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
    args.typed = typed
    logs.configure(args.verbose)
    if os.geteuid() != 0 and needs_root(args):
        allowed = ", ".join([*ROOTLESS, "--help", "--version", "run --dry-run", "run --plot-only"])
        print(
            f"run.sh {args.command}: needs root (network namespaces, qdiscs, sysctls, BPF): "
            f"sudo ./run.sh {' '.join(argv)}; without root: {allowed}",
            file=sys.stderr,
        )
        return 1
    exits.stop_on_signals()
    return exits.dispatch(args, COMMANDS[args.command])
