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
sentences no test here can decide (and why), no verdict.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ground.path import IP_UDP_HEADERS, PathSpec
from kmod import loader
from netrepro.studykit import claims, plot
from netrepro.studykit.claims import Better, ByDesign, Claim, Computed, Finding, Group, Same
from netrepro.studykit.spec import Figure, Point, Rows, Series
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


# -- the seed's claims --------------------------------------------------------------------------
#
# The claims compare algorithms, which are the figures' levels (x = cc), in one flow or in the mean of the
# four: netrepro.studykit.claims' tests compare groups at one level, so each test here runs on the figure turned round
# (`turned`: the flows as its levels, an algorithm a group).  For the mean over the four flows, one value per
# algorithm and trial index is the mean of that index's trial in each flow (`pooled_rows`): four independent
# runs, one replicate of the seed's "mean ... of all flows".

SEED = "004_e93124045b9169be.txt"
FLOWS = tuple(s.label for s in SCENARIOS)
POOLED = "mean of the four flows"

RowMetric = Callable[[Mapping[str, str]], float | None]
# The seed's own scale for "same" (section 5): drop rates "70% same" or "80% same", read as the smaller at
# least 70 % (80 %) of the larger: a ratio within 1/0.7 (1/0.8).  A drop rate "high" or "low as compare to"
# another is then worth more than what the seed still calls the same: a lead surely under 1/0.7 differs.
SAME_70 = 1 / 0.7 - 1
SAME_80 = 1 / 0.8 - 1
LOSS_WORTH = SAME_70


def cc_group(cc: str) -> Group:
    return Group(where={"cc": cc})


def turned(fig: Figure, levels: Sequence[str]) -> Figure:
    """The figure with the flows (its series' labels) as levels, for a test whose groups are algorithms."""
    return dataclasses.replace(fig, x="series", levels=tuple(levels))


def pooled_rows(rows: Rows, metric: RowMetric) -> list[dict[str, str]]:
    """One row per algorithm and trial index: `metric`'s mean over the four flows' trials of that index
    (column "value", series POOLED); an index some flow lacks is left out."""
    by: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        if r.get("status") != "ok" or r.get("series") not in FLOWS:
            continue
        value = metric(r)
        if value is not None and math.isfinite(value):
            by.setdefault((str(r.get("cc")), str(r.get("trial"))), {})[str(r["series"])] = value
    return [
        {"series": POOLED, "cc": cc, "trial": trial, "status": "ok", "value": repr(sum(v.values()) / len(v))}
        for (cc, trial), v in sorted(by.items())
        if len(v) == len(FLOWS)
    ]


Part = tuple[str, Better | Same]  # a label ("against reno") and a test between algorithms


def decide_parts(fig: Figure, rows: Rows, parts: Sequence[Part], pooled: bool) -> list[Finding]:
    """Each part at each flow (or at the mean of the four), one finding a level; a part's "differs" is read
    off an interval widened for every part at every level (intervals.differs_confidence)."""
    levels = (POOLED,) if pooled else FLOWS
    out = []
    for level in levels:
        found = []
        for label, test in parts:
            family = len(parts) * len(levels)
            if pooled:
                metric = test.metric
                assert callable(metric), "a pooled test reads a function of the row"
                t: Better | Same = dataclasses.replace(test, metric="value", levels=(level,), family=family)
                (f,) = t.decide(turned(fig, (level,)), pooled_rows(rows, metric))
            else:
                t = dataclasses.replace(test, levels=(level,), family=family)
                (f,) = t.decide(turned(fig, FLOWS), rows)
            found.append((label, f))
        out.append(claims.joined(level, found))
    return out


def _scope(pooled: bool) -> str:
    return "on the mean over the four flows, one value a trial index" if pooled else "in each of the four flows"


def _metric_name(metric: RowMetric) -> str:
    return (metric.__doc__ or metric.__name__).strip()


def beats(
    metric: RowMetric, winners: Sequence[str], losers: Sequence[str], higher: bool, worth: float, pooled: bool
) -> Computed:
    """Each of `winners` higher (lower) in `metric` than each of `losers`, by at least `worth` to count."""
    parts: list[Part] = [
        (f"{w} against {x}", Better(metric, cc_group(w), cc_group(x), higher=higher, worth=worth))
        for w in winners
        for x in losers
        if x != w
    ]
    what = (
        f"{' and '.join(winners)} {'higher' if higher else 'lower'} than each of {', '.join(losers)} in "
        f"{_metric_name(metric)}, {_scope(pooled)} (ratio of geometric means, at least {worth:.0%} to count; "
        "95 % Welch interval over trials)"
    )
    return Computed(what, lambda fig, rows: decide_parts(fig, rows, parts, pooled))


