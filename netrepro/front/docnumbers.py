"""Every number README.md and docs/ state about a stored result, computed from the stored rows.

A number the prose states about results/reference sits between markers,
`<!--=KEY-->VALUE<!--=-->`, and KEY names a fact: a short string (a median, a
ratio, a count, a commit, a whole Markdown table) computed here from the
stored CSVs (their latest attempt of each trial, status "ok") and manifests.
`mismatches` lists each marker whose VALUE is not its fact now (an unknown
KEY is one), `rewrite` puts the facts in (`run.sh docs`), and
tests/unit/test_doc_numbers.py holds the two equal, so that a new stored run
changes the prose or fails the suite.  One function per study computes its
facts; every function takes the stored tree (`tree`, results/reference).
"""

from __future__ import annotations

import contextlib
import io
import re
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ground.manifests import ManifestUnreadable, read_manifest
from ground.results import REFERENCE, REPO, replace_file
from ground.trials import latest_rows, read_rows

Row = Mapping[str, str]

# `<!--=KEY-->VALUE<!--=-->`: VALUE may span lines (a table), never another marker.
MARKER = re.compile(r"<!--=([^\s>]+)-->(.*?)<!--=-->", re.DOTALL)

_UNITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "ms": 1e-3, "s": 1.0, "%": 1.0, "": 1.0}


def pages(repo: Path = REPO) -> list[Path]:
    """The pages that may hold markers: README.md, docs/**/*.md, results/reference/README.md."""
    found = [repo / "README.md", *sorted((repo / "docs").rglob("*.md")), repo / "results" / "reference" / "README.md"]
    return [p for p in found if p.is_file()]


# -- the stored rows --------------------------------------------------------------


class Stored:
    """The stored tree's rows, each CSV read once: the latest attempt of each trial, status "ok"."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self._rows: dict[str, list[Row]] = {}

    def rows(self, name: str) -> list[Row]:
        """`name` is the CSV's path under the tree without `.csv`: `iw/fig2`, `newcwv/pacing@idle_s=5/pacing`."""
        if name not in self._rows:
            every = latest_rows(read_rows(self.tree / f"{name}.csv"))
            self._rows[name] = [r for r in every if r.get("status") == "ok"]
        return self._rows[name]

    def commit(self, name: str) -> str:
        """The commit the rows ran from, as `run.sh list` shows it (12 digits; `of N commits` if several)."""
        codes = sorted({r.get("code", "")[:12] for r in self.rows(name)} - {""})
        return codes[0] if len(codes) == 1 else f"of {len(codes)} commits"


def where(rows: Iterable[Row], **match: str) -> list[Row]:
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def values(rows: Iterable[Row], metric: str, **match: str) -> list[float]:
    """The metric of each matching trial (one value a trial)."""
    out = []
    for row in where(rows, **match):
        with contextlib.suppress(KeyError, ValueError):
            out.append(float(row[metric]))
    return out


def median(rows: Iterable[Row], metric: str, **match: str) -> float:
    found = values(rows, metric, **match)
    if not found:
        raise LookupError(f"no trial with {metric} where {match}")
    return float(statistics.median(found))


def mean(rows: Iterable[Row], metric: str, **match: str) -> float:
    found = values(rows, metric, **match)
    if not found:
        raise LookupError(f"no trial with {metric} where {match}")
    return statistics.fmean(found)


def level_order(level: str) -> float:
    """A level's value for sorting: `500kbit` before `1mbit`, `0.5%` before `2%`."""
    found = re.fullmatch(r"(-?[0-9.]+)\s*([a-z%]*)", level.strip().lower())
    if not found:
        return float("inf")
    return float(found[1]) * _UNITS.get(found[2], 1.0)


def levels(rows: Iterable[Row], column: str) -> list[str]:
    return sorted({r[column] for r in rows if r.get(column)}, key=lambda level: (level_order(level), level))


# -- how a number is written ---------------------------------------------------------


