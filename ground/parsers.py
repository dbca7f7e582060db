"""Parsers for what the measuring tools print (ping, iperf3), and the kernel's SNMP counters.

Each takes the tool's captured text and returns typed numbers; each is tested
on real output kept in tests/fixtures.  A parser that cannot find what it
needs raises `ParseError` quoting the start of the text.  Ping's command line
is built here too, beside the parser of what it prints, for the lab and
verification alike.  (iperf3's lives with its server, in servers/iperf.py.)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ground.errors import TrialError


class ParseError(TrialError, ValueError):
    def __init__(self, tool: str, why: str, text: str) -> None:
        super().__init__(f"{tool} output: {why}: {text[:300]!r}")


@dataclass(frozen=True)
class PingResult:
    rtts_ms: list[float]
    transmitted: int
    received: int


def ping_argv(
    address: str, count: int, interval_s: float, *, deadline_s: float | None = None, reply_wait_s: float | None = None
) -> list[str]:
    """`count` echo requests to `address`, one every `interval_s`, numeric output; stop after `deadline_s`
    in all (-w; with count 1: at the first reply) or wait at most `reply_wait_s` for each reply (-W)."""
    argv = ["ping", "-n", "-c", str(count), "-i", f"{interval_s:g}"]
    if deadline_s is not None:
        argv += ["-w", f"{deadline_s:g}"]
    if reply_wait_s is not None:
        argv += ["-W", f"{reply_wait_s:g}"]
    return [*argv, address]


_PING_REPLY = re.compile(r"icmp_seq=(\d+) .*?time=([0-9.]+) ms")
_PING_SUMMARY = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")


def parse_ping(text: str) -> PingResult:
    """Per-reply RTTs (duplicates ignored) and the transmitted/received counts."""
    seen: dict[int, float] = {}
    for seq, rtt in _PING_REPLY.findall(text):
        seen.setdefault(int(seq), float(rtt))
    summary = _PING_SUMMARY.search(text)
    if summary is None:
        raise ParseError("ping", "no statistics line", text)
    return PingResult([seen[k] for k in sorted(seen)], int(summary.group(1)), int(summary.group(2)))


@dataclass(frozen=True)
class IperfTcp:
    goodput_bps: float  # payload bits per second at the receiver
    seconds: float
    retransmits: int | None


@dataclass(frozen=True)
class IperfUdp:
    packets: int
    lost: int
    seconds: float


def iperf3_json(text: str) -> dict[str, Any]:
    """iperf3's -J report as a dict; a report that is not one, or that carries iperf3's error, raises."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParseError("iperf3", f"not JSON ({e})", text) from e
    if not isinstance(doc, dict):
        raise ParseError("iperf3", "not a JSON object", text)
    if doc.get("error"):
        raise ParseError("iperf3", f"error: {doc['error']}", text)
    return doc


def parse_iperf3_tcp(text: str) -> IperfTcp:
    """Goodput as the receiver saw it (`end.sum_received`), omitted seconds excluded."""
    end = iperf3_json(text).get("end", {})
    received = end.get("sum_received")
    if not received:
        raise ParseError("iperf3", "no end.sum_received", text)
    sent = end.get("sum_sent", {})
    return IperfTcp(float(received["bits_per_second"]), float(received["seconds"]), sent.get("retransmits"))


def parse_iperf3_udp(text: str) -> IperfUdp:
    """Datagrams sent and lost as the receiver counted them (`end.sum`)."""
    end = iperf3_json(text).get("end", {})
    total = end.get("sum")
    if not total or "lost_packets" not in total:
        raise ParseError("iperf3", "no end.sum with lost_packets", text)
    return IperfUdp(int(total["packets"]), int(total["lost_packets"]), float(total["seconds"]))


def parse_snmp(text: str, protocol: str) -> dict[str, int]:
    """One protocol's counters from /proc/net/snmp (a line of names, then a line of values,
    each starting with "Udp:" and the like), by name."""
    rows = [line.split()[1:] for line in text.splitlines() if line.startswith(f"{protocol}:")]
    if len(rows) != 2 or len(rows[0]) != len(rows[1]):
        raise ParseError("/proc/net/snmp", f"no {protocol}: header and values", text)
    try:
        return dict(zip(rows[0], (int(v) for v in rows[1]), strict=True))
    except ValueError as e:
        raise ParseError("/proc/net/snmp", f"{protocol}: a value is not a number ({e})", text) from e
