"""The client side of the workloads: single downloads, page loads, bursts, bulk, cross traffic.

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
last object, from h2load's per-request log (microseconds); `PacketCapture`
measures the same span independently from tcpdump's kernel timestamps.

Bursts (study newcwv) use a small HTTP/1.1 client of our own
(`python -m servers.clients burst`), because the idle period must run from
the end of one burst to the next request, which no stock tool schedules.
"""

from __future__ import annotations

import argparse
import fcntl
import http.client
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal, get_args

from netrepro.ledger import Ledger
from netrepro.parsers import IperfTcp, IperfUdp, parse_iperf3_tcp, parse_iperf3_udp
from netrepro.proc import CommandError, Netns, Process, run
from netrepro.units import Rate
from servers.apache import HTTP_PORT, TLS_PORT
from servers.content import Page, WebObject
from servers.parsers import (
    CurlTiming,
    H2loadRequest,
    H2loadSummary,
    Packet,
    parse_curl_json,
    parse_h2load,
    parse_h2load_log,
    parse_pcap,
)

__all__ = [
    "H1_CONNECTIONS",
    "PROTOCOLS",
    "BulkResult",
    "Burst",
    "BurstSeries",
    "CrossTraffic",
    "Download",
    "ObjectTime",
    "PacketCapture",
    "PageLoad",
    "Protocol",
    "ProtocolMismatch",
    "WorkloadError",
    "barrier_argv",
    "burst_client_argv",
    "check_h2load",
    "curl_argv",
    "download",
    "h2load_argv",
    "iperf3_client_argv",
    "iperf3_server_argv",
    "is_tls",
    "load_page",
    "page_load_plan",
    "run_bulk",
    "run_bursts",
    "tcpdump_argv",
    "url",
    "wait_listening",
]

Protocol = Literal["http/1.1", "h2c", "h2"]
PROTOCOLS: tuple[Protocol, ...] = get_args(Protocol)
H1_CONNECTIONS = 6  # what browsers open per origin for HTTP/1.1
# What the tools report when the asked protocol was spoken.
_H2LOAD_NAME: dict[str, str] = {"http/1.1": "http/1.1", "h2c": "h2c", "h2": "h2"}
_CURL_VERSION: dict[str, str] = {"http/1.1": "1.1", "h2c": "2", "h2": "2"}


class WorkloadError(RuntimeError):
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


# -- bursts after idle periods (study newcwv) ----------------------------------------------


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
    argv = [sys.executable, "-m", "servers.clients", "burst", "--server", address, "--port", str(port)]
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


# -- cross traffic: iperf3 -----------------------------------------------------------------


def iperf3_server_argv(address: str, port: int) -> list[str]:
    return ["iperf3", "-s", "-1", "-B", address, "-p", str(port)]


def iperf3_client_argv(
    address: str, port: int, duration_s: int, *, udp_rate: Rate | None = None, datagram: int = 1400
) -> list[str]:
    """A flow in the data direction (server to client, -R): bulk TCP, or UDP at a constant rate."""
    argv = ["iperf3", "-c", address, "-p", str(port), "-R", "-J", "-t", str(duration_s)]
    if udp_rate is not None:
        argv += ["-u", "-b", str(int(udp_rate.bps)), "-l", str(datagram)]
    return argv


def wait_listening(ns: Netns, address: str, port: int, process: Process, timeout: float = 5.0) -> None:
    """Return once `address:port` listens in ns; raise if the process died or time ran out."""
    deadline = time.monotonic() + timeout
    while True:
        out = run(["ss", "-Hln", f"sport = :{port}"], ns).stdout
        if any(f"{address}:{port}" in line.split() for line in out.splitlines()):
            return
        if not process.running():
            raise CommandError(process.argv, ns, process.wait(), "exited before listening")
        if time.monotonic() > deadline:
            raise CommandError(process.argv, ns, None, f"not listening on {address}:{port} after {timeout:g} s")
        time.sleep(0.02)


