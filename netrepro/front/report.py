"""One page of every stored figure beside its paper: `run.sh report` writes results/index.html.

Per study: the source's citation (the study module's SOURCE) and what the
study does differently (its figures' deviations).  Per figure with a stored
result: the image, each claim of the source (its words, verbatim, where they
stand, the test, our numbers with their interval, the outcome) and the
figure's verdict (the manifest's `verdict`, judged once by the run), the
trials and their failures, the trials' own time, the verification of every
path, the congestion controls as they ran, the emulation backend, and the
commits of the rows and of the manifest.  The derived figures the reference
keeps (each study's KEPT) stand after their declared figure.  Each figure,
and each of its claims, says whether its declaration predates its rows
(netrepro.studykit.declared): one declared, or whose claims changed, after
its rows were measured is marked.

The page is one file of HTML with its style inline and relative links to
the images beside it: nothing is fetched from elsewhere, so it works offline,
from a clone or from a copy of results/.  A small inline script counts the
images that loaded and says so at the top (the test reads it in Chromium).
"""

from __future__ import annotations

import html
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import expts
from ground import results
from ground.manifests import ManifestUnreadable, read_manifest
from netrepro.studykit import evidence
from netrepro.studykit.cells import fixed_text
from netrepro.studykit.claims import VERDICTS, needs_text, outcome_text, unvaried_text
from netrepro.studykit.decisions import BY_DESIGN, DIFFERS, OUTCOMES, all_of
from netrepro.studykit.declared import Standing, claim_declaration, standing
from netrepro.studykit.spec import Figure

log = logging.getLogger("netrepro.front.report")

STYLE = """
body { font-family: sans-serif; max-width: 72em; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; margin-bottom: 0.3em; }
.figure { border: 1px solid #ddd; padding: 0.8em; margin: 1em 0; }
.figure img { max-width: 100%; height: auto; }
.verdict { font-weight: bold; padding: 0 0.4em; }
.agrees { background: #d7f0d7; } .partly { background: #f5ecc8; } .differs { background: #f6d3d3; }
.unjudged { background: #e4e4e4; } .deterministic { background: #e3efe3; }
.undecided { background: #dde6f3; } .bydesign { background: #ececec; }
.newer { background: #f6d3d3; font-weight: bold; } .before { color: #2a6a2a; } .unknown { color: #555; }
table { border-collapse: collapse; font-size: 0.9em; } td, th { border: 1px solid #ddd; padding: 0.2em 0.5em; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
.small { font-size: 0.85em; color: #555; }
"""

# Counts the figures' images that loaded, and says so on the page (and to a test, in data-images-loaded).
SCRIPT = """
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.querySelectorAll(".figure img"));
  var loaded = images.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute("data-images-loaded", String(loaded));
  document.body.setAttribute("data-images", String(images.length));
  document.getElementById("loaded").textContent = loaded + " of " + images.length + " figures' images loaded";
});
"""


@dataclass(frozen=True)
class Entry:
    """A figure with a stored result: its manifest, and its image's path relative to the page."""

    fig: Figure
    manifest: dict[str, Any]
    image: str
    stale: tuple[str, ...] = ()  # the figures whose rows changed since the verdict was judged (evidence.stale)
    # whether its declaration, and each claim's (by source and quote), predates its rows (studykit.declared)
    declared: Standing | None = None
    claims_declared: Mapping[tuple[str, str], Standing] = field(default_factory=dict)


Declarations = Callable[[Figure, Mapping[str, Any]], tuple[Standing, dict[tuple[str, str], Standing]]]


def standings(fig: Figure, manifest: Mapping[str, Any]) -> tuple[Standing, dict[tuple[str, str], Standing]]:
    """Whether the figure's declaration (its call, its claims, a kept derived figure's entry) predates its
    rows (the manifest's `code_of_rows`), and each of its claims' (netrepro.studykit.declared)."""
    rows = [str(c) for c in manifest.get("code_of_rows") or []]
    kept = expts.kept_entry(fig)
    modules = expts.modules_of(fig.study)
    whole = standing(expts.declaration(fig), rows)
    of_claims = {
        (c.source, c.quote): standing(claim_declaration(c, modules, kept), rows)
        for c in (kept.claims if kept else (fig.declared or fig).claims)
    }
    return whole, of_claims


