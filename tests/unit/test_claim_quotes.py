"""Every claim a figure declares is its source's own sentence: found verbatim in the source's text.

The sources' texts are not part of the project (they are the papers): their
folder, one text file per source under the name a claim's `source` gives
(`000_156489580aaffd1b.txt` ...), is NETREPRO_SOURCES where that is set,
else `../shared/seeds/` beside the checkout (where CI and the project's
machines keep the seeds).  Without either, as in a user's clone of the
project alone, every quote test says it skipped and why.  Study web quotes
published papers' abstracts (expts/web.py cites them by address): their
texts are checked when the folder holds them, under the names the claims
give.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import expts
from netrepro.studykit.claims import Claim, found_in
from netrepro.studykit.spec import Figure

BESIDE = Path(__file__).resolve().parents[3] / "shared" / "seeds"  # ../shared/seeds beside the checkout
SOURCES = os.environ.get("NETREPRO_SOURCES", "") or (str(BESIDE) if BESIDE.is_dir() else "")
SEEDS = Path(SOURCES).expanduser() if SOURCES else None
SEED_NAME = re.compile(r"[0-9]{3}_[0-9a-f]{16}\.txt")  # a seed's text; other sources are papers cited by address


def declared() -> list[tuple[Figure, Claim]]:
    return [(fig, c) for fig in expts.all_figures() for c in fig.claims]


def test_figures_declare_claims() -> None:
    assert declared(), "no figure declares a claim"


@pytest.mark.parametrize(("fig", "claim"), declared(), ids=lambda v: getattr(v, "full_name", "") or "")
def test_a_claims_quote_stands_verbatim_in_its_source(fig: Figure, claim: Claim) -> None:
    if SEEDS is None or not SEEDS.is_dir():
        pytest.skip(f"the sources' texts are not here (NETREPRO_SOURCES unset, no {BESIDE}): a clone has none")
    source = SEEDS / claim.source
    if not source.is_file() and not SEED_NAME.fullmatch(claim.source):
        pytest.skip(f"{claim.source}: a published paper's text, not a seed's; put it in {SEEDS} to check it")
    assert source.is_file(), f"{fig.full_name}: no source text {claim.source} in {SEEDS}"
    text = source.read_text(encoding="utf-8")
    assert found_in(claim.quote, text), f"{fig.full_name}: not verbatim in {claim.source}: {claim.quote!r}"


@pytest.mark.parametrize(("fig", "claim"), declared(), ids=lambda v: getattr(v, "full_name", "") or "")
def test_a_claim_says_where_it_stands_and_how_it_is_read(fig: Figure, claim: Claim) -> None:
    assert claim.where.strip(), f"{fig.full_name}: {claim.quote!r} says not where it stands"
    assert len(claim.quote.split()) >= 3, f"{fig.full_name}: {claim.quote!r} is too short to be a sentence"
