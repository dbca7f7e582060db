"""`run.sh reproduce STUDY|all`: a study's declared figures in one command, without a lab (the figures' runs
and the machine's probes replaced); the real run is the benchmark's (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

import expts
from expts import iw as iw_study
from ground.errors import SetupError, UserError
from netrepro.front import cli, figure_commands, reproduce
from netrepro.runner import preflight


def parsed(*argv: str) -> argparse.Namespace:
    return cli.build_parser().parse_args(["reproduce", *argv])


def test_a_study_is_its_declared_figures_and_all_is_every_study() -> None:
    iw = reproduce.figures_of("iw")
    assert [f.full_name for f in iw] == [f.full_name for f in iw_study.FIGURES]
    assert len(reproduce.figures_of("all")) == len(expts.all_figures())
    with pytest.raises(UserError, match=r"reproduce iww: no such study; the studies are iw, cubicplus, .*, or all"):
        reproduce.figures_of("iww")


def test_a_figure_that_plots_anothers_rows_comes_after_it() -> None:
    for what in ("cubicplus", "all"):
        order = [f.full_name for f in reproduce.figures_of(what)]
        for fig in reproduce.figures_of(what):
            if fig.trials_of:
                owner = f"{fig.study}/{fig.trials_of}"
                assert order.index(owner) < order.index(fig.full_name), (owner, fig.full_name)


def test_reproduce_takes_runs_options() -> None:
    args = parsed("iw", "--quick", "--jobs", "2", "--out", "/tmp/x", "--seed", "3")
    assert (args.study, args.quick, args.jobs, args.out, args.seed) == ("iw", True, "2", Path("/tmp/x"), 3)
    assert cli.needs_root(args) and not cli.needs_root(parsed("iw", "--dry-run"))


def _no_machine(monkeypatch: pytest.MonkeyPatch, lacking: frozenset[str] = frozenset()) -> list[str]:
    """Each figure's run replaced: it records the figure; the machine's probe refuses the figures `lacking`."""
    ran: list[str] = []

    def check_machine(needs: preflight.Needs) -> None:
        if needs.what.removeprefix("run ") in lacking:
            raise SetupError(f"{needs.what}: pacer=fq needs the fq qdisc (sch_fq), which this kernel does not have")

    def cmd_run(args: argparse.Namespace) -> int:
        ran.append(args.figure)
        return 3 if args.figure == "iw/fig5a" else 0

    monkeypatch.setattr(preflight, "check_machine", check_machine)
    monkeypatch.setattr(figure_commands, "cmd_run", cmd_run)
    monkeypatch.setattr("netrepro.front.report.write", lambda tree, out: (out, []))
    return ran


def test_every_figure_runs_in_order_and_the_exit_status_counts_the_one_not_ok(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = _no_machine(monkeypatch)
    status = reproduce.cmd_reproduce(parsed("iw", "--quick", "--out", str(tmp_path)))
    assert ran == [f.full_name for f in reproduce.figures_of("iw")]
    assert status == figure_commands.TRIALS_NOT_OK  # iw/fig5a's run had a trial not ok
    said = capsys.readouterr().out
    assert "figure 1 of 4, iw/fig2" in said and "elapsed, about" in said and "left by the stored estimates" in said
    assert "iw/fig5a             trials not ok" in said


def test_a_figure_this_machine_cannot_run_is_skipped_saying_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = _no_machine(monkeypatch, lacking=frozenset({"iw/fig2"}))
    status = reproduce.cmd_reproduce(parsed("iw", "--quick", "--out", str(tmp_path)))
    assert "iw/fig2" not in ran and len(ran) == 3 and status == figure_commands.TRIALS_NOT_OK
    captured = capsys.readouterr()
    assert "iw/fig2: skipped: run iw/fig2: pacer=fq needs the fq qdisc" in captured.out
    assert "`sudo ./run.sh --vm reproduce iw` runs them in the stock-kernel lane" in captured.err


def test_the_dry_run_prints_the_plan_and_the_wall_time_at_the_labs_it_would_use(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = _no_machine(monkeypatch)
    assert reproduce.cmd_reproduce(parsed("all", "--dry-run")) == 0
    assert ran == []  # nothing run
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(f"reproduce all: {len(expts.all_figures())} figures; serially about ")
    serial, packed = (reproduce_clock(t) for t in last.split(" about ")[1:3])
    assert 0 < packed < serial, last  # labs side by side fill the cores the waiting figures leave


def reproduce_clock(text: str) -> int:
    h, m, s = text.split()[0].rstrip(";").split(":")
    return int(h) * 3600 + int(m) * 60 + int(s)


def test_the_run_of_each_figure_is_runs_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each figure goes through `run`'s own command with reproduce's options: its files, resume and exit."""
    seen: list[dict[str, Any]] = []
    _no_machine(monkeypatch)

    def cmd_run(args: argparse.Namespace) -> int:
        seen.append(dict(vars(args)))
        return 0

    monkeypatch.setattr(figure_commands, "cmd_run", cmd_run)
    assert reproduce.cmd_reproduce(parsed("spdy", "--quick", "--seed", "4", "--out", str(tmp_path))) == 0
    assert [s["figure"] for s in seen] == [f.full_name for f in reproduce.figures_of("spdy")]
    assert all(s["quick"] and s["seed"] == 4 and s["out"] == tmp_path for s in seen)


def test_the_table_shows_each_figures_verdict_from_its_manifest(tmp_path: Path) -> None:
    fig = reproduce.figures_of("iw")[0]
    path = tmp_path / fig.directory / f"{fig.name}.manifest.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"format": 1, "verdict": {"verdict": "deterministic", "claims": []}}')
    assert reproduce._verdict(fig, tmp_path) == "deterministic"
    assert reproduce._verdict(reproduce.figures_of("iw")[1], tmp_path) == ""  # no manifest: none


def test_the_dry_runs_times_leave_out_the_figures_skipped_here(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_machine(monkeypatch)
    reproduce.cmd_reproduce(parsed("iw", "--dry-run"))
    every = capsys.readouterr().out.strip().splitlines()[-1]
    _no_machine(monkeypatch, lacking=frozenset({"iw/fig5a"}))
    reproduce.cmd_reproduce(parsed("iw", "--dry-run"))
    fewer = capsys.readouterr().out.strip().splitlines()[-1]
    assert "4 figures, 1 skipped here;" in fewer and "skipped" not in every
    assert reproduce_clock(fewer.split(" about ")[1]) < reproduce_clock(every.split(" about ")[1])
