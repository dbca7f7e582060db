"""`run.sh bench reproduce`'s arithmetic, on constructed schedules and manifests (the run itself is the
benchmark's, docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from expts import iw
from ground.errors import UserError
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
