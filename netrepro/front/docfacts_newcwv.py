"""Study newcwv's numbers on docs/studies/newcwv.md, computed from its stored rows (netrepro.front.docrows).

Each run's trials, commit and failed attempts; the gains by burst size and idle period, with and without
congestion; table2's losses; the pacing runs, declared and derived.  netrepro.front.docnumbers gathers
them with the other studies' facts.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence

from ground.manifests import read_manifest
from ground.trials import Row
from ground.units import parse_duration
from netrepro.front.docrows import Facts, Stored, change, figure_facts, levels, mean, ms, pct, table, values, where

NEWCWV_RUNS = (
    ("newcwv/fig5", "newcwv.fig5"),
    ("newcwv/fig7", "newcwv.fig7"),
    ("newcwv/fig8", "newcwv.fig8"),
    ("newcwv/table2", "newcwv.table2"),
    ("newcwv/pacing", "newcwv.pacing"),
    ("newcwv/pacing@idle_s=5/pacing", "newcwv.pacing_idle5"),
    ("newcwv/pacing@jitter=3ms/pacing", "newcwv.pacing_jitter"),
    ("newcwv/pacing@idle_s=5+jitter=3ms/pacing", "newcwv.pacing_idle5_jitter"),
    # the twins without variation: the rows of af4479f, the delay line's timing exact
    ("newcwv/pacing@variation=none/pacing", "newcwv.pacing_none"),
    ("newcwv/pacing@idle_s=5+variation=none/pacing", "newcwv.pacing_idle5_none"),
)
BASE, CWV, KEEP, PACED = "NewReno+SACK", "newCWV", "Reno, no restart", "newCWV, paced"


def _per_burst(rows: Iterable[Row], column: str) -> list[float]:
    """Every burst's value of a column that lists one a burst (`14;17;9`), over the rows, in order."""
    return [float(v) for r in rows for v in r.text(column).split(";") if v.strip()]


def _span(found: Sequence[float], show: Callable[[float], str] = lambda v: f"{v:.0f}") -> str:
    """`a to b`, or the one value where all are equal."""
    low, high = show(min(found)), show(max(found))
    return low if low == high else f"{low} to {high}"


def _mean_se(found: Sequence[float], show: Callable[[float], str]) -> str:
    """The mean ± its standard error over trials (scipy.stats.sem)."""
    from scipy import stats

    return f"{show(statistics.fmean(found))} ± {show(float(stats.sem(found)))}"


def _by_idle(row: Row, column: str = "burst_ms") -> dict[float, float]:
    """A trial's value after each idle period (the mean, for a period it ran more than once)."""
    by: dict[float, list[float]] = {}
    for idle, value in zip(_per_burst([row], "idle_s"), _per_burst([row], column), strict=True):
        by.setdefault(idle, []).append(value)
    return {idle: statistics.fmean(v) for idle, v in by.items()}


def _cell_gains(rows: Sequence[Row], arm: str) -> dict[tuple[str, float], float]:
    """The gain (Tr - Tc) / Tr x 100 of `arm` over NewReno+SACK in each cell of burst size and idle period,
    between the two arms' mean burst times over trials."""
    out = {}
    for kb in levels(rows, "burst_kb"):
        means = []
        for series in (BASE, arm):
            per = [_by_idle(r) for r in where(rows, burst_kb=kb, series=series)]
            means.append(
                {t: statistics.fmean(p[t] for p in per if t in p) for t in sorted({t for p in per for t in p})}
            )
        for idle, base in means[0].items():
            if idle in means[1]:
                out[(kb, idle)] = -change(base, means[1][idle])
    return out


def _share(part: float, whole: float) -> str:
    """part of whole in per cent: one decimal under 10 %."""
    share = part / whole * 100
    return f"{share:.1f} %" if share < 10 else f"{share:.0f} %"


def _numbers(found: Sequence[str]) -> str:
    return ", ".join(found[:-1]) + " and " + found[-1] if len(found) > 1 else "".join(found)


def _newcwv_runs(stored: Stored) -> Facts:
    """Each stored run's trials, commit, trial time and failed attempts (its manifest's)."""
    facts: Facts = {}
    for name, prefix in NEWCWV_RUNS:
        facts |= figure_facts(stored, name, prefix)
        seconds = sum(r.trial_seconds or 0.0 for r in stored.rows(name))
        facts[f"{prefix}.seconds"] = f"{seconds:.0f} s"
        doc = read_manifest(stored.tree / f"{name}.manifest.json").doc
        failed = doc.get("failed_attempts") or 0
        facts[f"{prefix}.failed"] = str(len(failed) if isinstance(failed, list) else int(failed))
    return facts


