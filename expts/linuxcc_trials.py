"""Study linuxcc's scenarios and what one trial's row gives: its window, its drops, its throughput.

The four flows of seed 004 (WrFl-1 and 1a alone on the path, 2 and 2a
beside 10 Mbit/s of UDP; 1.3 s and 1.7 s round trips) and the algorithms
Linux ships; then a trial's values, each a function of one row, which the
figures (expts/linuxcc.py) and the claims (expts/linuxcc_claims.py) read:
the trial is the unit of every claim.
"""

from __future__ import annotations

import math
import statistics

from ground.path import IP_UDP_HEADERS, PathSpec
from ground.trials import Row
from kmod import loader
from netrepro.studykit.spec import Rows, Series

ALGORITHMS = loader.LINUX_SHIPS  # bic cubic highspeed htcp hybla illinois lp reno scalable vegas veno westwood yeah
FRAME_BYTES = 3500  # seed 004's packet, here a full frame on the wire
MTU = FRAME_BYTES - 14

CORE_RATE, CORE_QUEUE, CORE_DELAY = "11mbit", "15p", "250ms"
CROSS_RATE = "10mbit"

WRFL_1 = Series("WrFl-1", {"rtt": "1300ms"})
WRFL_1A = Series("WrFl-1a", {"rtt": "1700ms"})
WRFL_2 = Series("WrFl-2", {"rtt": "1300ms", "cross_rate": CROSS_RATE})
WRFL_2A = Series("WrFl-2a", {"rtt": "1700ms", "cross_rate": CROSS_RATE})
SCENARIOS = (WRFL_1, WRFL_1A, WRFL_2, WRFL_2A)

# -- reading the trials -----------------------------------------------------------------------


def ok_rows(rows: Rows, series: str | None = None, cc: str | None = None) -> list[Row]:
    return [r for r in rows if r.ok and (series is None or r.series == series) and (cc is None or r.cc == cc)]


def median_of(rows: Rows, series: str, cc: str, metric: str) -> float | None:
    values = [r.measured(metric) for r in ok_rows(rows, series, cc) if r.text(metric)]
    return statistics.median(values) if values else None


def window_series(row: Row) -> list[tuple[float, int]]:
    """(seconds, cwnd in segments) of one trial, from its row's cwnd_series."""
    step = row.measured("window_step_s")
    return [(round((k + 1) * step, 6), int(c)) for k, c in enumerate(row.text("cwnd_series").split(";")) if c]


def time_to_window(row: Row, segments: int) -> float | None:
    """When the window first reached `segments` (None: never)."""
    return next((t for t, c in window_series(row) if c >= segments), None)


def reach_time(rows: Rows, series: str, cc: str, segments: int = 100) -> float | None:
    """The median over trials of when the window first reached `segments` (trials that never did left out)."""
    times = [t for r in ok_rows(rows, series, cc) if (t := time_to_window(r, segments)) is not None]
    return statistics.median(times) if times else None


def path_of(row: Row) -> PathSpec:
    return PathSpec.parse(rtt=row.text("rtt"), rate=row.text("rate") or CORE_RATE, mtu=int(row.text("mtu") or MTU))


def tcp_share(row: Row) -> float:
    """Payload bits/s left to TCP at the core: its rate less the UDP frames delivered (payload x frame/payload)."""
    path = path_of(row)
    core = path.rate_down.bps
    if row.text("cross_delivered_mbit"):
        datagram = path.mtu - IP_UDP_HEADERS  # each datagram fills a frame (workload long_flow)
        core -= row.measured("cross_delivered_mbit") * 1e6 * path.frame / datagram
    return max(0.0, core) * path.mss / path.frame


def mathis_mbit(row: Row) -> float | None:
    """Mathis, Semke, Mahdavi and Ott (1997): throughput ~ 1.22 MSS / (RTT sqrt(p)), with p the flow's
    retransmitted share of its segments; None where it lost nothing."""
    p = row.measured("retransmit_rate") if row.text("retransmit_rate") else 0.0
    if p <= 0:
        return None
    path = path_of(row)
    return 1.22 * int(row.text("tcp_mss") or path.mss) * 8 / (path.rtt.seconds * math.sqrt(p)) / 1e6


def mean_window(row: Row) -> float | None:
    """the window averaged over the trial (segments, every 0.5 s)"""
    if not row.text("cwnd_series") or not row.text("window_step_s"):
        return None  # an old row without the window's series
    windows = [c for _, c in window_series(row)]
    return sum(windows) / len(windows) if windows else None


def window_reductions(row: Row) -> int:
    """How often the window fell: runs of falling samples in its 0.5-s series (a loss's recovery, spread over a
    few samples, is one)."""
    w = [c for _, c in window_series(row)]
    return sum(1 for i in range(1, len(w)) if w[i] < w[i - 1] and (i < 2 or w[i - 1] >= w[i - 2]))


def drops_per_reduction(row: Row) -> float | None:
    """drops at the core per fall of the window"""
    if not row.text("cwnd_series") or not row.text("window_step_s") or not row.text("bottleneck_drops"):
        return None
    falls = window_reductions(row)
    return row.measured("bottleneck_drops") / falls if falls else None


def drop_rate(row: Row) -> float | None:
    """the drop rate at the core's queue"""
    return row.measured("drop_rate") if row.text("drop_rate") else None


def first_10s(row: Row) -> float | None:
    """the throughput over the first 10 s (Mbit/s)"""
    return row.measured("first_10s_mbit") if row.text("first_10s_mbit") else None
