"""Labs side by side on this machine (`run.sh FIGURE --jobs N`): a Dask cluster of the run's own.

The same engine as `--hosts` (netrepro.engine.cluster: one lab per worker,
this process the one writer of the CSV), with its scheduler, nannies and
workers on this machine: Dask's LocalCluster, N workers of one thread and
one lab slot each, every connection TLS with certificates made for the run
(engine.tls: a CA whose key is never written), each process
listening on 127.0.0.1 only, their scratch files and the certificates in
private directories the run's ledger removes.  The scheduler and the
nannies live in this process; each worker is a child process that exits
when this process does (Dask's own pipe to it), and each worker's trial
process unwinds its lab when its worker goes (PR_SET_PDEATHSIG), so a
killed run leaves its labs to `run.sh clean` as a local run does.

Each lab has its own namespaces, addresses (topologies.lab.ip_base), NFQUEUE
numbers (per namespace), ports and ledger; what the machine shares
(congestion controls, modules, tracefs) is changed under the machine lock.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Iterator
from typing import Any

from ground.errors import SetupError
from netrepro.engine.tls import HTTP_ROUTES, make_certificates

CONNECT_SECONDS = 60  # the workers up, and this client connected


@contextlib.contextmanager
def local_client(jobs: int) -> Iterator[Any]:
    """A Dask client of a cluster of `jobs` local workers, each with one lab slot; stopped after."""
    import dask.config
    from distributed import Client, LocalCluster, Nanny

    from ground.ledger import Ledger

    run = secrets.token_hex(6)
    with Ledger(contain=False) as ledger:
        made = make_certificates(ledger.temp_dir("netrepro-tls-"), run)
        scratch = ledger.temp_dir("netrepro-dask-")
        security = made.local_security()
        config = {
            "distributed.scheduler.http.routes": HTTP_ROUTES,
            "distributed.worker.http.routes": HTTP_ROUTES,
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
        with cluster, Client(cluster, timeout=CONNECT_SECONDS, security=security) as client:
            yield client
