"""A figure run with other parameters is a figure of its own; a run is set beside the reference reproduction."""

import argparse
import csv
import io
import shutil
from pathlib import Path

import matplotlib
import pytest

import expts
from expts import cubicplus, iw
from ground.errors import UserError
from ground.results import REFERENCE, RESULTS
from ground.trials import latest_rows, read_rows, row_seed, trial_key
from ground.units import QuantityError
from netrepro.front import cli
from netrepro.runner import derive, manifest, sweep
from netrepro.studykit import plot
from netrepro.studykit.spec import Figure, Point, variant_name
from netrepro.studykit.trial import trial_path


def run_args(*argv: str) -> argparse.Namespace:
    return cli.build_parser().parse_args(["run", *argv])


def derived(*argv: str) -> Figure:
    args = run_args(*argv)
    return derive.derived_figure(expts.find(args.figure), args)


# -- what a derived figure is ---------------------------------------------------------------


def test_a_figure_s_path_is_typed_once_from_its_fixed_parameters() -> None:
    fig = derived("iw/fig2", "--set", "rtt=50ms", "--set", "rate=6000kbit")
    assert fig.path.rtt.ms == 50 and fig.path.rate_down.bps == 6e6
    assert iw.FIG2.path.rate_down.bps == 3e6
    assert expts.find("iw/fig5b").path.rtt.ms == 100  # it varies the rate; its RTT is fixed
    # a trial's path: its path keys typed, the others (cc, ...) not the path's
    trial = trial_path({"rtt": "1.3s", "rate": "11mbit", "queue": "15p", "mtu": 3486, "cc": "hybla"})
    assert (trial.rtt.ms, trial.rate_down.bps, trial.queue.packets, trial.mss) == (1300, 11e6, 15, 3434)
    with pytest.raises(QuantityError, match="fast"):
        trial_path({"rtt": "fast"})


def test_the_declared_figure_is_not_derived() -> None:
    fig = derived("iw/fig2")
    assert fig is iw.FIG2 and fig.directory == "iw" and fig.full_name == "iw/fig2"


def test_set_makes_a_figure_of_its_own_whose_title_follows_the_path() -> None:
    fig = derived("iw/fig2", "--set", "rtt=50ms", "--set", "rate=6000kbit")
    assert fig.directory == "iw/fig2@rtt=50ms+rate=6mbit"
    assert fig.fixed["rtt"] == "50ms" and fig.fixed["rate"] == "6mbit"  # normalized: 6000kbit is 6mbit
    assert "(6 Mbit/s, RTT 50 ms, CUBIC)" in fig.heading
    assert "(3 Mbit/s, RTT 100 ms, CUBIC)" in iw.FIG2.heading
    assert dict(fig.overrides) == {"rtt": "50ms", "rate": "6mbit"}


def test_set_takes_a_whole_number_where_the_figure_declares_one() -> None:
    fig = derived("cubicplus/fig3", "--set", "initcwnd=16")
    assert fig.fixed["initcwnd"] == 16
    assert {p["initcwnd"] for p in fig.grid()} == {16}


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["cubicplus/fig3", "--set", "initcwnd=sixteen"], "--set initcwnd=sixteen"),
        (["cubicplus/fig3", "--set", "rate=abc"], "--set rate=abc"),
        (["cubicplus/fig3", "--set", "loss=2%"], "--set 'loss=2%'"),  # the x factor: --vary it instead
        (["cubicplus/fig3", "--set", "cc=bbr"], "--set 'cc=bbr'"),  # the series': --series it instead
        (["cubicplus/fig3", "--vary", "rtt=20ms,50ms"], "--set loss=VALUE"),
        (["cubicplus/fig3", "--vary", "loss=1%,1%"], "distinct"),
        (["cubicplus/fig3", "--vary", "loss=7"], "did you mean 7%"),
        (["cubicplus/fig3", "--series", "loss=0%,1%"], "--series 'loss=0%,1%'"),
        (["cubicplus/fig3", "--series", "nonsense=1,2"], "--series 'nonsense=1,2'"),
    ],
)
def test_bad_derivations_are_refused_naming_what_was_typed(argv: list[str], named: str) -> None:
    with pytest.raises(UserError) as refused:
        derived(*argv)
    assert named in str(refused.value)


