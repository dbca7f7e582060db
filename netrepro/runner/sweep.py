"""The sweep runner: executes any figure spec, trial by trial, on one lab.

The lab comes up once; each trial reconfigures it in place when its path
differs (a tc change and a delay-line command, not a rebuild), and each
distinct path is verified the first time a trial uses it.  Trials run in an
order shuffled with the recorded seed, so that drift over time cannot pass
for an effect.  Every trial appends its row to the figure's CSV (so an
interrupted figure resumes where it stopped), with its parameters, metrics,
status (ok, failed, timeout) and the verification of its path; a resumed
figure runs its failed trials again, and five failures in a row stop a run.
Only a trial's own failure (`trial_outcome`) makes a failed row; a setup or
programming error stops the run at once, and a preflight runs before the lab.
Each row records the CPU its lab spent (`cpu_s`) and how late the delay
lines released its packets; a trial late past its bound (`late_bound_ms`)
is failed, and run again after a pause, three attempts at most; a trial whose
BPF congestion control repaired a corrupted ssthresh is failed and run again
at once, eight attempts at most for that cause (`attempt_again`).
One run at a time holds a figure's CSV.  At the end: the summary, the
figure, the manifest and a short table on the terminal, each with the
project's reference reproduction (results/reference/) beside this run's
numbers where the figure is the one declared (what the manifest says, the
verdict and the reference: netrepro.runner.manifest).  Every log record of the run
(each command with its namespace) also goes to
results/<study>/logs/<figure>-<time>.log, which the manifest names.  A
derived figure (other parameters than declared) has a directory of its own.
A figure's run returns what it left (`Outcome`: its trials failed or missing),
from which the front chooses the command's exit status.
With `Options.engine` the trials run elsewhere instead (an `Engine` the
front passes in: netrepro.engine.cluster's Dask cluster, each worker running
this module's `run_trials` on its own lab, and this process writing every
row); the runner imports no engine.  With `Options.until` (`--until-decided`)
the declared trials are the first look, and netrepro.runner.looks asks for
more trials of the settings whose claims are undecided; a --plot-only of a
figure whose manifest records such looks replays them from the CSV.
"""

from __future__ import annotations

import contextlib
import logging
import platform
import random
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from ground import cgroups, figurelock, kernel, logs, results
from ground.errors import SetupError, TrialError, UserError
from ground.ledger import Ledger
from ground.proc import CommandError
from ground.progress import Progress
from ground.trials import Row, TrialLog, latest_rows, row_ok, setting_key, trial_draw, trial_key
from netrepro.runner import preflight, resume, shards
from netrepro.runner.attempts import LATE_PAUSES_S, FailureStreak, attempt_again, discarded_for_ssthresh, late_bound_ms
from netrepro.runner.looks import Looks, UntilDecided, stored_plan, until_decided
from netrepro.runner.manifest import (
    beside_unvaried,
    declared_of,
    earlier_verifications,
    engine_of,
    figure_manifest,
    judgement_lines,
    judgement_of,
    reference_of,
)
from netrepro.runner.resume import RowSink
from netrepro.runner.session import Session
from netrepro.runner.shards import Shard
from netrepro.runner.verify import verify
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit import evidence, plot
from netrepro.studykit.declared import Declaration
from netrepro.studykit.spec import Figure, Params
from netrepro.studykit.trial import Trial
from netrepro.studykit.trial import build as build_trial
from topologies.lab import Lab
from topologies.topology import Topology

log = logging.getLogger("netrepro.runner.sweep")


class VerificationFailed(SetupError):
    """--strict, and a path measured outside its tolerance."""


class TrialTimeout(TrialError):
    """A trial ran past its time limit."""


class RunAborted(SetupError):
    """Trial after trial failed: something is wrong beyond one trial, and the run stopped."""


class EngineRun(Protocol):
    """What an engine's run of a figure's trials came to: each path's verification, the settings
    lost with their workers, and the manifest's account of where the trials ran."""

    verifications: dict[str, Any]
    lost: list[str]

    def manifest(self) -> dict[str, Any]: ...


