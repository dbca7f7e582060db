"""The commands of the project itself: `bench` (benchmarks that report numbers), `test` (the
whole suite: lint, types, layers, unit and root integration tests) and `docs` (the numbers
README.md and docs/ state about the stored results, rewritten from the rows: docnumbers.py).
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
from pathlib import Path

import expts
from ground import kernel
from ground.errors import UserError
from ground.results import REPO
from ground.units import QuantityError
from kmod import loader
from netrepro.runner import admission

log = logging.getLogger("netrepro")


def cmd_bench(args: argparse.Namespace) -> int:
    from netrepro.lanes import bench

    if args.which == "delayline":
        bench.delayline(rtt=args.rtt or "20ms", out=args.out)
    elif args.which == "ports":
        args.runs = 5 if args.runs is None else args.runs
        args.seconds = 20 if args.seconds is None else args.seconds
        names = tuple(a for a in (args.algorithms or ",".join(loader.PORTS)).split(",") if a)
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
            rate=args.rate or "10mbit",
            rtt=args.rtt or "100ms",
            out=args.out,
            paths=tuple(bench.PORT_PATH_NAMES[p] for p in paths),
            control=args.control,
        )
    elif args.which == "ssthresh":
        _bench_ssthresh(args)
    elif args.which == "delayline-links":
        bench.delayline_links(out=args.out)
    elif args.which == "cluster":
        figure = args.figure or "iw/fig5b"
        expts.find(figure)  # a UserError naming it, before anything starts
        bench.cluster(figure, quick=args.quick, out=args.out)
    elif args.which == "jobs":
        from netrepro.lanes import bench_jobs

        figures = (args.figure,) if args.figure else bench_jobs.FIGURES
        for figure in figures:
            expts.find(figure)
        labs = []
        for text in args.labs.split(","):
            count = admission.parse_jobs(text)
            if count is None:
                raise QuantityError("--labs", text, "numbers of labs, e.g. 2,4,8 (auto is for --jobs)")
            labs.append(count)
        bench_jobs.jobs(figures, tuple(labs), out=args.out)
    elif args.which == "reproduce":
        from netrepro.lanes import bench_reproduce

        bench_reproduce.figures_of(args.studies)  # a UserError naming a wrong study, before anything starts
        if args.summarize is not None:
            if args.keep is not None:
                raise UserError("bench reproduce: --summarize runs nothing, so it keeps no tree; give one of them")
            doc = bench_reproduce.resumed(args.studies, args.summarize, args.out)
            return 0 if bench_reproduce.passed(doc, same_claims=False) else 1
        kept = args.keep.resolve() if args.keep else None
        if kept is not None and kept.exists() and any(kept.iterdir()):
            raise UserError(f"--keep {args.keep}: not empty; the benchmark's output tree must start empty")
        ok = bench_reproduce.reproduce(args.studies, quick=args.quick, out=args.out, keep=kept)
        return 0 if ok else 1
    elif args.which == "soak":
        if not 1 <= args.kills <= 10_000:
            raise QuantityError("--kills", args.kills, "allowed range is 1 to 10000")
        jobs = admission.parse_jobs(args.jobs) if args.jobs else 0
        if jobs is None:
            raise QuantityError("--jobs", args.jobs, "soak: a number of labs side by side (auto is for a figure's run)")
        if jobs and (args.cluster or args.lose_host):
            given = "--cluster" if args.cluster else "--lose-host"
            raise UserError(f"--jobs {args.jobs} and {given}: the soak runs one or the other; give one")
        if args.lose_host:
            return 0 if bench.lose_host(rounds=args.kills, out=args.out) else 1
        return 0 if bench.soak(kills=args.kills, seed=args.seed, out=args.out, cluster=args.cluster, jobs=jobs) else 1
    else:
        bench.runner(out=args.out)
    return 0


def _bench_ssthresh(args: argparse.Namespace) -> None:
    from ground.path import PathSpec
    from netrepro.lanes import bench_ssthresh

    runs = 8 if args.runs is None else args.runs
    seconds = 30 if args.seconds is None else args.seconds
    if not 1 <= runs <= 1000:
        raise QuantityError("--runs", runs, "allowed range is 1 to 1000")
    if not 1 <= args.flows <= 32:
        raise QuantityError("--flows", args.flows, "allowed range is 1 to 32")
    if not 2 <= seconds <= 600:
        raise QuantityError("--seconds", seconds, "allowed range is 2 to 600")
    names = tuple(a for a in (args.algorithms or ",".join(bench_ssthresh.DEFAULT_ALGORITHMS)).split(",") if a)
    if not names:
        raise QuantityError("--algorithms", args.algorithms, "one or more congestion controls, comma-separated")
    for name in names:
        if name not in loader.ALGORITHMS and loader.kernel_has(name) is None:
            raise QuantityError(
                "--algorithms", name, f"netrepro's own ({', '.join(loader.ALGORITHMS)}) or one this kernel has"
            )
    given = {"rtt": args.rtt, "rate": args.rate, "loss": args.loss}
    path = PathSpec.parse(**{**bench_ssthresh.DEFAULT_PATH, **{k: v for k, v in given.items() if v}})
    bench_ssthresh.ssthresh(names, runs=runs, flows=args.flows, seconds=seconds, path=path, out=args.out)


def cmd_docs(args: argparse.Namespace) -> int:
    """Rewrite every marked number in README.md and docs/ from results/reference, and say what changed;
    `--check`: only say what differs (exit 1 if anything does).  An unknown key is an error either way."""
    from netrepro.front import docnumbers

    found = docnumbers.mismatches() if args.check else docnumbers.rewrite()
    for marker in found:
        print(("differs: " if args.check or marker.fact is None else "rewrote: ") + str(marker))
    unknown = [m for m in found if m.fact is None]
    if not found:
        print("every marked number equals its fact from results/reference")
    return 1 if unknown or (args.check and found) else 0


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
