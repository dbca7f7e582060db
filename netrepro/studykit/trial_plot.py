"""One trial over time: its flows' cwnd, smoothed RTT and goodput, and the bottleneck queue, drawn from the
trial's stored series.

A workload that traces its flows stores their time series beside the
figure's CSV (ground.series); `draw` puts one trial's on panels that share
the time axis, one line per flow, with the path's base RTT as a dashed line
on the RTT panel (the delay above it is the queue's), and, where the lab
sampled it, the bottleneck queue's backlog on a panel of its own (one line:
the queue is every flow's); it saves them as the figure module saves a
figure (netrepro.studykit.plot.save).  `run.sh plot FIGURE --trial N` is its
command.
"""

from __future__ import annotations

from pathlib import Path

from ground.series import TimeSeries
from netrepro.studykit.plot import legend_beside, save

PANELS = (("cwnd", "cwnd (segments)"), ("srtt_ms", "smoothed RTT (ms)"), ("goodput_mbit", "goodput (Mbit/s)"))
QUEUE = ("queue_pkts", "bottleneck queue (packets)")


def draw(series: TimeSeries, png: Path, title: str, base_rtt_ms: float | None = None) -> list[Path]:
    """The trial's panels as `png` and its SVG; the files written."""
    flows = series.flows()
    if not flows:
        raise ValueError(f"{title!r}: the series holds no flow")
    import matplotlib  # here, not at the top: the plot module's rule

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    queued = any(p.queue_pkts is not None for p in series.points)
    panels = (*PANELS, QUEUE) if queued else PANELS
    figure, axes = plt.subplots(len(panels), 1, sharex=True, figsize=(8, 2.5 * len(panels)))
    for ax, (column, label) in zip(axes, panels, strict=True):
        if column == QUEUE[0]:  # one line: every flow's point at a step carries the same backlog
            at = sorted({p.time_s: p.queue_pkts for p in series.points if p.queue_pkts is not None}.items())
            ax.plot([t for t, _ in at], [q for _, q in at], linewidth=1.0, color="black")
        for flow in flows if column != QUEUE[0] else ():
            points = [(p.time_s, getattr(p, column)) for p in series.of(flow)]
            shown = [(t, v) for t, v in points if v is not None]
            if shown:
                xs, ys = zip(*shown, strict=True)
                ax.plot(xs, ys, linewidth=1.0, label=flow)
        if column == "srtt_ms" and base_rtt_ms is not None:
            ax.axhline(base_rtt_ms, color="grey", linestyle="--", linewidth=0.8, label="base RTT")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel(f"time (s), every {series.step_s:g} s")
    legend_beside(axes[0], fontsize=8)
    axes[0].set_title(title, fontsize=10)
    return save(figure, png, [title])