def _newcwv_fig5(stored: Stored) -> Facts:
    rows = stored.rows("newcwv/fig5")
    series = sorted({r.series for r in rows})
    body = []
    for kb in levels(rows, "burst_kb"):
        for s in series:
            body.append(
                [
                    f"{kb} KB",
                    s,
                    str(len(where(rows, burst_kb=kb, series=s))),
                    f"{mean(rows, 'pipeack_cv', burst_kb=kb, series=s):.2f}",
                    f"{mean(rows, 'max_cwnd', burst_kb=kb, series=s):.0f}",
                    f"{mean(rows, 'growth_nonvalidated_share', burst_kb=kb, series=s):.2f}",
                ]
            )
    head = ["bursts", "pipeACK", "trials", "pipeACK's CV", "largest cwnd", "share non-validated while cwnd grew"]
    return {"newcwv.fig5.table": table(head, body)}


def _newcwv_uncongested(stored: Stored) -> Facts:
    rows = stored.rows("newcwv/fig7")
    facts: Facts = {"newcwv.fig7.retransmitted": f"{sum(_per_burst(rows, 'retransmitted')):.0f}"}
    base80 = where(rows, series=BASE, burst_kb="80")
    after1 = [
        c
        for r in base80
        for t, c in zip(_per_burst([r], "idle_s"), _per_burst([r], "cwnd_resumed"), strict=True)
        if t == 1
    ]
    facts["newcwv.fig7.base80_1s"] = f"{max(after1):.0f}"
    facts["newcwv.fig7.base80_ms"] = _span(_per_burst(base80, "burst_ms"))
    for kb in ("40", "80"):
        facts[f"newcwv.fig7.cwnd{kb}"] = _span(_per_burst(where(rows, series=CWV, burst_kb=kb), "cwnd_resumed"))
        facts[f"newcwv.fig7.keep{kb}"] = _span(_per_burst(where(rows, series=KEEP, burst_kb=kb), "cwnd_resumed"))
    large = [*where(rows, series=CWV, burst_kb="40"), *where(rows, series=CWV, burst_kb="80")]
    facts["newcwv.fig7.bursts4080"] = str(len(_per_burst(large, "burst_ms")))
    facts["newcwv.fig7.ms4080"] = _span(_per_burst(large, "burst_ms"))
    rtt_ms = parse_duration(large[0].text("rtt")).ms if large else 0.0
    one_round = sum(1 for ms in _per_burst(large, "burst_ms") if ms < 1.5 * rtt_ms)  # within 1.5 RTTs
    facts["newcwv.fig7.one_round4080"] = f"{one_round} of {len(_per_burst(large, 'burst_ms'))}"
    spread = max(
        max(v) - min(v)
        for kb in levels(rows, "burst_kb")
        for s in (BASE, CWV, KEEP)
        if (v := values(rows, "mean_burst_ms", burst_kb=kb, series=s))
    )
    facts["newcwv.fig7.spread"] = f"{spread:.1f} ms"
    return facts


def _added(rows: Sequence[Row]) -> str:
    """What newCWV's gain adds to Reno without the restart's, in points, per burst size."""
    found = []
    for kb in levels(rows, "burst_kb"):
        base, cwv, keep = (mean(rows, "mean_burst_ms", burst_kb=kb, series=s) for s in (BASE, CWV, KEEP))
        found.append(f"{round(change(base, keep) - change(base, cwv)):d}")
    return _numbers(found)


