"""From trial rows to what a reader sees: summary points, the figure, the table.

The default summary of a level is the median of its successful trials with
the interquartile range as spread, and the number of trials it rests on
(and how many failed or timed out).  A figure spec may summarise otherwise
(e.g. an improvement between two series) and may annotate the plot with a
model or the source's numbers.  The project's reference reproduction, where
given, is drawn beside the run's own points (dashed, hollow, in each series'
colour) and is a column of the table.  `draw_series` draws quantities over
time instead (cwnd, throughput in bins), one line per flow.

Figures are made to be printed (`save`): a PNG at PRINT_DPI and an SVG
beside it; every series has its own marker and line style (equal series
stay visible), the legend sits outside the axes, and the figure's notes
(its findings, the source's numbers) go to `<figure>.caption.txt` beside
it, not into the image, which keeps only the line a reader needs to read
it (the spread shown, the trials per point).
"""

from __future__ import annotations

import io
import math
import statistics
import textwrap
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ground.results import replace_file
from ground.trials import Row, numbers
from ground.units import numeric
from netrepro.studykit.spec import Figure, Point, Rows


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """(25th percentile, median, 75th percentile); a single value is its own spread."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def categorical(fig: Figure) -> bool:
    """Whether the figure's levels are names (congestion controls), not quantities on an axis; a single
    level is drawn as a category too (its series side by side), where an axis would only span it."""
    if len(fig.levels) == 1:
        return True
    try:
        for level in fig.levels:
            numeric(level)
    except ValueError:
        return True
    return False


def category_positions(fig: Figure, points: Sequence[Point]) -> dict[str, int]:
    """Where each level drawn stands on a categorical axis: the levels with points, in declared order."""
    present = {str(p.x) for p in points}
    return {str(level): i for i, level in enumerate(lv for lv in fig.levels if str(lv) in present)}


def series_offsets(labels: Sequence[str], step: float = 0.2) -> dict[str, float]:
    """Each series' shift from its category's centre, so that series at one category stand side by side."""
    middle = (len(labels) - 1) / 2
    return {label: round((i - middle) * step, 9) for i, label in enumerate(labels)}


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
DASHES = ("-", "--", ":", "-.")


PRINT_DPI = 300
# Line styles of the series of a figure; "--" is the reference reproduction's.
SERIES_DASHES: tuple[Any, ...] = ("-", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 2)))


def save(figure: Any, png: Path, caption: Sequence[str] = ()) -> list[Path]:
    """The figure as `png` (PRINT_DPI) and the SVG beside it, and `caption` as <stem>.caption.txt; closed.

    Returns the files written (each replaced whole, never through a link)."""
    import matplotlib.pyplot as plt

    written = []
    try:
        for path, kind in ((png, "png"), (png.with_suffix(".svg"), "svg")):
            data = io.BytesIO()
            # An SVG without the moment it was drawn and with ids from a fixed salt: the same rows
            # drawn again give the same file (a PNG does already), so a redraw changes nothing.
            extra: dict[str, Any] = {"metadata": {"Date": None}} if kind == "svg" else {}
            with plt.rc_context({"svg.hashsalt": "netrepro"}):
                figure.savefig(data, format=kind, dpi=PRINT_DPI, bbox_inches="tight", **extra)
            replace_file(path, data.getvalue())
            written.append(path)
    finally:
        plt.close(figure)
    if caption:
        path = png.with_name(f"{png.stem}.caption.txt")
        replace_file(path, ("\n\n".join(caption) + "\n").encode())
        written.append(path)
    return written


def add_to_caption(png: Path, lines: Sequence[str]) -> None:
    """Append `lines` (a figure's judged claims) to the caption beside `png`, as a paragraph of their own."""
    path = png.with_name(f"{png.stem}.caption.txt")
    if not lines or not path.exists():
        return
    text = path.read_text().rstrip("\n")
    replace_file(path, (text + "\n\n" + "\n".join(lines) + "\n").encode())


def series_colours(ax: Any) -> dict[str, Any]:
    """Each labelled series' colour: an errorbar's label is its container's, its colour its data line's."""
    handles, labels = ax.get_legend_handles_labels()
    lines = [h.lines[0] if hasattr(h, "lines") else h for h in handles]
    return {label: line.get_color() for line, label in zip(lines, labels, strict=True)}


def legend_beside(ax: Any, *args: Any, x: float = 1.01, **kw: Any) -> Any:
    """The axes' legend beside them, right of the plot (past a right axis at x > 1.1): never over the data.

    None where nothing is labelled (every trial failed): matplotlib would log that there is nothing to show."""
    if not args and not ax.get_legend_handles_labels()[0]:
        return None
    kw.setdefault("fontsize", 7)
    return ax.legend(*args, loc="upper left", bbox_to_anchor=(x, 1.0), borderaxespad=0.0, **kw)


def line_styles(n: int) -> list[dict[str, Any]]:
    """n styles no two alike: the colour cycle's ten colours, then the same with another dash and marker."""
    return [
        {
            "color": f"C{i % 10}",
            "linestyle": DASHES[i // 10 % len(DASHES)],
            "marker": MARKERS[i % len(MARKERS)],
            "markevery": 0.1,
            "markersize": 3,
        }
        for i in range(n)
    ]


def point_at(points: list[Point], series: str, x: object) -> Point | None:
    """The summarised point of a series at a level, if any trial there succeeded."""
    return next((p for p in points if p.series == series and str(p.x) == str(x) and p.n), None)


def summarize(fig: Figure, rows: Rows) -> list[Point]:
    if fig.summarize is not None:
        return fig.summarize(fig, rows)
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        groups[(row.series, row.text(fig.x))].append(row)
    points = []
    order = {str(level): i for i, level in enumerate(fig.levels)}
    for (series, x), group in sorted(groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 0))):
        ok = [r for r in group if r.ok]
        values = numbers(ok, fig.y)
        if not values:
            points.append(Point(series, x, float("nan"), float("nan"), float("nan"), 0, len(group)))
            continue
        q1, median, q3 = quartiles(values)
        points.append(Point(series, x, median, q1, q3, len(values), len(group) - len(ok)))
    return points


