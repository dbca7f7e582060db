"""Study cubicplus's claims: its own tests on synthetic trials whose truth is known, and how the claims are wired.

The study's two tests of its own (`smaller_gain`: CUBIC+'s gain on one page
smaller than on others; `window_role`: throughput across initial windows
within a margin) take one value a trial, as netrepro.studykit.claims' kinds do; here
each is given trials drawn from normal distributions with known means, so
what it must say is known beforehand.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Any

import pytest

from expts import cubicplus
from ground.trials import Row
from netrepro.studykit import claims, decisions, evidence
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import BY_DESIGN, DIFFERS, HOLDS, UNDECIDED, ByDesign
from netrepro.studykit.spec import Figure

CUBIC, PLUS, PLUS_K = cubicplus.CUBIC.label, cubicplus.PLUS.label, cubicplus.PLUS_K.label


def fig(name: str) -> Figure:
    return next(f for f in cubicplus.FIGURES if f.name == name)


def trials(f: Figure, label: str, level: Any, mean: float, sd: float, n: int, seed: int) -> list[Row]:
    rng = random.Random(seed)
    return [
        Row(
            {
                "trial_key": f"{f.name}-{label}-{level}-{i}",
                "series": label,
                f.x: str(level),
                "status": "ok",
                f.y: repr(max(1e-6, rng.gauss(mean, sd))),
            }
        )
        for i in range(n)
    ]


def gain_rows(f: Figure, gain: float, level: str = "6%", spread: float = 0.03, n: int = 10, seed: int = 0) -> list[Row]:
    """CUBIC at 10 Mbit/s and CUBIC+ at `gain` times that, each with a relative spread, n trials each."""
    return trials(f, CUBIC, level, 10.0, 10.0 * spread, n, seed) + trials(
        f, PLUS, level, 10.0 * gain, 10.0 * gain * spread, n, seed + 1
    )


def judged(f: Figure, test: decisions.Test, rows: list[Row]) -> claims.Judged:
    return claims.judge([Claim("000_x.txt", "section 7.1", "a sentence here", test)], f, rows)[0]


def smaller(others: list[Row], levels: tuple[str, ...] = ("6%",)) -> decisions.Computed:
    return cubicplus.smaller_gain(("fig3",), levels, 0.10, beside=lambda f, name, rows: others)


def test_a_smaller_gain_than_the_larger_pages_holds() -> None:
    small, large = fig("fig5"), fig("fig3")
    verdict = judged(small, smaller(gain_rows(large, 2.0, seed=10)), gain_rows(small, 1.3))
    assert verdict.outcome == HOLDS, verdict.evidence()
    assert "gains 2" in verdict.evidence() and "x and 1.3" in verdict.evidence()


@pytest.mark.parametrize("ours", [1.3, 1.6])  # as large as theirs, or larger
def test_a_gain_as_large_or_larger_than_the_larger_pages_differs(ours: float) -> None:
    small, large = fig("fig5"), fig("fig3")
    verdict = judged(small, smaller(gain_rows(large, 1.3, seed=10)), gain_rows(small, ours))
    assert verdict.outcome == DIFFERS, verdict.evidence()


def test_a_gain_within_noise_is_undecided_and_names_the_trials_that_would_decide_it() -> None:
    small, large = fig("fig5"), fig("fig3")
    verdict = judged(small, smaller(gain_rows(large, 1.6, spread=0.5, n=4, seed=10)), gain_rows(small, 1.3, n=4))
    assert verdict.outcome == UNDECIDED, verdict.evidence()
    assert verdict.trials_needed is not None and verdict.trials_needed > 4


def test_replays_and_missing_trials_decide_nothing() -> None:
    small, large = fig("fig5"), fig("fig3")
    replays = judged(small, smaller(gain_rows(large, 2.0, spread=0.0)), gain_rows(small, 1.3, spread=0.0))
    assert replays.outcome == HOLDS and replays.deterministic  # no spread: read by its estimate
    alone = judged(small, smaller([]), gain_rows(small, 1.3))
    assert alone.outcome == UNDECIDED and "fig3's trials are not beside these" in alone.evidence()


def test_each_level_and_each_larger_page_is_judged() -> None:
    small, large, medium = fig("fig5"), fig("fig3"), fig("fig4")
    others = {"fig3": gain_rows(large, 2.0, seed=10), "fig4": gain_rows(medium, 1.3, seed=20)}  # fig4 no larger
    test = cubicplus.smaller_gain(("fig3", "fig4"), ("6%",), 0.10, beside=lambda f, name, rows: others[name])
    verdict = judged(small, test, gain_rows(small, 1.3))
    assert [(f.at, f.outcome) for f in verdict.findings] == [("6%, against fig3", HOLDS), ("6%, against fig4", DIFFERS)]
    assert verdict.outcome == DIFFERS  # one page against it is enough


def write(path: Path, rows: list[Row]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_the_larger_pages_trials_come_from_the_tree_that_holds_these(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, large = fig("fig5"), fig("fig3")
    results, reference = tmp_path / "results", tmp_path / "reference"
    monkeypatch.setattr("ground.results.RESULTS", results)
    monkeypatch.setattr("ground.results.REFERENCE", reference)
    ours, theirs = gain_rows(small, 1.3, seed=1), gain_rows(small, 1.3, seed=2)  # the same trials, other values
    write(reference / "cubicplus" / "fig5.csv", ours)
    write(reference / "cubicplus" / "fig3.csv", gain_rows(large, 2.0, seed=3))
    write(results / "cubicplus" / "fig5.csv", theirs)
    write(results / "cubicplus" / "fig3.csv", gain_rows(large, 1.1, seed=4))
    assert evidence.rows_beside(small, "fig3", ours) == gain_rows(large, 2.0, seed=3)
    assert evidence.rows_beside(small, "fig3", theirs) == gain_rows(large, 1.1, seed=4)
    assert evidence.rows_beside(small, "fig3", gain_rows(small, 1.3, seed=5)) == []  # held by neither
    assert evidence.rows_beside(small, "fig4", ours) == []  # no such figure beside them
    elsewhere = tmp_path / "out"  # a run's --out: searched first while that run judges
    write(elsewhere / "cubicplus" / "fig5.csv", ours)
    write(elsewhere / "cubicplus" / "fig3.csv", gain_rows(large, 1.5, seed=6))
    with evidence.searching(elsewhere):
        assert evidence.rows_beside(small, "fig3", ours) == gain_rows(large, 1.5, seed=6)
    assert evidence.rows_beside(small, "fig3", ours) == gain_rows(large, 2.0, seed=3)


def test_a_derived_figure_reads_the_larger_page_derived_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, large = fig("fig5").derive({"variation": "none"}), fig("fig3").derive({"variation": "none"})
    monkeypatch.setattr("ground.results.RESULTS", tmp_path / "results")
    reference = tmp_path / "reference"
    ours = gain_rows(small, 1.3, seed=1)
    write(reference / small.directory / small.csv_name, ours)
    write(reference / "cubicplus" / "fig3.csv", gain_rows(fig("fig3"), 1.1, seed=4))  # the declared one's
    assert evidence.rows_beside(small, "fig3", ours, (reference,)) == []  # fig3@variation=none not measured
    write(reference / large.directory / large.csv_name, gain_rows(large, 2.0, seed=3))
    assert small.directory == "cubicplus/fig5@variation=none" and large.directory == "cubicplus/fig3@variation=none"
    assert evidence.rows_beside(small, "fig3", ours, (reference,)) == gain_rows(large, 2.0, seed=3)


def window_rows(f: Figure, throughput: dict[int, float], odd: dict[int, float] | None = None) -> list[Row]:
    """The three CUBICs' throughput at each window; `odd` replaces CUBIC+ RTT-scaled K's."""
    out = []
    for i, label in enumerate((CUBIC, PLUS, PLUS_K)):
        means = {**throughput, **(odd or {})} if label == PLUS_K else throughput
        for j, (iw, mean) in enumerate(means.items()):
            out += trials(f, label, iw, mean, mean * 0.02, 8, 10 * i + j)
    return out


def test_the_window_has_little_role_when_throughput_stays_within_the_margin() -> None:
    f = fig("fig10")
    test = cubicplus.window_role((cubicplus.CUBIC, cubicplus.PLUS, cubicplus.PLUS_K), 0.20)
    flat = window_rows(f, {3: 9.5, 10: 10.0, 21: 10.5, 32: 10.6})
    verdict = judged(f, test, flat)
    assert verdict.outcome == HOLDS, verdict.evidence()
    assert [x.at for x in verdict.findings] == [CUBIC, PLUS, PLUS_K]
    # each window against the default, IW 10
    assert "initcwnd=3: ratio 0.9" in verdict.evidence() and "initcwnd=10:" not in verdict.evidence()
    steep = window_rows(f, {3: 9.5, 10: 10.0, 21: 10.5, 32: 10.6}, odd={3: 7.0})
    verdict = judged(f, test, steep)
    assert verdict.outcome == DIFFERS
    assert [x.outcome for x in verdict.findings] == [HOLDS, HOLDS, DIFFERS]


def test_the_papers_figures_on_trials_that_follow_the_source() -> None:
    """fig6 and fig12 on trials shaped as seed 000 describes them: every claim holds, so each test reads the
    series, the direction and the levels its sentence names."""
    f6 = fig("fig6")
    plt = {"0%": (500, 500), "2%": (1000, 1000), "6%": (20000, 12000), "8%": (27000, 14000), "10%": (33000, 15000)}
    rows = []
    for i, (level, (cubic, plus)) in enumerate(plt.items()):
        rows += trials(f6, CUBIC, level, cubic, cubic * 0.02, 10, 2 * i) + trials(
            f6, PLUS, level, plus, plus * 0.02, 10, 2 * i + 1
        )
    assert [j.outcome for j in claims.judge(f6.claims, f6, rows)] == [HOLDS, HOLDS, HOLDS]
    f12 = fig("fig12")
    rows = []
    for i, level in enumerate(cubicplus.LOSS):
        for k, s in enumerate(f12.series):
            mean = 1000 * (1 + i) * (1 + (0.05 * k * i if i > 1 else 0))  # alike at 0 and 2 %, apart after
            rows += trials(f12, s.label, level, mean, mean * 0.01, 10, 10 * i + k)
    assert [j.outcome for j in claims.judge(f12.claims, f12, rows)] == [HOLDS, HOLDS, HOLDS]


def test_claims_set_by_design_stand_only_on_loss_free_paths() -> None:
    """A claim is set by design only where the figure's path drops nothing: no loss, the default queue."""
    design = [f for f in cubicplus.FIGURES if any(isinstance(c.test, ByDesign) for c in f.claims)]
    assert [f.name for f in design] == ["fig7", "fig8", "fig9", "fig10", "fig11"]
    for f in design:
        assert f.fixed["loss"] == "0%" and "queue" not in f.fixed, f.name
        assert all(s.params.get("loss") is None for s in f.series)
        for c, j in zip(f.claims, claims.judge(f.claims, f, []), strict=True):
            forced = isinstance(c.test, ByDesign) and c.test.forced
            assert (j.outcome == BY_DESIGN) == (forced == "holds"), c.quote
            assert (j.outcome == DIFFERS and j.by_design) == (forced == DIFFERS), c.quote


def test_every_figure_states_its_claims_each_once() -> None:
    for f in cubicplus.FIGURES:
        quotes = [c.quote for c in f.claims]
        assert quotes and len(set(quotes)) == len(quotes), f.name
        assert all(c.source == cubicplus.SEED and c.reading for c in f.claims), f.name


def test_the_tiny_page_figure_runs_the_loss_grid_of_figs_3_to_5() -> None:
    tiny, small = fig("tiny"), fig("fig5")
    assert tiny.fixed == {**small.fixed, "page": "tiny"} and tiny.levels == small.levels
    assert tiny.series == small.series and tiny.y == small.y
    assert {p["loss"] for p in tiny.grid(quick=True)} == {"0%", "6%"}
