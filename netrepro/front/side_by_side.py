"""`reproduce`'s figures run side by side: each figure a child process that runs it exactly as `run FIGURE`
would, with as many labs as the packer admits beside the labs already running.

The scheduler starts figures longest first (by their stored estimates), each when at least one of its labs
is admitted (netrepro.runner.packing.admitted: no lab of another figure that loads one of its variants or
runs a fast path, or beside which its own fast path would run (admission.Exclusive); the labs' measured
CPU within the machine's budget; fewer labs while the delay lines' recent p99 lateness nears its bound;
one lab whenever nothing runs), and with
as many labs as are admitted then, at most one per trial left (a figure's labs are a local Dask cluster,
`--jobs N`, that splits a path setting's trials where it has fewer settings than labs, as `run --jobs auto`
does: so newcwv's figures, one path each and minutes a trial, are not one lab's chain; one lab runs in the
child's own process; with --until-decided one lab a figure, whose looks run on it).  A figure's labs are
fixed when it starts: one started beside busy figures keeps its few labs when they end.  A figure that
draws another's rows (`trials_of`) starts once its owner has ended, and never beside another that reads
the same CSV (two figures drawing one owner's rows would meet on its lock); a derived figure whose rows are
its own (a kept `fig6@client=chromium` draws the fig3.csv of its own directory) is measured like any other.  So a figure
whose trials mostly wait (a few % of a core) runs beside a busy one, and a busy one runs alone.

A child writes what `run` prints to <out>/reproduce/<study>/logs/<figure>-<time>.log and its rows, figure
and manifest where a single run writes them; the parent shows one progress line for the whole run (trials
home of all figures, the figures running with their labs, the time left at the rate so far, each trial
weighed by its figure's estimated time a trial) and lists each
figure as it ends.  Each child is a process group of its own, so a signal reaches it once: the parent
passes on Ctrl-C (SIGINT), SIGTERM and SIGHUP, then waits for every child to undo what it created before it
exits; a child whose parent dies (SIGKILL) gets SIGTERM from the kernel (PR_SET_PDEATHSIG) and unwinds.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import logging
import multiprocessing
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path

from ground import logs
from ground.progress import Progress
from ground.trials import Row, trial_key
from netrepro.front import exits
from netrepro.runner import admission, packing
from netrepro.runner.plan import Plan
from netrepro.studykit import evidence
from netrepro.studykit.spec import Figure

PR_SET_PDEATHSIG = 1  # prctl(2)
POLL_S = 3.0  # how often the parent reads the children's rows and admits labs

log = logging.getLogger("netrepro.reproduce")


@dataclasses.dataclass(frozen=True)
class Ended:
    """A figure's child as it ended: its exit status and the log of what it printed."""

    figure: Figure
    status: int
    log: Path
    labs: int
    start_s: float  # from the run's start
    end_s: float


@dataclasses.dataclass
class _Child:
    figure: Figure
    labs: int
    cores: float  # per lab: admission's measured cost (packing.UNMEASURED_CORES where nothing is measured)
    holds: admission.Exclusive
    process: BaseProcess
    log: Path
    began: float

    def tasks(self) -> list[packing.Task]:
        return [
            packing.Task(self.figure.full_name, f"lab {k}", 1, 0.0, self.cores, self.holds) for k in range(self.labs)
        ]


def trials_left(fig: Figure, out: Path, quick: bool, trials: int | None, seed: int) -> int:
    """The figure's trials not yet in its CSV at `seed` (a failed one counts as in: its row is there, and
    the child runs it again as `run` would)."""
    done = {r.key for r in evidence.judged_rows(fig, out / fig.directory / fig.csv_name, quick, trials, seed)}
    count = fig.trial_count(quick, trials)
    return sum(trial_key(p, i) not in done for p in fig.grid(quick) for i in range(count))


def trials_home(fig: Figure, out: Path, quick: bool, trials: int | None, seed: int) -> int:
    """The figure's trials with a row in its CSV at `seed` (the latest of each)."""
    return len(evidence.judged_rows(fig, out / fig.directory / fig.csv_name, quick, trials, seed))


def labs_to_admit(
    running: Sequence[packing.Task],
    cores: float,
    most: int,
    machine_cores: int,
    lateness: packing.RecentLateness | None,
    holds: admission.Exclusive = admission.Exclusive(),
) -> int:
    """How many labs of a figure costing `cores` a lab (and holding `holds`) start now beside the `running`
    labs: one more each while packing.admitted takes it, at most `most` (0: none fits yet, it waits)."""
    labs: list[packing.Task] = []
    candidate = packing.Task("candidate", "lab", 1, 0.0, cores, holds)
    while len(labs) < most and packing.admitted([*running, *labs], candidate, machine_cores, lateness):
        labs.append(candidate)
    return len(labs)