def alike(metric: RowMetric, ccs: Sequence[str], margin: float, pooled: bool) -> Computed:
    """Every two of `ccs` alike in `metric` within `margin` (an equivalence test for each pair)."""
    pairs = itertools.combinations(ccs, 2)
    parts: list[Part] = [(f"{a} and {b}", Same(metric, (cc_group(a), cc_group(b)), margin)) for a, b in pairs]
    what = (
        f"every two of {', '.join(ccs)} within {margin:.0%} of each other in {_metric_name(metric)}, "
        f"{_scope(pooled)} (ratio of geometric means; equivalence: two one-sided tests at 5 %, trials as unit)"
    )
    return Computed(what, lambda fig, rows: decide_parts(fig, rows, parts, pooled))


WINDOW_WORTH = 0.20  # fig4's "similar": windows within 20 %; a growth "very slow" must be more than that apart


def on_top(cc: str = "cubic") -> Computed:
    """`cc` ahead of every other algorithm on the two grounds the seed's conclusion names: its packet loss
    lower (drop rate at the core) and its window larger (averaged over the run), but for Hybla's window,
    which the seed itself faults as too aggressive."""
    parts: list[Part] = []
    for other in others(cc):
        loss = Better(drop_rate, cc_group(cc), cc_group(other), higher=False, worth=LOSS_WORTH)
        parts.append((f"drop rate against {other}", loss))
        if other != "hybla":
            window = Better(mean_window, cc_group(cc), cc_group(other), higher=True, worth=WINDOW_WORTH)
            parts.append((f"window against {other}", window))
    what = (
        f"{cc} lower in the drop rate at the core than each other algorithm (at least {LOSS_WORTH:.0%} to count) "
        f"and larger in the window averaged over the run than each but Hybla (at least {WINDOW_WORTH:.0%}), "
        f"{_scope(True)} (ratios of geometric means; 95 % Welch intervals over trials)"
    )
    return Computed(what, lambda fig, rows: decide_parts(fig, rows, parts, True))


def others(*ccs: str) -> tuple[str, ...]:
    return tuple(cc for cc in ALGORITHMS if cc not in ccs)


SECTION_CWND = 'section "2. Analysis of congestion window behaviour", Figure 4'
SECTION_DROPS = 'section 5, "Analysis of packet drop rate", Figure 5'
SECTION_THROUGHPUT = 'section 6, "Analysis of throughput"'
WINDOW_READING = (
    "the window averaged over each trial's 120 s (its 0.5-s series, what Figure 4 draws; the largest window, the "
    "figure's table, is one sample, Hybla's 65535 lasting a second), in each of the four flows, as the seed does "
    "not say which flow its Figure 4 draws"
)

CLAIMS_FIG4 = (
    Claim(
        SEED,
        SECTION_CWND,
        "In Figure 4, the congestion control technique of TCP Hybla increases its congestion window size very "
        "aggressively to obtain the given bandwidth as compare to other techniques",
        ByDesign(
            "Hybla's slow start adds 2^rho - 1 segments per ACK and its congestion avoidance rho^2 per round "
            "trip, rho = RTT / 25 ms (52 at RTT 1.3 s, 68 at 1.7 s), where Reno adds 1 and 1: on a path this "
            "long its growth outpaces every other algorithm's by its definition",
            "a derived figure on a short path, `--series rtt=25ms`, where rho = 1 and Hybla grows as Reno does",
        ),
        "Hybla's window growth against the others' in the first round trips",
    ),
    Claim(
        SEED,
        SECTION_CWND,
        "TCP Hybla increases its congestion window size very aggressively ... which also leads towards burst "
        "packet losses",
        beats(drops_per_reduction, ("hybla",), others("hybla"), higher=True, worth=LOSS_WORTH, pooled=False),
        "burst losses as many packets lost at once: the drops at the core per fall of the window (a run of "
        "falling samples in its 0.5-s series stands for one loss episode), Hybla's above each other algorithm's; "
        f"a lead surely under {LOSS_WORTH:.0%} differs (the seed still calls drop rates that close '70% same', "
        "section 5); in each of the four flows (beside the UDP flow its drops at the core count too: the burst "
        "caused them)",
    ),
    Claim(
        SEED,
        SECTION_CWND,
        "After that the congestion window behavior of TCP Highspeed, Scalable TCP, TCP Veno and YeAH is near to "
        "similar",
        alike(mean_window, ("highspeed", "scalable", "veno", "yeah"), WINDOW_WORTH, pooled=False),
        f"{WINDOW_READING}; 'near to similar' as every two within {WINDOW_WORTH:.0%}: the seed's own 'same' for "
        "drop rates is '80% same' (section 5), and the groups its Figure 4 sets apart (Hybla; Vegas and Reno, "
        "'very slow') lie further apart than that",
    ),
    Claim(
        SEED,
        SECTION_CWND,
        "TCP Vegas and TCP Reno are the oldest congestion control techniques, so the in these congestion control "
        "techniques the growth of congestion window is very slow as shown in Figure 4.",
        beats(mean_window, ("vegas", "reno"), others("vegas", "reno", "lp"), False, WINDOW_WORTH, pooled=False),
        f"{WINDOW_READING}; 'very slow' against the other algorithms Figure 4 draws: each of Vegas and Reno "
        f"smaller than each other algorithm; a gap surely under {WINDOW_WORTH:.0%} differs (what 'similar' allows "
        "cannot be 'very slow'); LP left out, as the seed's next sentence makes it very similar to Reno",
    ),
    Claim(
        SEED,
        SECTION_CWND,
        "The congestion window behavior of TCP LP is very similar to to TCP Reno.",
        alike(mean_window, ("lp", "reno"), 0.10, pooled=False),
        f"{WINDOW_READING}; 'very similar' as within 10 %, half what 'similar' gets here",
    ),
    Claim(
        SEED,
        SECTION_CWND,
        "The behavior of TCP BIC and YeAH TCP is also similar.",
        alike(mean_window, ("bic", "yeah"), WINDOW_WORTH, pooled=False),
        f"{WINDOW_READING}; 'similar' as within {WINDOW_WORTH:.0%}, as for Highspeed, Scalable, Veno and YeAH",
    ),
)

