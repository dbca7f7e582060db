"""Study linuxcc's judgements and drawings from synthetic rows: the seed's findings, the physics, Mathis' model."""

from pathlib import Path
from typing import Any

import matplotlib
import pytest

from expts import linuxcc
from netrepro import params, plot
from netrepro.workloads import WORKLOADS

matplotlib.use("Agg")


def row(series: str, cc: str, first10: float, drops: int, goodput: float = 0.8, cwnd: str = "10;20;40;80;160",
        **extra: Any) -> dict[str, str]:  # fmt: skip
    rtt = "1700ms" if series.endswith("a") else "1300ms"
    out = {
        "series": series, "cc": cc, "trial": "0", "status": "ok", "rtt": rtt, "rate": "11mbit", "mtu": "3486",
        "first_10s_mbit": str(first10), "first_15s_mbit": str(first10), "goodput_mbit": str(goodput),
        "bottleneck_drops": str(drops), "drop_rate": str(drops / 1000), "retransmit_rate": "0.001",
        "tcp_mss": "3434", "window_step_s": "0.5", "cwnd_series": cwnd, "cwnd_max": cwnd.split(";")[-1],
    }  # fmt: skip
    return {**out, **{k: str(v) for k, v in extra.items()}}


ROWS = [
    row("WrFl-1", "hybla", 2.0, 30, cwnd="50;120;200;300"),
    row("WrFl-1", "reno", 0.9, 10, cwnd="10;20;40;80;160"),
    row("WrFl-1", "cubic", 1.0, 4),
    row("WrFl-1", "vegas", 0.8, 0),
    row("WrFl-1", "veno", 0.5, 12),
    row("WrFl-2", "hybla", 0.4, 60, cross_delivered_mbit=9.9),
    row("WrFl-2", "reno", 0.5, 50, cross_delivered_mbit=9.9),
    {"series": "WrFl-2", "cc": "vegas", "trial": "0", "status": "failed", "rtt": "1300ms"},
]


def test_the_quick_grid_is_seed_004s_path_at_3500_byte_frames() -> None:
    grid = linuxcc.FIG6.grid(quick=True)
    assert len(grid) == 6 and {p["cc"] for p in grid} == {"hybla", "reno", "vegas"}
    assert {p["series"] for p in grid} == {"WrFl-1", "WrFl-2"}
    assert all(p["mtu"] == 3486 and p["duration_s"] == 20 and p["rtt"] == "1300ms" for p in grid)
    assert all(p.get("cross_rate") == ("10mbit" if p["series"] == "WrFl-2" else None) for p in grid)
    assert grid[0]["receive_buffer"] == 9000 * 3500
    keys = params.trial_keys(WORKLOADS["long_flow"].keys)
    params.check_grid("linuxcc/fig6", linuxcc.FIG6.grid(), keys)  # every key known, every value allowed
    assert len(linuxcc.FIG6.grid()) == 13 * 4


def test_the_figures_share_one_csv_and_the_thirteen_linux_ships() -> None:
    assert {f.csv_name for f in linuxcc.FIGURES} == {"fig6.csv"}
    assert "compound" not in linuxcc.ALGORITHMS and len(linuxcc.ALGORITHMS) == 13


def test_hybla_highest_in_the_first_10_s_agrees_and_veno_lowest_agrees() -> None:
    notes = linuxcc.judge_fig6(ROWS)
    assert any(n.startswith("WrFl-1: hybla 2") and n.endswith("agrees") for n in notes), notes
    differs = next(n for n in notes if n.startswith("WrFl-2: hybla 0.4"))
    assert "the highest is reno 0.5: DIFFERS; likely why: Hybla's increase" in differs  # with its 0.1 % resent
    assert "(largest window 160 segments) and 0 % of its segments are sent again" in differs
    assert any(n.startswith("WrFl-1: veno 0.5") and n.endswith("agrees") for n in notes), notes


def test_cubics_drop_rate_among_the_lowest() -> None:
    notes = linuxcc.judge_fig5(ROWS)
    # WrFl-1 from the lowest: vegas 0, cubic 4, reno 10, veno 12, hybla 30: number 2 of 5, in the lowest third
    assert any("CUBIC's drop rate is number 2 of 5" in n and n.endswith("agrees") for n in notes), notes
    assert any(n.startswith("WrFl-1: hybla 3") and n.endswith("agrees") for n in notes), notes


