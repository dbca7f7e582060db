"""Study spdy's claims, on synthetic trials whose truth is known, and on the stored reference rows.

The table's read-back is an exact check of the lab; the throughput claims
compare a series at 0.1 % loss with itself without loss (levels of the x
factor as groups), a ratio with the source's "50%", and n = 6 with n = 1.
"""

from __future__ import annotations

import random

from expts import spdy
from ground.results import REFERENCE
from ground.trials import Row, latest_rows, read_rows
from netrepro.studykit import claims
from netrepro.studykit.decisions import DIFFERS, HOLDS, UNDECIDED
from netrepro.studykit.spec import Figure


def trials(series: str, loss: str, mean: float, sd: float, n: int, seed: int) -> list[Row]:
    rng = random.Random(seed)
    n_param = series.rsplit("n=", 1)[-1]
    return [
        Row(series=series, loss=loss, n=n_param, status="ok", throughput_mbit=str(rng.gauss(mean, sd)))
        for _ in range(n)
    ]


def claim(fig: Figure, words: str) -> claims.Claim:
    (found,) = [c for c in fig.claims if words in c.quote]
    return found


def outcome(fig: Figure, words: str, rows: list[Row]) -> claims.Judged:
    return claims.judge([claim(fig, words)], fig, rows)[0]


# -- betatable: an exact check of the lab ---------------------------------------------------------------


def table_rows(change: dict[tuple[int, int], int] | None = None) -> list[Row]:
    change = change or {}
    return [
        Row(
            series=f"beta {entry['beta']}",
            beta=str(entry["beta"]),
            n=str(entry["n"]),
            status="ok",
            beta_effective=str(change.get((entry["beta"], entry["n"]), entry["beta_effective"])),
            backoff_pct=str(entry["backoff_pct"]),
            rtt_scaled_in_use="0",
        )
        for entry in spdy.reference_table()
    ]


def test_the_table_read_back_equal_holds_and_one_wrong_value_differs_naming_it() -> None:
    fig = spdy.BETATABLE
    assert outcome(fig, "The table lists", table_rows()).outcome == HOLDS
    wrong = outcome(fig, "The table lists", table_rows({(717, 3): 921}))
    assert wrong.outcome == DIFFERS and "beta 717 n 3: ours 921/90" in wrong.evidence()
    assert outcome(fig, "The table lists", []).outcome == UNDECIDED


def test_a_partial_read_back_says_which_rows_were_not_run() -> None:
    found = spdy.table_equal(spdy.BETATABLE, table_rows()[:5])
    assert found is not None and found[0] and "5 of the 12 rows" in found[1] and "not run" in found[1]


def test_n_1_is_plain_cubic() -> None:
    fig = spdy.BETATABLE
    assert outcome(fig, "special case", table_rows()).outcome == HOLDS
    assert outcome(fig, "special case", table_rows({(512, 1): 600})).outcome == DIFFERS
    scaled = [Row({**r, "rtt_scaled_in_use": "1"}) for r in table_rows()]
    assert outcome(fig, "special case", scaled).outcome == DIFFERS


# -- conns ------------------------------------------------------------------------------------------------


def http(at_0: float, at_01: float, sd: float = 0.5) -> list[Row]:
    rows = []
    for i, series in enumerate((spdy.H1, spdy.H6)):
        rows += trials(series, "0%", at_0, sd, 5, 4 * i) + trials(series, "0.1%", at_01, sd, 5, 4 * i + 1)
    return rows


def test_http_does_not_suffer_is_an_equivalence_of_each_http_series_with_itself_without_loss() -> None:
    words = "HTTP performance does not suffer"
    held = outcome(spdy.CONNS, words, http(94, 93.5))
    assert held.outcome == HOLDS
    assert [f.at for f in held.findings] == [f"{spdy.H1}: 0% -> 0.1%", f"{spdy.H6}: 0% -> 0.1%"]
    assert outcome(spdy.CONNS, words, http(94, 80)).outcome == DIFFERS  # 15 % less: it suffers
    assert outcome(spdy.CONNS, words, http(94, 94, sd=8)).outcome == UNDECIDED  # too noisy for 5 %
    quick = [r for r in http(94, 93.5) if r["loss"] != "0%"]  # a quick run has no loss-free level
    assert outcome(spdy.CONNS, words, quick).outcome == UNDECIDED


