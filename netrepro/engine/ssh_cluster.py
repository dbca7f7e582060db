"""A Dask cluster this process starts over SSH (`run.sh FIG --hosts vm1,vm2`), and ends with it.

Dask's SSH launcher puts the scheduler on the first host and a nanny with
one worker (one lab slot) on each.  The cluster is the run's own: every
connection is TLS with certificates made for the run (netrepro.engine.tls:
a CA of the run, whose key is never written, signs one certificate for the
scheduler, workers and nannies and one for this process), so only holders
of the run's certificates can connect.  Each host keeps its copy of the
node certificate only while this process's SSH session to it lasts
(`holder_script`).  The scheduler, each worker and each nanny listen only
on the address this process reached their host on over SSH, never on
every interface, and they end when this process does: a wrapper ends each
when its SSH session closes (ENDS_WITH_SESSION); failing that, the
scheduler's idle timeout and the workers' death timeout.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import secrets
import shlex
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ground.errors import SetupError
from ground.results import REPO
from netrepro.engine.tls import HTTP_ROUTES, RunCertificates, make_certificates

CONNECT_SECONDS = 60  # the scheduler, and a first worker with a lab slot
SCHEDULER_PORT = 8786  # Dask's default
# The launched processes' own ends, should their SSH sessions outlive this process.  The scheduler
# closes (and closes its workers) once it has had no task for IDLE_SECONDS: from this process's
# death, whose tasks go with its connection; a worker or nanny that has lost its scheduler closes
# after DEATH_SECONDS.  Starting the workers must take less than IDLE_SECONDS.
IDLE_SECONDS = 50
DEATH_SECONDS = 50

# Where a host keeps Dask's scratch files and its copy of the run's certificate (netrepro-tls-RUN): its
# checkout's .venv, not the host's /tmp.
REMOTE_DIR = REPO / ".venv" / "dask"
REMOTE_CERTIFICATE_PREFIX = "netrepro-tls-"


def remote_certificate_copies() -> set[str]:
    """The copies of runs' certificates this host keeps now (each removed when its run's session ends)."""
    return {p.name for p in REMOTE_DIR.glob(f"{REMOTE_CERTIFICATE_PREFIX}*")} if REMOTE_DIR.is_dir() else set()


# A launched process without a terminal outlives its SSH session (sshd leaves it running, and Dask's
# processes ignore their closed stdin): run as `sh -c ENDS_WITH_SESSION PROGRAM ARGS...`, it is sent
# SIGTERM (Dask's processes then close: the scheduler its workers, a nanny its worker) as soon as
# the session's stdin ends: when this process closes the connection, or dies and the kernel closes it.
ENDS_WITH_SESSION = '"$0" "$@" & p=$!; cat > /dev/null; kill -TERM "$p" 2>/dev/null; wait "$p"'

# The files a host of the run gets, in this order, each as one base64 line on the session's stdin.
REMOTE_FILES = ("ca.crt", "node.crt", "node.key")


def holder_script(directory: str) -> str:
    """The shell script that keeps the run's node certificate on a host while this process's SSH
    session to it lasts: it makes `directory` (0700; it must not exist), writes the files read from
    stdin (0600) and says `ready` and the session's SSH_CONNECTION; at the end of its stdin (this
    process closed it, or died) it removes them.  No key is on any command line: printf is the
    shell's own.  The parent (the checkout's .venv/dask) is made if missing, the checkout never."""
    q = shlex.quote(directory)
    parent = shlex.quote(str(Path(directory).parent))
    files = " ".join(REMOTE_FILES)
    return (
        f'umask 077; d={q}; {{ [ -d {parent} ] || mkdir {parent}; }} && mkdir -m 700 "$d" || exit 3\n'
        "trap 'rm -rf \"$d\"' EXIT\ntrap 'exit 1' HUP INT TERM PIPE\n"
        f"for f in {files}; do IFS= read -r line || exit 4; "
        'printf \'%s\' "$line" | base64 -d > "$d/$f" || exit 5; done\n'
        'echo "ready $SSH_CONNECTION"\n'
        "cat > /dev/null\n"
    )


def bind_address(ready: str, fallback: str) -> str:
    """The address to listen on, from a holder's `ready CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT`:
    the host's own address that this process reached it on (bracketed if IPv6); else `fallback`."""
    fields = ready.split()
    if len(fields) != 5 or fields[0] != "ready":
        return fallback
    address = fields[3].split("%", 1)[0]  # no IPv6 zone
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return fallback
    return f"[{ip}]" if ip.version == 6 else str(ip)