class CrossTraffic:
    """A competing flow from server to client for `duration_s`: bulk TCP, or UDP at `udp_rate`."""

    def __init__(
        self,
        client: Netns,
        server: Netns,
        server_address: str,
        ledger: Ledger,
        work_dir: Path,
        *,
        duration_s: int,  # whole seconds: iperf3 -t
        udp_rate: Rate | None = None,
        port: int = 5202,
    ) -> None:
        self.client, self.server, self.address = client, server, server_address
        self.ledger, self.duration_s, self.udp_rate, self.port = ledger, duration_s, udp_rate, port
        self.output = work_dir / f"iperf3-{'udp' if udp_rate else 'tcp'}-{port}.json"
        self._server: Process | None = None
        self._client: Process | None = None

    def start(self) -> CrossTraffic:
        try:
            self._server = Process(
                iperf3_server_argv(self.address, self.port), self.server, ledger=self.ledger, label="iperf3 server"
            )
            wait_listening(self.server, self.address, self.port, self._server)
            with open(self.output, "wb") as out:
                self._client = Process(
                    iperf3_client_argv(self.address, self.port, self.duration_s, udp_rate=self.udp_rate),
                    self.client,
                    ledger=self.ledger,
                    stdout=out,
                    label="iperf3 client",
                )
        except BaseException:
            self.stop()
            raise
        return self

    def result(self) -> IperfTcp | IperfUdp:
        """Wait for the flow to end and return what the receiver measured."""
        assert self._client is not None, "start() first"
        try:
            code = self._client.wait(timeout=self.duration_s + 15)
        except subprocess.TimeoutExpired:
            raise CommandError(self._client.argv, self.client, None, "cross traffic did not end") from None
        text = self.output.read_text(errors="replace")
        if code != 0:
            raise CommandError(self._client.argv, self.client, code, text[-1000:])
        return parse_iperf3_udp(text) if self.udp_rate is not None else parse_iperf3_tcp(text)

    def stop(self) -> None:
        for proc in (self._client, self._server):
            if proc is not None:
                proc.stop()
        self._client = self._server = None

    def __enter__(self) -> CrossTraffic:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


# -- an independent clock: tcpdump in the client's namespace -------------------------------------


_TCPDUMP_COUNT = re.compile(r"^(\d+) packets (captured|received by filter|dropped by kernel)$", re.M)


def tcpdump_argv(dev: str, pcap: Path, port: int, snaplen: int = 128) -> list[str]:
    """Headers only, each packet handed over and written at once, nanosecond kernel timestamps, as root."""
    return [
        "tcpdump", "-i", dev, "-w", str(pcap), "-U", "--immediate-mode", "-n", "-Z", "root", "-s", str(snaplen),
        "--time-stamp-precision=nano", "tcp", "port", str(port),
    ]  # fmt: skip


class PacketCapture:
    """tcpdump on a host's interface for the duration of a `with` block; `packets` afterwards."""

    def __init__(self, ns: Netns, dev: str, pcap: Path, port: int, ledger: Ledger | None) -> None:
        self.ns, self.dev, self.pcap, self.port, self.ledger = ns, dev, pcap, port, ledger
        self.log = pcap.with_suffix(".log")
        self.packets: list[Packet] = []
        self._proc: Process | None = None

    def start(self, timeout: float = 5.0) -> PacketCapture:
        with open(self.log, "wb") as err:
            self._proc = Process(
                tcpdump_argv(self.dev, self.pcap, self.port),
                self.ns,
                ledger=self.ledger,
                stdout=subprocess.DEVNULL,
                stderr=err,
                label="tcpdump",
            )
        deadline = time.monotonic() + timeout
        while "listening on" not in self.log.read_text(errors="replace"):
            if not self._proc.running() or time.monotonic() > deadline:
                text = self.log.read_text(errors="replace")
                self._proc.stop()
                self._proc = None
                raise CommandError(tcpdump_argv(self.dev, self.pcap, self.port), self.ns, None, text)
            time.sleep(0.01)
        return self

    def stop(self, settle: float = 0.1) -> list[Packet]:
        """Stop tcpdump (after `settle` seconds for the last packets) and read the capture.

        Fails if tcpdump saw a packet it did not write, or the kernel dropped one.
        """
        if self._proc is None:
            return self.packets
        time.sleep(settle)
        self._proc.stop()
        self._proc = None
        text = self.log.read_text(errors="replace")
        counts = dict((m.group(2), int(m.group(1))) for m in _TCPDUMP_COUNT.finditer(text))
        if counts.get("captured") != counts.get("received by filter") or counts.get("dropped by kernel"):
            raise WorkloadError(f"tcpdump did not capture every packet: {counts}")
        self.packets = parse_pcap(self.pcap.read_bytes())
        return self.packets

    def __enter__(self) -> PacketCapture:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if e is None:
            self.stop()
        elif self._proc is not None:
            self._proc.stop()
            self._proc = None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m servers.clients", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    burst = sub.add_parser("burst", help="request each path after its idle period over one HTTP/1.1 connection")
    burst.add_argument("--server", required=True)
    burst.add_argument("--port", type=int, default=HTTP_PORT)
    burst.add_argument("--burst", action="append", required=True, metavar="IDLE_S:PATH")
    args = parser.parse_args(argv)
    return _burst_main(args)


if __name__ == "__main__":
    sys.exit(main())
