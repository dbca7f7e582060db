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
Mathis' model beside it.  Each declares the seed's own sentences about it
as claims (netrepro.studykit.claims), the trial the unit: fig4's on each trial's
window series (its mean over the run; the drops at the core per fall of
it), in each of the four flows (the seed does not say which its Figure 4
draws); fig5's and fig6's on the mean over the four flows, as the seed's
text says its Figures 5 and 6 take it; `whole` the seed's conclusion,
CUBIC "on the top", on the grounds it names (window and packet loss).  The
seed says nothing of its Figure 7 beyond what it shows: fig7 is unjudged.
The notes state the physics the path imposes, Mathis' model and the seed's
sentences no test here can decide (and why), no verdict.  This module
declares the figures and draws them; the claims and their tests are
expts/linuxcc_claims.py, the scenarios and a trial's values, which both
read, expts/linuxcc_trials.py.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from expts.linuxcc_claims import (
    CLAIMS_FIG4,
    CLAIMS_FIG5,
    CLAIMS_FIG6,
    CLAIMS_FIG7,
    CLAIMS_WHOLE,
    NOT_JUDGED_FIG4,
    NOT_JUDGED_FIG6,
    UNJUDGED_FIG7,
    not_judged,
)
from expts.linuxcc_trials import (
    ALGORITHMS,
    CORE_DELAY,
    CORE_QUEUE,
    CORE_RATE,
    FRAME_BYTES,
    MTU,
    SCENARIOS,
    WRFL_1,
    WRFL_2,
    mathis_mbit,
    median_of,
    ok_rows,
    path_of,
    reach_time,
    tcp_share,
    window_series,
)
from netrepro.studykit import plot
from netrepro.studykit.kept import Kept
from netrepro.studykit.spec import Figure, Point, Rows
from netrepro.studykit.variation import Variation
from topologies.topology import LinkOption, Topology

# The source, cited as far as its text gives authors, title and venue.
SOURCE = (
    'seed 004: Usman Ahmad, Md Asri Bin Ngadi, "Performance Analysis of Linux TCP Congestion Control '
    'Techniques", Universiti Teknologi Malaysia (the venue is not given in the text)'
)

# What this study's paths vary from trial to trial beyond the start phase (netrepro.studykit.variation,
# docs/studies/linuxcc.md, "What varies"): why that much, from the source's description of its network.
VARIATION = Variation.of(
    "1ms",
    (
        "seed 004 simulated its four-node path in NS-2, which replays exactly; +-1 ms, a wired path's queueing "
        "and scheduling, is within one bottleneck service time at the 11 Mbit/s core (2.6 ms for a 3,514-byte "
        "frame), as the lab keeps jitter (docs/lab.md), beside the source's own UDP cross traffic"
    ),
)

WINDOW_PACKETS = 9000  # seed 004's window: the receiver's buffer holds this many packets
DURATION_S = 120


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
    "seed 004, Figure 4: Hybla grows its window most aggressively, which leads to burst losses; Highspeed, "
    "Scalable, Veno and YeAH near to similar; Vegas and Reno grow very slowly; LP very similar to Reno; BIC "
    "similar to YeAH"
)
FINDING_FIG5 = (
    "seed 004, Figure 5 (the mean over the four flows): Hybla's drop rate high, Compound's and CUBIC's low, as "
    "compared to the others; Highspeed, H-TCP, Illinois and Scalable '70% same'; Vegas, Westwood and YeAH '80% "
    "same'; BIC, Compound and CUBIC low"
)
FINDING_FIG6 = (
    "seed 004, Figure 6 (the mean over the four flows): Hybla has the highest throughput in the first 10 s and "
    "Veno the lowest; Compound, Highspeed, LP, Reno, Vegas and Westwood the same"
)
FINDING_FIG7 = "seed 004, Figure 7: the throughput over the first 15 s; its text states no finding of it"
FINDING_WHOLE = (
    "seed 004 (section 6 and conclusion): Hybla's packet loss very high; CUBIC on the top of all others, on its "
    "window behaviour and packet loss"
)


# -- the physics, as context ------------------------------------------------------------------


def _scenarios(rows: Rows) -> list[str]:
    return [s.label for s in SCENARIOS if ok_rows(rows, s.label)]


def physics_notes(rows: Rows) -> list[str]:
    """What the path imposes, checked on every trial: no flow above the core, none above what the UDP
    leaves (plus 10 %); and when Hybla's and Reno's windows reached 100 segments (context for fig4)."""
    notes: list[str] = []
    ok = ok_rows(rows)
    if not ok:
        return notes
    over = [r for r in ok if r.measured("goodput_mbit") * 1e6 > 1.02 * path_of(r).ideal_goodput_down.bps]
    most = max(r.measured("goodput_mbit") for r in ok)
    notes.append(
        f"physics: no flow above the core's {path_of(ok[0]).ideal_goodput_down.mbps:.2f} Mbit/s of "
        f"payload (highest {most:.2f}): {'holds' if not over else f'FAILS in {len(over)} trials'}"
    )
    beside = [r for r in ok if r.text("cross_delivered_mbit")]
    if beside:
        above = [r for r in beside if r.measured("goodput_mbit") * 1e6 > 1.1 * tcp_share(r) + 0.05e6]
        udp = statistics.median(r.measured("cross_delivered_mbit") for r in beside)
        notes.append(
            f"physics: beside the UDP flow (median {udp:.2f} Mbit/s delivered) TCP gets at most what is left, "
            f"{statistics.median(tcp_share(r) for r in beside) / 1e6:.2f} Mbit/s: "
            + ("holds" if not above else f"FAILS in {len(above)} of {len(beside)} trials")
        )
    for series in _scenarios(rows):
        h, r = reach_time(rows, series, "hybla"), reach_time(rows, series, "reno")
        if h is not None and ok_rows(rows, series, "reno"):
            reno_text = f"Reno's after {r:.1f} s" if r is not None else "Reno's not within the run"
            notes.append(f"{series}: Hybla's window reached 100 segments after {h:.1f} s (median), {reno_text}")
    return notes


