"""Labs side by side on this machine (`run.sh FIGURE --jobs N`): a Dask cluster of the run's own.

The same engine as `--hosts` (netrepro.engine.cluster: one lab per worker,
this process the one writer of the CSV), with its scheduler, nannies and
workers on this machine: Dask's LocalCluster, N workers of one thread and
one lab slot each, every connection TLS with certificates made for the run
(engine.tls: a CA whose key is never kept), each process
listening on 127.0.0.1 only; the certificates in memory files of this
process (never on a disk), which its workers open by name as root, and
the scratch files in a private directory the run's ledger removes.  The scheduler and the
nannies live in this process; each worker is a child process that exits
when this process does (Dask's own pipe to it), and each worker's trial
process unwinds its lab when its worker goes (PR_SET_PDEATHSIG), so a
killed run leaves its labs to `run.sh clean` as a local run does.

Python's multiprocessing, which the nannies start their workers with
(spawn), makes named semaphores in /dev/shm (six a worker: the locks of the
two queues each nanny keeps with its worker) that only its resource tracker
removes after a crash.  Started as multiprocessing starts it, the tracker is
in the run's process group, and a SIGKILL of the group killed it too: 18
semaphores left by a run of three labs.  `resource_tracker_apart` starts it
in a session of its own before the cluster makes any, so that it outlives
such a kill and removes them once every process of the run has gone (the
end of its pipe, which it reads until then).  (Recording them in the ledger
missed them: they are made while the cluster starts, before any record.)

Each lab has its own namespaces, addresses (ground.subnets), NFQUEUE
numbers (per namespace), ports and ledger; what the machine shares
(congestion controls, modules, tracefs) is changed under the machine lock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ground.errors import SetupError
from netrepro.engine import tls

log = logging.getLogger("netrepro.engine.local")

CONNECT_SECONDS = 60  # the workers up, and this client connected
SHM = Path("/dev/shm")


def resource_tracker_apart() -> int | None:
    """Start multiprocessing's resource tracker for this process in a session of its own (see the module's
    docstring); its pid, or None where this process has one already (it is left as it is).  It ends by
    itself when the last process holding its pipe does."""
    from multiprocessing import resource_tracker, spawn, util

    tracker: Any = resource_tracker._resource_tracker  # private: its pipe and pid are what we set
    with tracker._lock:
        if tracker._fd is not None:
            return None
        r, w = os.pipe()
        try:
            command = [spawn.get_executable(), *util._args_from_interpreter_flags()]  # type: ignore[attr-defined]
            command += ["-c", f"from multiprocessing.resource_tracker import main; main({r})"]
            # its own session: not in the run's process group, so not in a kill of it
            started = subprocess.Popen(command, pass_fds=(r,), stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError:
            os.close(w)
            raise
        finally:
            os.close(r)
        tracker._fd, tracker._pid = w, started.pid
        _apart.append(started)  # kept, not waited for: it outlives this process by design
        return started.pid


_apart: list[subprocess.Popen[bytes]] = []


@contextlib.contextmanager
def local_client(jobs: int) -> Iterator[Any]:
    """A Dask client of a cluster of `jobs` local workers, each with one lab slot; stopped after."""
    import dask.config
    from distributed import Client, LocalCluster, Nanny

    from ground.ledger import Ledger

    run = secrets.token_hex(6)
    with Ledger(contain=False) as ledger, tls.in_memory(tls.make_certificates(run).pem) as paths:
        scratch = ledger.temp_dir("netrepro-dask-")
        security = tls.security(paths, node=True, client=True)
        config = {
            "distributed.scheduler.http.routes": tls.HTTP_ROUTES,
            "distributed.worker.http.routes": tls.HTTP_ROUTES,
            "temporary-directory": str(scratch),
        }
        if resource_tracker_apart() is None:  # before the cluster makes its semaphores
            log.warning(
                "multiprocessing's resource tracker was running already, in this run's process group: "
                "a SIGKILL of the group would leave the cluster's semaphores in /dev/shm"
            )
        try:
            with dask.config.set(config), warnings.catch_warnings():
                # Its health route's server listens on 127.0.0.1: another run's cluster (reproduce runs figures
                # side by side) holds the default port, and this one takes a free one, as it should
                warnings.filterwarnings("ignore", message="Port 8787 is already in use", category=UserWarning)
                cluster = LocalCluster(
                    n_workers=jobs,
                    threads_per_worker=1,
                    processes=True,
                    worker_class=Nanny,
                    resources={"lab": 1},
                    protocol="tls://",
                    host="127.0.0.1",
                    dashboard_address=None,
                    security=security,
                    local_directory=str(scratch),
                    silence_logs=logging.ERROR,
                )
        except Exception as e:
            raise SetupError(f"--jobs {jobs}: cannot start the local cluster: {type(e).__name__}: {e}") from e
        with cluster, Client(cluster, timeout=CONNECT_SECONDS, security=security) as client:
            yield client