def draw(
    fig: Figure, points: list[Point], rows: Rows, png: Path, quick: bool = False, reference: list[Point] | None = None
) -> list[str]:
    """Plot the points (median, IQR bars) and the reference's; let the spec annotate; write the PNG; return notes."""
    # Imported here: matplotlib takes half a second to load, which every
    # other command (list, doctor, cc, a trial's own work) would pay.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    figure, ax = plt.subplots(figsize=(8, 5.2))
    by_series: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        by_series[p.series].append(p)
    colours: dict[str, Any] = {}
    names = categorical(fig)
    positions = category_positions(fig, points) if names else {}
    offsets = series_offsets(list(by_series)) if names else {}

    def place(p: Point) -> float:
        """The x of a point: its quantity, or its category's place with the series' shift."""
        return positions[str(p.x)] + offsets.get(p.series, 0.0) if names else numeric(p.x)

    for i, (label, pts) in enumerate(by_series.items()):
        pts = sorted(pts, key=place)
        if not any(math.isfinite(p.y) for p in pts):
            pts = []  # no trial of the series succeeded: its legend entry only (all NaN, numpy would warn)
        xs = [place(p) for p in pts]
        ys = [p.y for p in pts]
        err = [[p.y - p.low for p in pts], [p.high - p.y for p in pts]]
        # one marker and one line style per series, every other one hollow: equal series stay visible;
        # between names a line means nothing: markers only
        style: dict[str, Any] = {
            "marker": MARKERS[i % len(MARKERS)],
            "linestyle": "none" if names else SERIES_DASHES[i % len(SERIES_DASHES)],
            **({"markerfacecolor": "none"} if i % 2 else {}),
        }
        drawn = ax.errorbar(xs, ys, yerr=err, capsize=3, label=label or "measured", **style)
        colours[label] = drawn.lines[0].get_color()
        for p, x in zip(pts, xs, strict=True):
            if p.failed:
                ax.annotate(
                    f"n={p.n} ({p.failed} failed)", (x, p.y), fontsize=7, xytext=(3, -10), textcoords="offset points"
                )
    for label, pts in _by_series([p for p in reference or [] if not names or str(p.x) in positions]).items():
        pts = [p for p in sorted(pts, key=place) if p.n]
        ax.plot(
            [place(p) for p in pts],
            [p.y for p in pts],
            linestyle="--",
            marker="o",
            markerfacecolor="none",
            alpha=0.6,
            color=colours.get(label),
            label=f"{label}: reference" if label else "reference reproduction",
        )
    notes = fig.annotate(fig, points, rows, ax) if fig.annotate is not None else []
    if ax.get_legend() is None:  # an annotation may have placed it already
        legend_beside(ax, fontsize=8)
    # a log axis needs a positive value to scale to: a figure whose every trial failed is drawn empty, and says so
    shown = [p for p in [*points, *(reference or [])] if math.isfinite(p.y) and p.y > 0]
    if not any(math.isfinite(p.y) for p in points):
        why = "no successful trial: " + ("the reference only" if shown else "nothing to draw")
        ax.text(0.5, 0.5, why, transform=ax.transAxes, ha="center", va="center")
    if names:
        ax.set_xticks(list(positions.values()), list(positions), rotation=30, ha="right")
    elif fig.x_log and shown:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    if fig.y_log and shown:
        ax.set_yscale("log")
        # plain numbers (0.8, 2, 10), not powers of ten, and no labels between the decades
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(fig.x_label or fig.x)
    ax.set_ylabel(fig.y_label or fig.y)
    counts = sorted({p.n for p in points})
    title = title_of(fig, quick)
    ax.set_title(wrapped(title), fontsize=10)
    ax.grid(True, alpha=0.3)
    caption = f"{fig.spread}; n per point: {', '.join(map(str, counts))}"
    if reference:
        caption += f"; dashed, hollow: the project's reference reproduction (results/reference/{fig.study})"
    text = textwrap.fill(caption, 120)
    figure.text(0.01, 0.01, text, fontsize=8, va="bottom", ha="left")
    figure.subplots_adjust(bottom=0.12 + 0.025 * (text.count("\n") + 1))
    save(figure, png, [title, caption, *notes])
    return notes


