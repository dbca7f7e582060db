"""Generated content: exact sizes, deterministic bytes, the page set of study cubicplus."""

import re
from pathlib import Path

import pytest

from servers.content import PAGES, object_path, page_html, page_spec, write_object, write_page


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


def test_a_page_described_as_a_parameter(tmp_path: Path) -> None:
    for text in ("20x50KB", "20x50000B", "20x50kb+html", "20x0.05MB"):
        assert page_spec(text) == page_spec("20x50KB")
    spec = page_spec("20x50KB")
    assert (spec.name, spec.objects, spec.object_size) == ("20x50KB", 20, 50_000)
    assert page_spec("large") is PAGES["large"]
    page = write_page(tmp_path, "3x1500B+html")
    assert page.html.path == "/3x1500B/index.html" and [o.size for o in page.objects] == [1500] * 3
    assert [o.path for o in write_page(tmp_path, "120x1KB").objects][-1] == "/120x1KB/img-120.png"


@pytest.mark.parametrize(
    ("text", "why"),
    [("huge", "one of tiny, small, medium, large, or"), ("0x5KB", "1 to 500 objects"), ("2x0B", "1 B to 100MB"),
     ("2x5GB", "such as 20x50KB"), ("x5KB", "such as 20x50KB")],
)  # fmt: skip
def test_a_page_that_cannot_be_is_refused_with_what_can(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        page_spec(text)
