"""Pre-registered figures: the derived figures the reference keeps are declared (each study's KEPT), and a
figure whose declaration or claims changed after its rows were measured is marked (netrepro.studykit.declared,
netrepro.front.report)."""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

import expts
from ground.results import REFERENCE
from netrepro.front import report
from netrepro.runner import derive
from netrepro.studykit import declared
from netrepro.studykit.declared import NEWER, Standing

# -- every derived figure the reference keeps is declared, and runs ------------------------------


def test_every_derived_figure_the_reference_keeps_is_declared() -> None:
    """A derived figure under results/reference is a study's KEPT one, or the twin without variation of a
    figure the reference keeps (Figure.unvaried: its rows measured before the study varied its trials)."""
    stored = sorted(str(d.relative_to(REFERENCE)) for d in REFERENCE.glob("*/*@*") if d.is_dir())
    kept = [*(f for study in expts.STUDIES for f in study.FIGURES), *expts.kept_figures()]
    declared_ = {fig.directory for fig in expts.kept_figures()}
    declared_ |= {twin.directory for fig in kept if (twin := fig.unvaried()) is not None}
    assert stored, "no derived figure under results/reference"
    assert [d for d in stored if d not in declared_] == [], "declare it in its study's KEPT, with its reason"


def test_every_kept_figure_is_the_derived_figure_its_setting_runs() -> None:
    for base, kept in expts.kept():
        pairs = [f"{k}={v}" for k, v in kept.overrides.items()]
        args = argparse.Namespace(set=pairs, vary=None, series=None)
        ran = derive.derived_figure(base, args)  # what `run.sh FIG --set K=V ...` runs
        fig = kept.of(base)
        assert fig.full_name == ran.full_name and fig.variant, fig.full_name
        assert derive.overrides(base, pairs) == dict(kept.overrides)
        assert kept.claims == base.claims and fig.claims == ran.claims, f"{fig.full_name}: its claims"
        assert kept.reason.strip(), fig.full_name


def test_the_browser_figures_are_declared_before_their_rows() -> None:
    names = {fig.full_name for fig in expts.kept_figures()}
    assert {"web/plt@client=firefox", "cubicplus/fig6@client=firefox", "cubicplus/fig12@client=firefox"} <= names


def test_every_figure_and_claim_is_found_in_its_study_source() -> None:
    for fig in expts.with_kept():
        found, missing = declared.extents(fig, expts.modules_of(fig.study), expts.kept_entry(fig))
        assert missing == [] and found, fig.full_name


# -- the commit that last changed a declaration, against its rows' --------------------------------