def title_of(fig: Figure, quick: bool = False) -> str:
    """The figure's title as `draw` sets it (before `wrapped`): its name and its heading."""
    return f"{fig.full_name}: {fig.heading}" + ("  [quick]" if quick else "")


def wrapped(title: str) -> str:
    """A title as a figure shows it: on lines of at most 80 characters."""
    return "\n".join(textwrap.wrap(title, 80))


def mathtext_problem(text: str) -> str | None:
    """Why matplotlib could not draw `text`, or None.  matplotlib reads a line with an even number of
    unescaped `$` as mathtext (TeX between the `$`), which it parses only when it draws: after every
    trial.  Each line is parsed here, as the drawing would (matplotlib is imported only for a `$`)."""
    if "$" not in text:
        return None
    from matplotlib import cbook
    from matplotlib.mathtext import MathTextParser

    parser = MathTextParser("path")
    for line in text.split("\n"):
        if not cbook.is_math_text(line):
            continue
        try:
            parser.parse(line)
        except ValueError as e:
            why = " ".join(str(e).strip().splitlines()[-1:]) or "no parse"
            return f"matplotlib cannot draw {line!r}: between $ signs is mathtext ({why}); \\$ is a dollar sign"
    return None


def drawn_text_problem(fig: Figure) -> str | None:
    """Why matplotlib could not draw the default figure's title, axis labels or series labels, or None."""
    texts = {
        "title": [wrapped(title_of(fig, quick)) for quick in (False, True)],
        "x_label": [fig.x_label or fig.x],
        "y_label": [fig.y_label or fig.y],
        "series label": [s.label for s in fig.series],
    }
    for what, shown in texts.items():
        for text in shown:
            why = mathtext_problem(text)
            if why:
                return f"{what}: {why}"
    return None