def _child(args: argparse.Namespace, fd: int, command: Callable[[argparse.Namespace], int], parent: int) -> None:
    """In the child: a process group of its own, SIGTERM when the parent dies, what it prints to the log
    file; then the figure run as `run` runs it."""
    os.setpgid(0, 0)  # a signal to the parent's group reaches it only as the parent passes it on: once
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(128 + signal.SIGTERM)
    exits.stop_on_signals()  # not the parent's handlers (they pass signals on): this child stops and unwinds
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.exit(command(args))


def run(
    figures: Sequence[Figure],
    args: argparse.Namespace,
    command: Callable[[argparse.Namespace], int],
    log_dir: Path,
    on_end: Callable[[Ended], None],
) -> None:
    """Run the figures side by side, each as `command(<args with that figure and its labs>)` in a child
    process; `on_end` hears of each as it ends."""
    out = args.out.resolve()
    began = time.monotonic()
    machine_cores = admission.cores()
    cap = admission.parse_jobs(args.jobs) if args.jobs is not None else None
    cap = min(cap or admission.MAX_AUTO_JOBS, admission.MAX_AUTO_JOBS)
    # --until-decided looks run their trials on the figure's own lab (options.until_decided): one a figure
    per_figure = 1 if getattr(args, "until_decided", None) is not None else admission.MAX_AUTO_JOBS
    plans = {f.full_name: Plan.of(f, args.quick, trials=args.trials) for f in figures}
    waiting = sorted(figures, key=lambda f: -(plans[f.full_name].seconds() or 0.0))
    holds = {f.full_name: admission.exclusive(f, args.quick) for f in figures}
    measured = [f for f in figures if not any(_owner(o, f) for o in figures)]
    measuring = {f.full_name for f in measured}
    # read once: a waiting figure's CSV and cost do not change until it runs
    left = {f.full_name: trials_left(f, out, args.quick, args.trials, args.seed) for f in measured}
    costs = {f.full_name: admission.measured_cost(f, out) for f in measured}
    home = {f.full_name: trials_home(f, out, args.quick, args.trials, args.seed) for f in measured}
    planned = {f.full_name: f.trial_count(args.quick, args.trials) * len(f.grid(args.quick)) for f in measured}
    weight = trial_weights([plans[f.full_name] for f in measured])
    progress = Progress(
        sum(planned.values()) - sum(home.values()),
        f"reproduce {args.study}",
        work=sum((planned[n] - home[n]) * weight[n] for n in planned),
    )
    running: list[_Child] = []
    fork = multiprocessing.get_context("fork")
    log_dir.mkdir(parents=True, exist_ok=True)
    stop = _forward_signals(running)
    try:
        while waiting or running:
            ended = [c for c in running if c.process.exitcode is not None]
            for child in ended:
                running.remove(child)
                status = child.process.exitcode or 0
                on_end(
                    Ended(child.figure, status, child.log, child.labs, child.began - began, time.monotonic() - began)
                )
            lateness = packing.RecentLateness.of(
                _latest_rows(running, out, args, measuring), sum(c.labs for c in running)
            )
            tasks = [t for c in running for t in c.tasks()]
            for fig in list(waiting):
                if any(_owner(f, fig) for f in [*waiting, *(c.figure for c in running)]):
                    continue  # it draws its owner's rows: once the owner has ended
                if any(_same_rows(c.figure, fig) for c in running):
                    continue  # another reads its CSV now: one run at a time holds a CSV's lock
                todo, cost = left.get(fig.full_name, 0), costs.get(fig.full_name)
                cores = 0.0 if todo == 0 else (packing.UNMEASURED_CORES if cost is None else cost.cores)
                room = cap - sum(c.labs for c in running)
                most = max(1, min(todo, room, per_figure))
                labs = labs_to_admit(tasks, cores, most, machine_cores, lateness, holds[fig.full_name]) if room else 0
                if labs == 0:
                    continue
                waiting.remove(fig)
                child = _start(fork, fig, labs, cores, holds[fig.full_name], args, command, log_dir)
                if todo:
                    progress.begin()  # what ran before drew finished figures again: no trial's time
                running.append(child)
                tasks += child.tasks()
            _show(
                progress,
                [c.figure for c in [*running, *ended] if c.figure.full_name in measuring],
                running,
                out,
                args,
                home,
                weight,
            )
            if stop.signum:
                break
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        _signal(running, signal.SIGINT)  # Ctrl-C reached the parent's group only
        raise
    finally:
        for child in running:
            child.process.join()  # each undoes what it created, whatever stopped the run
            status, now = child.process.exitcode or 0, time.monotonic() - began
            on_end(Ended(child.figure, status, child.log, child.labs, child.began - began, now))
        _show(progress, measured, [], out, args, home, weight)
        progress.close()
        stop.restore()
    if stop.signum:
        raise SystemExit(128 + stop.signum)


