"""Study cubicplus (seed 000): CUBIC+ for HTTP/2 page loads under loss, delay and initial window.

Pages of images are loaded over one HTTP/2 connection (TLS, as SPDY was)
with three CUBIC variants, with HTTP/1.1 over six connections and the
kernel's CUBIC as the reference line.  Figure 12 sweeps Reno's reduction
factor r instead.  Each figure states seed 000's finding beside ours.
"""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any

from ground.cwnd import slow_start_rounds
from ground.path import MSS
from netrepro.plot import numeric, point_at
from netrepro.spec import Check, Figure, Params, Point, Rows, Series, judged

# The source, cited as far as its text gives authors, title and venue.
SOURCE = (
    'seed 000: Praveen Kumar Saminathan, Vinothkumar Raja, Aathira Prabhakar, "Improved TCP congestion '
    'control algorithms for HTTP/2", student project report, Department of Computer Science, Stony Brook '
    "University (no year or venue given)"
)

DEFAULTS: dict[str, Any] = {"rtt": "20ms", "rate": "100mbit", "loss": "0%", "initcwnd": 10}
DEVIATIONS = (
    "bottleneck 100 Mbit/s (seed 000: an unshaped cable), so that the machine, not the emulation, is never the limit",
    "pages are the project's page set of STUDIES.md (seed 000: four pages of images of the same size classes)",
    "the objects' requests leave with the HTML's (h2load cannot hold a request until the HTML arrives)",
    "HTTP/2 over TLS with h2load (seed 000: SPDY in a browser)",
    "CUBIC+'s RTT-scaled K: each epoch's curve stretched in time by f = clamp(100 ms / RTT, 1/2, 2), so W_max "
    "is regained after f x K (seed 000 defines no function; kmod/README.md)",
    "CUBIC+ cuts cwnd and ssthresh by beta' and keeps CUBIC's TCP-friendly slope from beta = 0.7 "
    "(seed 000 names only cwnd and ssthresh; kmod/README.md)",
)

CUBIC = Series("CUBIC (HTTP/2)", {"cc": "cubic", "protocol": "h2"})
PLUS = Series("CUBIC+ n=6 (HTTP/2)", {"cc": "cubic_plus", "n": 6, "rtt_scaled": 0, "protocol": "h2"})
PLUS_K = Series("CUBIC+ n=6, RTT-scaled K (HTTP/2)", {"cc": "cubic_plus", "n": 6, "rtt_scaled": 1, "protocol": "h2"})
H1 = Series("CUBIC, HTTP/1.1 x6 (reference)", {"cc": "cubic", "protocol": "http/1.1"})
VARIANTS = (CUBIC, PLUS, PLUS_K, H1)


def timeout(params: Params) -> float:
    return 240.0 if params.get("page") == "large" else 120.0


def _verdict(agree: bool) -> str:
    return "agrees" if agree else "DIFFERS"


def _mean_se(fig: Figure, rows: Rows, label: str, level: Any) -> tuple[float, float, int] | None:
    """Mean, its standard error and n over the successful trials of a series at a level."""
    values = [float(r[fig.y]) for r in rows if r.get("series") == label and r.get(fig.x) == str(level)
              and r.get("status") == "ok" and r.get(fig.y)]  # fmt: skip
    if not values:
        return None
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.inf
    return statistics.mean(values), se, len(values)


# Seed 000's "high loss": the levels its findings are judged at.
HIGH_LOSS_PCT = 6


def _high_loss(level: Any) -> bool:
    return numeric(level) >= HIGH_LOSS_PCT


