"""Throughput against delay: the view Pantheon and RFC 7928 summarise a scheme by.

`draw(delay, ...)` makes a figure's drawing (`Figure.drawing`): for each
series, each level of the figure's x factor (a buffer size, a queue
discipline) is one point at the medians of its successful trials, delay
across (the `delay` metric) and the figure's `y` up, with the interquartile
ranges of both as bars; a series' points are joined in the order of its
levels and each is labelled with its level.  The figure's own summary (the
medians of `y` by level, in its table and manifest) is unchanged.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ground.trials import numbers
from netrepro.studykit.plot import legend_beside, line_styles, quartiles, save
from netrepro.studykit.spec import Figure, Point, Rows

Drawing = Callable[..., list[str]]


def draw(delay: str, x_label: str, y_label: str) -> Drawing:
    """A drawing of the figure's `y` against `delay`, a point per series and level."""

    def drawing(
        fig: Figure,
        points: list[Point],
        rows: Rows,
        png: Path,
        quick: bool = False,
        reference: list[Point] | None = None,
    ) -> list[str]:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, ax = plt.subplots(figsize=(8, 5.2))
        styles = line_styles(len(fig.series))
        notes = []
        for style, series in zip(styles, fig.series, strict=True):
            xs, ys = [], []
            for level in fig.levels:
                here = [r for r in rows if r.ok and r.series == series.label and r.text(fig.x) == str(level)]
                delays, values = numbers(here, delay), numbers(here, fig.y)
                if not delays or not values:
                    continue
                (d1, d, d3), (v1, v, v3) = quartiles(delays), quartiles(values)
                ax.errorbar(d, v, xerr=[[d - d1], [d3 - d]], yerr=[[v - v1], [v3 - v]], capsize=2, **_bare(style))
                ax.annotate(str(level), (d, v), textcoords="offset points", xytext=(4, 4), fontsize=7)
                xs.append(d)
                ys.append(v)
            if xs:
                ax.plot(xs, ys, label=series.label, **style)
            else:
                notes.append(f"{series.label}: no trial with both {delay} and {fig.y}")
        legend_beside(ax)
        ax.set_xlabel(x_label)
        ax.set_ylabel(y_label)
        ax.grid(True, alpha=0.3)
        heading = f"{fig.full_name}: {fig.heading}" + ("  [quick]" if quick else "")
        ax.set_title(heading, fontsize=10)
        n = statistics.median([p.n for p in points]) if points else 0
        caption = f"medians and interquartile ranges over trials ({n:g} a point); labels: {fig.x}"
        save(figure, png, [heading, caption, *notes])
        return notes

    return drawing


def _bare(style: dict[str, Any]) -> dict[str, Any]:
    """A series' style for its points alone: its marker and colour, no line (the joined line carries it)."""
    return {k: style[k] for k in ("color", "marker", "markersize") if k in style} | {"linestyle": "none"}
