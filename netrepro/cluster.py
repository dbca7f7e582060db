"""A figure's trials on a Dask cluster: one lab per worker, the coordinator the only writer.

`run.sh FIG --hosts vm1,vm2` starts a cluster with Dask's SSH launcher
(the scheduler on the first VM, one worker on each, as root, one lab slot
each); `--scheduler tcp://HOST:PORT` uses a running cluster, whose workers
offer the resource `lab=1` (`dask worker --resources lab=1 --nthreads 1`,
started by hand, or under Slurm or PBS through dask-jobqueue).

The coordinator (this process) submits one task per path setting, largest
first (netrepro.worker.run_setting: the lab once, verified, then the
setting's trials, as a local run does), and appends each row to the
figure's CSV as it arrives from the run's queue, so progress and resume
work as on one machine.  A worker that dies takes its task with it; Dask
runs the task again on another worker, and there each trial whose row has
come home already is skipped (the run's `done` variable), so a trial that
finished is never run twice, and the coordinator drops a second row for a
trial should one ever come.  Rows of several kernels or backends stop the
run unless `--allow-mixed`.  The manifest lists the workers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import shlex
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ground import results
from ground.errors import SetupError, UserError
from ground.progress import Progress
from ground.results import REPO
from netrepro import shards
from netrepro.spec import Figure, Params
from netrepro.sweep import Options, RowSink
from netrepro.worker import Job, WorkerFailed, WorkerRefused, run_setting

log = logging.getLogger("netrepro.cluster")

CONNECT_SECONDS = 60  # the scheduler, and a first worker with a lab slot
POLL_SECONDS = 0.2
SCHEDULER_PORT = 8786  # --hosts: Dask's default
UNWIND_SECONDS = 120  # a stopped worker's lab: its trial's tools ended, its namespaces and links gone
HOST = re.compile(r"(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9._-]+|(?:[A-Za-z0-9._-]+@)?\[[0-9A-Fa-f:.]+\]")
SCHEDULER = re.compile(r"(tcp|tls)://[^\s/]+:\d+")


@dataclass(frozen=True)
class Engine:
    """Where the trials run: SSH hosts (Dask's SSH launcher), or a running scheduler."""

    hosts: tuple[str, ...] = ()
    scheduler: str | None = None
    ssh_config: Path | None = None  # an OpenSSH config for the launcher (ports, keys, known hosts)
    allow_mixed: bool = False

    @classmethod
    def parse(
        cls, hosts: str | None, scheduler: str | None, ssh_config: Path | None = None, allow_mixed: bool = False
    ) -> Engine | None:
        """The engine the options ask for, or None (a local run); UserError naming a bad value."""
        if hosts is not None and scheduler is not None:
            raise UserError("--hosts and --scheduler: give one (--hosts starts a cluster, --scheduler uses one)")
        if scheduler is not None:
            if not SCHEDULER.fullmatch(scheduler):
                raise UserError(f"--scheduler {scheduler}: not a scheduler's address; write tcp://HOST:PORT")
            return cls(scheduler=scheduler, allow_mixed=allow_mixed)
        if hosts is not None:
            names = tuple(h.strip() for h in hosts.split(","))
            bad = [h for h in names if not HOST.fullmatch(h)]
            if bad or not names:
                raise UserError(f"--hosts {hosts}: {', '.join(map(repr, bad)) or 'empty'} is not a host; "
                                "write [user@]host,[user@]host,... (ports and keys: --ssh-config)")  # fmt: skip
            machines = [h.rsplit("@", 1)[-1] for h in names]
            if len(set(machines)) != len(machines):
                raise UserError(f"--hosts {hosts}: a host named twice; one worker (one lab) per VM")
            if ssh_config is not None and not ssh_config.is_file():
                raise UserError(f"--ssh-config {ssh_config}: no such file")
            return cls(hosts=names, ssh_config=ssh_config, allow_mixed=allow_mixed)
        if ssh_config is not None:
            raise UserError("--ssh-config is for --hosts")
        return None

    def describe(self) -> str:
        return f"scheduler {self.scheduler}" if self.scheduler else f"SSH hosts {', '.join(self.hosts)}"


@contextlib.contextmanager
def connect(engine: Engine) -> Iterator[Any]:
    """A Dask client of the engine's cluster (started here for --hosts, and stopped after)."""
    from distributed import Client

    if engine.scheduler:
        try:
            client = Client(engine.scheduler, timeout=CONNECT_SECONDS)
        except OSError as e:
            raise SetupError(f"--scheduler {engine.scheduler}: cannot connect: {e}") from None
        with client:
            yield client
        return
    from distributed import SSHCluster

    user_host = [h.rsplit("@", 1) for h in engine.hosts]
    names = [p[-1] for p in user_host]
    # asyncssh's defaults (~/.ssh/config, known_hosts, keys, the agent), and the user and config given
    connect_options: list[dict[str, Any]] = [{} for _ in range(len(names) + 1)]
    for options, parts in zip(connect_options, [user_host[0], *user_host], strict=True):
        if len(parts) == 2:
            options["username"] = parts[0]
        if engine.ssh_config is not None:
            options["config"] = [str(engine.ssh_config)]
    # The workers run the python of a checkout at this one's path.  Dask's launcher runs
    # `{remote_python} -m ...` through the remote shell: quoted here, and with Dask's scratch files
    # in that checkout's .venv, not in the VM's /tmp.
    python = shlex.quote(str(REPO / ".venv" / "bin" / "python"))
    remote_python = f"env DASK_TEMPORARY_DIRECTORY={shlex.quote(str(REPO / '.venv' / 'dask'))} {python}"
    try:
        cluster = SSHCluster(
            [names[0], *names],  # Dask's convention: the first host runs the scheduler
            connect_options=connect_options,
            worker_options={"nthreads": 1, "resources": {"lab": 1}},
            # Dask's own port: the one to open between the VMs (and to the coordinator)
            scheduler_options={"port": SCHEDULER_PORT, "dashboard_address": None},
            remote_python=remote_python,
        )
    except Exception as e:  # asyncssh's and Dask's own errors: a host that cannot be reached or started
        raise SetupError(f"--hosts {','.join(engine.hosts)}: cannot start the cluster: {type(e).__name__}: {e}") from e
    with cluster, Client(cluster, timeout=CONNECT_SECONDS) as client:
        yield client


class Writer:
    """The one writer of a cluster run: each row that comes home, once, into the figure's CSV.

    It keeps what else came home: the verification of each path, the workers with their rows,
    second rows dropped, and the settings lost with their workers.  Rows of a second kernel or
    backend stop the run (UserError) unless `allow_mixed`; the rows before them are kept.
    """

    def __init__(
        self,
        fig: Figure,
        trial_log: RowSink,
        allow_mixed: bool,
        progress: Progress | None = None,
        on_done: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.fig = fig
        self.trial_log = trial_log
        self.allow_mixed = allow_mixed
        self.progress = progress
        self.on_done = on_done  # told the keys with a successful row, after each new one
        self.have: set[str] = set()
        self.kinds: dict[tuple[str, str], str] = {}  # (kernel, backend): the host first seen with it
        self.verifications: dict[str, Any] = {}
        self.workers: dict[str, dict[str, Any]] = {}  # address: host, kernel, rows
        self.second_rows_dropped = 0
        self.lost: list[str] = []  # settings whose task failed for its workers' deaths

    def take(self, items: list[dict[str, Any]]) -> None:
        """Rows as the workers sent them: {"row", "worker", "host", "kernel"} each."""
        for item in items:
            row = {**item["row"], "worker": item["worker"]}  # beside its host: which of the cluster's workers
            key = row["trial_key"]
            if key in self.have:
                self.second_rows_dropped += 1
                log.warning("%s: a second row for %s (from %s) dropped", self.fig.full_name, key, item["host"])
                continue
            kind = (str(row.get("kernel")), str(row.get("backend")))
            self.kinds.setdefault(kind, item["host"])
            if len(self.kinds) > 1 and not self.allow_mixed:
                listed = "; ".join(f"kernel {k}, backend {b} (first from {h})" for (k, b), h in self.kinds.items())
                raise UserError(f"{self.fig.full_name}: the workers differ: {listed}; the rows before are kept; "
                                "--allow-mixed runs on all the same")  # fmt: skip
            self.trial_log.append(row)
            me = self.workers.setdefault(item["worker"], {"host": item["host"], "kernel": item["kernel"], "rows": 0})
            me["rows"] += 1
            if row.get("status") == "ok":
                self.have.add(key)
                if self.on_done is not None:
                    self.on_done(sorted(self.have))
            if self.progress is not None:
                self.progress.step(f"{item['host']}: {self.fig.x}={row.get(self.fig.x)}")

    def describe(self, engine: Engine) -> dict[str, Any]:
        """The manifest's `engine`: the cluster, and each worker with the rows it sent."""
        return {
            "launcher": engine.describe(),
            "workers": self.workers,
            "second_rows_dropped": self.second_rows_dropped,
            "settings_lost_with_their_workers": self.lost,
        }


def _wait_for_lab_slots(client: Any, engine: Engine) -> None:
    """At least one worker with the resource `lab`, within CONNECT_SECONDS."""
    deadline = time.monotonic() + CONNECT_SECONDS
    while time.monotonic() < deadline:
        workers = client.scheduler_info(n_workers=-1).get("workers", {})
        if any(w.get("resources", {}).get("lab") for w in workers.values()):
            return
        time.sleep(0.5)
    raise SetupError(f"{engine.describe()}: no worker offers the resource lab=1 (start each with "
                     "`dask worker ADDRESS --resources lab=1 --nthreads 1`, as root, from this checkout)")  # fmt: skip


def run_trials(
    engine: Engine, fig: Figure, todo: list[tuple[Params, int]], opts: Options, trial_log: RowSink
) -> Writer:
    """The todo's trials on the engine's workers, a task per path setting; every row into trial_log."""
    from distributed import Event, Queue, Variable
    from distributed.client import wait

    groups: dict[str, list[tuple[Params, int]]] = {}
    for params, index in todo:
        groups.setdefault(shards.setting(params), []).append((params, index))
    run = uuid.uuid4().hex[:12]
    with connect(engine) as client:
        _wait_for_lab_slots(client, engine)
        rows = Queue(f"netrepro-rows-{run}")  # every row, on its way to the one writer: here
        done = Variable(f"netrepro-done-{run}")  # the keys with a successful row here: a worker skips them
        stop = Event(f"netrepro-stop-{run}")  # set: every worker stops and unwinds its lab
        done.set([])
        every = Job(
            figure=fig, todo=[], quick=opts.quick, overrides=dict(opts.overrides), seed=opts.seed,
            strict=opts.strict, shaper=opts.shaper, switch=opts.switch, cc_impl=opts.cc_impl,
            code=results.code_fingerprint(), rows=rows.name, done=done.name, stop=stop.name,
        )  # fmt: skip
        futures = {}
        for n, name in enumerate(sorted(groups, key=lambda s: (-len(groups[s]), s))):
            job = dataclasses.replace(every, todo=groups[name])
            key = f"netrepro-{fig.name}-{n}-{run}"
            futures[client.submit(run_setting, job, key=key, resources={"lab": 1}, pure=False, retries=0)] = name
        print(f"  {engine.describe()}: {len(groups)} path settings, {len(todo)} trials", flush=True)
        progress = Progress(len(todo), fig.full_name)
        writer = Writer(fig, trial_log, engine.allow_mixed, progress, on_done=done.set)
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
                    _settle(f, futures[f], fig, writer)
        finally:
            progress.close()
            running = [f for f in futures if not f.done()]
            if running:  # an error above, or an interrupt: the workers stop, unwind their labs, and then we
                print(f"  stopping {len(running)} workers' trials; their labs are being undone", flush=True)
                stop.set()
                with contextlib.suppress(TimeoutError):
                    wait(running, timeout=UNWIND_SECONDS)
            with contextlib.suppress(Exception):
                writer.take(rows.get(batch=True))
            stop.clear()  # the run's queue, variable and event leave the scheduler with it
            done.delete()
            rows.close()
    return writer


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
