"""Study linuxcc (seed 004, Ahmad and Ngadi): the congestion controls Linux ships, over a long, thin path.

One bulk TCP flow from the server to the client across a chain, client -
r1 == r2 - server, whose core r1-r2 is 11 Mbit/s with a 15-packet queue
and 250 ms one way; the rest of the round trip lies on the two access
links (200 ms each for an RTT of 1.3 s, scenarios WrFl-1 and 2; 300 ms
each for 1.7 s, WrFl-1a and 2a).  In WrFl-2 and 2a, 10 Mbit/s of UDP
enters at r2 and leaves at r1 beside the flow, so TCP has about 1 Mbit/s
left.  Each of the thirteen algorithms Linux ships runs for 120 s: the
kernel's own where it has it (built in or as its module), netrepro's BPF
port where it does not (kmod/bpf/, kmod/README.md), recorded per trial.
Packets are 3,500 bytes on the wire, as in the seed (the links' MTU is
3486), and the receiver's buffer holds 9,000 of them.

All five figures plot the same trials (one CSV, fig6.csv): fig4 the
window over time, fig5 the drop rate at the core's queue, fig6 and fig7
the throughput over the first 10 and 15 s, `whole` over the 120 s with
Mathis' model beside it.  Each judges the seed's findings on the trials'
medians, apart from its drawing (`judge_*`), and states the physics the
path imposes.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ground.path import PathSpec
from kmod import loader
from netrepro import plot
from netrepro.spec import Check, Figure, Point, Rows, Series
from netrepro.workloads import IP_UDP_HEADERS
from topologies.topology import LinkOption, Topology

# The source, cited as far as its text gives authors, title and venue.
SOURCE = (
    'seed 004: Usman Ahmad, Md Asri Bin Ngadi, "Performance Analysis of Linux TCP Congestion Control '
    'Techniques", Universiti Teknologi Malaysia (the venue is not given in the text)'
)

ALGORITHMS = loader.LINUX_SHIPS  # bic cubic highspeed htcp hybla illinois lp reno scalable vegas veno westwood yeah
FRAME_BYTES = 3500  # seed 004's packet, here a full frame on the wire
MTU = FRAME_BYTES - 14
WINDOW_PACKETS = 9000  # seed 004's window: the receiver's buffer holds this many packets
CORE_RATE, CORE_QUEUE, CORE_DELAY = "11mbit", "15p", "250ms"
CROSS_RATE = "10mbit"
DURATION_S = 120

WRFL_1 = Series("WrFl-1", {"rtt": "1300ms"})
WRFL_1A = Series("WrFl-1a", {"rtt": "1700ms"})
WRFL_2 = Series("WrFl-2", {"rtt": "1300ms", "cross_rate": CROSS_RATE})
WRFL_2A = Series("WrFl-2a", {"rtt": "1700ms", "cross_rate": CROSS_RATE})
SCENARIOS = (WRFL_1, WRFL_1A, WRFL_2, WRFL_2A)

# Built as data: Topology.parse checks a topology against the default 20 ms path, shorter than this core.
TOPOLOGY = Topology(shape="chain", cross=True, links=(LinkOption.parse(f"r1-r2:delay={CORE_DELAY}"),))
FIXED: dict[str, Any] = {
    "rate": CORE_RATE,
    "queue": CORE_QUEUE,
    "mtu": MTU,
    "receive_buffer": WINDOW_PACKETS * FRAME_BYTES,
    "duration_s": DURATION_S,
}
QUICK_LEVELS = ("hybla", "reno", "vegas")
QUICK_SERIES = (WRFL_1.label, WRFL_2.label)
QUICK_FIXED = {"duration_s": 20}
QUICK_NOTE = "quick: hybla, reno and vegas in WrFl-1 and WrFl-2, 20 s flows, one trial"

DEVIATIONS = (
    "real Linux kernels (the kernel's own algorithm where it has one, else netrepro's BPF port of the module, "
    "recorded per trial as cc_impl) where the seed ran NS-2.35's TCP-Linux agent with Linux 2.6.22's code",
    "compound, the seed's fourteenth, was never in mainline Linux and is left out",
    "the round trip's access part is split evenly over the two access links: 200 ms each for RTT 1.3 s as in the "
    "seed, 300 ms each for RTT 1.7 s where the seed has 250 ms access links and a 350 ms core (one bottleneck: "
    "only the round trip matters to the flow); the access links are not rate-limited (seed: 1024 and 100 Mbit/s, "
    "both far above the 11 Mbit/s core)",
    "packets of 3500 B are frames of 3500 B (MTU 3486, MSS 3434); the seed's window of 9000 packets is the "
    "receiver's buffer ceiling (tcp_rmem max 31.5 MB), of which Linux advertises part",
    "one bulk iperf3 flow for the seed's FTP; UDP cross traffic from iperf3 at a constant 10 Mbit/s, datagrams "
    "filling a frame",
)

FINDING_FIG4 = (
    "seed 004, Figure 4: Hybla grows its window most aggressively; Highspeed, Scalable, Veno and YeAH behave "
    "alike; Vegas and Reno grow slowest; LP is like Reno; BIC like YeAH"
)
FINDING_FIG5 = "seed 004, Figure 5: Hybla has the highest drop rate; CUBIC (and Compound) the lowest"
FINDING_FIG6 = (
    "seed 004, Figure 6: Hybla has the highest throughput in the first 10 s and Veno the lowest; Compound, "
    "Highspeed, LP, Reno, Vegas and Westwood about the same"
)
FINDING_FIG7 = "seed 004, Figure 7: over the first 15 s, as over the first 10 s (Hybla highest)"
FINDING_WHOLE = "seed 004 (conclusion): CUBIC performs best overall"


# -- reading the trials -----------------------------------------------------------------------


def ok_rows(rows: Rows, series: str | None = None, cc: str | None = None) -> list[Any]:
    return [
        r
        for r in rows
        if r.get("status") == "ok"
        and (series is None or r.get("series") == series)
        and (cc is None or r.get("cc") == cc)
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


# -- the seed's findings, judged ---------------------------------------------------------------


def _verdict(agree: bool) -> str:
    return "agrees" if agree else "DIFFERS"


def _ranked(rows: Rows, series: str, metric: str) -> list[tuple[str, float]]:
    """The algorithms of a scenario by the median of `metric`, highest first."""
    found = [(cc, m) for cc in ALGORITHMS if (m := median_of(rows, series, cc, metric)) is not None]
    return sorted(found, key=lambda cm: -cm[1])


def _scenarios(rows: Rows) -> list[str]:
    return [s.label for s in SCENARIOS if ok_rows(rows, s.label)]


def extremes(rows: Rows, metric: str, cc: str, highest: bool, unit: str, scale: float = 1.0) -> list[Check]:
    """Is `cc` the highest (or lowest) of each scenario in `metric`?  One check per scenario."""
    checks = []
    for series in _scenarios(rows):
        ranked = _ranked(rows, series, metric)
        if not any(c == cc for c, _ in ranked) or len(ranked) < 2:
            continue
        top = ranked[0] if highest else ranked[-1]
        mine = next(m for c, m in ranked if c == cc)
        word = "highest" if highest else "lowest"
        ours = f"{cc} {mine * scale:.3g} {unit}; the {word} is {top[0]} {top[1] * scale:.3g}"
        note = f"{series}: {ours}: {_verdict(top[0] == cc)}"
        checks.append(Check(f"{series}: {cc} has the {word} {metric}", top[0] == cc, ours, note))
    return checks


def physics_notes(rows: Rows) -> list[str]:
    """What the path imposes, checked on every trial: no flow above the core, none above what the UDP
    leaves (plus 10 %), Hybla's slow start faster than Reno's, Vegas dropping less than Reno."""
    notes: list[str] = []
    ok = ok_rows(rows)
    if not ok:
        return notes
    over = [r for r in ok if float(r["goodput_mbit"]) * 1e6 > 1.02 * path_of(r).ideal_goodput_down.bps]
    most = max(float(r["goodput_mbit"]) for r in ok)
    notes.append(
        f"physics: no flow above the core's {path_of(ok[0]).ideal_goodput_down.mbps:.2f} Mbit/s of "
        f"payload (highest {most:.2f}): {'holds' if not over else f'FAILS in {len(over)} trials'}"
    )
    beside = [r for r in ok if r.get("cross_delivered_mbit") not in (None, "")]
    if beside:
        above = [r for r in beside if float(r["goodput_mbit"]) * 1e6 > 1.1 * tcp_share(r) + 0.05e6]
        udp = statistics.median(float(r["cross_delivered_mbit"]) for r in beside)
        notes.append(
            f"physics: beside the UDP flow (median {udp:.2f} Mbit/s delivered) TCP gets at most what is left, "
            f"{statistics.median(tcp_share(r) for r in beside) / 1e6:.2f} Mbit/s: "
            + ("holds" if not above else f"FAILS in {len(above)} of {len(beside)} trials")
        )
    for series in _scenarios(rows):
        h, r = reach_time(rows, series, "hybla"), reach_time(rows, series, "reno")
        if h is not None and ok_rows(rows, series, "reno"):
            reno_text = f"Reno after {r:.1f} s" if r is not None else "Reno not within the run"
            notes.append(f"physics, {series}: Hybla reaches a window of 100 segments after {h:.1f} s, {reno_text}: "
                         f"{'holds' if r is None or h < r else 'FAILS'} (Hybla faster in slow start)")  # fmt: skip
        vegas, reno = (median_of(rows, series, cc, "bottleneck_drops") for cc in ("vegas", "reno"))
        if vegas is not None and reno is not None:
            why = (
                "; likely why: a 15-packet queue under a BDP of hundreds of packets never raises the minimum RTT "
                "of a round, all Vegas measures, so it slow-starts into the overflow and then grows as Reno does"
                if vegas >= reno
                else ""
            )
            notes.append(f"physics, {series}: drops at the core, Vegas {vegas:.0f}, Reno {reno:.0f}: "
                         f"{'holds' if vegas < reno else 'FAILS'} (Vegas drops fewer){why}")  # fmt: skip
    return notes


def checks_fig4(rows: Rows) -> list[Check]:
    """In each scenario where any algorithm's window reached 100 segments: is Hybla the first?  Beside
    it, the two slowest that reached it, and those that never did within the run."""
    checks = []
    for series in _scenarios(rows):
        ran = [cc for cc in ALGORITHMS if ok_rows(rows, series, cc)]
        reach = sorted((t, cc) for cc in ran if (t := reach_time(rows, series, cc)) is not None)
        if not reach:
            continue
        first = reach[0]
        ours = f"first to a window of 100 segments: {first[1]} after {first[0]:.1f} s"
        if len(reach) >= 2:
            ours += "; the slowest to it: " + ", ".join(f"{cc} {t:.1f} s" for t, cc in reach[1:][-2:])
        reached = {cc for _, cc in reach}
        never = [cc for cc in ran if cc not in reached]
        if never:
            ours += f"; never within the run: {', '.join(never)}"
        note = f"{series}: {ours}; Hybla grows most aggressively: {_verdict(first[1] == 'hybla')}"
        checks.append(Check(f"{series}: Hybla grows most aggressively", first[1] == "hybla", ours, note))
    return checks


def checks_fig5(rows: Rows) -> list[Check]:
    checks = extremes(rows, "drop_rate", "hybla", True, "%", 100)
    for series in _scenarios(rows):
        ranked = _ranked(rows, series, "drop_rate")
        if any(c == "cubic" for c, _ in ranked) and len(ranked) >= 3:
            place = [c for c, _ in ranked[::-1]].index("cubic") + 1
            low_third = place <= math.ceil(len(ranked) / 3)
            ours = f"CUBIC's drop rate is number {place} of {len(ranked)} from the lowest"
            note = f"{series}: {ours}; among the lowest (the lowest third): {_verdict(low_third)}"
            checks.append(Check(f"{series}: CUBIC's drop rate is among the lowest", low_third, ours, note))
    return checks


def hybla_losses(rows: Rows, series: str) -> str:
    """Why Hybla may not lead early: how much of what it sent its increase lost."""
    rate = median_of(rows, series, "hybla", "retransmit_rate")
    window = median_of(rows, series, "hybla", "cwnd_max")
    if rate is None or window is None:
        return ""
    # At RTT 1.3 s its window jumps to the 65535 clamp in the second round; at 1.7 s (rho 68, more than
    # twice the second round's 30 segments in flight) it may not grow until that round's losses (measured
    # in both kernels, module and port alike: README, study linuxcc)
    return (f"; likely why: Hybla's increase (2^rho - 1 segments per ACK in slow start, rho = RTT / 25 ms "
            f"capped at 2^16; rho^2 segments a round trip after it) overflows the 15-packet queue (largest "
            f"window {window:.0f} segments) and {rate * 100:.0f} % of its segments are sent again, and Linux's "
            "recovery from hundreds of losses in one window takes many round trips")  # fmt: skip


def checks_fig6(rows: Rows, metric: str = "first_10s_mbit") -> list[Check]:
    checks = [
        c if c.holds else dataclasses.replace(c, note=c.note + hybla_losses(rows, c.note.split(":")[0]))
        for c in extremes(rows, metric, "hybla", True, "Mbit/s")
    ]
    if metric == "first_10s_mbit":
        checks += extremes(rows, metric, "veno", False, "Mbit/s")
        alike = ("highspeed", "lp", "reno", "vegas", "westwood")
        for series in _scenarios(rows):
            values = [m for cc in alike if (m := median_of(rows, series, cc, metric)) is not None]
            if len(values) >= 2:
                spread = (max(values) - min(values)) / max(values) if max(values) else 0.0
                ours = f"Highspeed, LP, Reno, Vegas, Westwood within {spread * 100:.0f} % of each other"
                note = f"{series}: {ours}; about the same (within 20 %): {_verdict(spread <= 0.2)}"
                checks.append(Check(f"{series}: Highspeed, LP, Reno, Vegas, Westwood about the same",
                                    spread <= 0.2, ours, note))  # fmt: skip
    return checks


def checks_whole(rows: Rows) -> list[Check]:
    checks = []
    for series in _scenarios(rows):
        ranked = _ranked(rows, series, "goodput_mbit")
        if len(ranked) >= 2:
            ours = f"highest over {DURATION_S} s: {ranked[0][0]} {ranked[0][1]:.2f} Mbit/s"
            note = f"{series}: {ours}; CUBIC best: {_verdict(ranked[0][0] == 'cubic')}"
            checks.append(Check(f"{series}: CUBIC has the best throughput", ranked[0][0] == "cubic", ours, note))
    return checks


def mathis_notes(rows: Rows) -> list[str]:
    """Each scenario's measured goodput over Mathis' model, per algorithm."""
    notes = []
    for series in _scenarios(rows):
        ratios = []
        for cc in ALGORITHMS:
            models = [m for r in ok_rows(rows, series, cc) if (m := mathis_mbit(r)) is not None]
            measured = median_of(rows, series, cc, "goodput_mbit")
            if models and measured is not None:
                ratios.append(f"{cc} {measured / statistics.median(models):.2f}")
        if ratios:
            notes.append(f"{series}: measured / Mathis' model: " + ", ".join(ratios))
    return notes


# The seed's findings as notes (the caption) and as checks (the manifest's verdict), alike.
def judge_fig4(rows: Rows) -> list[str]:
    return [c.note for c in checks_fig4(rows)]


def judge_fig5(rows: Rows) -> list[str]:
    return [c.note for c in checks_fig5(rows)]


def judge_fig6(rows: Rows, metric: str = "first_10s_mbit") -> list[str]:
    return [c.note for c in checks_fig6(rows, metric)]


def judge_whole(rows: Rows) -> list[str]:
    return [c.note for c in checks_whole(rows)] + mathis_notes(rows)


# -- drawing ----------------------------------------------------------------------------------


def _annotate(judge: Callable[[Rows], list[str]]) -> Callable[[Figure, list[Point], Rows, Any], list[str]]:
    def annotate(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
        return judge(rows) + physics_notes(rows)

    return annotate


def annotate_whole(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    """Mathis' model beside each point (hollow diamonds), then the judgement."""
    positions = plot.category_positions(fig, points)
    offsets = plot.series_offsets([s.label for s in SCENARIOS if any(p.series == s.label for p in points)])
    for s in SCENARIOS:
        xs, ys = [], []
        for cc, x in positions.items():
            models = [m for r in ok_rows(rows, s.label, cc) if (m := mathis_mbit(r)) is not None]
            if models and s.label in offsets:
                xs.append(x + offsets[s.label])
                ys.append(statistics.median(models))
        if xs:
            ax.plot(xs, ys, "D", markerfacecolor="none", color="0.4", markersize=5)
    ax.plot([], [], "D", markerfacecolor="none", color="0.4", label="Mathis' model, 1.22 MSS / (RTT sqrt(p))")
    plot.legend_beside(ax)
    return judge_whole(rows) + physics_notes(rows)


