"""`run.sh bench reproduce`'s arithmetic, on constructed schedules and manifests (the run itself is the
benchmark's, docs/benchmarks.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from expts import STUDIES, iw
from ground.errors import UserError
from ground.manifests import read_manifest
from ground.results import REFERENCE
from netrepro.front.docfacts_bench import reproduce_run
from netrepro.lanes import bench_reproduce


def test_labs_over_time_add_up_the_figures_running_at_each_moment() -> None:
    schedule = {
        "figures": [
            {"figure": "a", "start_s": 0.0, "end_s": 10.0, "labs": 2},
            {"figure": "b", "start_s": 0.0, "end_s": 4.0, "labs": 3},
            {"figure": "c", "start_s": 4.0, "end_s": 12.0, "labs": 1},
            {"figure": "skipped", "start_s": None, "end_s": None, "labs": 0},
        ]
    }
    timeline = bench_reproduce.labs_over_time(schedule)
    assert timeline == [(0.0, 5), (4.0, 3), (10.0, 1), (12.0, 0)]
    assert bench_reproduce.mean_labs(timeline) == pytest.approx((5 * 4 + 3 * 6 + 1 * 2) / 12)


def test_each_claim_is_set_beside_the_references_by_its_quote_and_reading() -> None:
    def manifest(*outcomes: str) -> dict[str, object]:
        claims = [{"quote": f"q{k}", "reading": "r", "outcome": o, "evidence": f"e{k}"} for k, o in enumerate(outcomes)]
        return {"verdict": {"claims": [*claims, {"quote": "a check", "check": True, "outcome": "differs"}]}}

    found = bench_reproduce.compare_claims(
        iw.FIGURES[0], manifest("holds", "undecided", "holds"), manifest("holds", "differs")
    )
    assert [(c["outcome"], c["reference"], c["same"]) for c in found] == [
        ("holds", "holds", True),
        ("undecided", "differs", False),
        ("holds", "", False),  # the reference has no such claim: not the same
    ]


def test_a_study_that_does_not_exist_is_named() -> None:
    assert [f.study for f in bench_reproduce.figures_of("iw,web")][-1] == "web"
    with pytest.raises(UserError, match="no such study spdyy"):
        bench_reproduce.figures_of("iw,spdyy")


def test_a_run_made_in_chunks_is_summed_from_its_schedules_and_its_tree(tmp_path: Path) -> None:
    """Two chunks of `reproduce iw` (the second resumed from the first's rows): their wall times and labs add
    up, and the tree's numbers are its rows' (here the stored iw/fig2 and its manifest, so its claims are the
    reference's own); a tree without a chunk's schedule is refused, saying what it lacks."""
    tree = tmp_path / "tree"
    (tree / "iw").mkdir(parents=True)
    for name in ("fig2.csv", "fig2.manifest.json"):
        shutil.copy(REFERENCE / "iw" / name, tree / "iw" / name)
    with pytest.raises(UserError, match=r"no reproduce/iw/schedule-N\.json in it"):
        bench_reproduce.resumed("iw", tree, tmp_path / "out")
    here = tree / "reproduce" / "iw"
    here.mkdir(parents=True)
    chunk = {"cores": 2, "wall_s": 100.0, "figures": [{"figure": "iw/fig2", "start_s": 0.0, "end_s": 50.0, "labs": 4}]}
    (here / "schedule-1.json").write_text(json.dumps(chunk))
    (here / "schedule-2.json").write_text(json.dumps({**chunk, "wall_s": 300.0}))
    (here / "schedule.json").write_text(json.dumps({**chunk, "wall_s": 1.0}))  # the running chunk's: not summed
    doc = bench_reproduce.resumed("iw", tree, tmp_path / "out")
    assert json.loads((tmp_path / "out" / "reference.json").read_text())["wall_s"] == doc["wall_s"] == 400.0
    assert [c["wall_s"] for c in doc["chunks"]] == [100.0, 300.0] and doc["labs_max"] == 4
    assert doc["labs_mean"] == pytest.approx(4 * 100 / 400)  # 4 labs for 50 s of each chunk
    assert [c["labs_mean"] for c in doc["chunks"]] == [2.0, pytest.approx(4 * 50 / 300, abs=0.005)]
    stored = read_manifest(REFERENCE / "iw" / "fig2.manifest.json")
    assert doc["trials"] == 120 and doc["trials_not_ok"] == 0 and doc["code_of_rows"] == [stored.rows_code[0][:12]]
    fig2 = [c for c in doc["claims"] if c["figure"] == "iw/fig2"]
    assert fig2 and all(c["same"] for c in fig2)
    assert [f["trials"] for f in doc["figures"] if f["figure"] != "iw/fig2"] == [0, 0, 0]  # not run yet
    facts = reproduce_run(doc, "reference")  # docs/benchmarks.md's numbers of the run
    assert facts["bench.reference.chunks"] == "0:01:40, 0:05:00" and facts["bench.reference.cpu"] == "not recorded"
    assert (
        facts["bench.reference.rows"] == stored.rows_code[0][:12]
        and facts["bench.reference.trials"] == "120 trials, 0 not ok"
    )
    assert (
        "| iw/fig2 | 120 | 4, 4 | chunk 1: 0:00:00 to 0:00:50; chunk 2: 0:00:00 to 0:00:50 |"
        in facts["bench.reference.figures"]
    )


def test_all_is_every_study() -> None:
    assert {f.study for f in bench_reproduce.figures_of("all")} == {s.__name__.rsplit(".", 1)[-1] for s in STUDIES}


def test_a_claim_that_moved_fails_a_run_beside_its_reference_but_not_the_reference_measured_again() -> None:
    doc = {"trials_not_ok": 0, "paths_verified": 3, "paths": 3, "claims": [{"same": False}], "claims_same": 0}
    assert not bench_reproduce.passed(doc) and bench_reproduce.passed(doc, same_claims=False)
    assert not bench_reproduce.passed({**doc, "paths_verified": 2}, same_claims=False)
