"""Study spdy (seed 003): a tunable CUBIC backoff for one HTTP/2 connection against six HTTP/1.1 ones.

The algorithm is netrepro's `cubic_plus` (seed 003's `cubic-spdy`): beta and
n give beta_effective = 1024 - (1024 - beta) / n.  `betatable` reads the
effective values back from the loaded algorithm; `conns` and `backoff` run
bulk downloads under loss, changing n between trials at run time without
reloading the algorithm, as seed 003's sysctls did.

Each figure's verdict comes from its claims (`Figure.claims`): seed 003's
own sentences, quoted, each with the test that decides it on the trials.
The table's values read back from the kernel are a check of the lab (the
module computes them from the parameters written to it); the throughput
figures' words ("does not suffer", "a lot (50%)", "not considerable") get
the margins declared below.  Claims comparing a series at 0.1 % loss with
itself without loss compare levels of the x factor as groups
(`claims.Regrouped`).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from ground.trials import Row
from netrepro.studykit.cells import Group
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import AllOf, Better, Exact, Regrouped, Same, Trend, Within
from netrepro.studykit.kept import Kept
from netrepro.studykit.plot import legend_beside, point_at
from netrepro.studykit.spec import Figure, Point, Rows, Series
from netrepro.studykit.variation import Variation

# The source, cited as far as its text gives authors, title and venue.
SOURCE = (
    'seed 003: "Modifying Kernel TCP for Better Congestion Control with SPDY", project report (its '
    "authors and venue are not given in the text)"
)

SEED = "003_c351a2149132de73.txt"  # its text, in the sources' folder (tests/unit/test_claim_quotes.py)

# What this study's paths vary from trial to trial beyond the start phase (netrepro.studykit.variation,
# docs/studies/spdy.md, "What varies"): why that much, from the source's description of its network.
VARIATION = Variation.of(
    "0.1ms",
    (
        "seed 003 ran two virtual machines with tc's loss and no latency or bandwidth limit (here 100 Mbit/s, 10 "
        "ms); +-0.1 ms, a virtual machine's scheduling, is within one bottleneck service time at 100 Mbit/s (0.12"
        " ms), as the lab keeps jitter (docs/lab.md), and 1 % of the RTT"
    ),
)

REFERENCE = Path(__file__).resolve().parent / "reference" / "spdy_beta_table.csv"

# Seed 003 had no rate limit and no added delay (two VMs, about 5 Gbit/s), a
# 1 GB file and h2load.  On a 2-core machine: 100 Mbit/s, RTT 10 ms, a
# fixed-duration download.
PATH = {"rtt": "10ms", "rate": "100mbit", "queue": "1000p"}
DEVIATIONS = (
    "path: 100 Mbit/s and RTT 10 ms (seed 003: unshaped, about 5 Gbit/s between two VMs, no added delay)",
    "a 10 s fixed-duration download of a repeated 20 MB object (seed 003: one 1 GB file)",
    "HTTP/2 over cleartext (h2c) with h2load for both protocols; HTTP/1.1 as six h2load connections "
    "(seed 003: SPDY/3 via mod_spdy without TLS, and a multi-threaded HTTP client)",
    "the HTTP/2 client's windows raised to 2^30 - 1 and the client's TCP receive buffer six-fold "
    "(seed 003: the receive window raised six-fold)",
)
BULK: dict[str, Any] = {
    **PATH,
    "duration_s": 10,
    "object_bytes": 20_000_000,
    "receive_buffer": 6 * 6_291_456,  # six times Linux's default tcp_rmem maximum
}

FINDING_CONNS = (
    "seed 003: HTTP over six connections does not suffer under 0.1 % loss, one SPDY connection with default "
    "CUBIC suffers a lot (50 %); n = 6 raises its throughput under low loss, not considerably at 0.5 % and above."
)
FINDING_BACKOFF = (
    "seed 003: under low loss the throughput increase with n is obvious; under high loss it is negligible."
)


def reference_table() -> list[dict[str, int]]:
    with open(REFERENCE, newline="") as f:
        return [
            {k: int(v) for k, v in entry.items()}
            for entry in csv.DictReader(line for line in f if not line.startswith("#"))
        ]


# -- betatable ----------------------------------------------------------------------


def annotate_betatable(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    ref = reference_table()
    for beta in (717, 512):
        ns = [entry["n"] for entry in ref if entry["beta"] == beta]
        effective = [entry["beta_effective"] for entry in ref if entry["beta"] == beta]
        ax.plot(ns, effective, "kx", ms=9, label=f"seed 003, beta {beta}")
    legend_beside(ax)
    impls = sorted({row.cc_impl for row in rows})
    return [f"implementation: {', '.join(impls)}"]


def _int(text: str | None) -> int | None:
    try:
        return int(float(text)) if text else None
    except ValueError:
        return None


def read_back(rows: Rows) -> dict[tuple[int | None, int | None], Row]:
    """The trials' rows by (beta, n): what the loaded algorithm reported for them."""
    return {(_int(r.text("beta")), _int(r.text("n"))): r for r in rows if r.ok}


