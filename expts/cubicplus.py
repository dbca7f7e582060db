"""Study cubicplus (seed 000): CUBIC+ for HTTP/2 page loads under loss, delay and initial window.

Pages of images are loaded over one HTTP/2 connection (TLS, as SPDY was)
with three CUBIC variants, with HTTP/1.1 over six connections and the
kernel's CUBIC as the reference line.  Figure 12 sweeps Reno's reduction
factor r instead, and `tiny` is the page of objects under 1 KB that seed 000
describes in words only.

Each figure's claims (netrepro.studykit.claims) are seed 000's own sentences, quoted
from its section 7, each with the test that decides it on our trials; the
figures' notes give our numbers per level and, for the initial window, the
slow-start model.  Where a figure's path cannot tell the variants apart (no
loss: they run the same code until a first one), its claim is set by design.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from ground.cwnd import slow_start_rounds
from ground.path import MSS
from netrepro.studykit import decisions, intervals
from netrepro.studykit.cells import Group
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import AllOf, Better, ByDesign, Computed, Finding, Same, Trend
from netrepro.studykit.evidence import rows_beside
from netrepro.studykit.kept import Kept
from netrepro.studykit.spec import Figure, Point, Rows, Series
from netrepro.studykit.stand_in import against_kernel
from netrepro.studykit.trial import Trial
from netrepro.studykit.variation import Variation

# The source, cited as far as its text gives authors, title and venue.
SOURCE = (
    'seed 000: Praveen Kumar Saminathan, Vinothkumar Raja, Aathira Prabhakar, "Improved TCP congestion '
    'control algorithms for HTTP/2", student project report, Department of Computer Science, Stony Brook '
    "University (no year or venue given)"
)
SEED = "000_156489580aaffd1b.txt"  # the source's text, which the claims quote

# What this study's paths vary from trial to trial beyond the start phase (netrepro.studykit.variation,
# docs/studies/cubicplus.md, "What varies"): why that much, from the source's description of its network.
VARIATION = Variation.of(
    "0.1ms",
    (
        "seed 000 shaped a cabled client-server link with netem for its loss (here 100 Mbit/s, 20 ms), and that "
        "random loss already draws per trial; +-0.1 ms is within one bottleneck service time at 100 Mbit/s (0.12 "
        "ms), as the lab keeps jitter (docs/lab.md), and 0.5 % of the RTT, and it gives the loss-free cells draws"
        " of their own"
    ),
)

DEFAULTS: dict[str, Any] = {"rtt": "20ms", "rate": "100mbit", "loss": "0%", "initcwnd": 10}
DEVIATIONS = (
    "bottleneck 100 Mbit/s (seed 000: an unshaped cable), so that the machine, not the emulation, is never the limit",
    "pages are the project's page set (servers/content.py: 40 objects of 800 B, 30 of 5 KB, 20 of 50 KB, 4 of "
    "1.2 MB; seed 000: four pages of images of the same size classes)",
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
RENO_R = (500, 600, 700, 800, 900)  # Reno's reduction factor, thousandths (reno_beta's r)
RENO = tuple(Series(f"Reno r={r / 1000:g} (HTTP/2)", {"cc": "reno_beta", "r": r, "protocol": "h2"}) for r in RENO_R)
# The controls that part an implementation from its algorithm: the kernel's algorithm run as this project's
# BPF program (cubic_plus with n = 1 is CUBIC, beta 717/1024; reno_beta with r = 0.5 is Reno), beside the
# kernel's own, so that a variant's difference from the kernel splits into the implementation's part (the
# program against the kernel's) and the algorithm's (the variant against the program).
CUBIC_BPF = Series(
    "CUBIC as BPF: cubic_plus n=1 (HTTP/2)", {"cc": "cubic_plus", "n": 1, "rtt_scaled": 0, "protocol": "h2"}
)
RENO_KERNEL = Series("Reno, the kernel's (HTTP/2)", {"cc": "reno", "protocol": "h2"})

# Seed 000's Table 1 loss levels.  The source names no boundary between its "low" and "high" loss; its
# levels fall in two groups with the sweep's widest gap between them (2 % to 6 %), and 0 % is no loss at
# all, where every variant runs the same code (they differ only in the cut at a loss): not a level its
# loss claims are tested at.
LOSS = ("0%", "2%", "6%", "8%", "10%")
LOSSY = LOSS[1:]
LOW_LOSS = ("2%",)
HIGH_LOSS = ("6%", "8%", "10%")
RTTS = ("20ms", "100ms", "200ms")
IWS = (3, 10, 21, 32)

# What the study's words are taken as.  The source gives no numbers (its figures' values are not in its
# text), so one boundary serves its "same" words and its "better" words alike: two results within 10 % of
# each other are the "same" ("almost equals", "perform same", "similar"), and "better", "outperform" or
# "improvement" needs at least that 10 %, so that no result is both.
SAME_MARGIN = 0.10
BETTER_WORTH = SAME_MARGIN
# "very less role" grants the initial window some role, only a small one: twice the study's "same".
IW_ROLE_MARGIN = 2 * SAME_MARGIN

# Set by design: the three CUBICs differ only in the cut at a loss (beta') and, with RTT-scaled K, in the
# clock of the cubic curve once slow start ends.  Without a loss none is cut, and the curve's clock cannot
# tell either: before a first loss (no W_max known) all three grow at tcp_cubic's floor of 5 % per RTT,
# which the fastest stretched curve (f = 1/2, at 200 ms) outgrows only about 2 s into congestion avoidance,
# longer than any loss-free page load here lasts (1.9 s at most: the large page at 200 ms).  The stored
# trials agree: the three CUBICs' medians lie within 0.31 % of each other at every level of figs 7-11.
NO_LOSS_WHY = (
    "a loss-free path (loss 0 %, a 1000-packet queue these pages' slow start does not fill): the three CUBICs "
    "run the same code until a first loss, and RTT-scaled K's other clock would part them only seconds after "
    "slow start, past these page loads"
)
COULD_FAIL = "a path with losses would let it fail: --set loss=2% (or a queue slow start overflows: --set queue=20p)"


def timeout(trial: Trial) -> float:
    return 240.0 if trial.workload.page == "large" else 120.0


def _mean_se(fig: Figure, rows: Rows, label: str, level: Any) -> tuple[float, float, int] | None:
    """Mean, its standard error and n over the successful trials of a series at a level (one value a trial)."""
    values = [
        r.measured(fig.y) for r in rows if r.series == label and r.text(fig.x) == str(level) and r.ok and r.text(fig.y)
    ]
    if not values:
        return None
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.inf
    return statistics.mean(values), se, len(values)


def annotate_loss(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    """CUBIC and CUBIC+ n=6 at each loss level: their means over trials and CUBIC+'s difference; where the
    BPF control ran, that difference split into the implementation's part and the algorithm's."""
    notes = []
    higher_is_better = fig.y == "throughput_mbit"

    def gain(over: tuple[float, float, int], base: tuple[float, float, int]) -> float:
        return (over[0] / base[0] if higher_is_better else base[0] / over[0]) - 1  # in throughput, either way

    for level in fig.levels:
        a, b = _mean_se(fig, rows, CUBIC.label, level), _mean_se(fig, rows, PLUS.label, level)
        if not (a and b):
            continue
        note = (
            f"at {level} loss, mean {fig.y} (+/- its standard error over trials): CUBIC {a[0]:.4g} +/- {a[1]:.2g}, "
            f"CUBIC+ n=6 {b[0]:.4g} +/- {b[1]:.2g} (n = {a[2]}, {b[2]}): CUBIC+ {gain(b, a) * 100:+.0f} % in throughput"
        )
        if control := _mean_se(fig, rows, CUBIC_BPF.label, level):
            note += (
                f"; of which the implementation (CUBIC as BPF, {control[0]:.4g} +/- {control[1]:.2g}, n = "
                f"{control[2]}, against the kernel's) {gain(control, a) * 100:+.0f} % and the algorithm (CUBIC+ "
                f"against CUBIC as BPF) {gain(b, control) * 100:+.0f} %"
            )
            if stands_in := against_kernel(fig, rows, CUBIC_BPF.label, CUBIC.label, level):
                note += f"; CUBIC as BPF against the kernel's CUBIC in {fig.y}: {stands_in}"
        notes.append(note)
    return notes


def annotate_rtt(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    """The three CUBICs' mean throughput at each RTT and how far apart they lie."""
    notes = []
    for level in fig.levels:
        means = {s.label: m for s in (CUBIC, PLUS, PLUS_K) if (m := _mean_se(fig, rows, s.label, level))}
        if len(means) < 3:
            continue
        ys = [m[0] for m in means.values()]
        spread = (max(ys) - min(ys)) / max(ys)
        notes.append(
            f"at RTT {level}, mean throughput: "
            + ", ".join(f"{k} {m[0]:.4g} +/- {m[1]:.2g}" for k, m in means.items())
            + f"; they span {spread * 100:.1f} %"
        )
    return notes