def num(x: float, digits: int = 3) -> str:
    """`digits` significant digits, never an exponent: 513.2 (4), 0.0745, 1248."""
    if x == 0:
        return "0"
    magnitude = len(str(int(abs(x)))) if abs(x) >= 1 else 0
    places = max(digits - magnitude, 0)
    if abs(x) < 1:
        places = digits - 1 - int(f"{abs(x):e}".split("e")[1])
    return f"{x:.{places}f}"


def ms(x: float) -> str:
    """A time in ms: one decimal below 1000 ms, none above (513.2, 1248)."""
    return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.1f}"


def pct(x: float, sign: bool = False) -> str:
    return f"{x:+.0f} %" if sign else f"{x:.0f} %"


def change(before: float, after: float) -> float:
    """after against before, in per cent."""
    return (after / before - 1.0) * 100.0


def table(head: Sequence[str], body: Iterable[Sequence[str]]) -> str:
    """A Markdown table, a blank line before and after it (so that its markers stand apart)."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n\n" + "\n".join(lines) + "\n\n"


def grid(
    rows: Sequence[Row],
    x: str,
    metric: str,
    columns: Sequence[tuple[str, str]],
    *,
    head: str,
    show: Callable[[float], str],
    stat: Callable[..., float] = median,
    x_name: Callable[[str], str] = str,
) -> str:
    """One row a level of `x`, one column a series (`columns`: its label in the rows, its heading)."""
    body = [
        [x_name(level), *(show(stat(rows, metric, **{x: level, "series": label})) for label, _ in columns)]
        for level in levels(rows, x)
    ]
    return table([head, *(h for _, h in columns)], body)


# -- the facts, one function a study ------------------------------------------------------

Facts = dict[str, str]


def _figure(stored: Stored, name: str, prefix: str) -> Facts:
    """What every stored CSV gives: its trials (`.trials`) and the commit its rows ran from (`.commit`)."""
    return {f"{prefix}.trials": str(len(stored.rows(name))), f"{prefix}.commit": stored.commit(name)[:7]}


def iw_facts(stored: Stored) -> Facts:
    facts: Facts = {}
    for fig in ("fig2", "fig5a", "fig5b", "fig5c"):
        facts |= _figure(stored, f"iw/{fig}", f"iw.{fig}")
    fig2 = stored.rows("iw/fig2")
    times = {w: median(fig2, "download_time_ms", initcwnd=w) for w in levels(fig2, "initcwnd")}
    facts["iw.fig2.table"] = table(["IW", *times], [["measured median (ms)", *(ms(t) for t in times.values())]])
    for w, t in times.items():
        facts[f"iw.fig2.iw{w}"] = f"{t:.0f} ms"
    facts["iw.fig2.gain10"] = pct(-change(times["3"], times["10"]))
    facts["iw.fig2.gain26"] = pct(-change(times["3"], times["26"]))
    facts["iw.fig2.iw_equal"] = str(sum(r["initcwnd_measured"] == r["initcwnd"] for r in fig2))
    series = [("IW 3", "IW 3 (ms)"), ("IW 10", "IW 10 (ms)"), ("IW 26", "IW 26 (ms)")]

    def gains(name: str, x: str, head: str) -> str:
        rows = stored.rows(f"iw/{name}")
        body = []
        for level in levels(rows, x):
            base, ten, big = (median(rows, "download_time_ms", **{x: level, "series": s}) for s, _ in series)
            body.append([level, ms(base), ms(ten), ms(big), pct(-change(base, ten)), pct(-change(base, big))])
        return table([head, *(h for _, h in series), "IW 3 → 10", "IW 3 → 26"], body)

    facts["iw.fig5a.table"] = gains("fig5a", "rtt", "RTT")
    facts["iw.fig5b.table"] = gains("fig5b", "rate", "bandwidth")
    facts["iw.fig5c.table"] = gains("fig5c", "rate", "bandwidth")
    fig5a = stored.rows("iw/fig5a")
    spread = max(
        max(v) - min(v)
        for level in levels(fig5a, "rtt")
        for s, _ in series
        if (v := values(fig5a, "download_time_ms", rtt=level, series=s))
    )
    facts["iw.fig5a.spread"] = f"{spread:.2f} ms"
    checks = read_manifest(stored.tree / "iw" / "fig5c.manifest.json").verifications
    lab = checks["RTT 1s, 8kbit, loss 0%, queue 1000p"]["checks"]
    goodput = next(c for c in lab if c["name"] == "goodput")
    facts["iw.fig5c.goodput8"] = f"{goodput['measured']:.5f}"
    facts["iw.fig5c.goodput8_under"] = f"{(1 - goodput['measured'] / goodput['desired']) * 100:.1f} %"
    ten = sorted(values(fig2, "download_time_ms", initcwnd="10"))
    facts["iw.fig2.iw10_range"] = f"{ten[0]:.1f} to {ten[-1]:.1f} ms"
    fig5c = stored.rows("iw/fig5c")
    wrong = sum(r.get("initcwnd_measured") != r.get("initcwnd") for r in fig5c)
    facts["iw.fig5c.wrong_iw"] = f"{wrong} of {len(fig5c)}"
    return facts


def spdy_facts(stored: Stored) -> Facts:
    facts: Facts = {}
    for fig in ("betatable", "conns", "backoff"):
        facts |= _figure(stored, f"spdy/{fig}", f"spdy.{fig}")
    conns = stored.rows("spdy/conns")
    labels = ["HTTP/1.1 x6, n=1", "HTTP/1.1 x6, n=6", "HTTP/2 x1, n=1", "HTTP/2 x1, n=6"]
    facts["spdy.conns.table"] = grid(
        conns, "loss", "throughput_mbit", [(s, s) for s in labels], head="loss", show=num, stat=mean
    )
    h1 = mean(conns, "throughput_mbit", loss="0.1%", series=labels[0])
    h2 = mean(conns, "throughput_mbit", loss="0.1%", series=labels[2])
    facts["spdy.conns.h2_0.1"] = num(h2)
    facts["spdy.conns.h1_0.1"] = num(h1)
    facts["spdy.conns.less_0.1"] = pct(-change(h1, h2))
    gains = []
    for loss in ("0.5%", "1%", "2%"):
        one, six = (mean(conns, "throughput_mbit", loss=loss, series=f"HTTP/2 x1, n={n}") for n in (1, 6))
        gains.append(pct(change(one, six), sign=True))
    facts["spdy.conns.n6_gains"] = ", ".join(gains)
    backoff = stored.rows("spdy/backoff")
    ns = [f"n={n}" for n in range(1, 7)]
    facts["spdy.backoff.table"] = grid(
        backoff, "loss", "throughput_mbit", [(s, s) for s in ns], head="loss", show=num, stat=mean
    )
    ratios = []
    for n in ("n=2", "n=3", "n=6"):
        found = [
            mean(backoff, "throughput_mbit", loss=loss, series=n)
            / mean(backoff, "throughput_mbit", loss=loss, series="n=1")
            for loss in levels(backoff, "loss")
            if level_order(loss) >= 0.2
        ]
        ratios.append(f"{min(found):.2f}–{max(found):.2f}")
    facts["spdy.backoff.ratios"] = ", ".join(ratios[:-1]) + " and " + ratios[-1]
    return facts


def web_facts(stored: Stored) -> Facts:
    facts: Facts = {}
    for fig in ("plt", "plt_loss"):
        facts |= _figure(stored, f"web/{fig}", f"web.{fig}")
    plt = stored.rows("web/plt")
    small, few = "many small objects", "few large objects"
    y = "page_load_time_ms"

    def ratio(rows: Sequence[Row], tail: str, **at: str) -> float:
        return median(rows, y, series=f"HTTP/2, {tail}", **at) / median(rows, y, series=f"HTTP/1.1, {tail}", **at)

    body = []
    browser_ratios, h2load_ratios, added = [], [], []
    for rtt in levels(plt, "rtt"):
        cells = {s: median(plt, y, rtt=rtt, series=s) for s in {r["series"] for r in plt}}
        browser = cells[f"HTTP/2, {small}"] / cells[f"HTTP/1.1, {small}"]
        h2load = cells[f"HTTP/2, {small}, h2load"] / cells[f"HTTP/1.1, {small}, h2load"]
        browser_ratios.append(f"{browser:.2f}")
        h2load_ratios.append(f"{h2load:.2f}")
        added += [cells[f"HTTP/{p}, {small}"] - cells[f"HTTP/{p}, {small}, h2load"] for p in ("1.1", "2")]
        body.append(
            [
                rtt.replace("ms", " ms"),
                *(ms(cells[f"HTTP/{p}, {small}"]) for p in ("1.1", "2")),
                f"{browser:.2f}",
                *(ms(cells[f"HTTP/{p}, {small}, h2load"]) for p in ("1.1", "2")),
                f"{h2load:.2f}",
                *(ms(cells[f"HTTP/{p}, {few}"]) for p in ("1.1", "2")),
            ]
        )
    head = ["RTT", "H1, many small", "H2, many small", "H2 / H1", "h2load H1", "h2load H2", "H2 / H1"]
    facts["web.plt.table"] = table([*head, "H1, few large", "H2, few large"], body)
    facts["web.plt.browser_ratios"] = ", ".join(browser_ratios[:-1]) + " and " + browser_ratios[-1]
    facts["web.plt.h2load_ratios"] = ", ".join(h2load_ratios[:-1]) + " and " + h2load_ratios[-1]
    facts["web.plt.browser_adds"] = f"{min(added):.0f} to {max(added):.0f} ms"
    facts["web.plt.ratio20"] = f"{ratio(plt, small, rtt='20ms'):.2f}"
    facts["web.plt.h2load_ratio20"] = facts["web.plt.h2load_ratios"].split(",")[0]
    for p, key in (("2", "h2"), ("1.1", "h1")):
        facts[f"web.plt.{key}_20"] = ms(median(plt, y, rtt="20ms", series=f"HTTP/{p}, {small}"))
    loss = stored.rows("web/plt_loss")
    body = []
    for level in levels(loss, "loss"):
        times = [median(loss, y, loss=level, series=f"HTTP/{p}, {t}") for t in (small, few) for p in ("1.1", "2")]
        body.append([level.replace("%", " %"), *(ms(t) for t in times), f"{times[2] / times[3]:.2f}"])
    head = ["loss", "H1, many small", "H2, many small", "H1, few large", "H2, few large", "H1 / H2, few large"]
    facts["web.plt_loss.table"] = table(head, body)
    for p, key in (("2", "h2"), ("1.1", "h1")):
        facts[f"web.plt_loss.{key}_4"] = ms(median(loss, y, loss="4%", series=f"HTTP/{p}, {small}"))
    for level in ("2%", "4%"):
        faster = ratio(loss, few, loss=level)
        facts[f"web.plt_loss.h1_faster_{level[:-1]}"] = f"{faster:.1f}"
    # seed 000's page loads in the browser beside h2load's (cubicplus fig6 and fig12 with client=chromium)
    for fig in ("fig6", "fig12"):
        name = f"cubicplus/{fig}@client=chromium/{fig}"
        facts |= _figure(stored, name, f"web.chromium_{fig}")
        browser_rows, h2load_rows = stored.rows(name), stored.rows(f"cubicplus/{'fig3' if fig == 'fig6' else fig}")
        diffs = []
        for row_series in sorted({r["series"] for r in browser_rows}):
            for level in levels(browser_rows, "loss"):
                b = mean(browser_rows, y, loss=level, series=row_series)
                h = mean(h2load_rows, y, loss=level, series=row_series)
                diffs.append(change(h, b))
        facts[f"web.chromium_{fig}.cells"] = str(len(diffs))
        facts[f"web.chromium_{fig}.within10"] = str(sum(abs(d) <= 10 for d in diffs))
    return facts


CUBIC, PLUS, SCALED, BPF, H1 = (
    "CUBIC (HTTP/2)",
    "CUBIC+ n=6 (HTTP/2)",
    "CUBIC+ n=6, RTT-scaled K (HTTP/2)",
    "CUBIC as BPF: cubic_plus n=1 (HTTP/2)",
    "CUBIC, HTTP/1.1 x6 (reference)",
)


def cubicplus_facts(stored: Stored) -> Facts:
    facts: Facts = {}
    for fig in ("fig3", "fig4", "fig5", "fig7", "fig8", "fig9", "fig10", "fig11", "fig12"):
        facts |= _figure(stored, f"cubicplus/{fig}", f"cubicplus.{fig}")
    y = "throughput_mbit"
    pages = {"fig3": stored.rows("cubicplus/fig3"), "fig4": stored.rows("cubicplus/fig4")}
    pages["fig5"] = stored.rows("cubicplus/fig5")
    body = []
    for level in levels(pages["fig3"], "loss"):
        cells = []
        for rows in pages.values():
            base, plus = mean(rows, y, loss=level, series=CUBIC), mean(rows, y, loss=level, series=PLUS)
            cells.append(f"{num(base)} / {num(plus)} ({pct(change(base, plus), sign=True)})")
        body.append([level.replace("%", " %"), *cells])
    facts["cubicplus.loss.table"] = table(["loss", "large (`fig3`)", "medium (`fig4`)", "small (`fig5`)"], body)
    columns = [
        (CUBIC, "CUBIC"),
        (BPF, "CUBIC as BPF"),
        (PLUS, "CUBIC+ n=6"),
        (SCALED, "RTT-scaled K"),
        (H1, "HTTP/1.1"),
    ]
    for fig, rows in pages.items():
        facts[f"cubicplus.{fig}.table"] = grid(rows, "loss", y, columns, head="loss", show=num, stat=mean)
    fig6 = pages["fig3"]
    facts["cubicplus.fig6.table"] = grid(
        fig6, "loss", "page_load_time_ms", columns, head="loss", show=lambda v: num(v / 1000), stat=mean
    )
    spread = 0.0
    delay = ["fig7", "fig8", "fig9"]
    variants = [(CUBIC, "CUBIC"), (PLUS, "CUBIC+ n=6"), (SCALED, "RTT-scaled K")]
    for fig in delay:
        rows = stored.rows(f"cubicplus/{fig}")
        facts[f"cubicplus.{fig}.table"] = grid(
            rows, "rtt", y, [*variants, (H1, "HTTP/1.1")], head="RTT", show=num, stat=mean
        )
        for level in levels(rows, "rtt"):
            means = [mean(rows, y, rtt=level, series=s) for s, _ in variants]
            spread = max(spread, (max(means) - min(means)) / max(means) * 100)
    facts["cubicplus.delay.spread"] = f"{spread:.1f} %"
    for fig in ("fig10", "fig11"):
        rows = stored.rows(f"cubicplus/{fig}")
        facts[f"cubicplus.{fig}.table"] = grid(
            rows, "initcwnd", y, [*variants, (H1, "HTTP/1.1")], head="IW", show=num, stat=mean
        )
        low, high = (mean(rows, y, initcwnd=w, series=CUBIC) for w in ("3", "32"))
        facts[f"cubicplus.{fig}.iw"] = f"{num(low)} to {num(high)} Mbit/s ({pct(change(low, high), sign=True)})"
    fig10 = stored.rows("cubicplus/fig10")
    facts["cubicplus.fig10.plt"] = ", ".join(
        f"{mean(fig10, 'page_load_time_ms', initcwnd=w, series=CUBIC):.0f}" for w in levels(fig10, "initcwnd")
    )
    fig12 = stored.rows("cubicplus/fig12")
    reno = [(s, s.removesuffix(" (HTTP/2)")) for s in sorted({r["series"] for r in fig12})]
    facts["cubicplus.fig12.table"] = grid(
        fig12, "loss", "page_load_time_ms", reno, head="loss", show=lambda v: num(v / 1000), stat=mean
    )
    return facts


def linuxcc_facts(stored: Stored) -> Facts:
    facts = _figure(stored, "linuxcc/fig6", "linuxcc.fig6")
    rows = stored.rows("linuxcc/fig6")
    scenarios = [(s, s) for s in ("WrFl-1", "WrFl-1a", "WrFl-2", "WrFl-2a")]
    for metric, key, show in (
        ("first_10s_mbit", "first10", num),
        ("goodput_mbit", "whole", num),
        ("drop_rate", "drops", lambda v: f"{v * 100:.1f} %"),
        ("cwnd_max", "cwnd", lambda v: f"{v:.0f}"),
    ):
        facts[f"linuxcc.{key}.table"] = grid(rows, "cc", metric, scenarios, head="algorithm", show=show)
    facts["linuxcc.seconds"] = f"{sum(float(r['trial_seconds']) for r in rows):.0f}"
    return facts


NEWCWV_RUNS = (
    ("newcwv/fig5", "newcwv.fig5"),
    ("newcwv/fig7", "newcwv.fig7"),
    ("newcwv/fig8", "newcwv.fig8"),
    ("newcwv/table2", "newcwv.table2"),
    ("newcwv/pacing", "newcwv.pacing"),
    ("newcwv/pacing@idle_s=5/pacing", "newcwv.pacing_idle5"),
    ("newcwv/pacing@jitter=3ms/pacing", "newcwv.pacing_jitter"),
    ("newcwv/pacing@idle_s=5+jitter=3ms/pacing", "newcwv.pacing_idle5_jitter"),
)
BASE, CWV, KEEP, PACED = "NewReno+SACK", "newCWV", "Reno, no restart", "newCWV, paced"


def _per_burst(rows: Iterable[Row], column: str) -> list[float]:
    """Every burst's value of a column that lists one a burst (`14;17;9`), over the rows, in order."""
    return [float(v) for r in rows for v in (r.get(column) or "").split(";") if v.strip()]


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
        facts |= _figure(stored, name, prefix)
        seconds = sum(float(r.get("trial_seconds") or 0) for r in stored.rows(name))
        facts[f"{prefix}.seconds"] = f"{seconds:.0f} s"
        doc = read_manifest(stored.tree / f"{name}.manifest.json").doc
        failed = doc.get("failed_attempts") or 0
        facts[f"{prefix}.failed"] = str(len(failed) if isinstance(failed, list) else int(failed))
    return facts


