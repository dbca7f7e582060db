"""The HTTP clients of the workloads: single downloads, page loads, bulk.

Command builders are pure functions returning argument lists; the run
functions execute them in the client's namespace, check every exit code and
return typed results.  The protocol a trial asked for is compared with the
one actually negotiated, and a mismatch (a client silently falling back to
HTTP/1.1) fails the trial with `ProtocolMismatch`.

Protocols: "http/1.1" (cleartext, port 80), "h2c" (HTTP/2 over cleartext
with prior knowledge, port 80) and "h2" (HTTP/2 over TLS, ALPN, port 443).

Page loads use h2load.  HTTP/2: one connection, the HTML first and every
object in flight at once (`-c 1 -m <resources>`).  HTTP/1.1: six persistent
connections, as browsers open; h2load gives every client the same URI list,
so six h2load processes run side by side, each one connection, the HTML first
on the first and the objects dealt round-robin; they are held behind a file
lock and released together, so their first requests leave within about a
millisecond of each other (instead of 20 ms of process creation apart).  Deviation from a browser,
the same for both protocols: the object requests go out with the HTML's
request instead of after the HTML has arrived (h2load cannot make a request
wait on another), which saves about one RTT plus the HTML's transfer.
Page load time is measured from the first request to the last byte of the
last object, from h2load's per-request log (microseconds);
`servers.capture.PacketCapture` measures the same span independently from
tcpdump's kernel timestamps.

The burst client is in `servers.bursts`, iperf3 cross traffic in
`servers.iperf`, packet capture in `servers.capture`.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from ground.errors import TrialError
from ground.ledger import Ledger
from ground.proc import CommandError, Netns, Process, run
from servers.apache import HTTP_PORT, TLS_PORT
from servers.content import Page, WebObject
from servers.parsers import (
    CurlTiming,
    H2loadRequest,
    H2loadSummary,
    parse_curl_json,
    parse_h2load,
    parse_h2load_log,
)

__all__ = [
    "H1_CONNECTIONS",
    "PROTOCOLS",
    "BulkResult",
    "Download",
    "ObjectTime",
    "PageLoad",
    "Protocol",
    "ProtocolMismatch",
    "WorkloadError",
    "barrier_argv",
    "check_h2load",
    "curl_argv",
    "download",
    "h2load_argv",
    "is_tls",
    "load_page",
    "page_load_plan",
    "run_bulk",
    "url",
]

Protocol = Literal["http/1.1", "h2c", "h2"]
PROTOCOLS: tuple[Protocol, ...] = get_args(Protocol)
H1_CONNECTIONS = 6  # what browsers open per origin for HTTP/1.1
# What the tools report when the asked protocol was spoken.
_H2LOAD_NAME: dict[str, str] = {"http/1.1": "http/1.1", "h2c": "h2c", "h2": "h2"}
_CURL_VERSION: dict[str, str] = {"http/1.1": "1.1", "h2c": "2", "h2": "2"}


class WorkloadError(TrialError):
    """A trial whose client did not do what was asked (failed requests, missing bytes)."""


class ProtocolMismatch(WorkloadError):
    """The client spoke another protocol than the trial asked for (e.g. fell back to HTTP/1.1)."""

    def __init__(self, asked: str, negotiated: str | None, tool: str) -> None:
        super().__init__(f"{tool}: asked for {asked}, negotiated {negotiated or 'nothing'}")
        self.asked = asked
        self.negotiated = negotiated


def _protocol(protocol: str) -> Protocol:
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol {protocol!r}: one of {', '.join(PROTOCOLS)}")
    return protocol  # type: ignore[return-value]


def is_tls(protocol: str) -> bool:
    return _protocol(protocol) == "h2"


def url(address: str, path: str, protocol: str) -> str:
    """The URL of `path` on the server at `address` for a protocol (https and 443 for h2)."""
    if is_tls(protocol):
        return f"https://{address}:{TLS_PORT}{path}"
    return f"http://{address}:{HTTP_PORT}{path}"


# -- single download: curl --------------------------------------------------------------


@dataclass(frozen=True)
class Download:
    """One object downloaded by curl; times in seconds from the start of the transfer."""

    protocol: str  # asked
    negotiated: str  # curl's http_version: "1.1" or "2"
    size: int  # body bytes
    connect: float  # TCP handshake complete
    pretransfer: float  # handshakes (TCP, TLS) complete, request about to go
    first_byte: float
    total: float  # last byte

    @property
    def transfer_time(self) -> float:
        """From the request (the handshakes done) to the last byte."""
        return self.total - self.pretransfer


def curl_argv(target: str, protocol: str, *, cacert: Path | None = None, max_time: float = 60.0) -> list[str]:
    """curl fetching one URL over `protocol`, body discarded, timings as JSON on stdout."""
    version = {"http/1.1": ["--http1.1"], "h2c": ["--http2-prior-knowledge"], "h2": ["--http2"]}[_protocol(protocol)]
    argv = ["curl", "-sS", "-o", "/dev/null", "-w", "%{json}", "--max-time", f"{max_time:g}", *version]
    if is_tls(protocol):
        # The certificate is generated per run; verify against it when given.
        argv += ["--cacert", str(cacert)] if cacert is not None else ["--insecure"]
    return [*argv, target]


def download(
    ns: Netns, address: str, path: str, protocol: str, *, cacert: Path | None = None, timeout: float = 60.0
) -> Download:
    """Download one object with curl and return its timing; fails on a non-200 or a protocol fallback."""
    argv = curl_argv(url(address, path, protocol), protocol, cacert=cacert, max_time=timeout)
    done = run(argv, ns, timeout=timeout + 10)
    timing: CurlTiming = parse_curl_json(done.stdout)
    if timing.http_version != _CURL_VERSION[protocol]:
        raise ProtocolMismatch(protocol, f"HTTP/{timing.http_version}", "curl")
    if timing.response_code != 200:
        raise WorkloadError(f"curl {argv[-1]}: HTTP status {timing.response_code}")
    return Download(
        protocol=protocol,
        negotiated=timing.http_version,
        size=timing.size_download,
        connect=timing.time_connect,
        pretransfer=timing.time_pretransfer,
        first_byte=timing.time_starttransfer,
        total=timing.time_total,
    )


# -- h2load: page loads and bulk -------------------------------------------------------------


def h2load_argv(
    uris: Sequence[str],
    protocol: str,
    *,
    clients: int = 1,
    max_streams: int = 1,
    requests: int | None = None,
    duration_s: float | None = None,
    window_bits: int | None = None,
    connection_window_bits: int | None = None,
    log_file: Path | None = None,
) -> list[str]:
    """h2load over `protocol`: a fixed number of requests, or a fixed duration (-D)."""
    if not uris:
        raise ValueError("h2load needs at least one URI")
    argv = ["h2load", "-c", str(clients), "-m", str(max_streams)]
    if duration_s is not None:
        # No --warm-up-time: h2load 1.52 still counts the warm-up's bytes and time.
        argv += ["-D", f"{duration_s * 1000:.0f}ms"]
    else:
        argv += ["-n", str(requests if requests is not None else len(uris))]
    if _protocol(protocol) == "http/1.1":
        argv.append("--h1")
    if window_bits is not None:
        argv += ["-w", str(window_bits)]
    if connection_window_bits is not None:
        argv += ["-W", str(connection_window_bits)]
    if log_file is not None:
        argv += ["--log-file", str(log_file)]
    return [*argv, *uris]


def check_h2load(summary: H2loadSummary, protocol: str, requests: int | None, what: str) -> None:
    """Fail unless h2load spoke `protocol` and (if given) every one of `requests` succeeded with 2xx."""
    if summary.application_protocol != _H2LOAD_NAME[protocol]:
        raise ProtocolMismatch(protocol, summary.application_protocol, f"h2load ({what})")
    bad = summary.failed + summary.errored + summary.timeout
    if bad or (requests is not None and (summary.succeeded != requests or summary.status_2xx != requests)):
        raise WorkloadError(
            f"h2load ({what}): {summary.succeeded} of {requests} requests succeeded "
            f"({summary.status_2xx} 2xx, {summary.failed} failed, {summary.errored} errored, {summary.timeout} timeout)"
        )


@dataclass(frozen=True)
class ObjectTime:
    """One response of a page load, as h2load logged it."""

    start: float  # seconds after the page's first request
    duration: float  # request to last byte, seconds
    status: int


@dataclass(frozen=True)
class PageLoad:
    """One page load: the trial's result row."""

    page: str
    protocol: str
    negotiated: str
    connections: int
    page_load_time: float  # seconds, first request to last byte of the last object
    bytes: int  # response bodies received (equals the page's bytes, or the trial fails)
    first_request_epoch: float  # seconds since the epoch, to align with a packet capture
    connect_time: float  # the slowest connection's handshake(s), h2load's "time for connect"
    h2load_finished_in: float  # h2load's own span, from before the first connect (the longest process)
    objects: tuple[ObjectTime, ...]

    @property
    def throughput_bps(self) -> float:
        """Page bytes / page load time, in bit/s."""
        return self.bytes * 8 / self.page_load_time


