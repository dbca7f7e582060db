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
arms' mean burst times, its bar one standard error (delta method).
"""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ground.path import MSS
from netrepro import plot
from netrepro.spec import Check, Figure, Params, Point, Rows, Series
from servers.burst_trace import burst_rounds, gain_pct
from topologies.topology import Topology

# The source, cited as far as its text gives authors, title and venue.
SOURCE = (
    'seed 002: Ziaul Hossain, Gorry Fairhurst, "Enhancing HTTP Web Protocol Performance with Updated '
    'Transport Layer Techniques", International Journal of Computer Networks & Communications (IJCNC), '
    "2023, doi:10.5121/ijcnc.2023.15401"
)

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
ARMS = (BASELINE, NEWCWV, RENO_KEPT)

DEVIATIONS = (
    "bursts from netrepro's burst client over one persistent connection, B in {5, 10, 20, 40, 80} KB after "
    "idle periods of {1, 3, 5, 7, 10, 15} s, each burst the same size as the one before it (seed 002: Tmix "
    "replaying 3151 real connections)",
    "a cell's gain is taken between the arms' mean burst times (the seed averaged a gain per burst over the "
    "same trace replayed under each arm)",
    "uncongested: 100 Mbit/s and a 1000-packet queue stand for the seed's unlimited rate",
    "newCWV is netrepro's RFC 7661 implementation (kmod/newcwv.c, or its BPF port where modules cannot load), "
    "not the authors' 3.12 module; Linux 3.12's NewReno is today's `reno`",
)
SPREAD = "gain between the arms' mean burst times, bar: one standard error (delta method)"
QUICK_NOTE = "quick: fewer burst sizes and idle periods, one or two trials"

FINDING_FIG7 = (
    "seed 002, Figure 7 (uncongested): newCWV transfers a burst in 37-62 % less time than NewReno+SACK, more "
    "for larger bursts (about 50 % at 5 KB, 60 % at 80 KB) and more for longer idle periods"
)
FINDING_FIG8 = (
    "seed 002, Figure 8 (2 Mbit/s, 30 KB buffer): 10-35 % less time, less for larger bursts, more for longer "
    "idle periods"
)
FINDING_FIG9 = "seed 002, Figure 9 (congested): newCWV loses more packets than NewReno+SACK"
FINDING_TABLE2 = (
    "seed 002, Table 2 (beside a bulk transfer, no pacing): 18-20 % at 5 KB falling to 4-5 % at 40 KB and "
    "-10 to -15 % at 80 KB; within a row the gain grows with the idle period"
)
FINDING_TABLE3 = (
    "seed 002, Table 3 (beside a bulk transfer, newCWV paced): 13-22 % everywhere, 13-16 % at 80 KB; within "
    "a row the gain grows with the idle period"
)
FINDING_FIG11 = (
    "seed 002, Figure 11: the bulk transfer's throughput shows no significant difference whichever algorithm "
    "the HTTP server runs (NewReno, newCWV, paced newCWV)"
)
FINDING_PACING = (
    "seed 002, section 4.5: beside a bulk flow newCWV's 80 KB bursts lose more than NewReno+SACK's (Table 2's "
    "negative row); pacing spreads each burst over about an RTT, reduces those losses, and turns the 80 KB "
    "gain positive (Table 3: 13-16 %)"
)


# -- the trials' bursts ---------------------------------------------------------------


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
        columns = [row[c].split(";") for c in ("idle_s", "burst_ms", "cwnd_resumed", "retransmitted",
                                                 "first_flight_ms")]  # fmt: skip
        for idle, ms, cwnd, retrans, flight in zip(*columns, strict=True):
            yield Burst(row["series"], int(row["burst_kb"]), float(idle), float(ms), int(cwnd), int(retrans),
                        float(flight))  # fmt: skip


def cells(rows: Rows) -> dict[tuple[str, int, float], list[Burst]]:
    """The bursts by (arm, burst size, idle period)."""
    out: dict[tuple[str, int, float], list[Burst]] = defaultdict(list)
    for b in bursts_of(rows):
        out[(b.arm, b.burst_kb, b.idle_s)].append(b)
    return out


def over_idles(found: dict[tuple[str, int, float], list[Burst]], arm: str, kb: int) -> list[Burst]:
    """An arm's bursts of `kb` KB after every idle period (`found` is `cells`)."""
    return [b for (a, size, _), bursts in found.items() if (a, size) == (arm, kb) for b in bursts]


