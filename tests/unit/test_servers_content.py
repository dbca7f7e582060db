"""Generated content: exact sizes, deterministic bytes, the page set of study cubicplus."""

import re
from pathlib import Path

import pytest

from servers.content import PAGES, object_path, page_html, write_object, write_page


def test_object_of_exact_size(tmp_path: Path) -> None:
    obj = write_object(tmp_path, 37_000)
    assert obj.path == object_path(37_000) == "/objects/37000.bin"
    body = (tmp_path / "objects/37000.bin").read_bytes()
    assert len(body) == obj.size == 37_000
    again = write_object(tmp_path / "again", 37_000)
    assert (tmp_path / "again/objects/37000.bin").read_bytes() == body and again == obj


def test_object_paths_stay_under_the_docroot(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_object(tmp_path, 10, "/../escape.bin")
    with pytest.raises(ValueError):
        write_object(tmp_path, 10, "relative.bin")


def test_page_set() -> None:
    sizes = {name: (spec.objects, spec.object_size) for name, spec in PAGES.items()}
    assert sizes == {"tiny": (40, 800), "small": (30, 5_000), "medium": (20, 50_000), "large": (4, 1_200_000)}


def test_small_page(tmp_path: Path) -> None:
    page = write_page(tmp_path, "small")
    assert page.html.path == "/small/index.html" and len(page.objects) == 30
    html = (tmp_path / "small/index.html").read_text()
    assert len(html.encode()) == page.html.size
    assert re.findall(r'<img src="([^"]+)"', html) == [o.path for o in page.objects]
    for obj in page.objects:
        assert (tmp_path / obj.path.lstrip("/")).stat().st_size == 5_000
    assert page.total_bytes == page.html.size + 150_000
    assert page.resources[0] == page.html


def test_html_references_in_order() -> None:
    html = page_html("x", [])
    assert "<img" not in html and html.startswith("<!DOCTYPE html>")
