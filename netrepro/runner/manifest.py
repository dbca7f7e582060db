"""What a figure's manifest says beside its figure: provenance, the design, the verdict, the reference.

`figure_manifest` gathers what a reviewer needs: the code and machine that
drew the figure, and apart from them the commits, kernels, hosts, switches
and implementations the rows ran on; the grid, the overrides and the seed;
each path's verification (`earlier_verifications` carries a resumed
figure's over); the points and the failures.  `judgement_of` is the
figure's verdict on its rows (its claims, netrepro.studykit.claims), which
the caption, the manifest and the terminal show (`judgement_lines`).
`reference_of` finds the project's reference reproduction of a declared
figure (results/reference/) to set beside a run's own numbers.
`declared_of` is the commit that last changed the figure's declaration and
claims when its rows were measured (netrepro.studykit.declared), and
`engine_of` where they ran; a run that measures none keeps the earlier's.
`beside_unvaried` sets each claim's judgement without the study's variation
(the figure's `@variation=none` twin, stored beside it) next to its own.  The sweep
(netrepro.runner.sweep) calls these once its trials are in; ground.manifests
reads the manifests they wrote.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ground import results
from ground.manifests import ManifestUnreadable, read_manifest
from ground.trials import DEFAULT_SEED, Row, latest_rows, read_rows, trial_key
from netrepro.runner.shards import Shard
from netrepro.runner.workloads import CLIENT
from netrepro.studykit import cells, claims, evidence, plot
from netrepro.studykit.declared import Declaration
from netrepro.studykit.spec import Figure, Params, Point, Rows, variant_name
from netrepro.studykit.variation import KEY as VARIATION_KEY

log = logging.getLogger("netrepro.runner.manifest")


class RunChoices(Protocol):
    """What a run chose that its manifest records (the sweep's Options)."""

    overrides: dict[str, Any]
    quick: bool
    shard: Shard | None
    seed: int


def earlier_verifications(manifest: Path, fresh: bool) -> dict[str, Any]:
    """The path verifications of the runs that made the CSV's earlier rows (a resumed or re-plotted
    figure keeps them; this run's own verifications are added over them)."""
    if fresh or not manifest.exists():
        return {}
    try:
        return read_manifest(manifest).verifications
    except ManifestUnreadable as e:
        log.warning("%s: the earlier runs' path verifications are not carried over", e)
        return {}


def _ran_as(row: Row) -> str:
    """How a trial's congestion control ran: `cubic_plus (lkm)`, `vegas (bpf as bpf_vegas)`."""
    registered = row.text("cc_registered")
    as_ = f" as {registered}" if registered and registered != row.cc else ""
    return f"{row.cc} ({row.cc_impl}{as_})"


def figure_manifest(
    fig: Figure,
    opts: RunChoices,
    grid: list[Params],
    trials: int,
    missing: int,
    rows: Rows,
    verifications: dict[str, Any],
    points: list[Point],
    notes: list[str],
    failed_attempts: int = 0,
) -> dict[str, Any]:
    """What a reviewer needs beside the figure: provenance, the design, what the rows ran on, the result.

    `rows` are the latest row of each trial; `failed_attempts` counts every failed row the CSV
    holds for them (retried ones included).  The machine that ran the rows (`*_of_rows`, from the
    rows) is told apart from the one that drew the figure and wrote the manifest (`drawn_by`, and
    the provenance at the top).
    """
    made = results.provenance()
    return {
        **made,
        "drawn_by": {"host": made["host"], "kernel": made["kernel"], "commit": results.version_of(made["git"])},
        "figure": fig.full_name,
        "title": fig.heading,
        # a derived figure: the declared one it comes from, and what differs
        "derived_from": f"{fig.study}/{fig.name}" if fig.variant else None,
        "workload": fig.workload,
        "topology": fig.topology.describe(),
        "factor": {"name": fig.x, "levels": [str(p[fig.x]) for p in grid[:: len(fig.series)]]},
        "series": [{"label": s.label, "params": dict(s.params)} for s in fig.series],
        "fixed": {k: str(v) for k, v in {**fig.fixed, **opts.overrides}.items()},
        "overrides": {k: str(v) for k, v in {**fig.overrides, **opts.overrides}.items()},
        "trials_per_setting": trials,
        "trials_missing": missing,
        "quick": opts.quick,
        "shard": str(opts.shard) if opts.shard is not None else None,
        "seed": opts.seed,
        # the manifest's `git` is the code that wrote it; the trials may have run earlier, from these
        "code_of_rows": sorted({r.code or "unrecorded" for r in rows}),
        "hosts_of_rows": sorted({r.host or "unrecorded" for r in rows}),
        "kernels_of_rows": sorted({r.kernel or "unrecorded" for r in rows}),
        "switches_of_rows": sorted({r.switch or "unrecorded" for r in rows}),
        "cc_impls_of_rows": sorted({r.cc_impl or "unrecorded" for r in rows}),
        "shaper": sorted({r.backend for r in rows}),
        # ovs or bridge ("none": a chain has no switch); runs before Open vSwitch came all had the bridge
        "switch": sorted({v.get("switch", "bridge") for v in verifications.values()}),
        # false where netem took no seed (Linux or iproute2 older than 6.3)
        "loss_repeatable": all(r.text("loss_seeded") != "false" for r in rows),
        "congestion_control": sorted({_ran_as(r) for r in rows if r.cc}),
        "verification": verifications,
        "finding_of_the_source": fig.finding,
        "deviations": list(fig.deviations) + ([fig.quick_note] if opts.quick and fig.quick_note else []),
        "notes": notes,
        "points": [p.__dict__ for p in points],
        "rows": len(rows),
        "failed_trials": sum(1 for r in rows if not r.ok),
        "failed_attempts": failed_attempts,
        "trial_seconds_all_rows": round(sum(r.trial_seconds or 0.0 for r in rows), 1),
    }


def judgement_of(
    fig: Figure, points: list[Point], rows: Rows, judged: Sequence[claims.Judged] | None = None
) -> dict[str, Any]:
    """The figure's verdict on its rows: its claims judged (netrepro.studykit.claims; `judged`: as the looks
    of --until-decided froze them, netrepro.runner.looks), and how many of its trials ran before each trial
    drew its own loss seed and start phase (ground.trials.trial_draw)."""
    judgement = claims.verdict(claims.judge(fig.claims, fig, rows) if judged is None else judged)
    judgement["inputs"] = evidence.inputs(fig, rows)  # every row it read, as digests: a later change shows
    ok = [r for r in rows if r.ok]
    found = cells.of_figure(fig, rows)
    judgement["trials"] = {
        "ok": len(ok),
        "without_draw": sum(1 for r in ok if r.draw_seed is None),
        "cells": len(found),  # each series at each level with two trials or more
        # the cells whose trials do not vary beyond their timer noise
        "fixed": [cells.cell_name(fig, series, level) for (series, level), c in found.items() if c.fixed],
    }
    if not fig.claims and fig.finding:
        judgement["finding"] = fig.finding  # prose, not a claim: said so, since it reads like one
    return judgement


def beside_unvaried(judgement: dict[str, Any], fig: Figure, tree: Path) -> None:
    """Set beside each claim of `judgement` its outcome without the study's variation, as the twin's manifest
    stored in `tree` keeps it (`without_variation`), and the twin's verdict beside the figure's: a claim that
    holds under both is a finding about the mechanism, one that holds only without variation a finding about
    the emulator.  Nothing where the figure has no twin or none is stored, or the twin's was drawn on no rows
    (a --plot-only of a twin never measured judges nothing); a twin's manifest that cannot be read is said
    so in the judgement (its caption and the report show it), not passed over."""
    twin = fig.unvaried()
    if twin is None or not (path := twin.manifest_in(tree)).exists():
        return
    try:
        doc = read_manifest(path).doc
    except ManifestUnreadable as e:
        log.warning("%s: its judgement without variation is not shown", e)
        judgement["without_variation"] = {"figure": twin.full_name, "verdict": "unread", "why": str(e)}
        return
    if doc.get("rows") == 0:
        log.warning("%s: drawn on no rows, so not set beside %s", path, fig.full_name)
        return
    found = doc.get("verdict")
    theirs: dict[str, Any] = found if isinstance(found, dict) else {}
    outcomes = {c.get("quote"): c for c in theirs.get("claims") or [] if isinstance(c, dict) and c.get("outcome")}
    judgement["without_variation"] = {
        "figure": twin.full_name,
        "verdict": theirs.get("verdict") or "unjudged",
        "code_of_rows": list(doc.get("code_of_rows") or []),
    }
    for c in judgement["claims"]:
        if twin_claim := outcomes.get(c["quote"]):
            c["without_variation"] = twin_claim["outcome"]
            if twin_claim.get("deterministic"):  # decided only as a deterministic reading of the emulation
                c["without_variation_deterministic"] = True


def judgement_lines(judgement: Mapping[str, Any]) -> list[str]:
    """The verdict and each claim as the caption and the terminal show them."""
    counts = judgement["counts"]
    head = f"verdict: {judgement['verdict']} (" + ", ".join(f"{n} {o}" for o, n in counts.items() if n) + ")"
    if not judgement["claims"]:
        head = "verdict: unjudged (the figure states no claim of its source)"
        if judgement.get("finding"):
            head = (
                f"verdict: unjudged: the figure's finding ({judgement['finding']!r}) is prose, not a claim with a "
                "test (a study file's [[figure.claim]], or a built-in figure's `claims`, judges it)"
            )
    if judgement["verdict"] == "deterministic":
        head += ": every claim holds, but only as a deterministic reading of the emulation (its trials do not vary)"
    head += claims.unvaried_text(judgement)
    checks = judgement.get("checks") or []
    lines = [head, *(f"  {claims.line_of(c)}" for c in judgement["claims"])]
    if checks:
        lines += [
            f"checks of the setup ({len(checks)}, counted in no verdict):",
            *(f"  {claims.line_of(c)}" for c in checks),
        ]
    trials = judgement.get("trials") or {}
    if trials.get("without_draw"):
        lines.append(
            f"  note: {trials['without_draw']} of {trials['ok']} trials ran before each trial drew its own loss "
            "seed and start phase: near replays of one another, whose intervals understate the spread of "
            "independent trials"
        )
    if trials.get("fixed"):
        lines.append(f"  note: {cells.fixed_text(trials)}")
    return lines


@dataclass
class Reference:
    """The project's reference reproduction of a figure: where it is, what made it, its points."""

    csv: Path
    points: list[Point]
    rows: int
    made_by: dict[str, Any]
    of: str = ""  # a derived figure's: which figure's reference it is, and how that one differs

    def manifest(self) -> dict[str, Any]:
        return {
            "csv": str(self.csv.relative_to(results.REPO)) if self.csv.is_relative_to(results.REPO) else str(self.csv),
            "of": self.of or None,
            "rows": self.rows,
            **self.made_by,
            "points": [p.__dict__ for p in self.points],
        }

    def describe(self) -> str:
        machine = ", ".join(f"{k} {v}" for k, v in self.made_by.items() if v)
        of = f"; {self.of}" if self.of else ""
        return f"{self.manifest()['csv']} ({self.rows} trials; {machine}{of})"


CLIENT_KEYS = {"client"}  # a figure derived by these alone is drawn beside the declared one's reference


def reference_of(fig: Figure, out: Path, reference: Path | None = None) -> Reference | None:
    """The reference reproduction of a declared figure, to set beside a run's own numbers.

    None for a derived figure (its parameters are not the reference's), for a
    run that writes the reference itself, and where there is none; but a
    figure derived only by who loads the page (`--set client=chromium`) is
    drawn beside the declared figure's reference, its loads by h2load (the
    two differ in the client alone), its own stored reference too; and such
    a figure without variation (`client=chromium+variation=none`) beside the
    declared figure's twin (`@variation=none`), whose loads by h2load differ
    from its own in the client alone.
    """
    reference = reference or results.REFERENCE
    of = ""
    derived_by = "+".join(f"{k}={v}" for k, v in fig.overrides.items())
    client = {k: v for k, v in fig.overrides.items() if k in CLIENT_KEYS}
    rest = {k: v for k, v in fig.overrides.items() if k not in CLIENT_KEYS}
    declared = fig.declared
    if declared is not None and client and set(rest) <= {VARIATION_KEY} and fig.variant == variant_name(derived_by):
        fig = declared.derive(rest) if rest else declared
        by = "+".join(f"{k}={v}" for k, v in client.items())
        of = f"the reference of {fig.full_name} as declared (client {CLIENT.default}), beside {by}"
    csv_path = reference / fig.directory / fig.csv_name
    # a figure is not drawn beside itself (a run that writes the reference), but beside the declared one
    itself = out.resolve() == reference.resolve() and not of
    if (fig.variant and not of) or itself or not csv_path.is_file():
        return None
    made_by: dict[str, Any] = {"seed": DEFAULT_SEED}
    try:
        stored = read_manifest(reference / fig.directory / f"{fig.name}.manifest.json")
        made_by = {
            "git": stored.commit,
            "kernel": stored.doc.get("kernel"),
            "shaper": ",".join(stored.doc.get("shaper") or []),
            "seed": DEFAULT_SEED if stored.seed is None else stored.seed,
        }
    except (ManifestUnreadable, ValueError, TypeError) as e:
        log.warning("%s: the reference is shown without its provenance", e)
    wanted = {trial_key(p, i) for p in fig.grid() for i in range(fig.trials)}
    rows = latest_rows(r for r in read_rows(csv_path) if r.key in wanted and r.seed == made_by["seed"])
    if not rows:
        return None
    return Reference(csv_path, plot.summarize(fig, rows), len(rows), made_by, of)


def _earlier(manifest: Path, key: str, what: str) -> dict[str, Any] | None:
    """The earlier manifest's record `key` (a section), or None where it has none or cannot be read."""
    if not manifest.exists():
        return None
    try:
        earlier = read_manifest(manifest).doc.get(key)
    except ManifestUnreadable as e:
        log.warning("%s: its record of %s is not carried over", e, what)
        return None
    return dict(earlier) if isinstance(earlier, dict) else None


def declared_of(
    fig: Figure, declaration: Callable[[Figure], Declaration] | None, manifest: Path, measured: bool
) -> dict[str, Any] | None:
    """What the manifest records of the figure's declaration (`declared`: its commit and lines) when its rows
    were measured: this run's, where it measured rows; where it measured none (--plot-only, a merge), the
    earlier manifest's, if it records one; None where the front passed no way to find it."""
    if not measured and (earlier := _earlier(manifest, "declared", "the figure's declaration")) is not None:
        return earlier
    return declaration(fig).manifest() if declaration is not None else None


def engine_of(this_run: dict[str, Any] | None, manifest: Path, measured: bool) -> dict[str, Any] | None:
    """The manifest's account of where the rows ran (`engine`: the labs or the cluster, netrepro.engine):
    this run's, where it measured rows; where it measured none (--plot-only, a resume with nothing left),
    the earlier manifest's, so that drawing the figure again does not lose how its rows were measured."""
    if measured or this_run is not None:  # (a look of --until-decided may measure where nothing was to do)
        return this_run
    return _earlier(manifest, "engine", "where its rows ran")
