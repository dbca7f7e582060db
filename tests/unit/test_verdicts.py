"""Verdicts as data: a figure's judge tests the source's claims on its points; spec.verdict sums them up.

Judged here on the stored reference results (results/reference/), without
a lab: the verdicts the README states for them.
"""

import pytest

import expts
from ground.results import REFERENCE
from ground.trials import latest_rows, read_rows
from netrepro import plot
from netrepro.spec import VERDICTS, Check, Figure, verdict


def test_the_verdict_of_checks() -> None:
    yes, no = Check("a", True, "1"), Check("b", False, "2")
    assert [verdict(c)["verdict"] for c in ([yes, yes], [yes, no], [no], [])] == [
        "agrees", "partly", "differs", "unjudged",
    ]  # fmt: skip
    assert verdict([no])["checks"] == [{"claim": "b", "holds": False, "evidence": "2", "note": "b; ours: 2: DIFFERS"}]


def stored_figures() -> list[Figure]:
    return [f for f in expts.all_figures() if (REFERENCE / f.directory / f.csv_name).exists()]


def test_every_figure_has_a_judge() -> None:
    assert [f.full_name for f in expts.all_figures() if f.judge is None] == []


def judge_stored(fig: Figure) -> dict[str, object]:
    assert fig.judge is not None
    rows = latest_rows(read_rows(REFERENCE / fig.directory / fig.csv_name))
    return verdict(fig.judge(fig, plot.summarize(fig, rows), rows))


@pytest.mark.parametrize("fig", stored_figures(), ids=lambda f: f.full_name)
def test_every_stored_result_has_a_verdict(fig: Figure) -> None:
    judged = judge_stored(fig)
    assert judged["verdict"] in ("agrees", "partly", "differs") and judged["checks"], judged


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("iw/fig2", "agrees"),  # 3->10 30 %, 3->26 42 %, 26->42 0 %
        ("iw/fig5b", "agrees"),  # the largest IW 26 gain at the highest rate
        ("cubicplus/fig3", "agrees"),  # CUBIC+ better beyond noise at 6, 8, 10 % loss
        ("cubicplus/fig5", "differs"),  # the small page gains 29 to 42 %, not "little"
        ("cubicplus/fig9", "differs"),  # CUBIC not better under delay for the large page
        ("cubicplus/fig10", "partly"),  # the variants alike, but the window matters (48 %)
        ("spdy/betatable", "agrees"),  # all twelve rows of seed 003's table, read back from the kernel
        ("newcwv/fig9", "agrees"),  # newCWV loses more segments than NewReno+SACK
    ],
)
def test_the_stored_verdicts_are_those_the_readme_states(name: str, expected: str) -> None:
    assert judge_stored(expts.find(name))["verdict"] == expected


def test_a_figure_prints_its_checks_as_it_judges_them() -> None:
    """The caption's verdict sentences are the checks' notes: one computation, not two."""
    fig = expts.find("cubicplus/fig10")
    rows = latest_rows(read_rows(REFERENCE / fig.directory / fig.csv_name))
    points = plot.summarize(fig, rows)
    assert fig.annotate is not None and fig.judge is not None
    notes = fig.annotate(fig, points, rows, None)
    assert [c.note for c in fig.judge(fig, points, rows)] == notes[-2:]


@pytest.mark.parametrize("fig", expts.all_figures(), ids=lambda f: f.full_name)
def test_a_judge_copes_with_a_quick_run_and_with_no_rows(fig: Figure) -> None:
    """A quick run has fewer levels and series, a failed one no rows: the judge says what it can, and
    never stops the run (the manifest is written after it)."""
    assert fig.judge is not None
    path = REFERENCE / fig.directory / fig.csv_name
    rows = latest_rows(read_rows(path)) if path.exists() else []
    quick = {str(p[fig.x]) for p in fig.grid(quick=True)}
    series = {str(p.get("series", "")) for p in fig.grid(quick=True)}
    subsets = [[r for r in rows if r.get(fig.x) in quick and r.get("series", "") in series], []]
    for subset in subsets:
        points = plot.summarize(fig, subset)
        judged = verdict(fig.judge(fig, points, subset))
        assert judged["verdict"] in (*VERDICTS, "unjudged")
