"""The burst client of study newcwv: requests after idle periods over one HTTP/1.1 connection.

Bursts use a small HTTP/1.1 client of our own (`python -m servers.bursts`),
because the idle period must run from the end of one burst to the next
request, which no stock tool schedules.  `burst_client_argv` builds its
command; `run_bursts` runs it in the client's namespace, checks that every
burst went over one connection as HTTP/1.1 and returns the completion time of
each burst.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ground.proc import Netns, run
from servers.apache import HTTP_PORT
from servers.clients import ProtocolMismatch, WorkloadError

__all__ = ["Burst", "BurstSeries", "burst_client_argv", "run_bursts"]


@dataclass(frozen=True)
class Burst:
    path: str
    size: int  # body bytes received
    idle_before: float  # seconds from the previous burst's last byte (or the connect) to this request
    completion_time: float  # seconds from the request to the burst's last byte
    local_port: int  # the connection it went over


@dataclass(frozen=True)
class BurstSeries:
    protocol: str
    negotiated: str
    bursts: tuple[Burst, ...]


def burst_client_argv(address: str, bursts: Sequence[tuple[str, float]], *, port: int = HTTP_PORT) -> list[str]:
    """Our burst client: one persistent HTTP/1.1 connection, each (path, idle seconds) in turn."""
    argv = [sys.executable, "-m", "servers.bursts", "--server", address, "--port", str(port)]
    for path, idle in bursts:
        argv += ["--burst", f"{idle:g}:{path}"]
    return argv


def run_bursts(
    ns: Netns, address: str, bursts: Sequence[tuple[str, float]], *, timeout: float | None = None
) -> BurstSeries:
    """Request each path after its idle period over one connection; the completion time of each burst."""
    limit = timeout if timeout is not None else sum(idle for _, idle in bursts) + 30 * len(bursts) + 10
    doc = json.loads(run(burst_client_argv(address, bursts), ns, timeout=limit).stdout)
    series = tuple(Burst(**b) for b in doc["bursts"])
    if len({b.local_port for b in series}) != 1:
        raise WorkloadError(
            f"bursts went over more than one connection: ports {sorted({b.local_port for b in series})}"
        )
    if doc["http_version"] != "1.1":
        raise ProtocolMismatch("http/1.1", f"HTTP/{doc['http_version']}", "burst client")
    return BurstSeries("http/1.1", doc["http_version"], series)


def _burst_main(args: argparse.Namespace) -> int:
    """The burst client itself (runs inside the client's namespace)."""
    conn = http.client.HTTPConnection(args.server, args.port, timeout=60)
    conn.connect()
    sock = conn.sock
    local_port = sock.getsockname()[1]
    previous_end = time.monotonic()
    out = []
    version = ""
    for spec in args.burst:
        idle_text, _, path = spec.partition(":")
        idle = float(idle_text)
        time.sleep(max(0.0, previous_end + idle - time.monotonic()))
        begin = time.monotonic()
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        end = time.monotonic()
        if response.status != 200 or conn.sock is not sock:
            print(f"burst {path}: status {response.status}, connection reused: {conn.sock is sock}", file=sys.stderr)
            return 1
        version = {10: "1.0", 11: "1.1"}.get(response.version, str(response.version))
        out.append(
            {
                "path": path,
                "size": len(body),
                "idle_before": begin - previous_end,
                "completion_time": end - begin,
                "local_port": local_port,
            }
        )
        previous_end = end
    conn.close()
    json.dump({"http_version": version, "bursts": out}, sys.stdout)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m servers.bursts", description=__doc__)
    parser.add_argument("--server", required=True)
    parser.add_argument("--port", type=int, default=HTTP_PORT)
    parser.add_argument("--burst", action="append", required=True, metavar="IDLE_S:PATH")
    args = parser.parse_args(argv)
    return _burst_main(args)


if __name__ == "__main__":
    sys.exit(main())