DROPS_READING = (
    "the drop rate at the core's queue (drops over arrivals there, the UDP flow's too beside it: Figure 5's "
    "metric), its mean over the four flows "
    "as the seed's Figure 5 takes it ('The mean of packet drop is taken of all flows'), one value per trial "
    "index; Compound, never in mainline Linux, is not run"
)
CLAIMS_FIG5 = (
    Claim(
        SEED,
        SECTION_DROPS,
        "Its is observed that TCP Hybla has high packet drop rate ... as compare to other congestion control "
        "technique as shown in Figure 5.",
        beats(drop_rate, ("hybla",), others("hybla"), higher=True, worth=LOSS_WORTH, pooled=True),
        f"{DROPS_READING}; 'high as compare to other' as above each other algorithm; a lead surely under "
        f"{LOSS_WORTH:.0%} differs: the seed still calls drop rates that close '70% same' in its next sentence",
    ),
    Claim(
        SEED,
        SECTION_DROPS,
        "TCP Compound and TCP CUBIC have low packet drop rate as compare to other congestion control technique "
        "as shown in Figure 5.",
        beats(drop_rate, ("cubic",), others("cubic"), higher=False, worth=LOSS_WORTH, pooled=True),
        f"{DROPS_READING}; 'low as compare to other' as CUBIC below each other algorithm; a gap surely under "
        f"{LOSS_WORTH:.0%} (CUBIC's over 70 % of the other's, '70% same' in the next sentence) differs",
    ),
    Claim(
        SEED,
        SECTION_DROPS,
        "The packet drop rate of Highspeed TCP, Hamiton TCP, TCP Illinois and scable TCP is 70% same",
        alike(drop_rate, ("highspeed", "htcp", "illinois", "scalable"), SAME_70, pooled=True),
        f"{DROPS_READING}; '70% same' as every two with the smaller at least 70 % of the larger: a ratio within "
        f"1/0.7 ({SAME_70:.0%}); Hamilton TCP is htcp",
    ),
    Claim(
        SEED,
        SECTION_DROPS,
        "therefore drop rate of TCP Vegas, TCP Westwood and YeAH TCP are 80% same with each other.",
        alike(drop_rate, ("vegas", "westwood", "yeah"), SAME_80, pooled=True),
        f"{DROPS_READING}; '80% same' as every two with the smaller at least 80 % of the larger: a ratio within "
        f"1/0.8 ({SAME_80:.0%})",
    ),
    Claim(
        SEED,
        SECTION_DROPS,
        "However we can say that the packet loss rate of TCP BIC, TCP Compound and TCP CUBIC is low as compare to "
        "other congestion control techniques.",
        beats(drop_rate, ("bic", "cubic"), others("bic", "cubic"), higher=False, worth=LOSS_WORTH, pooled=True),
        f"{DROPS_READING}; each of BIC and CUBIC below each of the other eleven (Compound is not run); a gap "
        f"surely under {LOSS_WORTH:.0%} differs, as in the section's first sentence",
    ),
)

