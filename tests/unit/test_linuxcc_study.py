"""Study linuxcc's figures from synthetic rows: its grid, its claims declared, its notes (physics, Mathis' model) and
drawings; the claims' own tests are test_linuxcc_claims.py."""

from pathlib import Path
from typing import Any

import matplotlib
import pytest

from expts import linuxcc, linuxcc_claims, linuxcc_trials
from ground.trials import Row
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit import claims, params, plot, trial
from netrepro.studykit.decisions import ByDesign

matplotlib.use("Agg")


def row(series: str, cc: str, first10: float, drops: int, goodput: float = 0.8, cwnd: str = "10;20;40;80;160",
        **extra: Any) -> Row:  # fmt: skip
    rtt = "1700ms" if series.endswith("a") else "1300ms"
    out = {
        "series": series, "cc": cc, "trial": "0", "status": "ok", "rtt": rtt, "rate": "11mbit", "mtu": "3486",
        "first_10s_mbit": str(first10), "first_15s_mbit": str(first10), "goodput_mbit": str(goodput),
        "bottleneck_drops": str(drops), "drop_rate": str(drops / 1000), "retransmit_rate": "0.001",
        "tcp_mss": "3434", "window_step_s": "0.5", "cwnd_series": cwnd, "cwnd_max": cwnd.split(";")[-1],
    }  # fmt: skip
    return Row({**out, **{k: str(v) for k, v in extra.items()}})


ROWS = [
    row("WrFl-1", "hybla", 2.0, 30, cwnd="50;120;200;300"),
    row("WrFl-1", "reno", 0.9, 10, cwnd="10;20;40;80;160"),
    row("WrFl-1", "cubic", 1.0, 4),
    row("WrFl-1", "vegas", 0.8, 0),
    row("WrFl-1", "veno", 0.5, 12),
    row("WrFl-2", "hybla", 0.4, 60, cross_delivered_mbit=9.9),
    row("WrFl-2", "reno", 0.5, 50, cross_delivered_mbit=9.9),
    Row(series="WrFl-2", cc="vegas", trial="0", status="failed", rtt="1300ms"),
]


def test_the_quick_grid_is_seed_004s_path_at_3500_byte_frames() -> None:
    grid = linuxcc.FIG6.grid(quick=True)
    assert len(grid) == 6 and {p["cc"] for p in grid} == {"hybla", "reno", "vegas"}
    assert {p["series"] for p in grid} == {"WrFl-1", "WrFl-2"}
    assert all(p["mtu"] == 3486 and p["duration_s"] == 20 and p["rtt"] == "1300ms" for p in grid)
    assert all(p.get("cross_rate") == ("10mbit" if p["series"] == "WrFl-2" else None) for p in grid)
    assert grid[0]["receive_buffer"] == 9000 * 3500
    keys = params.trial_keys(WORKLOADS["long_flow"].keys)
    trial.check_grid("linuxcc/fig6", linuxcc.FIG6.grid(), keys)  # every key known, every value allowed
    assert len(linuxcc.FIG6.grid()) == 13 * 4


def test_the_figures_share_one_csv_and_the_thirteen_linux_ships() -> None:
    assert {f.csv_name for f in linuxcc.FIGURES} == {"fig6.csv"}
    assert "compound" not in linuxcc_trials.ALGORITHMS and len(linuxcc_trials.ALGORITHMS) == 13


def test_the_seeds_sentences_are_the_figures_claims() -> None:
    for fig in linuxcc.FIGURES:
        assert all(c.source == linuxcc_claims.SEED for c in fig.claims), fig.name
    assert linuxcc.FIG7.claims == ()  # the seed says nothing of its Figure 7
    assert [len(f.claims) for f in (linuxcc.FIG4, linuxcc.FIG5, linuxcc.FIG6, linuxcc.WHOLE)] == [6, 5, 3, 2]
    hybla_grows = linuxcc.FIG4.claims[0]
    assert isinstance(hybla_grows.test, ByDesign) and "rtt=25ms" in hybla_grows.test.could_fail
    vegas_reno_drops = [
        c for f in linuxcc.FIGURES for c in f.claims if {"Vegas", "Reno", "drop"} <= set(c.quote.split())
    ]
    assert not vegas_reno_drops, "the seed never compares Vegas's drops with Reno's"
    judged = claims.verdict(claims.judge(linuxcc.FIG7.claims, linuxcc.FIG7, ROWS))
    assert judged["verdict"] == "unjudged"
    notes = linuxcc.FIG7.annotate(linuxcc.FIG7, [], ROWS, None) if linuxcc.FIG7.annotate else []
    assert notes[0].startswith("the seed states no finding of its Figure 7")


def test_the_notes_state_context_and_no_verdict_on_the_seed() -> None:
    notes = linuxcc.hybla_notes(ROWS)
    assert notes[0].startswith("WrFl-1: Hybla's increase (2^rho - 1 segments per ACK")
    assert "(largest window 300 segments, median) and 0 % of its segments are sent again" in notes[0]
    fig6 = linuxcc.FIG6.annotate(linuxcc.FIG6, [], ROWS, None) if linuxcc.FIG6.annotate else []
    assert fig6[0].startswith('not judged: "The behavior of TCP Hybla, TCP CUBIC, Highspeed TCP is same')
    for note in fig6 + linuxcc.physics_notes(ROWS):
        assert "agrees" not in note and "DIFFERS" not in note, note


def test_the_physics_holds_and_fails_where_it_should() -> None:
    notes = linuxcc.physics_notes(ROWS)
    assert any(n.startswith("physics: no flow above the core's 10.79") and n.endswith("holds") for n in notes), notes
    # UDP delivered 9.9 Mbit/s of 3458-byte datagrams: 10.02 Mbit/s of frames, 0.98 left, 0.96 of payload
    assert any("TCP gets at most what is left, 0.96 Mbit/s: holds" in n for n in notes), notes
    assert "WrFl-1: Hybla's window reached 100 segments after 1.0 s (median), Reno's after 2.5 s" in notes
    assert not any("Vegas" in n for n in notes), "the seed never compares Vegas's drops with Reno's"
    too_fast = [row("WrFl-2", "reno", 2.0, 5, goodput=3.0, cross_delivered_mbit=9.9)]
    assert any("FAILS in 1 of 1 trials" in n for n in linuxcc.physics_notes(too_fast))


def test_mathis_model() -> None:
    r = row("WrFl-1", "reno", 1, 1, retransmit_rate=0.01)
    assert linuxcc_trials.mathis_mbit(r) == pytest.approx(1.22 * 3434 * 8 / (1.3 * 0.1) / 1e6)
    assert linuxcc_trials.mathis_mbit(row("WrFl-1", "reno", 1, 1, retransmit_rate=0)) is None
    notes = linuxcc.mathis_notes(ROWS)
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