class RemoteCertificates:
    """The run's node certificate on each SSH host, for as long as this process is connected to it.

    A session per host (asyncssh, in a thread of its own with its own event loop) runs
    `holder_script`; entering returns each host's bind address; leaving ends the sessions, and each
    host removes its copy.  Should this process die, its sessions close and the hosts remove them too.
    """

    def __init__(
        self, hosts: list[str], connect_options: list[dict[str, Any]], directory: str, files: dict[str, bytes]
    ) -> None:
        self.hosts = hosts
        self.connect_options = connect_options
        self.directory = directory
        self.lines = "".join(base64.b64encode(files[name]).decode() + "\n" for name in REMOTE_FILES)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="netrepro-tls-holders", daemon=True)
        self.sessions: list[tuple[Any, Any]] = []  # (connection, process)

    def __enter__(self) -> dict[str, str]:
        self.thread.start()
        try:
            try:
                return asyncio.run_coroutine_threadsafe(self._open(), self.loop).result(CONNECT_SECONDS * 2)
            except TimeoutError:
                raise SetupError(f"--hosts {','.join(self.hosts)}: no answer within {CONNECT_SECONDS * 2} s") from None
        except BaseException:
            self.__exit__()
            raise

    async def _open(self) -> dict[str, str]:
        import asyncssh

        async def one(host: str, options: dict[str, Any]) -> str:
            try:
                conn = await asyncio.wait_for(asyncssh.connect(host, **options), CONNECT_SECONDS)
            except (OSError, asyncssh.Error, asyncio.TimeoutError) as e:
                raise SetupError(f"--hosts: {host}: cannot connect: {type(e).__name__}: {e}") from None
            process: Any = await conn.create_process("sh -c " + shlex.quote(holder_script(self.directory)))
            self.sessions.append((conn, process))
            process.stdin.write(self.lines)
            ready = ""
            with contextlib.suppress(asyncio.TimeoutError):
                for _ in range(100):  # past whatever a login script prints
                    ready = await asyncio.wait_for(process.stdout.readline(), CONNECT_SECONDS)
                    if not ready or ready.startswith("ready"):
                        break
            if not ready.startswith("ready"):
                said = await _drain(process.stderr)
                raise SetupError(
                    f"--hosts: {host}: could not place the run's certificate in {self.directory} "
                    f"(exit {process.exit_status}): {said.strip() or 'no message'}"
                )
            return bind_address(ready, host)

        names = [h.rsplit("@", 1)[-1] for h in self.hosts]
        found = await asyncio.gather(*(one(n, o) for n, o in zip(names, self.connect_options, strict=True)))
        return dict(zip(self.hosts, found, strict=True))

    async def _close(self) -> None:
        for _, process in self.sessions:
            with contextlib.suppress(Exception):
                process.stdin.write_eof()
        for conn, process in self.sessions:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait_closed(), 30)
            conn.close()
            with contextlib.suppress(Exception):
                await conn.wait_closed()
        self.sessions.clear()

    def __exit__(self, *exc: object) -> None:
        if not self.thread.is_alive():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._close(), self.loop).result(60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        if not self.thread.is_alive():
            self.loop.close()


async def _drain(stream: Any) -> str:
    try:
        return str(await asyncio.wait_for(stream.read(), 5))
    except Exception:
        return ""


@contextlib.contextmanager
def ssh_client(hosts: tuple[str, ...], ssh_config: Path | None) -> Iterator[Any]:
    """A Dask client of a cluster started here on `hosts` ([user@]host each), stopped when it closes."""
    from distributed import Client

    from ground.ledger import Ledger

    user_host = [h.rsplit("@", 1) for h in hosts]
    # asyncssh's defaults (~/.ssh/config, known_hosts, keys, the agent), and the user and config given
    connect_options: list[dict[str, Any]] = [{} for _ in hosts]
    for options, parts in zip(connect_options, user_host, strict=True):
        if len(parts) == 2:
            options["username"] = parts[0]
        if ssh_config is not None:
            options["config"] = [str(ssh_config)]
    run = secrets.token_hex(6)
    # The run's certificates: here in a private directory the run's ledger removes (`run.sh clean`,
    # should this process die), and on each host (the checkout's .venv/dask, beside Dask's scratch
    # files) for as long as this process's SSH session to it lasts.
    with Ledger(contain=False) as ledger:
        made = make_certificates(ledger.temp_dir("netrepro-tls-"), run)
        remote = str(REMOTE_DIR / f"{REMOTE_CERTIFICATE_PREFIX}{run}")
        files = {name: (made.directory / name).read_bytes() for name in REMOTE_FILES}
        with (
            RemoteCertificates(list(hosts), connect_options, remote, files) as binds,
            _launch(hosts, connect_options, binds, remote, made) as cluster,
            Client(cluster, timeout=CONNECT_SECONDS, security=made.client_security()) as client,
        ):
            yield client


@contextlib.contextmanager
def _launch(
    hosts: tuple[str, ...],
    connect_options: list[dict[str, Any]],
    binds: dict[str, str],
    remote: str,
    made: RunCertificates,
) -> Iterator[Any]:
    """Dask's SSH launcher (its SSHCluster, but each worker given its own address): the scheduler on
    the first host, a nanny and its worker on each; TLS only, each bound to its host's address."""
    import dask.config
    from distributed import SpecCluster
    from distributed.deploy.ssh import Scheduler as SSHScheduler
    from distributed.deploy.ssh import Worker as SSHWorker

    # The workers run the python of a checkout at this one's path.  Dask's launcher runs
    # `{remote_python} -m ...` through the remote shell: quoted here, with Dask's scratch files
    # in that checkout's .venv, not in the VM's /tmp, and ended with the SSH session (ENDS_WITH_SESSION).
    python = shlex.quote(str(REPO / ".venv" / "bin" / "python"))
    scratch = shlex.quote(str(REMOTE_DIR))
    remote_python = f"env DASK_TEMPORARY_DIRECTORY={scratch} sh -c {shlex.quote(ENDS_WITH_SESSION)} {python}"
    names = [h.rsplit("@", 1)[-1] for h in hosts]
    first = hosts[0]
    scheduler = {
        "cls": SSHScheduler,
        "options": {
            "address": names[0],
            "connect_options": connect_options[0],
            # Dask's own port: the one to open between the VMs (and to the coordinator)
            "kwargs": {
                "protocol": "tls",
                "host": binds[first],
                "port": SCHEDULER_PORT,
                "dashboard_address": None,
                "idle_timeout": IDLE_SECONDS,
            },
            "remote_python": remote_python,
        },
    }
    workers = {
        i: {
            "cls": SSHWorker,
            "options": {
                "address": name,
                "connect_options": options,
                "kwargs": {
                    "nthreads": 1,
                    "resources": {"lab": 1},
                    "protocol": "tls",
                    "host": binds[host],
                    "death_timeout": DEATH_SECONDS,
                },
                "worker_class": "distributed.Nanny",
                "remote_python": remote_python,
            },
        }
        for i, (host, name, options) in enumerate(zip(hosts, names, connect_options, strict=True))
    }
    # What the launched processes read from Dask's configuration (the launcher hands them this
    # process's, in their environment): file names only; the files are on each host already.
    config = {
        "distributed.comm.require-encryption": True,
        "distributed.comm.tls.ca-file": f"{remote}/ca.crt",
        "distributed.comm.tls.scheduler.cert": f"{remote}/node.crt",
        "distributed.comm.tls.scheduler.key": f"{remote}/node.key",
        "distributed.comm.tls.worker.cert": f"{remote}/node.crt",
        "distributed.comm.tls.worker.key": f"{remote}/node.key",
        "distributed.scheduler.http.routes": HTTP_ROUTES,
        "distributed.worker.http.routes": HTTP_ROUTES,
    }
    try:
        with dask.config.set(config):
            cluster = SpecCluster(workers, scheduler, name="SSHCluster", security=made.client_security())
    except Exception as e:  # asyncssh's and Dask's own errors: a host that cannot be reached or started
        raise SetupError(f"--hosts {','.join(hosts)}: cannot start the cluster: {type(e).__name__}: {e}") from e
    with cluster:
        yield cluster
