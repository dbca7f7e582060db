"""A run's exit status tells the truth: 0 only when every trial it leaves is ok, TRIALS_NOT_OK (3) when
some failed, timed out or were not run, with one line naming them and the command that runs them again;
a --plot-only draws rows it did not run and exits 0 (docs/commands.md, "Exit codes and errors")."""

from __future__ import annotations

import csv
import warnings
from pathlib import Path
from typing import Any

import pytest

import expts
from ground.results import REFERENCE
from netrepro.front import cli, figure_commands
from netrepro.runner import preflight, resume, sweep
from netrepro.runner.resume import RowSink
from netrepro.runner.sweep import Outcome
from netrepro.studykit.spec import Figure
from netrepro.studykit.trial import Trial


def _lab_free(monkeypatch: pytest.MonkeyPatch, failing: int) -> list[str]:
    """The run without root or a lab: the machine's checks pass, and the trial runner writes each trial's
    row itself, the first `failing` of them failed; returns the trial keys it ran."""
    ran: list[str] = []

    def run_trials(fig: Figure, todo: list[Trial], opts: sweep.Options, sink: RowSink) -> dict[str, Any]:
        for n, trial in enumerate(todo):
            ran.append(trial.key)
            row = {"trial_key": trial.key, "figure": fig.full_name, "trial": trial.index, **trial.setting}
            row["seed"] = opts.seed
            if n < failing:
                row.update(status="timeout", error="no result within 5 s")
            else:
                row.update(status="ok", error="", **{fig.y: 400.0 + n})
            sink.append(row)
        return {}

    monkeypatch.setattr(cli, "needs_root", lambda args: False)
    monkeypatch.setattr(preflight, "check_request", lambda needs: None)
    monkeypatch.setattr(preflight, "check_machine", lambda needs: None)
    monkeypatch.setattr(resume, "planned_setup", lambda *args: None)  # no probe of the machine
    monkeypatch.setattr(resume, "check_resume", lambda *args: None)
    monkeypatch.setattr(sweep, "run_trials", run_trials)
    return ran


def test_a_run_with_a_failed_trial_exits_3_and_names_the_command_that_runs_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = _lab_free(monkeypatch, failing=1)
    out = str(tmp_path / "out")
    assert cli.main(["iw/fig2", "--quick", "--fresh", "--out", out]) == figure_commands.TRIALS_NOT_OK == 3
    err = capsys.readouterr().err
    trials = len(ran)
    assert trials == 12
    assert err == (
        f"run.sh run: 1 trial not ok, 1 failed (iw/fig2: 1 failed of {trials}); "
        f"`sudo ./run.sh iw/fig2 --quick --out {out}` runs them again (exit 3)\n"
    )
    # the command named runs the failed trial again (and only it), and, every trial ok, exits 0
    ran.clear()
    _lab_free(monkeypatch, failing=0)
    assert cli.main(["iw/fig2", "--quick", "--out", out]) == 0
    assert capsys.readouterr().err == ""


def test_a_run_whose_every_trial_failed_exits_3_without_numpy_s_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every trial failed: the figure says so, and matplotlib's "All-NaN axis" warnings stay off the terminal."""
    _lab_free(monkeypatch, failing=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning that would reach the terminal fails the run here
        code = cli.main(["iw/fig2", "--quick", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 3, captured.err
    assert "run.sh run: 12 trials not ok, 12 failed (iw/fig2: 12 failed of 12)" in captured.err
    assert "12 of 12 trials failed (each row's error says why; the first: no result within 5 s)" in captured.out
    assert "no successful trial: the reference only" in (tmp_path / "iw" / "fig2.svg").read_text()


def _stored_rows_all_failed(fig: Figure, out: Path) -> None:
    with open(REFERENCE / fig.study / fig.csv_name, newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    (out / fig.study).mkdir(parents=True)
    with open(out / fig.study / fig.csv_name, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header or [])
        writer.writeheader()
        writer.writerows({**r, "status": "failed", "error": "boom"} for r in rows)


def test_plot_only_of_failed_rows_exits_0_and_a_merge_of_them_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--plot-only redraws rows it did not run: 0.  A merge completes a sharded run, and sees all of it: 3."""
    fig = expts.find("iw/fig2")
    _stored_rows_all_failed(fig, tmp_path / "stored")
    monkeypatch.setattr(cli, "needs_root", lambda args: False)
    assert cli.main(["iw/fig2", "--plot-only", "--out", str(tmp_path / "stored")]) == 0
    said = capsys.readouterr()
    assert "the same command without --plot-only runs them again" in said.out
    assert said.err == ""
    csv_path = tmp_path / "stored" / fig.study / fig.csv_name
    assert cli.main(["merge", str(csv_path), "--into", str(tmp_path / "merged")]) == 3
    said = capsys.readouterr()
    assert "each shard's own command (its --shard K/N) runs its trials again, and this merge draws them" in said.out
    assert said.err.startswith("run.sh merge: 120 trials not ok, 120 failed (iw/fig2: 120 failed of 120); ")


def test_the_command_named_again_resumes_and_runs_the_failed_trials() -> None:
    typed = ["-v", "study.toml", "--fresh", "--no-retry", "--out", "/tmp/a b", "--set", "object_bytes=2000000"]
    assert figure_commands.again_command(typed) == (
        "sudo ./run.sh -v study.toml --out '/tmp/a b' --set object_bytes=2000000"
    )


def test_the_line_counts_each_figure_s_trials_not_ok() -> None:
    csv_path = Path("x.csv")
    outcomes = [
        Outcome("iw/fig2", csv_path, 12, failed=2),
        Outcome("iw/fig3", csv_path, 12),
        Outcome("iw/fig5a", csv_path, 30, failed=1, missing=4),
    ]
    assert figure_commands.not_ok_line(outcomes) == (
        "7 trials not ok, 3 failed and 4 not run (iw/fig2: 2 failed of 12; iw/fig5a: 1 failed and 4 not run of 30)"
    )
    assert figure_commands.not_ok_line(outcomes[1:2]) is None


@pytest.mark.parametrize("name", ["iw/fig5a", "newcwv/pacing"])
def test_a_figure_whose_every_trial_failed_is_drawn_without_matplotlib_s_complaints(
    name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """No legend where nothing is labelled: matplotlib logs "No artists with labels found" to the terminal."""
    fig = expts.find(name)
    _stored_rows_all_failed(fig, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sweep.run_figure(fig, sweep.Options(out=tmp_path, plot_only=True))
    assert [r.getMessage() for r in caplog.records if r.name.startswith("matplotlib")] == []
    assert "trials failed (each row's error says why; the first: boom)" in capsys.readouterr().out
