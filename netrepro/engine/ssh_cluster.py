"""A Dask cluster this process starts over SSH (`run.sh FIG --hosts vm1,vm2`), and ends with it.

The scheduler runs on the first host and a nanny with one worker (one lab
slot) on each, each started here as `python -m netrepro.engine.node` over an
SSH session of its own (Dask's SpecCluster drives them; Dask's own SSH
launcher would put this process's whole Dask configuration on the remote
command line, readable by any user in `ps`).  The cluster is the run's own:
every connection is TLS with certificates made for the run (netrepro.engine.tls:
a CA of the run, whose key is never kept, signs one certificate for the
scheduler, workers and nannies and one for this process), so only holders of
the run's certificates can connect.  The certificates and keys are never on
a disk: this process keeps its own in memory files, and each host's node
gets its copy on the session's stdin and keeps it in memory files of its
own, gone when it ends.  The scheduler, each worker and each nanny (and the
HTTP servers beside them) listen only on the address this process reached
their host on over SSH, never on every interface, and they end when this
process does: a node ends when its session's stdin does; failing that, the
scheduler's idle timeout and the workers' death timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ground.errors import SetupError
from ground.results import REPO
from netrepro.engine import tls
from netrepro.engine.node import job_line

log = logging.getLogger("netrepro.engine.ssh_cluster")

CONNECT_SECONDS = 60  # an SSH connection and a node's start; the scheduler, and a first worker with a lab slot
SCHEDULER_PORT = 8786  # Dask's default
# The launched processes' own ends, should their SSH sessions outlive this process.  The scheduler
# closes (and closes its workers) once it has had no task for IDLE_SECONDS: from this process's
# death, whose tasks go with its connection.  It has no task either while a healthy run starts, so it
# must outlast every wait before the first task: the workers' start (CONNECT_SECONDS), this client's
# connection (CONNECT_SECONDS), the wait for a lab slot (CONNECT_SECONDS) and the hosts' setup probe
# (netrepro.engine.agree.PROBE_SECONDS), with room to spare.  A worker or nanny that has lost its
# scheduler closes after DEATH_SECONDS.
IDLE_SECONDS = 300
DEATH_SECONDS = 50

# Where a host keeps Dask's scratch files: its checkout's .venv, not the host's /tmp.
REMOTE_DIR = REPO / ".venv" / "dask"
REMOTE_CERTIFICATE_PREFIX = "netrepro-tls-"  # where runs before the memory files kept a host's copy


def remote_certificate_copies() -> set[str]:
    """Copies of runs' certificates on this host's disk (none: they live in memory now; older runs' kept
    theirs in .venv/dask for as long as their sessions lasted)."""
    return {p.name for p in REMOTE_DIR.glob(f"{REMOTE_CERTIFICATE_PREFIX}*")} if REMOTE_DIR.is_dir() else set()


def node_command() -> str:
    """The remote command of a node: the python of a checkout at this one's path, and nothing to read in `ps`."""
    return shlex.join([str(REPO / ".venv" / "bin" / "python"), "-m", "netrepro.engine.node"])


def _process_interface() -> type:
    from distributed.deploy.spec import ProcessInterface

    return ProcessInterface  # type: ignore[no-any-return]


class _Node:
    """A scheduler or a nanny on a host, over an SSH session of its own (a Dask ProcessInterface: see
    `node_class`).  Its job goes on the session's stdin, its address comes back on stdout, its log (stderr)
    goes to this process's log; closing the session's stdin ends it."""

    role = ""

    def __init__(
        self,
        scheduler: str | None = None,
        *,
        host: str,
        connect_options: dict[str, Any],
        kwargs: dict[str, Any],
        files: dict[str, bytes],
        name: Any = None,
    ) -> None:
        super().__init__()  # ProcessInterface's
        self.scheduler = scheduler
        self.host = host
        self.connect_options = connect_options
        self.kwargs = kwargs
        self.files = files
        self.name = name
        self.connection: Any = None
        self.proc: Any = None
        self.drain: asyncio.Future[None] | None = None

    async def start(self) -> None:
        import asyncssh

        try:
            self.connection = await asyncio.wait_for(
                asyncssh.connect(self.host, **self.connect_options), CONNECT_SECONDS
            )
        except (OSError, asyncssh.Error, asyncio.TimeoutError) as e:
            raise SetupError(f"--hosts: {self.host}: cannot connect: {type(e).__name__}: {e}") from None
        self.proc = await self.connection.create_process(node_command())
        self.proc.stdin.write(job_line(self.role, self.scheduler, self.kwargs, self.files, self.host, str(REMOTE_DIR)))
        ready = ""
        with contextlib.suppress(asyncio.TimeoutError):
            for _ in range(100):  # past whatever a login script prints
                ready = await asyncio.wait_for(self.proc.stdout.readline(), CONNECT_SECONDS)
                if not ready or ready.startswith("ready "):
                    break
        if not ready.startswith("ready "):
            said = await _drain(self.proc.stderr)
            raise SetupError(
                f"--hosts: {self.host}: the {self.role} did not start: {said.strip()[-2000:] or 'no message'}"
            )
        self.address = ready.split()[1]
        self.drain = asyncio.ensure_future(_log_lines(self.proc.stderr, f"{self.host} {self.role}"))
        await super().start()  # type: ignore[misc]

    async def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.write_eof()  # the node's end
                await asyncio.wait_for(self.proc.wait_closed(), 30)
            except Exception as e:  # a session already gone, or one that does not end: the connection goes anyway
                log.warning(
                    "%s %s: its session did not end cleanly (%r): its connection is closed", self.host, self.role, e
                )
        if self.connection is not None:
            self.connection.close()
            try:
                await self.connection.wait_closed()
            except Exception as e:
                log.warning("%s %s: its SSH connection did not close cleanly (%r)", self.host, self.role, e)
        if self.drain is not None:
            self.drain.cancel()
        await super().close()  # type: ignore[misc]