def _loss(fig: Figure, points: list[Point], rows: Rows) -> tuple[list[str], list[Check]]:
    """Seed 000: CUBIC+ beats CUBIC as loss grows, most for large objects, little for small ones.

    Compared on the means (the issue's measure), with standard errors: a
    difference counts as separated from noise when it exceeds twice the
    standard error of the difference.  For the large and medium pages the
    finding holds when CUBIC+ is better beyond noise at 6 % loss and above;
    for the small page, when its gain there stays under 20 % ("little").
    """
    notes = []
    higher_is_better = fig.y == "throughput_mbit"
    wins, gains = [], []
    for level in fig.levels:
        a, b = _mean_se(fig, rows, CUBIC.label, level), _mean_se(fig, rows, PLUS.label, level)
        if not (a and b):
            continue
        better = b[0] > a[0] if higher_is_better else b[0] < a[0]
        separated = abs(b[0] - a[0]) > 2 * math.hypot(a[1], b[1])
        gain = (b[0] / a[0] if higher_is_better else a[0] / b[0]) - 1  # in throughput, either way
        notes.append(
            f"at {level} loss, mean {fig.y}: CUBIC {a[0]:.4g} +/- {a[1]:.2g}, CUBIC+ n=6 {b[0]:.4g} +/- {b[1]:.2g} "
            f"(n = {a[2]}, {b[2]}): CUBIC+ {gain * 100:+.0f} %" + ("" if separated else ", within noise")
        )
        if _high_loss(level):
            wins.append(better and separated)
            gains.append(gain)
    if not wins:
        return notes, []
    if fig.fixed["page"] in ("small", "tiny"):
        little = all(abs(g) < 0.2 for g in gains)
        ours = ", ".join(f"{g * 100:+.0f} %" for g in gains)
        note = (f"seed 000: CUBIC+ gains little over CUBIC for small objects; ours at {HIGH_LOSS_PCT} % and above: "
                f"{ours}: {_verdict(little)} (taking 'little' as under 20 %)")  # fmt: skip
        return notes, [Check("CUBIC+ gains little over CUBIC for small objects", little, ours, note)]
    ours = f"better, beyond noise, at {sum(wins)} of {len(wins)} levels at {HIGH_LOSS_PCT} % loss and above"
    note = (f"seed 000: CUBIC+ does better than CUBIC as loss grows; ours at {HIGH_LOSS_PCT} % and above: "
            f"better, beyond noise, at {sum(wins)} of {len(wins)} levels: {_verdict(all(wins))}")  # fmt: skip
    return notes, [Check("CUBIC+ does better than CUBIC as loss grows", all(wins), ours, note)]


def _rtt(fig: Figure, points: list[Point], rows: Rows) -> tuple[list[str], list[Check]]:
    """Seed 000: under delay the variants are close for small and medium pages; CUBIC is better for large.

    "Close" is taken as means within 10 % of each other; "better" as a
    higher mean than both CUBIC+ variants by more than twice the standard
    error of the difference, at every added delay (the levels above the first).
    """
    notes, close, cubic_best = [], [], []
    for level in fig.levels:
        means = {s.label: m for s in (CUBIC, PLUS, PLUS_K) if (m := _mean_se(fig, rows, s.label, level))}
        if len(means) < 3:
            continue
        ys = {k: m[0] for k, m in means.items()}
        spread = (max(ys.values()) - min(ys.values())) / max(ys.values())
        close.append(spread <= 0.10)
        a = means[CUBIC.label]
        wins = [a[0] - m[0] > 2 * math.hypot(a[1], m[1]) for k, m in means.items() if k != CUBIC.label]
        if level != fig.levels[0]:  # an added delay: above the default RTT
            cubic_best.append(all(wins))
        notes.append(
            f"at RTT {level}, mean throughput: "
            + ", ".join(f"{k} {m[0]:.4g} +/- {m[1]:.2g}" for k, m in means.items())
            + f"; within {spread * 100:.0f} % of each other"
        )
    if fig.fixed["page"] == "large" and cubic_best:
        ours = f"CUBIC better, beyond noise, at {sum(cubic_best)} of {len(cubic_best)} added delays"
        claim = "default CUBIC beats both CUBIC+ variants under delay for large pages"
        return notes, [
            Check(claim, all(cubic_best), ours, f"seed 000: {claim}; ours: {ours}: {_verdict(all(cubic_best))}")
        ]
    if close:
        ours = f"within 10 % at {sum(close)} of {len(close)} RTTs"
        claim = "the variants are close under delay for small and medium pages"
        return notes, [Check(claim, all(close), ours, f"seed 000: {claim}; ours: {ours}: {_verdict(all(close))}")]
    return notes, []


def page_rounds(page_bytes: int, initcwnd: int) -> int:
    """Round trips of slow start to deliver a page's bytes from an initial window (no loss, no limit)."""
    return slow_start_rounds(initcwnd, math.ceil(page_bytes / MSS))


def page_load_band(page_bytes: int, initcwnd: int, fig: Figure) -> tuple[float, float]:
    """The slow-start model's page load time, ms: its rounds (R x RTT) and the page's time on the wire
    overlap, so a load lasts between the larger of the two and their sum."""
    rounds_ms = page_rounds(page_bytes, initcwnd) * fig.path.rtt.ms
    wire_ms = page_bytes * 8 / fig.path.rate_down.bps * 1e3
    return max(rounds_ms, wire_ms), rounds_ms + wire_ms


