"""Study newcwv (seed 002, Hossain and Fairhurst 2023): bursty HTTP after idle periods with RFC 7661.

An Apache server answers one client over a persistent HTTP/1.1 connection:
two responses set the window up (the first opens it from the initial
window, the second follows a second of idle time, as every counted burst
follows one), then a burst of B KB after each idle period of t seconds
(the order shuffled per trial).  The server starts
connections with IW 3.  Three arms on every path, a fourth beside the bulk
flow:

- the baseline, Linux's NewReno+SACK as it runs by default: `reno` with
  tcp_slow_start_after_idle=1, which restarts the window after an idle
  period longer than the RTO (halved per RTO idle, down to IW);
- newCWV: netrepro's `newcwv` with tcp_slow_start_after_idle=0 (the
  authors' module forced that setting: with 1 the kernel restarts the
  window before newCWV can act);
- Reno without the restart (tcp_slow_start_after_idle=0): what keeping the
  window alone is worth, so that what newCWV adds beyond it shows;
- paced newCWV (beside the bulk flow): the fq qdisc on the server's egress
  where the kernel has it, else TCP's own pacing asked for by newcwv's
  pacing=1, recorded per trial.

The seed's metric: gain = (Tr - Tc) / Tr x 100 of an arm (Tc) over the
baseline (Tr).  Here the bursts of two arms are not paired (the seed
replayed one trace under each), so a cell's gain is taken between the
arms' mean burst times over trials (a trial's value: its burst after that
idle period, or its mean over all its bursts), its bar one standard error
over trials (delta method).  The trial is the unit throughout: a trial's
bursts share its connection and are not independent.

This module declares the figures and draws them.  The source's findings
are claims (`Figure.claims`, netrepro.studykit.claims), each its own
sentence, or its table's row, with the test that decides it on the trials:
expts/newcwv_claims.py.  The arms and a trial's values, which both read:
expts/newcwv_trials.py; seed 002's Figure 5 drawn: expts/newcwv_pipeack.py.
The notes beside a figure give its numbers and the slow-start model, no
verdict.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from expts.newcwv_claims import (
    FIG5_CLAIMS,
    FIG7_CLAIMS,
    FIG8_CLAIMS,
    FIG9_CLAIMS,
    FIG11_CLAIMS,
    PACING_CLAIMS,
    TABLE2_CLAIMS,
    TABLE3_CLAIMS,
)
from expts.newcwv_pipeack import draw_pipeack
from expts.newcwv_trials import (
    ARMS,
    BASELINE,
    BURSTS_KB,
    EVERY_RTT,
    IW,
    MAX_FILTER,
    NEWCWV,
    PACED,
    RENO_KEPT,
    Burst,
    bursts_of,
    cells,
    gain,
    idle_label,
    idles_of,
    mean_se,
    segments,
    trial_burst_ms,
    trial_retransmitted,
    trial_values,
)
from ground.path import MSS
from netrepro.studykit import plot
from netrepro.studykit.kept import Kept
from netrepro.studykit.spec import Figure, Point, Rows
from netrepro.studykit.trial import Trial
from netrepro.studykit.variation import Variation
from servers.burst_trace import burst_rounds, gain_pct
from topologies.topology import Topology

# The source, cited as far as its text gives authors, title and venue.
SOURCE = (
    'seed 002: Ziaul Hossain, Gorry Fairhurst, "Enhancing HTTP Web Protocol Performance with Updated '
    'Transport Layer Techniques", International Journal of Computer Networks & Communications (IJCNC), '
    "2023, doi:10.5121/ijcnc.2023.15401"
)

# What this study's paths vary from trial to trial beyond the start phase (netrepro.studykit.variation,
# docs/studies/newcwv.md, "What varies"): why that much, from the source's description of its network.
VARIATION = Variation.of(
    "1ms",
    (
        "seed 002's testbed is an emulated dumbbell with 200 ms paths; +-1 ms, a wired path's queueing and "
        "scheduling, is 1 % of its one-way delay and within one bottleneck service time on the congested 2 Mbit/s"
        " path (6 ms); on the uncongested one (no limit in the source, 100 Mbit/s here) it is eight service "
        "times, and holds a burst behind its latest draw as a FIFO path would"
    ),
)

REFERENCE = Path(__file__).resolve().parent / "reference" / "newcwv_tables.csv"

IDLES = "1,3,5,7,10,15"
FRAME = MSS + 66  # the wire bytes of a full segment

# Section 4.2: "no bandwidth limit", a 200 ms delay.  Here a rate at which an 80 KB burst takes 7 ms
# (3 % of the RTT) and a queue no burst fills.  Section 4.3: 2 Mbit/s, a 30 KB buffer (20 packets of 1500 B).
UNCONGESTED: dict[str, Any] = {"rtt": "200ms", "rate": "100mbit", "queue": "1000p"}
CONGESTED: dict[str, Any] = {"rtt": "200ms", "rate": "2mbit", "queue": "30kb"}
HTTP: dict[str, Any] = {"initcwnd": IW, "idle_s": IDLES, "repeats": 1}


DEVIATIONS = (
    "bursts from netrepro's burst client over one persistent connection, B in {5, 10, 20, 40, 80} KB after "
    "idle periods of {1, 3, 5, 7, 10, 15} s, each burst the same size as the one before it (seed 002: Tmix "
    "replaying 3151 real connections)",
    "a cell's gain is taken between the arms' mean burst times over trials (the seed averaged a gain per "
    "burst over the same trace replayed under each arm)",
    "uncongested: 100 Mbit/s and a 1000-packet queue stand for the seed's unlimited rate",
    "newCWV is netrepro's RFC 7661 implementation (kmod/newcwv.c, or its BPF port where modules cannot load), "
    "not the authors' 3.12 module; Linux 3.12's NewReno is today's `reno`",
)
SPREAD = "gain between the arms' mean burst times over trials, bar: one standard error over trials (delta method)"
QUICK_NOTE = "quick: fewer burst sizes and idle periods, one or two trials"

FINDING_FIG5 = (
    "seed 002, Figure 5 (section 3, bursty traffic): with pipeACK the maximum of the last 5 samples (b), "
    "pipeACK is more stable than computed every RTT (a), and cwnd grows faster to a higher value (60 segments "
    "against 50); the sender enters the non-validated phase later"
)
FINDING_FIG7 = (
    "seed 002, Figure 7 (uncongested): newCWV transfers a burst in 37-62 % less time than NewReno+SACK, more "
    "for larger bursts (about 50 % at 5 KB, 60 % at 80 KB), and at 40 KB almost 20 % more when the idle period "
    "is longer"
)
FINDING_FIG8 = (
    "seed 002, Figure 8 (2 Mbit/s, 30 KB buffer): 10-35 % less time (about 25-33 % for bursts above 5 KB), "
    "less for larger bursts, more for longer idle periods"
)
FINDING_FIG9 = "seed 002, Figure 9 (congested): newCWV loses more packets than NewReno+SACK, for larger bursts"
FINDING_TABLE2 = (
    "seed 002, Table 2 (beside a bulk transfer, no pacing): 18-20 % at 5 KB falling to 4-5 % at 40 KB, and "
    "at 80 KB newCWV takes about 10-15 % more time; in the 5-40 KB rows the gain grows with the idle period, "
    "in the 80 KB row it falls (-10 % after 1 s, -15 % after 15 s)"
)
FINDING_TABLE3 = (
    "seed 002, Table 3 (beside a bulk transfer, newCWV paced): 10-20 % across the table (its cells 13-22 %), "
    "13-16 % at 80 KB; within each row the gain grows with the idle period"
)
FINDING_FIG11 = (
    "seed 002, Figure 11: the bulk transfer's throughput shows no significant difference whichever algorithm "
    "the HTTP server runs (NewReno, newCWV, paced newCWV)"
)
FINDING_PACING = (
    "seed 002, sections 4.4-4.5: beside a bulk flow newCWV's 80 KB bursts lose more and take longer than "
    "NewReno+SACK's (Table 2's negative row); pacing spreads each burst over about an RTT, reduces the losses, "
    "and regains newCWV's advantage (Table 3: 13-16 % at 80 KB)"
)


def summarize_gain(arm: str):  # type: ignore[no-untyped-def]
    """A summary: the gain of `arm` over the baseline per burst size, one series per idle period (and, for
    every other arm, one series over all idle periods: a trial's mean burst time)."""

    def summarize(fig: Figure, rows: Rows) -> list[Point]:
        idles = idles_of(rows)
        points = []
        for kb in fig.levels:
            for idle in idles:
                base, other = trial_values(rows, BASELINE.label, kb, idle), trial_values(rows, arm, kb, idle)
                if base and other:
                    g = gain(base, other)
                    points.append(Point(f"{arm}, {idle_label(idle)}", kb, g.pct, g.pct - g.se, g.pct + g.se, g.n))
            base = trial_values(rows, BASELINE.label, kb)
            for s in fig.series:
                if s.label in (BASELINE.label, arm):
                    continue
                other = trial_values(rows, s.label, kb)
                if base and other:
                    g = gain(base, other)
                    label = f"{s.label}, all idle periods"
                    points.append(Point(label, kb, g.pct, g.pct - g.se, g.pct + g.se, g.n))
        return points

    return summarize


# -- the model ------------------------------------------------------------------------


def burst_model_ms(window: int, burst_kb: int, rtt_ms: float, rate_bps: float) -> float:
    """A burst without loss: one round trip per slow-start round from `window`, plus its time on the wire."""
    segs = segments(burst_kb)
    return burst_rounds(window, segs) * rtt_ms + segs * FRAME * 8 / rate_bps * 1e3


def model_ms(fig: Figure, bursts: list[Burst]) -> float:
    """The model's mean burst time for these bursts, each from the window tcp_probe saw it resume with."""
    rtt, rate = fig.path.rtt.ms, fig.path.rate_down.bps
    return statistics.fmean(burst_model_ms(b.cwnd_resumed, b.burst_kb, rtt, rate) for b in bursts)


def model_gain(fig: Figure, baseline: list[Burst], other: list[Burst]) -> float:
    """The gain the model predicts from the windows each arm's bursts resumed with."""
    return gain_pct(model_ms(fig, baseline), model_ms(fig, other))


def iw_model_gain(fig: Figure, kb: int) -> float:
    """The gain the model predicts for a restart from IW 3 against a window that holds the whole burst."""
    rtt, rate = fig.path.rtt.ms, fig.path.rate_down.bps
    return gain_pct(burst_model_ms(IW, kb, rtt, rate), burst_model_ms(10**6, kb, rtt, rate))


def annotate_fig7(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    """The slow-start model beside the measured gain: from IW 3 against one round, and from the windows
    tcp_probe saw each arm resume with; the share of the gain that keeping the window alone gives."""
    found = cells(rows)
    kbs = [int(k) for k in fig.levels]
    iw_model = [iw_model_gain(fig, kb) for kb in kbs]
    ax.plot(kbs, iw_model, "k--", label="model: restart from IW 3 vs one round")
    notes = [
        "model: a burst of S segments takes R round trips plus S x 1514 B / rate, R the slow-start rounds from "
        "the window it resumes with (doubling each round; tcp_probe's window at the response's first ACK); "
        "RTT 200 ms; per cell: measured/model gain % (median windows resumed with: baseline, newCWV)",
    ]
    worst = 0.0
    for kb in kbs:
        parts = []
        for idle in sorted({k[2] for k in found if k[1] == kb}):
            base, kept = found.get((BASELINE.label, kb, idle)), found.get((NEWCWV.label, kb, idle))
            ours = trial_values(rows, BASELINE.label, kb, idle), trial_values(rows, NEWCWV.label, kb, idle)
            if not (base and kept and all(ours)):
                continue
            measured, predicted = gain(*ours).pct, model_gain(fig, base, kept)
            worst = max(worst, abs(measured - predicted))
            w_base = statistics.median(b.cwnd_resumed for b in base)
            w_kept = statistics.median(b.cwnd_resumed for b in kept)
            parts.append(f"{idle:g} s {measured:.0f}/{predicted:.0f} (cwnd {w_base:g}, {w_kept:g})")
        if parts:
            notes.append(f"{kb} KB ({segments(kb)} segments), measured/model gain %: " + ", ".join(parts))
    if worst:
        notes.append(f"largest difference between a cell's measured and modelled gain: {worst:.1f} points")
    notes += _kept_share(points, kbs)
    plot.legend_beside(ax)
    return notes


def _mean_over_idles(points: list[Point], arm: str, kb: int) -> float | None:
    ys = [p.y for p in points if p.series.startswith(f"{arm}, idle") and int(p.x) == kb]
    return statistics.fmean(ys) if ys else None


def _kept_share(points: list[Point], kbs: list[int]) -> list[str]:
    out = []
    for kb in kbs:
        kept = next((p for p in points if p.series == f"{RENO_KEPT.label}, all idle periods" and int(p.x) == kb), None)
        ours = _mean_over_idles(points, NEWCWV.label, kb)
        if kept is not None and ours is not None:
            out.append(
                f"{kb} KB: Reno without the restart gains {kept.y:.0f} %, newCWV {ours:.0f} % "
                f"(newCWV adds {ours - kept.y:+.0f} points beyond keeping the window)"
            )
    return out


def annotate_fig8(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    """newCWV's gain per burst size (the mean of its idle periods' cells), and what keeping the window gives."""
    plot.legend_beside(ax)
    kbs = [int(k) for k in fig.levels]
    got = {kb: m for kb in kbs if (m := _mean_over_idles(points, NEWCWV.label, kb)) is not None}
    notes = [f"newCWV's gain, mean over idle periods: {', '.join(f'{kb} KB {m:.0f} %' for kb, m in got.items())}"]
    return (notes if got else []) + _kept_share(points, kbs)


# -- losses ---------------------------------------------------------------------------


def losses_by_arm(rows: Rows, kb: Any) -> dict[str, tuple[float, float, int]]:
    """Retransmitted segments per burst of `kb` KB, by arm: (mean over trials, its standard error, trials)."""
    by: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r.ok and r.text("burst_kb") == str(kb):
            value = trial_retransmitted(r)
            if value is not None:
                by[r.series].append(value)
    return {arm: (*mean_se(v), len(v)) for arm, v in by.items()}


def summarize_losses(fig: Figure, rows: Rows) -> list[Point]:
    """Retransmitted segments per burst, by arm and burst size: mean and standard error over trials."""
    points = []
    for kb in fig.levels:
        found = losses_by_arm(rows, kb)
        for s in fig.series:
            if s.label in found:
                mean, se, n = found[s.label]
                points.append(Point(s.label, kb, mean, mean - se, mean + se, n))
    return points


def first_flight_share(rows: Rows, kb: int) -> dict[str, tuple[int, int]]:
    """Of the segments bursts of `kb` KB sent again, how many first left in the first flight, by arm:
    (from the first flight, all)."""
    return _first_flight_totals(rows, kb, "retransmitted")


def first_flight_loss_rate(rows: Rows, kb: int) -> dict[str, tuple[int, int]]:
    """Of the segments the first flights of `kb` KB bursts carried, how many were sent again, by arm: (again, sent)."""
    return _first_flight_totals(rows, kb, "first_flight")


def _first_flight_totals(rows: Rows, kb: int, column: str) -> dict[str, tuple[int, int]]:
    """Per arm, over the bursts of `kb` KB: (segments of the first flight sent again, sum of `column`);
    rows recorded before the first flight's column existed are left out."""
    by: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        if not row.ok or not row.text("first_flight_retransmitted") or int(row.text("burst_kb")) != kb:
            continue
        pairs = zip(row.text("first_flight_retransmitted").split(";"), row.text(column).split(";"), strict=True)
        for again, other in pairs:
            by[row.series][0] += int(again)
            by[row.series][1] += int(other)
    return {arm: (a, o) for arm, (a, o) in by.items()}


def _losses_at(rows: Rows, kb: int) -> list[str]:
    found = losses_by_arm(rows, kb)
    if not found:
        return []
    notes = [
        f"retransmitted segments per {kb} KB burst, mean over trials: "
        + ", ".join(f"{arm} {m:.1f} ± {se:.1f} (n={n})" for arm, (m, se, n) in found.items())
    ]
    share = first_flight_share(rows, kb)
    if share:
        notes.append(
            "of those, first sent in the burst's first flight (what pacing the first flight can save): "
            + ", ".join(f"{arm} {f} of {a}" for arm, (f, a) in share.items())
        )
    return notes


def _spread_note(rows: Rows) -> str:
    by: dict[str, list[float]] = defaultdict(list)
    for b in bursts_of(rows):
        if b.burst_kb == max(BURSTS_KB):
            by[b.arm].append(b.first_flight_ms)
    parts = [f"{arm} {statistics.median(v):.0f} ms" for arm, v in by.items() if v]
    return f"; an 80 KB burst's first flight left over (median): {', '.join(parts)} (RTT 200 ms)" if parts else ""


def annotate_pacing(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    """The bulk flow's goodput beside each arm, the first flights' losses, each arm's gain, the flights' spread."""
    kb = int(fig.levels[-1])
    notes = _bulk_notes(rows)
    rates = first_flight_loss_rate(rows, kb)
    if rates:
        notes.append(
            "segments of the first flight sent again (the flight pacing spreads): "
            + ", ".join(f"{arm} {a} of {n} ({a / n:.3f})" for arm, (a, n) in rates.items() if n)
        )
    base = trial_values(rows, BASELINE.label, kb)
    for arm in (NEWCWV.label, PACED.label):
        other = trial_values(rows, arm, kb)
        if base and other:
            g = gain(base, other)
            notes.append(f"gain of {arm} over NewReno+SACK at {kb} KB (over trials): {g.pct:.1f} ± {g.se:.1f} %")
    spread = _spread_note(rows).removeprefix("; ")
    return [*notes, spread] if spread else notes


# -- tables 2 and 3 -------------------------------------------------------------------


def seed_table(name: str) -> dict[tuple[int, float], float]:
    with open(REFERENCE, newline="") as f:
        cells = csv.DictReader(line for line in f if not line.startswith("#"))
        return {
            (int(c["burst_kb"]), float(c["idle_s"])): float(c["improvement_pct"]) for c in cells if c["table"] == name
        }


def annotate_table(name: str, arm: str):  # type: ignore[no-untyped-def]
    """Our gain per cell beside the seed's table (its cells drawn as crosses); losses at 80 KB."""

    def annotate(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
        seed = seed_table(name)
        colours = plot.series_colours(ax)
        idles = sorted({idle for _, idle in seed})
        for idle in idles:
            label = f"{arm}, {idle_label(idle)}"
            xs = [kb for kb in BURSTS_KB if (kb, idle) in seed]
            ax.plot(xs, [seed[(kb, idle)] for kb in xs], "x", color=colours.get(label, "k"), ms=7)
        ax.plot([], [], "kx", label=f"seed 002, {name.replace('table', 'Table ')}")
        ax.axhline(0, color="k", linewidth=0.6)
        notes = table_numbers(name, arm, points)
        notes += _losses_at(rows, 80)
        pacers = sorted({r.text("pacer_used") for r in rows if r.series == PACED.label} - {""})
        if pacers:
            notes.append(f"paced by: {', '.join(pacers)}" + _spread_note(rows))
        plot.legend_beside(ax)
        return notes

    return annotate


def table_numbers(name: str, arm: str, points: list[Point]) -> list[str]:
    """Our gain per cell beside the seed's, a row per burst size, and how far they are apart."""
    seed = seed_table(name)
    idles = sorted({idle for _, idle in seed})
    notes, diffs = [], []
    for kb in BURSTS_KB:
        parts = []
        for idle in idles:
            p = next((q for q in points if q.series == f"{arm}, {idle_label(idle)}" and int(q.x) == kb), None)
            if p is None:
                continue
            ref = seed[(kb, idle)]
            diffs.append(p.y - ref)
            parts.append(f"{idle:g} s {p.y:+.0f} ({ref:+.0f})")
        if parts:
            notes.append(f"{kb} KB, ours (seed): " + ", ".join(parts))
    if diffs:
        notes.append(
            f"ours less the seed's, over {len(diffs)} cells: mean {statistics.fmean(diffs):+.1f} points, "
            f"largest {max(diffs, key=abs):+.1f}"
        )
    return notes


# -- figure 11 -------------------------------------------------------------------------


def summarize_bulk(fig: Figure, rows: Rows) -> list[Point]:
    """The bulk flow's goodput while the HTTP server ran each arm: mean and standard error over trials."""
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r.ok and r.text("bulk_goodput_mbit"):
            by[(r.series, r.text("burst_kb"))].append(r.measured("bulk_goodput_mbit"))
    points = []
    for s in fig.series:
        for kb in fig.levels:
            values = by.get((s.label, str(kb)))
            if values:
                mean, se = mean_se(values)
                points.append(Point(s.label, kb, mean, mean - se, mean + se, len(values)))
    return points


def _bulk_notes(rows: Rows) -> list[str]:
    by: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r.ok and r.text("bulk_goodput_mbit"):
            by[r.series].append(r.measured("bulk_goodput_mbit"))
    return [
        f"bulk flow's goodput beside {arm}: {mean:.3f} ± {se:.3f} Mbit/s over {len(values)} trials"
        for arm, values in by.items()
        for mean, se in [mean_se(values)]
    ]


def annotate_bulk(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    return _bulk_notes(rows)


# -- the figures -----------------------------------------------------------------------


def timeout(trial: Trial) -> float:
    keys = trial.workload
    idles = [float(t) for t in keys.idle_s.split(",")]
    return float(120 + sum(idles) * keys.repeats + 20 * len(idles) * keys.repeats)


def _bursts_figure(name: str, **kw: Any) -> Figure:
    """A figure of the http_bursts workload: every burst size, five trials, unless `kw` says otherwise."""
    defaults: dict[str, Any] = {
        "levels": BURSTS_KB,
        "trials": 5,
        "quick_note": QUICK_NOTE,
        "deviations": DEVIATIONS,
        "trial_timeout": timeout,
    }
    return Figure(
        variation=VARIATION,
        study="newcwv",
        name=name,
        workload="http_bursts",
        x="burst_kb",
        x_label="burst size (KB)",
        **{**defaults, **kw},
    )


# What every gain figure shares, and the quick runs of the single-pair paths and of the bulk flow's.
GAIN: dict[str, Any] = {
    "y": "gain_pct",
    "y_label": "gain in burst transfer time (%)",
    "spread": SPREAD,
    "trial_metric": trial_burst_ms,  # a gain is between arms' means: each trial gives its mean burst time
}
PATH_QUICK: dict[str, Any] = {"quick_levels": (5, 80), "quick_fixed": {"idle_s": "1,5"}, "quick_trials": 1}
BULK_QUICK: dict[str, Any] = {
    "quick_levels": (80,),
    "quick_fixed": {"idle_s": "1,3", "repeats": 2},
    "quick_trials": 1,
    "quick_series": (BASELINE.label, NEWCWV.label, PACED.label),
}
LOSSES_SPREAD = "mean and standard error over trials (a trial's retransmitted segments per burst)"

# Seed 002's Figure 5: bursts after half a second of idle time, shorter than the sampling period (1 s at
# 200 ms), so that the filter's history reaches from one burst into the next.
FIG5 = _bursts_figure(
    "fig5",
    title="newCWV's pipeACK and cwnd through bursts, computed every RTT and with the maximum filter, RTT 200 ms "
    "(Figure 5)",
    y="max_cwnd",
    y_label="largest cwnd (segments)",
    finding=FINDING_FIG5,
    fixed={**UNCONGESTED, **HTTP, "idle_s": "0.5", "repeats": 10},
    series=(EVERY_RTT, MAX_FILTER),
    levels=(20, 80),
    trials=10,
    quick_levels=(80,),
    quick_trials=2,
    quick_fixed={"repeats": 4},
    claims=FIG5_CLAIMS,
    drawing=draw_pipeack,
    deviations=(
        *DEVIATIONS,
        "Figure 5 (b)'s maximum of the last 5 samples is RFC 7661 4.5.1's filter here: the maximum over "
        "max(3 SRTT, 1 s) in 4 bins, which at 200 ms holds the last 5 per-RTT samples; (a) is the last "
        "round's sample alone (newcwv's no_filter=1)",
        "the seed's bursty traffic is not described; here 10 bursts of one size, each after 0.5 s of idle time",
    ),
)
FIG7 = _bursts_figure(
    "fig7",
    title="Gain of newCWV over NewReno+SACK by burst size and idle period, uncongested (RTT 200 ms)",
    fixed={**UNCONGESTED, **HTTP},
    series=ARMS,
    finding=FINDING_FIG7,
    summarize=summarize_gain(NEWCWV.label),
    annotate=annotate_fig7,
    claims=FIG7_CLAIMS,
    **{**GAIN, **PATH_QUICK, "quick_trials": 2},
)
FIG8 = _bursts_figure(
    "fig8",
    title="Gain of newCWV over NewReno+SACK by burst size and idle period, 2 Mbit/s, 30 KB buffer",
    fixed={**CONGESTED, **HTTP},
    series=ARMS,
    finding=FINDING_FIG8,
    summarize=summarize_gain(NEWCWV.label),
    annotate=annotate_fig8,
    claims=FIG8_CLAIMS,
    **GAIN,
    **PATH_QUICK,
)
FIG9 = _bursts_figure(
    "fig9",
    title="Retransmitted segments per burst, 2 Mbit/s, 30 KB buffer",
    y="retrans_per_burst",
    y_label="retransmitted segments per burst",
    fixed={**CONGESTED, **HTTP},
    series=ARMS,
    finding=FINDING_FIG9,
    spread=LOSSES_SPREAD,
    summarize=summarize_losses,
    claims=FIG9_CLAIMS,
    trials_of="fig8",
    **PATH_QUICK,
)

# Beside a bulk transfer: a second client/server pair through the same 2 Mbit/s bottleneck.
DUMBBELL = Topology(shape="dumbbell", pairs=2)
BESIDE_BULK: dict[str, Any] = {
    "fixed": {**CONGESTED, **HTTP, "bulk": 1},
    "series": (BASELINE, NEWCWV, RENO_KEPT, PACED),
    "topology": DUMBBELL,
    **BULK_QUICK,
}

TABLE2 = _bursts_figure(
    "table2",
    title="Gain of newCWV over NewReno+SACK beside a bulk TCP flow, 2 Mbit/s, 30 KB buffer (Table 2)",
    finding=FINDING_TABLE2,
    summarize=summarize_gain(NEWCWV.label),
    annotate=annotate_table("table2", NEWCWV.label),
    claims=TABLE2_CLAIMS,
    **GAIN,
    **BESIDE_BULK,
)
TABLE3 = _bursts_figure(
    "table3",
    title="Gain of paced newCWV over NewReno+SACK beside a bulk TCP flow, 2 Mbit/s, 30 KB buffer (Table 3)",
    finding=FINDING_TABLE3,
    summarize=summarize_gain(PACED.label),
    annotate=annotate_table("table3", PACED.label),
    claims=TABLE3_CLAIMS,
    trials_of="table2",
    **GAIN,
    **BESIDE_BULK,
)
FIG11 = _bursts_figure(
    "fig11",
    title="The bulk flow's goodput while the HTTP server runs each arm, 2 Mbit/s, 30 KB buffer",
    y="bulk_goodput_mbit",
    y_label="bulk flow goodput (Mbit/s)",
    finding=FINDING_FIG11,
    spread="mean and standard error over trials",
    summarize=summarize_bulk,
    annotate=annotate_bulk,
    claims=FIG11_CLAIMS,
    trials_of="table2",
    **BESIDE_BULK,
)

# The 80 KB row of tables 2 and 3 again, with more bursts a trial: thirty, each after one second of idle
# time (newCWV keeps its window, the baseline restarts it: the RTO is below a second), beside the bulk flow.
PACING = _bursts_figure(
    "pacing",
    title="Retransmitted segments per 80 KB burst beside a bulk TCP flow, without and with pacing, 2 Mbit/s, "
    "30 KB buffer",
    y="retrans_per_burst",
    y_label="retransmitted segments per burst",
    finding=FINDING_PACING,
    spread=LOSSES_SPREAD,
    summarize=summarize_losses,
    annotate=annotate_pacing,
    claims=PACING_CLAIMS,
    topology=DUMBBELL,
    fixed={**CONGESTED, **HTTP, "bulk": 1, "idle_s": "1", "repeats": 30},
    series=(BASELINE, NEWCWV, PACED),
    levels=(80,),
    trials=10,
    quick_fixed={"repeats": 4},
    quick_series=(NEWCWV.label, PACED.label),
    quick_trials=1,
)

FIGURES = (FIG5, FIG7, FIG8, FIG9, TABLE2, TABLE3, FIG11, PACING)

# The derived figures of pacing results/reference keeps (netrepro.studykit.kept), each judged by pacing's claims;
# why each is run, from docs/studies/newcwv.md's pacing section.
KEPT = (
    Kept(
        "pacing",
        {"idle_s": "5"},
        "the bursts after 5 s of idle time instead of 1 s, where the bulk flow has filled the buffer and every "
        "arm, the baseline's IW 3 too, loses a large share of its first flight (a phase effect of drop-tail)",
        PACING_CLAIMS,
    ),
    Kept(
        "pacing",
        {"jitter": "3ms"},
        "Floyd and Jacobson's remedy for that phase effect, +-3 ms of timing noise on every host's link, at "
        "the declared 1 s of idle time",
        PACING_CLAIMS,
    ),
    Kept(
        "pacing",
        {"idle_s": "5", "jitter": "3ms"},
        "the same +-3 ms of timing noise after 5 s of idle time: whether pacing helps newCWV once the "
        "delay line's exact timing no longer drops what arrives out of phase",
        PACING_CLAIMS,
    ),
)
