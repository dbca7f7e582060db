"""Parsers for what the workload tools print: curl's `-w %{json}`, h2load's summary and log file, tcpdump's pcap.

Each takes the tool's captured output and returns typed numbers; each is
tested on real output kept in tests/fixtures (`curl_*`, `h2load_*`,
`tcpdump_*`).  A parser that cannot find what it needs raises `ParseError`
(the project's one parse error, from ground.parsers) quoting the text.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from ground.parsers import ParseError

__all__ = [
    "CurlTiming",
    "H2loadRequest",
    "H2loadStat",
    "H2loadSummary",
    "Packet",
    "ParseError",
    "parse_curl_json",
    "parse_duration_text",
    "parse_h2load",
    "parse_h2load_log",
    "parse_pcap",
    "request_to_last_byte",
]


# -- curl ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CurlTiming:
    """One transfer as curl timed it; times in seconds from the transfer's start."""

    http_version: str  # "1.1", "2": what was actually spoken
    response_code: int
    size_download: int  # body bytes
    time_connect: float  # TCP handshake done
    time_appconnect: float  # TLS handshake done (0 without TLS)
    time_pretransfer: float  # request about to be sent
    time_starttransfer: float  # first byte of the response
    time_total: float  # last byte
    num_connects: int
    exitcode: int
    errormsg: str | None


def parse_curl_json(text: str) -> CurlTiming:
    """curl's `-w '%{json}'` object (curl >= 7.70)."""
    try:
        doc = json.loads(text.strip().splitlines()[-1] if text.strip() else "")
    except json.JSONDecodeError as e:
        raise ParseError("curl", f"not JSON ({e})", text) from e
    if not isinstance(doc, dict) or "time_total" not in doc:
        raise ParseError("curl", "no time_total in -w %{json} output", text)
    return CurlTiming(
        http_version=str(doc.get("http_version", "")),
        response_code=int(doc.get("response_code", 0)),
        size_download=int(doc.get("size_download", 0)),
        time_connect=float(doc["time_connect"]),
        time_appconnect=float(doc.get("time_appconnect", 0.0)),
        time_pretransfer=float(doc["time_pretransfer"]),
        time_starttransfer=float(doc["time_starttransfer"]),
        time_total=float(doc["time_total"]),
        num_connects=int(doc.get("num_connects", 0)),
        exitcode=int(doc.get("exitcode", 0)),
        errormsg=doc.get("errormsg"),
    )


# -- h2load ---------------------------------------------------------------------------

_DURATION_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_duration_text(text: str) -> float:
    """h2load's durations ("909us", "51.17ms", "6.05s") in seconds."""
    m = re.fullmatch(r"([0-9.]+)(us|ms|s)", text.strip())
    if m is None:
        raise ParseError("h2load", f"not a duration: {text!r}", text)
    return float(m.group(1)) * _DURATION_UNITS[m.group(2)]


@dataclass(frozen=True)
class H2loadStat:
    """One row of h2load's min/max/mean/sd table, in seconds."""

    min: float
    max: float
    mean: float
    sd: float


@dataclass(frozen=True)
class H2loadSummary:
    application_protocol: str | None  # "h2c", "h2", "http/1.1"; None if no connection was made
    tls_protocol: str | None
    finished_in: float  # seconds, from before the first connect to the end (10 ms resolution above 1 s)
    requests_total: int
    started: int
    done: int
    succeeded: int
    failed: int
    errored: int
    timeout: int
    status_2xx: int
    bytes_total: int  # everything received: frames, headers, bodies
    bytes_headers: int
    bytes_data: int  # response bodies
    connect: H2loadStat | None
    first_byte: H2loadStat | None


_FINISHED = re.compile(r"^finished in ([0-9.]+(?:us|ms|s)),", re.M)
_REQUESTS = re.compile(
    r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout",
    re.M,
)
_STATUS = re.compile(r"^status codes: (\d+) 2xx", re.M)
_TRAFFIC = re.compile(r"^traffic: \S+ \((\d+)\) total, \S+ \((\d+)\) headers .*?, \S+ \((\d+)\) data", re.M)
_APP = re.compile(r"^Application protocol: (\S+)", re.M)
_TLS = re.compile(r"^TLS Protocol: (\S+)", re.M)
_NUM = r"([0-9.]+(?:us|ms|s))"


def _stat(text: str, label: str) -> H2loadStat | None:
    m = re.search(rf"^{re.escape(label)}\s*:\s+{_NUM}\s+{_NUM}\s+{_NUM}\s+{_NUM}", text, re.M)
    if m is None:
        return None
    return H2loadStat(*(parse_duration_text(g) for g in m.groups()))


