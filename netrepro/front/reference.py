"""The lists in docs/ that the code declares: made from it, never copied by hand.

Each is a block of a docs page between two markers: the workloads with the
keys they take and the metrics they report, and the keys every trial takes
(docs/workloads.md); the keys of a study file's figure, claim and topology
(docs/your-own-study.md); the figures of every study (docs/figures.md).
`python -m netrepro.front.reference` writes them in place;
tests/unit/test_docs_reference.py fails while a page's block differs from
what the code declares.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import expts
from ground.results import REPO
from netrepro.front import studyfile
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit import params


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _keys(keys: Iterable[params.Key]) -> list[str]:
    return _table(
        ("key", "values", "default", "meaning"),
        ((f"`{k.name}`", k.allowed(here=False), "" if k.default is None else f"`{k.default}`", k.help) for k in keys),
    )


def workloads() -> list[str]:
    lines: list[str] = []
    for w in WORKLOADS.values():
        lines += [f"### `{w.name}`", "", w.doc, ""]
        lines += [f"Metrics: {', '.join(f'`{m}`' for m in w.metrics)}. Tools: {', '.join(w.tools) or 'none'}.", ""]
        if w.time_series:
            lines += ["Each trial stores its flows' time series beside the CSV (`run.sh plot`).", ""]
        lines += [*_keys(w.keys), ""] if w.keys else ["Keys: only those every trial takes.", ""]
    for title, keys in (
        ("Every trial: the path", params.PATH_PARAMS),
        ("Every trial: the hosts", params.HOST_PARAMS),
        ("Every trial: the topology's size (a dumbbell's)", params.TOPOLOGY_PARAMS),
        ("A netrepro congestion control's parameters (with that `cc`)", tuple(params.variant_keys().values())),
    ):
        lines += [f"### {title}", "", *_keys(keys), ""]
    return lines[:-1]


def study_file_keys() -> list[str]:
    lines = ["A figure (`[[figure]]`):", ""]
    lines += _table(("key", "meaning"), ((f"`{k}`", v) for k, v in studyfile.FIGURE_KEYS.items()))
    lines += ["", "A claim (`[[figure.claim]]`):", ""]
    lines += _table(("key", "meaning"), ((f"`{k}`", v) for k, v in studyfile.CLAIM_KEYS.items()))
    lines += ["", "Each test's keys it cannot do without:", ""]
    needs = ((f"`{test}`", ", ".join(f"`{k}`" for k in keys)) for test, keys in studyfile.CLAIM_TESTS.items())
    lines += _table(("test", "needs"), needs)
    lines += ["", "A figure's `topology`:", ""]
    lines += _table(("key", "value"), ((f"`{k}`", what) for k, _, what in studyfile.TOPOLOGY_TYPES))
    return lines


def figures() -> list[str]:
    return _table(
        ("figure", "workload", "x", "y", "title"),
        ((f"`{f.full_name}`", f"`{f.workload}`", f"`{f.x}`", f"`{f.y}`", f.title) for f in expts.all_figures()),
    )


# docs page -> (the block's name, what makes it)
BLOCKS: dict[str, tuple[str, Callable[[], list[str]]]] = {
    "docs/workloads.md": ("workloads and keys", workloads),
    "docs/your-own-study.md": ("study file keys", study_file_keys),
    "docs/figures.md": ("figures", figures),
}


def markers(name: str) -> tuple[str, str]:
    return (
        f"<!-- made from the code by `python -m netrepro.front.reference`: {name} -->",
        f"<!-- end of {name} -->",
    )


def with_block(text: str, name: str, lines: list[str]) -> str:
    """The page's text with its block replaced by `lines` (ValueError: the page has no such block)."""
    begin, end = markers(name)
    head, found, rest = text.partition(begin + "\n")
    _, found_end, tail = rest.partition(end)
    if not found or not found_end:
        raise ValueError(f"no block {name!r} ({begin} ... {end})")
    return head + begin + "\n" + "\n".join(lines) + "\n" + end + tail


def stale(root: Path = REPO) -> list[str]:
    """The pages whose block differs from what the code declares."""
    found = []
    for page, (name, make) in BLOCKS.items():
        text = (root / page).read_text()
        if with_block(text, name, make()) != text:
            found.append(page)
    return found


def main() -> int:
    for page, (name, make) in BLOCKS.items():
        path = REPO / page
        text = path.read_text()
        new = with_block(text, name, make())
        if new != text:
            path.write_text(new)
            print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