def page_load_plan(page: Page, protocol: str, connections: int = H1_CONNECTIONS) -> list[list[WebObject]]:
    """Which resources go over which connection: HTTP/2 one, HTTP/1.1 `connections` (HTML first on the first)."""
    if _protocol(protocol) != "http/1.1":
        return [list(page.resources)]
    shares: list[list[WebObject]] = [[page.html]] + [[] for _ in range(connections - 1)]
    for i, obj in enumerate(page.objects):
        shares[i % connections].append(obj)
    return [share for share in shares if share]


def barrier_argv(lock: Path, argv: Sequence[str]) -> list[str]:
    """argv, held until the lock's exclusive holder lets go, then run in place (no fork: same pid)."""
    return ["flock", "--shared", "--no-fork", str(lock), *argv]


def _lock_waiters(lock: Path) -> int:
    """How many processes wait for a lock on this file (from /proc/locks)."""
    inode = f":{lock.stat().st_ino} "
    return sum(1 for line in Path("/proc/locks").read_text().splitlines() if "->" in line and inode in line)


def _run_together(
    argvs: Sequence[list[str]], ns: Netns, ledger: Ledger | None, work_dir: Path, timeout: float
) -> list[str]:
    """Start every command at the same moment, wait for all, stop and reap all whatever happens.

    Each command is started behind a file lock that this process holds, and
    released when all of them wait on it: the commands then start within
    their own start-up time of each other, not one process creation apart.
    Returns their stdouts.
    """
    procs: list[tuple[Process, Path, Path]] = []
    lock = work_dir / "start.lock"
    barrier = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(barrier, fcntl.LOCK_EX)
        for i, argv in enumerate(argvs):
            out, err = work_dir / f"{argv[0]}-{i}.out", work_dir / f"{argv[0]}-{i}.err"
            with open(out, "wb") as fo, open(err, "wb") as fe:
                proc = Process(barrier_argv(lock, argv), ns, ledger=ledger, stdout=fo, stderr=fe, label=argv[0])
                procs.append((proc, out, err))
        ready = time.monotonic() + 10
        while _lock_waiters(lock) < len(procs):
            if time.monotonic() > ready or not all(p.running() for p, _, _ in procs):
                raise CommandError(barrier_argv(lock, argvs[0]), ns, None, "not all commands reached the start line")
            time.sleep(0.002)
        fcntl.flock(barrier, fcntl.LOCK_UN)
        deadline = time.monotonic() + timeout
        for proc, _, err in procs:
            try:
                code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise CommandError(proc.argv, ns, None, err.read_text(errors="replace")) from None
            if code != 0:
                raise CommandError(proc.argv, ns, code, err.read_text(errors="replace"))
    finally:
        os.close(barrier)
        for proc, _, _ in procs:
            proc.stop()
    return [out.read_text(errors="replace") for _, out, _ in procs]


