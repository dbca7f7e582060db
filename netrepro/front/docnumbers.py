"""Every number README.md and docs/ state about a stored result, computed from the stored rows.

A number the prose states about results/reference sits between markers,
`<!--=KEY-->VALUE<!--=-->`, and KEY names a fact: a short string (a median, a
ratio, a count, a commit, a whole Markdown table) computed here from the
stored CSVs (their latest attempt of each trial, status "ok") and manifests.
`mismatches` lists each marker whose VALUE is not its fact now (an unknown
KEY is one), `rewrite` puts the facts in (`run.sh docs`), and
tests/unit/test_doc_numbers.py holds the two equal, so that a new stored run
changes the prose or fails the suite.  One function per study computes its
facts (study newcwv's in docfacts_newcwv, bufferbloat's in docfacts_bufferbloat,
the benchmarks' in docfacts_bench), from the rows netrepro.front.docrows reads
and in the way it writes numbers; every function takes the stored tree
(`tree`, results/reference).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import expts
from ground import series
from ground.manifests import ManifestUnreadable, read_manifest
from ground.results import REFERENCE, REPO, replace_file
from ground.trials import Row
from netrepro.front.docfacts_bench import bench_facts
from netrepro.front.docfacts_bufferbloat import bufferbloat_facts
from netrepro.front.docfacts_newcwv import newcwv_facts
from netrepro.front.docrows import (
    Facts,
    Stored,
    change,
    figure_facts,
    grid,
    level_order,
    levels,
    mean,
    median,
    ms,
    num,
    pct,
    table,
    values,
)

# `<!--=KEY-->VALUE<!--=-->`: VALUE may span lines (a table), never another marker.
MARKER = re.compile(r"<!--=([^\s>]+)-->(.*?)<!--=-->", re.DOTALL)

_UNITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "ms": 1e-3, "s": 1.0, "%": 1.0, "": 1.0}


def pages(repo: Path = REPO) -> list[Path]:
    """The pages that may hold markers: README.md, docs/**/*.md, results/reference/README.md."""
    found = [repo / "README.md", *sorted((repo / "docs").rglob("*.md")), repo / "results" / "reference" / "README.md"]
    return [p for p in found if p.is_file()]


def iw_facts(stored: Stored) -> Facts:
    facts: Facts = {}
    for fig in ("fig2", "fig5a", "fig5b", "fig5c"):
        facts |= figure_facts(stored, f"iw/{fig}", f"iw.{fig}")
    fig2 = stored.rows("iw/fig2")
    times = {w: median(fig2, "download_time_ms", initcwnd=w) for w in levels(fig2, "initcwnd")}
    facts["iw.fig2.table"] = table(["IW", *times], [["measured median (ms)", *(ms(t) for t in times.values())]])
    for w, t in times.items():
        facts[f"iw.fig2.iw{w}"] = f"{t:.0f} ms"
    facts["iw.fig2.gain10"] = pct(-change(times["3"], times["10"]))
    facts["iw.fig2.gain26"] = pct(-change(times["3"], times["26"]))
    facts["iw.fig2.iw_equal"] = str(sum(r.text("initcwnd_measured") == r.text("initcwnd") for r in fig2))
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
    # the 8 kbit/s path's checks (its key names the jitter where the study's variation set one)
    lab = next(v for k, v in checks.items() if k.startswith("RTT 1s, 8kbit, loss 0%, queue 1000p"))["checks"]
    goodput = next(c for c in lab if c["name"] == "goodput")
    facts["iw.fig5c.goodput8"] = f"{goodput['measured']:.5f}"
    facts["iw.fig5c.goodput8_under"] = f"{(1 - goodput['measured'] / goodput['desired']) * 100:.1f} %"
    # the trials of a path without random loss or jitter: fig2's without variation (its twin's, once stored)
    twin = expts.find("iw/fig2").unvaried()
    kept = f"{twin.directory}/{twin.name}" if twin is not None else ""
    still = stored.rows(kept) if kept and (stored.tree / f"{kept}.csv").is_file() else fig2
    ten = sorted(values(still, "download_time_ms", initcwnd="10"))
    facts["iw.fig2.iw10_range"] = f"{ten[0]:.1f} to {ten[-1]:.1f} ms"
    fig5c = stored.rows("iw/fig5c")
    wrong = sum(r.text("initcwnd_measured") != r.text("initcwnd") for r in fig5c)
    facts["iw.fig5c.wrong_iw"] = f"{wrong} of {len(fig5c)}"
    return facts


def spdy_facts(stored: Stored) -> Facts:
    facts: Facts = {}
    for fig in ("betatable", "conns", "backoff"):
        facts |= figure_facts(stored, f"spdy/{fig}", f"spdy.{fig}")
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
        facts |= figure_facts(stored, f"web/{fig}", f"web.{fig}")
    plt = stored.rows("web/plt")
    small, few = "many small objects", "few large objects"
    y = "page_load_time_ms"

    def ratio(rows: Sequence[Row], tail: str, **at: str) -> float:
        return median(rows, y, series=f"HTTP/2, {tail}", **at) / median(rows, y, series=f"HTTP/1.1, {tail}", **at)

    body = []
    browser_ratios, h2load_ratios, added = [], [], []
    for rtt in levels(plt, "rtt"):
        cells = {s: median(plt, y, rtt=rtt, series=s) for s in {r.series for r in plt}}
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
    small_ratios = [f"{ratio(loss, small, loss=level):.2f}" for level in levels(loss, "loss")]
    facts["web.plt_loss.small_ratios"] = ", ".join(small_ratios[:-1]) + " and " + small_ratios[-1]
    facts["web.plt_loss.levels"] = ", ".join(lv[:-1] for lv in levels(loss, "loss")[:-1]) + (
        f" and {levels(loss, 'loss')[-1][:-1]} %"
    )
    for level in ("2%", "4%"):
        faster = ratio(loss, few, loss=level)
        facts[f"web.plt_loss.h1_faster_{level[:-1]}"] = f"{faster:.1f}"
    # seed 000's page loads in a browser beside h2load's (cubicplus fig6 and fig12 with client=chromium, and
    # with client=firefox where stored)
    for client, fig in itertools.product(("chromium", "firefox"), ("fig6", "fig12")):
        name = f"cubicplus/{fig}@client={client}/{fig}"
        if not (stored.tree / f"{name}.csv").is_file():
            continue
        facts |= figure_facts(stored, name, f"web.{client}_{fig}")
        browser_rows, h2load_rows = stored.rows(name), stored.rows(f"cubicplus/{'fig3' if fig == 'fig6' else fig}")
        diffs = []
        for row_series in sorted({r.series for r in browser_rows}):
            for level in levels(browser_rows, "loss"):
                b = mean(browser_rows, y, loss=level, series=row_series)
                h = mean(h2load_rows, y, loss=level, series=row_series)
                diffs.append(change(h, b))
        facts[f"web.{client}_{fig}.cells"] = str(len(diffs))
        facts[f"web.{client}_{fig}.within10"] = str(sum(abs(d) <= 10 for d in diffs))
    if (stored.tree / f"{FIREFOX_PLT}.csv").is_file():
        facts |= firefox_facts(stored)
    return facts


FIREFOX_PLT = "web/plt@client=firefox/plt"  # seed 000's own browser: the derived figure of web/plt


def firefox_facts(stored: Stored) -> Facts:
    """web/plt in Firefox beside Chromium: each RTT's medians, and how far Firefox's lie from Chromium's."""
    facts = figure_facts(stored, FIREFOX_PLT, "web.firefox_plt")
    firefox, chromium = stored.rows(FIREFOX_PLT), stored.rows("web/plt")
    y = "page_load_time_ms"
    small, few = "many small objects", "few large objects"
    body, ratios, h2_over_h1 = [], [], []
    versions = sorted({r.text("browser_version") or "" for r in firefox} - {""})
    for rtt in levels(firefox, "rtt"):
        cells = []
        for page in (small, few):
            for p in ("1.1", "2"):
                f = median(firefox, y, rtt=rtt, series=f"HTTP/{p}, {page}")
                c = median(chromium, y, rtt=rtt, series=f"HTTP/{p}, {page}")
                ratios.append(f / c)
                cells.append(f"{ms(f)} ({f / c:.2f})")
        h2_over_h1.append(
            median(firefox, y, rtt=rtt, series=f"HTTP/2, {small}")
            / median(firefox, y, rtt=rtt, series=f"HTTP/1.1, {small}")
        )
        body.append([rtt.replace("ms", " ms"), *cells, f"{h2_over_h1[-1]:.2f}"])
    head = ["RTT", "H1, many small", "H2, many small", "H1, few large", "H2, few large", "H2 / H1, many small"]
    facts["web.firefox_plt.table"] = table(head, body)
    facts["web.firefox_plt.version"] = ", ".join(versions) or "unrecorded"
    facts["web.firefox_plt.vs_chromium"] = f"{min(ratios):.2f} to {max(ratios):.2f}"
    facts["web.firefox_plt.h2_ratios"] = ", ".join(f"{r:.2f}" for r in h2_over_h1[:-1]) + f" and {h2_over_h1[-1]:.2f}"
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
        facts |= figure_facts(stored, f"cubicplus/{fig}", f"cubicplus.{fig}")
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
    reno = [(s, s.removesuffix(" (HTTP/2)")) for s in sorted({r.series for r in fig12})]
    facts["cubicplus.fig12.table"] = grid(
        fig12, "loss", "page_load_time_ms", reno, head="loss", show=lambda v: num(v / 1000), stat=mean
    )
    return facts


