"""One trial over time: its flows' cwnd, smoothed RTT and goodput, drawn from the trial's stored series.

A workload that traces its flows stores their time series beside the
figure's CSV (ground.series); `draw` puts one trial's on three panels that
share the time axis, one line per flow, with the path's base RTT as a
dashed line on the RTT panel (the delay above it is the queue's), and saves
it as the figure module saves a figure (netrepro.studykit.plot.save).
`run.sh plot FIGURE --trial N` is its command.
"""

from __future__ import annotations

from pathlib import Path

from ground.series import TimeSeries
from netrepro.studykit.plot import legend_beside, save

PANELS = (("cwnd", "cwnd (segments)"), ("srtt_ms", "smoothed RTT (ms)"), ("goodput_mbit", "goodput (Mbit/s)"))


def draw(series: TimeSeries, png: Path, title: str, base_rtt_ms: float | None = None) -> list[Path]:
    """The trial's panels as `png` and its SVG; the files written."""
    flows = series.flows()
    if not flows:
        raise ValueError(f"{title!r}: the series holds no flow")
    import matplotlib  # here, not at the top: the plot module's rule

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(PANELS), 1, sharex=True, figsize=(8, 7.5))
    for ax, (column, label) in zip(axes, PANELS, strict=True):
        for flow in flows:
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