def _newcwv_fig5(stored: Stored) -> Facts:
    rows = stored.rows("newcwv/fig5")
    series = sorted({r["series"] for r in rows})
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
    small = [r for r in rows if int(r["burst_kb"]) <= 20]
    facts["newcwv.fig8.lost_small"] = f"{sum(_per_burst(small, 'retransmitted')):.0f}"
    kept = [r for r in rows if r["series"] in (CWV, KEEP) and r["burst_kb"] in ("40", "80")]
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
    for arm in (BASE, CWV, PACED, KEEP):
        mine = where(big, series=arm)
        per = values(mine, "retrans_per_burst")
        first, sent = (sum(_per_burst(mine, c)) for c in ("first_flight_retransmitted", "retransmitted"))
        body.append([arm, str(len(per)), _mean_se(per, lambda v: f"{v:.1f}"), f"{first:.0f} of {sent:.0f}"])
    head = ["arm", "trials", "sent again per 80 KB burst (mean ± SE)", "of them first sent in the first flight"]
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
    return sum(float(v) for r in rows for v in (r.get(column) or "").split(";") if v.strip())


def readme_facts(stored: Stored) -> Facts:
    """What README.md shows of `run.sh list` and `--dry-run` (the list from results/reference itself)."""
    manifest = read_manifest(stored.tree / "iw" / "fig2.manifest.json")
    return {"readme.fig2.stored": f"{manifest.rows} trials, rows {stored.commit('iw/fig2')}"}


