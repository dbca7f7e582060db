"""Study iw (seed 001, after Dukkipati et al. 2010): does a larger initial window pay?

A client fetches one 37,000-byte response with curl over a fresh connection;
the server's route sets the initial window.  Figure 2 sweeps the initial
window; figures 5a-c give the improvement from IW 3 to IW 10 and IW 26 by
RTT, by bandwidth and by bandwidth-delay product.  Each download's first
flight is read from tcp_probe and recorded beside it.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from ground.cwnd import slow_start_rounds
from ground.path import MSS
from ground.trials import numbers
from netrepro.plot import legend_beside, numeric, quartiles
from netrepro.spec import Check, Figure, Params, Point, Rows, Series, trial_path

# The source, cited as far as its text gives authors, title and venue.
SOURCE = (
    'seed 001: Nicole Tselentis, Greg Kehoe, "Increasing the TCP Initial Congestion Window", CS 244 '
    "(Stanford) 2013 reproduction report, of Nandita Dukkipati et al., \"An Argument for Increasing TCP's "
    'Initial Congestion Window", ACM SIGCOMM Computer Communication Review 40(3), 2010, pp. 27-33'
)

REFERENCE = Path(__file__).resolve().parent / "reference" / "dukkipati2010.csv"

OBJECT_BYTES = 37_000
# Apache's status line and headers for this object, as captured on the wire
# (37,297 bytes in all): with them the response is 26 segments of 1448 bytes.
RESPONSE_HEADER_BYTES = 297
FRAME_OVERHEAD = 66  # Ethernet 14 + IP 20 + TCP 20 + timestamps 12

FIXED: dict[str, Any] = {
    "rtt": "100ms",
    "rate": "3mbit",
    "cc": "cubic",
    "protocol": "http/1.1",
    "object_bytes": OBJECT_BYTES,
}

FINDING_FIG2 = (
    "seed 001: a large gain from IW 3 to 10, a larger one from 3 to 26, little or none from 26 to 42. "
    "Dukkipati et al. (different setup) show about 490 ms at IW 3 and a minimum near IW 16."
)
FINDING_FIG5 = (
    "seed 001: IW 3 to 26 improves most at high RTT and high bandwidth (up to about 40 % at the highest "
    "bandwidths); Dukkipati et al. report an average 11.7 % (68 ms) for IW 10 over IW 3 in AvgDC."
)


# -- the slow-start model: (1 + R) RTT + bytes / rate (README, study iw) ---------


def segments(object_bytes: int = OBJECT_BYTES) -> int:
    return math.ceil((object_bytes + RESPONSE_HEADER_BYTES) / MSS)


def model_ms(initcwnd: int, rtt_ms: float, rate_bps: float, object_bytes: int = OBJECT_BYTES) -> float:
    """(1 + R) RTT + wire bytes / rate: the handshake, R rounds, and the transfer at the bottleneck."""
    segs = segments(object_bytes)
    wire = object_bytes + RESPONSE_HEADER_BYTES + segs * FRAME_OVERHEAD
    return (1 + slow_start_rounds(initcwnd, segs)) * rtt_ms + wire * 8 / rate_bps * 1e3


def timeout(params: Params) -> float:
    path = trial_path(params)
    rtt, rate = path.rtt.ms, path.rate_down.bps
    return 30 + 5 * model_ms(int(params.get("initcwnd", 3)), rtt, rate) / 1e3


def reference_fig2() -> list[tuple[int, float]]:
    with open(REFERENCE, newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return [(int(r["x"]), float(r["value"])) for r in rows if r["source"] == "fig2"]


# -- figure 2 ---------------------------------------------------------------------


def annotate_fig2(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    rtt, rate = fig.path.rtt.ms, fig.path.rate_down.bps
    ws = list(fig.levels)
    ax.plot(ws, [model_ms(w, rtt, rate) for w in ws], "k--", lw=1, label="slow-start model: (1 + R) RTT + bytes / rate")
    ref = reference_fig2()
    inset = ax.inset_axes((0.56, 0.3, 0.4, 0.3))
    inset.plot([x for x, _ in ref], [y for _, y in ref], "s-", color="gray", ms=3)
    inset.set_title(
        "Dukkipati et al. 2010, Fig. 2\n(a different setup: one data centre,\nRTT 70 ms, 1.2 Mbit/s)", fontsize=6
    )
    inset.tick_params(labelsize=6)
    inset.set_xlabel("IW", fontsize=6)
    inset.set_ylabel("ms", fontsize=6)
    notes = []
    over = under = False
    for p in points:
        if p.n == 0:
            continue
        w = int(p.x)
        model = model_ms(w, rtt, rate)
        diff = p.y - model
        exact = slow_start_rounds(w, segments()) == 1
        # where the model is exact (one round) it must hold within 5 %; elsewhere within the spread
        within = abs(diff) <= 0.05 * model if exact else p.low <= model <= p.high
        over |= not within and not exact and diff < 0
        under |= not within and not exact and diff > 0
        notes.append(
            f"IW {w}: measured {p.y:.1f} ms, model {model:.1f} ms ({diff:+.1f} ms, {diff / model * 100:+.1f} %): "
            + ("agrees" if within else "differs")
            + (" (model exact: one round)" if exact else "")
        )
    if over:
        notes.append(
            "why the model is slower where it differs: it charges a full RTT for every slow-start round and the "
            "whole transfer time on top, but the early rounds' serialization overlaps their RTT"
        )
    if under:
        notes.append("measured slower than the model: queueing or delayed ACKs stretch the slow-start rounds")
    return notes + [c.note for c in judge_fig2(fig, points, rows)]


def judge_fig2(fig: Figure, points: list[Point], rows: Rows) -> list[Check]:
    """Seed 001: 10 helps, 26 helps more, 42 adds nothing (within 5 %)."""
    by_w = {int(p.x): p.y for p in points if p.n}
    if 3 not in by_w or 26 not in by_w:
        return []
    gain10 = (by_w[3] - by_w.get(10, math.nan)) / by_w[3] * 100
    gain26 = (by_w[3] - by_w[26]) / by_w[3] * 100
    gain42 = (by_w[26] - by_w.get(42, math.nan)) / by_w[26] * 100
    agree = gain26 > gain10 > 0 and abs(gain42) < 5
    ours = f"IW 3->10 {gain10:.0f} % faster, 3->26 {gain26:.0f} %, 26->42 {gain42:.1f} %"
    note = (f"ours: {ours}; {'agrees with' if agree else 'DISAGREES with'} seed 001's finding "
            "(10 helps, 26 helps more, 42 adds nothing)")  # fmt: skip
    return [Check("a large gain from IW 3 to 10, a larger one to 26, none from 26 to 42", agree, ours, note)]


FIG2 = Figure(
    study="iw",
    name="fig2",
    title="Download time of a 37,000-byte response vs initial window ({rate}, RTT {rtt}, {cc})",
    workload="download",
    x="initcwnd",
    levels=(3, 6, 10, 16, 26, 42),
    y="download_time_ms",
    fixed=FIXED,
    trials=20,
    quick_levels=(3, 10, 26, 42),
    quick_trials=3,
    x_label="initial congestion window (segments)",
    y_label="download time (ms), curl total",
    finding=FINDING_FIG2,
    deviations=(
        "server: Apache httpd 2.4 (seed 001: Python SimpleHTTPServer); the response with headers is 26 segments",
        "RTT split evenly over the two directions, inside the switch (seed 001: RTT/4 on each of four links)",
    ),
    annotate=annotate_fig2,
    judge=judge_fig2,
    trial_timeout=timeout,
)


# -- figures 5a-c: improvement from IW 3 -------------------------------------------

IW_SERIES = (Series("IW 3", {"initcwnd": 3}), Series("IW 10", {"initcwnd": 10}), Series("IW 26", {"initcwnd": 26}))


def improvements(fig: Figure, rows: Rows) -> dict[tuple[str, str], tuple[list[float], list[float]]]:
    """Per (target series, level): the paired improvements over IW 3, in ms and in %."""
    by: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for row in rows:
        if row.get("status") == "ok":
            for value in numbers([row], fig.y):
                by[(row["series"], row[fig.x])][int(row["trial"])] = value
    out = {}
    for (series, level), times in by.items():
        if series == "IW 3":
            continue
        base = by.get(("IW 3", level), {})
        pairs = [(base[i], t) for i, t in times.items() if i in base]
        out[(series, level)] = ([b - t for b, t in pairs], [(b - t) / b * 100 for b, t in pairs])
    return out


def summarize_fig5(fig: Figure, rows: Rows) -> list[Point]:
    points = []
    order = {str(level): i for i, level in enumerate(fig.levels)}
    for (series, level), (_, pct) in sorted(improvements(fig, rows).items(), key=lambda kv: order[kv[0][1]]):
        if pct:
            q1, median, q3 = quartiles(pct)
            points.append(Point(f"IW 3 -> {series.split()[-1]}", level, median, q1, q3, len(pct)))
    return points


def annotate_fig5(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    from matplotlib.ticker import FuncFormatter  # here: matplotlib loads only to draw

    twin = ax.twinx()
    notes = []
    for target in ("IW 10", "IW 26"):
        levels, ms = [], []
        for (series, level), (abs_ms, _) in improvements(fig, rows).items():
            if series == target and abs_ms:
                levels.append(numeric(level))
                ms.append(statistics.median(abs_ms))
        pairs = sorted(zip(levels, ms, strict=True))
        if pairs:
            twin.plot([x for x, _ in pairs], [y for _, y in pairs], ":", marker="x", label=f"IW 3 -> {target[3:]} (ms)")
            notes.append(f"IW 3 -> {target[3:]}, absolute (ms): " + ", ".join(f"{x:g}: {y:.0f}" for x, y in pairs))
    twin.set_ylabel("improvement (ms), dotted")
    align_zeros(ax, twin)
    # both legends beside the axes, past the right axis's labels, never over the data
    legend_beside(ax, x=1.17)
    twin.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.17, 0.6), borderaxespad=0.0)
    if fig.x == "rate":  # the bandwidth-delay product of each rate at the figure's RTT, on the top axis
        rtt_s = fig.path.rtt.seconds  # the rate varies, the RTT is fixed
        top = ax.secondary_xaxis("top", functions=(lambda mbps: mbps * 1e6 * rtt_s / 8, lambda b: b * 8 / rtt_s / 1e6))
        top.set_xlabel(f"bandwidth-delay product at RTT {rtt_s * 1e3:g} ms (bytes)")
        top.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    best = max((p for p in points if p.series.endswith("26")), key=lambda p: p.y, default=None)
    if best is not None:
        notes.append(f"largest IW 3 -> 26 gain: {best.y:.0f} % at {fig.x} = {best.x} (seed 001: up to about 40 %)")
    return notes + [c.note for c in judge_fig5(fig, points, rows)]


def judge_fig5(fig: Figure, points: list[Point], rows: Rows) -> list[Check]:
    """Seed 001: IW 3 to 26 improves most at the high end of the factor (RTT, bandwidth, BDP): the largest
    gain is at one of the two highest levels measured."""
    gains = {str(p.x): p.y for p in points if p.series.endswith("26") and p.n}
    levels = [str(level) for level in fig.levels if str(level) in gains]
    if len(levels) < 3:
        return []
    best = max(levels, key=lambda level: gains[level])
    agree = best in levels[-2:]
    ours = (f"largest gain {gains[best]:.0f} % at {fig.x} = {best}; {gains[levels[0]]:.0f} % at {levels[0]}, "
            f"{gains[levels[-1]]:.0f} % at {levels[-1]}")  # fmt: skip
    return [Check(f"IW 3 to 26 improves most at high {fig.x}", agree, ours)]


def align_zeros(ax: Any, twin: Any) -> None:
    """Both y axes with 0 at the same height (each range stretched to take in 0), so that a bar at zero
    on one is at zero on the other."""
    (lo1, hi1), (lo2, hi2) = ax.get_ylim(), twin.get_ylim()
    lo1, hi1, lo2, hi2 = min(lo1, 0.0), max(hi1, 0.0), min(lo2, 0.0), max(hi2, 0.0)
    if hi1 <= lo1 or hi2 <= lo2:
        return
    below = max(-lo1 / (hi1 - lo1), -lo2 / (hi2 - lo2))  # the share of each axis below zero
    if below >= 1.0:
        return
    ax.set_ylim(-below / (1 - below) * hi1 if hi1 > 0 else lo1, hi1)
    twin.set_ylim(-below / (1 - below) * hi2 if hi2 > 0 else lo2, hi2)


def _fig5(
    name: str, title: str, x: str, levels: tuple[str, ...], quick: tuple[str, ...], rtt: str = "100ms", **kw: Any
) -> Figure:
    fixed = {**{k: v for k, v in FIXED.items() if k != x}, **({"rtt": rtt} if x != "rtt" else {})}
    return Figure(
        study="iw",
        name=name,
        title=title,
        workload="download",
        x=x,
        levels=levels,
        y="download_time_ms",
        y_label="improvement over IW 3 (%), solid",
        series=IW_SERIES,
        fixed=fixed,
        trials=10,
        quick_levels=quick,
        finding=FINDING_FIG5,
        summarize=summarize_fig5,
        annotate=annotate_fig5,
        judge=judge_fig5,
        trial_timeout=timeout,
        **{"quick_trials": 2, **kw},
    )


FIG5A = _fig5(
    "fig5a",
    "Improvement from IW 3 to IW 10 and 26 by RTT ({rate})",
    "rtt",
    ("20ms", "50ms", "100ms", "200ms", "500ms", "1000ms", "3000ms"),
    ("20ms", "100ms", "500ms"),
    x_label="RTT (ms)",
    x_log=True,
)
FIG5B = _fig5(
    "fig5b",
    "Improvement from IW 3 to IW 10 and 26 by bandwidth (RTT {rtt})",
    "rate",
    ("56kbit", "256kbit", "512kbit", "1mbit", "2mbit", "3mbit", "5mbit"),
    ("256kbit", "1mbit", "5mbit"),
    x_label="bottleneck rate (Mbit/s)",
    x_log=True,
)
FIG5C = _fig5(
    "fig5c",
    "Improvement from IW 3 to IW 10 and 26 by bandwidth-delay product (RTT {rtt})",
    "rate",
    ("8kbit", "40kbit", "80kbit", "400kbit", "800kbit"),
    ("80kbit", "800kbit"),
    rtt="1000ms",
    x_label="bottleneck rate (Mbit/s) at RTT 1000 ms",
    x_log=True,
    quick_trials=1,
    quick_note="quick mode runs 80 and 800 kbit/s only, one trial each: at 8 kbit/s one 37 KB download takes "
    "about 40 s, and at RTT 1 s a trial lasts several",
)

FIGURES = (FIG2, FIG5A, FIG5B, FIG5C)
