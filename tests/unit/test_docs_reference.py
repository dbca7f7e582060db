"""The lists in docs/ that the code declares are what it declares (netrepro.front.reference)."""

from pathlib import Path

import pytest

from ground.results import REPO
from netrepro.front import reference


def test_the_docs_lists_are_what_the_code_declares() -> None:
    assert reference.stale() == [], "run `python -m netrepro.front.reference` (it writes them) and commit the docs"


def test_a_list_that_drifted_from_the_code_is_found(tmp_path: Path) -> None:
    """A hand edit inside a block (or a new workload the page does not list) is found; the page's own
    text around the block is its author's."""
    for name in reference.BLOCKS:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text((REPO / name).read_text())
    page = tmp_path / "docs" / "workloads.md"
    page.write_text(page.read_text().replace("### `download`", "### `download` (renamed by hand)"))
    assert reference.stale(tmp_path) == ["docs/workloads.md"]
    outside = tmp_path / "docs" / "figures.md"
    outside.write_text("An author's own words.\n" + outside.read_text())
    assert reference.stale(tmp_path) == ["docs/workloads.md"]


def test_a_page_without_its_block_is_refused() -> None:
    with pytest.raises(ValueError, match="no block"):
        reference.with_block("text without markers\n", "figures", ["x"])
