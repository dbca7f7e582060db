"""Verdicts from claims, on the stored reference results (results/reference/), without a lab.

Every figure's claims are judged on its stored rows as a run judges them
(netrepro.runner.manifest.judgement_of): each claim gets an outcome, the figure a
verdict, and the manifest stored beside the rows holds that same judgement
(the references were re-judged from the committed claims), so that the
report, the captions and the README's generated findings say what the
claims say of these rows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import expts
from ground.results import REFERENCE
from ground.trials import DEFAULT_SEED, Row, latest_rows, read_rows, row_seed, trial_key
from netrepro.runner.manifest import judgement_lines, judgement_of
from netrepro.studykit import plot
from netrepro.studykit.claims import VERDICTS
from netrepro.studykit.decisions import OUTCOMES
from netrepro.studykit.spec import Figure


def stored_figures() -> list[Figure]:
    return [f for f in expts.all_figures() if (REFERENCE / f.directory / f.csv_name).exists()]


def judge_stored(fig: Figure) -> dict[str, Any]:
    """The judgement a --plot-only run of the stored figure makes: its grid's trials, the latest row of each."""
    wanted = {trial_key(p, i) for p in fig.grid() for i in range(fig.trials)}
    stored = read_rows(REFERENCE / fig.directory / fig.csv_name)
    rows = latest_rows(r for r in stored if r.get("trial_key") in wanted and row_seed(r) == DEFAULT_SEED)
    return judgement_of(fig, plot.summarize(fig, rows), rows)


def test_every_figure_declares_its_sources_claims_or_says_why_not() -> None:
    """A figure without a claim is unjudged: its notes say the source states nothing it can test."""
    for fig in expts.all_figures():
        assert fig.claims or fig.annotate is not None, fig.full_name


@pytest.mark.parametrize("fig", stored_figures(), ids=lambda f: f.full_name)
def test_every_stored_result_is_judged_claim_by_claim(fig: Figure) -> None:
    judged = judge_stored(fig)
    assert judged["verdict"] in VERDICTS
    assert [c["quote"] for c in judged["claims"]] == [c.quote for c in fig.claims if not c.check]
    assert [c["quote"] for c in judged["checks"]] == [c.quote for c in fig.claims if c.check]
    for c in judged["claims"]:
        assert c["outcome"] in OUTCOMES and c["evidence"], c
        assert c["trials_needed"] is None or c["outcome"] == "undecided", c
    assert judged["verdict"] != "unjudged" or all(c["outcome"] == "set by design" for c in judged["claims"])


@pytest.mark.parametrize("fig", stored_figures(), ids=lambda f: f.full_name)
def test_the_stored_manifest_holds_the_claims_judgement_of_its_rows(fig: Figure) -> None:
    """The stored figure was re-judged with the claims as committed: a claim changed since would show here."""
    manifest = json.loads((REFERENCE / fig.directory / f"{fig.name}.manifest.json").read_text())
    stored = manifest["verdict"]
    judged = judge_stored(fig)
    assert stored["verdict"] == judged["verdict"], fig.full_name
    assert [(c["quote"], c["outcome"]) for c in stored["claims"]] == [
        (c["quote"], c["outcome"]) for c in judged["claims"]
    ]


@pytest.mark.parametrize("fig", expts.all_figures(), ids=lambda f: f.full_name)
def test_claims_cope_with_a_quick_run_and_with_no_rows(fig: Figure) -> None:
    """A quick run has fewer levels and series, a failed one no rows: the claims say what they can (undecided
    where the trials are missing), and never stop the run (the manifest is written after them)."""
    path = REFERENCE / fig.directory / fig.csv_name
    rows = latest_rows(read_rows(path)) if path.exists() else []
    quick = {str(p[fig.x]) for p in fig.grid(quick=True)}
    series = {str(p.get("series", "")) for p in fig.grid(quick=True)}
    for subset in ([r for r in rows if r.get(fig.x) in quick and r.get("series", "") in series], []):
        judged = judgement_of(fig, plot.summarize(fig, subset), subset)
        assert judged["verdict"] in VERDICTS
        if not subset:  # nothing to read: undecided, unless the design decides it either way
            assert all(
                c["outcome"] in ("undecided", "set by design") or c["by_design"] for c in judged["claims"]
            ), judged
        assert judgement_lines(judged)[0].startswith("verdict: ")


def test_the_verdict_lines_quote_each_claim_and_say_when_trials_were_replays() -> None:
    """cubicplus/fig3's stored trials each drew their own loss seed and start phase: no note; the same rows
    without their draws (as every row was stored before trials drew them) are counted and said to be replays."""
    fig = expts.find("cubicplus/fig3")
    judged = judge_stored(fig)
    lines = judgement_lines(judged)
    assert lines[0].startswith(f"verdict: {judged['verdict']} (")
    assert all(f'"{c.quote}"' in "\n".join(lines) for c in fig.claims)
    assert judged["trials"] == {"ok": 250, "without_draw": 0, "cells": 25, "fixed": []}
    assert not any("near replays" in x or "do not vary" in x for x in lines[1:])
    rows = [Row({**r, "draw_seed": ""}) for r in latest_rows(read_rows(REFERENCE / fig.directory / fig.csv_name))]
    before = judgement_of(fig, plot.summarize(fig, rows), rows)
    assert before["trials"] == {"ok": 250, "without_draw": 250, "cells": 25, "fixed": []}
    assert "250 of 250 trials ran before each trial drew its own" in judgement_lines(before)[-1]
