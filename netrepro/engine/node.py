"""What a host of a `--hosts` cluster runs: the scheduler or a nanny, holding the run's certificates in memory.

The coordinator (netrepro.engine.ssh_cluster) starts `python -m
netrepro.engine.node` over SSH, with nothing else on its command line, and
writes one JSON line on its stdin: the role, the Dask arguments, and the
CA certificate and the node's certificate and key.  This process keeps
those in memory files of its own (netrepro.engine.tls.in_memory: never on
a disk, gone with it), sets Dask's configuration in itself (its nanny's
worker inherits it through Dask's own pipe), listens only on the address
the SSH session reached this host on (SSH_CONNECTION), says
`ready ADDRESS` on stdout, and serves until its stdin ends: when the
coordinator closes the session, or dies and its connection closes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import json
import os
import signal
import sys
import threading
from typing import Any

from netrepro.engine import tls

ROLES = ("scheduler", "nanny")


def bind_address(ssh_connection: str, fallback: str) -> str:
    """The address to listen on, from SSH_CONNECTION (`CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT`):
    the host's own address that the coordinator reached it on (bracketed if IPv6); else `fallback`."""
    fields = ssh_connection.split()
    if len(fields) != 4:
        return fallback
    address = fields[2].split("%", 1)[0]  # no IPv6 zone
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return fallback
    return f"[{ip}]" if ip.version == 6 else str(ip)


def job_line(role: str, scheduler: str | None, kwargs: dict[str, Any], files: dict[str, bytes], fallback: str,
             scratch: str) -> str:  # fmt: skip
    """The line the coordinator writes on a node's stdin (`main` reads it)."""
    assert role in ROLES and set(files) == set(tls.NODE_FILES)
    pem = {name: base64.b64encode(data).decode() for name, data in files.items()}
    job = {"role": role, "scheduler": scheduler, "kwargs": kwargs, "pem": pem, "fallback": fallback, "scratch": scratch}
    return json.dumps(job) + "\n"


async def _serve(job: dict[str, Any], host: str, paths: dict[str, str]) -> None:
    from distributed import Nanny, Scheduler

    loop = asyncio.get_running_loop()
    ended = asyncio.Event()

    def wait_for_eof() -> None:  # the session's stdin: its end is the coordinator's
        with contextlib.suppress(OSError, ValueError):
            while sys.stdin.buffer.read(1 << 16):
                pass
        loop.call_soon_threadsafe(ended.set)

    threading.Thread(target=wait_for_eof, name="netrepro-session", daemon=True).start()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, ended.set)
    security = tls.security(paths, node=True)
    server: Any
    if job["role"] == "scheduler":
        server = Scheduler(host=host, security=security, **job["kwargs"])
    else:
        server = Nanny(job["scheduler"], host=host, security=security, **job["kwargs"])
    await server
    print(f"ready {server.address}", flush=True)
    finished = asyncio.ensure_future(server.finished())
    stop = asyncio.ensure_future(ended.wait())
    await asyncio.wait([finished, stop], return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    await server.close()


def main() -> int:
    line = sys.stdin.buffer.readline()
    try:
        job = json.loads(line)
        files = {name: base64.b64decode(job["pem"][name]) for name in tls.NODE_FILES}
        if job.get("role") not in ROLES:
            raise ValueError(f"role {job.get('role')!r}")
    except (ValueError, KeyError, TypeError) as e:
        print(f"netrepro.engine.node: not a job line ({type(e).__name__}: {e})", file=sys.stderr)
        return 2
    import dask.config

    host = bind_address(os.environ.get("SSH_CONNECTION", ""), str(job.get("fallback") or "127.0.0.1"))
    with tls.in_memory(files) as paths:
        del files, job["pem"]
        with dask.config.set({**tls.dask_config(paths), "temporary-directory": job["scratch"]}):
            asyncio.run(_serve(job, host, paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