def list_sample() -> str:
    """`run.sh list`'s lines for iw/fig2, iw/fig5a and linuxcc/whole, cut after the stored result."""
    import argparse

    from netrepro.front.figure_commands import cmd_list

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cmd_list(argparse.Namespace(jobs=None))
    lines = out.getvalue().splitlines()
    cut = lines[0].index("stored result") + 32

    def line(text: str) -> str:
        return text[:cut].rstrip()

    by_name = {text.split()[0]: text for text in lines[1:] if text.strip()}
    shown = [line(lines[0]), line(by_name["iw/fig2"]), line(by_name["iw/fig5a"]), "...", line(by_name["linuxcc/whole"])]
    return "\n\n```\n" + "\n".join(shown) + "\n```\n\n"


def reference_facts(stored: Stored) -> Facts:
    """results/reference/README.md: every stored CSV, its trials, the commit of its rows and its lab time."""
    body = []
    total: dict[str, float] = {}
    for csv in sorted(stored.tree.rglob("*.csv")):
        name = csv.relative_to(stored.tree).with_suffix("").as_posix()
        rows = stored.rows(name)
        seconds = sum(float(r.get("trial_seconds") or 0) for r in rows)
        study = name.split("/")[0]
        total[study] = total.get(study, 0.0) + seconds
        shown = name.rsplit("/", 1)[0] if "@" in name else name
        manifest = f"{name}.manifest.json"
        with contextlib.suppress(ManifestUnreadable):
            manifest_rows = read_manifest(stored.tree / manifest).rows
            shown += "" if manifest_rows == len(rows) else f" ({manifest_rows} in its manifest)"
        body.append(
            [
                f"`{shown}`",
                str(len(rows)),
                stored.commit(name),
                f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s",
            ]
        )
    facts = {"reference.table": table(["CSV", "trials", "rows from", "lab time"], body)}
    facts["reference.studies"] = table(["study", "lab time"], [[s, f"{t:.0f} s"] for s, t in total.items()])
    return facts