def series_figure(
    title: str,
    series: Mapping[str, Sequence[tuple[float, float]]],
    ylabel: str,
    xlabel: str = "time (s)",
    notes: Sequence[str] = (),
) -> Any:
    """The figure `draw_series` saves, for a caller that looks at it first; it must close it (plt.close)."""
    if not series:
        raise ValueError(f"{title!r}: no series to draw")
    for label, points in series.items():
        if not label or label.startswith("_"):
            raise ValueError(f"{title!r}: series label {label!r} would be left out of the legend")
        if not points:
            raise ValueError(f"{title!r}: series {label!r} has no points")
    import matplotlib  # here, not at the top: see draw

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(8, 5.2))
    styles = ["-", "--", ":", "-."]  # past the 10 colours of the cycle, lines differ by dash too
    for i, (label, points) in enumerate(series.items()):
        xs, ys = zip(*sorted(points), strict=True)
        ax.plot(xs, ys, linestyle=styles[i // 10 % len(styles)], linewidth=1.2, label=label)
    legend_beside(ax, fontsize=8, ncol=1 + (len(series) - 1) // 12)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title("\n".join(textwrap.wrap(title, 80)), fontsize=10)
    ax.grid(True, alpha=0.3)
    if notes:
        text = "\n".join(textwrap.fill(t, 130) for t in notes)
        figure.text(0.01, 0.01, text, fontsize=7, va="bottom", ha="left")
        figure.subplots_adjust(bottom=0.12 + 0.022 * (text.count("\n") + 1))
    return figure


def draw_series(
    png: Path,
    title: str,
    series: Mapping[str, Sequence[tuple[float, float]]],
    ylabel: str,
    xlabel: str = "time (s)",
    notes: Sequence[str] = (),
) -> None:
    """One line per series (a flow's (time, value) points, e.g. cwnd or throughput in bins); write the PNG."""
    figure = series_figure(title, series, ylabel, xlabel)
    save(figure, png, [title, *notes])


def _by_series(points: list[Point]) -> dict[str, list[Point]]:
    out: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        out[p.series].append(p)
    return out


def bar_name(fig: Figure) -> str:
    """What a point's low..high is, in a table's heading: the figure's spread, in a word or two."""
    if fig.spread.startswith("median and interquartile range"):
        return "IQR"
    return "± 1 SE" if "standard error" in fig.spread else "low..high"


def table(fig: Figure, points: list[Point], reference: list[Point] | None = None) -> str:
    """The points as text; with a reference, its value at each point and the run's difference from it."""
    w = max([len("series"), *(len(p.series) for p in points)])
    head = f"{'series':<{w}} {fig.x:>12} {fig.y:>22} {bar_name(fig):>22} {'n':>4} {'failed':>6}"
    lines = [head + (f" {'reference':>12} {'vs ref':>8}" if reference is not None else "")]
    for p in points:
        line = f"{p.series:<{w}} {p.x!s:>12} {p.y:>22.4g} {f'{p.low:.4g}..{p.high:.4g}':>22} {p.n:>4} {p.failed:>6}"
        if reference is not None:
            ref = point_at(reference, p.series, p.x)
            if ref is None:
                line += f" {'-':>12} {'':>8}"
            else:
                change = f"{(p.y - ref.y) / ref.y * 100:+.0f}%" if ref.y and p.n else ""
                line += f" {ref.y:>12.4g} {change:>8}"
        lines.append(line)
    return "\n".join(lines)
