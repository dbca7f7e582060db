"""A figure's manifest read back through one reader: its format checked, an older one migrated."""

import json
from pathlib import Path

import pytest

from ground.manifests import MANIFEST_VERSION, ManifestUnreadable, migrate, read_manifest
from ground.results import REFERENCE


def test_a_stored_reference_reads_with_its_provenance_and_claims() -> None:
    stored = read_manifest(REFERENCE / "iw" / "fig5a.manifest.json")
    assert stored.doc["format"] == MANIFEST_VERSION
    assert stored.commit is not None and len(stored.commit) == 40 and not stored.dirty
    assert stored.rows == 210 and not stored.quick and stored.seed == 1
    assert stored.seconds_per_trial is not None and stored.seconds_per_trial > 0
    assert stored.verifications and stored.judged_claims
    assert all({"quote", "outcome"} <= set(c) for c in stored.judged_claims)


def test_a_manifest_from_before_formats_is_migrated_once() -> None:
    """Format 0 (no `format`): `git` was the commit as a string, "+dirty" on a tree with changes."""
    assert migrate({"git": "abc123+dirty", "rows": 3}) == {
        "git": {"commit": "abc123", "dirty": True}, "rows": 3, "format": MANIFEST_VERSION
    }  # fmt: skip
    assert migrate({"format": 1, "git": {"commit": "abc", "dirty": False}})["git"] == {"commit": "abc", "dirty": False}


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "there is none"),
        (b"{not json", "not JSON ("),
        (b"\xff", "not JSON ("),
        (b"[1, 2]", "not a manifest as a run writes it (a JSON list, not an object)"),
        (json.dumps({"format": MANIFEST_VERSION + 1}).encode(), f"newer than this netrepro reads ({MANIFEST_VERSION})"),
        (json.dumps({"format": "1"}).encode(), "format '1'"),
    ],
)
def test_what_is_not_a_manifest_is_refused_with_the_reason(tmp_path: Path, content: bytes | None, why: str) -> None:
    path = tmp_path / "fig.manifest.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ManifestUnreadable, match="") as refused:
        read_manifest(path)
    assert str(refused.value).startswith(f"{path}: ") and why in refused.value.why


def test_a_seed_is_none_where_the_manifest_has_none(tmp_path: Path) -> None:
    path = tmp_path / "fig.manifest.json"
    path.write_text(json.dumps({"format": 1}))
    assert read_manifest(path).seed is None and read_manifest(path).commit is None


def test_a_redraw_keeps_the_account_of_where_the_rows_ran(tmp_path: Path) -> None:
    """`engine` (the labs or the cluster that measured the rows) is the run's that measured them: a
    --plot-only measures none and keeps it, as a resume with nothing left to run does."""
    import shutil

    import expts
    from netrepro.runner import sweep
    from netrepro.runner.manifest import engine_of

    shutil.copytree(REFERENCE / "iw", tmp_path / "iw", ignore=shutil.ignore_patterns("*@*", "*.series", "fig5*"))
    path = tmp_path / "iw" / "fig2.manifest.json"
    account = {"launcher": "local", "workers": {"lab-1": {"settings": 3}}}
    path.write_text(json.dumps({**json.loads(path.read_text()), "engine": account}))
    sweep.run_figure(expts.find("iw/fig2"), sweep.Options(out=tmp_path, plot_only=True))
    assert read_manifest(path).doc["engine"] == account
    assert engine_of(None, path, measured=True) is None  # a run that measured here, on no engine
    assert engine_of({"launcher": "new"}, path, measured=True) == {"launcher": "new"}
    assert engine_of(None, tmp_path / "none.json", measured=False) is None