class Engine(Protocol):
    """Where a figure's trials run instead of this machine (netrepro.engine.cluster.Engine, a Dask
    cluster), passed in by the front: it runs `todo` as `run_trials` would, and puts each row into
    `sink` as it comes.  `allow_mixed`: rows of a second kernel or backend are taken, not refused."""

    @property
    def allow_mixed(self) -> bool: ...

    def run_trials(self, fig: Figure, todo: list[Trial], opts: Options, sink: RowSink) -> EngineRun: ...


@dataclass
class Options:
    out: Path = results.RESULTS
    trials: int | None = None
    quick: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    seed: int = 1
    strict: bool = False
    fresh: bool = False
    retry_failed: bool = True  # a resumed figure runs its failed and timed-out trials again
    plot_only: bool = False  # redraw from the CSV; run no trial
    merged: bool = False  # the CSV is shards' rows joined (`run.sh merge`): their own commands run them again
    shaper: str = "auto"
    switch: str = "auto"  # ovs, bridge or auto (topologies.ovs.choose_switch)
    cc_impl: str | None = None  # kernel, lkm or bpf (kmod.loader.choose_impl); None: the loader's choice
    shard: Shard | None = None  # only this part of the trials (netrepro.runner.shards)
    engine: Engine | None = None  # run the trials elsewhere (netrepro.engine.cluster's Dask cluster); None: here
    # variants and ports the run holds loaded for its labs side by side (session.hold_algorithms), with their columns
    held_ccs: dict[str, dict[str, Any]] = field(default_factory=dict)
    until: UntilDecided | None = None  # --until-decided: more trials for undecided claims (netrepro.runner.looks)
    # where the figure is declared and the commit that last changed it (netrepro.studykit.declared), passed by the
    # front, which knows the study's modules; recorded in the manifest when rows are measured
    declaration: Callable[[Figure], Declaration] | None = None


@dataclass(frozen=True)
class Outcome:
    """What a figure's run left: its CSV, and how many of the trials it was to leave are not ok.

    `trials`: the figure's trials for the run's seed (its shard's, with --shard); `failed`: those
    whose latest attempt failed or timed out; `missing`: those with no row (a --plot-only or a
    merge that lacks them, settings lost with their workers).  Whether that fails the command is
    the front's to say (a --plot-only draws rows it did not run: netrepro.front.figure_commands).
    """

    figure: str
    csv: Path
    trials: int
    failed: int = 0
    missing: int = 0

    @property
    def not_ok(self) -> int:
        """The trials that are not ok: failed, timed out or missing."""
        return self.failed + self.missing


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise TrialTimeout in this (main) thread after `seconds`."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TrialTimeout(f"no result within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _cell_params(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (str(v) if not isinstance(v, (int, float, str, bool, dict, list)) else v) for k, v in params.items()}


def trial_outcome(exc: BaseException) -> str | None:
    """The status a trial's row gets for an exception its workload raised, or None: not the trial's, stop the run.

    A trial fails on what its measurement hit: a TrialError (a parser or a
    client that did not get what it needed), a tool run inside the workload
    that failed (CommandError), an OSError (a file a tool should have
    written).  A SetupError (the lab, the server, the machine) and anything
    that is not a NetreproError (TypeError, KeyError, ...: a bug) stop the run.
    """
    if isinstance(exc, TrialTimeout):
        return "timeout"
    if isinstance(exc, SetupError | UserError):
        return None
    if isinstance(exc, TrialError | CommandError | OSError):
        return "failed"
    return None