def stored(tree: Path, page_dir: Path, declarations: Declarations | None = standings) -> list[Entry]:
    """Every figure of `run.sh list` with a stored result under `tree`, in the list's order, each followed
    by the derived figures the reference keeps of it; `declarations`: whether each one's declaration predates
    its rows (None: not said).

    A manifest that cannot be read, is not JSON, or is JSON of another shape than a run writes (what the
    page and the findings read from it) is left out, with a warning naming it: the page shows the rest."""
    found = []
    for fig in expts.with_kept():
        path = fig.manifest_in(tree)
        png = path.with_name(f"{fig.name}.png")
        if not path.exists() or not png.exists():
            continue
        try:
            manifest = read_manifest(path).doc
        except ManifestUnreadable as e:
            log.warning("%s: left out of the page", e)
            continue
        changed = tuple(evidence.stale(fig, manifest, tree))
        whole, of_claims = declarations(fig, manifest) if declarations is not None else (None, {})
        entry = Entry(fig, dict(manifest), os.path.relpath(png, page_dir), changed, whole, of_claims)
        problem = malformed(entry)
        if problem:
            log.warning("%s: not a manifest as a run writes it (%s): left out of the page", path, problem)
            continue
        found.append(entry)
    return found


def malformed(entry: Entry) -> str | None:
    """What in a manifest the page or the findings could not read (a value of another type than a run
    writes), or None: found by making both for it alone."""
    try:
        page([entry])
        findings([entry])
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _verdict(manifest: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The figure's verdict and its judged claims (netrepro.studykit.claims), as the manifest keeps them."""
    judged = manifest.get("verdict") or {}
    return str(judged.get("verdict") or "unjudged"), [c for c in judged.get("claims") or [] if isinstance(c, dict)]


def _unvaried(manifest: dict[str, Any]) -> str:
    """The figure's verdict without its study's variation, as its caption has it (claims.unvaried_text)."""
    judged = manifest.get("verdict")
    return unvaried_text(judged) if isinstance(judged, dict) else ""


def moved_by_variation(entries: list[Entry]) -> list[str]:
    """Each claim whose outcome under its study's variation is not its outcome without it (its figure's twin,
    netrepro.runner.manifest.beside_unvaried), as a Markdown item: the claims a deterministic emulator
    decided otherwise."""
    return [
        f"- {e.fig.full_name}, {c.get('where')}: \"{c.get('quote')}\": {c.get('outcome')}; "
        f"{c.get('without_variation')} without variation"
        for e in entries
        for c in _verdict(e.manifest)[1]
        if c.get("without_variation") and c.get("without_variation") != c.get("outcome")
    ]


def _checks(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The figure's checks of its setup (a table read back): shown apart, counted in no verdict."""
    judged = manifest.get("verdict") or {}
    return [c for c in judged.get("checks") or [] if isinstance(c, dict)]


def twins_of(entries: list[Entry]) -> set[str]:
    """The entries that are another entry's twin without variation (Figure.unvaried): set beside it, each
    claim's outcome there shown with the figure's own, and not counted as a figure or a finding of its own."""
    names = {e.fig.full_name for e in entries}
    return {t.full_name for e in entries if (t := e.fig.unvaried()) is not None and t.full_name in names}


def tally(entries: list[Entry]) -> str:
    """The verdicts, the claims (one quoted sentence one claim, however many figures judge it: it holds only
    where it holds in each), the deterministic ones among them, and the checks, each counted apart; a twin
    without variation is not counted (its outcomes stand beside its figure's: `moved_by_variation`)."""
    counts = dict.fromkeys(VERDICTS, 0)
    sentences: dict[tuple[str, str], list[dict[str, Any]]] = {}
    checks = 0
    twins = twins_of(entries)
    for e in entries:
        if e.fig.full_name in twins:
            continue
        kind, judged = _verdict(e.manifest)
        counts[kind] = counts.get(kind, 0) + 1
        for c in judged:
            sentences.setdefault((str(c.get("source")), str(c.get("quote"))), []).append(c)
        checks += len(_checks(e.manifest))
    outcomes = dict.fromkeys(OUTCOMES, 0)
    deterministic = by_design = 0
    for parts in sentences.values():
        outcome = all_of([str(c.get("outcome")) for c in parts])
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        deterministic += outcome != BY_DESIGN and all(
            c.get("deterministic") for c in parts if c.get("outcome") == outcome
        )
        by_design += outcome == DIFFERS and any(c.get("by_design") for c in parts)
    judged_twice = sum(1 for parts in sentences.values() if len(parts) > 1)
    beside = (
        f" (and {len(twins)} twin{'s' if len(twins) != 1 else ''} without variation beside them, not counted)"
        if twins
        else ""
    )
    return (
        "figures: "
        + ", ".join(f"{n} {k}" for k, n in counts.items())
        + beside
        + f"; claims (one quoted sentence each, {len(sentences)} in all, {judged_twice} of them judged on more "
        "than one figure): "
        + ", ".join(f"{n} {o}" for o, n in outcomes.items())
        + f"; of those decided, {deterministic} only as deterministic readings of the emulation (trials that do "
        f"not vary) and {by_design} differ by design; checks of the setup, counted in no verdict: {checks}"
    )


def _caveat(manifest: dict[str, Any]) -> str:
    """Why the intervals may be too narrow: trials run before each drew its own loss seed and start phase;
    and the cells whose trials do not vary."""
    judged = manifest.get("verdict") if isinstance(manifest.get("verdict"), dict) else {}
    trials = (judged or {}).get("trials") or {}
    said = []
    if trials.get("without_draw"):
        said.append(
            f"{trials['without_draw']} of {trials['ok']} trials ran before each trial drew its own loss seed and "
            "start phase: near replays of one another, whose intervals understate the spread of independent trials"
        )
    if trials.get("fixed"):
        said.append(fixed_text(trials))
    return "; ".join(said)


def _declared_html(standing: Standing | None) -> str:
    """Whether a declaration predates its rows, as a line of the page (a declaration newer than its rows marked)."""
    if standing is None:
        return ""
    state = _e(standing.state)
    return f"<br><span class='small {state}' data-declared='{state}'>{_e(standing.text())}</span>"


def _claim_row(c: dict[str, Any], standing: Standing | None = None) -> str:
    needed = f" ({needs_text(c['trials_needed'])})" if c.get("trials_needed") else ""
    reading = f"<br><span class='small'>why read so: {_e(c.get('why'))}</span>" if c.get("why") else ""
    reading += _declared_html(standing)
    return (
        f"<tr><td><q>{_e(c.get('quote'))}</q><br><span class='small'>{_e(c.get('where'))}</span>{reading}</td>"
        f"<td class='small'>{_e(c.get('test'))}</td><td class='small'>{_e(c.get('evidence'))}</td>"
        f"<td class='verdict {_e(_css(c.get('outcome')))}'>{_e(outcome_text(c).lower())}{_e(needed)}</td></tr>"
    )


def _css(outcome: object) -> str:
    return {"holds": "agrees", "differs": "differs", "undecided": "undecided"}.get(str(outcome), "bydesign")


def _facts(m: dict[str, Any]) -> list[tuple[str, str]]:
    paths = m.get("verification") or {}
    verified = sum(1 for v in paths.values() if v.get("ok"))
    git: dict[str, Any] = m["git"] if isinstance(m.get("git"), dict) else {}
    return [
        (
            "trials",
            f"{m.get('rows', '?')} ({m.get('trials_per_setting', '?')} per setting"
            f"{', quick' if m.get('quick') else ''}); failed: {m.get('failed_trials', 0)}, "
            f"failed attempts: {m.get('failed_attempts', 0)}, missing: {m.get('trials_missing', 0)}",
        ),
        ("run time", f"{m.get('trial_seconds_all_rows', '?')} s of trials"),
        (
            "paths verified",
            f"{verified} of {len(paths)} within tolerance"
            + "".join(f"; {v.get('path', k)}: {'ok' if v.get('ok') else 'OUT of tolerance'}" for k, v in paths.items()),
        ),
        ("congestion control", ", ".join(m.get("congestion_control") or []) or "-"),
        ("backend", ", ".join(m.get("shaper") or []) + "; switch " + ", ".join(m.get("switch") or [])),
        ("kernel", ", ".join(m.get("kernels_of_rows") or [str(m.get("kernel"))])),
        (
            "commit",
            f"rows: {', '.join(m.get('code_of_rows') or [])}; manifest: "
            f"{str(git.get('commit') or '?')[:12]}{' (dirty)' if git.get('dirty') else ''}",
        ),
    ]


def figure_html(entry: Entry) -> str:
    m = entry.manifest
    kind, claims = _verdict(m)
    of_claims = entry.claims_declared
    rows = "".join(_claim_row(c, of_claims.get((str(c.get("source")), str(c.get("quote"))))) for c in claims) or (
        "<tr><td colspan='4'>the source states no claim about this figure: unjudged</td></tr>"
    )
    rows += "".join(_claim_row(c) for c in _checks(m))
    facts = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in _facts(m))
    if entry.stale:
        facts += f"<tr><th>STALE</th><td>{_e(stale_text(entry))}</td></tr>"
    if entry.declared is not None:
        state = entry.declared.state
        head = "DECLARED AFTER ITS ROWS" if entry.declared.marked else "declared"
        facts += f"<tr class='{_e(state)}'><th>{head}</th><td>{_e(entry.declared.text())}</td></tr>"
    mark = (
        " <span class='verdict newer'>declared after its rows</span>"
        if entry.declared and entry.declared.marked
        else ""
    )
    notes = "".join(f"<li>{_e(n)}</li>" for n in m.get("notes") or [])
    return f"""
<div class="figure" id="{_e(entry.fig.full_name)}" data-figure="{_e(entry.fig.full_name)}" data-verdict="{_e(kind)}"
 data-declared="{_e(entry.declared.state if entry.declared else "")}">
<h3>{_e(entry.fig.full_name)}: {_e(m.get("title") or entry.fig.heading)}
 <span class="verdict {_e(kind)}">{_e(kind)}</span>{mark}</h3>
<img src="{_e(entry.image)}" alt="{_e(entry.fig.full_name)}">
<p><b>Each claim of the source, tested on our trials: {_e(kind)}{_e(_unvaried(m))}</b></p>
<table><tr><th>the source's words</th><th>test</th><th>our numbers</th><th>outcome</th></tr>{rows}</table>
<p class="small">{_e(_caveat(m))}</p>
<details><summary>notes</summary><ul>{notes}</ul></details>
<table class="small">{facts}</table>
</div>"""


def provenance(entries: list[Entry]) -> str:
    """Where every stored figure's rows came from, in one sentence: the commits over all figures, and the
    figures whose rows name none (measured before rows recorded their commit)."""
    commits: dict[str, list[str]] = {}
    unrecorded = []
    for e in entries:
        named = [str(c)[:12] for c in e.manifest.get("code_of_rows") or [] if c and c != "unrecorded"]
        if not named or len(named) != len(e.manifest.get("code_of_rows") or []):
            unrecorded.append(e.fig.full_name)
        for c in named:
            commits.setdefault(c, []).append(e.fig.full_name)
    if not commits:
        said = "no figure's rows name their commit"
    elif len(commits) == 1:
        said = f"every figure's rows that name a commit come from one commit, {next(iter(commits))}"
    else:
        said = f"the rows come from {len(commits)} commits: " + "; ".join(
            f"{c} ({len(figs)} figure{'' if len(figs) == 1 else 's'})"
            for c, figs in sorted(commits.items(), key=lambda kv: -len(kv[1]))
        )
    if unrecorded:
        said += f"; rows without their commit in {len(unrecorded)}: {', '.join(unrecorded)}"
    return said


def page(entries: list[Entry]) -> str:
    summary = tally(entries) + " (claims set by design are counted in no verdict)"
    body = []
    for study in expts.STUDIES:
        mine = [e for e in entries if e.fig.study == study.FIGURES[0].study]
        if not mine:
            continue
        deviations = sorted({d for e in mine for d in (e.manifest.get("deviations") or e.fig.deviations)})
        listed = "".join(f"<li>{_e(d)}</li>" for d in deviations)
        differently = f"<details><summary>what this study does differently</summary><ul>{listed}</ul></details>"
        body.append(f"<h2>Study {_e(mine[0].fig.study)}</h2><p>{_e(study.SOURCE)}</p>{differently}")
        body += [figure_html(e) for e in mine]
    index = "".join(
        f'<tr><td><a href="#{_e(e.fig.full_name)}">{_e(e.fig.full_name)}</a></td>'
        f'<td class="verdict {_e(_verdict(e.manifest)[0])}">{_e(_verdict(e.manifest)[0])}</td></tr>'
        for e in entries
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>netrepro: every figure beside its paper</title>
<style>{STYLE}</style><script>{SCRIPT}</script></head>
<body>
<h1>netrepro: every stored figure beside its paper</h1>
<p>{len(entries)} figures: {_e(summary)}. <span id="loaded" class="small"></span></p>
<p class="small">Provenance: {_e(provenance(entries))}.</p>
<table>{index}</table>
{"".join(body)}
</body></html>
"""


def _moved_lines(entries: list[Entry]) -> list[str]:
    """The findings' paragraph on the claims whose outcome the study's variation moved (none where no figure
    is judged beside its twin)."""
    judged_beside = [e for e in entries if (e.manifest.get("verdict") or {}).get("without_variation")]
    if not judged_beside:
        return []
    moved = moved_by_variation(entries)
    figures = f"{len(judged_beside)} figure{'s' if len(judged_beside) != 1 else ''}"
    claims = f"{len(moved)} claim{'s' if len(moved) != 1 else ''}"
    head = f"Judged beside their twins without variation ({figures}): " + (
        f"{claims} whose outcome the variation moved:" if moved else "no claim's outcome moved."
    )
    return [head, "", *moved, *([""] if moved else [])]


def findings(entries: list[Entry]) -> str:
    """Every stored figure's verdict and claims as Markdown (results/findings.md): generated, never by hand."""
    lines = [
        "# Findings: each claim of the sources, tested on the stored trials",
        "",
        "Generated by `run.sh report` from the figures' manifests; do not edit by hand. Each claim is the",
        "source's sentence, verbatim, with where it stands, how it is read, the test (the trial as the unit),",
        "our numbers with their interval, and the outcome: holds, differs, undecided (with the trials per",
        "series that would decide it) or set by design (the setup decides it: counted in no verdict).",
        "",
        f"Provenance: {provenance(entries)}.",
        "",
        f"Counts: {tally(entries)}.",
        "",
        *_moved_lines(entries),
        "| figure | verdict | holds | differs | undecided | set by design | of them deterministic | checks "
        "| rows from commits |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        kind, judged = _verdict(e.manifest)
        count = {o: sum(1 for c in judged if c.get("outcome") == o) for o in OUTCOMES}
        commits = ", ".join(str(c)[:12] for c in e.manifest.get("code_of_rows") or []) or "-"
        counted = " | ".join(str(count[o]) for o in OUTCOMES)
        apart = f"{sum(1 for c in judged if c.get('deterministic'))} | {len(_checks(e.manifest))}"
        lines.append(f"| [{e.fig.full_name}](#{_anchor(e.fig.full_name)}) | {kind} | {counted} | {apart} | {commits} |")
    for e in entries:
        kind, judged = _verdict(e.manifest)
        title = e.manifest.get("title") or e.fig.heading
        lines += ["", f"## {e.fig.full_name}", "", f"{title}: **{kind}**{_unvaried(e.manifest)}", ""]
        if not judged:
            lines.append("The source states no claim about this figure: unjudged.")
        if caveat := _caveat(e.manifest):
            lines += [f"Note: {caveat}.", ""]
        if e.stale:
            lines += [f"**Stale**: {stale_text(e)}.", ""]
        if e.declared is not None:
            said = e.declared.text()
            lines += [f"Declaration: **{said}**." if e.declared.marked else f"Declaration: {said}.", ""]
        for c in judged:
            needed = f" {needs_text(c['trials_needed']).capitalize()}." if c.get("trials_needed") else ""
            lines += [
                f"- > {c.get('quote')}",
                "",
                f"  ({c.get('where')}). Test: {c.get('test')}."
                + (f" Why read so: {c.get('why')}." if c.get("why") else ""),
                f"  Ours: {c.get('evidence')}. **{outcome_text(c).lower()}**.{needed}",
            ]
            if (claim := e.claims_declared.get((str(c.get("source")), str(c.get("quote"))))) and claim.marked:
                lines.append(f"  **{claim.text()}**.")
        for c in _checks(e.manifest):
            lines += [
                f"- Check of the setup (counted in no verdict): > {c.get('quote')}",
                f"  Ours: {c.get('evidence')}. **{outcome_text(c).lower()}**.",
            ]
    return "\n".join(lines) + "\n"


def stale_text(entry: Entry) -> str:
    return (
        f"the rows of {', '.join(entry.stale)} changed since this verdict was judged; "
        f"`run.sh {entry.fig.full_name} --plot-only` judges it again"
    )


def _anchor(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum() or ch in "-_ ").replace(" ", "-")


def write(tree: Path = results.REFERENCE, out: Path = results.RESULTS / "index.html") -> tuple[Path, list[Entry]]:
    """The report of the stored results under `tree`, written to `out` (replaced whole), and its
    findings as Markdown beside it (findings.md)."""
    entries = stored(tree, out.parent)
    results.replace_file(out, page(entries).encode())
    results.hand_back(out, out.parent)
    markdown = out.with_name("findings.md")
    results.replace_file(markdown, findings(entries).encode())
    results.hand_back(markdown, out.parent)
    return out, entries
