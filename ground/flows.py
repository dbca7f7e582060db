"""What a study of several flows through one bottleneck measures, from output already captured.

Throughput over time and over windows (iperf3's -J report, with -i 0.1 for
100 ms bins), cwnd and ssthresh over time (tcp:tcp_probe samples), the
bottleneck queue's counters (`tc -s -j qdisc show`), what a UDP flow
delivered, and Jain's fairness index.  Pure functions over text and samples;
nothing here runs a tool.  Each is tested on real output in tests/fixtures.
A report that lacks what is asked raises `ParseError` (tool, what was wrong,
the start of the text); data that cannot answer the question asked of it
(a window outside the run, rates that are all zero) raises `FlowDataError`.
Both are trial errors: the trial fails, the run goes on.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ground.errors import TrialError
from ground.parsers import ParseError, iperf3_json
from ground.tcpprobe import UNSET_SSTHRESH, ProbeSample

__all__ = [
    "CwndPoint",
    "Flow",
    "FlowDataError",
    "FlowSeries",
    "QdiscStats",
    "ThroughputBin",
    "UdpDelivery",
    "find_qdisc",
    "flow_series",
    "jain_index",
    "qdisc_delta",
    "qdisc_stats",
    "sampled_every",
    "throughput_bins",
    "udp_delivered",
    "window_throughput",
]


class FlowDataError(TrialError, ValueError):
    """The captured data cannot answer what was asked of it (a window outside the run, no traffic at all)."""


# Times within this many seconds are one time: iperf3 prints microseconds, and
# k * 0.1 is not exactly the decimal it means.
_EPS = 1e-9


# --- throughput over time, from iperf3's intervals --------------------------------------------


@dataclass(frozen=True)
class ThroughputBin:
    start_s: float
    end_s: float
    bytes: float  # prorated from iperf3's intervals, so not always whole
    retransmits: int | None  # only a sender's report counts them

    @property
    def bits_per_second(self) -> float:
        return self.bytes * 8 / (self.end_s - self.start_s)


@dataclass(frozen=True)
class _Interval:
    start: float
    end: float
    bytes: int
    retransmits: int | None


# iperf3 reads the clock for an interval's end and the next one's start separately: under
# load they differ by tens of microseconds (0.500263 s, then 0.500305 s, seen in a dumbbell run).
STEP_SLACK_S = 0.001
# iperf3 leaves out of its report an interval shorter than a tenth of its reporting interval
# that carried no bytes (its guard against empty slivers: here a stats tick that came late,
# then the next on time).  Such a gap held nothing, so the intervals either side of it are
# joined: seen in CI's dumbbell run under load (0.495431 s, then 0.50011 s, with -i 0.1),
# and made to happen by stopping iperf3 (tests/fixtures/iperf3_late_tick_capture.py).
SKIPPED_SHARE = 0.1


def _number(d: dict[str, Any], key: str, where: str, text: str) -> float:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError("iperf3", f"{where} has no number {key!r} (got {value!r})", text)
    return float(value)


def _intervals(text: str, stream: int | None, measured_at: str) -> list[_Interval]:
    raw = iperf3_json(text).get("intervals")
    if not isinstance(raw, list) or not raw:
        raise ParseError("iperf3", "no intervals (was it run with -i 0?)", text)
    out: list[_Interval] = []
    gaps: list[tuple[str, float, float]] = []  # (where, start, the end before): checked once the intervals are known
    for i, interval in enumerate(raw):
        where = f"interval {i}"
        if not isinstance(interval, dict):
            raise ParseError("iperf3", f"{where} is not an object", text)
        if stream is None:
            part = interval.get("sum")
        else:
            streams = interval.get("streams") or []
            part = next((s for s in streams if isinstance(s, dict) and s.get("socket") == stream), None)
            if part is None:
                sockets = [s.get("socket") for s in streams if isinstance(s, dict)]
                raise ParseError("iperf3", f"{where} has no stream with socket {stream} (it has {sockets})", text)
            where += f", stream {stream}"
        if not isinstance(part, dict):
            raise ParseError("iperf3", f"{where} has no sum", text)
        if part.get("omitted"):
            continue  # the warm-up the run was told to leave out (-O)
        if not isinstance(part.get("sender"), bool):
            raise ParseError("iperf3", f"{where} does not say whether its sender or its receiver measured it", text)
        side = "sender" if part["sender"] else "receiver"
        if side != measured_at:
            raise ParseError(
                "iperf3",
                f"{where} was measured at the {side}, not the {measured_at}"
                + (
                    " (bytes handed to the socket, not delivered: the receiver's intervals are in the"
                    " client's report with -R, or in the server's own report, iperf3 -s -J)"
                    if side == "sender"
                    else ""
                ),
                text,
            )
        start, end = _number(part, "start", where, text), _number(part, "end", where, text)
        count = int(_number(part, "bytes", where, text))
        retransmits = part.get("retransmits")
        if end < start or (end == start and count):
            raise ParseError("iperf3", f"{where} runs from {start} s to {end} s", text)
        if out:
            gaps.append((where, start, out[-1].end))
            start = out[-1].end  # iperf3 stamps each interval's ends apart, and leaves out empty slivers
        if end > start:
            out.append(_Interval(start, end, count, retransmits if isinstance(retransmits, int) else None))
    if not out:
        raise ParseError("iperf3", "every interval is omitted (-O) or empty", text)
    reporting = statistics.median(iv.end - iv.start for iv in out)  # iperf3's -i, as it ran
    for where, start, before in gaps:
        if not -STEP_SLACK_S <= start - before <= max(STEP_SLACK_S, SKIPPED_SHARE * reporting):
            raise ParseError("iperf3", f"{where} starts at {start} s, the one before ended at {before} s", text)
    return out


def throughput_bins(
    report: str,
    bin_s: float = 0.1,
    *,
    stream: int | None = None,
    measured_at: Literal["receiver", "sender"] = "receiver",
    offset_s: float = 0.0,
) -> list[ThroughputBin]:
    """A flow's throughput in bins of `bin_s`, from an iperf3 -J report run with -i `bin_s` or finer.

    The bins lie on a grid of `bin_s` on the run's clock (the report's time
    plus `offset_s`, where the run started this flow); the first and last are
    clipped to the span the report covers.  Each interval's bytes are spread
    over the bins it overlaps in proportion to the overlap (iperf3 gives one
    count per interval, so within one the rate is taken as even); its
    retransmits count in the bin that holds its midpoint.  `stream` picks one
    stream of a -P run by its socket number, else the report's sum.

    Only the receiver's intervals say what was delivered; a sender's count
    what the application wrote, which runs ahead by the socket buffer (and,
    for UDP, includes what the bottleneck dropped).  So a sender's report is
    refused unless `measured_at="sender"` asks for it (a TCP sender's
    intervals carry the retransmits).  iperf3's intervals must be no
    longer than about `bin_s`: coarser ones cannot be split into finer bins.
    """
    if not bin_s > 0:
        raise ValueError(f"bin_s must be positive, got {bin_s!r}")
    intervals = _intervals(report, stream, measured_at)
    lengths = [iv.end - iv.start for iv in (intervals[:-1] if len(intervals) > 1 else intervals)]
    typical = statistics.median(lengths)
    if typical > 1.5 * bin_s:
        raise ParseError(
            "iperf3",
            f"intervals of {typical:.3g} s, longer than the {bin_s:g} s bins asked for (run iperf3 with -i {bin_s:g})",
            report,
        )
    first, last = intervals[0].start + offset_s, intervals[-1].end + offset_s
    k0, k1 = math.floor(first / bin_s + _EPS), math.ceil(last / bin_s - _EPS)
    edges = [first, *(k * bin_s for k in range(k0 + 1, k1)), last]
    counts = [0.0] * (len(edges) - 1)
    for iv in intervals:
        start, end = iv.start + offset_s, iv.end + offset_s
        j = max(bisect.bisect_right(edges, start) - 1, 0)
        while j < len(counts) and edges[j] < end:
            overlap = min(end, edges[j + 1]) - max(start, edges[j])
            if overlap > 0:
                counts[j] += iv.bytes * overlap / (end - start)
            j += 1
    retransmits: list[int] | None = None
    if all(iv.retransmits is not None for iv in intervals):
        retransmits = [0] * len(counts)
        for iv in intervals:
            middle = (iv.start + iv.end) / 2 + offset_s
            j = min(max(bisect.bisect_right(edges, middle) - 1, 0), len(counts) - 1)
            retransmits[j] += iv.retransmits or 0
    return [
        ThroughputBin(edges[j], edges[j + 1], counts[j], retransmits[j] if retransmits is not None else None)
        for j in range(len(counts))
    ]


def window_throughput(bins: Sequence[ThroughputBin], start_s: float, end_s: float) -> float:
    """The mean rate (bits/s) from `start_s` to `end_s`: the bytes of the bins in it, a bin that
    straddles an edge counted in proportion, over the window's length.

    The window must lie within the bins, with no gap between them: a rate
    over time that was not measured is not known.  The whole run is
    `window_throughput(bins, bins[0].start_s, bins[-1].end_s)`.
    """
    if not bins:
        raise ValueError("window_throughput of no bins")
    if not end_s > start_s:
        raise ValueError(f"window from {start_s:g} s to {end_s:g} s is empty")
    first, last = bins[0].start_s, bins[-1].end_s
    if start_s < first - _EPS or end_s > last + _EPS:
        raise FlowDataError(
            f"window {start_s:g}-{end_s:g} s reaches outside the run's bins, {first:g}-{last:g} s"
            + (" (the flow ended early?)" if end_s > last + _EPS else "")
        )
    for a, b in itertools.pairwise(bins):
        if b.start_s < a.end_s - _EPS:
            raise ValueError(f"bins overlap: one ends at {a.end_s:g} s, the next starts at {b.start_s:g} s")
        if b.start_s > a.end_s + _EPS and a.end_s < end_s and b.start_s > start_s:
            raise FlowDataError(f"the bins leave {a.end_s:g}-{b.start_s:g} s unmeasured, inside the window")
    total = 0.0
    for b in bins:
        overlap = min(end_s, b.end_s) - max(start_s, b.start_s)
        if overlap > 0:
            total += b.bytes * overlap / (b.end_s - b.start_s)
    return total * 8 / (end_s - start_s)


# --- fairness ----------------------------------------------------------------------------------


def jain_index(rates: Sequence[float]) -> float:
    """Jain's fairness index, (sum x)^2 / (n * sum x^2): 1 for equal shares, 1/n when one flow takes all."""
    values = list(rates)
    if not values:
        raise ValueError("Jain's index of no rates")
    if any(not math.isfinite(x) or x < 0 for x in values):
        raise ValueError(f"Jain's index needs finite rates of 0 or more, got {values}")
    squares = sum(x * x for x in values)
    if squares == 0:
        raise FlowDataError(f"Jain's index is undefined when every rate is 0: got {values}")
    return sum(values) ** 2 / (len(values) * squares)


