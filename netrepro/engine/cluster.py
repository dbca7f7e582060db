"""A figure's trials on a Dask cluster: one lab per worker, the coordinator the only writer.

`run.sh FIG --hosts vm1,vm2` starts a cluster with Dask's SSH launcher
(the scheduler on the first VM, one worker on each, as root, one lab slot
each); `--scheduler tls://HOST:PORT` uses a running cluster, whose workers
offer the resource `lab=1` (`dask worker --resources lab=1 --nthreads 1`,
started by hand, or under Slurm or PBS through dask-jobqueue).

A cluster this process starts is its own and ends with it
(netrepro.engine.ssh_cluster: TLS with the run's own certificates, each
process listening only on the address SSH reached its host on).
A running cluster is reached with the TLS files given, or through Dask's
own configuration; plain TCP only to loopback, or with `--insecure`, and
only where each of its workers is on TLS or loopback too (a scheduler that
reaches a remote worker over plain TCP hands whoever reaches that worker
root there), unless `--insecure`.

Before the first trial every worker is asked what its lab would use
(netrepro.engine.agree): the run takes one backend, switch, kernel and
implementation for every host, or refuses naming the hosts that differ,
and a worker that joins later checks that setup before its first trial
(and, for --scheduler, that it is not on plain TCP from another machine).

The coordinator (this process) submits one task per path setting, largest
first (netrepro.engine.worker.run_setting: the lab once, verified, then the
setting's trials, as a local run does), and appends each row to the
figure's CSV as it arrives from the run's queue, so progress and resume
work as on one machine.  A worker that dies takes its task with it; Dask
runs the task again on another worker, and there each trial whose row has
come home already is skipped (the run's `done` variable), so a trial that
finished is never run twice, and the coordinator drops a second row for a
trial should one ever come, and any row for a trial it did not hand out.
Rows of several kernels or backends stop the run unless `--allow-mixed`, and
a row of another switch or implementation than agreed stops it.
The manifest lists the workers and the agreed setup.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ground import results
from ground.errors import SetupError, UserError
from ground.progress import Progress
from ground.trials import row_ok
from netrepro.engine import agree
from netrepro.engine.agree import is_loopback, unsafe_workers
from netrepro.engine.local import local_client
from netrepro.engine.ssh_cluster import CONNECT_SECONDS, ssh_client
from netrepro.engine.worker import Job, WorkerFailed, WorkerRefused, run_setting
from netrepro.runner import resume, session, shards
from netrepro.runner.resume import RowSink
from netrepro.runner.sweep import Options
from netrepro.studykit.spec import Figure
from netrepro.studykit.trial import Trial

log = logging.getLogger("netrepro.engine.cluster")

POLL_SECONDS = 0.2
UNWIND_SECONDS = 120  # a stopped worker's lab: its trial's tools ended, its namespaces and links gone
HOST = re.compile(r"(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9._-]+|(?:[A-Za-z0-9._-]+@)?\[[0-9A-Fa-f:.]+\]")
SCHEDULER = re.compile(r"(tcp|tls)://([^\s/]+):(\d+)")


@dataclass(frozen=True)
class Engine:
    """Where the trials run: SSH hosts (Dask's SSH launcher), or a running scheduler."""

    hosts: tuple[str, ...] = ()
    jobs: int = 0  # --jobs N: N labs side by side on this machine (netrepro.engine.local)
    scheduler: str | None = None
    ssh_config: Path | None = None  # an OpenSSH config for the launcher (ports, keys, known hosts)
    allow_mixed: bool = False
    # --scheduler tls://: this client's credentials (none: Dask's configuration, distributed.comm.tls)
    tls_ca_file: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None  # none: the key is in tls_cert
    insecure: bool = False  # --scheduler tcp:// to a host not on loopback, as the user asked

    @classmethod
    def parse(
        cls,
        hosts: str | None,
        scheduler: str | None,
        ssh_config: Path | None = None,
        allow_mixed: bool = False,
        *,
        tls_ca_file: Path | None = None,
        tls_cert: Path | None = None,
        tls_key: Path | None = None,
        insecure: bool = False,
        jobs: int = 0,
    ) -> Engine | None:
        """The engine the options ask for, or None (a local run); UserError naming a bad value.
        `jobs` (2 or more): labs side by side here, as --jobs resolved it."""
        if jobs > 1:
            elsewhere = [
                n for n, v in (("--hosts", hosts), ("--scheduler", scheduler), ("--ssh-config", ssh_config)) if v
            ]
            if elsewhere:
                raise UserError(
                    f"--jobs {jobs} and {', '.join(elsewhere)}: --jobs runs labs side by side on this machine, "
                    f"{elsewhere[0]} on other machines; give one"
                )
            return cls(jobs=jobs, allow_mixed=allow_mixed)
        tls_files = {"--tls-ca-file": tls_ca_file, "--tls-cert": tls_cert, "--tls-key": tls_key}
        given = [name for name, path in tls_files.items() if path is not None]
        if hosts is not None and scheduler is not None:
            raise UserError("--hosts and --scheduler: give one (--hosts starts a cluster, --scheduler uses one)")
        if scheduler is not None:
            found = SCHEDULER.fullmatch(scheduler)
            if not found:
                raise UserError(f"--scheduler {scheduler}: not a scheduler's address; write tls://HOST:PORT")
            scheme, host, _ = found.groups()
            if scheme == "tcp":
                if given:
                    raise UserError(
                        f"--scheduler {scheduler}: {', '.join(given)} are for tls://; "
                        f"write {scheduler.replace('tcp://', 'tls://', 1)}"
                    )
                if not insecure and not is_loopback(host):
                    raise UserError(
                        f"--scheduler {scheduler}: plain tcp:// (no encryption, no authentication) "
                        "only to loopback (127.0.0.1, ::1, localhost); use tls:// with --tls-ca-file, "
                        "--tls-cert, --tls-key, or add --insecure on a trusted network"
                    )
            else:
                if insecure:
                    raise UserError(f"--insecure: --scheduler {scheduler} is tls://; --insecure is for tcp://")
                _check_tls_files(scheduler, tls_ca_file, tls_cert, tls_key)
            return cls(
                scheduler=scheduler,
                allow_mixed=allow_mixed,
                tls_ca_file=tls_ca_file,
                tls_cert=tls_cert,
                tls_key=tls_key,
                insecure=insecure and scheme == "tcp",
            )
        if given or insecure:
            what = ", ".join([*given, *(["--insecure"] if insecure else [])])
            raise UserError(f"{what}: for --scheduler (--hosts makes the run's own certificates, and uses TLS)")
        if hosts is not None:
            names = tuple(h.strip() for h in hosts.split(","))
            bad = [h for h in names if not HOST.fullmatch(h)]
            if bad or not names:
                raise UserError(
                    f"--hosts {hosts}: {', '.join(map(repr, bad)) or 'empty'} is not a host; "
                    "write [user@]host,[user@]host,... (ports and keys: --ssh-config)"
                )
            machines = [h.rsplit("@", 1)[-1] for h in names]
            if len(set(machines)) != len(machines):
                raise UserError(f"--hosts {hosts}: a host named twice; one worker (one lab) per VM")
            if ssh_config is not None and not ssh_config.is_file():
                raise UserError(f"--ssh-config {ssh_config}: no such file")
            return cls(hosts=names, ssh_config=ssh_config, allow_mixed=allow_mixed)
        if ssh_config is not None:
            raise UserError("--ssh-config is for --hosts")
        return None

    def run_trials(self, fig: Figure, todo: list[Trial], opts: Options, sink: RowSink) -> Writer:
        """The trials on this cluster's workers (sweep.Engine)."""
        return run_trials(self, fig, todo, opts, sink)

    def describe(self) -> str:
        if self.jobs:
            return f"{self.jobs} labs side by side on this machine"
        if self.scheduler:
            return f"scheduler {self.scheduler}" + (" (insecure)" if self.insecure else "")
        return f"SSH hosts {', '.join(self.hosts)}"

    def security(self) -> Any:
        """--scheduler: the client's distributed.Security (TLS files, or Dask's configuration), or None (tcp://)."""
        from distributed.security import Security

        assert self.scheduler is not None
        if not self.scheduler.startswith("tls://"):
            return None
        if self.tls_ca_file is None:
            return Security(require_encryption=True)  # Dask's configuration: checked in parse
        return Security(
            require_encryption=True,
            tls_ca_file=str(self.tls_ca_file),
            tls_client_cert=str(self.tls_cert),
            tls_client_key=str(self.tls_key) if self.tls_key is not None else None,
        )


def _check_tls_files(scheduler: str, ca: Path | None, cert: Path | None, key: Path | None) -> None:
    """tls:// needs a CA and a client certificate: given as files, or in Dask's configuration."""
    if ca is None and cert is None and key is None:
        import dask.config

        if not (
            dask.config.get("distributed.comm.tls.ca-file", None)
            and dask.config.get("distributed.comm.tls.client.cert", None)
        ):
            raise UserError(
                f"--scheduler {scheduler}: no TLS credentials; give --tls-ca-file, --tls-cert "
                "(and --tls-key), or set distributed.comm.tls.ca-file and .client.cert in Dask's "
                "configuration"
            )
        return
    if ca is None or cert is None:
        missing = " and ".join(n for n, p in (("--tls-ca-file", ca), ("--tls-cert", cert)) if p is None)
        raise UserError(
            f"--scheduler {scheduler}: {missing} missing; a TLS client needs the cluster's CA "
            "and a certificate it signed (--tls-key: its key, unless in the cert's file)"
        )
    for name, path in (("--tls-ca-file", ca), ("--tls-cert", cert), ("--tls-key", key)):
        if path is not None and not path.is_file():
            raise UserError(f"{name} {path}: no such file")


@contextlib.contextmanager
def connect(engine: Engine) -> Iterator[Any]:
    """A Dask client of the engine's cluster (started here for --hosts and --jobs, and stopped after)."""
    from distributed import Client

    if engine.jobs:
        with local_client(engine.jobs) as client:
            yield client
    elif engine.scheduler:
        try:
            client = Client(engine.scheduler, timeout=CONNECT_SECONDS, security=engine.security())
        except OSError as e:
            raise SetupError(f"--scheduler {engine.scheduler}: cannot connect: {e}") from None
        with client:
            yield client
    else:
        with ssh_client(engine.hosts, engine.ssh_config) as client:
            yield client


class Writer:
    """The one writer of a cluster run: each row that comes home, once, into the figure's CSV.

    It keeps what else came home: the verification of each path, the workers with their rows,
    second rows dropped, and the settings lost with their workers.  Only rows of the trials handed
    out (`expected`: their trial keys; None: any) are taken: a row for another trial, or one not
    shaped as a worker sends it, is dropped and logged.  Rows of a second kernel or backend stop the
    run (UserError) unless `allow_mixed`; the rows before them are kept.
    """

    def __init__(
        self,
        fig: Figure,
        trial_log: RowSink,
        allow_mixed: bool,
        progress: Progress | None = None,
        on_done: Callable[[list[str]], None] | None = None,
        expected: set[str] | None = None,
        launcher: str = "",
        agreed: agree.Agreed | None = None,
    ) -> None:
        self.fig = fig
        self.agreed = agreed  # the setup every host was to run with (netrepro.engine.agree)
        self.launcher = launcher  # where the trials ran, as the engine describes itself
        self.expected = expected
        self.trial_log = trial_log
        self.allow_mixed = allow_mixed
        self.progress = progress
        self.on_done = on_done  # told the keys with a successful row, after each new one
        self.have: set[str] = set()
        self.kinds: dict[tuple[str, str], str] = {}  # (kernel, backend): the host first seen with it
        self.verifications: dict[str, Any] = {}
        self.workers: dict[str, dict[str, Any]] = {}  # address: host, kernel, rows
        self.second_rows_dropped = 0
        self.rows_not_handed_out_dropped = 0
        self.seen: set[str] = set()  # each row taken, as JSON: the same row twice is dropped
        self.counted: set[str] = set()  # the trials the progress bar has counted: an attempt again is not one more
        self.lost: list[str] = []  # settings whose task failed for its workers' deaths

    def take(self, items: list[dict[str, Any]]) -> None:
        """Rows as the workers sent them: {"row", "worker", "host", "kernel"} each."""
        for item in items:
            if not _well_formed(item):
                self.rows_not_handed_out_dropped += 1
                log.warning("%s: a row not as a worker sends one dropped: %.200r", self.fig.full_name, item)
                continue
            sent = {**item["row"], "worker": item["worker"]}  # beside its host: which of the cluster's workers
            key = sent["trial_key"]
            if self.expected is not None and key not in self.expected:
                self.rows_not_handed_out_dropped += 1
                log.warning(
                    "%s: a row for %s, a trial not handed out, dropped (from %s, %s)",
                    self.fig.full_name,
                    key,
                    item["host"],
                    item["worker"],
                )
                continue
            seen = json.dumps(sent, sort_keys=True, default=str)
            if key in self.have or seen in self.seen:
                self.second_rows_dropped += 1
                log.warning("%s: a second row for %s (from %s) dropped", self.fig.full_name, key, item["host"])
                continue
            self.seen.add(seen)
            kind = (str(sent.get("kernel")), str(sent.get("backend")))
            self.kinds.setdefault(kind, item["host"])
            if len(self.kinds) > 1 and not self.allow_mixed:
                listed = "; ".join(f"kernel {k}, backend {b} (first from {h})" for (k, b), h in self.kinds.items())
                raise UserError(
                    f"{self.fig.full_name}: the workers differ: {listed}; the rows before are kept; "
                    "--allow-mixed runs on all the same"
                )
            differs = _not_as_agreed(sent, self.agreed)
            if differs:
                raise UserError(
                    f"{self.fig.full_name}: a row from {item['host']} ({item['worker']}) ran with {differs}; "
                    "one CSV holds one setup; the rows before are kept"
                )
            self.trial_log.append(sent)
            me = self.workers.setdefault(item["worker"], {"host": item["host"], "kernel": item["kernel"], "rows": 0})
            me["rows"] += 1
            if row_ok(sent):
                self.have.add(key)
                if self.on_done is not None:
                    self.on_done(sorted(self.have))
            if self.progress is not None and key not in self.counted:
                self.counted.add(key)
                self.progress.step(f"{item['host']}: {self.fig.x}={sent.get(self.fig.x)}")

    def manifest(self) -> dict[str, Any]:
        """The manifest's `engine`: the cluster, and each worker with the rows it sent."""
        return {
            "launcher": self.launcher,
            "workers": self.workers,
            "second_rows_dropped": self.second_rows_dropped,
            "rows_not_handed_out_dropped": self.rows_not_handed_out_dropped,
            "settings_lost_with_their_workers": self.lost,
            "setup": self.agreed.manifest() if self.agreed is not None else None,
        }


def _not_as_agreed(sent: dict[str, Any], agreed: agree.Agreed | None) -> str:
    """How the switch or implementation of the row a worker `sent` differs from the agreed setup ("" where it does
    not)."""
    if agreed is None:
        return ""
    said = []
    switch = str(sent.get("switch") or "")
    if switch and agreed.switch and switch != agreed.switch:
        said.append(f"switch {switch}, not {agreed.switch}")
    impl, cc = str(sent.get("cc_impl") or ""), str(sent.get("cc") or "")
    wanted = agreed.impls.get(cc, "")
    if impl and wanted and impl != wanted:
        said.append(f"cc_impl {impl}, not {wanted}")
    return "; ".join(said)


def _well_formed(item: Any) -> bool:
    """{"row": {"trial_key": str, ...}, "worker": str, "host": str, "kernel": str}, as run_setting sends."""
    return (
        isinstance(item, dict)
        and isinstance(item.get("row"), dict)
        and isinstance(item["row"].get("trial_key"), str)
        and all(isinstance(item.get(k), str) for k in ("worker", "host", "kernel"))
    )


def _wait_for_lab_slots(client: Any, engine: Engine) -> list[str]:
    """The workers with the resource `lab`: every host's (--hosts), every lab's (--jobs), or at least one
    (--scheduler), within CONNECT_SECONDS; for --scheduler, each of the scheduler's workers on TLS or loopback
    unless --insecure (UserError, before anything is handed out)."""
    wanted = len(engine.hosts) or engine.jobs or 1
    deadline = time.monotonic() + CONNECT_SECONDS
    while True:
        workers = client.scheduler_info(n_workers=-1).get("workers", {})
        labs = sorted(a for a, w in workers.items() if w.get("resources", {}).get("lab"))
        if len(labs) >= wanted or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    if engine.scheduler and not engine.insecure:
        unsafe = unsafe_workers(sorted(workers))
        if unsafe:
            raise UserError(
                f"--scheduler {engine.scheduler}: its workers {', '.join(unsafe)} are reached over plain TCP "
                "(no encryption, no authentication) from another machine, where whoever reaches them runs code "
                "as root; start them with TLS (tls://, --tls-ca-file, --tls-cert, --tls-key), or add --insecure "
                "on a trusted network"
            )
    if len(labs) < wanted:
        if labs:
            raise SetupError(f"{engine.describe()}: {len(labs)} of the {wanted} workers came up: {', '.join(labs)}")
        raise SetupError(
            f"{engine.describe()}: no worker offers the resource lab=1 (start each with "
            "`dask worker ADDRESS --resources lab=1 --nthreads 1`, as root, from this checkout)"
        )
    return labs


def agree_on_setup(
    client: Any, engine: Engine, labs: list[str], fig: Figure, todo: list[Trial], opts: Options, code: str
) -> agree.Agreed:
    """Every lab worker's setup, asked before anything is handed out, and the one the run takes
    (netrepro.engine.agree.decide: a refusal names the hosts that differ)."""
    grid = list({json.dumps(t.setting, sort_keys=True, default=str): t.setting for t in todo}.values())  # once each
    answers = client.run(
        agree.probe, fig, grid, opts.shaper, opts.switch, opts.cc_impl, workers=labs, on_error="return"
    )
    hosts = [agree.HostSetup.of(worker, answers.get(worker, "no answer")) for worker in labs]
    agreed = agree.decide(fig, hosts, code, opts.cc_impl, opts.switch, engine.allow_mixed)
    for note in agreed.notes:
        print(f"  {note}", flush=True)
    return agreed


def run_trials(engine: Engine, fig: Figure, todo: list[Trial], opts: Options, trial_log: RowSink) -> Writer:
    """The todo's trials on the engine's workers, a task per path setting; every row into trial_log.

    --jobs: the labs share this machine's congestion controls, so each netrepro variant they use is
    loaded once, here, and held for all of them (session.hold_algorithms); trials that tune a variant
    differently run in phases, one tuning at a time (session.tuning_phases), the labs of a phase built
    anew."""
    from distributed import Event, Queue, Variable

    slots = engine.jobs or len(engine.hosts) or 1
    phases = session.tuning_phases(todo) if engine.jobs else [todo]
    run = uuid.uuid4().hex[:12]
    code = results.code_fingerprint()
    with connect(engine) as client:
        labs = _wait_for_lab_slots(client, engine)
        agreed = agree_on_setup(client, engine, labs, fig, todo, opts, code)
        if isinstance(trial_log, resume.ResumeGuard):  # a resumed figure: its earlier rows, against the agreed setup
            setup = dataclasses.replace(agreed.setup(), topology=fig.topology.label)
            resume.check_resume(fig, trial_log.csv_path, trial_log.earlier, setup, trial_log.columns)
        rows = Queue(f"netrepro-rows-{run}")  # every row, on its way to the one writer: here
        done = Variable(f"netrepro-done-{run}")  # the keys with a successful row here: a worker skips them
        stop = Event(f"netrepro-stop-{run}")  # set: every worker stops and unwinds its lab
        done.set([])
        every = Job(
            figure=fig,
            todo=[],
            quick=opts.quick,
            overrides=dict(opts.overrides),
            seed=opts.seed,
            strict=opts.strict,
            code=code,
            rows=rows.name,
            done=done.name,
            stop=stop.name,
            **agreed.job_options(opts.shaper, opts.switch),
            expected=agreed.expected(),
            plain_tcp_ok=engine.insecure or not engine.scheduler,
        )
        settings = len({shards.setting(t.setting) for t in todo})
        # a task per path setting; a setting split where there are more labs than settings (shards.tasks)
        dealt = [shards.tasks(phase, slots) for phase in phases]
        in_phases = f" in {len(phases)} phases, one tuning each" if len(phases) > 1 else ""
        print(
            f"  {engine.describe()}: {sum(map(len, dealt))} labs for {settings} path settings{in_phases}, "
            f"{len(todo)} trials",
            flush=True,
        )
        progress = Progress(len(todo), fig.full_name)
        writer = Writer(
            fig,
            trial_log,
            engine.allow_mixed,
            progress,
            on_done=done.set,
            expected={t.key for t in todo},
            launcher=engine.describe(),
            agreed=agreed,
        )
        try:
            for n, (phase, tasks) in enumerate(zip(phases, dealt, strict=True)):
                hold = session.hold_algorithms(phase, agreed.cc_impl) if engine.jobs else None
                with hold or contextlib.nullcontext({}) as held:
                    job = dataclasses.replace(every, held=held)
                    _run_tasks(client, job, tasks, f"{fig.name}-{n}-{run}", stop, rows, writer)
        finally:
            progress.close()
            stop.clear()  # the run's queue, variable and event leave the scheduler with it
            done.delete()
            rows.close()
    return writer


def _run_tasks(
    client: Any,
    every: Job,
    tasks: list[list[Trial]],
    prefix: str,
    stop: Any,
    rows: Any,
    writer: Writer,
) -> None:
    """Each task on a lab slot of the cluster, largest first; every row to the writer as it comes; until
    all have ended, or else (an error, an interrupt) until the workers have stopped and undone their labs."""
    from distributed.client import wait

    futures = {}
    for n, task in enumerate(tasks):  # largest first
        key = f"netrepro-{prefix}-{n}"
        future = client.submit(
            run_setting,
            dataclasses.replace(every, todo=task),
            key=key,
            resources={"lab": 1},
            pure=False,
            retries=0,
        )
        futures[future] = _task_name(task, tasks)
    try:
        pending = set(futures)
        while pending:
            writer.take(rows.get(batch=True))
            finished = {f for f in pending if f.done()}
            if not finished:
                with contextlib.suppress(TimeoutError):  # distributed's wait raises it when none ended
                    wait(list(pending), timeout=POLL_SECONDS, return_when="FIRST_COMPLETED")
                continue
            writer.take(rows.get(batch=True))  # a task's last rows come before its end
            for f in finished:
                pending.discard(f)
                _settle(f, futures[f], every.figure, writer)
    finally:
        running = [f for f in futures if not f.done()]
        if running:  # an error above, or an interrupt: the workers stop, unwind their labs, and then we
            print(f"  stopping {len(running)} workers' trials; their labs are being undone", flush=True)
            stop.set()
            with contextlib.suppress(TimeoutError):
                wait(running, timeout=UNWIND_SECONDS)
        with contextlib.suppress(Exception):
            writer.take(rows.get(batch=True))


def _task_name(task: list[Trial], tasks: list[list[Trial]]) -> str:
    """A task as its path setting, and which part of it where the setting is split."""
    name = shards.setting(task[0].setting)
    parts = [t for t in tasks if shards.setting(t[0].setting) == name]
    return name if len(parts) == 1 else f"{name} (part {parts.index(task) + 1} of {len(parts)})"


def _settle(future: Any, setting: str, fig: Figure, writer: Writer) -> None:
    """A setting's task ended: its verifications kept; a refusal or a worker's failure stops the run."""
    from distributed.scheduler import KilledWorker

    if future.status == "finished":
        result = future.result()
        writer.verifications.update(result["verifications"])
        writer.workers.setdefault(result["worker"], {"host": result["host"], "kernel": result["kernel"], "rows": 0})
        return
    error = future.exception()
    if isinstance(error, WorkerRefused):
        raise WorkerRefused(str(error))
    if isinstance(error, KilledWorker):
        # Dask ran it on worker after worker, and each died: its trials not yet home stay to run
        writer.lost.append(setting)
        log.warning("%s: the workers running %s died (%s); its trials left are not run", fig.full_name, setting, error)
        return
    if isinstance(error, WorkerFailed):
        raise WorkerFailed(str(error))
    raise SetupError(f"{fig.full_name}: the task of {setting} failed: {type(error).__name__}: {error}")
