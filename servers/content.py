"""What the server serves: single objects of exact byte sizes and the page set of study `cubicplus`.

Content is generated into a run's document root, deterministically (the same
seed gives the same bytes) and incompressible (random bytes), so a response
body is exactly the size asked for whatever the server's filters.  Sizes are
decimal: "5 KB" is 5,000 bytes, as the 37,000-byte response of study `iw`.
A page is named (`large`, one of PAGES) or described (`20x50KB`: twenty
objects of 50,000 bytes, after the HTML document every page has;
`20x50KB+html` says the same), so a study can define its own pages as a
parameter (`page_spec`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PAGES",
    "Page",
    "PageSpec",
    "WebObject",
    "object_path",
    "page_html",
    "page_spec",
    "write_object",
    "write_page",
]


@dataclass(frozen=True)
class WebObject:
    """One resource the server holds: its URL path and its body size in bytes."""

    path: str
    size: int


@dataclass(frozen=True)
class PageSpec:
    """A page of the study: how many objects, of which size."""

    name: str
    objects: int
    object_size: int


@dataclass(frozen=True)
class Page:
    """A generated page: the HTML document first, then the objects it references."""

    name: str
    html: WebObject
    objects: tuple[WebObject, ...]

    @property
    def resources(self) -> tuple[WebObject, ...]:
        """Every resource of a page load, in the order a browser meets them."""
        return (self.html, *self.objects)

    @property
    def total_bytes(self) -> int:
        """Bodies of the HTML and of all objects (what throughput = bytes / PLT counts)."""
        return sum(r.size for r in self.resources)


# Study cubicplus (seed 000 section 6.1): images under 1 KB, 1-10 KB, 10-100 KB, over 1 MB.
PAGES: dict[str, PageSpec] = {
    "tiny": PageSpec("tiny", 40, 800),
    "small": PageSpec("small", 30, 5_000),
    "medium": PageSpec("medium", 20, 50_000),
    "large": PageSpec("large", 4, 1_200_000),
}


_DESCRIBED = re.compile(r"(?P<n>[0-9]+)x(?P<size>[0-9]+(?:\.[0-9]+)?)(?P<unit>B|KB|MB)(?:\+html)?", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 1_000, "mb": 1_000_000}
MAX_OBJECTS = 500
MAX_OBJECT_BYTES = 100_000_000


def _size_text(size: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("KB", 1_000)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size}B"


def page_spec(text: str) -> PageSpec:
    """A page by name (PAGES) or described as <objects>x<size>[+html], e.g. 20x50KB; ValueError says what is allowed.

    A described page's name is its normal form (20x50KB, 20x50000B and 20x50kb+html are all 20x50KB).
    """
    if text in PAGES:
        return PAGES[text]
    m = _DESCRIBED.fullmatch(text.strip())
    if m is None:
        raise ValueError(
            f"one of {', '.join(PAGES)}, or <objects>x<size> such as 20x50KB (sizes in B, KB or MB, decimal)"
        )
    count, size = int(m["n"]), round(float(m["size"]) * _UNITS[m["unit"].lower()])
    if not 1 <= count <= MAX_OBJECTS:
        raise ValueError(f"a page has 1 to {MAX_OBJECTS} objects, not {count}")
    if not 1 <= size <= MAX_OBJECT_BYTES:
        raise ValueError(f"an object has 1 B to {_size_text(MAX_OBJECT_BYTES)}, not {size} B")
    return PageSpec(f"{count}x{_size_text(size)}", count, size)


def object_path(size: int) -> str:
    """The URL path of a single object of `size` bytes (study iw's download, bursts, bulk)."""
    if size < 0:
        raise ValueError(f"object size {size} < 0")
    return f"/objects/{size}.bin"


def page_html(name: str, objects: Sequence[WebObject]) -> str:
    """The HTML document of a page: one <img> per object, in order."""
    images = "\n".join(f'<img src="{o.path}" alt="object {i}">' for i, o in enumerate(objects, 1))
    return (
        "<!DOCTYPE html>\n"
        f'<html><head><meta charset="utf-8"><title>{name}</title></head>\n'
        f"<body>\n<h1>{name}</h1>\n{images}\n</body></html>\n"
    )


def _body(size: int, seed: str) -> bytes:
    return random.Random(seed).randbytes(size)


def write_object(docroot: Path, size: int, path: str | None = None) -> WebObject:
    """Write an object of exactly `size` bytes under docroot (world-readable, for the server's user)."""
    url = path if path is not None else object_path(size)
    if not url.startswith("/") or ".." in url.split("/"):
        raise ValueError(f"object path {url!r} must be absolute and stay under the document root")
    target = docroot / url.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.parent.chmod(0o755)
    target.write_bytes(_body(size, url))
    target.chmod(0o644)
    return WebObject(url, size)


def write_page(docroot: Path, page: str) -> Page:
    """Write a page (`page_spec`): /<name>/index.html and /<name>/img-NNN.jpg."""
    spec = page_spec(page)
    name = spec.name
    width = max(2, len(str(spec.objects)))
    objects = tuple(
        write_object(docroot, spec.object_size, f"/{name}/img-{i:0{width}d}.jpg") for i in range(1, spec.objects + 1)
    )
    html = page_html(name, objects).encode()
    target = docroot / name / "index.html"
    target.write_bytes(html)
    target.chmod(0o644)
    return Page(name, WebObject(f"/{name}/index.html", len(html)), objects)
