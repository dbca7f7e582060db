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
(spawn), makes named semaphores in /dev/shm that only its resource tracker
removes after a crash; a SIGKILL to the run's process group kills the
tracker too, and left 12 of them a run.  The ones this process maps once
the cluster is up are recorded in the ledger (`semaphores_mapped`) and handed
back to multiprocessing when the cluster is down, so that `run.sh clean`
removes them only where the run was killed.

Each lab has its own namespaces, addresses (ground.subnets), NFQUEUE
numbers (per namespace), ports and ledger; what the machine shares
(congestion controls, modules, tracefs) is changed under the machine lock.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ground.errors import SetupError
from netrepro.engine import tls

CONNECT_SECONDS = 60  # the workers up, and this client connected
SHM = Path("/dev/shm")


def semaphores_mapped(maps: str) -> list[Path]:
    """The named POSIX semaphores (/dev/shm/sem.*) a process maps, from its /proc/<pid>/maps."""
    found = []
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6:
            path = Path(fields[5].removesuffix(" (deleted)"))
            if path.parent == SHM and path.name.startswith("sem.") and not fields[5].endswith(" (deleted)"):
                found.append(path)
    return list(dict.fromkeys(found))


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
        try:
            with dask.config.set(config):
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
        semaphores: list[int] = []
        try:
            with cluster, Client(cluster, timeout=CONNECT_SECONDS, security=security) as client:
                mapped = semaphores_mapped(Path("/proc/self/maps").read_text())
                semaphores += [ledger.record({"kind": "path", "path": str(s)}) for s in mapped]
                yield client
        finally:
            for seq in semaphores:  # this process lives on: multiprocessing unlinks them itself
                ledger.handed_back(seq)