def test_vary_the_x_factor_at_other_levels_keeps_the_figures_own_judgement() -> None:
    fig = derived("cubicplus/fig3", "--vary", "loss=0%,1%,5%")
    assert fig.x == "loss" and fig.levels == ("0%", "1%", "5%") and fig.quick_levels is None
    assert fig.annotate is expts.find("cubicplus/fig3").annotate is not None
    assert fig.directory == "cubicplus/fig3@loss=0%,1%,5%"


def test_vary_another_factor_and_series_of_another_key() -> None:
    fig = derived("cubicplus/fig3", "--set", "loss=2%", "--vary", "rtt=20ms,100ms", "--series", "cc=cubic,bbr")
    assert fig.x == "rtt" and fig.levels == ("20ms", "100ms") and fig.fixed["loss"] == "2%"
    assert [s.label for s in fig.series] == ["cubic", "bbr"]
    assert {(p["rtt"], p["cc"], p["loss"]) for p in fig.grid(quick=True)} == {
        (r, c, "2%") for r in ("20ms", "100ms") for c in ("cubic", "bbr")
    }
    assert fig.annotate is None and fig.summarize is None  # the source's finding is about loss, not rtt
    assert any("not judged" in d for d in fig.deviations)


def test_a_long_derivation_gets_a_short_unique_directory() -> None:
    long_a = "page=" + "x" * 100 + "a"
    long_b = "page=" + "x" * 100 + "b"
    assert len(variant_name(long_a)) <= 60 and variant_name(long_a) != variant_name(long_b)
    assert "/" not in variant_name("page=a/b") and variant_name("page=a/b") != variant_name("page=a-b")


def test_the_declared_figures_trial_keys_are_those_of_their_reference_rows() -> None:
    """Stored results still resume: every stored row's key is a trial of its declared figure, and the
    figures run in full have every trial's key stored."""
    checked = 0
    for fig in expts.all_figures():
        csv_path = REFERENCE / fig.study / fig.csv_name
        if not csv_path.exists():
            continue
        stored = {r["trial_key"] for r in read_rows(csv_path) if row_seed(r) == 1}
        settings = [*fig.grid(), *fig.grid(quick=True)]
        declared = {trial_key(p, i) for p in settings for i in range(fig.trials)}
        assert stored <= declared, (fig.full_name, sorted(stored - declared)[:2])
        full = {trial_key(p, i) for p in fig.grid() for i in range(fig.trials)}
        checked += full <= stored
    assert checked >= 12  # all but the spdy figures were run in full


# -- the model lines follow the effective path ------------------------------------------------


def model_line(fig: Figure) -> list[float]:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots()
    assert fig.annotate is not None
    fig.annotate(fig, [], [], ax)
    line = next(li for li in ax.get_lines() if "model" in str(li.get_label()))
    plt.close(figure)
    return [float(y) for y in line.get_ydata()]


def test_fig2s_model_line_follows_set_rate_and_rtt() -> None:
    declared = model_line(iw.FIG2)
    faster = model_line(derived("iw/fig2", "--set", "rate=6mbit"))
    nearer = model_line(derived("iw/fig2", "--set", "rtt=50ms"))
    assert declared == [iw.model_ms(w, 100, 3e6) for w in iw.FIG2.levels]
    assert faster == [iw.model_ms(w, 100, 6e6) for w in iw.FIG2.levels]
    assert nearer == [iw.model_ms(w, 50, 3e6) for w in iw.FIG2.levels]
    assert all(f < d for f, d in zip(faster, declared, strict=True))


def test_the_cubicplus_iw_band_follows_set_rate() -> None:
    page = 1_000_000
    rounds_ms = cubicplus.page_rounds(page, 10) * 20  # fig10's RTT, 20 ms
    for rate, bps in (("100mbit", 100e6), ("10mbit", 10e6)):
        fig = (
            expts.find("cubicplus/fig10") if rate == "100mbit" else derived("cubicplus/fig10", "--set", f"rate={rate}")
        )
        wire_ms = page * 8 / bps * 1e3
        assert cubicplus.page_load_band(page, 10, fig) == pytest.approx((max(rounds_ms, wire_ms), rounds_ms + wire_ms))


# -- the reference beside a run -----------------------------------------------------------------


def test_a_run_of_its_own_writes_beside_not_over_the_reference() -> None:
    assert run_args("fig2").out == RESULTS
    assert RESULTS / iw.FIG2.directory / iw.FIG2.csv_name != REFERENCE / "iw" / "fig2.csv"
    assert (REFERENCE / "iw" / "fig2.csv").exists()