# --- the bottleneck queue's counters -----------------------------------------------------------


@dataclass(frozen=True)
class QdiscStats:
    """One qdisc's counters as `tc -s` reports them: cumulative since the qdisc was made,
    except backlog and qlen, which are what it held at the reading."""

    dev: str | None  # given when tc showed every device
    kind: str
    handle: str  # "10:"
    parent: str  # "1:1", or "root"
    sent_bytes: int
    sent_packets: int
    drops: int
    overlimits: int
    requeues: int
    backlog_bytes: int
    qlen: int  # packets queued

    @property
    def drop_fraction(self) -> float | None:
        """Drops over the packets offered that have left (sent or dropped); None if none were."""
        offered = self.sent_packets + self.drops
        return self.drops / offered if offered else None


_TC_COUNTERS = {
    "sent_bytes": "bytes",
    "sent_packets": "packets",
    "drops": "drops",
    "overlimits": "overlimits",
    "requeues": "requeues",
    "backlog_bytes": "backlog",
    "qlen": "qlen",
}


def qdisc_stats(tc_json: str) -> list[QdiscStats]:
    """The qdiscs of `tc -s -j qdisc show [dev DEV]` with their counters, in tc's order.

    A parent counts what its children do: an HTB root's drops are its leaf
    FIFO's drops again, so count a bottleneck's drops at the leaf that holds
    its queue (`find_qdisc`).
    """
    try:
        doc = json.loads(tc_json)
    except json.JSONDecodeError as e:
        raise ParseError("tc", f"not JSON ({e})", tc_json) from e
    if not isinstance(doc, list):
        raise ParseError("tc", "not a JSON list of qdiscs", tc_json)
    out = []
    for i, q in enumerate(doc):
        if not isinstance(q, dict) or not isinstance(q.get("kind"), str) or not isinstance(q.get("handle"), str):
            raise ParseError("tc", f"qdisc {i} has no kind and handle", tc_json)
        name = f"qdisc {q['kind']} {q['handle']}"
        counters = {}
        for field, key in _TC_COUNTERS.items():
            value = q.get(key)
            if isinstance(value, bool) or not isinstance(value, int):
                missing = "no statistics (run tc with -s)" if key == "bytes" and key not in q else f"no counter {key!r}"
                raise ParseError("tc", f"{name} has {missing}", tc_json)
            counters[field] = value
        parent = "root" if q.get("root") else q.get("parent")
        if not isinstance(parent, str):
            raise ParseError("tc", f"{name} is neither root nor has a parent", tc_json)
        dev = q.get("dev")
        out.append(QdiscStats(dev if isinstance(dev, str) else None, q["kind"], q["handle"], parent, **counters))
    return out