def load_page(
    ns: Netns,
    address: str,
    page: Page,
    protocol: str,
    work_dir: Path,
    *,
    ledger: Ledger | None = None,
    connections: int = H1_CONNECTIONS,
    timeout: float = 120.0,
) -> PageLoad:
    """Load a page with h2load and return its page load time, bytes and per-object times."""
    plan = page_load_plan(page, protocol, connections)
    work_dir.mkdir(parents=True, exist_ok=True)
    logs = [work_dir / f"h2load-{i}.log" for i in range(len(plan))]
    for log in logs:
        log.unlink(missing_ok=True)  # h2load appends to its log file
    argvs = [
        h2load_argv(
            [url(address, r.path, protocol) for r in share],
            protocol,
            max_streams=len(share) if protocol != "http/1.1" else 1,
            log_file=log,
        )
        for share, log in zip(plan, logs, strict=True)
    ]
    outputs = _run_together(argvs, ns, ledger, work_dir, timeout)
    summaries = [parse_h2load(text) for text in outputs]
    for share, summary in zip(plan, summaries, strict=True):
        check_h2load(summary, protocol, len(share), f"page {page.name}")
    rows: list[H2loadRequest] = sorted((r for log in logs for r in parse_h2load_log(log.read_text())), key=_start)
    received = sum(s.bytes_data for s in summaries)
    if len(rows) != len(page.resources) or received != page.total_bytes:
        raise WorkloadError(
            f"page {page.name}: {len(rows)} responses and {received} body bytes, "
            f"expected {len(page.resources)} and {page.total_bytes}"
        )
    first = rows[0].start_us
    last = max(r.end_us for r in rows)
    return PageLoad(
        page=page.name,
        protocol=protocol,
        negotiated=summaries[0].application_protocol or "",
        connections=len(plan),
        page_load_time=(last - first) / 1e6,
        bytes=received,
        first_request_epoch=first / 1e6,
        connect_time=max(s.connect.max if s.connect else 0.0 for s in summaries),
        h2load_finished_in=max(s.finished_in for s in summaries),
        objects=tuple(ObjectTime((r.start_us - first) / 1e6, r.duration_us / 1e6, r.status) for r in rows),
    )