def linuxcc_facts(stored: Stored) -> Facts:
    facts = figure_facts(stored, "linuxcc/fig6", "linuxcc.fig6")
    rows = stored.rows("linuxcc/fig6")
    scenarios = [(s, s) for s in ("WrFl-1", "WrFl-1a", "WrFl-2", "WrFl-2a")]
    for metric, key, show in (
        ("first_10s_mbit", "first10", num),
        ("goodput_mbit", "whole", num),
        ("drop_rate", "drops", lambda v: f"{v * 100:.1f} %"),
        ("cwnd_max", "cwnd", lambda v: f"{v:.0f}"),
    ):
        facts[f"linuxcc.{key}.table"] = grid(rows, "cc", metric, scenarios, head="algorithm", show=show)
    facts["linuxcc.seconds"] = f"{sum(r.measured('trial_seconds') for r in rows):.0f}"
    return facts


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
    """results/reference/README.md: every stored CSV, its trials, the commit of its rows and its lab time.
    Not the copies: the twin without variation of a figure that draws another's rows (`linuxcc/fig4@
    variation=none`, fig4 drawing fig6's) keeps a copy of the rows its owner's twin keeps, so that it can be
    drawn again; those trials ran once, and are counted once."""
    body = []
    total: dict[str, float] = {}
    figures = [*expts.all_figures(), *expts.kept_figures()]
    copies = {f"{t.directory}/{t.csv_name}" for f in figures if f.trials_of and (t := f.unvaried()) is not None}
    for csv in sorted(stored.tree.rglob("*.csv")):
        if series.is_series_file(csv) or csv.relative_to(stored.tree).as_posix() in copies:
            continue
        name = csv.relative_to(stored.tree).with_suffix("").as_posix()
        rows = stored.rows(name)
        seconds = sum(r.trial_seconds or 0.0 for r in rows)
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
    facts["reference.unverified"] = unverified_paths(stored.tree)
    return facts