def find_qdisc(stats: Sequence[QdiscStats], handle: str, dev: str | None = None) -> QdiscStats:
    """The qdisc with this handle (on `dev`, when tc showed several devices)."""
    found = [q for q in stats if q.handle == handle and (dev is None or q.dev == dev)]
    if len(found) != 1:
        what = "no" if not found else "more than one"
        raise FlowDataError(f"{what} qdisc {handle}" + (f" on {dev}" if dev else "") + f"; there are: {_names(stats)}")
    return found[0]


def _names(stats: Sequence[QdiscStats]) -> str:
    return ", ".join(f"{q.kind} {q.handle}" + (f" on {q.dev}" if q.dev else "") for q in stats) or "none"


def qdisc_delta(before: Sequence[QdiscStats], after: Sequence[QdiscStats]) -> list[QdiscStats]:
    """What each qdisc counted between two readings (backlog and qlen: as at the second).

    The two must hold the same qdiscs, none of them made anew in between
    (a counter that went down): otherwise the difference means nothing.
    """

    def key(q: QdiscStats) -> tuple[str | None, str, str, str]:
        return (q.dev, q.kind, q.handle, q.parent)

    earlier = {key(q): q for q in before}
    if len(before) != len(after) or set(earlier) != {key(q) for q in after}:
        raise FlowDataError(f"the readings hold different qdiscs: {_names(before)}, then {_names(after)}")
    out = []
    for q in after:
        b = earlier[key(q)]
        counts = {
            field: getattr(q, field) - getattr(b, field)
            for field in ("sent_bytes", "sent_packets", "drops", "overlimits", "requeues")
        }
        went_down = [f"{field} {getattr(b, field)} -> {getattr(q, field)}" for field, d in counts.items() if d < 0]
        if went_down:
            raise FlowDataError(
                f"qdisc {q.kind} {q.handle}'s counters went down ({', '.join(went_down)}):"
                " was it made anew between the readings?"
            )
        out.append(QdiscStats(q.dev, q.kind, q.handle, q.parent, **counts, backlog_bytes=q.backlog_bytes, qlen=q.qlen))
    return out