def _start(r: H2loadRequest) -> int:
    return r.start_us


@dataclass(frozen=True)
class BulkResult:
    protocol: str
    negotiated: str
    connections: int
    bytes: int  # response bodies received
    seconds: float  # h2load's span (the main duration in fixed-duration mode)
    window_bits: int | None

    @property
    def throughput_bps(self) -> float:
        return self.bytes * 8 / self.seconds


def run_bulk(
    ns: Netns,
    address: str,
    path: str,
    protocol: str,
    *,
    connections: int | None = None,
    duration_s: float | None = None,
    window_bits: int | None = 30,
    timeout: float = 300.0,
) -> BulkResult:
    """A bulk download: one HTTP/2 connection or six HTTP/1.1 ones, one request each (or for a fixed duration).

    HTTP/2's stream and connection windows are set to 2**window_bits - 1
    (h2load's -w/-W; 30 gives 1 GiB, far above six connections' worth, as
    seed 003 raised its client's window); the client's TCP receive buffer is
    a host setting (`servers.hosttcp.HostTcp.receive_buffer`).
    """
    n = connections if connections is not None else (H1_CONNECTIONS if protocol == "http/1.1" else 1)
    h2 = protocol != "http/1.1"
    argv = h2load_argv(
        [url(address, path, protocol)],
        protocol,
        clients=n,
        requests=None if duration_s is not None else n,
        duration_s=duration_s,
        window_bits=window_bits if h2 else None,
        connection_window_bits=window_bits if h2 else None,
    )
    summary = parse_h2load(run(argv, ns, timeout=timeout).stdout)
    check_h2load(summary, protocol, None if duration_s is not None else n, "bulk")
    if summary.bytes_data == 0:
        raise WorkloadError(f"h2load (bulk): no body bytes received from {argv[-1]}")
    return BulkResult(
        protocol=protocol,
        negotiated=summary.application_protocol or "",
        connections=n,
        bytes=summary.bytes_data,
        seconds=summary.finished_in,
        window_bits=window_bits if h2 else None,
    )
