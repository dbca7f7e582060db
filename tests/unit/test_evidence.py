"""A judgement records a digest of every row it read; a stored judgement whose rows changed is stale.

On a figure of two series in a temporary results tree: the digests of a
fresh judgement match the rows; one changed value in the CSV makes the
stored judgement stale, naming the figure; a figure whose claims read
another figure's rows (cubicplus/fig5 reads fig3 and fig4) is stale when
those change, and is among the figures a run of them judges again.  And
every stored reference verdict stands on the rows stored beside it.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

import expts
from ground.manifests import read_manifest
from ground.results import REFERENCE
from ground.trials import trial_key
from netrepro.runner.manifest import judgement_of
from netrepro.studykit import evidence, plot
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import Better
from netrepro.studykit.spec import Figure, Series


def figure() -> Figure:
    claim = Claim("000_x.txt", "section 1", "a sentence here", Better("plt_ms", "B", "A", higher=False))
    series = (Series("A", {"n": 1}), Series("B", {"n": 2}))
    return Figure(study="t", name="f", title="t", workload="bulk", x="loss", levels=("1%",), y="plt_ms",
                  fixed={}, series=series, trials=3, claims=(claim,))  # fmt: skip


def write(tree: Path, fig: Figure, values: dict[str, list[float]]) -> list[dict[str, str]]:
    rows = []
    for params in fig.grid():
        series = str(params.get("series"))
        for i, v in enumerate(values[series]):
            rows.append({"trial_key": trial_key(params, i), "series": series, "loss": "1%", "status": "ok",
                         "seed": "1", "plt_ms": str(v)})  # fmt: skip
    path = tree / fig.directory / fig.csv_name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


def judged(fig: Figure, tree: Path) -> dict[str, Any]:
    rows = evidence.judged_rows(fig, tree / fig.directory / fig.csv_name, seed=1)
    judgement = judgement_of(fig, plot.summarize(fig, rows), rows)
    judgement["inputs"] = evidence.inputs(fig, rows, (tree,))
    return {"verdict": judgement, "trials_per_setting": fig.trials, "seed": 1, "quick": False}


def test_a_judgement_whose_rows_changed_is_stale(tmp_path: Path) -> None:
    fig = figure()
    write(tmp_path, fig, {"A": [1000, 1010, 990], "B": [700, 690, 710]})
    manifest = judged(fig, tmp_path)
    assert manifest["verdict"]["inputs"] == {
        "t/f": evidence.digest(evidence.judged_rows(fig, tmp_path / "t" / "f.csv", seed=1))
    }
    assert evidence.stale(fig, manifest, tmp_path) == []
    write(tmp_path, fig, {"A": [1000, 1010, 990], "B": [700, 690, 711]})  # one value changed
    assert evidence.stale(fig, manifest, tmp_path) == ["t/f"]
    del manifest["verdict"]["inputs"]  # judged before judgements recorded what they read
    assert evidence.stale(fig, manifest, tmp_path) == ["t/f (its judgement records no inputs)"]


def test_a_figure_that_reads_another_is_judged_again_with_it() -> None:
    fig3, fig4, fig5 = (expts.find(f"cubicplus/{n}") for n in ("fig3", "fig4", "fig5"))
    assert evidence.figures_read(fig5) == ("fig3", "fig4")
    assert evidence.readers(fig3, expts.all_figures()) == [fig5]
    assert evidence.readers(fig4, expts.all_figures()) == [fig5] and not evidence.readers(fig5, expts.all_figures())


@pytest.mark.parametrize(
    "fig",
    [f for f in expts.all_figures() if (REFERENCE / f.directory / f"{f.name}.manifest.json").is_file()],
    ids=lambda f: f.full_name,
)
def test_every_stored_verdict_stands_on_the_rows_beside_it(fig: Figure) -> None:
    manifest = read_manifest(REFERENCE / fig.directory / f"{fig.name}.manifest.json").doc
    assert evidence.stale(fig, manifest, REFERENCE) == [], f"re-judge it: run.sh {fig.full_name} --plot-only"


def test_a_run_reads_the_other_figures_of_a_claim_from_its_own_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run with --out outside the project (reproduce's tree) judges fig5's gain beside the fig3 and fig4
    it measured there, not on none."""
    import shutil

    from netrepro.runner import sweep

    out = tmp_path / "out"
    (out / "cubicplus").mkdir(parents=True)
    for name in ("fig3", "fig4", "fig5"):
        shutil.copy(REFERENCE / "cubicplus" / f"{name}.csv", out / "cubicplus")
    monkeypatch.setattr("ground.results.RESULTS", tmp_path / "results")  # neither holds these rows
    monkeypatch.setattr("ground.results.REFERENCE", tmp_path / "reference")
    sweep.run_figure(expts.find("cubicplus/fig5"), sweep.Options(out=out, plot_only=True))
    verdict = read_manifest(out / "cubicplus" / "fig5.manifest.json").doc["verdict"]
    assert verdict["inputs"]["cubicplus/fig3"] != evidence.digest([])
    assert "trials are not beside these" not in verdict["claims"][1]["evidence"]