def run_trials(
    fig: Figure,
    todo: list[Trial],
    opts: Options,
    trial_log: RowSink,
    claim: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """Run the trials, on one lab for each topology they ask for (a figure's `pairs` may vary); return the
    verification of each path used.

    `claim(trial_key)`, where given, is asked before each trial whether it is
    still to run (a cluster's worker: another may have run it).  Raises
    RunAborted after FAILURES_IN_A_ROW failed trials in a row.
    """
    verifications: dict[str, Any] = {}
    streak = FailureStreak()
    progress = Progress(len(todo), fig.full_name)
    by_topology: dict[Topology, list[Trial]] = {}
    for trial in todo:  # the run's order kept within each topology
        by_topology.setdefault(trial.topology, []).append(trial)
    try:
        for trials in by_topology.values():
            _run_on_one_lab(fig, trials, opts, trial_log, claim, streak, progress, verifications)
    finally:
        progress.close()
    return verifications


def lab_name(fig: Figure, trial: Trial) -> str:
    """The name a lab's verification goes by: its path, and its topology where the trial sizes it otherwise."""
    return str(trial.path) + ("" if trial.topology == fig.topology else f", {trial.topology.label}")


def _run_on_one_lab(
    fig: Figure,
    todo: list[Trial],
    opts: Options,
    trial_log: RowSink,
    claim: Callable[[str], bool] | None,
    streak: FailureStreak,
    progress: Progress,
    verifications: dict[str, Any],
) -> None:
    """Run trials of one topology on one lab, reconfigured for each path; each path verified once."""
    workload = WORKLOADS[fig.workload]
    code = results.code_version()
    machine = {"host": platform.node(), "kernel": kernel.release()}
    first = todo[0]
    with (
        Ledger() as ledger,
        # the hosts start with CUBIC; each trial then sets its own congestion control
        Lab(
            first.path,
            ledger,
            shaper=opts.shaper,
            seed=opts.seed,
            cc="cubic",
            topology=first.topology,
            switch=opts.switch,
        ) as lab,
    ):
        work = ledger.temp_dir("netrepro-trials-")
        session = Session(
            lab, ledger, work, results_dir=opts.out / fig.directory / "logs", cc_impl=opts.cc_impl, held=opts.held_ccs
        )
        try:
            for trial in todo:
                if claim is not None and not claim(trial.key):
                    progress.step("ran elsewhere")
                    continue
                path = trial.path
                if path != lab.path:
                    lab.reconfigure(path)
                name = lab_name(fig, trial)
                if name not in verifications:
                    lab.reseed(opts.seed)  # a path is verified with the run's seed, whichever trial came before
                    v = verify(lab)
                    verifications[name] = {"path": path.describe(), **v.as_dict()}
                    verifications[name]["switch"] = lab.switch_kind
                    if trial.topology.shape != "path":
                        verifications[name]["network"] = lab.network.describe()
                    # logged, not printed: written above the progress bar, and kept in the log file
                    for c in v.checks:
                        if c.ok:
                            log.info("  %s", c.line())
                        else:
                            log.warning("  WARNING %s", c.line())
                    if opts.strict and not v.ok:
                        raise VerificationFailed(f"{name}: " + "; ".join(c.line() for c in v.failed()))
                v_cols = _verification_columns_from(verifications[name])
                late_attempts = repaired_attempts = 0
                while True:  # bounded: attempt_again stops at ATTEMPTS_AT_ONCE late or SSTHRESH_ATTEMPTS repaired
                    made = _run_one_trial(fig, trial, opts, lab, ledger, session, workload, code, machine)
                    made.update(v_cols)
                    late = bool(made.get("late_over_bound"))
                    late_attempts += late
                    repaired_attempts += bool(made.get("ssthresh_repaired"))
                    again = attempt_again(made, late_attempts, repaired_attempts)
                    pause = LATE_PAUSES_S[late_attempts - 1] if late and again else 0.0
                    if again:
                        log.warning("%s; run again%s", made["error"], f" after {pause:g} s" if pause else "")
                    trial_log.append(made)
                    counted = late or not again  # a repaired attempt run again is not the trial's outcome
                    if counted and streak.record(made["status"], made["error"]):
                        raise RunAborted(streak.report(session.apache.error_log_tail()))
                    if not again:
                        break
                    time.sleep(pause)
                progress.step(f"{fig.x}={trial.level} {trial.series}".rstrip())
        finally:
            session.stop()


def _run_one_trial(
    fig: Figure,
    trial: Trial,
    opts: Options,
    lab: Lab,
    ledger: Ledger,
    session: Session,
    workload: Any,
    code: str,
    machine: Mapping[str, str],
) -> dict[str, Any]:
    """One trial on the lab as it is set for its path: the row it made, with its metrics or its failure, the CPU
    its lab spent and how late its delay lines released packets (a trial past LATE_BOUND is failed)."""
    path = trial.path
    key = trial.key
    # The trial's own draw (a re-run of it draws the same): its loss and jitter seed, its start.
    draw = trial_draw(key, opts.seed)
    offset_s = draw.start_offset_s(path.rtt.seconds)
    made: dict[str, Any] = {
        "trial_key": key,
        "figure": fig.full_name,
        "trial": trial.index,
        **_cell_params(trial.setting),
        "topology": fig.topology.label,  # a study file's topology may change under one figure's name
        "backend": lab.backend,
        "switch": lab.switch_kind,
        "code": code,
        "host": machine["host"],  # where it ran: a figure's trials may come from several machines
        "kernel": machine["kernel"],
        "loss_seeded": lab.loss_repeatable,
        "seed": opts.seed,
        "draw_seed": draw.draw_seed,
        "loss_seed": draw.loss_seed,
        "start_offset_ms": round(offset_s * 1e3, 3),
    }
    began = time.monotonic()
    # The trial's host set-up: a failure here is the machine's, not the trial's, and stops the run.
    made.update(session.congestion_control(trial))
    session.apply_hosts(trial)
    repairs_before = session.ss_repairs(trial)
    lab.reseed(draw.loss_seed)
    lab.lateness()  # the trial's window of the delay lines' lateness starts here
    cpu_before = cgroups.cpu_seconds(ledger.cgroup)
    try:
        # The workload starts at the trial's phase of a round trip: before any of its timers,
        # outside what it measures, and on top of its time limit, not out of it.
        with time_limit(fig.trial_timeout(trial) + offset_s):
            time.sleep(offset_s)
            metrics = workload(session, trial)
        made.update(metrics, status="ok", error="")
        made.update(_initcwnd_check(trial, metrics))
        if repairs_before is not None:
            made["cc_ss_repairs_in_trial"] = (session.ss_repairs(trial) or 0) - repairs_before
            if made["cc_ss_repairs_in_trial"] > 0:
                # The kernel stored a value no code computed as ssthresh, and the program's guard put its
                # own back: the trial ran on a window TCP did not choose for a moment, so it is not kept.
                made.update(
                    status="failed",
                    ssthresh_repaired=True,
                    error=f"the BPF congestion control repaired a corrupted ssthresh "
                    f"{made['cc_ss_repairs_in_trial']} time(s) in this trial (kmod/README.md, 'The ssthresh "
                    "corruption'): not kept",
                )
    except Exception as e:
        status = trial_outcome(e)
        if status is None:
            raise  # a setup or programming error: no row, the run stops
        if status == "failed":
            log.warning("trial failed: %s", e)
        made.update(status=status, error=str(e)[:500])
    cpu_after = cgroups.cpu_seconds(ledger.cgroup)
    made["trial_seconds"] = round(time.monotonic() - began, 3)
    if cpu_before is not None and cpu_after is not None:
        made["cpu_s"] = round(cpu_after - cpu_before, 3)
    late = lab.lateness()
    if late is not None:
        made.update(late.columns())
        bound = late_bound_ms(path.rtt.ms)
        made["late_bound_ms"] = bound
        if late.p99_ms > bound and row_ok(made):
            made.update(
                status="failed",
                late_over_bound=True,
                error=f"the delay line released packets late: p99 {late.p99_ms:.3f} ms over the bound "
                f"{bound:.3f} ms (median {late.median_ms:.3f} ms, max {late.max_ms:.3f} ms, "
                f"{late.packets} packets); the machine was too busy for this path",
            )
    return made


def _initcwnd_check(trial: Trial, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Did the server start with the initial window the trial set (read from tcp_probe)?"""
    initcwnd = trial.hosts.initcwnd
    if initcwnd is None or "initcwnd_measured" not in metrics:
        return {}
    ok = metrics["initcwnd_measured"] == initcwnd
    if not ok:
        log.warning("initial window: set %s, tcp_probe saw %s", initcwnd, metrics["initcwnd_measured"])
    return {"verify_initcwnd_ok": ok}


def _verification_columns_from(doc: Mapping[str, Any]) -> dict[str, Any]:
    cols: dict[str, Any] = {"verify_ok": doc["ok"]}
    for c in doc["checks"]:
        cols[f"verify_{c['name']}"] = round(c["measured"], 4)
        cols[f"verify_{c['name']}_ok"] = c["ok"]
    return cols


def trials_to_run(
    fig: Figure,
    grid: list[Params],
    trials: int,
    trial_log: TrialLog,
    opts: Options,
    reached: dict[str, int] | None = None,
) -> list[Trial]:
    """The trials the CSV lacks for this run's seed, each read once from its setting (netrepro.studykit.trial),
    in the order the seed shuffles them; `trials` of each setting, or as many as `reached` gives it
    (ground.trials.setting_key: a look of --until-decided).

    A failed or timed-out trial is run again unless opts.retry_failed is false."""
    done = trial_log.done(opts.seed, opts.retry_failed)
    counts = reached or {}
    todo = [(p, i) for p in grid for i in range(counts.get(setting_key(p), trials)) if trial_key(p, i) not in done]
    random.Random(opts.seed).shuffle(todo)
    keys_type = WORKLOADS[fig.workload].keys_type
    return [build_trial(p, i, fig.x, keys_type, fig.topology) for p, i in todo]


@dataclass
class _Runner:
    """Runs a figure's trials here or on its engine, the machine's preflight and the resume's check once
    before the first lab; keeps each path's verification and the engine's account."""

    fig: Figure
    opts: Options
    grid: list[Params]
    csv_path: Path
    trial_log: TrialLog
    earlier: list[Row]
    needs: preflight.Needs
    verifications: dict[str, Any]
    engine: dict[str, Any] | None = None
    checked: bool = False

    def run(self, todo: list[Trial]) -> int:
        """Run `todo`; return how many of them were lost with their workers (an engine's; here none)."""
        fig, opts, trial_log = self.fig, self.opts, self.trial_log
        if opts.engine is not None:
            # the workers decide their backend, switch, implementations and kernel: each row checked as it comes
            sink = resume.ResumeGuard(fig, self.csv_path, trial_log, self.earlier, allow_mixed=opts.engine.allow_mixed)
            home = opts.engine.run_trials(fig, todo, opts, sink)
            self.verifications.update(home.verifications)
            self.engine = home.manifest()
            # a setting Dask gave up on (its workers kept dying): its trials without a row are missing, and said so
            tried = {r.key for r in trial_log.rows if r.seed == opts.seed}
            missing = sum(1 for t in todo if t.key not in tried)
            if missing:
                print(
                    f"  {missing} trials not run: their settings were lost with their workers "
                    f"({'; '.join(home.lost)}); run the command again to resume them",
                    flush=True,
                )
            return missing
        if not self.checked:
            preflight.check_machine(self.needs)
            # what the lab and the session will use, decided as they will decide it, before anything is built
            setup = resume.planned_setup(fig, self.grid, opts.shaper, opts.switch, opts.cc_impl)
            resume.check_resume(fig, self.csv_path, self.earlier, setup)
            self.checked = True
        guard = resume.ResumeGuard(fig, self.csv_path, trial_log, self.earlier)
        self.verifications.update(run_trials(fig, todo, opts, guard))
        return 0


def _looks(
    fig: Figure,
    opts: Options,
    grid: list[Params],
    trials: int,
    trial_log: TrialLog,
    runner: _Runner,
    manifest_path: Path,
) -> Looks | None:
    """The looks of --until-decided (netrepro.runner.looks) after the declared trials, each look's trials
    run first; a --plot-only runs none, and replays the looks its manifest records (`stored_plan`)."""
    if opts.until is not None:
        plan, hours = opts.until.plan(fig.full_name, trials), opts.until.hours
    elif opts.plot_only and (stored := stored_plan(manifest_path, trials, opts.seed, opts.quick)) is not None:
        plan, hours = stored, None
    else:
        return None

    def todo_of(reached: Mapping[str, int]) -> list[Trial]:
        return trials_to_run(fig, grid, trials, trial_log, opts, dict(reached))

    def rows() -> list[Row]:
        return [r for r in trial_log.rows if r.seed == opts.seed]

    return until_decided(fig, grid, trials, plan, hours, rows, todo_of, None if opts.plot_only else runner.run)


def run_figure(fig: Figure, opts: Options, locked: bool = False) -> Outcome:
    """Run (or resume) a figure, then write its plot, manifest and table; return its CSV and its trials not ok.

    Raises figurelock.FigureBusy at once when another command holds the figure's CSV: a run locks
    it exclusively, --plot-only shared (ground.figurelock); `locked`: the caller holds it exclusively
    already (merge).  The preflight is in two steps: the names and root before the lock, the
    machine's probes (tools, backend, variants) once there are trials to run, before the lab (a
    UserError or SetupError either way); a resume that would mix the figure's rows with rows of
    another backend, switch, implementation or kernel is refused before the lab (check_resume).
    """
    overrides = {**fig.overrides, **opts.overrides}
    needs = preflight.figure_needs(fig, fig.grid(opts.quick, opts.overrides), overrides, opts.shaper, opts.cc_impl)
    if not opts.plot_only:
        preflight.check_request(needs)
    out_dir = opts.out / fig.directory
    csv_path = out_dir / fig.csv_name
    lock = (
        contextlib.nullcontext(csv_path)
        if locked
        else figurelock.holding(csv_path, shared=opts.plot_only, tree=opts.out)
    )
    with lock:  # before anything else: nothing is built, read or written unlocked
        log_path: Path | None = None
        try:
            with logs.log_file(out_dir / "logs", fig.name) as log_path:
                return _run_figure(fig, opts, csv_path, needs, f"logs/{log_path.name}")
        finally:
            if log_path is not None:
                results.hand_back(log_path, opts.out)


def _run_figure(fig: Figure, opts: Options, csv_path: Path, needs: preflight.Needs, log_name: str) -> Outcome:
    began = time.monotonic()
    log.debug("%s: %s", fig.full_name, opts)
    out_dir = csv_path.parent
    # --plot-only reads the CSV and never changes it (a torn last row is read around, not cut off)
    trial_log = TrialLog(csv_path, fresh=opts.fresh, tree=opts.out, read_only=opts.plot_only)
    trials = fig.trial_count(opts.quick, opts.trials)
    grid = fig.grid(opts.quick, opts.overrides)
    todo = trials_to_run(fig, grid, trials, trial_log, opts)
    planned = len(grid) * trials
    mine: set[str] | None = None  # with --shard, the shard's trials: the only ones this run answers for
    if opts.shard is not None:
        mine = shards.keys_of(grid, trials, opts.shard)
        todo = [t for t in todo if t.key in mine]
        planned = len(mine)
        print(f"  --shard {opts.shard}: {planned} of the {len(grid) * trials} trials are this shard's", flush=True)
    skipped = planned - len(todo)
    earlier = resume.resumed_rows(trial_log, grid, trials, opts.seed)  # what this run's rows must not differ from
    tried = {r.key for r in trial_log.rows if r.seed == opts.seed}
    retried = sum(1 for t in todo if t.key in tried)
    again = f", {retried} failed before, run again (--no-retry-failed: keep them)" if retried else ""
    print(
        f"{fig.full_name}: {fig.heading}\n  {len(grid)} settings x {trials} trials"
        + (f", {skipped} already in {csv_path.name} (resuming; --fresh to start over)" if skipped else "")
        + ("" if opts.plot_only else again),
        flush=True,
    )
    manifest_path = out_dir / f"{fig.name}.manifest.json"
    verifications: dict[str, Any] = {}
    for name in dict.fromkeys([fig.trials_of or fig.name, fig.name]):  # a shared CSV's owner verified it first
        verifications.update(earlier_verifications(out_dir / f"{name}.manifest.json", opts.fresh))
    # A trial with only failed rows is not missing: it failed (the manifest's failed_trials).
    missing = len(todo) - retried if opts.plot_only else 0
    runner = _Runner(fig, opts, grid, csv_path, trial_log, earlier, needs, verifications)
    if opts.plot_only:
        if missing:
            print(f"  --plot-only: {missing} trials missing, not run", flush=True)
    elif todo:
        missing = runner.run(todo)
    with evidence.searching(opts.out):  # the other figures a claim reads: this run's tree first
        looked = _looks(fig, opts, grid, trials, trial_log, runner, manifest_path)
    if looked is not None:
        planned = len(evidence.wanted(grid, trials, looked.reached))
    wanted = evidence.wanted(grid, trials, looked.reached if looked else None)
    attempts = [r for r in trial_log.rows if r.key in wanted and r.seed == opts.seed]
    rows = latest_rows(attempts)
    points = plot.summarize(fig, rows)
    reference = reference_of(fig, opts.out)
    png = out_dir / f"{fig.name}.png"
    draw = fig.drawing or plot.draw
    notes = draw(fig, points, rows, png, quick=opts.quick, reference=reference.points if reference else None)
    if reference and reference.of:
        plot.add_to_caption(png, [f"dashed, hollow: {reference.of}"])
    plot.add_to_caption(png, discarded_for_ssthresh(attempts))
    # once: the caption, the manifest and the terminal show it; after looks, each claim as its looks froze it
    with evidence.searching(opts.out):
        judgement = judgement_of(fig, points, rows, looked.judged if looked else None)
    beside_unvaried(judgement, fig, opts.out)
    plot.add_to_caption(png, judgement_lines(judgement))
    for drawn in (png, png.with_suffix(".svg"), png.with_name(f"{png.stem}.caption.txt")):
        if drawn.exists():
            results.hand_back(drawn, opts.out)
    failed_attempts = sum(1 for r in attempts if not r.ok)
    manifest = figure_manifest(
        fig, opts, grid, trials, missing, rows, verifications, points, notes, failed_attempts=failed_attempts
    )
    measured = bool(todo) and not opts.plot_only
    manifest["engine"] = engine_of(runner.engine, manifest_path, measured)
    manifest["declared"] = declared_of(fig, opts.declaration, manifest_path, measured)
    manifest["verdict"] = judgement
    if looked is not None:
        manifest["sequential"] = looked.manifest()
    results.write_json(
        manifest_path,
        {
            **manifest,
            "reference": reference.manifest() if reference else None,
            "log": log_name,
            "wall_seconds_this_run": round(time.monotonic() - began, 1),
        },
        opts.out,
    )
    print(plot.table(fig, points, reference.points if reference else None))
    if reference:
        print(f"reference: {reference.describe()}")
    for note in notes:
        print(f"note: {note}")
    for line in judgement_lines(judgement):
        print(line)
    answered = [r for r in rows if mine is None or r.key in mine]  # a shard: only its own
    failed = [r for r in answered if not r.ok]
    if failed:
        first = (failed[0].error or failed[0].status)[:300]
        without = [
            flag for flag, on in (("--plot-only", opts.plot_only), ("--no-retry-failed", not opts.retry_failed)) if on
        ]
        rerun = "the same command" + (f" without {' and '.join(without)}" if without else "") + " runs them again"
        if opts.merged:
            rerun = "each shard's own command (its --shard K/N) runs its trials again, and this merge draws them"
        print(
            f"{len(failed)} of {len(answered)} trials failed (each row's error says why; the first: {first}); {rerun}"
        )
    print(f"wrote {csv_path}, {png.name} (and .svg, .caption.txt), {fig.name}.manifest.json")
    log.debug("%s: wrote %s, %s, %s", fig.full_name, csv_path, png, manifest_path)
    return Outcome(fig.full_name, csv_path, planned, failed=len(failed), missing=missing)
