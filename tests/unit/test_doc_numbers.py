"""Every number README.md and docs/ state about a stored result is its fact from the stored rows
(netrepro/front/docnumbers.py); `run.sh docs` rewrites them after a new stored run."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from ground.results import REFERENCE, REPO
from netrepro.front import docnumbers, docrows


def test_every_marked_number_is_its_fact_from_the_stored_rows() -> None:
    wrong = docnumbers.mismatches()
    assert not wrong, "run `./run.sh docs` (or fix the key):\n" + "\n".join(map(str, wrong))


def test_the_pages_hold_markers() -> None:
    known = docnumbers.facts()
    keys = {m.key for page in docnumbers.pages() for m in docnumbers.markers(page, known)}
    assert {"readme.list", "web.plt.table", "iw.fig2.table", "cubicplus.loss.table", "reference.table"} <= keys


def _copy_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "reference"
    shutil.copytree(REFERENCE, tree, ignore=shutil.ignore_patterns("*.png", "*.svg"))
    return tree


def test_a_changed_stored_value_makes_a_marked_number_differ(tmp_path: Path) -> None:
    tree = _copy_tree(tmp_path)
    path = tree / "iw" / "fig2.csv"
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    fields = list(rows[0])
    for row in rows:  # every IW 3 trial twice as slow: the median moves
        if row["initcwnd"] == "3":
            row["download_time_ms"] = str(float(row["download_time_ms"]) * 2)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)
    wrong = {m.key for m in docnumbers.mismatches(tree)}
    assert {"iw.fig2.table", "iw.fig2.iw3"} <= wrong


def test_rewrite_puts_the_facts_in_and_leaves_the_rest(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    page = repo / "docs" / "page.md"
    page.write_text("IW 3: <!--=iw.fig2.iw3-->1 ms<!--=-->, kept <!--=no.such.key-->7<!--=-->.\n", encoding="utf-8")
    (repo / "README.md").write_text("no markers\n", encoding="utf-8")
    changed = docnumbers.rewrite(repo=repo)
    assert sorted(m.key for m in changed) == ["iw.fig2.iw3", "no.such.key"]
    fact = docnumbers.facts()["iw.fig2.iw3"]
    kept = "kept <!--=no.such.key-->7<!--=-->"
    assert page.read_text(encoding="utf-8") == f"IW 3: <!--=iw.fig2.iw3-->{fact}<!--=-->, {kept}.\n"
    assert [m.key for m in docnumbers.mismatches(repo=repo)] == ["no.such.key"]


def test_an_unknown_key_is_reported(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("a <!--=web.plt.no_such-->0.5<!--=--> b\n", encoding="utf-8")
    [wrong] = docnumbers.mismatches(repo=repo)
    assert wrong.key == "web.plt.no_such" and wrong.fact is None and wrong.line == 1
    assert "no such fact" in str(wrong)


def test_a_marked_table_spans_lines() -> None:
    text = "x <!--=a.b-->\n\n| 1 |\n|---|\n\n<!--=--> y <!--=c-->2<!--=-->"
    assert [(m[1], m[2]) for m in docnumbers.MARKER.finditer(text)] == [("a.b", "\n\n| 1 |\n|---|\n\n"), ("c", "2")]


@pytest.mark.parametrize(("value", "shown"), [(513.24, "513"), (0.0745, "0.0745"), (18.93, "18.9"), (1248.4, "1248")])
def test_numbers_are_written_without_exponents(value: float, shown: str) -> None:
    assert docrows.num(value) == shown


def test_readme_stays_under_200_lines() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < 200, f"README.md has {lines} lines: move measurements to docs/"


def test_the_reference_table_lists_figures_not_their_trials_time_series() -> None:
    """A trial's time series (`<figure>.series/<name>.csv`) is a file of that figure's, not a CSV of
    rows: the table lists bufferbloat/delay once, with its trials."""
    listed = docnumbers.facts()["reference.table"]
    assert "`bufferbloat/delay`" in listed
    assert ".series" not in listed


def test_the_reference_table_counts_the_rows_a_twin_draws_once(tmp_path: Path) -> None:
    """linuxcc/fig4's twin without variation keeps a copy of fig6's twin's rows (copied there when the
    reference was measured again), to be drawn again: the table lists the rows once, and the study's lab
    time counts them once."""
    from netrepro.front.docrows import Stored

    for folder in ("fig6@variation=none/fig6.csv", "fig4@variation=none/fig4.csv"):
        (tmp_path / "linuxcc" / folder).parent.mkdir(parents=True)
        shutil.copy(REFERENCE / "linuxcc" / "fig6.csv", tmp_path / "linuxcc" / folder)
    facts = docnumbers.reference_facts(Stored(tmp_path))
    assert "`linuxcc/fig6@variation=none`" in facts["reference.table"]
    assert "fig4" not in facts["reference.table"]
    seconds = sum(r.trial_seconds or 0.0 for r in Stored(tmp_path).rows("linuxcc/fig6@variation=none/fig6"))
    assert f"| linuxcc | {seconds:.0f} s |" in facts["reference.studies"]