def table_equal(fig: Figure, rows: Rows) -> tuple[bool, str] | None:
    """Every row of seed 003's table read back as it prints it: beta_effective and the backoff rate."""
    got = read_back(rows)
    if not got:
        return None
    ref = reference_table()
    mismatches, missing = [], []
    for entry in ref:
        row = got.get((entry["beta"], entry["n"]))
        if row is None:
            missing.append(f"beta {entry['beta']} n {entry['n']}")
            continue
        ours = (_int(row.text("beta_effective")), _int(row.text("backoff_pct")))
        if ours != (entry["beta_effective"], entry["backoff_pct"]):
            mismatches.append(
                f"beta {entry['beta']} n {entry['n']}: ours {ours[0]}/{ours[1]} %, seed 003 "
                f"{entry['beta_effective']}/{entry['backoff_pct']} %"
            )
    read = len(ref) - len(missing)
    text = f"{read - len(mismatches)} of the {len(ref)} rows read back equal to the table (beta_effective/backoff)"
    text += "".join(f"; {m}" for m in mismatches) + (f"; not run: {', '.join(missing)}" if missing else "")
    return not mismatches, text


def plain_cubic_at_n1(fig: Figure, rows: Rows) -> tuple[bool, str] | None:
    """At n = 1 the effective beta is beta itself (CUBIC's 717 by default) and the RTT-scaled K is off."""
    ones = [(b, r) for (b, n), r in read_back(rows).items() if n == 1 and b is not None]
    if not ones:
        return None
    parts, holds = [], True
    for beta, row in sorted(ones, key=lambda kv: kv[0]):
        effective, scaled = _int(row.text("beta_effective")), _int(row.text("rtt_scaled_in_use")) or 0
        holds &= effective == beta and scaled == 0
        parts.append(f"beta {beta}: beta_effective {effective}" + (f", RTT-scaled K {scaled}" if scaled else ""))
    return holds, "n = 1: " + "; ".join(parts)


SECTION_TABLE = "section 3.1, Parameters, its table"
LAB_CHECK = (
    "a check of the lab, not of a finding: the loaded cubic_plus computes its values from the beta and n written "
    "to it, as seed 003's module did by the formula of section 3.1 (integer arithmetic); the values read back "
    "equal to the table show our module computes what the source's did"
)

BETATABLE_CLAIMS = (
    Claim(
        SEED,
        SECTION_TABLE,
        "The table lists produced backoff rate by different combinations of n and *beta*.",
        Exact("beta_effective and the backoff rate read back for each (beta, n), equal to the table's", table_equal),
        LAB_CHECK + "; all twelve rows, beta_effective and the backoff rate (a whole percent, truncated)",
        check=True,
    ),
    Claim(
        SEED,
        SECTION_TABLE,
        "Notice that default *cubic* is a special case of *cubic-spdy* when $n = 1$.",
        Exact("at n = 1, beta_effective read back equal to beta, and the RTT-scaled K off", plain_cubic_at_n1),
        LAB_CHECK + "; at n = 1 the backoff is CUBIC's own (beta_effective = beta, 717 being CUBIC's default) and "
        "cubic_plus's one other change, the RTT-scaled K of the cubicplus study, is off",
        check=True,
    ),
)

BETATABLE = Figure(
    variation=VARIATION,
    study="spdy",
    name="betatable",
    title="beta_effective of cubic_plus for n = 1..6, read back from the loaded algorithm",
    workload="readback",
    x="n",
    levels=(1, 2, 3, 4, 5, 6),
    y="beta_effective",
    fixed={**PATH, "cc": "cubic_plus"},
    series=(Series("beta 717", {"beta": 717}), Series("beta 512", {"beta": 512})),
    trials=1,
    quick_trials=1,
    x_label="n (parallel connections one connection stands for)",
    y_label="beta_effective (1/1024)",
    finding="seed 003, section 3.1: beta_effective = 1024 - (1024 - beta) / n; its table of the twelve values",
    annotate=annotate_betatable,
    claims=BETATABLE_CLAIMS,
)


# -- conns and backoff -----------------------------------------------------------------