def parse_h2load(text: str) -> H2loadSummary:
    """h2load's summary (nghttp2 1.52 format)."""
    finished, requests, traffic = _FINISHED.search(text), _REQUESTS.search(text), _TRAFFIC.search(text)
    if finished is None or requests is None or traffic is None:
        raise ParseError("h2load", "no 'finished in', 'requests:' or 'traffic:' line", text)
    status = _STATUS.search(text)
    app, tls = _APP.search(text), _TLS.search(text)
    counts = [int(g) for g in requests.groups()]
    return H2loadSummary(
        application_protocol=app.group(1) if app else None,
        tls_protocol=tls.group(1) if tls else None,
        finished_in=parse_duration_text(finished.group(1)),
        requests_total=counts[0],
        started=counts[1],
        done=counts[2],
        succeeded=counts[3],
        failed=counts[4],
        errored=counts[5],
        timeout=counts[6],
        status_2xx=int(status.group(1)) if status else 0,
        bytes_total=int(traffic.group(1)),
        bytes_headers=int(traffic.group(2)),
        bytes_data=int(traffic.group(3)),
        connect=_stat(text, "time for connect"),
        first_byte=_stat(text, "time to 1st byte"),
    )


@dataclass(frozen=True)
class H2loadRequest:
    """One row of h2load's --log-file."""

    start_us: int  # request submitted, microseconds since the epoch
    status: int  # HTTP status, -1 for a failed stream
    duration_us: int  # until the response's last byte

    @property
    def end_us(self) -> int:
        return self.start_us + self.duration_us


def parse_h2load_log(text: str) -> list[H2loadRequest]:
    """h2load's --log-file: start (us since epoch), status, duration (us), tab-separated; in start order."""
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        try:
            rows.append(H2loadRequest(int(fields[0]), int(fields[1]), int(fields[2])))
        except (IndexError, ValueError) as e:
            raise ParseError("h2load log", f"line {n}: {line!r}", text) from e
    return sorted(rows, key=lambda r: r.start_us)


# -- tcpdump (pcap files) ----------------------------------------------------------------


@dataclass(frozen=True)
class Packet:
    """The TCP/IPv4 facts of one captured frame."""

    time: float  # seconds since the epoch (the kernel's capture timestamp)
    src: str
    sport: int
    dst: str
    dport: int
    flags: int  # TCP flags byte (0x02 SYN, 0x10 ACK, 0x01 FIN, 0x04 RST)
    seq: int
    payload: int  # TCP payload bytes (from the IP length, so exact under a short snap length)


_PCAP_MAGIC = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
LINKTYPE_ETHERNET = 1


def _ip(raw: bytes) -> str:
    return ".".join(str(b) for b in raw)


def parse_pcap(data: bytes) -> list[Packet]:
    """TCP over IPv4 over Ethernet frames of a classic pcap file (micro- or nanosecond stamps)."""
    if len(data) < 24 or data[:4] not in _PCAP_MAGIC:
        raise ParseError("tcpdump", "not a pcap file", data[:24].hex())
    order, tick = _PCAP_MAGIC[data[:4]]
    linktype = struct.unpack(order + "I", data[20:24])[0]
    if linktype != LINKTYPE_ETHERNET:
        raise ParseError("tcpdump", f"link type {linktype}, expected Ethernet", data[:24].hex())
    packets, offset = [], 24
    while offset + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack(order + "IIII", data[offset : offset + 16])
        frame = data[offset + 16 : offset + 16 + caplen]
        offset += 16 + caplen
        if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
            continue  # not IPv4 (ARP and the like)
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 6 or len(ip) < ihl + 20:
            continue  # not TCP, or cut short
        total = struct.unpack("!H", ip[2:4])[0]
        tcp = ip[ihl:]
        sport, dport, seq = struct.unpack("!HHI", tcp[:8])
        doff = (tcp[12] >> 4) * 4
        packets.append(
            Packet(
                time=sec + frac * tick,
                src=_ip(ip[12:16]),
                sport=sport,
                dst=_ip(ip[16:20]),
                dport=dport,
                flags=tcp[13],
                seq=seq,
                payload=total - ihl - doff,
            )
        )
    return packets


def request_to_last_byte(
    packets: Sequence[Packet], server: str, port: int, *, tls: bool = False
) -> tuple[float, float]:
    """(first request, last response byte) of the connections to server:port, from a capture.

    The first request is the first client segment carrying payload (with
    `tls`, the first one after the server's handshake flight: the client's
    Finished, which its request leaves with or follows, by the client's own
    processing time, not a round trip); the last byte is the last
    server segment carrying payload before the client closed that
    connection, so a GOAWAY or close_notify answering the client's goodbye
    is not counted.
    """
    to_server = [p for p in packets if p.dst == server and p.dport == port]
    from_server = [p for p in packets if p.src == server and p.sport == port]
    closed: dict[int, float] = {}
    for p in to_server:
        if p.flags & 0x05:  # FIN or RST from the client
            closed.setdefault(p.sport, p.time)
    handshake_done: dict[int, float] = {}
    for p in from_server:
        if p.payload > 0:
            handshake_done.setdefault(p.dport, p.time)
    requests = [
        p.time for p in to_server if p.payload > 0 and (not tls or p.time > handshake_done.get(p.sport, float("inf")))
    ]
    responses = [p.time for p in from_server if p.payload > 0 and p.time < closed.get(p.dport, float("inf"))]
    if not requests or not responses:
        raise ParseError("tcpdump", f"no request or no response payload for {server}:{port}", f"{len(packets)} packets")
    return min(requests), max(responses)
