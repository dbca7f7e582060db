"""Study spdy (seed 003): a tunable CUBIC backoff for one HTTP/2 connection against six HTTP/1.1 ones.

The algorithm is netrepro's `cubic_plus` (seed 003's `cubic-spdy`): beta and
n give beta_effective = 1024 - (1024 - beta) / n.  `betatable` reads the
effective values back from the loaded algorithm; `conns` and `backoff` run
bulk downloads under loss, changing n between trials at run time without
reloading the algorithm, as seed 003's sysctls did.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from netrepro.plot import legend_beside, point_at
from netrepro.spec import Check, Figure, Point, Rows, Series

# The source, cited as far as its text gives authors, title and venue.
SOURCE = (
    'seed 003: "Modifying Kernel TCP for Better Congestion Control with SPDY", project report (its '
    "authors and venue are not given in the text)"
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
    "seed 003: six HTTP/1.1 connections barely suffer at 0.1 % loss, while one SPDY connection with default "
    "CUBIC loses about half its throughput; n = 6 recovers much of that at low loss; at 0.5 % and above the "
    "gain is small."
)
FINDING_BACKOFF = (
    "seed 003: under low loss a larger n raises throughput clearly; under high loss the gain is negligible."
)


def reference_table() -> list[dict[str, int]]:
    with open(REFERENCE, newline="") as f:
        return [
            {k: int(v) for k, v in row.items()}
            for row in csv.DictReader(line for line in f if not line.startswith("#"))
        ]


# -- betatable ----------------------------------------------------------------------


def annotate_betatable(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    ref = reference_table()
    for beta in (717, 512):
        ns = [r["n"] for r in ref if r["beta"] == beta]
        ax.plot(ns, [r["beta_effective"] for r in ref if r["beta"] == beta], "kx", ms=9, label=f"seed 003, beta {beta}")
    legend_beside(ax)
    impls = sorted({row.get("cc_impl", "") for row in rows})
    return [c.note for c in checks_betatable(fig, points, rows)] + [f"implementation: {', '.join(impls)}"]


def checks_betatable(fig: Figure, points: list[Point], rows: Rows) -> list[Check]:
    """Seed 003's table: every beta_effective and backoff rate read back from the kernel equals its row."""
    mismatches = []
    ref = reference_table()
    for r in ref:
        p = point_at(points, f"beta {r['beta']}", str(r["n"]))
        backoff = next(
            (
                row.get("backoff_pct")
                for row in rows
                if row["series"] == f"beta {r['beta']}" and row["n"] == str(r["n"])
            ),
            None,
        )
        if p is None or int(p.y) != r["beta_effective"] or backoff is None or int(backoff) != r["backoff_pct"]:
            mismatches.append(f"n={r['n']} beta={r['beta']}: ours {p.y if p else None}/{backoff}, "
                              f"seed 003 {r['beta_effective']}/{r['backoff_pct']}")  # fmt: skip
    claim = "seed 003's table of beta_effective and the backoff rate"
    if mismatches:
        return [Check(claim, False, "; ".join(mismatches), "DIFFERS from seed 003's table: " + "; ".join(mismatches))]
    note = f"all {len(ref)} rows equal seed 003's table (beta_effective and backoff rate, read back from the kernel)"
    return [Check(claim, True, f"all {len(ref)} rows equal", note)]


BETATABLE = Figure(
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
    judge=checks_betatable,
)


# -- conns and backoff -----------------------------------------------------------------


def checks_conns(fig: Figure, points: list[Point], rows: Rows) -> list[Check]:
    """Seed 003: at 0.1 % loss one HTTP/2 connection (n = 1) gets far less than six HTTP/1.1 ones (about
    50 %; taken as more than 20 % less), n = 6 less so; and n = 6's gain over n = 1 is small at 0.5 % and above."""
    checks = []
    h1 = point_at(points, "HTTP/1.1 x6, n=1", "0.1%")
    h2n1 = point_at(points, "HTTP/2 x1, n=1", "0.1%")
    h2n6 = point_at(points, "HTTP/2 x1, n=6", "0.1%")
    if h1 and h2n1 and h2n6:
        loss1 = 1 - h2n1.y / h1.y
        loss6 = 1 - h2n6.y / h1.y
        agree = loss1 > 0.2 and loss6 < loss1
        ours = (f"n = 1 gets {h2n1.y:.1f} Mbit/s against {h1.y:.1f} for six HTTP/1.1 connections "
                f"({loss1 * 100:.0f} % less); n = 6 gets {h2n6.y:.1f} ({loss6 * 100:.0f} % less)")  # fmt: skip
        note = (
            f"at 0.1 % loss one HTTP/2 connection with n = 1 gets {h2n1.y:.1f} Mbit/s against {h1.y:.1f} for six "
            f"HTTP/1.1 connections ({loss1 * 100:.0f} % less; seed 003: about 50 %); n = 6 gets {h2n6.y:.1f} "
            f"({loss6 * 100:.0f} % less): {'agrees' if agree else 'DISAGREES'} with seed 003"
        )
        checks.append(Check("one HTTP/2 connection loses to six HTTP/1.1 ones at 0.1 % loss, n = 6 less so",
                            agree, ours, note))  # fmt: skip
    return checks + high_loss_checks(fig, points, "HTTP/2 x1, n=1", "HTTP/2 x1, n=6")