def test_a_run_in_a_fresh_results_directory_runs_every_trial(tmp_path: Path) -> None:
    """The headline command measures: nothing of the reference counts as done for a run of one's own."""
    from ground.trials import TrialLog

    opts = sweep.Options(out=tmp_path)
    log = TrialLog(tmp_path / "iw" / iw.FIG2.csv_name, tree=tmp_path)
    assert len(sweep.trials_to_run(iw.FIG2, iw.FIG2.grid(), iw.FIG2.trials, log, opts)) == 120


def test_reference_points_are_those_of_the_stored_rows() -> None:
    ref = manifest.reference_of(iw.FIG2, RESULTS)
    assert ref is not None and ref.rows == 120
    stored = latest_rows(read_rows(REFERENCE / "iw" / "fig2.csv"))
    assert ref.points == plot.summarize(iw.FIG2, stored)
    assert ref.made_by["shaper"] == "delayline" and ref.made_by["git"]
    assert ref.manifest()["csv"] == "results/reference/iw/fig2.csv"


def test_no_reference_for_a_derived_figure_or_for_the_reference_itself(tmp_path: Path) -> None:
    assert manifest.reference_of(derived("iw/fig2", "--set", "rtt=50ms"), RESULTS) is None
    assert manifest.reference_of(iw.FIG2, REFERENCE) is None
    assert manifest.reference_of(iw.FIG2, RESULTS, reference=tmp_path) is None  # none there


def test_reference_without_a_readable_manifest_still_has_its_points(tmp_path: Path) -> None:
    (tmp_path / "iw").mkdir()
    shutil.copy(REFERENCE / "iw" / "fig2.csv", tmp_path / "iw" / "fig2.csv")
    (tmp_path / "iw" / "fig2.manifest.json").write_text("{not json")
    ref = manifest.reference_of(iw.FIG2, RESULTS, reference=tmp_path)
    assert ref is not None and ref.rows == 120 and "git" not in ref.made_by


def test_the_table_sets_the_reference_beside_each_point() -> None:
    points = [Point("", 3, 600.0, 590.0, 610.0, 1), Point("", 6, 500.0, 490.0, 510.0, 1)]
    reference = [Point("", 3, 500.0, 490.0, 510.0, 20)]
    lines = plot.table(iw.FIG2, points, reference).splitlines()
    assert "reference" in lines[0] and "vs ref" in lines[0]
    assert lines[1].split()[-2:] == ["500", "+20%"]
    assert lines[2].split()[-1] == "-"  # no reference point at IW 6
    assert "reference" not in plot.table(iw.FIG2, points)


def test_reference_csvs_are_whole() -> None:
    for path in sorted(REFERENCE.glob("*/*.csv")):
        rows = list(csv.DictReader(io.StringIO(path.read_text())))
        assert rows and all(r["trial_key"] and r["status"] for r in rows), path


def test_the_tables_heading_names_the_figures_bar() -> None:
    from expts import newcwv

    point = [Point("a", 5, 1.0, 0.5, 1.5, 3)]
    assert "IQR" in plot.table(iw.FIG2, point).splitlines()[0]
    for fig in (newcwv.FIG7, newcwv.FIG9):  # a gain and a mean, each with one standard error
        head = plot.table(fig, point).splitlines()[0]
        assert "± 1 SE" in head and "IQR" not in head


def test_set_holds_in_a_quick_run_over_the_quick_runs_own_value() -> None:
    """newcwv/fig8's quick run sets idle_s=1,5 of its own; --set idle_s=1 must hold there too."""
    fig = derived("newcwv/fig8", "--set", "idle_s=1")
    assert {str(p["idle_s"]) for p in fig.grid(quick=True)} == {"1"}
    assert {str(p["idle_s"]) for p in expts.find("newcwv/fig8").grid(quick=True)} == {"1,5"}


def test_a_claim_set_by_design_is_tested_where_the_derived_figure_undoes_the_design() -> None:
    declared = expts.find("cubicplus/fig9")
    lossy = derived("cubicplus/fig9", "--set", "loss=2%")
    assert [type(c.test).__name__ for c in declared.claims] == ["ByDesign"]
    assert [type(c.test).__name__ for c in lossy.claims] == ["AllOf"]
    assert any("set by design in the declared figure" in d for d in lossy.deviations)