FIRST_10S_READING = (
    "the throughput over each trial's first 10 s, its mean over the four flows as the seed's Figure 6 takes it "
    "('The mean throughput is taken of all flows'), one value per trial index"
)
SAME_THROUGHPUT = 0.10  # the seed's plain "same", tighter than its "80% same"
CLAIMS_FIG6 = (
    Claim(
        SEED,
        SECTION_THROUGHPUT + ", Figure 6",
        "In first phase TCP Hyble showed the highest throughput",
        beats(first_10s, ("hybla",), others("hybla"), higher=True, worth=SAME_THROUGHPUT, pooled=True),
        f"{FIRST_10S_READING}; 'highest' as above each other algorithm; a lead surely under "
        f"{SAME_THROUGHPUT:.0%} differs: that close is what the next sentence calls 'the same mean throughput'",
    ),
    Claim(
        SEED,
        SECTION_THROUGHPUT + ", Figure 6",
        "TCP Veno showed the lowest throughput in Figure 6.",
        beats(first_10s, ("veno",), others("veno"), higher=False, worth=SAME_THROUGHPUT, pooled=True),
        f"{FIRST_10S_READING}; 'lowest' as below each other algorithm; a gap surely under {SAME_THROUGHPUT:.0%} "
        "(what 'the same' allows here) differs",
    ),
    Claim(
        SEED,
        SECTION_THROUGHPUT + ", Figure 6",
        "It is surprised that TCP Compound, Highspeed TCP, TCP LP, TCP Reno, TCP Vegas and TCP Westwood shows the "
        "same mean throughput during the first ten seconds as shown in Figure 6.",
        alike(first_10s, ("highspeed", "lp", "reno", "vegas", "westwood"), SAME_THROUGHPUT, pooled=True),
        f"{FIRST_10S_READING}; 'the same' as every two within {SAME_THROUGHPUT:.0%}: the seed's plain 'same', "
        "tighter than the '80% same' (within 25 % on the ratio) it writes where it means less; Compound is not run",
    ),
)

CLAIMS_WHOLE = (
    Claim(
        SEED,
        SECTION_THROUGHPUT,
        "We can not say that TCP Hybla is performing well between all fourteen congestion control techniques "
        "because the rate of packet loss of TCP Hybla is very high as compare to other TCP congestion control "
        "techniques.",
        beats(drop_rate, ("hybla",), others("hybla"), higher=True, worth=LOSS_WORTH, pooled=True),
        f"{DROPS_READING}; 'very high as compare to other' as above each other algorithm; a lead surely under "
        f"{LOSS_WORTH:.0%} differs (the seed gives 'very' no number; drop rates that close it calls '70% same')",
    ),
    Claim(
        SEED,
        SECTION_THROUGHPUT,
        "So after intensive analysis it is concluded that TCP CUBIC is on the top of all other congestion technique",
        on_top("cubic"),
        "on the grounds the seed's conclusion names ('TCP CUBIC performed well in term of congestion window "
        "behavior and packet loss', section 7), not on throughput: against each other algorithm, CUBIC's drop "
        "rate at the core lower and its window averaged over the run larger (the seed faults slow window growth, "
        f"Reno's and Vegas's 'very slow', section 2); a gap surely under {LOSS_WORTH:.0%} in the drop rate ('70% "
        f"same') or {WINDOW_WORTH:.0%} in the window ('similar') differs; Hybla's larger window is no ground "
        "against CUBIC, "
        "as the seed calls it too aggressive, leading to burst losses; both on the mean over the four flows, one "
        "value per trial index",
    ),
)
CLAIMS_FIG7: tuple[Claim, ...] = ()  # the seed's text says of its Figure 7 only what it shows
UNJUDGED_FIG7 = (
    "the seed states no finding of its Figure 7 (the first 15 s; its text names the phase and nothing it "
    "showed): this figure is not judged"
)

# The seed's sentences about a figure that no test here can decide, and why: shown in the figure's notes.
NOT_JUDGED_FIG4 = (
    (
        "Highspeed TCP is more friendly as compare to other two variants",
        "friendliness is a share taken from competing TCP flows, and each trial runs one flow; nor does the "
        "sentence say which two of the three others it means",
    ),
)
NOT_JUDGED_FIG6 = (
    (
        "The behavior of TCP Hybla, TCP CUBIC, Highspeed TCP is same in throughput analysis and in *cwnd* analysis "
        "section. It is concluded that the behavior of *cwnd* effected the over all throughput of the network.",
        "the window section says nothing of CUBIC, and 'same behaviour' names no metric or order to compare; "
        "that the window drives the throughput is how TCP sends, not a finding a trial could contradict",
    ),
)


def not_judged(items: Sequence[tuple[str, str]]) -> Callable[[Rows], list[str]]:
    return lambda rows: [f'not judged: "{quote}" (seed 004): {why}' for quote, why in items]


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