def draw_windows(
    fig: Figure, points: list[Point], rows: Rows, png: Path, quick: bool = False, reference: list[Point] | None = None
) -> list[str]:
    """fig4: each algorithm's window over time, one panel per scenario (the first successful trial of each)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = _scenarios(rows) or [s.label for s in SCENARIOS]
    figure, axes = plt.subplots(len(scenarios), 1, figsize=(8, 2.6 * len(scenarios) + 1.2), squeeze=False)
    styles = plot.line_styles(len(ALGORITHMS))
    for ax, series in zip(axes[:, 0], scenarios, strict=True):
        for i, cc in enumerate(ALGORITHMS):
            trials = sorted(ok_rows(rows, series, cc), key=lambda r: int(r["trial"]))
            if trials:
                ts, ws = zip(*window_series(trials[0]), strict=True)
                ax.plot(ts, ws, label=cc, linewidth=1.1, **styles[i])
        ax.set_yscale("log")
        ax.set_ylabel("cwnd (segments)")
        ax.set_title(series, fontsize=9)
        ax.grid(True, alpha=0.3)
    drawn: dict[str, Any] = {}  # one legend for every panel: an algorithm may be in some panels only
    for ax in axes[:, 0]:
        for line in ax.get_lines():
            drawn.setdefault(str(line.get_label()), line)
    plot.legend_beside(axes[0, 0], list(drawn.values()), list(drawn))
    axes[-1, 0].set_xlabel("time (s)")
    figure.suptitle(f"{fig.full_name}: {fig.heading}" + ("  [quick]" if quick else ""), fontsize=10)
    notes = judge_fig4(rows) + physics_notes(rows)
    caption = "tcp_probe, every ACK; shown every 0.5 s; the first trial of each algorithm and scenario"
    figure.text(0.01, 0.005, caption, fontsize=8, va="bottom", ha="left")
    figure.tight_layout(rect=(0, 0.03, 1, 0.97))
    plot.save(figure, png, [f"{fig.full_name}: {fig.heading}", caption, *notes])
    return notes


def summarize_drop_pct(fig: Figure, rows: Rows) -> list[Point]:
    """The drop rate in per cent: median and interquartile range per algorithm and scenario."""
    points = []
    for s in fig.series:
        for cc in fig.levels:
            group = [r for r in rows if r.get("series") == s.label and r.get("cc") == str(cc)]
            values = [float(r["drop_rate"]) * 100 for r in ok_rows(group) if r.get("drop_rate") not in (None, "")]
            if not group:
                continue
            if not values:
                points.append(Point(s.label, cc, math.nan, math.nan, math.nan, 0, len(group)))
                continue
            q1, q2, q3 = plot.quartiles(values)
            points.append(Point(s.label, cc, q2, q1, q3, len(values), len(group) - len(values)))
    return points


def _figure(name: str, title: str, y: str, y_label: str, finding: str, **kw: Any) -> Figure:
    return Figure(
        study="linuxcc",
        name=name,
        title=title,
        workload="long_flow",
        x="cc",
        levels=ALGORITHMS,
        y=y,
        y_label=y_label,
        x_label="congestion control",
        fixed=FIXED,
        series=SCENARIOS,
        trials=3,
        quick_levels=QUICK_LEVELS,
        quick_series=QUICK_SERIES,
        quick_trials=1,
        quick_fixed=QUICK_FIXED,
        quick_note=QUICK_NOTE,
        finding=finding,
        deviations=DEVIATIONS,
        trial_timeout=lambda params: float(params.get("duration_s", DURATION_S)) + 90,
        topology=TOPOLOGY,
        **kw,
    )


FIG6 = _figure("fig6", "Throughput over the first 10 s, 11 Mbit/s core, 15-packet queue", "first_10s_mbit",
               "throughput, first 10 s (Mbit/s)", FINDING_FIG6, annotate=_annotate(judge_fig6),
               judge=lambda fig, points, rows: checks_fig6(rows))  # fmt: skip
FIG7 = _figure("fig7", "Throughput over the first 15 s, 11 Mbit/s core, 15-packet queue", "first_15s_mbit",
               "throughput, first 15 s (Mbit/s)", FINDING_FIG7,
               annotate=_annotate(lambda rows: judge_fig6(rows, "first_15s_mbit")), trials_of="fig6",
               judge=lambda fig, points, rows: checks_fig6(rows, "first_15s_mbit"))  # fmt: skip
WHOLE = _figure("whole", f"Throughput over {DURATION_S} s, beside Mathis' model", "goodput_mbit",
                f"throughput, {DURATION_S} s (Mbit/s)", FINDING_WHOLE, annotate=annotate_whole, y_log=True,
                trials_of="fig6", judge=lambda fig, points, rows: checks_whole(rows))  # fmt: skip
FIG5 = _figure("fig5", "Drop rate at the core's queue", "drop_rate_pct", "packets dropped at the core (%)",
               FINDING_FIG5, summarize=summarize_drop_pct, annotate=_annotate(judge_fig5),
               trials_of="fig6", judge=lambda fig, points, rows: checks_fig5(rows))  # fmt: skip
FIG4 = _figure("fig4", "The window over time", "cwnd_max", "largest cwnd (segments)", FINDING_FIG4,
               drawing=draw_windows, trials_of="fig6", judge=lambda fig, points, rows: checks_fig4(rows))  # fmt: skip

FIGURES = (FIG4, FIG5, FIG6, FIG7, WHOLE)