STUDY = """
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import Exact
from netrepro.studykit.spec import Figure

CHECK = Exact("a reading", lambda fig, rows: None)
FAST = Claim("s.txt", "section 1", "It is fast.", CHECK)
SLOW = Claim("s.txt", "section 2", "It is slow.", CHECK)

A = Figure(study="toy", name="a", title="A", workload="download", x="rtt", levels=("20ms",), y="y", fixed={},
           claims=(FAST,))
B = Figure(study="toy", name="b", title="B", workload="download", x="rtt", levels=("20ms",), y="y", fixed={},
           claims=(SLOW,))
FIGURES = (A, B)
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit(repo: Path, subject: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"toy_{path.stat().st_mtime_ns}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def standing_of(repo: Path, name: str, rows: str) -> Standing:
    module = load(repo / "toy.py")
    fig = getattr(module, name)
    return declared.standing(declared.declaration(fig, [module], repo=repo), [rows[:12]], repo=repo)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "toy.py").write_text(STUDY)
    commit(repo, "declare a and b")
    return repo


def test_a_figure_declared_before_its_rows_is_not_marked(repo: Path) -> None:
    (repo / "rows.csv").write_text("trial\n1\n")
    rows = commit(repo, "rows")
    said = standing_of(repo, "A", rows)
    assert said.state == declared.BEFORE and not said.marked
    assert said.text().startswith("declared before its rows")


def test_a_figure_whose_claim_changed_after_its_rows_is_marked(repo: Path) -> None:
    rows = commit_rows(repo)
    (repo / "toy.py").write_text(STUDY.replace("It is slow.", "It is rather slow."))
    changed = commit(repo, "b's claim reworded after its rows")
    said = standing_of(repo, "B", rows)
    assert said.state == NEWER and said.marked and said.declared == changed
    assert said.text() == f"declaration newer than its rows (declared {changed[:12]}, rows {rows[:12]})"
    assert not standing_of(repo, "A", rows).marked  # a's lines did not change


def test_a_change_above_the_declaration_does_not_mark_it(repo: Path) -> None:
    rows = commit_rows(repo)
    (repo / "toy.py").write_text('"""A docstring."""\n\n# more lines above\n' + STUDY)
    assert not standing_of(repo, "A", rows).marked  # not committed, and not its lines: HEAD's numbers
    commit(repo, "a docstring")
    assert not standing_of(repo, "A", rows).marked


def test_an_uncommitted_change_to_a_declaration_is_marked(repo: Path) -> None:
    rows = commit_rows(repo)
    (repo / "toy.py").write_text(STUDY.replace('title="A"', 'title="A, retitled"'))
    said = standing_of(repo, "A", rows)
    assert said.marked and "uncommitted" in said.text()


def test_without_git_history_it_is_unknown_not_marked(repo: Path, tmp_path: Path) -> None:
    rows = commit_rows(repo)
    copy = tmp_path / "tarball"
    copy.mkdir()
    (copy / "toy.py").write_text(STUDY)
    said = standing_of(copy, "A", rows)
    assert said.state == declared.UNKNOWN and not said.marked
    assert "not a git checkout" in said.text()


def test_rows_of_a_commit_not_in_the_history_are_unknown(repo: Path) -> None:
    said = standing_of(repo, "A", "0123456789ab")
    assert said.state == declared.UNKNOWN and not said.marked


def commit_rows(repo: Path) -> str:
    (repo / "rows.csv").write_text("trial\n1\n")
    return commit(repo, "rows")


# -- the report marks it --------------------------------------------------------------------------


def entry(standing: Standing | None) -> report.Entry:
    fig = expts.find("newcwv/pacing")
    claim = fig.claims[0]
    judged = {"quote": claim.quote, "source": claim.source, "where": claim.where, "outcome": "holds"}
    manifest = {"code_of_rows": ["af4479f7abd8"], "verdict": {"verdict": "agrees", "claims": [judged]}}
    of_claims = {(claim.source, claim.quote): standing} if standing else {}
    return report.Entry(fig, manifest, "x.png", declared=standing, claims_declared=of_claims)


def test_the_report_marks_a_figure_declared_after_its_rows() -> None:
    newer = Standing(NEWER, "d" * 40, ("af4479f7abd8",))
    page = report.figure_html(entry(newer))
    assert 'data-declared="newer"' in page and "declared after its rows</span>" in page
    assert "declaration newer than its rows (declared dddddddddddd, rows af4479f7abd8)" in page
    assert "DECLARED AFTER ITS ROWS" in page and "<span class='small newer' data-declared='newer'>" in page
    assert "**declaration newer than its rows" in report.findings([entry(newer)])


def test_the_report_does_not_mark_one_declared_before_or_unknown() -> None:
    for standing in (
        Standing(declared.BEFORE, "d" * 40, ("af4479f7abd8",)),
        Standing(declared.UNKNOWN, None, ("af4479f7abd8",), "not a git checkout"),
    ):
        page = report.figure_html(entry(standing))
        assert "newer" not in page and "DECLARED AFTER" not in page, standing
        assert standing.text() in page


def test_the_stored_derived_figures_declared_after_their_rows_are_marked() -> None:
    """pacing@idle_s=5 and its jitter runs were measured (af4479f) before their KEPT entries were written:
    those rows are marked, where they are kept (the figure's, or its twin's without variation once the
    reference is measured again); rows measured again after the entries were written are not."""
    entries = {e.fig.full_name: e for e in report.stored(REFERENCE, REFERENCE.parent)}
    for name in ("newcwv/pacing@idle_s=5", "newcwv/pacing@jitter=3ms", "newcwv/pacing@idle_s=5+jitter=3ms"):
        fig = next(f for f in expts.kept_figures() if f.full_name == name)
        for kept in (fig, fig.unvaried()):
            if kept is None or kept.full_name not in entries:
                continue
            said = entries[kept.full_name].declared
            assert said is not None, kept.full_name
            if said.rows == ("af4479f7abd8",):
                assert said.state in (NEWER, declared.UNKNOWN), (kept.full_name, said)
            else:
                assert said.state == declared.BEFORE, (kept.full_name, said)


# -- the manifest records it when rows are measured -----------------------------------------------


def test_the_manifest_records_the_declaration_when_rows_are_measured(tmp_path: Path) -> None:
    from netrepro.runner.manifest import declared_of

    fig = expts.find("iw/fig2")
    now = declared.Declaration(fig.full_name, (declared.Extent("expts/iw.py", 1, 2),), "c" * 40)
    manifest = tmp_path / "fig2.manifest.json"
    assert declared_of(fig, lambda f: now, manifest, measured=True) == {
        "commit": "c" * 40,
        "extents": ["expts/iw.py:1-2"],
    }
    assert declared_of(fig, None, manifest, measured=True) is None  # nothing passed to find it: not said
    manifest.write_text('{"format": 1, "declared": {"commit": "e", "extents": []}}')
    # a --plot-only measured no row: the record of when they were measured stands
    assert declared_of(fig, lambda f: now, manifest, measured=False) == {"commit": "e", "extents": []}
    manifest.write_text('{"format": 1}')  # a manifest from before the record: the declaration now
    assert declared_of(fig, lambda f: now, manifest, measured=False) == now.manifest()