def annotate_conns(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    return [c.note for c in checks_conns(fig, points, rows)] + high_loss_gains(
        fig, points, "HTTP/2 x1, n=1", "HTTP/2 x1, n=6", judged=False
    )


SMALL_GAIN = 0.15  # what we take "small" or "negligible" to mean: under 15 %


def _by_level(fig: Figure, points: list[Point], base: str, better: str) -> list[tuple[str, Check | None]]:
    """n = 6 against n = 1 at each loss level: its note, and at 0.5 % and above its check of seed 003's
    'small gain' (taken as under 15 %)."""
    found: list[tuple[str, Check | None]] = []
    for level in fig.levels:
        a, b = point_at(points, base, str(level)), point_at(points, better, str(level))
        if not (a and b) or str(level) == "0%":
            continue
        gain = b.y / a.y - 1
        if float(str(level).rstrip("%")) < 0.5:
            found.append((f"at {level} loss: n = 6 vs n = 1: {gain * 100:+.0f} %", None))
            continue
        small = gain < SMALL_GAIN
        note = (f"at {level} loss: n = 6 vs n = 1: {gain * 100:+.0f} % (seed 003: small at 0.5 % and above; "
                f"ours is {'small: agrees' if small else 'not small: DIFFERS'})")  # fmt: skip
        found.append((note, Check(f"n = 6 gains little over n = 1 at {level} loss", small, f"{gain * 100:+.0f} %",
                                  note)))  # fmt: skip
    return found


def high_loss_checks(fig: Figure, points: list[Point], base: str, better: str) -> list[Check]:
    return [c for _, c in _by_level(fig, points, base, better) if c is not None]


def high_loss_gains(fig: Figure, points: list[Point], base: str, better: str, judged: bool = True) -> list[str]:
    """The notes of `_by_level`; without the judged levels' (given as checks elsewhere) unless `judged`."""
    return [note for note, c in _by_level(fig, points, base, better) if judged or c is None]


CONNS = Figure(
    study="spdy",
    name="conns",
    title="Bulk throughput under loss: six HTTP/1.1 connections vs one HTTP/2 connection, n = 1 and 6",
    workload="bulk",
    x="loss",
    levels=("0%", "0.1%", "0.5%", "1%", "2%"),
    y="throughput_mbit",
    fixed={**BULK, "cc": "cubic_plus"},
    series=(
        Series("HTTP/1.1 x6, n=1", {"protocol": "http/1.1", "n": 1}),
        Series("HTTP/1.1 x6, n=6", {"protocol": "http/1.1", "n": 6}),
        Series("HTTP/2 x1, n=1", {"protocol": "h2c", "n": 1}),
        Series("HTTP/2 x1, n=6", {"protocol": "h2c", "n": 6}),
    ),
    trials=5,
    quick_levels=("0.1%", "1%"),
    quick_trials=1,  # the full run's five trials per point agree within 5 % (seeded loss)
    quick_series=("HTTP/1.1 x6, n=1", "HTTP/2 x1, n=1", "HTTP/2 x1, n=6"),
    x_label="loss, server to client (%)",
    y_label="throughput (Mbit/s)",
    finding=FINDING_CONNS,
    deviations=DEVIATIONS,
    annotate=annotate_conns,
    judge=checks_conns,
    trial_timeout=lambda params: 120.0,
)


def annotate_backoff(fig: Figure, points: list[Point], rows: Rows, ax: Any) -> list[str]:
    return high_loss_gains(fig, points, "n=1", "n=6")


def checks_backoff(fig: Figure, points: list[Point], rows: Rows) -> list[Check]:
    return high_loss_checks(fig, points, "n=1", "n=6")


BACKOFF = Figure(
    study="spdy",
    name="backoff",
    title="One HTTP/2 connection's bulk throughput vs loss, one line per n (cubic_plus)",
    workload="bulk",
    x="loss",
    levels=("0.1%", "0.2%", "0.5%", "1%", "2%"),
    y="throughput_mbit",
    fixed={**BULK, "cc": "cubic_plus", "protocol": "h2c"},
    series=tuple(Series(f"n={n}", {"n": n}) for n in range(1, 7)),
    trials=5,
    quick_levels=("0.1%", "1%"),
    quick_trials=1,
    quick_series=("n=1", "n=6"),
    x_label="loss, server to client (%)",
    y_label="throughput (Mbit/s)",
    finding=FINDING_BACKOFF,
    deviations=DEVIATIONS,
    annotate=annotate_backoff,
    judge=checks_backoff,
    trial_timeout=lambda params: 120.0,
)

FIGURES = (BETATABLE, CONNS, BACKOFF)