def spdy_halved(ratio: float) -> list[Row]:
    return trials(spdy.S1, "0%", 93, 1, 5, 1) + trials(spdy.S1, "0.1%", 93 * ratio, 1, 5, 2)


def test_spdy_suffers_a_lot_means_about_half() -> None:
    assert outcome(spdy.CONNS, "suffers a lot", spdy_halved(0.5)).outcome == HOLDS
    assert outcome(spdy.CONNS, "suffers a lot", spdy_halved(0.75)).outcome == DIFFERS
    assert outcome(spdy.CONNS, "suffers a lot", spdy_halved(0.3)).outcome == DIFFERS  # more than "50%"


def test_the_backoff_helps_under_low_loss_and_not_considerably_under_high() -> None:
    rows = trials(spdy.S1, "0.1%", 48, 1, 5, 1) + trials(spdy.S6, "0.1%", 93, 1, 5, 2)
    for i, loss in enumerate(spdy.HIGH):
        rows += trials(spdy.S1, loss, 18, 0.3, 5, 10 + i) + trials(spdy.S6, loss, 18.5, 0.3, 5, 20 + i)
    assert outcome(spdy.CONNS, "we observe the throughput increase", rows).outcome == HOLDS
    assert outcome(spdy.CONNS, "not considerable", rows).outcome == HOLDS
    doubled = [
        Row({**r, "throughput_mbit": str(2 * float(r["throughput_mbit"]))}) if r["series"] == spdy.S6 else r
        for r in rows
    ]
    assert outcome(spdy.CONNS, "not considerable", doubled).outcome == DIFFERS


# -- backoff ----------------------------------------------------------------------------------------------


def by_n(loss: str, means: dict[int, float], seed: int, sd: float = 0.5) -> list[Row]:
    return [r for n, mean in means.items() for r in trials(f"n={n}", loss, mean, sd, 5, seed + n)]


def test_an_obvious_increase_under_low_loss_rises_over_every_n() -> None:
    rising = by_n("0.1%", {n: 40 + 10 * n for n in spdy.NS}, 0)
    found = outcome(spdy.BACKOFF, "the throughput increase is obvious", rising)
    steps = [f"0.1%, n {n} -> {n + 1}" for n in spdy.NS[:-1]]
    assert found.outcome == HOLDS and [f.at for f in found.findings] == [*steps, "0.1%"]
    # n = 6 well above n = 1, but the middle n fall: no rise over all of them
    dip = by_n("0.1%", {1: 50, 2: 90, 3: 80, 4: 60, 5: 55, 6: 60}, 0)
    assert outcome(spdy.BACKOFF, "the throughput increase is obvious", dip).outcome == DIFFERS


def test_a_negligible_increase_under_high_loss_is_every_n_alike() -> None:
    flat = [r for i, loss in enumerate(spdy.HIGH) for r in by_n(loss, dict.fromkeys(spdy.NS, 18.0), 10 * i, sd=0.2)]
    assert outcome(spdy.BACKOFF, "negligible", flat).outcome == HOLDS
    rising = [r for i, loss in enumerate(spdy.HIGH) for r in by_n(loss, {n: 18 + 2 * n for n in spdy.NS}, 10 * i)]
    assert outcome(spdy.BACKOFF, "negligible", rising).outcome == DIFFERS


# -- the declared claims on the stored rows (test_verdicts.py judges every figure's on none and on a quick run's)


def stored(fig: Figure) -> list[Row]:
    path = REFERENCE / fig.directory / fig.csv_name
    return latest_rows(read_rows(path)) if path.exists() else []


def test_the_stored_table_reads_back_equal_and_is_a_check_not_a_finding() -> None:
    judged = claims.judge(spdy.BETATABLE.claims, spdy.BETATABLE, stored(spdy.BETATABLE))
    verdict = claims.verdict(judged)
    assert verdict["verdict"] == "unjudged" and verdict["claims"] == []  # a read-back counts in no verdict
    assert [c["outcome"] for c in verdict["checks"]] == [HOLDS, HOLDS]