def test_the_physics_holds_and_fails_where_it_should() -> None:
    notes = linuxcc.physics_notes(ROWS)
    assert any(n.startswith("physics: no flow above the core's 10.79") and n.endswith("holds") for n in notes), notes
    # UDP delivered 9.9 Mbit/s of 3458-byte datagrams: 10.02 Mbit/s of frames, 0.98 left, 0.96 of payload
    assert any("TCP gets at most what is left, 0.96 Mbit/s: holds" in n for n in notes), notes
    hybla = "physics, WrFl-1: Hybla reaches a window of 100 segments after 1.0 s, Reno after 2.5 s: holds"
    assert hybla + " (Hybla faster in slow start)" in notes
    assert "physics, WrFl-1: drops at the core, Vegas 0, Reno 10: holds (Vegas drops fewer)" in notes
    too_fast = [row("WrFl-2", "reno", 2.0, 5, goodput=3.0, cross_delivered_mbit=9.9)]
    assert any("FAILS in 1 of 1 trials" in n for n in linuxcc.physics_notes(too_fast))


def test_hybla_first_to_100_segments_is_judged_even_where_no_other_reaches_it() -> None:
    """fig4: Hybla alone at a window of 100 (the others never, as Reno beside UDP) is still Hybla first."""
    rows = [row("WrFl-2", "hybla", 0.4, 60, cwnd="50;120;200"), row("WrFl-2", "reno", 0.5, 50, cwnd="10;20;30"),
            row("WrFl-2", "vegas", 0.5, 50, cwnd="10;20;30")]  # fmt: skip
    (check,) = linuxcc.checks_fig4(rows)
    assert check.holds, check
    assert check.note == ("WrFl-2: first to a window of 100 segments: hybla after 1.0 s; never within the run: reno, "
                          "vegas; Hybla grows most aggressively: agrees")  # fmt: skip
    (check,) = linuxcc.checks_fig4(ROWS[:2])  # hybla at 1.0 s, reno at 2.5 s
    assert check.note == ("WrFl-1: first to a window of 100 segments: hybla after 1.0 s; the slowest to it: "
                          "reno 2.5 s; Hybla grows most aggressively: agrees")  # fmt: skip


def test_mathis_model() -> None:
    r = row("WrFl-1", "reno", 1, 1, retransmit_rate=0.01)
    assert linuxcc.mathis_mbit(r) == pytest.approx(1.22 * 3434 * 8 / (1.3 * 0.1) / 1e6)
    assert linuxcc.mathis_mbit(row("WrFl-1", "reno", 1, 1, retransmit_rate=0)) is None
    notes = linuxcc.judge_whole(ROWS)
    assert any(n.startswith("WrFl-1: measured / Mathis' model: ") for n in notes), notes


def test_every_figure_draws(tmp_path: Path) -> None:
    for fig in linuxcc.FIGURES:
        points = plot.summarize(fig, ROWS)
        png = tmp_path / f"{fig.name}.png"
        notes = (fig.drawing or plot.draw)(fig, points, ROWS, png, quick=True)
        assert png.stat().st_size > 10_000 and notes, fig.name
    drops = plot.summarize(linuxcc.FIG5, ROWS)
    assert next(p for p in drops if p.series == "WrFl-1" and p.x == "hybla").y == pytest.approx(3.0)
    failed = next(p for p in drops if p.series == "WrFl-2" and p.x == "vegas")
    assert failed.n == 0 and failed.failed == 1


def test_a_categorical_axis_places_the_levels_with_points_in_declared_order() -> None:
    points = plot.summarize(linuxcc.FIG6, ROWS)
    assert plot.categorical(linuxcc.FIG6)
    assert plot.category_positions(linuxcc.FIG6, points) == {"cubic": 0, "hybla": 1, "reno": 2, "vegas": 3, "veno": 4}


def test_a_single_level_is_drawn_as_a_category() -> None:
    from expts import newcwv

    assert plot.categorical(newcwv.PACING) and not plot.categorical(newcwv.FIG7)
    assert plot.series_offsets(["a", "b", "c"]) == {"a": -0.2, "b": 0.0, "c": 0.2}
    assert len({(s["color"], s["linestyle"]) for s in plot.line_styles(13)}) == 13
