"""The time-series figure (plot.draw_series): one line per flow, a PNG, and refusals of what it cannot draw."""

import struct
from pathlib import Path

import pytest

from netrepro.plot import draw_series, series_figure

CWND = {
    "10.0.0.2:5201>10.0.0.1:40000": [(0.0, 10.0), (0.1, 20.0), (0.2, 40.0)],
    "10.0.0.4:5201>10.0.0.3:40002": [(0.05, 10.0), (0.15, 20.0)],
    "10.0.0.6:5201>10.0.0.5:40004": [(0.2, 10.0), (0.1, 5.0)],  # out of order: drawn in time order
}


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    return width, height


def test_it_writes_a_png_of_the_figures_size(tmp_path: Path) -> None:
    png = tmp_path / "cwnd.png"
    draw_series(png, "cwnd of three flows", CWND, "cwnd (segments)", notes=["tcp_probe, every sample"])
    assert png_size(png) == (880, 572)  # 8 x 5.2 in at 110 dpi, as plot.draw
    assert [p.name for p in tmp_path.iterdir()] == ["cwnd.png"]


def test_one_legend_entry_and_one_line_per_flow() -> None:
    import matplotlib.pyplot as plt

    figure = series_figure("cwnd", CWND, "cwnd (segments)", xlabel="time since the first flow (s)")
    try:
        (ax,) = figure.axes
        assert [t.get_text() for t in ax.get_legend().get_texts()] == list(CWND)
        lines = ax.get_lines()
        assert len(lines) == 3
        assert list(lines[2].get_xdata()) == [0.1, 0.2] and list(lines[2].get_ydata()) == [5.0, 10.0]
        assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == (
            "time since the first flow (s)",
            "cwnd (segments)",
            "cwnd",
        )
    finally:
        plt.close(figure)


def test_many_flows_stay_apart() -> None:
    import matplotlib.pyplot as plt

    many = {f"flow {i}": [(0.0, float(i)), (1.0, float(i))] for i in range(12)}
    figure = series_figure("twelve flows", many, "Mbit/s")
    try:
        lines = figure.axes[0].get_lines()
        styles = {(line.get_color(), line.get_linestyle()) for line in lines}
        assert len(styles) == 12  # the 11th and 12th reuse a colour, dashed
    finally:
        plt.close(figure)


@pytest.mark.parametrize(
    ("series", "match"),
    [
        ({}, "'fig': no series to draw"),
        ({"a": [(0.0, 1.0)], "b": []}, "'fig': series 'b' has no points"),
        ({"": [(0.0, 1.0)]}, "series label '' would be left out of the legend"),
        ({"_hidden": [(0.0, 1.0)]}, "series label '_hidden' would be left out of the legend"),
    ],
)
def test_what_it_cannot_draw_is_refused_and_nothing_written(
    tmp_path: Path, series: dict[str, list[tuple[float, float]]], match: str
) -> None:
    png = tmp_path / "fig.png"
    with pytest.raises(ValueError, match=match):
        draw_series(png, "fig", series, "y")
    assert not png.exists()