def _newcwv_congested(stored: Stored) -> Facts:
    rows = stored.rows("newcwv/fig8")
    facts: Facts = {"newcwv.fig7.added": _added(stored.rows("newcwv/fig7")), "newcwv.fig8.added": _added(rows)}
    small = [r for r in rows if int(r.text("burst_kb")) <= 20]
    facts["newcwv.fig8.lost_small"] = f"{sum(_per_burst(small, 'retransmitted')):.0f}"
    kept = [r for r in rows if r.series in (CWV, KEEP) and r.text("burst_kb") in ("40", "80")]
    bursts = [
        (c, x)
        for r in kept
        for c, x in zip(_per_burst([r], "cwnd_resumed"), _per_burst([r], "retransmitted"), strict=True)
    ]
    over = [x for c, x in bursts if c > 20]
    under = [x for c, x in bursts if c <= 20]
    facts["newcwv.fig8.over20"] = f"{sum(x > 0 for x in over)} of the {len(over)}"
    facts["newcwv.fig8.under20"] = f"{sum(x > 0 for x in under)} of the {len(under)}"
    facts["newcwv.fig8.kept_bursts"] = str(len(bursts))
    # the k-th burst of a kept arm across its trials: its time's spread
    spread = 0.0
    for s in (CWV, KEEP):
        for kb in levels(rows, "burst_kb"):
            trials = [_per_burst([r], "burst_ms") for r in where(rows, series=s, burst_kb=kb)]
            for k in range(min(map(len, trials))):
                spread = max(spread, max(t[k] for t in trials) - min(t[k] for t in trials))
    facts["newcwv.fig8.same_within"] = f"{spread:.0f} ms"
    history = where(rows, series=CWV, burst_kb="40")
    body = []
    for k in range(min(len(_per_burst([r], "burst_ms")) for r in history)):
        body.append(
            [
                str(k + 1),
                *(
                    _span([_per_burst([r], c)[k] for r in history], show)
                    for c, show in (
                        ("idle_s", lambda v: f"{v:g}"),
                        ("cwnd_resumed", lambda v: f"{v:.0f}"),
                        ("retransmitted", lambda v: f"{v:.0f}"),
                        ("burst_ms", lambda v: f"{v:.0f}"),
                    )
                ),
            ]
        )
    head = ["burst of the trial", "after idle (s)", "window resumed (segments)", "sent again", "time (ms)"]
    facts["newcwv.fig8.history40"] = table(head, body)
    gains = [g for (kb, _), g in _cell_gains(rows, CWV).items() if kb == "40"]
    facts["newcwv.fig8.cell40"] = f"{min(gains):.0f} to {max(gains):+.0f} %"
    lost = {s: sum(_per_burst(where(rows, series=s), "retransmitted")) for s in (BASE, CWV, KEEP)}
    keep80 = sum(_per_burst(where(rows, series=KEEP, burst_kb="80"), "retransmitted"))
    facts["newcwv.fig9.lost"] = (
        f"NewReno+SACK {lost[BASE]:.0f}, newCWV {lost[CWV]:.0f}, Reno without the restart {lost[KEEP]:.0f} "
        f"({keep80:.0f} of them at 80 KB)"
    )
    for kb in ("40", "80"):
        base = sorted(values(rows, "retrans_per_burst", burst_kb=kb, series=BASE))
        cwv = sorted(values(rows, "retrans_per_burst", burst_kb=kb, series=CWV))
        facts[f"newcwv.fig9.base{kb}"] = _span(base, lambda v: f"{v:.3g}")
        facts[f"newcwv.fig9.cwv{kb}"] = _span(cwv, lambda v: f"{v:.3g}")
    return facts


def _newcwv_table2(stored: Stored) -> Facts:
    rows = stored.rows("newcwv/table2")
    facts: Facts = {}
    big = where(rows, burst_kb="80")
    for key, arm in (("flight_paced", PACED), ("flight_unpaced", CWV)):
        facts[f"newcwv.table2.{key}"] = (
            f"{statistics.median(_per_burst(where(big, series=arm), 'first_flight_ms')):.1f} ms"
        )
    body = []
    unvaried = where(stored.rows("newcwv/table2@variation=none/table2"), burst_kb="80")  # af4479f's
    for arm in (BASE, CWV, PACED, KEEP):
        mine = where(big, series=arm)
        per = values(mine, "retrans_per_burst")
        first, sent = (sum(_per_burst(mine, c)) for c in ("first_flight_retransmitted", "retransmitted"))
        before = _mean_se(values(where(unvaried, series=arm), "retrans_per_burst"), lambda v: f"{v:.1f}")
        body.append([arm, str(len(per)), _mean_se(per, lambda v: f"{v:.1f}"), f"{first:.0f} of {sent:.0f}", before])
    head = [
        "arm",
        "trials",
        "sent again per 80 KB burst (mean ± SE)",
        "of them first sent in the first flight",
        "without variation (mean ± SE)",
    ]
    facts["newcwv.table2.losses"] = table(head, body)
    base, cwv = (mean(big, "mean_burst_ms", series=s) for s in (BASE, CWV))
    facts["newcwv.table2.ratio80"] = f"{base / cwv:.2f}"
    # the seed's sign: Table 2 positive up to 40 KB and negative at 80 KB; Table 3 positive everywhere
    for key, arm, negative in (("table2", CWV, {"80"}), ("table3", PACED, set())):
        gains = _cell_gains(rows, arm)
        agree = sum((g < 0) == (kb in negative) for (kb, _), g in gains.items())
        facts[f"newcwv.{key}.sign"] = f"{agree} of {len(gains)}"
    body = []
    for arm in (BASE, CWV, PACED, KEEP):
        found = values(rows, "bulk_goodput_mbit", series=arm)
        body.append([arm, str(len(found)), _mean_se(found, lambda v: f"{v:.3f}")])
    facts["newcwv.fig11.table"] = table(["the bursts' arm", "trials", "bulk flow's goodput (Mbit/s, mean ± SE)"], body)
    return facts


