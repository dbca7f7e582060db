"""What the server serves: single objects of exact byte sizes and the page set of study `cubicplus`.

Content is generated into a run's document root, deterministically (the same
seed gives the same bytes) and incompressible (random bytes), so a response
body is exactly the size asked for whatever the server's filters.  Sizes are
decimal: "5 KB" is 5,000 bytes, as the 37,000-byte response of study `iw`.
A page is named (`large`, one of PAGES) or described (`20x50KB`: twenty
objects of 50,000 bytes, after the HTML document every page has;
`20x50KB+html` says the same), so a study can define its own pages as a
parameter (`page_spec`).

A page `+deps` (`small+deps`, `20x50KB+deps`) holds the same objects, found
as a browser finds a real page's: a third as images in the HTML, a third as
background images of its style sheet, a third as images its script adds,
so that two of three wait for a second round of requests (the HTML, then
the sheet or script, then the images).  The sheet and the script are
resources of the page too.  A client that cannot follow dependencies
(h2load) requests them all at once.
"""

from __future__ import annotations

import random
import re
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEPS",
    "PAGES",
    "Page",
    "PageSpec",
    "WebObject",
    "deps_sources",
    "image_body",
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
    deps: bool = False  # objects found through a style sheet and a script (see the module's docstring)


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
DEPS = "+deps"
_UNITS = {"b": 1, "kb": 1_000, "mb": 1_000_000}
MAX_OBJECTS = 500
MAX_OBJECT_BYTES = 100_000_000


def _size_text(size: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("KB", 1_000)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size}B"


def page_spec(text: str) -> PageSpec:
    """A page by name (PAGES) or described as <objects>x<size>[+html], e.g. 20x50KB, either with +deps
    (objects found through a style sheet and a script); ValueError says what is allowed.

    A described page's name is its normal form (20x50KB, 20x50000B and 20x50kb+html are all 20x50KB).
    """
    if text in PAGES:
        return PAGES[text]
    stripped = text.strip()
    if stripped.lower().endswith(DEPS):
        base = page_spec(stripped[: -len(DEPS)])
        if base.objects < 3:
            raise ValueError(f"a page {DEPS} has at least 3 objects (a third by each route), not {base.objects}")
        return PageSpec(base.name + DEPS, base.objects, base.object_size, deps=True)
    m = _DESCRIBED.fullmatch(stripped)
    if m is None:
        raise ValueError(
            f"one of {', '.join(PAGES)}, or <objects>x<size> such as 20x50KB (sizes in B, KB or MB, decimal), "
            f"either followed by {DEPS} for objects found through a style sheet and a script"
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


def deps_sources(name: str, objects: Sequence[WebObject], sheet: str, script: str) -> tuple[str, str, str]:
    """The HTML, style sheet and script of a page +deps: the objects dealt in turn to the HTML's <img>
    tags, the sheet's background images and the images the script adds."""
    direct, styled, scripted = objects[0::3], objects[1::3], objects[2::3]
    images = "\n".join(f'<img src="{o.path}" alt="object">' for o in direct)
    boxes = "\n".join(f'<div class="bg{i}"></div>' for i in range(len(styled)))
    html = (
        "<!DOCTYPE html>\n"
        f'<html><head><meta charset="utf-8"><title>{name}</title>\n'
        f'<link rel="stylesheet" href="{sheet}">\n<script src="{script}" defer></script></head>\n'
        f"<body>\n<h1>{name}</h1>\n{images}\n{boxes}\n</body></html>\n"
    )
    css = "div { width: 10px; height: 10px; }\n" + "".join(
        f'.bg{i} {{ background-image: url("{o.path}"); }}\n' for i, o in enumerate(styled)
    )
    paths = ", ".join(f'"{o.path}"' for o in scripted)
    js = (
        f"for (const src of [{paths}]) {{\n"
        '  const img = document.createElement("img");\n'
        "  img.src = src;\n"
        "  document.body.appendChild(img);\n"
        "}\n"
    )
    return html, css, js


def _write_text(docroot: Path, url: str, text: str) -> WebObject:
    target = docroot / url.lstrip("/")
    data = text.encode()
    target.write_bytes(data)
    target.chmod(0o644)
    return WebObject(url, len(data))


def _body(size: int, seed: str) -> bytes:
    return random.Random(seed).randbytes(size)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A 1x1 grey PNG around a private chunk of random bytes ("raNd": ancillary, private, safe to copy), put
# before the image data so that a decoder reads all of it before the image is complete.
_IHDR = _chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
_IDAT = _chunk(b"IDAT", zlib.compress(b"\x00\x00"))
_IEND = _chunk(b"IEND", b"")
PNG_OVERHEAD = len(_PNG_SIGNATURE) + len(_IHDR) + 12 + len(_IDAT) + len(_IEND)


def image_body(size: int, seed: str) -> bytes:
    """`size` bytes a browser decodes as an image to the last byte: a valid PNG whose bulk is random (so
    incompressible) bytes in a chunk decoders skip.  Random bytes alone make a browser's decoder fail at
    once, and the browser then cancels the rest of the download.  Below PNG_OVERHEAD bytes no PNG fits:
    random bytes."""
    if size < PNG_OVERHEAD:
        return _body(size, seed)
    padding = _chunk(b"raNd", _body(size - PNG_OVERHEAD, seed))
    return _PNG_SIGNATURE + _IHDR + padding + _IDAT + _IEND


def write_object(docroot: Path, size: int, path: str | None = None) -> WebObject:
    """Write an object of exactly `size` bytes under docroot (world-readable, for the server's user);
    random bytes, or a PNG (`image_body`) where the path ends in .png."""
    url = path if path is not None else object_path(size)
    if not url.startswith("/") or ".." in url.split("/"):
        raise ValueError(f"object path {url!r} must be absolute and stay under the document root")
    target = docroot / url.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.parent.chmod(0o755)
    target.write_bytes(image_body(size, url) if url.endswith(".png") else _body(size, url))
    target.chmod(0o644)
    return WebObject(url, size)


def write_page(docroot: Path, page: str) -> Page:
    """Write a page (`page_spec`): /<name>/index.html and /<name>/img-NNN.png (`image_body`), and for a page +deps
    /<name>/style.css and /<name>/script.js (the first two of its objects)."""
    spec = page_spec(page)
    name = spec.name
    width = max(2, len(str(spec.objects)))
    objects = tuple(
        write_object(docroot, spec.object_size, f"/{name}/img-{i:0{width}d}.png") for i in range(1, spec.objects + 1)
    )
    if not spec.deps:
        return Page(name, _write_text(docroot, f"/{name}/index.html", page_html(name, objects)), objects)
    sheet, script = f"/{name}/style.css", f"/{name}/script.js"
    html, css, js = deps_sources(name, objects, sheet, script)
    found_by = (_write_text(docroot, sheet, css), _write_text(docroot, script, js))
    return Page(name, _write_text(docroot, f"/{name}/index.html", html), (*found_by, *objects))
