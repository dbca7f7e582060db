"""The time-series figure (plot.draw_series): one line per flow, a PNG, and refusals of what it cannot draw."""

import struct
from pathlib import Path

import pytest

from netrepro.studykit.plot import PRINT_DPI, draw_series, series_figure

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


def test_it_writes_a_print_png_an_svg_and_the_caption_beside(tmp_path: Path) -> None:
    png = tmp_path / "cwnd.png"
    draw_series(png, "cwnd of three flows", CWND, "cwnd (segments)", notes=["tcp_probe, every sample"])
    width, height = png_size(png)
    assert width >= 8 * PRINT_DPI * 0.9 and height >= 5.2 * PRINT_DPI * 0.9  # 8 x 5.2 in (the legend beside)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwnd.caption.txt", "cwnd.png", "cwnd.svg"]
    svg = (tmp_path / "cwnd.svg").read_text()
    assert svg.startswith("<?xml") and "<svg" in svg
    assert (tmp_path / "cwnd.caption.txt").read_text() == "cwnd of three flows\n\ntcp_probe, every sample\n"


def test_the_same_rows_drawn_again_give_the_same_files(tmp_path: Path) -> None:
    """No moment of drawing and no random ids in the SVG (before: its date and clip-path ids changed
    with every redraw of a stored reference, a change to commit for nothing)."""
    drawn = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        draw_series(tmp_path / name / "cwnd.png", "cwnd of three flows", CWND, "cwnd (segments)")
        drawn.append({p.name: p.read_bytes() for p in (tmp_path / name).iterdir()})
    assert drawn[0] == drawn[1]
    assert b"<dc:date>" not in drawn[0]["cwnd.svg"]


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


def test_a_figure_is_drawn_to_print_with_its_notes_beside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """plot.draw of a stored figure (cubicplus/fig3, whose CUBIC+ series lie on each other): every series
    its own marker and line style, the legend outside the axes, the notes in the caption file only."""
    import expts
    from ground.results import REFERENCE
    from ground.trials import latest_rows, read_rows
    from netrepro.studykit import plot

    fig = expts.find("cubicplus/fig3")
    rows = latest_rows(read_rows(REFERENCE / fig.study / fig.csv_name))
    seen: dict[str, object] = {}
    save = plot.save

    def looked_at(figure: object, png: Path, caption: list[str]) -> list[Path]:
        ax = figure.axes[0]  # type: ignore[attr-defined]
        handles, labels = ax.get_legend_handles_labels()  # an errorbar's data line is its container's first
        ours = {s.label for s in fig.series}
        lines = [h.lines[0] for h, label in zip(handles, labels, strict=True) if label in ours]
        seen["styles"] = {(line.get_marker(), str(line.get_linestyle()), line.get_markerfacecolor()) for line in lines}
        seen["lines"] = len(lines)
        legend = ax.get_legend()
        seen["legend_outside"] = legend.get_bbox_to_anchor().x0 > ax.get_window_extent().x1
        seen["texts"] = [t.get_text() for t in figure.texts]  # type: ignore[attr-defined]
        return save(figure, png, caption)

    monkeypatch.setattr(plot, "save", looked_at)
    png = tmp_path / "fig3.png"
    notes = plot.draw(fig, plot.summarize(fig, rows), rows, png)
    measured = {r["series"] for r in rows} & {s.label for s in fig.series}  # a series without rows has no line
    assert seen["lines"] == len(measured) and len(seen["styles"]) == len(measured)  # type: ignore[arg-type]
    assert seen["legend_outside"]
    assert notes and not any(note in text for note in notes for text in seen["texts"])  # type: ignore[attr-defined]
    caption = (tmp_path / "fig3.caption.txt").read_text()
    assert all(note in caption for note in notes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig3.caption.txt", "fig3.png", "fig3.svg"]


def test_a_figure_whose_every_trial_failed_is_drawn_empty_on_its_log_axis(tmp_path: Path) -> None:
    """cubicplus/fig3 (a log y axis) with every trial failed: the figure is drawn, empty, and says why;
    matplotlib cannot log-scale an axis with nothing on it (CI's run of one late trial stopped there)."""
    import expts
    from ground.results import REFERENCE
    from ground.trials import Row, latest_rows, read_rows
    from netrepro.studykit import plot

    fig = expts.find("cubicplus/fig3")
    assert fig.y_log
    rows = [Row({**r, "status": "failed"}) for r in latest_rows(read_rows(REFERENCE / fig.study / fig.csv_name))]
    png = tmp_path / "fig3.png"
    plot.draw(fig, plot.summarize(fig, rows), rows, png)
    assert png_size(png)[0] > 0
    assert "no successful trial: nothing to draw" in (tmp_path / "fig3.svg").read_text()


def test_plot_only_of_a_figure_whose_trials_failed_draws_it_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """run_figure --plot-only over cubicplus/fig3's stored rows, every trial's latest attempt failed: the run
    ends with its figure, its manifest and one line that counts the failed trials and shows the first's error."""
    import csv
    import json

    import expts
    from ground.results import REFERENCE
    from netrepro.runner import sweep

    fig = expts.find("cubicplus/fig3")
    with open(REFERENCE / fig.study / fig.csv_name, newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    late = "the delay line released packets late: p99 18.272 ms over the bound 5.000 ms"
    (tmp_path / fig.study).mkdir()
    with open(tmp_path / fig.study / fig.csv_name, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header or [])
        writer.writeheader()
        writer.writerows({**r, "status": "failed", "error": late} for r in rows)
    sweep.run_figure(fig, sweep.Options(out=tmp_path, plot_only=True))
    trials = len({r["trial_key"] for r in rows})
    said = capsys.readouterr().out
    assert f"{trials} of {trials} trials failed (each row's error says why; the first: {late})" in said
    assert "the same command without --plot-only runs them again" in said  # --plot-only runs no trial
    manifest = json.loads((tmp_path / fig.study / "fig3.manifest.json").read_text())
    assert manifest["failed_trials"] == trials
    assert (tmp_path / fig.study / "fig3.png").exists()


def test_the_tradeoff_draws_a_point_per_series_and_level_at_both_medians(tmp_path: Path) -> None:
    """bufferbloat/tradeoff's drawing: goodput against the RTT under load, drawn beside its SVG and caption
    (what a point is); a series without trials is noted."""
    import expts
    from ground.trials import Row
    from netrepro.studykit import plot

    fig = expts.find("bufferbloat/tradeoff")
    rows = [
        Row({"series": s, "queue": q, "status": "ok", "rtt_p95_ms": str(rtt + k), "goodput_mbit": str(g)})
        for s, q, rtt, g in (("CUBIC", "8p", 52.0, 8.8), ("CUBIC", "132p", 200.0, 9.5), ("BBR", "8p", 50.0, 9.4))
        for k in range(3)
    ]
    png = tmp_path / "tradeoff.png"
    assert fig.drawing is not None
    notes = fig.drawing(fig, plot.summarize(fig, rows), rows, png)
    assert notes == ["Reno: no trial with both rtt_p95_ms and goodput_mbit"]
    assert png.is_file() and png.with_suffix(".svg").is_file()
    caption = png.with_name("tradeoff.caption.txt").read_text()
    assert "medians and interquartile ranges over trials (3 a point); labels: queue" in caption