def trial_weights(plans: Sequence[Plan]) -> dict[str, float]:
    """Each figure's estimated seconds a trial (its stored result's, else its declared duration): what a trial
    of it weighs in the run's time left.  One with neither takes the nearest it has: its declared figure's
    (a browser or a setting derived from it), else the median of its study's, else of all the others'
    (a median: one study's minute-long trials must not make a page load of a second weigh half a minute)."""
    known = {p.fig.full_name: s for p in plans if (s := p.seconds_per_trial()) is not None and s > 0}

    def nearest(fig: Figure) -> float:
        if fig.full_name in known:
            return known[fig.full_name]
        if fig.declared is not None and fig.declared.full_name in known:
            return known[fig.declared.full_name]
        kin = [known[p.fig.full_name] for p in plans if p.fig.study == fig.study and p.fig.full_name in known]
        return statistics.median(kin or list(known.values()) or [1.0])

    return {p.fig.full_name: nearest(p.fig) for p in plans}


def _same_rows(a: Figure, b: Figure) -> bool:
    """Whether two figures read and write one CSV (a figure and one that draws its rows, or two that draw one's)."""
    return a.directory == b.directory and a.csv_name == b.csv_name


def _owner(candidate: Figure, fig: Figure) -> bool:
    """Whether `candidate` is the figure whose rows `fig` draws: one that measures its own, in the same CSV."""
    return bool(fig.trials_of) and not candidate.trials_of and _same_rows(candidate, fig)


def figure_args(fig: Figure, args: argparse.Namespace) -> argparse.Namespace:
    """`args` as `run.sh run` takes them for `fig`: a derived figure a study keeps (KEPT) as its declared
    figure and the --set that derives it, after any --set of the run's own."""
    derived = [f"{k}={v}" for k, v in fig.overrides.items()] if fig.variant else []
    figure = (fig.declared or fig).full_name
    return argparse.Namespace(**{**vars(args), "command": "run", "figure": figure, "set": [*args.set, *derived]})


def _start(
    fork: multiprocessing.context.ForkContext,
    fig: Figure,
    labs: int,
    cores: float,
    holds: admission.Exclusive,
    args: argparse.Namespace,
    command: Callable[[argparse.Namespace], int],
    log_dir: Path,
) -> _Child:
    log_path, fd = logs.create_exclusive(log_dir, fig.full_name.replace("/", "-"))
    one = figure_args(fig, args)
    one.jobs = str(labs) if labs > 1 else None
    sys.stdout.flush()
    sys.stderr.flush()
    process = fork.Process(target=_child, args=(one, fd, command, os.getpid()), name=f"reproduce {fig.full_name}")
    process.start()
    os.close(fd)
    log.info("%s: started, %d lab%s; what it prints goes to %s", fig.full_name, labs, "s" if labs > 1 else "", log_path)
    return _Child(fig, labs, cores, holds, process, log_path, time.monotonic())


def _latest_rows(running: Sequence[_Child], out: Path, args: argparse.Namespace, measuring: set[str]) -> list[Row]:
    """The running figures' latest rows, one a lab (of those that measure their own): the delay lines' lateness."""
    rows: list[Row] = []
    for child in running:
        if child.figure.full_name in measuring:
            found = evidence.judged_rows(child.figure, out / child.figure.directory / child.figure.csv_name,
                                         args.quick, args.trials, args.seed)  # fmt: skip
            rows += found[-child.labs :]
    return rows


def _show(
    progress: Progress,
    figures: Sequence[Figure],
    running: Sequence[_Child],
    out: Path,
    args: argparse.Namespace,
    home: dict[str, int],
    weight: dict[str, float],
) -> None:
    """Step the one progress line by the trials that came home since the last look, each weighed as its
    figure's (trial_weights)."""
    for fig in figures:
        if fig.full_name not in home:
            continue  # it draws another's rows
        now = trials_home(fig, out, args.quick, args.trials, args.seed)
        note = ", ".join(f"{c.figure.full_name} x{c.labs}" for c in running)
        while home[fig.full_name] < now:
            home[fig.full_name] += 1
            progress.step(f"running: {note}" if note else "", work=weight[fig.full_name])


@dataclasses.dataclass
class _Stop:
    signum: int = 0
    previous: dict[int, object] = dataclasses.field(default_factory=dict)

    def restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


def _signal(running: Sequence[_Child], signum: int) -> None:
    for child in running:
        with contextlib.suppress(ProcessLookupError):
            if child.process.pid is not None and child.process.exitcode is None:
                os.kill(child.process.pid, signum)


def _forward_signals(running: list[_Child]) -> _Stop:
    """SIGTERM and SIGHUP to the parent go to every child, and stop the scheduler after they end."""
    stop = _Stop()

    def forward(signum: int, frame: object) -> None:
        if not stop.signum:  # once: a child that is unwinding is not interrupted again
            stop.signum = signum
            _signal(running, signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        stop.previous[signum] = signal.signal(signum, forward)
    return stop
