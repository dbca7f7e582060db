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

The source's findings are claims (`Figure.claims`, netrepro.studykit.claims): each
its own sentence, or its table's row, with the test that decides it on the
trials.  Besides the kinds netrepro.studykit.claims offers, two tests of this study:
`gain_within` (the gain inside the range a sentence gives, per burst size
or per cell of burst size and idle period) and `idle_trend` (the gain's
slope over every idle period the trials ran, bootstrapped over whole
trials: the idle period varies inside a trial, not along the x axis).  The
notes beside a figure give its numbers and the slow-start model, no
verdict.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import statistics
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expts.newcwv_pipeack import draw_pipeack
from ground.path import MSS
from netrepro.studykit import claims, plot
from netrepro.studykit.claims import DIFFERS, HOLDS, UNDECIDED, Better, ByDesign, Claim, Finding, Same, Trend
from netrepro.studykit.spec import Figure, Params, Point, Rows, Series
from servers.burst_trace import burst_rounds, gain_pct
from topologies.topology import Topology

# The source, cited as far as its text gives authors, title and venue.
SOURCE = (
    'seed 002: Ziaul Hossain, Gorry Fairhurst, "Enhancing HTTP Web Protocol Performance with Updated '
    'Transport Layer Techniques", International Journal of Computer Networks & Communications (IJCNC), '
    "2023, doi:10.5121/ijcnc.2023.15401"
)
SEED = "002_f5ebe0c68d4d1c55.txt"  # the source's text, whose words the claims quote

REFERENCE = Path(__file__).resolve().parent / "reference" / "newcwv_tables.csv"

BURSTS_KB = (5, 10, 20, 40, 80)
IDLES = "1,3,5,7,10,15"
IW = 3
RESPONSE_HEADER_BYTES = 250  # Apache's status line and headers for these objects, about
FRAME = MSS + 66  # the wire bytes of a full segment

# Section 4.2: "no bandwidth limit", a 200 ms delay.  Here a rate at which an 80 KB burst takes 7 ms
# (3 % of the RTT) and a queue no burst fills.  Section 4.3: 2 Mbit/s, a 30 KB buffer (20 packets of 1500 B).
UNCONGESTED: dict[str, Any] = {"rtt": "200ms", "rate": "100mbit", "queue": "1000p"}
CONGESTED: dict[str, Any] = {"rtt": "200ms", "rate": "2mbit", "queue": "30kb"}
HTTP: dict[str, Any] = {"initcwnd": IW, "idle_s": IDLES, "repeats": 1}

BASELINE = Series("NewReno+SACK", {"cc": "reno", "slow_start_after_idle": 1})
NEWCWV = Series("newCWV", {"cc": "newcwv", "slow_start_after_idle": 0})
RENO_KEPT = Series("Reno, no restart", {"cc": "reno", "slow_start_after_idle": 0})
PACED = Series("newCWV, paced", {"cc": "newcwv", "slow_start_after_idle": 0, "pacing": 1, "pacer": "auto"})
# Figure 5's two ways to compute pipeACK (section 3), each traced (newcwv's own counters every 0.1 s).
EVERY_RTT = Series(
    "(a) pipeACK every RTT", {"cc": "newcwv", "slow_start_after_idle": 0, "no_filter": 1, "pipeack_trace": 1}
)
MAX_FILTER = Series(
    "(b) pipeACK, max filter", {"cc": "newcwv", "slow_start_after_idle": 0, "no_filter": 0, "pipeack_trace": 1}
)
ARMS = (BASELINE, NEWCWV, RENO_KEPT)

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


# -- a trial's values -----------------------------------------------------------------
# Each a function of one row: the trial is the unit of every claim and every bar.


def _floats(row: Mapping[str, str], column: str) -> list[float] | None:
    """A column listing one value per burst (in the order they ran), or None where the row has none."""
    text = row.get(column) or ""
    try:
        return [float(v) for v in text.split(";")] if text else None
    except ValueError:
        return None


def trial_burst_ms(row: Mapping[str, str]) -> float | None:
    """a trial's mean burst time (ms)"""
    values = _floats(row, "burst_ms")
    return statistics.fmean(values) if values else None


def trial_retransmitted(row: Mapping[str, str]) -> float | None:
    """a trial's retransmitted segments per burst"""
    values = _floats(row, "retransmitted")
    return statistics.fmean(values) if values else None


def trial_first_flight_ms(row: Mapping[str, str]) -> float | None:
    """a trial's mean time from the first to the last segment of a burst's first flight (ms)"""
    values = _floats(row, "first_flight_ms")
    return statistics.fmean(values) if values else None


