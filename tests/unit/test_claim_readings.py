"""A claim's reading is generated from its test's parameters; the prose beside it (`why`) states no
threshold of its own.

The reading a reader sees (`Claim.reading`) is the test's own description, made from its threshold,
direction and levels, so that it cannot say "at least 10 %" while the test asks for 5 %.  The
justification (`why`) may name percentages only where the reading, the quote, the figure (its levels and
the finding it states) or the source's own text gives them: a number a justification made up would be a
threshold the test does not apply.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import expts
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import AllOf, Better, ByDesign, Regrouped, Same, Test, Trend, Within
from netrepro.studykit.spec import Figure

PERCENT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) ?%")
SEEDS = Path(__file__).resolve().parents[3] / "shared" / "seeds"


def declared() -> list[tuple[Figure, Claim]]:
    return [(fig, c) for fig in expts.all_figures() for c in fig.claims]


def percents(text: str) -> set[float]:
    return {round(float(m), 6) for m in PERCENT.findall(text)}


def leaves(test: Test) -> list[Test]:
    if isinstance(test, AllOf):
        return [t for inner in test.tests for t in leaves(inner)]
    if isinstance(test, Regrouped):
        return leaves(test.test)
    if isinstance(test, ByDesign):
        return [test, *(leaves(test.otherwise) if test.otherwise is not None else [])]
    return [test]


def threshold(test: Test) -> str | None:
    """What the reading must say of a test's threshold, as the test's parameters give it."""
    if isinstance(test, Better):
        return f"by at least {test.worth * 100:.3g} %" if test.ratio else f"by at least {test.worth:.3g}"
    if isinstance(test, Same):
        return f"within {test.margin * 100:.3g} %" if test.ratio else f"within +- {test.margin:.3g}"
    if isinstance(test, Trend):
        return f"by at least {test.worth * 100:.3g} %"
    if isinstance(test, Within):
        return f"{test.high:.3g}" if test.high != float("inf") else f"{test.low:.3g}"
    return None


@pytest.mark.parametrize(("fig", "claim"), declared(), ids=lambda v: getattr(v, "full_name", "") or "")
def test_the_reading_is_the_tests_own_description_with_its_threshold(fig: Figure, claim: Claim) -> None:
    for test in leaves(claim.test):
        said = threshold(test)
        assert said is None or said in claim.reading, f"{fig.full_name}: {said!r} not in {claim.reading!r}"
        levels = getattr(test, "levels", None)
        if levels and not isinstance(claim.test, Regrouped):
            assert all(str(level) in claim.reading for level in levels), (fig.full_name, levels)


@pytest.mark.parametrize(("fig", "claim"), declared(), ids=lambda v: getattr(v, "full_name", "") or "")
def test_the_justification_states_no_threshold_the_test_does_not_apply(fig: Figure, claim: Claim) -> None:
    source = SEEDS / claim.source
    cited = source.read_text(encoding="utf-8") if source.is_file() else ""
    levels = {str(level).rstrip("%") for level in fig.levels if str(level).endswith("%")}
    allowed = percents(claim.reading) | percents(claim.quote) | percents(fig.finding or "") | percents(cited)
    allowed |= {round(float(v), 6) for v in levels}
    extra = sorted(percents(claim.why) - allowed)
    assert not extra, f"{fig.full_name}: {claim.quote[:60]!r}: why names {extra} %, which its test does not apply"