# The source's words on throughput, on the scale of the one size it gives: SPDY "suffers a lot (50%)".
NOT_SUFFER = 0.05  # "does not suffer", "negligible": within a tenth of that 50 %
CONSIDERABLE = 0.10  # "considerable", "obvious", "we observe the throughput increase": a fifth of it, twice the above
ABOUT = 0.05  # a percentage the source gives rounded to tens, read off its figure: +- 5 points
LOW, HIGH = ("0.1%",), ("0.5%", "1%", "2%")  # section 4.2's "low (0.1%)" and "high ($\geq 0.5\%$)"
H1, H6, S1, S6 = "HTTP/1.1 x6, n=1", "HTTP/1.1 x6, n=6", "HTTP/2 x1, n=1", "HTTP/2 x1, n=6"
THROUGHPUT = "throughput, one value per trial (a 10 s download)"
SECTION_CONNS = "section 4.2, HTTP vs. SPDY, its figure"
SECTION_BACKOFF = "section 4.3, Different Backoff Rate, its figure"


def at_loss(series: str, loss: str) -> Group:
    """One series' trials at one loss (the figure's x), as a group (named by both)."""
    return Group(where={"series": series, "loss": loss})


def without_loss_and_at(series: str, loss: str = "0.1%") -> Same:
    return Same("throughput_mbit", (at_loss(series, "0%"), at_loss(series, loss)), margin=NOT_SUFFER)


def gains_note(fig: Figure, points: list[Point], base: str, better: str) -> list[str]:
    """n = 6 against n = 1 at each loss, in median throughput: context beside the claims' numbers."""
    found = []
    for level in fig.levels:
        a, b = point_at(points, base, str(level)), point_at(points, better, str(level))
        if a and b and a.y > 0 and str(level) != "0%":
            found.append(f"{b.y / a.y - 1:+.0%} at {level}")
    return [f"{better} against {base}, median throughput: " + ", ".join(found)] if found else []


CONNS_CLAIMS = (
    Claim(
        SEED,
        SECTION_CONNS,
        "The figure indicates that HTTP performance does not suffer under low (0.1%) packet loss.",
        AllOf(
            (
                Regrouped(without_loss_and_at(H1), f"{H1}: 0% -> 0.1%"),
                Regrouped(without_loss_and_at(H6), f"{H6}: 0% -> 0.1%"),
            )
        ),
        f"{THROUGHPUT}; HTTP as the six HTTP/1.1 connections, with n = 1 and with n = 6, each at 0.1 % loss against "
        f"itself without loss (levels of the figure's x compared as groups): 'does not suffer' as within "
        f"{NOT_SUFFER:.0%}, a tenth of the 50 % the next sentence calls suffering 'a lot'",
    ),
    Claim(
        SEED,
        SECTION_CONNS,
        "But SPDY connection with default cubic suffers a lot (50%).",
        Regrouped(
            Within("throughput_mbit", at_loss(S1, "0.1%"), at_loss(S1, "0%"), 0.5 - ABOUT, 0.5 + ABOUT),
            f"{S1}: 0% -> 0.1%",
        ),
        f"{THROUGHPUT}; one HTTP/2 connection with n = 1 (CUBIC's own backoff) under the low loss of the sentence "
        "before (0.1 %) against itself without loss: '50%' as its throughput halved, a number rounded to tens and "
        f"read off a figure, so the ratio within {0.5 - ABOUT:.2f} to {0.5 + ABOUT:.2f}",
    ),
    Claim(
        SEED,
        SECTION_CONNS,
        "When we increase the backoff rate from default 70% ($n = 1$) to 95% ($n = 6$), we observe the throughput "
        "increase under low packet loss.",
        Better("throughput_mbit", S6, S1, higher=True, levels=LOW, worth=CONSIDERABLE),
        f"{THROUGHPUT}; the one HTTP/2 connection the backoff is for, n = 6 against n = 1, at the source's 'low "
        f"(0.1%)': an increase one observes worth {CONSIDERABLE:.0%}, what the next sentence's 'considerable' takes",
    ),
    Claim(
        SEED,
        SECTION_CONNS,
        "While under high packet loss ($\\geq 0.5\\%$), the throughput increase is not considerable.",
        Same("throughput_mbit", (S1, S6), margin=CONSIDERABLE, levels=HIGH),
        f"{THROUGHPUT}; the HTTP/2 connection, n = 6 against n = 1, at 0.5, 1 and 2 % loss: 'not considerable' as "
        f"within {CONSIDERABLE:.0%} (a fifth of the 50 % the source calls 'a lot'); an equivalence, so a fall of "
        "more than that would count against it too",
    ),
    Claim(
        SEED,
        "section 1, Introduction",
        "it degrades under high loss because its congestion window is reduced aggressively compared to HTTP",
        Better("throughput_mbit", H1, S1, higher=True, levels=HIGH, worth=CONSIDERABLE),
        f"{THROUGHPUT}; the effect: at the high losses of section 4.2 (0.5 % and above) one HTTP/2 connection "
        f"below six HTTP/1.1 ones, both with CUBIC's own backoff (n = 1), a fall worth {CONSIDERABLE:.0%}; the "
        "cause it gives, the window cut on a loss, is the algorithm's (the betatable figure), not a measurement",
    ),
)