def mean_se(values: list[float]) -> tuple[float, float]:
    """The mean and its standard error (0 for a single value)."""
    mean = statistics.fmean(values)
    return mean, (statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0)


@dataclass(frozen=True)
class Gain:
    pct: float
    se: float
    n: int  # the other arm's bursts


def gain(baseline: list[Burst], other: list[Burst]) -> Gain:
    """The seed's gain between two arms' mean burst times, with a delta-method standard error."""
    tr, se_r = mean_se([b.ms for b in baseline])
    tc, se_c = mean_se([b.ms for b in other])
    ratio = tc / tr
    return Gain(gain_pct(tr, tc), 100 * ratio * math.hypot(se_c / tc, se_r / tr), len(other))


def idle_label(idle: float) -> str:
    return f"idle {idle:g} s"


def summarize_gain(arm: str, by_idle: bool = True):  # type: ignore[no-untyped-def]
    """A summary: the gain of `arm` over the baseline per burst size, one series per idle period
    (and, for every other arm, one series over all idle periods)."""

    def summarize(fig: Figure, rows: Rows) -> list[Point]:
        found = cells(rows)
        idles = sorted({k[2] for k in found})
        points = []
        for kb in fig.levels:
            for idle in idles if by_idle else ():
                base, other = found.get((BASELINE.label, int(kb), idle)), found.get((arm, int(kb), idle))
                if base and other:
                    g = gain(base, other)
                    points.append(Point(f"{arm}, {idle_label(idle)}", kb, g.pct, g.pct - g.se, g.pct + g.se, g.n))
            for s in fig.series:
                if s.label == BASELINE.label or (by_idle and s.label == arm):
                    continue
                base, other = over_idles(found, BASELINE.label, int(kb)), over_idles(found, s.label, int(kb))
                if base and other:
                    g = gain(base, other)
                    label = f"{s.label}, all idle periods"
                    points.append(Point(label, kb, g.pct, g.pct - g.se, g.pct + g.se, g.n))
        return points

    return summarize


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
            if not (base and kept):
                continue
            measured, predicted = gain(base, kept).pct, model_gain(fig, base, kept)
            worst = max(worst, abs(measured - predicted))
            w_base = statistics.median(b.cwnd_resumed for b in base)
            w_kept = statistics.median(b.cwnd_resumed for b in kept)
            parts.append(f"{idle:g} s {measured:.0f}/{predicted:.0f} (cwnd {w_base:g}, {w_kept:g})")
        if parts:
            notes.append(f"{kb} KB ({segments(kb)} segments), measured/model gain %: " + ", ".join(parts))
    if worst:
        notes.append(f"largest difference between a cell's measured and modelled gain: {worst:.1f} points")
    notes += _kept_share(points, kbs)
    notes += verdict_fig7(points, kbs)
    plot.legend_beside(ax)
    return notes


def _mean_over_idles(points: list[Point], arm: str, kb: int) -> float | None:
    ys = [p.y for p in points if p.series.startswith(f"{arm}, idle") and int(p.x) == kb]
    return statistics.fmean(ys) if ys else None


def _kept_share(points: list[Point], kbs: list[int]) -> list[str]:
    out = []
    for kb in kbs:
        kept = next((p for p in points if p.series == f"{RENO_KEPT.label}, all idle periods" and int(p.x) == kb),
                    None)  # fmt: skip
        ours = _mean_over_idles(points, NEWCWV.label, kb)
        if kept is not None and ours is not None:
            out.append(
                f"{kb} KB: Reno without the restart gains {kept.y:.0f} %, newCWV {ours:.0f} % "
                f"(newCWV adds {ours - kept.y:+.0f} points beyond keeping the window)"
            )
    return out