STUDIES: tuple[Callable[[Stored], Facts], ...] = (
    iw_facts,
    spdy_facts,
    web_facts,
    cubicplus_facts,
    linuxcc_facts,
    newcwv_facts,
    readme_facts,
    reference_facts,
)
COMMANDS: dict[str, Callable[[], str]] = {"readme.list": list_sample}


def facts(tree: Path = REFERENCE) -> Facts:
    """Every fact, from the stored tree `tree` (`readme.list` runs `run.sh list`, which reads results/reference)."""
    stored = Stored(tree)
    out: Facts = {}
    for study in STUDIES:
        out |= study(stored)
    return out


# -- the markers ----------------------------------------------------------------


@dataclass(frozen=True)
class Marker:
    """One marked value: where it is, its key, the text between the markers, and the fact (None: no such key)."""

    page: Path
    line: int
    key: str
    value: str
    fact: str | None
    why: str = "no such fact"  # why there is no fact

    def __str__(self) -> str:
        shown = self.value.strip().replace("\n", " ")[:60]
        if self.fact is None:
            return f"{self.page}:{self.line}: {self.key}: {self.why} (the page says {shown!r})"
        return f"{self.page}:{self.line}: {self.key}: the page says {shown!r}, the rows {self.fact.strip()[:60]!r}"


