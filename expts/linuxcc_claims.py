"""Study linuxcc's claims: seed 004's sentences, each with the test that decides it on the trials.

The figures that carry them, and the notes with the sentences no test here
can decide, are declared in expts/linuxcc.py.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence

from expts.linuxcc_trials import ALGORITHMS, SCENARIOS, drop_rate, drops_per_reduction, first_10s, mean_window
from ground.trials import Row
from netrepro.studykit import decisions
from netrepro.studykit.cells import Group
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import Better, ByDesign, Computed, Finding, Same
from netrepro.studykit.spec import Figure, Rows

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

RowMetric = Callable[[Row], float | None]
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


def pooled_rows(rows: Rows, metric: RowMetric) -> list[Row]:
    """One row per algorithm and trial index: `metric`'s mean over the four flows' trials of that index
    (column "value", series POOLED); an index some flow lacks is left out."""
    by: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        if not r.ok or r.series not in FLOWS:
            continue
        value = metric(r)
        if value is not None and math.isfinite(value):
            by.setdefault((r.cc, r.text("trial")), {})[r.series] = value
    return [
        Row(series=POOLED, cc=cc, trial=trial, status="ok", value=repr(sum(v.values()) / len(v)))
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
        out.append(decisions.joined(level, found))
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
        "tighter than the '80% same' it writes where it means less; Compound is not run",
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