def burst_ms_by_idle(row: Mapping[str, str]) -> dict[float, float]:
    """A trial's burst time after each idle period it ran (the mean, for a period it ran more than once)."""
    idles, ms = _floats(row, "idle_s"), _floats(row, "burst_ms")
    if not idles or not ms or len(idles) != len(ms):
        return {}
    by: dict[float, list[float]] = defaultdict(list)
    for idle, value in zip(idles, ms, strict=True):
        by[idle].append(value)
    return {idle: statistics.fmean(values) for idle, values in by.items()}


def _trials(rows: Rows, arm: str, kb: Any) -> list[Mapping[str, str]]:
    """The successful trials of `arm` at `kb` KB."""
    return [r for r in rows if r.get("status") == "ok" and r.get("series") == arm and str(r.get("burst_kb")) == str(kb)]


def trial_values(rows: Rows, arm: str, kb: Any, idle: float | None = None) -> list[float]:
    """One value per successful trial of `arm` at `kb` KB: its mean burst time, or its burst time after `idle`."""
    out = []
    for r in _trials(rows, arm, kb):
        value = trial_burst_ms(r) if idle is None else burst_ms_by_idle(r).get(idle)
        if value is not None:
            out.append(value)
    return out


def idles_of(rows: Rows) -> list[float]:
    """The idle periods the successful trials ran."""
    return sorted({idle for r in rows if r.get("status") == "ok" for idle in burst_ms_by_idle(r)})


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """The mean and its standard error (0 for a single value)."""
    mean = statistics.fmean(values)
    return mean, (statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0)


@dataclass(frozen=True)
class Gain:
    pct: float
    se: float
    n: int  # the other arm's trials


def gain(baseline: Sequence[float] | Sequence[Burst], other: Sequence[float] | Sequence[Burst]) -> Gain:
    """The seed's gain between two arms' mean burst times, with a delta-method standard error over the values:
    the figures give one value a trial; bursts (notebooks/newcwv.ipynb) are taken by their times."""
    tr, se_r = mean_se([v.ms if isinstance(v, Burst) else v for v in baseline])
    tc, se_c = mean_se([v.ms if isinstance(v, Burst) else v for v in other])
    ratio = tc / tr
    return Gain(gain_pct(tr, tc), 100 * ratio * math.hypot(se_c / tc, se_r / tr), len(other))


def idle_label(idle: float) -> str:
    return f"idle {idle:g} s"


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


# -- the bursts, for the model --------------------------------------------------------


@dataclass(frozen=True)
class Burst:
    """One burst of one trial, from its row."""

    arm: str
    burst_kb: int
    idle_s: float
    ms: float
    cwnd_resumed: int
    retransmitted: int
    first_flight_ms: float


def bursts_of(rows: Rows) -> Iterator[Burst]:
    """Every burst of every successful trial (a row lists its bursts in the order they ran)."""
    for row in rows:
        if row.get("status") != "ok":
            continue
        columns = [
            row[c].split(";") for c in ("idle_s", "burst_ms", "cwnd_resumed", "retransmitted", "first_flight_ms")
        ]
        for idle, ms, cwnd, retrans, flight in zip(*columns, strict=True):
            yield Burst(
                row["series"], int(row["burst_kb"]), float(idle), float(ms), int(cwnd), int(retrans), float(flight)
            )


def cells(rows: Rows) -> dict[tuple[str, int, float], list[Burst]]:
    """The bursts by (arm, burst size, idle period)."""
    out: dict[tuple[str, int, float], list[Burst]] = defaultdict(list)
    for b in bursts_of(rows):
        out[(b.arm, b.burst_kb, b.idle_s)].append(b)
    return out


# -- the model ------------------------------------------------------------------------