def _iw(fig: Figure, points: list[Point], rows: Rows) -> tuple[list[str], list[Check]]:
    """Seed 000: the initial window barely matters, and the three variants perform the same at each.

    Judged apart: the variants agree when their means are within 5 % at
    every window; the window's own effect is set beside the slow-start
    model, which says when it must matter: R rounds of R x RTT and the
    page's time on the wire at the bottleneck, overlapping, so a page load
    lasts between the larger of the two and their sum.
    """
    notes, same = [], []
    for level in fig.levels:
        ys = [m[0] for s in (CUBIC, PLUS, PLUS_K) if (m := _mean_se(fig, rows, s.label, level))]
        if len(ys) == 3:
            same.append((max(ys) - min(ys)) / max(ys) <= 0.05)
        ok = [r for r in rows if r.get("series") == CUBIC.label and r.get(fig.x) == str(level)
              and r.get("status") == "ok"]  # fmt: skip
        if ok:
            plt = [float(r["page_load_time_ms"]) for r in ok]
            page_bytes = int(ok[0]["bytes"])
            low, high = page_load_band(page_bytes, int(level), fig)
            notes.append(
                f"IW {level}: CUBIC loads the page in {statistics.median(plt):.0f} ms; slow start needs "
                f"{page_rounds(page_bytes, int(level))} round trips, so the model says {low:.0f}..{high:.0f} ms"
            )
    checks = []
    if same:
        ours = f"within 5 % at {sum(same)} of {len(same)} windows"
        claim = "all three variants perform the same at each window"
        checks.append(Check(claim, all(same), ours, f"seed 000: {claim}; ours: {ours}: {_verdict(all(same))}"))
    ys = [p.y for lv in fig.levels if (p := point_at(points, CUBIC.label, str(lv)))]
    if len(ys) >= 2:
        change = (max(ys) - min(ys)) / max(ys)
        ours = f"CUBIC's throughput varies by {change * 100:.0f} % across windows"
        note = (f"seed 000: the window barely matters; ours: {ours}: {_verdict(change < 0.2)} "
                "(taking 'barely' as under 20 %), as the rounds above predict")  # fmt: skip
        checks.append(Check("the window barely matters", change < 0.2, ours, note))
    return notes, checks


def _reno(fig: Figure, points: list[Point], rows: Rows) -> tuple[list[str], list[Check]]:
    """Seed 000: a smaller reduction factor r loads pages faster under high loss.

    Judged at 6 % loss and above on the ends of the sweep: the smallest r
    must load the page faster than the largest by more than twice the
    standard error of the difference.  Where every r's PLT is in order
    from small to large is noted too.
    """
    notes, wins, ordered_at = [], [], []
    smallest, largest = fig.series[0], fig.series[-1]
    for level in fig.levels:
        means = [(s, m) for s in fig.series if (m := _mean_se(fig, rows, s.label, level))]
        if len(means) < 2:
            continue
        if all(a[0] <= b[0] for (_, a), (_, b) in itertools.pairwise(means)):
            ordered_at.append(str(level))
        notes.append(
            f"at {level} loss, mean PLT (s) by r: "
            + ", ".join(f"r={_r(s)} {m[0] / 1e3:.2f} +/- {m[1] / 1e3:.2f}" for s, m in means)
        )
        if _high_loss(level) and means[0][0] is smallest and means[-1][0] is largest:
            small, large = means[0][1], means[-1][1]
            wins.append(large[0] - small[0] > 2 * math.hypot(small[1], large[1]))
    if not wins:
        return notes or ["no level has a successful trial"], []
    ours = f"r = {_r(smallest)} faster than r = {_r(largest)}, beyond noise, at {sum(wins)} of {len(wins)} levels"
    note = (f"PLT rises with r at every step at: {', '.join(ordered_at) or 'no level'} loss; "
            f"seed 000: smaller r is faster at high loss; ours at {HIGH_LOSS_PCT} % and above: {ours}: "
            f"{_verdict(all(wins))}")  # fmt: skip
    return notes, [Check("a smaller r is faster at high loss", all(wins), ours, note)]


annotate_loss, judge_loss = judged(_loss)
annotate_rtt, judge_rtt = judged(_rtt)
annotate_iw, judge_iw = judged(_iw)
annotate_reno, judge_reno = judged(_reno)
# a figure's notes and its judgement, computed alike
BY_LOSS = {"annotate": annotate_loss, "judge": judge_loss}
BY_RTT = {"annotate": annotate_rtt, "judge": judge_rtt}
BY_IW = {"annotate": annotate_iw, "judge": judge_iw}