def annotate_conns(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    return gains_note(fig, points, S1, S6)


CONNS = Figure(
    variation=VARIATION,
    study="spdy",
    name="conns",
    title="Bulk throughput under loss: six HTTP/1.1 connections vs one HTTP/2 connection, n = 1 and 6",
    workload="bulk",
    x="loss",
    levels=("0%", "0.1%", "0.5%", "1%", "2%"),
    y="throughput_mbit",
    fixed={**BULK, "cc": "cubic_plus"},
    series=(
        Series(H1, {"protocol": "http/1.1", "n": 1}),
        Series(H6, {"protocol": "http/1.1", "n": 6}),
        Series(S1, {"protocol": "h2c", "n": 1}),
        Series(S6, {"protocol": "h2c", "n": 6}),
    ),
    trials=5,
    quick_levels=("0.1%", "1%"),
    quick_trials=1,  # the full run's five trials per point agree within 5 % (seeded loss)
    quick_series=(H1, S1, S6),
    x_label="loss, server to client (%)",
    y_label="throughput (Mbit/s)",
    finding=FINDING_CONNS,
    deviations=DEVIATIONS,
    annotate=annotate_conns,
    claims=CONNS_CLAIMS,
    trial_timeout=lambda trial: 120.0,
)

NS = (1, 2, 3, 4, 5, 6)

BACKOFF_CLAIMS = (
    Claim(
        SEED,
        SECTION_BACKOFF,
        "Again under low packet loss, the throughput increase is obvious.",
        AllOf(
            (
                Regrouped(Trend("throughput_mbit", Group(where={"loss": "0.1%"}), rises=True), "0.1%, n {}", "n", NS),
                Better("throughput_mbit", "n=6", "n=1", higher=True, levels=LOW, worth=CONSIDERABLE),
            )
        ),
        f"{THROUGHPUT}; 'low' as section 4.2's 'low (0.1%)' (0.2 % the source classes neither low nor high): the "
        "throughput rising with n over all six n (n as the levels), and n = 6 above n = 1, 'obvious' worth "
        f"{CONSIDERABLE:.0%}: at least what section 4.2 calls considerable",
    ),
    Claim(
        SEED,
        SECTION_BACKOFF,
        "Under high packet loss, the increase is negligible.",
        Same("throughput_mbit", tuple(f"n={n}" for n in NS), margin=NOT_SUFFER, levels=HIGH),
        f"{THROUGHPUT}; 'high' as section 4.2's '$\\geq 0.5\\%$': at 0.5, 1 and 2 % every n within "
        f"{NOT_SUFFER:.0%} of n = 1, 'negligible' as 'does not suffer' in section 4.2 (a tenth of its 'a lot')",
    ),
)


def annotate_backoff(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    return gains_note(fig, points, "n=1", "n=6")


BACKOFF = Figure(
    variation=VARIATION,
    study="spdy",
    name="backoff",
    title="One HTTP/2 connection's bulk throughput vs loss, one line per n (cubic_plus)",
    workload="bulk",
    x="loss",
    levels=("0.1%", "0.2%", "0.5%", "1%", "2%"),
    y="throughput_mbit",
    fixed={**BULK, "cc": "cubic_plus", "protocol": "h2c"},
    series=tuple(Series(f"n={n}", {"n": n}) for n in NS),
    trials=5,
    quick_levels=("0.1%", "1%"),
    quick_trials=1,
    quick_series=("n=1", "n=6"),
    x_label="loss, server to client (%)",
    y_label="throughput (Mbit/s)",
    finding=FINDING_BACKOFF,
    deviations=DEVIATIONS,
    annotate=annotate_backoff,
    claims=BACKOFF_CLAIMS,
    trial_timeout=lambda trial: 120.0,
)

FIGURES = (BETATABLE, CONNS, BACKOFF)
# The derived figures results/reference keeps (netrepro.studykit.kept): none of this study's.
KEPT: tuple[Kept, ...] = ()
