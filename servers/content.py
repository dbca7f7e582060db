"""What the server serves: single objects of exact byte sizes and the page set of study `cubicplus`.

Content is generated into a run's document root, deterministically (the same
seed gives the same bytes) and incompressible (random bytes), so a response
body is exactly the size asked for whatever the server's filters.  Sizes are
decimal: "5 KB" is 5,000 bytes, as the 37,000-byte response of study `iw`.
"""

from __future__ import annotations

import random
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


def write_page(docroot: Path, name: str) -> Page:
    """Write page `name` of PAGES: /<name>/index.html and /<name>/img-NN.jpg."""
    spec = PAGES[name]
    objects = tuple(
        write_object(docroot, spec.object_size, f"/{name}/img-{i:02d}.jpg") for i in range(1, spec.objects + 1)
    )
    html = page_html(name, objects).encode()
    target = docroot / name / "index.html"
    target.write_bytes(html)
    target.chmod(0o644)
    return Page(name, WebObject(f"/{name}/index.html", len(html)), objects)