def _r(series: Series) -> str:
    return f"{series.params['r'] / 1000:g}"


def _figure(name: str, title: str, x: str, levels: tuple[Any, ...], page: str, y: str, **kw: Any) -> Figure:
    fixed = {**{k: v for k, v in DEFAULTS.items() if k != x}, "page": page}
    y_label = {"throughput_mbit": "throughput (Mbit/s): page bytes / PLT", "page_load_time_ms": "page load time (ms)"}
    return Figure(
        study="cubicplus",
        name=name,
        title=title,
        workload="page_load",
        x=x,
        levels=levels,
        y=y,
        y_label=y_label[y],
        fixed=fixed,
        deviations=DEVIATIONS,
        trial_timeout=timeout,
        **{"series": VARIANTS, "trials": 10, "quick_trials": 1, **kw},
    )


LOSS = ("0%", "2%", "6%", "8%", "10%")
RTTS = ("20ms", "100ms", "200ms")
IWS = (3, 10, 21, 32)
LOSS_FINDING = (
    "seed 000: CUBIC+ gives higher throughput than CUBIC as loss grows, most for large objects, little for small"
)
RTT_FINDING = (
    "seed 000: under added delay the variants are close for small and medium objects; default CUBIC is better for large"
)
IW_FINDING = "seed 000: the initial window barely matters for any variant"

FIGURES = (
    _figure("fig3", "Throughput vs loss, large page", "loss", LOSS, "large", "throughput_mbit",
            quick_levels=("0%", "6%"), quick_trials=2, finding=LOSS_FINDING, **BY_LOSS, x_label="loss (%)",
            y_log=True),
    _figure("fig4", "Throughput vs loss, medium page", "loss", LOSS, "medium", "throughput_mbit",
            quick_levels=("0%", "6%"), finding=LOSS_FINDING, **BY_LOSS, x_label="loss (%)", y_log=True),
    _figure("fig5", "Throughput vs loss, small page", "loss", LOSS, "small", "throughput_mbit",
            quick_levels=("0%", "6%"), finding=LOSS_FINDING, **BY_LOSS, x_label="loss (%)", y_log=True),
    _figure("fig6", "Page load time vs loss, large page", "loss", LOSS, "large", "page_load_time_ms",
            quick_levels=("0%", "6%"), quick_trials=2, **BY_LOSS, x_label="loss (%)", trials_of="fig3",
            y_log=True,
            finding="seed 000: PLT about equal at low loss and better with CUBIC+ at high loss"),
    _figure("fig7", "Throughput vs RTT, medium page", "rtt", RTTS, "medium", "throughput_mbit",
            quick_levels=("20ms", "200ms"), finding=RTT_FINDING, **BY_RTT, x_label="RTT (ms)"),
    _figure("fig8", "Throughput vs RTT, small page", "rtt", RTTS, "small", "throughput_mbit",
            quick_levels=("20ms", "200ms"), finding=RTT_FINDING, **BY_RTT, x_label="RTT (ms)"),
    _figure("fig9", "Throughput vs RTT, large page", "rtt", RTTS, "large", "throughput_mbit",
            quick_levels=("20ms", "200ms"), finding=RTT_FINDING, **BY_RTT, x_label="RTT (ms)"),
    _figure("fig10", "Throughput vs initial window, small page", "initcwnd", IWS, "small", "throughput_mbit",
            quick_levels=(3, 32), finding=IW_FINDING, **BY_IW, x_label="initial window (segments)"),
    _figure("fig11", "Throughput vs initial window, medium page", "initcwnd", IWS, "medium", "throughput_mbit",
            quick_levels=(3, 32), finding=IW_FINDING, **BY_IW, x_label="initial window (segments)"),
    _figure("fig12", "Page load time vs loss, large page, Reno with reduction factor r", "loss", LOSS, "large",
            "page_load_time_ms", quick_levels=("0%", "8%"), x_label="loss (%)", y_log=True,
            series=tuple(Series(f"Reno r={r / 1000:g} (HTTP/2)", {"cc": "reno_beta", "r": r, "protocol": "h2"})
                         for r in (500, 600, 700, 800, 900)),
            quick_series=("Reno r=0.5 (HTTP/2)", "Reno r=0.9 (HTTP/2)"),
            finding="seed 000: for Reno, a smaller reduction factor does better at high loss",
            annotate=annotate_reno, judge=judge_reno),
)  # fmt: skip