# --- cwnd and ssthresh over time, from tcp_probe -----------------------------------------------


@dataclass(frozen=True)
class Flow:
    """A TCP connection's data direction, named from its sender's end."""

    src: str
    sport: int
    dst: str
    dport: int

    def __str__(self) -> str:
        return f"{_host(self.src)}:{self.sport}>{_host(self.dst)}:{self.dport}"

    @classmethod
    def parse(cls, text: str) -> Flow:
        """From tcp_probe's "src:port>dst:port" (IPv6 in brackets)."""
        src, sep, dst = text.partition(">")
        (src_host, _, sport), (dst_host, _, dport) = src.rpartition(":"), dst.rpartition(":")
        if not sep or not sport.isdigit() or not dport.isdigit() or not src_host or not dst_host:
            raise ValueError(f"not a flow as tcp_probe names it (src:port>dst:port): {text!r}")
        return cls(src_host.strip("[]"), int(sport), dst_host.strip("[]"), int(dport))


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


@dataclass(frozen=True)
class CwndPoint:
    t: float  # seconds since the series' t0
    cwnd: int  # segments
    ssthresh: int | None  # segments; None until the first reduction sets it


@dataclass(frozen=True)
class FlowSeries:
    flow: Flow
    points: tuple[CwndPoint, ...]
    acked_bytes: int  # how far snd_una moved over the samples: what this side sent and had acknowledged


def _acked(samples: Sequence[ProbeSample]) -> int:
    total = 0
    for a, b in itertools.pairwise(samples):
        step = (b.snd_una - a.snd_una) % 2**32
        total += step - 2**32 if step >= 2**31 else step  # sequence arithmetic, as the kernel's after()
    return total