def unverified_paths(tree: Path) -> str:
    """Each path of a stored figure (not a twin: its paths are its own figure's before) whose verification
    read a check outside its tolerance: the check, what it measured against its bounds, and the RTT
    samples' 99th percentile (a late reply spreads them)."""
    body = []
    for path in sorted(tree.rglob("*.manifest.json")):
        if "variation=none" in path.parent.name:
            continue
        with contextlib.suppress(ManifestUnreadable):
            doc = read_manifest(path).doc
            for setting, found in sorted((doc.get("verification") or {}).items()):
                if not isinstance(found, dict) or found.get("ok", True):
                    continue
                checks = [c for c in found.get("checks") or [] if isinstance(c, dict)]
                failed = [
                    f"{c['name']}: {c['measured']:.3g} {c['unit']} ({c['low']:.3g} to {c['high']:.3g})"
                    for c in checks
                    if not c.get("ok", True)
                ]
                p99 = next((c["detail"].get("p99") for c in checks if c.get("name") == "rtt"), None)
                body.append(
                    [str(doc.get("figure", path.stem)), setting, "; ".join(failed), f"{p99:g} ms" if p99 else ""]
                )
    return table(["figure", "path", "checks outside tolerance", "RTT p99"], body) if body else "Every path verified."


STUDIES: tuple[Callable[[Stored], Facts], ...] = (
    iw_facts,
    spdy_facts,
    web_facts,
    cubicplus_facts,
    linuxcc_facts,
    newcwv_facts,
    bufferbloat_facts,
    readme_facts,
    reference_facts,
    bench_facts,
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