def markers(page: Path, known: Mapping[str, str]) -> Iterator[Marker]:
    text = page.read_text(encoding="utf-8")
    for found in MARKER.finditer(text):
        key, why = found[1], "no such fact"
        fact = known.get(key)
        if fact is None and key in COMMANDS:
            try:
                fact = COMMANDS[key]()
            except Exception as e:  # the command's own bug or a study that does not load: said, never hidden
                why = f"could not be computed ({type(e).__name__}: {e})"
        yield Marker(page, text.count("\n", 0, found.start()) + 1, key, found[2], fact, why)


def mismatches(tree: Path = REFERENCE, repo: Path = REPO) -> list[Marker]:
    """Every marker whose value is not its fact now, an unknown key included."""
    known = facts(tree)
    return [m for page in pages(repo) for m in markers(page, known) if m.value != m.fact]


def rewrite(tree: Path = REFERENCE, repo: Path = REPO) -> list[Marker]:
    """Put each known fact between its markers (each page replaced whole, atomically); returns what changed.

    An unknown key is left as it is and returned too (its `fact` is None)."""
    known = facts(tree)
    changed: list[Marker] = []
    for page in pages(repo):
        found = list(markers(page, known))
        wrong = [m for m in found if m.value != m.fact]
        if not wrong:
            continue
        changed += wrong
        facts_here = {m.key: m.fact for m in found if m.fact is not None}

        def put(match: re.Match[str], facts_here: Mapping[str, str] = facts_here) -> str:
            fact = facts_here.get(match[1])
            return match[0] if fact is None else f"<!--={match[1]}-->{fact}<!--=-->"

        text = MARKER.sub(put, page.read_text(encoding="utf-8"))
        replace_file(page, text.encode("utf-8"), mode=page.stat().st_mode & 0o777)
    return changed