def flow_series(samples: Iterable[ProbeSample], t0: float | None = None) -> list[FlowSeries]:
    """Each connection's cwnd and ssthresh over time, every sample kept, in order of first sample.

    tcp_probe fires on both ends of a connection; the end that sent the data
    is the one whose snd_una moved further (its peer's moves only by what it
    sent back, e.g. iperf3's cookie), and only that end is kept; when both
    moved alike (a connection that carried nothing) both are.  Times are
    seconds since `t0` (CLOCK_MONOTONIC, as the samples), by default the
    first sample of all, so that every flow shares one axis.  A connection
    that carried only control (iperf3's own) is a flow here too: its
    `acked_bytes` tells it apart.
    """
    by_socket: dict[str, list[ProbeSample]] = {}
    for s in samples:
        by_socket.setdefault(s.flow, []).append(s)
    if not by_socket:
        return []
    if t0 is None:
        t0 = min(s.time for group in by_socket.values() for s in group)
    series: dict[Flow, FlowSeries] = {}
    for name, group in by_socket.items():
        group.sort(key=lambda s: s.time)
        points = tuple(
            CwndPoint(s.time - t0, s.snd_cwnd, None if s.ssthresh == UNSET_SSTHRESH else s.ssthresh) for s in group
        )
        flow = Flow.parse(name)
        series[flow] = FlowSeries(flow, points, _acked(group))
    kept = []
    for flow, one in series.items():
        peer = series.get(Flow(flow.dst, flow.dport, flow.src, flow.sport))
        if peer is None or one.acked_bytes >= peer.acked_bytes:
            kept.append(one)
    return sorted(kept, key=lambda f: f.points[0].t)


def sampled_every(points: Sequence[CwndPoint], step_s: float, until_s: float) -> list[CwndPoint]:
    """The window as it stood at each multiple of `step_s` up to `until_s`: the last point at or
    before that time (a CSV column holds this, the trace itself may hold every ACK of minutes).

    A time before the first point has no window and is left out; one after the last point
    keeps the last window (the flow sent nothing more that changed it).
    """
    if not step_s > 0:
        raise ValueError(f"step_s must be positive, got {step_s!r}")
    times = [p.t for p in points]
    out = []
    for k in range(1, math.floor(until_s / step_s + _EPS) + 1):
        i = bisect.bisect_right(times, k * step_s + _EPS) - 1
        if i >= 0:
            out.append(CwndPoint(round(k * step_s, 9), points[i].cwnd, points[i].ssthresh))
    return out


# --- what a UDP flow delivered -----------------------------------------------------------------


@dataclass(frozen=True)
class UdpDelivery:
    delivered_bps: float  # what arrived: the receiver's bytes over its seconds
    seconds: float  # the receiver's
    delivered_bytes: int
    datagrams_received: int
    datagrams_lost: int  # the gaps the receiver saw in the sequence
    datagrams_sent: int | None  # None in the receiving server's own report, which is not told
    sent_bps: float | None

    @property
    def undelivered(self) -> int | None:
        """Datagrams sent that never arrived: the gaps, and those after the last one received
        (lost, or still queued or in flight when the test ended)."""
        return None if self.datagrams_sent is None else self.datagrams_sent - self.datagrams_received


def udp_delivered(report: str) -> UdpDelivery:
    """What a UDP flow delivered, from an iperf3 -u -J report: the client's (either direction)
    or the receiving server's.

    The rate is `end.sum_received`'s: what the receiver got.  `end.sum` is no
    measure of it: in a client's report it holds the sender's bytes and rate
    beside the receiver's loss count.  iperf3's `packets` on the receiving
    side is the highest sequence number seen (received plus lost).
    """
    doc = iperf3_json(report)
    start, end = doc.get("start") or {}, doc.get("end") or {}
    test = start.get("test_start") or {}
    if test.get("protocol") != "UDP":
        raise ParseError("iperf3", f"not a UDP report (protocol {test.get('protocol')!r})", report)
    if "connecting_to" in start:
        server = False
    elif "accepted_connection" in start:
        server = True
    else:
        raise ParseError("iperf3", "start has neither connecting_to (a client's) nor accepted_connection", report)
    reverse = bool(test.get("reverse"))
    if server and reverse:
        raise ParseError(
            "iperf3", "the sending server's report (-R) does not know what arrived: read the client's", report
        )
    received = end.get("sum_received")
    if not isinstance(received, dict):
        raise ParseError("iperf3", "no end.sum_received", report)
    expected = int(_number(received, "packets", "end.sum_received", report))
    lost = int(_number(received, "lost_packets", "end.sum_received", report))
    sent_count: int | None = None
    sent_bps: float | None = None
    if not server:  # the receiving server is not told what was sent
        sent = end.get("sum_sent")
        if not isinstance(sent, dict):
            raise ParseError("iperf3", "no end.sum_sent", report)
        sent_count = int(_number(sent, "packets", "end.sum_sent", report))
        sent_bps = _number(sent, "bits_per_second", "end.sum_sent", report)
    return UdpDelivery(
        delivered_bps=_number(received, "bits_per_second", "end.sum_received", report),
        seconds=_number(received, "seconds", "end.sum_received", report),
        delivered_bytes=int(_number(received, "bytes", "end.sum_received", report)),
        datagrams_received=expected - lost,
        datagrams_lost=lost,
        datagrams_sent=sent_count,
        sent_bps=sent_bps,
    )
