"""Latency under load: the smoothed RTT a trial's sender saw, and the queueing delay it implies.

tcp_probe reports the sender's smoothed RTT (`srtt_us`, the kernel's
SRTT: an exponentially weighted mean of its RTT samples, gain 1/8) at every
ACK; over a trial those values say how much delay the loaded path added to
the base RTT the lab set (the propagation delay both ways, with an empty
bottleneck queue).  `rtt_under_load` takes the percentiles of a trial's
ACK-time SRTTs (every flow of the sender pooled, each ACK weighted alike),
and `RttUnderLoad.columns` gives them as a row's metrics with the queueing
delay over the base RTT, in the field's terms ("RTT under load", as flent's
RRUL tests report latency under load).  Where the lab sampled the bottleneck
queue (topologies.queue_sampler), `queue_columns` gives its occupancy over the
trial in packets: what held that delay.  Where a ping probe crossed the
bottleneck beside the flows (topologies.ping_probe, a trial's `probe_hz`),
`ping_columns` gives its replies' RTT percentiles and its unanswered
requests: the same delay, measured by a packet of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ground.parsers import PingResult
from ground.series import QueueSample
from ground.tcpprobe import ProbeSample

METRICS = ("rtt_p50_ms", "rtt_p95_ms", "rtt_p99_ms", "queueing_delay_p50_ms", "queueing_delay_p95_ms")
QUEUE_METRICS = ("queue_p50_pkts", "queue_p95_pkts", "queue_max_pkts", "queue_samples", "queue_reads_failed")
PING_METRICS = ("ping_p50_ms", "ping_p95_ms", "ping_p99_ms", "ping_sent", "ping_lost")


@dataclass(frozen=True)
class RttUnderLoad:
    """Percentiles over a trial's ACKs (`samples` of them), milliseconds: of the SRTT, and of the delay it
    adds to each flow's base RTT (the queueing delay; negative only by the SRTT's own error when idle)."""

    p50_ms: float
    p95_ms: float
    p99_ms: float
    queueing_p50_ms: float
    queueing_p95_ms: float
    samples: int

    def columns(self) -> dict[str, float]:
        """As a row's metrics (METRICS)."""
        values = (self.p50_ms, self.p95_ms, self.p99_ms, self.queueing_p50_ms, self.queueing_p95_ms)
        return {name: round(v, 3) for name, v in zip(METRICS, values, strict=True)}


def rtt_under_load(flows: Iterable[tuple[Iterable[ProbeSample], float]]) -> RttUnderLoad | None:
    """The percentiles of the samples that carry an SRTT (the kernel reports 0 before the first RTT
    sample), each group of samples with its flows' base RTT in ms (a dumbbell's pairs differ); None where
    no sample carries one."""
    rtts, queued = [], []
    for samples, base_ms in flows:
        srtt = np.array([s.srtt_us for s in samples if s.srtt_us > 0], dtype=float) / 1e3
        rtts.append(srtt)
        queued.append(srtt - base_ms)
    every = np.concatenate(rtts) if rtts else np.array([])
    if every.size == 0:
        return None
    p50, p95, p99 = np.percentile(every, [50, 95, 99])
    q50, q95 = np.percentile(np.concatenate(queued), [50, 95])
    return RttUnderLoad(float(p50), float(p95), float(p99), float(q50), float(q95), int(every.size))


def columns(flows: Iterable[tuple[Iterable[ProbeSample], float]]) -> dict[str, float]:
    """`rtt_under_load(flows).columns()`, or no columns where no sample carries an SRTT."""
    found = rtt_under_load(flows)
    return found.columns() if found is not None else {}


def queue_columns(samples: Sequence[QueueSample], failed: int = 0) -> dict[str, float]:
    """The bottleneck queue's occupancy over the samples, in packets (QUEUE_METRICS: the median, the 95th
    percentile, the largest, how many samples, and how many reads failed and left a gap); only the failed
    reads without a sample."""
    if not samples:
        return {"queue_reads_failed": failed} if failed else {}
    packets = np.array([s.packets for s in samples], dtype=float)
    p50, p95 = np.percentile(packets, [50, 95])
    return {
        "queue_p50_pkts": round(float(p50), 1),
        "queue_p95_pkts": round(float(p95), 1),
        "queue_max_pkts": int(packets.max()),
        "queue_samples": len(samples),
        "queue_reads_failed": failed,
    }


def ping_columns(result: PingResult) -> dict[str, float]:
    """A ping probe's replies (PING_METRICS): their RTT percentiles, ms, and of the requests sent how many
    had no reply (dropped at the bottleneck, or still on their way when the probe stopped); only the counts
    where no reply came."""
    counts: dict[str, float] = {"ping_sent": result.transmitted, "ping_lost": result.transmitted - result.received}
    if not result.rtts_ms:
        return counts
    p50, p95, p99 = np.percentile(np.array(result.rtts_ms, dtype=float), [50, 95, 99])
    return {"ping_p50_ms": round(float(p50), 3), "ping_p95_ms": round(float(p95), 3),
            "ping_p99_ms": round(float(p99), 3), **counts}  # fmt: skip
