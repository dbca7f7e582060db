"""Bursts after idle periods, seen from the server: the window each resumed with, how its first flight left.

An HTTP server that answers a request after an idle period sends its
response with whatever window TCP kept across the idle time: Linux's
default restarts it (RFC 2861: halved for every RTO idle, down to the
initial window), RFC 7661 (newCWV) keeps it.  Three views of one
persistent connection, all split into bursts at the idle gaps:

- `resumed_windows` reads the server's tcp_probe trace: at each burst, the
  window before the idle period and the window the response went out with
  (the sample of the response's first ACK, taken before that ACK is
  processed).
- `burst_departures` reads a capture on the server's interface: each
  burst's data segments as they left (after any qdisc), its retransmitted
  segments (and how many of them first left in the first flight), and its
  first flight (what left before the first ACK came back), whose spread
  shows pacing (seed 002's Figure 10).
- `restart_window` and `burst_rounds` are the model set beside them:
  Linux's restart after idle, and the round trips slow start needs from a
  window to deliver a burst.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ground.cwnd import slow_start_rounds
from ground.errors import TrialError
from ground.tcpprobe import ProbeSample
from servers.parsers import Packet

__all__ = [
    "BurstDeparture",
    "BurstTraceError",
    "ResumedWindow",
    "burst_departures",
    "burst_rounds",
    "gain_pct",
    "restart_window",
    "resumed_windows",
    "split_at_idle",
]


class BurstTraceError(TrialError):
    """The trace or capture does not show the bursts the client requested."""


@dataclass(frozen=True)
class ResumedWindow:
    """One burst after an idle period, from the server's tcp_probe samples."""

    idle_s: float  # the gap in the server's trace (the request's arrival less the last ACK before)
    cwnd_before: int  # segments: the window when the connection went idle
    cwnd_resumed: int  # segments: the window the response's first flight went out with


def split_at_idle(times: Sequence[float], bursts: int) -> list[tuple[int, int]]:
    """(first, end) index ranges of `bursts` bursts: the times split at their bursts - 1 longest gaps.

    The client's idle periods are the longest gaps of a connection's trace: a
    gap within a burst (a retransmission timeout, 0.4 s on a 200 ms path,
    doubling when it fires again) would have to fire three times in a row
    to outlast an idle second plus the round trip around it.
    """
    if bursts < 1 or len(times) < bursts:
        raise BurstTraceError(f"{len(times)} events cannot hold {bursts} bursts")
    gaps = sorted(range(1, len(times)), key=lambda i: times[i] - times[i - 1], reverse=True)[: bursts - 1]
    cuts = [0, *sorted(gaps), len(times)]
    return list(itertools.pairwise(cuts))


def resumed_windows(samples: Sequence[ProbeSample], bursts: int) -> list[ResumedWindow]:
    """For each of the bursts - 1 idle gaps in one connection's server-side samples, the window before
    it and after it.

    The first sample after the gap is the request arriving (the window is
    restarted, or not, when the response is sent); the window the response
    went out with is in the first sample whose snd_nxt has moved past the
    request's, the first ACK of the response.
    """
    if len({s.flow for s in samples}) > 1:
        raise ValueError(f"one connection's samples, not {len({s.flow for s in samples})} flows'")
    out = []
    groups = split_at_idle([s.time for s in samples], bursts)
    for (_, end), (start, stop) in itertools.pairwise(groups):
        last, request = samples[end - 1], samples[start]
        resumed = next((s for s in samples[start:stop] if s.snd_nxt != request.snd_nxt), None)
        if resumed is None:
            raise BurstTraceError(f"the burst at {request.time:.3f} s shows no ACK of its response")
        out.append(ResumedWindow(round(request.time - last.time, 3), last.snd_cwnd, resumed.snd_cwnd))
    return out


@dataclass(frozen=True)
class BurstDeparture:
    """One burst's data segments as they left the server (a capture on its interface)."""

    start: float  # seconds (the capture's clock): the first data segment
    segments: int  # data segments sent, retransmissions included
    retransmitted: int  # segments that carried sequence numbers sent before
    first_flight: int  # segments sent before the first ACK of the burst came back
    first_flight_s: float  # from the first to the last segment of the first flight
    # retransmitted segments whose data first left in the first flight: what pacing the first flight
    # can save; the rest were lost from the rounds after it, which the ACKs clock
    first_flight_retransmitted: int = 0


def burst_departures(packets: Sequence[Packet], server: str, port: int, bursts: int) -> list[BurstDeparture]:
    """The server's data segments on `server:port`, split into `bursts` bursts at the idle gaps.

    A segment whose sequence range was sent before is a retransmission.  A
    burst's first flight ends with the first packet from the client after
    the burst began that carries no data: the first ACK of the response.
    """
    data = [p for p in packets if p.src == server and p.sport == port and p.payload > 0]
    acks = [p.time for p in packets if p.dst == server and p.dport == port and p.payload == 0 and not p.flags & 0x07]
    if len({(p.dst, p.dport) for p in data}) > 1:
        raise ValueError("one connection's packets, not several")
    out = []
    sent_up_to: int | None = None
    for start, stop in split_at_idle([p.time for p in data], bursts):
        burst = data[start:stop]
        t0 = burst[0].time
        first_ack = next((t for t in acks if t > t0), math.inf)
        flight = [p for p in burst if p.time < first_ack]
        flight_from, flight_to = flight[0].seq, (flight[-1].seq + flight[-1].payload) % 2**32
        retransmitted = from_flight = 0
        for p in burst:
            if sent_up_to is not None and _before(p.seq, sent_up_to):
                retransmitted += 1
                if p not in flight and not _before(p.seq, flight_from) and _before(p.seq, flight_to):
                    from_flight += 1
            end = (p.seq + p.payload) % 2**32
            if sent_up_to is None or _before(sent_up_to, end):
                sent_up_to = end
        out.append(BurstDeparture(t0, len(burst), retransmitted, len(flight), flight[-1].time - t0, from_flight))
    return out


def _before(a: int, b: int) -> bool:
    """Sequence number a comes before b (RFC 1982 arithmetic on 32 bits)."""
    return a != b and (b - a) % 2**32 < 2**31


def restart_window(cwnd: int, idle_s: float, rto_s: float, initcwnd: int) -> int:
    """Linux's window after idle with tcp_slow_start_after_idle=1 (tcp_cwnd_restart): halved once for
    every whole RTO the idle time exceeds, never below min(initial window, cwnd)."""
    floor = min(initcwnd, cwnd)
    left = idle_s - rto_s
    while left > 0 and cwnd > floor:
        cwnd >>= 1
        left -= rto_s
    return max(cwnd, floor)


def burst_rounds(window: int, segments: int) -> int:
    """Round trips to deliver `segments` starting from `window`, doubling each round (no loss)."""
    return slow_start_rounds(max(window, 1), segments)


def gain_pct(baseline_s: float, other_s: float) -> float:
    """Seed 002's gain: (Tr - Tc) / Tr x 100, Tr the baseline's transfer time and Tc the other's."""
    if baseline_s <= 0:
        raise ValueError(f"a baseline transfer time must be positive, not {baseline_s}")
    return (baseline_s - other_s) / baseline_s * 100