def checks_fig7(points: list[Point], kbs: list[int]) -> list[Check]:
    """Seed 002: newCWV gains 37-62 % uncongested (taken as 30-70 %), more for larger bursts."""
    means = {kb: _mean_over_idles(points, NEWCWV.label, kb) for kb in kbs}
    got = {kb: m for kb, m in means.items() if m is not None}
    if len(got) < 2:
        return []
    lo, hi = min(got.values()), max(got.values())
    small, large = got[min(got)], got[max(got)]
    return [
        Check("newCWV gains 37-62 % (taken as 30-70 %)", lo >= 30 and hi <= 70, f"{lo:.0f}-{hi:.0f} %"),
        Check("newCWV gains more for larger bursts", large > small,
              f"{min(got)} KB {small:.0f} % vs {max(got)} KB {large:.0f} %"),
    ]  # fmt: skip


def verdict_fig7(points: list[Point], kbs: list[int]) -> list[str]:
    checks = checks_fig7(points, kbs)
    if not checks:
        return []
    span, trend = checks
    return [
        f"newCWV's gain, mean over idle periods: {span.evidence} (seed: 37-62 %: "
        f"{'agrees' if span.holds else 'DIFFERS'}); {trend.evidence} "
        f"(seed: more for larger bursts: {'agrees' if trend.holds else 'DIFFERS'})"
    ]


def checks_fig8(fig: Figure, points: list[Point], rows: Rows) -> list[Check]:
    """Seed 002: congested, newCWV gains 10-35 % (taken as 5-40 %), less for larger bursts."""
    kbs = [int(k) for k in fig.levels]
    got = {kb: m for kb in kbs if (m := _mean_over_idles(points, NEWCWV.label, kb)) is not None}
    if len(got) < 2:
        return []
    small, large = got[min(got)], got[max(got)]
    ours = ", ".join(f"{kb} KB {m:.0f} %" for kb, m in got.items())
    return [
        Check("newCWV gains 10-35 % (taken as 5-40 %)", min(got.values()) >= 5 and max(got.values()) <= 40, ours),
        Check("newCWV gains less for larger bursts", large < small,
              f"{min(got)} KB {small:.0f} % vs {max(got)} KB {large:.0f} %"),
    ]  # fmt: skip