def segments(burst_kb: int) -> int:
    return math.ceil((burst_kb * 1000 + RESPONSE_HEADER_BYTES) / MSS)


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
        if r.get("status") == "ok" and str(r.get("burst_kb")) == str(kb):
            value = trial_retransmitted(r)
            if value is not None:
                by[r["series"]].append(value)
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
        if row.get("status") != "ok" or not row.get("first_flight_retransmitted") or int(row["burst_kb"]) != kb:
            continue
        pairs = zip(row["first_flight_retransmitted"].split(";"), row[column].split(";"), strict=True)
        for again, other in pairs:
            by[row["series"]][0] += int(again)
            by[row["series"]][1] += int(other)
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
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {
            (int(r["burst_kb"]), float(r["idle_s"])): float(r["improvement_pct"]) for r in rows if r["table"] == name
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
        pacers = sorted({r.get("pacer_used", "") for r in rows if r.get("series") == PACED.label} - {""})
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
        if r.get("status") == "ok" and r.get("bulk_goodput_mbit"):
            by[(r["series"], str(r["burst_kb"]))].append(float(r["bulk_goodput_mbit"]))
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
        if r.get("status") == "ok" and r.get("bulk_goodput_mbit"):
            by[r["series"]].append(float(r["bulk_goodput_mbit"]))
    return [
        f"bulk flow's goodput beside {arm}: {mean:.3f} ± {se:.3f} Mbit/s over {len(values)} trials"
        for arm, values in by.items()
        for mean, se in [mean_se(values)]
    ]


def annotate_bulk(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    return _bulk_notes(rows)


# -- the study's own tests -------------------------------------------------------------

MIN_BOOTSTRAP_TRIALS = 3  # per arm and burst size: resampling two trials gives three means, no spread to speak of
EQUIVALENCE = 1 - 2 * (1 - claims.CONFIDENCE)  # 90 %: inside a range is two one-sided tests at 5 % each


def _inside(low: float, high: float, lo: float, hi: float) -> str:
    """The outcome of an interval [low, high] against a range [lo, hi]: inside holds, wholly outside differs."""
    if lo <= low and high <= hi:
        return HOLDS
    if high < lo or low > hi:
        return DIFFERS
    return UNDECIDED


def _gain_band(
    at: str, base: list[float], other: list[float], lo: float, hi: float, cells: int = 1, independent: bool = False
) -> Finding:
    """The gain (Tr - Tc)/Tr x 100 between two arms' trials against the range lo..hi (%), at one of a claim's
    `cells` cells: claims.within_band on the ratio of their geometric means (its 90 % interval inside the
    range holds; wholly outside, widened for the cells, differs), told as a gain.  `independent`: each
    trial drew its own seed (claims.independent)."""
    found = claims.within_band(at, base, other, 1 - hi / 100, 1 - lo / 100, True, cells, independent)
    iv = claims.welch(base, other, EQUIVALENCE, ratio=True)
    if iv is None:
        return found
    g, g_low, g_high = (100 * (1 - r) for r in (iv.estimate, iv.high, iv.low))
    _, semicolon, why = found.estimate.partition(";")  # no spread: replays, or the exact rank test
    text = f"gain {g:.1f} % [{g_low:.1f}, {g_high:.1f}], n = {len(other)}, {len(base)}{semicolon}{why}"
    return dataclasses.replace(found, estimate=text)


def _ranges(bands: Mapping[int, tuple[float, float]]) -> str:
    ranges = set(bands.values())
    if len(ranges) == 1:
        ((lo, hi),) = ranges
        return f"{lo:g} to {hi:g} % at {', '.join(map(str, bands))} KB"
    return ", ".join(f"{lo:g} to {hi:g} % at {kb} KB" for kb, (lo, hi) in bands.items())


def gain_within(arm: str, bands: Mapping[int, tuple[float, float]], per_idle: bool) -> claims.Computed:
    """The gain of `arm` over the baseline inside a range at each burst size of `bands` (KB: (lo, hi) %):
    per burst size from each trial's mean burst time, or (`per_idle`) in each cell of burst size and idle
    period from each trial's burst after that idle period.  Its 90 % interval inside the range holds, wholly
    outside differs (two one-sided tests, as an equivalence)."""
    unit = (
        "in each cell of burst size and idle period (a trial's burst after that idle period)"
        if per_idle
        else "per burst size (a trial's mean burst time over its idle periods)"
    )
    what = (
        f"the gain (Tr - Tc)/Tr of {arm} over {BASELINE.label} from the ratio of their geometric mean burst "
        f"times, within {_ranges(bands)}, {unit}: its 90 % Welch interval over trials inside the range holds, "
        "wholly outside differs"
    )

    def decide(fig: Figure, rows: Rows) -> list[Finding]:
        cells: list[tuple[str, list[float], list[float], float, float, bool]] = []
        empty = []
        for kb, (lo, hi) in bands.items():
            both = [*_trials(rows, BASELINE.label, kb), *_trials(rows, arm, kb)]
            alone = claims.independent(r.get("draw_seed") for r in both)
            if not per_idle:
                base, other = trial_values(rows, BASELINE.label, kb), trial_values(rows, arm, kb)
                cells.append((f"{kb} KB", base, other, lo, hi, alone))
                continue
            idles = idles_of(both)
            if not idles:
                empty.append(Finding(UNDECIDED, f"{kb} KB", "no trials"))
            for idle in idles:
                base, other = trial_values(rows, BASELINE.label, kb, idle), trial_values(rows, arm, kb, idle)
                cells.append((f"{kb} KB, {idle_label(idle)}", base, other, lo, hi, alone))
        # a claim over many cells differs where one cell differs: each read off an interval widened for them all
        return [_gain_band(*cell[:5], cells=len(cells), independent=cell[5]) for cell in cells] + empty

    return claims.Computed(what, decide)


def idle_trend(
    arm: str, rises: bool, levels: Sequence[int], rise: tuple[float, float] | None = None
) -> claims.Computed:
    """The gain of `arm` over the baseline, in points, rising (or falling) with the idle period: at each idle
    period the gain between the arms' mean burst times after it (averaged over the burst sizes `levels`),
    its least-squares slope over every idle period the trials ran, with a 95 % bootstrap interval that
    resamples whole trials (a trial runs every idle period: its bursts stay together).  With `rise` (lo, hi
    points), also the fitted line's rise from the shortest idle period to the longest inside that range
    (its 90 % interval, as an equivalence)."""
    way = "rises" if rises else "falls"
    what = (
        f"the gain of {arm} over {BASELINE.label} in points {way} with the idle period, averaged over "
        f"{', '.join(map(str, levels))} KB: the least-squares slope over every idle period, 95 % bootstrap "
        "interval over whole trials"
    )
    if rise is not None:
        what += (
            f"; its fitted rise from the shortest to the longest idle period within {rise[0]:g}-{rise[1]:g} "
            "points (90 % interval)"
        )

    def decide(fig: Figure, rows: Rows) -> list[Finding]:
        return _idle_trend(rows, arm, rises, levels, rise)

    return claims.Computed(what, decide)


def _idle_trend(
    rows: Rows, arm: str, rises: bool, levels: Sequence[int], rise: tuple[float, float] | None
) -> list[Finding]:
    import numpy as np

    cells_: list[list[list[dict[float, float]]]] = []  # per burst size: (baseline, arm), their trials
    used: list[int] = []
    idles: set[float] | None = None
    for kb in levels:
        trials = [[burst_ms_by_idle(r) for r in _trials(rows, a, kb)] for a in (BASELINE.label, arm)]
        if min(len(t) for t in trials) < MIN_BOOTSTRAP_TRIALS:
            continue
        common = set.intersection(*(set(t) for side in trials for t in side))
        idles = common if idles is None else idles & common
        used.append(kb)
        cells_.append(trials)
    at = "all idle periods"
    if not used or idles is None or len(idles) < 2:
        return [
            Finding(
                UNDECIDED,
                at,
                f"fewer than {MIN_BOOTSTRAP_TRIALS} trials per arm at every burst size, or fewer than two idle "
                "periods, to fit: a bootstrap over two trials cannot estimate their spread",
            )
        ]
    ts = sorted(idles)
    x = np.array(ts, dtype=float)
    xc = x - x.mean()
    arrays = [tuple(np.array([[t[i] for i in ts] for t in side], dtype=float) for side in cell) for cell in cells_]

    def fitted(means: list[tuple[Any, Any]]) -> tuple[Any, Any]:
        """(slope, rise) of the gain over the idle periods, from per-burst-size means (last axis: idle)."""
        g = np.mean([100 * (1 - a / b) for b, a in means], axis=0)
        slope = (g * xc).sum(axis=-1) / (xc**2).sum()
        return slope, slope * (x[-1] - x[0])

    slope, fit_rise = fitted([(b.mean(axis=0), a.mean(axis=0)) for b, a in arrays])
    rng = np.random.default_rng(0)
    draws = claims.BOOTSTRAP_RESAMPLES

    def resampled(side: Any) -> Any:
        return side[rng.integers(0, len(side), size=(draws, len(side)))].mean(axis=1)

    slopes, rises_ = fitted([(resampled(b), resampled(a)) for b, a in arrays])
    low, high = (float(v) for v in np.percentile(slopes, [2.5, 97.5]))
    n = min(len(side) for cell in arrays for side in cell)
    text = (
        f"slope {float(slope):+.3g} [{low:+.3g}, {high:+.3g}] points per s of idle over {len(ts)} idle periods "
        f"({', '.join(f'{t:g}' for t in ts)} s), {', '.join(map(str, used))} KB, n >= {n} trials per cell"
    )
    if not any(np.ptp(side, axis=0).any() for cell in arrays for side in cell):
        return [Finding(UNDECIDED, at, text + "; no spread among trials: the trials are replays")]
    if (low > 0 and rises) or (high < 0 and not rises):
        found = [Finding(HOLDS, at, text)]
    elif low > 0 or high < 0:
        found = [Finding(DIFFERS, at, text)]
    else:
        found = [Finding(UNDECIDED, at, text)]
    if rise is not None:
        r_low, r_high = (float(v) for v in np.percentile(rises_, [5, 95]))
        r_text = (
            f"fitted rise {float(fit_rise):+.1f} points [{r_low:+.1f}, {r_high:+.1f}] from {ts[0]:g} to {ts[-1]:g} s"
        )
        where = f"rise {ts[0]:g} to {ts[-1]:g} s"
        found.append(Finding(_inside(r_low, r_high, *rise), where, r_text))
    return found


def first_flight_within(arm: str, low_rtts: float, high_rtts: float) -> claims.Computed:
    """The time `arm`'s first flights take to leave, a trial's mean over its bursts, inside low..high RTTs:
    the 90 % t interval of the mean over trials inside holds, wholly outside differs."""
    what = (
        f"{arm}'s first flight leaves over {low_rtts:g} to {high_rtts:g} RTTs ({trial_first_flight_ms.__doc__}; "
        "90 % t interval over trials inside the range holds, wholly outside differs)"
    )

    def decide(fig: Figure, rows: Rows) -> list[Finding]:
        from scipy import stats

        rtt = fig.path.rtt.ms
        lo, hi = low_rtts * rtt, high_rtts * rtt
        out = []
        for kb in fig.levels:
            values = [v for r in _trials(rows, arm, kb) if (v := trial_first_flight_ms(r)) is not None]
            at = f"{kb} KB"
            if len(values) < 2:
                out.append(Finding(UNDECIDED, at, f"too few trials to estimate a spread (n = {len(values)})"))
                continue
            mean, se = mean_se(values)
            t = float(stats.t.ppf(0.5 + EQUIVALENCE / 2, len(values) - 1))
            text = (
                f"{mean:.0f} ms [{mean - t * se:.0f}, {mean + t * se:.0f}], n = {len(values)}; range {lo:g}-{hi:g} ms"
            )
            if se == 0:
                out.append(Finding(UNDECIDED, at, text + "; no spread: the trials are replays"))
                continue
            out.append(Finding(_inside(mean - t * se, mean + t * se, lo, hi), at, text))
        return out

    return claims.Computed(what, decide)


def log2_kb(level: Any) -> float:
    """A burst size's position on a trend's axis: its log2 (the sizes double)."""
    return math.log2(float(level))


def claim(where: str, quote: str, test: claims.Test, reading: str) -> Claim:
    return Claim(SEED, where, quote, test, reading)


WHOLE_PERCENTS = "the text gives whole percents: each end taken half a point wider, its rounding"
GAIN_OF = "the gain (Tr - Tc)/Tr of {} over NewReno+SACK"
BETTER_5 = "5 % to count as an effect: the smallest effect this study's claims count (and the margin of its 'Same')"
LOSS_1 = (
    "one segment per burst more to count: the least loss that costs a burst a recovery (about an RTT, "
    "200 ms); a trial can lose none, so the difference of means, not their ratio"
)
BULK_SAME = (
    "the bulk flow's goodput (a trial's value) beside NewReno+SACK, newCWV and paced newCWV (the source's "
    "'different algorithms', section 4.6), at every burst size; 'no significant differences' taken as within "
    "5 % of each other: the same 5 % a difference must reach to count in this study's other claims, so that "
    "an effect too small to count there counts as none here (0.07-0.09 Mbit/s of the bulk flow's 1.4-1.9)"
)


# -- the claims --------------------------------------------------------------------------

FIG7_CLAIMS = (
    claim(
        "section 4.2, Figure 7",
        "A newCWV sender transfers a burst in 37-62% less time than NewReno.",
        gain_within(NEWCWV.label, {kb: (36.5, 62.5) for kb in BURSTS_KB}, per_idle=True),
        f"{GAIN_OF.format('newCWV')} in every cell of burst size and idle period (the figure's domain); "
        f"{WHOLE_PERCENTS}: 36.5-62.5 %",
    ),
    claim(
        "section 4.2, Figure 7",
        "Larger improvements are achieved for the higher burst sizes, as expected",
        Trend(trial_burst_ms, BASELINE.label, rises=True, against=NEWCWV.label, x=log2_kb),
        "the gain as the log ratio of NewReno+SACK's mean burst time to newCWV's (a trial's mean over its idle "
        "periods), its slope over log2 of the burst size at all five sizes (they double)",
    ),
    claim(
        "section 4.2, Figure 7",
        "about 10% more improvement is achieved for bursts of 80KB (60%) than 5KB bursts (50%).",
        gain_within(NEWCWV.label, {5: (45, 55), 80: (55, 65)}, per_idle=False),
        f"{GAIN_OF.format('newCWV')} at 5 KB and at 80 KB, a trial's mean burst time over its idle periods; "
        "'about' taken as 5 points either side: half the 10-point difference the sentence is about, so that its "
        "50 % and 60 % stay apart",
    ),
    claim(
        "section 4.2, Figure 7",
        "For a size of burst, for example, a 40 KB burst, it would encounter almost 20% more improvement in "
        "performance when the idle period is larger.",
        idle_trend(NEWCWV.label, rises=True, levels=(40,), rise=(15, 20)),
        f"{GAIN_OF.format('newCWV')} at 40 KB (the sentence's example), in points, over the idle periods 1-15 s: "
        "it rises (the slope over all six), and by almost 20 points along the fitted line from the shortest to "
        "the longest; 'almost 20 %' read as points of the gain (the unit of the source's other percentages) and "
        "taken as 15-20: short of 20 by a quarter at most",
    ),
)

FIG8_CLAIMS = (
    claim(
        "section 4.3, Figure 8",
        "The newCWV method still shows improvement over standard TCP, which now varies from 10-35% over the idle "
        "period – burst size domain",
        gain_within(NEWCWV.label, {kb: (9.5, 35.5) for kb in BURSTS_KB}, per_idle=True),
        f"{GAIN_OF.format('newCWV')} in every cell of burst size and idle period; {WHOLE_PERCENTS}: 9.5-35.5 %",
    ),
    claim(
        "section 4.3, Figure 8",
        "However, in this congested scenario, the trend is somewhat the opposite: Higher burst sizes offer less "
        "improvement.",
        Trend(trial_burst_ms, BASELINE.label, rises=False, against=NEWCWV.label, x=log2_kb),
        "the gain as the log ratio of NewReno+SACK's mean burst time to newCWV's (a trial's mean over its idle "
        "periods), its slope over log2 of the burst size at all five sizes, falling",
    ),
    claim(
        "section 4.3, Figure 8",
        "In the case of the idle period comparison, the similarity remains, where a larger idle period increases "
        "the improvement as in the previous non-congested scenario.",
        idle_trend(NEWCWV.label, rises=True, levels=BURSTS_KB),
        f"{GAIN_OF.format('newCWV')} in points at each idle period, averaged over the five burst sizes (the "
        "sentence names none); its slope over all six idle periods, 1-15 s",
    ),
    claim(
        "section 4.3, Figure 8",
        "For bursts larger than 5 KB (larger than an IW of 4 KB) it takes about 25-33% less time on average for "
        "a transfer with an idle period.",
        gain_within(NEWCWV.label, {kb: (23, 35) for kb in (10, 20, 40, 80)}, per_idle=False),
        f"{GAIN_OF.format('newCWV')} at 10-80 KB, a trial's mean burst time over its idle periods ('on "
        "average'); 'about' taken as 2 points either side, 23-35 %: up to the 'around 35%' the next sentence "
        "sets apart as the larger improvement",
    ),
)

FIG9_CLAIMS = (
    claim(
        "section 4.3, Figure 9",
        "The newCWV sender is prone to a higher loss rate for larger bursts. ... Figure 9 confirms that the "
        "number of losses is higher when using newCWV.",
        Better(trial_retransmitted, NEWCWV.label, BASELINE.label, levels=(40, 80), worth=1.0, ratio=False),
        "a trial's retransmitted segments per burst, newCWV's against NewReno+SACK's, at the larger bursts: 40 "
        f"and 80 KB (the passage's 'for 40 KB or 80 KB'); {LOSS_1}",
    ),
)

TABLE2_CLAIMS = (
    claim(
        "section 4.4, Table 2",
        "Table 2 shows that, for HTTP responses with a size of 5KB or more, there was an improvement in transfer "
        "times of 18-20%",
        gain_within(NEWCWV.label, {5: (17.5, 20.5)}, per_idle=True),
        f"{GAIN_OF.format('newCWV')} at 5 KB, in each idle period's cell: the only row of the source's Table 2 "
        "at 18-20 % (17.9-19.5 %; its 10-40 KB rows hold 4-12 %, its 80 KB row is the next claims'), so the "
        f"sentence is read at 5 KB; {WHOLE_PERCENTS}: 17.5-20.5 %",
    ),
    claim(
        "section 4.4, Table 2",
        "For large responses, such as 80 KB or more, the performance of newCWV reduces compared to standard TCP.",
        Better(trial_burst_ms, BASELINE.label, NEWCWV.label, higher=False, levels=(80,), worth=0.05),
        "a trial's mean burst time at 80 KB (our largest burst): NewReno+SACK's shorter than newCWV's; 5 % to "
        "count: half the smallest of the 10-15 % the next sentence gives",
    ),
    claim(
        "section 4.4, Table 2",
        "The newCWV sender was observed to take about 10-15% more time to complete the bursts than NewReno.",
        gain_within(NEWCWV.label, {80: (-17, -8)}, per_idle=True),
        f"{GAIN_OF.format('newCWV')} at 80 KB (the sentence before's 'large responses'; Table 2's 80 KB row, "
        "-10.2 to -15.3 %), in each idle period's cell: 10-15 % more time is a gain of -10 to -15 %; 'about' "
        "taken as 2 points either side, -17 to -8 %, as for Figure 8's 'about 25-33%'",
    ),
    claim(
        "section 4.4, Table 2: its 5 and 40 KB rows",
        "5 17.9 % 18.3 % 18.4 % 18.9 % 19.1 % 19.5 % ... 40 4.2 % 4.4 % 4.4 % 4.6 % 4.9 % 5.2 %",
        idle_trend(NEWCWV.label, rises=True, levels=(5, 10, 20, 40)),
        "the text says nothing of the idle period here; its table does: in the rows 5 to 40 KB (the two quoted, "
        f"and the 10 and 20 KB rows between them alike) the gain grows from 1 s to 15 s. {GAIN_OF.format('newCWV')}"
        " in points averaged over 5-40 KB, its slope over all six idle periods",
    ),
    claim(
        "section 4.4, Table 2: its 80 KB row",
        "80 -10.2 % - 12.5 % - 13.4% - 13.9 % - 15.1 % - 15.3 %",
        idle_trend(NEWCWV.label, rises=False, levels=(80,)),
        "in the 80 KB row the gain falls with the idle period (newCWV further behind after longer ones): "
        f"{GAIN_OF.format('newCWV')} at 80 KB in points, its slope over all six idle periods",
    ),
)

TABLE3_CLAIMS = (
    claim(
        "section 4.5, Table 3",
        "Table 3 shows that the improvement in transfer times varies between 10-20% across the wide burst size "
        "–idle period plane.",
        gain_within(PACED.label, {kb: (9.5, 22) for kb in BURSTS_KB}, per_idle=True),
        f"{GAIN_OF.format('paced newCWV')} in every cell of burst size and idle period; 10-20 % taken as 9.5 % "
        "(whole percents) to 22 %: the source's own Table 3 runs to 21.8 % in its 5 KB row, past the range the "
        "sentence rounds it to",
    ),
    claim(
        "section 4.5, Table 3",
        "Using a TCP Pacing technique, from Table 3, newCWV achieves 13-16% performance improvement for larger "
        "bursts (80 KB) as well.",
        gain_within(PACED.label, {80: (12.5, 16.5)}, per_idle=True),
        f"{GAIN_OF.format('paced newCWV')} at 80 KB in each idle period's cell (Table 3's 80 KB row: 13.4-16.1 "
        f"%); {WHOLE_PERCENTS}: 12.5-16.5 %",
    ),
    claim(
        "section 4.5, Table 3: its 5 and 80 KB rows",
        "5 20.6 % 20.9 % 21.2 % 21.4 % 21.6 % 21.8 % ... 80 13.4 % 13.9 % 14.1% 15.6 % 15.7 % 16.1 %",
        idle_trend(PACED.label, rises=True, levels=BURSTS_KB),
        "the text says nothing of the idle period here; its table does: every row (the two quoted, and the 10-40 "
        f"KB rows between them alike) grows from 1 s to 15 s. {GAIN_OF.format('paced newCWV')} in points "
        "averaged over the five burst sizes, its slope over all six idle periods",
    ),
)

FIG11_CLAIMS = (
    claim(
        "section 4.6, Figure 11 (its caption)",
        "no significant differences in background application performance while the HTTP traffic was running "
        "different algorithms",
        Same("bulk_goodput_mbit", (BASELINE.label, NEWCWV.label, PACED.label), margin=0.05),
        BULK_SAME,
    ),
)

FIG5_CLAIMS = (
    claim(
        "section 3, Figure 5",
        "Figure 5 shows the result, demonstrating the pipeACK (the black line with squares) is more stable in (b) "
        "because of keeping history.",
        Better("pipeack_cv", MAX_FILTER.label, EVERY_RTT.label, higher=False),
        "'more stable' as a lower coefficient of variation of newcwv's own pipeACK over a trial (every 0.1 s, "
        f"where it has a value above zero), (b) against (a); {BETTER_5}",
    ),
    claim(
        "section 3, Figure 5",
        "Using the filter, the cwnd increased more rapidly to a higher value than in the first case (i.e., 60 "
        "segments compared to 50 segments in Figure 5).",
        Better("max_cwnd", MAX_FILTER.label, EVERY_RTT.label),
        "the largest window tcp_probe saw on any ACK of a trial, (b) against (a): the 'higher value' ('more "
        f"rapidly' is not tested apart; the seed's 60 and 50 segments belong to its traffic, not ours); {BETTER_5}",
    ),
    claim(
        "section 3, Figure 5",
        "This is a general behavior when a maximum filter is used to calculate the pipeACK variable (case 2) "
        "because pipeACK retains a larger cwnd for longer and enters the non-validated phase later than when "
        "using a method without a filter.",
        Better("growth_nonvalidated_share", MAX_FILTER.label, EVERY_RTT.label, higher=False, ratio=False),
        "the sentence explains the higher window by how the sender spends its growth: the share of a trial's "
        "samples, from the sender's first ACK until its cwnd first reaches the trial's largest, in which "
        "newcwv's own pipeACK was under half its cwnd (RFC 7661 4.3's non-validated phase, where cwnd does "
        "not grow), lower with the filter; a trial's share can be zero, so the difference of means, 5 points "
        "of share to count",
    ),
)

PACING_CLAIMS = (
    claim(
        "section 4.4, Table 2",
        "For large responses, such as 80 KB or more, the performance of newCWV reduces compared to standard TCP.",
        Better(trial_burst_ms, BASELINE.label, NEWCWV.label, higher=False, worth=0.05),
        "Table 2's 80 KB row again, thirty bursts a trial each after 1 s idle beside the bulk flow: a trial's "
        "mean burst time, NewReno+SACK's shorter than newCWV's; 5 % to count: half the smallest of the 10-15 % "
        "the source gives it",
    ),
    claim(
        "section 4.4",
        "The large level of packet loss (and therefore delay) caused by large bursts being injected into the "
        "network eliminated the benefit of newCWV.",
        Better(trial_retransmitted, NEWCWV.label, BASELINE.label, worth=1.0, ratio=False),
        "its loss: newCWV's 80 KB bursts lose more than NewReno+SACK's, a trial's retransmitted segments per "
        f"burst; {LOSS_1}. Its other half (the benefit eliminated) is the claim before",
    ),
    claim(
        "section 4.7",
        "It is recommended that newCWV is used in combination with pacing, to smooth out the burst and hence "
        "also to reduce losses.",
        Better(trial_retransmitted, PACED.label, NEWCWV.label, higher=False, worth=1.0, ratio=False),
        f"paced newCWV's 80 KB bursts lose less than newCWV's, a trial's retransmitted segments per burst; {LOSS_1}",
    ),
    claim(
        "section 4.5",
        "When pacing was enabled for the HTTP traffic, HTTP was able to regain the advantage of newCWV over "
        "NewReno.",
        Better(trial_burst_ms, PACED.label, BASELINE.label, higher=False, worth=0.05),
        "a trial's mean burst time at 80 KB (the size where newCWV had lost it): paced newCWV's shorter than "
        "NewReno+SACK's; 5 % to count, well under the 13-16 % Table 3 gives it",
    ),
    claim(
        "section 4.5, Figure 10",
        "with pacing the segments were transmitted over a period of the order of an RTT",
        first_flight_within(PACED.label, 0.5, 2.0),
        "paced newCWV's first flight (what leaves before the first ACK returns), a trial's mean over its bursts; "
        "'of the order of an RTT' taken as half to twice the 200 ms RTT: the source's caption says 'over 200 ms', "
        "and Linux paces slow start at twice the window per RTT, so a flight may leave in half an RTT",
    ),
    claim(
        "section 4.5, Figure 10",
        "rather than as an abrupt injection of data using only newCWV",
        ByDesign(
            "without a pacer the server sends a flight back to back at its own link's rate: the first flight of "
            "an unpaced 80 KB burst leaves within a millisecond whatever the path (about 0.1 ms here)"
        ),
        "newCWV without pacing injects its first flight at once",
    ),
    claim(
        "section 4.6, Figure 11 (its caption)",
        "no significant differences in background application performance while the HTTP traffic was running "
        "different algorithms",
        Same("bulk_goodput_mbit", (BASELINE.label, NEWCWV.label, PACED.label), margin=0.05),
        f"{BULK_SAME}; here beside thirty 80 KB bursts a trial (the HTTP flow sends its next burst a second after "
        "the last ends, so an arm that ends its bursts sooner sends more)",
    ),
)


# -- the figures -----------------------------------------------------------------------


def timeout(params: Params) -> float:
    idles = [float(t) for t in str(params.get("idle_s", IDLES)).split(",")]
    bursts = len(idles) * int(params.get("repeats", 1))
    return 120 + sum(idles) * int(params.get("repeats", 1)) + 20 * bursts


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
        study="newcwv", name=name, workload="http_bursts", x="burst_kb", x_label="burst size (KB)", **{**defaults, **kw}
    )


# What every gain figure shares, and the quick runs of the single-pair paths and of the bulk flow's.
GAIN: dict[str, Any] = {"y": "gain_pct", "y_label": "gain in burst transfer time (%)", "spread": SPREAD}
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