def hybla_notes(rows: Rows) -> list[str]:
    """What Hybla's increase does on this path, per scenario: its largest window and what it sent again."""
    notes = []
    for series in _scenarios(rows):
        rate = median_of(rows, series, "hybla", "retransmit_rate")
        window = median_of(rows, series, "hybla", "cwnd_max")
        if rate is None or window is None:
            continue
        # At RTT 1.3 s its window jumps to the 65535 clamp in the second round; at 1.7 s (rho 68, more than
        # twice the second round's 30 segments in flight) it may not grow until that round's losses (measured
        # in both kernels, module and port alike: README, study linuxcc)
        notes.append(
            f"{series}: Hybla's increase (2^rho - 1 segments per ACK in slow start, rho = RTT / 25 ms capped at "
            f"2^16; rho^2 segments a round trip after it) overflows the 15-packet queue (largest window "
            f"{window:.0f} segments, median) and {rate * 100:.0f} % of its segments are sent again; Linux's "
            "recovery from hundreds of losses in one window takes many round trips"
        )
    return notes


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


# -- drawing ----------------------------------------------------------------------------------


def _annotate(*notes: Callable[[Rows], list[str]]) -> Callable[[Figure, list[Point], Rows, Any], list[str]]:
    def annotate(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
        return [n for note in notes for n in note(rows)]

    return annotate


def annotate_whole(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    """Mathis' model beside each point (hollow diamonds), then the notes: the model's ratio and the physics."""
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
    return [WHOLE_NOTE, *mathis_notes(rows), *physics_notes(rows)]


WHOLE_NOTE = (
    f"the throughput over {DURATION_S} s is drawn; the seed's conclusion (CUBIC on the top) is judged on the "
    "grounds it names, packet loss and the window, from the same trials"
)


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
            trials = sorted(ok_rows(rows, series, cc), key=lambda r: int(r.text("trial")))
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
    notes = not_judged(NOT_JUDGED_FIG4)(rows) + physics_notes(rows)
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
            group = [r for r in rows if r.series == s.label and r.cc == str(cc)]
            values = [r.measured("drop_rate") * 100 for r in ok_rows(group) if r.text("drop_rate")]
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
        variation=VARIATION,
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
        trial_timeout=lambda trial: float(trial.workload.duration_s) + 90,
        topology=TOPOLOGY,
        **kw,
    )


FIG6 = _figure(
    "fig6",
    "Throughput over the first 10 s, 11 Mbit/s core, 15-packet queue",
    "first_10s_mbit",
    "throughput, first 10 s (Mbit/s)",
    FINDING_FIG6,
    annotate=_annotate(not_judged(NOT_JUDGED_FIG6), hybla_notes, physics_notes),
    claims=CLAIMS_FIG6,
)
FIG7 = _figure(
    "fig7",
    "Throughput over the first 15 s, 11 Mbit/s core, 15-packet queue",
    "first_15s_mbit",
    "throughput, first 15 s (Mbit/s)",
    FINDING_FIG7,
    trials_of="fig6",
    claims=CLAIMS_FIG7,
    annotate=_annotate(lambda rows: [UNJUDGED_FIG7], hybla_notes, physics_notes),
)
WHOLE = _figure(
    "whole",
    f"Throughput over {DURATION_S} s, beside Mathis' model",
    "goodput_mbit",
    f"throughput, {DURATION_S} s (Mbit/s)",
    FINDING_WHOLE,
    annotate=annotate_whole,
    y_log=True,
    trials_of="fig6",
    claims=CLAIMS_WHOLE,
)
FIG5 = _figure(
    "fig5",
    "Drop rate at the core's queue",
    "drop_rate_pct",
    "packets dropped at the core (%)",
    FINDING_FIG5,
    summarize=summarize_drop_pct,
    annotate=_annotate(physics_notes),
    trials_of="fig6",
    claims=CLAIMS_FIG5,
    trial_metric="drop_rate",
)
FIG4 = _figure(
    "fig4",
    "The window over time",
    "cwnd_max",
    "largest cwnd (segments)",
    FINDING_FIG4,
    drawing=draw_windows,
    trials_of="fig6",
    claims=CLAIMS_FIG4,
)

FIGURES = (FIG4, FIG5, FIG6, FIG7, WHOLE)
# The derived figures results/reference keeps (netrepro.studykit.kept): none of this study's.
KEPT: tuple[Kept, ...] = ()