def annotate_fig8(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    plot.legend_beside(ax)
    checks = checks_fig8(fig, points, rows)
    if not checks:
        return []
    span, trend = checks
    return [
        f"newCWV's gain, mean over idle periods: {span.evidence}"
        + f" (seed: 10-35 %: {'agrees' if span.holds else 'DIFFERS'}; less for larger bursts: "
        + f"{'agrees' if trend.holds else 'DIFFERS'})",
        *_kept_share(points, [int(k) for k in fig.levels]),
    ]


# -- losses ---------------------------------------------------------------------------


def summarize_losses(fig: Figure, rows: Rows) -> list[Point]:
    """Retransmitted segments per burst, by arm and burst size: mean and standard error over bursts."""
    by: dict[tuple[str, int], list[float]] = defaultdict(list)
    for b in bursts_of(rows):
        by[(b.arm, b.burst_kb)].append(b.retransmitted)
    points = []
    for s in fig.series:
        for kb in fig.levels:
            values = by.get((s.label, int(kb)))
            if values:
                mean, se = mean_se(values)
                points.append(Point(s.label, kb, mean, mean - se, mean + se, len(values)))
    return points


def checks_losses(fig: Figure, points: list[Point], rows: Rows) -> list[Check]:
    """Seed 002: newCWV loses more segments than NewReno+SACK."""

    def total(label: str) -> float:
        return sum(p.y * p.n for p in points if p.series == label)

    base, ours = total(BASELINE.label), total(NEWCWV.label)
    evidence = f"retransmitted segments over all bursts: NewReno+SACK {base:.0f}, newCWV {ours:.0f}"
    note = f"{evidence} (seed: newCWV loses more: {'agrees' if ours > base else 'DIFFERS'})"
    return [Check("newCWV loses more segments than NewReno+SACK", ours > base, evidence, note)]


def annotate_losses(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    return [c.note for c in checks_losses(fig, points, rows)]


def _fewer(label: str, more: tuple[float, float, int], fewer: tuple[float, float, int], kb: int) -> Check:
    """Does `fewer` lose fewer segments per burst than `more`, by more than two standard errors?"""
    (m, se, n), (f, fse, fn) = more, fewer
    z = (m - f) / math.hypot(se, fse) if se or fse else math.inf
    evidence = f"{m:.2f} ± {se:.2f} (n={n}) against {f:.2f} ± {fse:.2f} (n={fn}) per {kb} KB burst, {z:.1f} SE"
    verdict = "agrees" if f < m and z >= 2 else "not shown: within two standard errors" if f < m else "DIFFERS"
    return Check(label, f < m and z >= 2, evidence, f"{label} (seed 002); ours: {evidence}: {verdict}")


def first_flight_loss_rate(rows: Rows, kb: int) -> dict[str, tuple[int, int]]:
    """Of the segments the first flights of `kb` KB bursts carried, how many were sent again, by arm: (again, sent)."""
    return _first_flight_totals(rows, kb, "first_flight")


def checks_pacing(fig: Figure, points: list[Point], rows: Rows) -> list[Check]:
    """Seed 002, section 4.5, on many bursts of one size: newCWV loses more than the baseline, pacing less;
    and (Figure 11) no arm moves the bulk flow's goodput."""
    kb = int(fig.levels[-1])
    found = losses_by_arm(rows, kb)
    checks = []
    if NEWCWV.label in found and BASELINE.label in found:
        checks.append(_fewer("newCWV loses more than NewReno+SACK", found[NEWCWV.label], found[BASELINE.label], kb))
    if NEWCWV.label in found and PACED.label in found:
        checks.append(_fewer("pacing reduces newCWV's losses", found[NEWCWV.label], found[PACED.label], kb))
    return checks + _bulk(rows)[1]


def annotate_pacing(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    kb = int(fig.levels[-1])
    notes = [c.note for c in checks_pacing(fig, points, rows)] + _bulk(rows)[0]
    rates = first_flight_loss_rate(rows, kb)
    if rates:
        notes.append(
            "segments of the first flight sent again (the flight pacing spreads): "
            + ", ".join(f"{arm} {a} of {n} ({a / n:.3f})" for arm, (a, n) in rates.items() if n)
        )
    found = cells(rows)
    base = over_idles(found, BASELINE.label, kb)
    for arm in (NEWCWV.label, PACED.label):
        other = over_idles(found, arm, kb)
        if base and other:
            g = gain(base, other)
            notes.append(f"gain of {arm} over NewReno+SACK at {kb} KB: {g.pct:.1f} ± {g.se:.1f} %")
    spread = _spread_note(rows).removeprefix("; ")
    return [*notes, spread] if spread else notes


# -- tables 2 and 3 -------------------------------------------------------------------


def seed_table(name: str) -> dict[tuple[int, float], float]:
    with open(REFERENCE, newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {(int(r["burst_kb"]), float(r["idle_s"])): float(r["improvement_pct"]) for r in rows
                if r["table"] == name}  # fmt: skip


def annotate_table(name: str, arm: str):  # type: ignore[no-untyped-def]
    """Our gain per cell beside the seed's table (its cells drawn as crosses), the difference per cell,
    and whether the seed's sign and trend (along burst size; along idle period) hold; losses at 80 KB."""

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
        notes, checks = table_numbers(name, arm, points)
        notes += [c.note for c in checks]
        notes += _losses_at(rows, 80)
        pacers = sorted({r.get("pacer_used", "") for r in rows if r.get("series") == PACED.label} - {""})
        if pacers:
            notes.append(f"paced by: {', '.join(pacers)}" + _spread_note(rows))
        plot.legend_beside(ax)
        return notes

    return annotate


def table_numbers(name: str, arm: str, points: list[Point]) -> tuple[list[str], list[Check]]:
    """Our gain per cell beside the seed's, and the checks: the seed's sign in most cells, its trend."""
    seed = seed_table(name)
    idles = sorted({idle for _, idle in seed})
    notes, signs, diffs = [], 0, []
    for kb in BURSTS_KB:
        parts = []
        for idle in idles:
            p = next((q for q in points if q.series == f"{arm}, {idle_label(idle)}" and int(q.x) == kb), None)
            if p is None:
                continue
            ref = seed[(kb, idle)]
            diffs.append(p.y - ref)
            signs += (p.y > 0) == (ref > 0)
            parts.append(f"{idle:g} s {p.y:+.0f} ({ref:+.0f})")
        if parts:
            notes.append(f"{kb} KB, ours (seed): " + ", ".join(parts))
    checks = []
    if diffs:
        evidence = (f"{signs} of {len(diffs)} cells have the seed's sign; mean difference "
                    f"{statistics.fmean(diffs):+.1f} points, largest {max(diffs, key=abs):+.1f}")  # fmt: skip
        checks.append(Check(f"the sign of each cell of {name.replace('table', 'Table ')} (most cells)",
                            signs > len(diffs) / 2, evidence, evidence))  # fmt: skip
    trend = _trend(points, arm, seed)
    if trend:
        text, holds = trend
        checks.append(Check("the gain's trend from the smallest burst to the largest is the seed's", holds, text,
                            text))  # fmt: skip
    return notes, checks


def _trend(points: list[Point], arm: str, seed: dict[tuple[int, float], float]) -> tuple[str, bool] | None:
    """Does the gain fall from the smallest to the largest burst, as the seed's does, and grow with idle?"""
    ours: dict[tuple[int, float], float] = {}
    for p in points:
        if p.series.startswith(f"{arm}, idle "):
            ours[(int(p.x), float(p.series.split()[-2]))] = p.y
    kbs = sorted({kb for kb, _ in ours})
    if len(kbs) < 2:
        return None

    def row_mean(table: dict[tuple[int, float], float], kb: int) -> float:
        return statistics.fmean(v for (k, _), v in table.items() if k == kb)

    seed_falls = row_mean(seed, kbs[-1]) < row_mean(seed, kbs[0])
    ours_falls = row_mean(ours, kbs[-1]) < row_mean(ours, kbs[0])
    holds = ours_falls == seed_falls
    return (
        f"from {kbs[0]} to {kbs[-1]} KB the gain {'falls' if ours_falls else 'rises'} "
        f"({row_mean(ours, kbs[0]):.0f} to {row_mean(ours, kbs[-1]):.0f} %; seed {row_mean(seed, kbs[0]):.0f} to "
        f"{row_mean(seed, kbs[-1]):.0f} %): the seed's trend {'holds' if holds else 'DIFFERS'}",
        holds,
    )


def losses_by_arm(rows: Rows, kb: int) -> dict[str, tuple[float, float, int]]:
    """Retransmitted segments per burst of `kb` KB, by arm: (mean, standard error, bursts)."""
    by: dict[str, list[float]] = defaultdict(list)
    for b in bursts_of(rows):
        if b.burst_kb == kb:
            by[b.arm].append(b.retransmitted)
    return {arm: (*mean_se(v), len(v)) for arm, v in by.items()}


def first_flight_share(rows: Rows, kb: int) -> dict[str, tuple[int, int]]:
    """Of the segments bursts of `kb` KB sent again, how many first left in the first flight, by arm:
    (from the first flight, all)."""
    return _first_flight_totals(rows, kb, "retransmitted")


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
        f"retransmitted segments per {kb} KB burst: "
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


def _bulk(rows: Rows) -> tuple[list[str], list[Check]]:
    by: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r.get("status") == "ok" and r.get("bulk_goodput_mbit"):
            by[r["series"]].append(float(r["bulk_goodput_mbit"]))
    if BASELINE.label not in by:
        return [], []
    base, base_se = mean_se(by[BASELINE.label])
    notes = []
    for arm, values in by.items():
        mean, se = mean_se(values)
        notes.append(f"{arm}: {mean:.3f} ± {se:.3f} Mbit/s over {len(values)} trials")
    differs = [
        arm for arm, values in by.items()
        if abs(mean_se(values)[0] - base) > 2 * math.hypot(mean_se(values)[1], base_se)
    ]  # fmt: skip
    note = (
        "the bulk flow's goodput differs by more than two standard errors from its goodput beside NewReno+SACK "
        f"for: {', '.join(differs)} (seed: no significant difference: DIFFERS)"
        if differs
        else "no arm moves the bulk flow's goodput by more than two standard errors (seed: no significant "
        "difference: agrees)"
    )
    evidence = f"beyond two standard errors for: {', '.join(differs) or 'none'}"
    return notes, [Check("no arm changes the bulk flow's goodput significantly", not differs, evidence, note)]


def annotate_bulk(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    notes, checks = _bulk(rows)
    return notes + [c.note for c in checks]


# -- the figures -----------------------------------------------------------------------


def timeout(params: Params) -> float:
    idles = [float(t) for t in str(params.get("idle_s", IDLES)).split(",")]
    bursts = len(idles) * int(params.get("repeats", 1))
    return 120 + sum(idles) * int(params.get("repeats", 1)) + 20 * bursts


def _bursts_figure(name: str, **kw: Any) -> Figure:
    """A figure of the http_bursts workload: every burst size, two trials, unless `kw` says otherwise."""
    defaults: dict[str, Any] = {
        "levels": BURSTS_KB,
        "trials": 2,
        "quick_note": QUICK_NOTE,
        "deviations": DEVIATIONS,
        "trial_timeout": timeout,
    }
    return Figure(study="newcwv", name=name, workload="http_bursts", x="burst_kb", x_label="burst size (KB)",
                  **{**defaults, **kw})  # fmt: skip


# What every gain figure shares, and the quick runs of the single-pair paths and of the bulk flow's.
GAIN: dict[str, Any] = {"y": "gain_pct", "y_label": "gain in burst transfer time (%)", "spread": SPREAD}
PATH_QUICK: dict[str, Any] = {"quick_levels": (5, 80), "quick_fixed": {"idle_s": "1,5"}, "quick_trials": 1}
BULK_QUICK: dict[str, Any] = {
    "quick_levels": (80,),
    "quick_fixed": {"idle_s": "1,3", "repeats": 2},
    "quick_trials": 1,
    "quick_series": (BASELINE.label, NEWCWV.label, PACED.label),
}

FIG7 = _bursts_figure(
    "fig7",
    title="Gain of newCWV over NewReno+SACK by burst size and idle period, uncongested (RTT 200 ms)",
    fixed={**UNCONGESTED, **HTTP},
    series=ARMS,
    finding=FINDING_FIG7,
    summarize=summarize_gain(NEWCWV.label),
    annotate=annotate_fig7,
    judge=lambda fig, points, rows: checks_fig7(points, [int(k) for k in fig.levels]),
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
    judge=checks_fig8,
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
    spread="mean and standard error over bursts",
    summarize=summarize_losses,
    annotate=annotate_losses,
    judge=checks_losses,
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
    judge=lambda fig, points, rows: table_numbers("table2", NEWCWV.label, points)[1],
    **GAIN,
    **BESIDE_BULK,
)
TABLE3 = _bursts_figure(
    "table3",
    title="Gain of paced newCWV over NewReno+SACK beside a bulk TCP flow, 2 Mbit/s, 30 KB buffer (Table 3)",
    finding=FINDING_TABLE3,
    summarize=summarize_gain(PACED.label),
    annotate=annotate_table("table3", PACED.label),
    judge=lambda fig, points, rows: table_numbers("table3", PACED.label, points)[1],
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
    judge=lambda fig, points, rows: _bulk(rows)[1],
    trials_of="table2",
    **BESIDE_BULK,
)

# The 80 KB row of tables 2 and 3 again, with enough bursts to judge the losses: thirty bursts a trial,
# each after one second of idle time (newCWV keeps its window, the baseline restarts it: the RTO is below
# a second), beside the bulk flow.
PACING = _bursts_figure(
    "pacing",
    title="Retransmitted segments per 80 KB burst beside a bulk TCP flow, without and with pacing, 2 Mbit/s, "
    "30 KB buffer",
    y="retrans_per_burst",
    y_label="retransmitted segments per burst",
    finding=FINDING_PACING,
    spread="mean and standard error over bursts",
    summarize=summarize_losses,
    annotate=annotate_pacing,
    judge=checks_pacing,
    topology=DUMBBELL,
    fixed={**CONGESTED, **HTTP, "bulk": 1, "idle_s": "1", "repeats": 30},
    series=(BASELINE, NEWCWV, PACED),
    levels=(80,),
    trials=10,
    quick_fixed={"repeats": 4},
    quick_series=(NEWCWV.label, PACED.label),
    quick_trials=1,
)

FIGURES = (FIG7, FIG8, FIG9, TABLE2, TABLE3, FIG11, PACING)
