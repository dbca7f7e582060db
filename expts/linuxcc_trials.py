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
from collections.abc import Mapping
from typing import Any

from ground.path import IP_UDP_HEADERS, PathSpec
from ground.trials import row_ok
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


def ok_rows(rows: Rows, series: str | None = None, cc: str | None = None) -> list[Any]:
    return [
        r
        for r in rows
        if row_ok(r) and (series is None or r.get("series") == series) and (cc is None or r.get("cc") == cc)
    ]


def median_of(rows: Rows, series: str, cc: str, metric: str) -> float | None:
    values = [float(r[metric]) for r in ok_rows(rows, series, cc) if r.get(metric) not in (None, "")]
    return statistics.median(values) if values else None


def window_series(row: Any) -> list[tuple[float, int]]:
    """(seconds, cwnd in segments) of one trial, from its row's cwnd_series."""
    step = float(row["window_step_s"])
    return [(round((k + 1) * step, 6), int(c)) for k, c in enumerate(row["cwnd_series"].split(";")) if c]


def time_to_window(row: Any, segments: int) -> float | None:
    """When the window first reached `segments` (None: never)."""
    return next((t for t, c in window_series(row) if c >= segments), None)


def reach_time(rows: Rows, series: str, cc: str, segments: int = 100) -> float | None:
    """The median over trials of when the window first reached `segments` (trials that never did left out)."""
    times = [t for r in ok_rows(rows, series, cc) if (t := time_to_window(r, segments)) is not None]
    return statistics.median(times) if times else None


def path_of(row: Any) -> PathSpec:
    return PathSpec.parse(rtt=row["rtt"], rate=row.get("rate", CORE_RATE), mtu=int(row.get("mtu", MTU)))


def tcp_share(row: Any) -> float:
    """Payload bits/s left to TCP at the core: its rate less the UDP frames delivered (payload x frame/payload)."""
    path = path_of(row)
    core = path.rate_down.bps
    delivered = row.get("cross_delivered_mbit")
    if delivered not in (None, ""):
        datagram = path.mtu - IP_UDP_HEADERS  # each datagram fills a frame (workload long_flow)
        core -= float(delivered) * 1e6 * path.frame / datagram
    return max(0.0, core) * path.mss / path.frame


def mathis_mbit(row: Any) -> float | None:
    """Mathis, Semke, Mahdavi and Ott (1997): throughput ~ 1.22 MSS / (RTT sqrt(p)), with p the flow's
    retransmitted share of its segments; None where it lost nothing."""
    p = float(row.get("retransmit_rate") or 0)
    if p <= 0:
        return None
    path = path_of(row)
    return 1.22 * int(row.get("tcp_mss") or path.mss) * 8 / (path.rtt.seconds * math.sqrt(p)) / 1e6


def mean_window(row: Mapping[str, str]) -> float | None:
    """the window averaged over the trial (segments, every 0.5 s)"""
    if not row.get("cwnd_series") or not row.get("window_step_s"):
        return None  # an old row without the window's series
    windows = [c for _, c in window_series(row)]
    return sum(windows) / len(windows) if windows else None


def window_reductions(row: Mapping[str, str]) -> int:
    """How often the window fell: runs of falling samples in its 0.5-s series (a loss's recovery, spread over a
    few samples, is one)."""
    w = [c for _, c in window_series(row)]
    return sum(1 for i in range(1, len(w)) if w[i] < w[i - 1] and (i < 2 or w[i - 1] >= w[i - 2]))


def drops_per_reduction(row: Mapping[str, str]) -> float | None:
    """drops at the core per fall of the window"""
    if not row.get("cwnd_series") or not row.get("window_step_s") or row.get("bottleneck_drops") in (None, ""):
        return None
    falls = window_reductions(row)
    return float(row["bottleneck_drops"]) / falls if falls else None


def drop_rate(row: Mapping[str, str]) -> float | None:
    """the drop rate at the core's queue"""
    value = row.get("drop_rate")
    return float(value) if value else None


def first_10s(row: Mapping[str, str]) -> float | None:
    """the throughput over the first 10 s (Mbit/s)"""
    value = row.get("first_10s_mbit")
    return float(value) if value else None