def page_rounds(page_bytes: int, initcwnd: int) -> int:
    """Round trips of slow start to deliver a page's bytes from an initial window (no loss, no limit)."""
    return slow_start_rounds(initcwnd, math.ceil(page_bytes / MSS))


def page_load_band(page_bytes: int, initcwnd: int, fig: Figure) -> tuple[float, float]:
    """The slow-start model's page load time, ms: its rounds (R x RTT) and the page's time on the wire
    overlap, so a load lasts between the larger of the two and their sum."""
    rounds_ms = page_rounds(page_bytes, initcwnd) * fig.path.rtt.ms
    wire_ms = page_bytes * 8 / fig.path.rate_down.bps * 1e3
    return max(rounds_ms, wire_ms), rounds_ms + wire_ms


def annotate_iw(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    """CUBIC's page load time at each initial window beside the slow-start model's: R rounds of R x RTT
    and the page's time on the wire at the bottleneck, overlapping, so a load lasts between the larger of
    the two and their sum."""
    notes = []
    for level in fig.levels:
        ok = [r for r in rows if r.series == CUBIC.label and r.text(fig.x) == str(level) and r.ok]
        if ok:
            plt = [r.measured("page_load_time_ms") for r in ok]
            page_bytes = int(ok[0].text("bytes"))
            low, high = page_load_band(page_bytes, int(level), fig)
            notes.append(
                f"IW {level}: CUBIC loads the page in {statistics.median(plt):.0f} ms; slow start needs "
                f"{page_rounds(page_bytes, int(level))} round trips, so the model says {low:.0f}..{high:.0f} ms"
            )
    return notes


def annotate_reno(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    """Mean PLT by r at each loss level, and the levels where it rises with r at every step; where the
    kernel's Reno ran beside, r = 0.5 (Reno as BPF) against it: the implementation's part."""
    notes, ordered_at = [], []
    for level in fig.levels:
        means = [(s, m) for s in fig.series if s in RENO and (m := _mean_se(fig, rows, s.label, level))]
        if len(means) < 2:
            continue
        if all(a[0] <= b[0] for (_, a), (_, b) in itertools.pairwise(means)):
            ordered_at.append(str(level))
        note = f"at {level} loss, mean PLT (s) by r: " + ", ".join(
            f"r={_r(s)} {m[0] / 1e3:.2f} +/- {m[1] / 1e3:.2f}" for s, m in means
        )
        kernel, bpf = _mean_se(fig, rows, RENO_KERNEL.label, level), _mean_se(fig, rows, RENO[0].label, level)
        if kernel and bpf:
            note += (
                f"; the kernel's Reno {kernel[0] / 1e3:.2f} +/- {kernel[1] / 1e3:.2f} (n = {kernel[2]}): r = 0.5 "
                f"as BPF {(bpf[0] / kernel[0] - 1) * 100:+.0f} % in PLT against it (the implementation)"
            )
            if stands_in := against_kernel(fig, rows, RENO[0].label, RENO_KERNEL.label, level):
                note += f", {stands_in}"
        notes.append(note)
    if not notes:
        return ["no level has a successful trial"]
    return [*notes, f"mean PLT rises with r at every step at: {', '.join(ordered_at) or 'no level'} loss"]


def _r(series: Series) -> str:
    """A Reno series' r, as its label shows it."""
    return f"{RENO_R[RENO.index(series)] / 1000:g}"


# --- tests of our own, for what the kinds of netrepro.studykit.claims cannot say ---

Beside = Callable[[Figure, str, Rows], Rows]


def smaller_gain(larger: Sequence[str], levels: Sequence[Any], worth: float, beside: Beside = rows_beside) -> Computed:
    """CUBIC+'s gain over CUBIC in throughput smaller on this figure than on each of the `larger` figures
    at each level by at least `worth`: their gain over ours (each a ratio of geometric means, so a ratio of
    ratios, decisions.ratio_of_ratios), a minimum-effect test over the four series' trials.  The larger
    figures' trials are read from the results tree these rows came from (`beside`)."""

    def decide(fig: Figure, rows: Rows) -> list[Finding]:
        out = []
        for name in larger:
            others = beside(fig, name, rows)
            for level in levels:
                at = f"{level}, against {name}"
                cells = [
                    Group(series=s.label).cell(f, r, level, "throughput_mbit")
                    for f, r in ((fig, others), (fig, rows))
                    for s in (PLUS, CUBIC)
                ]
                found = decisions.ratio_of_ratios(at, cells, worth)
                if not others:
                    found = dataclasses.replace(
                        found, estimate=found.estimate + f" ({name}'s trials are not beside these)"
                    )
                out.append(found)
        return out

    names = " and ".join(larger)
    what = (
        f"CUBIC+ n=6's gain over CUBIC in throughput smaller here than in {names} at each of "
        f"{', '.join(map(str, levels))} loss by at least {worth:.0%}: their gain / ours (ratio of ratios of "
        f"geometric means, {intervals.CONFIDENCE:.0%} Welch interval over the four series' trials) wholly above "
        f"{1 + worth:g} holds, wholly below differs"
    )
    return Computed(what, decide, reads=tuple(larger))


def window_role(series: Sequence[Series], margin: float, default: Any = 10) -> Computed:
    """Each series' throughput at every initial window within 1 +- `margin` of its throughput at the
    default window: an equivalence (two one-sided tests at 5 %, trials as unit) across the windows, which
    netrepro.studykit.claims.Same does within one level; here it runs with the series as the level."""

    def decide(fig: Figure, rows: Rows) -> list[Finding]:
        base = next((lv for lv in fig.levels if str(lv) == str(default)), fig.levels[0])
        windows = [base, *(lv for lv in fig.levels if lv != base)]
        groups = [Group(where={fig.x: str(lv)}) for lv in windows]
        by_series = dataclasses.replace(fig, x="series")
        return Same("throughput_mbit", groups, margin, levels=[s.label for s in series]).decide(by_series, rows)

    what = (
        f"each of {', '.join(s.label for s in series)}: throughput at every initial window within {margin:.0%} "
        f"of its throughput at IW {default} (equivalence: two one-sided tests at 5 %, trials as unit)"
    )
    return Computed(what, decide)


# --- seed 000's sentences, each with its test ---


def _claim(where: str, quote: str, test: decisions.Test, reading: str) -> Claim:
    return Claim(source=SEED, where=where, quote=quote, test=test, why=reading)


LOSSY_READ = (
    "at 2, 6, 8 and 10 % loss (at 0 % the variants run the same code: nothing to test); "
    f"'better' taken as at least {BETTER_WORTH:.0%}, the study's boundary between its 'same' and 'better' words"
)
THROUGHPUT_BETTER = _claim(
    "section 7.1, Figures 3 and 4",
    "We observe that the throughput of webpages with CUBIC+ is better than that of original version.",
    Better("throughput_mbit", PLUS.label, CUBIC.label, levels=LOSSY, worth=BETTER_WORTH),
    "throughput of CUBIC+ n=6 (section 7.1's CUBIC+: only beta modified) against CUBIC, " + LOSSY_READ + "; the "
    "next sentence's 'considerable' gain for these larger objects has no size of its own in the source: it is "
    "judged against figure 5's, in that figure's claims",
)
MEDIUM_BETTER = _claim(
    "section 7.1, Figure 5",
    "For medium size objects, we still see improvement in throughput for the modified version",
    Better("throughput_mbit", PLUS.label, CUBIC.label, levels=LOSSY, worth=BETTER_WORTH),
    "the source's 'medium size objects' are its 1-10 KB page (Figure 5), our small page; throughput of CUBIC+ "
    "n=6 against CUBIC, " + LOSSY_READ,
)
MEDIUM_LESS = _claim(
    "section 7.1, Figure 5",
    "For medium size objects ... but not as contrasting as for larger object sizes (Figure 5).",
    smaller_gain(("fig3", "fig4"), LOSSY, BETTER_WORTH),
    "the 'larger object sizes' are Figures 3 and 4 (over 1 MB, 10-100 KB: our large and medium pages); "
    "CUBIC+ n=6's gain over CUBIC in throughput on this page smaller than on each of them, at each loss level "
    f"where there is a gain to compare (2 to 10 %); 'not as contrasting' taken as their gain at least "
    f"{BETTER_WORTH:.0%} above ours, the study's 'better'; their trials read from the same results tree",
)
TINY_SAME = _claim(
    "section 7.1 (no figure)",
    "For really small objects (<1KB size), both the algorithms were found to perform same in terms of packet loss.",
    Same("throughput_mbit", (CUBIC.label, PLUS.label), margin=SAME_MARGIN, levels=LOSSY),
    "our tiny page (40 objects of 800 B); 'both the algorithms' are CUBIC and CUBIC+ n=6 (section 7.1's "
    f"CUBIC+), 'same' in throughput taken as within {SAME_MARGIN:.0%}, at 2, 6, 8 and 10 % loss (at 0 % they "
    "run the same code)",
)
PLT_LOW_SAME = _claim(
    "section 7.1, Figure 6",
    "page load time for webpages using CUBIC+ almost equals that of default CUBIC TCP under low percentage of "
    "packet loss",
    Same("page_load_time_ms", (CUBIC.label, PLUS.label), margin=SAME_MARGIN, levels=LOW_LOSS),
    f"PLT of CUBIC+ n=6 and CUBIC within {SAME_MARGIN:.0%} ('almost equals') at 2 %, the low loss level of the "
    "source's Table 1 (0 % is no loss at all: the same code, nothing to test)",
)
PLT_HIGH_BETTER = _claim(
    "section 7.1, Figure 6",
    "However, as packet loss% increases, CUBIC+ was observed to outperform default TCP CUBIC.",
    Better("page_load_time_ms", PLUS.label, CUBIC.label, higher=False, levels=HIGH_LOSS, worth=BETTER_WORTH),
    f"PLT of CUBIC+ n=6 lower than CUBIC's by at least {BETTER_WORTH:.0%} ('outperform', past the margin of "
    "the sentence before's 'almost equals') at 6, 8 and 10 %, the high levels of Table 1",
)
# Marked where a reading changed after the rows it judges were measured.
AFTER_DATA = (
    "levels changed after the data (2026-12-05, when trends became tested at every step): the trend first "
    "started at 0 %, where the variants run the same code, which makes its first step no part of the growth"
)
PLT_GROWS = _claim(
    "section 7.1, Figure 6",
    "under low percentage of packet loss. However, as packet loss% increases, CUBIC+ was observed to outperform",
    Trend("page_load_time_ms", CUBIC.label, rises=True, against=PLUS.label, levels=LOSSY),
    "the contrast of the two sentences read as CUBIC+'s lead growing with loss: CUBIC's PLT over CUBIC+'s "
    f"rising at every step from 2 %, the low loss where the sentence has them almost equal; {AFTER_DATA}",
)
# The setup that decides those claims, and the tests the sentences get on a figure derived without it.
LOSS_FREE = decisions.unchanged(loss="0%", queue=None)
THREE_ALIKE = Same("throughput_mbit", (CUBIC.label, PLUS.label, PLUS_K.label), margin=SAME_MARGIN)
DELAY_CLOSE = _claim(
    "section 7.2, Figures 7 and 8",
    "throughput of the two modified versions of TCP CUBIC ... is close to that of original TCP CUBIC for smaller "
    "objects and medium sized objects (Figure 7,8).",
    ByDesign(NO_LOSS_WHY, COULD_FAIL, holds_while=LOSS_FREE, otherwise=THREE_ALIKE),
    "both CUBIC+ n=6 variants (section 7.2's: beta modified, and beta and K modified) against CUBIC; on a "
    f"path with losses, 'close' taken as within {SAME_MARGIN:.0%}, the study's 'same'",
)
DELAY_LARGE = _claim(
    "section 7.2, Figure 9",
    "However, for larger objects, performance of modified version deteriorates. Default CUBIC TCP outperforms "
    "both modified versions under varying delay for larger object size (Figure 9).",
    ByDesign(
        NO_LOSS_WHY,
        COULD_FAIL,
        holds_while=LOSS_FREE,
        otherwise=AllOf(
            tuple(Better("throughput_mbit", CUBIC.label, s.label, worth=BETTER_WORTH) for s in (PLUS, PLUS_K))
        ),
        forced=decisions.DIFFERS,  # the same code on a loss-free path: CUBIC cannot outperform either
    ),
    "CUBIC's throughput above both CUBIC+ n=6 variants' on the large page at each RTT; on a path with losses, "
    f"by at least {BETTER_WORTH:.0%}, the study's 'better'",
)
IW_ROLE = _claim(
    "section 7.3, Figures 10 and 11",
    "It was observed that initial congestion window has very less role in evaluating the performance of "
    "modified algorithms and default TCP CUBIC.",
    window_role((CUBIC, PLUS, PLUS_K), IW_ROLE_MARGIN),
    "for each of the three CUBICs, throughput at IW 3, 21 and 32 against Linux's default IW 10 (section 7.3 "
    f"names it); 'very less role' grants the window a small role: within {IW_ROLE_MARGIN:.0%}, twice the "
    "study's 'same'",
)
IW_SAME = _claim(
    "section 7.3, Figures 10 and 11",
    "All three variants are observed to perform the same under varying values of initial congestion window "
    "size (Figure 10,11).",
    ByDesign(NO_LOSS_WHY, COULD_FAIL, holds_while=LOSS_FREE, otherwise=THREE_ALIKE),
    f"the three CUBICs alike in throughput at each initial window; on a path with losses, within {SAME_MARGIN:.0%}",
)
RENO_LOW_SAME = _claim(
    "section 7.4, Figure 12",
    "for different congestion window reduction factors, modified variant performed similar at a lower loss "
    "percentage",
    Same("page_load_time_ms", tuple(s.label for s in RENO), margin=SAME_MARGIN, levels=LOW_LOSS),
    "r as the source uses it, the share of the window cut at a loss (kmod/reno_beta: ssthresh = cwnd x "
    f"(1 - r)); PLT of every r within {SAME_MARGIN:.0%} of r = 0.5's ('similar') at 2 %, the low loss level of "
    "Table 1 (0 % is no loss: every r runs the same code)",
)
RENO_GROWS = _claim(
    "section 7.4, Figure 12",
    "as the loss percentage increased, larger reduction factor consumed longer duration for complete page load",
    Trend("page_load_time_ms", RENO[-1].label, rises=True, against=RENO[0].label, levels=LOSSY),
    "the ends of the sweep: r = 0.9's PLT over r = 0.5's rising with loss at every step from 2 %, where the "
    f"source has them similar; {AFTER_DATA}",
)
RENO_HIGH_BETTER = _claim(
    "section 7.4, Figure 12 (the text says Figure 9)",
    "Surprisingly, smaller reduction factor performed better on high loss.",
    Better("page_load_time_ms", RENO[0].label, RENO[-1].label, higher=False, levels=HIGH_LOSS, worth=BETTER_WORTH),
    f"the ends of the sweep: r = 0.5's PLT lower than r = 0.9's by at least {BETTER_WORTH:.0%} ('better', past "
    "the margin of 'similar') at 6, 8 and 10 %, the high levels of Table 1",
)


def _figure(name: str, title: str, x: str, levels: tuple[Any, ...], page: str, y: str, **kw: Any) -> Figure:
    fixed = {**{k: v for k, v in DEFAULTS.items() if k != x}, "page": page}
    y_label = {"throughput_mbit": "throughput (Mbit/s): page bytes / PLT", "page_load_time_ms": "page load time (ms)"}
    return Figure(
        variation=VARIATION,
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


LARGER_FINDING = (
    "seed 000: CUBIC+ gives higher throughput than CUBIC under loss, a considerable gain for larger objects"
)
MEDIUM_FINDING = (
    "seed 000: for its 'medium size objects' (1-10 KB) CUBIC+ still improves throughput under loss, "
    "but not as much as for larger objects"
)
TINY_FINDING = "seed 000: for objects under 1 KB, CUBIC and CUBIC+ perform the same under loss"
RTT_FINDING = (
    "seed 000: under added delay the variants are close for small and medium objects; default CUBIC is better for large"
)
IW_FINDING = "seed 000: the initial window has little role, and the three variants perform the same at each"
BY_LOSS = {"annotate": annotate_loss, "x_label": "loss (%)", "y_log": True}
# Figures 3-5 and tiny (6 reads 3's trials) with the BPF control beside; a quick run leaves it out.
CONTROLLED = {"series": (*VARIANTS, CUBIC_BPF), "quick_series": tuple(s.label for s in VARIANTS)}

FIGURES = (
    _figure(
        "fig3",
        "Throughput vs loss, large page",
        "loss",
        LOSS,
        "large",
        "throughput_mbit",
        quick_levels=("0%", "6%"),
        quick_trials=2,
        finding=LARGER_FINDING,
        claims=(THROUGHPUT_BETTER,),
        **BY_LOSS,
        **CONTROLLED,
    ),
    _figure(
        "fig4",
        "Throughput vs loss, medium page",
        "loss",
        LOSS,
        "medium",
        "throughput_mbit",
        quick_levels=("0%", "6%"),
        finding=LARGER_FINDING,
        claims=(THROUGHPUT_BETTER,),
        **BY_LOSS,
        **CONTROLLED,
    ),
    _figure(
        "fig5",
        "Throughput vs loss, small page",
        "loss",
        LOSS,
        "small",
        "throughput_mbit",
        quick_levels=("0%", "6%"),
        finding=MEDIUM_FINDING,
        claims=(MEDIUM_BETTER, MEDIUM_LESS),
        **BY_LOSS,
        **CONTROLLED,
    ),
    _figure(
        "fig6",
        "Page load time vs loss, large page",
        "loss",
        LOSS,
        "large",
        "page_load_time_ms",
        quick_levels=("0%", "6%"),
        quick_trials=2,
        trials_of="fig3",
        finding="seed 000: PLT almost equal at low loss, and better with CUBIC+ as loss increases",
        claims=(PLT_LOW_SAME, PLT_HIGH_BETTER, PLT_GROWS),
        **BY_LOSS,
        **CONTROLLED,
    ),
    _figure(
        "fig7",
        "Throughput vs RTT, medium page",
        "rtt",
        RTTS,
        "medium",
        "throughput_mbit",
        quick_levels=("20ms", "200ms"),
        finding=RTT_FINDING,
        annotate=annotate_rtt,
        x_label="RTT (ms)",
        claims=(DELAY_CLOSE,),
    ),
    _figure(
        "fig8",
        "Throughput vs RTT, small page",
        "rtt",
        RTTS,
        "small",
        "throughput_mbit",
        quick_levels=("20ms", "200ms"),
        finding=RTT_FINDING,
        annotate=annotate_rtt,
        x_label="RTT (ms)",
        claims=(DELAY_CLOSE,),
    ),
    _figure(
        "fig9",
        "Throughput vs RTT, large page",
        "rtt",
        RTTS,
        "large",
        "throughput_mbit",
        quick_levels=("20ms", "200ms"),
        finding=RTT_FINDING,
        annotate=annotate_rtt,
        x_label="RTT (ms)",
        claims=(DELAY_LARGE,),
    ),
    _figure(
        "fig10",
        "Throughput vs initial window, small page",
        "initcwnd",
        IWS,
        "small",
        "throughput_mbit",
        quick_levels=(3, 32),
        finding=IW_FINDING,
        annotate=annotate_iw,
        x_label="initial window (segments)",
        claims=(IW_ROLE, IW_SAME),
    ),
    _figure(
        "fig11",
        "Throughput vs initial window, medium page",
        "initcwnd",
        IWS,
        "medium",
        "throughput_mbit",
        quick_levels=(3, 32),
        finding=IW_FINDING,
        annotate=annotate_iw,
        x_label="initial window (segments)",
        claims=(IW_ROLE, IW_SAME),
    ),
    _figure(
        "fig12",
        "Page load time vs loss, large page, Reno with reduction factor r",
        "loss",
        LOSS,
        "large",
        "page_load_time_ms",
        quick_levels=("0%", "8%"),
        x_label="loss (%)",
        y_log=True,
        series=(*RENO, RENO_KERNEL),
        quick_series=(RENO[0].label, RENO[-1].label),
        finding="seed 000: for Reno, every r similar at low loss; a smaller reduction factor does better "
        "at high loss, larger ones taking longer as loss increases",
        annotate=annotate_reno,
        claims=(RENO_LOW_SAME, RENO_GROWS, RENO_HIGH_BETTER),
    ),
    _figure(
        "tiny",
        "Throughput vs loss, tiny page (objects under 1 KB; seed 000 has no figure)",
        "loss",
        LOSS,
        "tiny",
        "throughput_mbit",
        quick_levels=("0%", "6%"),
        quick_trials=2,
        finding=TINY_FINDING,
        claims=(TINY_SAME,),
        **BY_LOSS,
        **CONTROLLED,
    ),
)

# The derived figures results/reference keeps (netrepro.studykit.kept): seed 000's large page loaded in a
# browser instead of h2load, each judged by its figure's claims (docs/studies/web.md, seed 000's pages).
KEPT = (
    Kept(
        "fig6",
        {"client": "chromium"},
        "seed 000's large page loaded in Chromium instead of h2load, its page load times set beside h2load's "
        "in the same cells",
        (PLT_LOW_SAME, PLT_HIGH_BETTER, PLT_GROWS),
    ),
    Kept(
        "fig12",
        {"client": "chromium"},
        "seed 000's large page under Reno's reduction factors loaded in Chromium instead of h2load, beside "
        "h2load's in the same cells",
        (RENO_LOW_SAME, RENO_GROWS, RENO_HIGH_BETTER),
    ),
    Kept(
        "fig6",
        {"client": "firefox"},
        "seed 000 loaded its pages 'via web browser (Firefox)': its large page in Firefox ESR, seed 000's own "
        "browser, declared before its rows are measured",
        (PLT_LOW_SAME, PLT_HIGH_BETTER, PLT_GROWS),
    ),
    Kept(
        "fig12",
        {"client": "firefox"},
        "seed 000's large page under Reno's reduction factors in Firefox ESR, seed 000's own browser, declared "
        "before its rows are measured",
        (RENO_LOW_SAME, RENO_GROWS, RENO_HIGH_BETTER),
    ),
)
