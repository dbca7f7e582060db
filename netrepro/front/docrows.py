"""The stored rows as README.md's and docs/' numbers read them, and how such a number is written.

`Stored` reads results/reference (each CSV's latest attempt of each trial, status "ok", and the
manifests); `where`, `values`, `median`, `mean` and `levels` pick from its rows; `num`, `ms`, `pct`,
`table` and `grid` write a number or a Markdown table as the pages show it.  The facts built from them:
netrepro.front.docnumbers (and docfacts_newcwv, study newcwv's).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ground.trials import Row, latest_rows, read_rows

Facts = dict[str, str]
_UNITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "ms": 1e-3, "s": 1.0, "%": 1.0, "": 1.0}


# -- the stored rows --------------------------------------------------------------


class Stored:
    """The stored tree's rows, each CSV read once: the latest attempt of each trial, status "ok"."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self._rows: dict[str, list[Row]] = {}

    def rows(self, name: str) -> list[Row]:
        """`name` is the CSV's path under the tree without `.csv`: `iw/fig2`, `newcwv/pacing@idle_s=5/pacing`."""
        if name not in self._rows:
            every = latest_rows(read_rows(self.tree / f"{name}.csv"))
            self._rows[name] = [r for r in every if r.ok]
        return self._rows[name]

    def commit(self, name: str) -> str:
        """The commit the rows ran from, as `run.sh list` shows it (12 digits; `of N commits` if several)."""
        codes = sorted({r.code[:12] for r in self.rows(name)} - {""})
        return codes[0] if len(codes) == 1 else f"of {len(codes)} commits"


def where(rows: Iterable[Row], **match: str) -> list[Row]:
    return [r for r in rows if all(r.text(k) == v for k, v in match.items())]


def values(rows: Iterable[Row], metric: str, **match: str) -> list[float]:
    """The metric of each matching trial (one value a trial)."""
    return [value for row in where(rows, **match) if (value := row.number(metric)) is not None]


def median(rows: Iterable[Row], metric: str, **match: str) -> float:
    found = values(rows, metric, **match)
    if not found:
        raise LookupError(f"no trial with {metric} where {match}")
    return float(statistics.median(found))


def mean(rows: Iterable[Row], metric: str, **match: str) -> float:
    found = values(rows, metric, **match)
    if not found:
        raise LookupError(f"no trial with {metric} where {match}")
    return statistics.fmean(found)


def level_order(level: str) -> float:
    """A level's value for sorting: `500kbit` before `1mbit`, `0.5%` before `2%`."""
    found = re.fullmatch(r"(-?[0-9.]+)\s*([a-z%]*)", level.strip().lower())
    if not found:
        return float("inf")
    return float(found[1]) * _UNITS.get(found[2], 1.0)


def levels(rows: Iterable[Row], column: str) -> list[str]:
    return sorted({r.text(column) for r in rows if r.text(column)}, key=lambda level: (level_order(level), level))


# -- how a number is written ---------------------------------------------------------


def num(x: float, digits: int = 3) -> str:
    """`digits` significant digits, never an exponent: 513.2 (4), 0.0745, 1248."""
    if x == 0:
        return "0"
    magnitude = len(str(int(abs(x)))) if abs(x) >= 1 else 0
    places = max(digits - magnitude, 0)
    if abs(x) < 1:
        places = digits - 1 - int(f"{abs(x):e}".split("e")[1])
    return f"{x:.{places}f}"


def ms(x: float) -> str:
    """A time in ms: one decimal below 1000 ms, none above (513.2, 1248)."""
    return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.1f}"


def pct(x: float, sign: bool = False) -> str:
    return f"{x:+.0f} %" if sign else f"{x:.0f} %"


def change(before: float, after: float) -> float:
    """after against before, in per cent."""
    return (after / before - 1.0) * 100.0


def table(head: Sequence[str], body: Iterable[Sequence[str]]) -> str:
    """A Markdown table, a blank line before and after it (so that its markers stand apart); a cell's line
    breaks become spaces and its bars are escaped, so that a cell stays one cell."""

    def cell(text: str) -> str:
        return " ".join(text.split()).replace("|", "\\|")

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in body]
    return "\n\n" + "\n".join(lines) + "\n\n"


def grid(
    rows: Sequence[Row],
    x: str,
    metric: str,
    columns: Sequence[tuple[str, str]],
    *,
    head: str,
    show: Callable[[float], str],
    stat: Callable[..., float] = median,
    x_name: Callable[[str], str] = str,
) -> str:
    """One row a level of `x`, one column a series (`columns`: its label in the rows, its heading)."""
    body = [
        [x_name(level), *(show(stat(rows, metric, **{x: level, "series": label})) for label, _ in columns)]
        for level in levels(rows, x)
    ]
    return table([head, *(h for _, h in columns)], body)


def figure_facts(stored: Stored, name: str, prefix: str) -> Facts:
    """What every stored CSV gives: its trials (`.trials`) and the commit its rows ran from (`.commit`)."""
    return {f"{prefix}.trials": str(len(stored.rows(name))), f"{prefix}.commit": stored.commit(name)[:7]}