PACING_RUNS = (
    ("newcwv/pacing", "1 s"),
    ("newcwv/pacing@idle_s=5/pacing", "5 s"),
    ("newcwv/pacing@jitter=3ms/pacing", "1 s, jitter ±3 ms"),
    ("newcwv/pacing@idle_s=5+jitter=3ms/pacing", "5 s, jitter ±3 ms"),
    ("newcwv/pacing@variation=none/pacing", "1 s, without variation"),
    ("newcwv/pacing@idle_s=5+variation=none/pacing", "5 s, without variation"),
)


def _newcwv_pacing(stored: Stored) -> Facts:
    facts: Facts = {}
    arms = (BASE, CWV, PACED)
    body = []
    for name, after in PACING_RUNS:
        rows = stored.rows(name)
        for arm in arms:
            mine = where(rows, series=arm)
            per = values(rows, "retrans_per_burst", series=arm)
            sent, flight = (_listed(mine, c) for c in ("first_flight_retransmitted", "first_flight"))
            base, this = (mean(rows, "mean_burst_ms", series=s) for s in (arms[0], arm))
            gain = "" if arm == arms[0] else pct(-change(base, this))
            spread = statistics.median(_per_burst(mine, "first_flight_ms"))
            body.append(
                [
                    after,
                    arm,
                    f"{len(per)}",
                    f"{statistics.fmean(per):.2f}",
                    f"{sent:.0f} / {flight:.0f} ({_share(sent, flight)})",
                    f"{spread:.0f}" if spread >= 1 else f"{spread:.1f}",
                    gain,
                    f"{mean(rows, 'bulk_goodput_mbit', series=arm):.3f}",
                ]
            )
        paced = mean(rows, "retrans_per_burst", series=PACED) - mean(rows, "retrans_per_burst", series=CWV)
        facts[f"newcwv.{_PACING_KEYS[name]}.paced_less"] = f"{paced:.2f}"
    head = [
        "after",
        "arm",
        "trials",
        "sent again per burst",
        "first flight: sent again / carried",
        "first flight leaves over (median, ms)",
        "gain",
        "bulk flow (Mbit/s)",
    ]
    facts["newcwv.pacing.table"] = table(head, body)
    one = stored.rows("newcwv/pacing")
    facts["newcwv.pacing.cwnd"] = _span(_per_burst(where(one, series=CWV), "cwnd_resumed"))
    five = stored.rows("newcwv/pacing@idle_s=5/pacing")
    bulk = values(five, "bulk_goodput_mbit")
    facts["newcwv.pacing_idle5.bulk_spread"] = f"{max(bulk) - min(bulk):.3f} Mbit/s"
    jitter = []
    for name, _ in PACING_RUNS[2:]:
        for check in read_manifest(stored.tree / f"{name}.manifest.json").verifications.values():
            jitter += [c for c in check["checks"] if c["name"].startswith("jitter")]
    facts["newcwv.pacing_jitter.measured"] = _span([c["measured"] for c in jitter], lambda v: f"{v:.1f}")
    facts["newcwv.pacing_jitter.model"] = _span([c["desired"] for c in jitter], lambda v: f"{v:.2f}")
    return facts


_PACING_KEYS = {name: key.removeprefix("newcwv.") for name, key in NEWCWV_RUNS}


def newcwv_facts(stored: Stored) -> Facts:
    facts = _newcwv_runs(stored)
    for part in (_newcwv_fig5, _newcwv_uncongested, _newcwv_congested, _newcwv_table2, _newcwv_pacing):
        facts |= part(stored)
    for fig in ("fig7", "fig8"):
        rows = stored.rows(f"newcwv/{fig}")
        body = []
        for burst in levels(rows, "burst_kb"):
            base, cwv = (mean(rows, "mean_burst_ms", burst_kb=burst, series=s) for s in (BASE, CWV))
            keep = mean(rows, "mean_burst_ms", burst_kb=burst, series=KEEP)
            body.append([f"{burst} KB", ms(base), ms(cwv), ms(keep), pct(-change(base, cwv)), pct(-change(base, keep))])
        head = [
            "burst",
            "NewReno+SACK (ms)",
            "newCWV (ms)",
            "Reno, no restart (ms)",
            "newCWV's gain",
            "no restart's gain",
        ]
        facts[f"newcwv.{fig}.table"] = table(head, body)
    return facts


def _listed(rows: Iterable[Row], column: str) -> float:
    """The sum over trials of a column that lists a value per burst (`14;17;9`)."""
    return sum(float(v) for r in rows for v in r.text(column).split(";") if v.strip())