def node_class(role: str) -> type:
    """A Dask ProcessInterface (a class SpecCluster takes) of a node with `role` (scheduler or nanny)."""
    return type(f"Remote{role.title()}", (_Node, _process_interface()), {"role": role})


async def _drain(stream: Any) -> str:
    """What a stream holds within 5 s, for a message; "" (and a debug line saying why) where it cannot be read."""
    try:
        return str(await asyncio.wait_for(stream.read(), 5))
    except Exception as e:
        log.debug("a node's stream could not be read for the message (%r)", e)
        return ""


async def _log_lines(stream: Any, where: str) -> None:
    """A node's log, read as it comes (an unread SSH channel would stop the node once its window fills)."""
    try:
        async for line in stream:
            log.debug("%s: %s", where, str(line).rstrip())
    except Exception as e:  # the session ended under it: what the node said is in the lines before
        log.debug("%s: its log ended (%r)", where, e)


@contextlib.contextmanager
def ssh_client(hosts: tuple[str, ...], ssh_config: Path | None) -> Iterator[Any]:
    """A Dask client of a cluster started here on `hosts` ([user@]host each), stopped when it closes."""
    from distributed import Client

    user_host = [h.rsplit("@", 1) for h in hosts]
    # asyncssh's defaults (~/.ssh/config, known_hosts, keys, the agent), and the user and config given
    connect_options: list[dict[str, Any]] = [{} for _ in hosts]
    for options, parts in zip(connect_options, user_host, strict=True):
        if len(parts) == 2:
            options["username"] = parts[0]
        if ssh_config is not None:
            options["config"] = [str(ssh_config)]
    made = tls.make_certificates(secrets.token_hex(6))
    with tls.in_memory(made.client_files()) as mine:
        security = tls.security(mine, client=True)
        with (
            _launch(hosts, connect_options, made.node_files(), security) as cluster,
            Client(cluster, timeout=CONNECT_SECONDS, security=security) as client,
        ):
            yield client


@contextlib.contextmanager
def _launch(
    hosts: tuple[str, ...], connect_options: list[dict[str, Any]], files: dict[str, bytes], security: Any
) -> Iterator[Any]:
    """The scheduler on the first host, a nanny and its worker on each, as nodes (netrepro.engine.node)
    that Dask's SpecCluster drives: TLS only, each bound to its host's address."""
    from distributed import SpecCluster

    names = [h.rsplit("@", 1)[-1] for h in hosts]
    scheduler = {
        "cls": node_class("scheduler"),
        "options": {
            "host": names[0],
            "connect_options": connect_options[0],
            # Dask's own port: the one to open between the VMs (and to the coordinator)
            "kwargs": {
                "protocol": "tls",
                "port": SCHEDULER_PORT,
                "dashboard": False,
                "dashboard_address": None,  # its HTTP server (health only) on the node's address
                "idle_timeout": IDLE_SECONDS,
            },
            "files": files,
        },
    }
    workers = {
        i: {
            "cls": node_class("nanny"),
            "options": {
                "host": name,
                "connect_options": options,
                "kwargs": {
                    "protocol": "tls",
                    "nthreads": 1,
                    "resources": {"lab": 1},
                    "death_timeout": DEATH_SECONDS,
                    "dashboard": False,
                    "dashboard_address": None,  # the worker's HTTP server (health only) on the node's address
                },
                "files": files,
            },
        }
        for i, (name, options) in enumerate(zip(names, connect_options, strict=True))
    }
    try:
        cluster = SpecCluster(workers, scheduler, name="SSHCluster", security=security)
    except Exception as e:  # asyncssh's and Dask's own errors: a host that cannot be reached or started
        if isinstance(e, SetupError):
            raise
        raise SetupError(f"--hosts {','.join(hosts)}: cannot start the cluster: {type(e).__name__}: {e}") from e
    with cluster:
        yield cluster
