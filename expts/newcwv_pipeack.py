"""Seed 002's Figure 5, drawn: newCWV's pipeACK and cwnd over time, without and with the maximum filter.

A trial of newcwv/fig5 carries newcwv's own pipeACK and cwnd every 0.1 s and
tcp_probe's window at the same instants (netrepro.runner.countertrace); this
module draws them, one panel per series and burst size (the first trial of
each), with the line where RFC 7661 4.3 puts the non-validated phase
(pipeACK < cwnd / 2), and says what every trial of each series showed.
The figure itself is declared in expts/newcwv.py.
"""

from __future__ import annotations

import math
import statistics
import textwrap
from pathlib import Path
from typing import Any

from ground.trials import Row
from netrepro.studykit import plot
from netrepro.studykit.spec import Figure, Point, Rows

CAPTION = (
    "black squares: newcwv's own pipeACK every 0.1 s (its map or module parameter); line: tcp_probe's cwnd at "
    "the same instants; dotted: cwnd / 2, below which RFC 7661 4.3 calls the sender non-validated; the first "
    "trial of each series and burst size"
)


def _floats(text: str) -> list[float]:
    return [float(v) if v != "" else math.nan for v in text.split(";")] if text else []


def trace(row: Row) -> tuple[list[float], list[float], list[float]]:
    """(seconds, pipeACK, tcp_probe's cwnd) of one trial; NaN where pipeACK is undefined or no ACK was seen."""
    ts, pipeack, cwnd = (_floats(row.text(c)) for c in ("trace_s", "trace_pipeack", "trace_probe_cwnd"))
    if not (len(ts) == len(pipeack) == len(cwnd)):
        raise ValueError(f"trial {row.trial}: trace columns of {len(ts)}, {len(pipeack)}, {len(cwnd)} values")
    return ts, pipeack, cwnd


def _ok(rows: Rows, series: str, level: Any) -> list[Row]:
    mine = [r for r in rows if r.ok and r.series == series and r.text("burst_kb") == str(level)]
    return sorted(mine, key=lambda r: r.trial or 0)


def _mean(rows: list[Row], column: str) -> str:
    values = [r.measured(column) for r in rows if r.text(column)]
    if not values:
        return "none"
    return f"{statistics.fmean(values):.3g}" + (f" (n = {len(values)})" if len(values) != len(rows) else "")


def notes(fig: Figure, rows: Rows) -> list[str]:
    """What every trial of each series showed, per burst size: means over trials."""
    out = []
    for level in fig.levels:
        for s in fig.series:
            mine = _ok(rows, s.label, level)
            if mine:
                out.append(
                    f"{level} KB, {s.label}: {len(mine)} trials; largest cwnd {_mean(mine, 'max_cwnd')} segments, "
                    f"pipeACK's coefficient of variation {_mean(mine, 'pipeack_cv')}, share of samples "
                    f"non-validated {_mean(mine, 'growth_nonvalidated_share')} while cwnd grew and "
                    f"{_mean(mine, 'nonvalidated_share')} in all, first non-validated at "
                    f"{_mean(mine, 'first_nonvalidated_s')} s"
                )
    return out


def draw_pipeack(
    fig: Figure, points: list[Point], rows: Rows, png: Path, quick: bool = False, reference: list[Point] | None = None
) -> list[str]:
    """One panel per series (rows: (a) every RTT, (b) the max filter) and burst size (columns)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = [lv for lv in fig.levels if any(_ok(rows, s.label, lv) for s in fig.series)] or list(fig.levels)[:1]
    figure, axes = plt.subplots(
        len(fig.series), len(levels), figsize=(5.2 * len(levels) + 1, 2.8 * len(fig.series) + 1.2), squeeze=False
    )
    for i, s in enumerate(fig.series):
        for j, level in enumerate(levels):
            ax = axes[i, j]
            trials = _ok(rows, s.label, level)
            if trials:
                ts, pipeack, cwnd = trace(trials[0])
                ax.plot(ts, cwnd, color="tab:blue", linewidth=1.2, label="cwnd (tcp_probe)")
                ax.plot(ts, [c / 2 for c in cwnd], color="tab:blue", linestyle=":", linewidth=1, label="cwnd / 2")
                ax.plot(ts, pipeack, color="black", marker="s", markersize=2.5, linewidth=0.8, label="pipeACK")
            else:
                ax.text(0.5, 0.5, "no successful trial", ha="center", va="center", transform=ax.transAxes)
            ax.set_title(f"{s.label}, {level} KB bursts", fontsize=9)
            ax.set_ylabel("segments")
            ax.grid(True, alpha=0.3)
    for ax in axes[-1, :]:
        ax.set_xlabel("time since the first request (s)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        plot.legend_beside(axes[0, -1], handles, labels)
    figure.suptitle(plot.wrapped(plot.title_of(fig, quick)), fontsize=10)
    found = notes(fig, rows)
    figure.text(0.01, 0.005, "\n".join(textwrap.wrap(CAPTION, 60 + 55 * len(levels))), fontsize=7, va="bottom")
    figure.tight_layout(rect=(0, 0.07, 1, 0.95))
    plot.save(figure, png, [plot.title_of(fig, quick), CAPTION, *found])
    return found
