"""A resume that cannot mix: a figure's earlier rows and what this run will measure with (backend, switch,
congestion-control implementation, kernel) agree, or the run is refused before anything is built."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

import expts
from ground import kernel
from ground.trials import Row, TrialLog, trial_key
from kmod import loader
from netrepro.front import cli
from netrepro.runner import preflight, sweep
from netrepro.runner.resume import ResumeGuard, ResumeMismatch, Setup, check_resume
from topologies import emulation, ovs

FIG = expts.find("iw/fig2")
CSV = Path("results/iw/fig2.csv")
HERE = Setup(backend="delayline", switch="bridge", kernel="6.1.0-test", impls={None: "kernel", "cubic_plus": "lkm"})


def rows(n: int = 3, /, **cells: str) -> list[Row]:
    base = {"status": "ok", "backend": "delayline", "switch": "bridge", "kernel": "6.1.0-test", "cc_impl": "kernel"}
    return [Row({"trial_key": f"k{i}", **base, **cells}) for i in range(n)]


def test_rows_that_ran_as_this_run_will_resume() -> None:
    check_resume(FIG, CSV, rows(), HERE)
    check_resume(FIG, CSV, rows(cc="cubic_plus", cc_impl="lkm"), HERE)
    check_resume(FIG, CSV, [], HERE)


@pytest.mark.parametrize(
    ("cells", "theirs", "ours", "way"),
    [
        ({"backend": "netem"}, "backend netem", "backend delayline", "--shaper netem resumes them"),
        ({"switch": "ovs"}, "switch ovs", "switch bridge", "--switch ovs resumes them"),
        ({"cc": "cubic_plus", "cc_impl": "bpf"}, "cc_impl bpf", "cc_impl lkm", "--impl bpf resumes them"),
        ({"kernel": "6.18.0"}, "kernel 6.18.0", "kernel 6.1.0-test", "--fresh starts it over"),
    ],
)
def test_another_backend_switch_impl_or_kernel_is_refused_naming_both(
    cells: dict[str, str], theirs: str, ours: str, way: str
) -> None:
    with pytest.raises(ResumeMismatch) as refused:
        check_resume(FIG, CSV, rows(**cells), HERE)
    line = str(refused.value)
    assert "\n" not in line  # one line
    assert f"holds 3 trials run with {theirs}; this run would use {ours}" in line, line
    assert way in line and "--fresh" in line and "--out DIR" in line, line


def test_each_difference_is_a_line_of_its_own() -> None:
    mixed = rows(2, backend="netem") + rows(1, kernel="6.18.0")
    with pytest.raises(ResumeMismatch) as refused:
        check_resume(FIG, CSV, mixed, HERE)
    lines = str(refused.value).splitlines()
    assert len(lines) == 2 and "2 trials run with backend netem" in lines[0] and "kernel 6.18.0" in lines[1]


def test_old_rows_without_a_column_are_accepted_and_said_so(caplog: pytest.LogCaptureFixture) -> None:
    old = [Row({k: v for k, v in r.items() if k not in ("switch", "cc_impl")}) for r in rows()]
    with caplog.at_level(logging.INFO, logger="netrepro.runner.resume"):
        check_resume(FIG, CSV, old, Setup("delayline", "ovs", "6.1.0-test", {None: "bpf"}))
    assert "3 of its 3 earlier rows record no switch" in caplog.text
    assert "record no cc_impl" in caplog.text


def test_a_row_that_differs_once_the_lab_is_up_is_not_written_and_stops_the_run() -> None:
    """A cluster's workers decide their own setup: the first of their rows that differs stops the run."""
    written: list[dict[str, Any]] = []

    class Sink:
        def append(self, row: dict[str, Any]) -> None:
            written.append(row)

    guard = ResumeGuard(FIG, CSV, Sink(), rows())
    same = {**rows(1)[0], "trial_key": "k9"}
    guard.append(same)
    guard.append({**same, "backend": "netem", "status": "failed"})  # no measurement: kept, as a failed attempt
    with pytest.raises(ResumeMismatch, match=r"(?s)backend delayline; this run would use backend netem.*not written"):
        guard.append({**same, "backend": "netem"})
    assert len(written) == 2
    ResumeGuard(FIG, CSV, Sink(), rows(), allow_mixed=True).append({**same, "kernel": "6.18.0"})  # --allow-mixed
    with pytest.raises(ResumeMismatch, match="cc_impl bpf"):  # one congestion control's own implementation
        ResumeGuard(FIG, CSV, Sink(), rows(cc="vegas", cc_impl="bpf")).append({**same, "cc": "vegas"})
    ResumeGuard(FIG, CSV, Sink(), rows(cc="vegas", cc_impl="bpf")).append(same)  # another cc: its own


# -- through the command line, with the machine's probes replaced ----------------------------------


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A root machine with every tool, where the lab would come up on `backend` and the bridge, and each
    netrepro variant would load as `impl` (or as --impl asks)."""
    state: dict[str, Any] = {"backend": "netem", "impl": "lkm"}
    monkeypatch.setattr(preflight, "is_root", lambda: True)
    monkeypatch.setattr(preflight, "on_path", lambda tool: True)
    monkeypatch.setattr(preflight, "kernel_congestion_controls", lambda: ["reno", "cubic"])
    monkeypatch.setattr(emulation, "choose_backend", lambda requested: state["backend"])
    monkeypatch.setattr(ovs, "choose_switch", lambda requested, backend: "bridge")
    monkeypatch.setattr(loader, "loadable", lambda name, requested=None: requested or state["impl"])
    monkeypatch.setattr(loader, "choose_impl", lambda name, requested=None: requested or state["impl"])

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("a trial ran")

    monkeypatch.setattr(sweep, "run_trials", never)
    return state


def stored(out: Path, figure: str, **cells: str) -> Path:
    """One successful row of a figure's quick setting (its first of a netrepro variant, where there is one), as
    an earlier run on this kernel wrote it."""
    fig = expts.find(figure)
    grid = fig.grid(quick=True)
    setting = next((p for p in grid if p.get("cc") in loader.ALGORITHMS), grid[0])
    log = TrialLog(out / fig.directory / fig.csv_name)
    log.append({"trial_key": trial_key(setting, 0), "figure": fig.full_name, **setting, "trial": 0, "status": "ok",
                "seed": 1, "backend": "netem", "switch": "bridge", "kernel": kernel.release(), "cc_impl": "kernel",
                **cells})  # fmt: skip
    return log.path


@pytest.mark.parametrize(
    ("figure", "cells", "argv", "said"),
    [
        ("iw/fig2", {"backend": "delayline"}, [], "backend delayline; this run would use backend netem"),
        ("cubicplus/fig3", {"cc_impl": "bpf"}, ["--impl", "lkm"], "cc_impl bpf; this run would use cc_impl lkm"),
    ],
)
def test_a_resume_with_another_backend_or_impl_is_refused_before_anything_is_built(
    machine: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    figure: str,
    cells: dict[str, str],
    argv: list[str],
    said: str,
) -> None:
    csv_path = stored(tmp_path, figure, **cells)
    before = csv_path.read_bytes()
    assert cli.main(["run", figure, "--quick", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert said in err and "--fresh" in err, err
    assert csv_path.read_bytes() == before


def test_a_resume_with_the_same_setup_goes_on_to_its_trials(
    machine: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stored(tmp_path, "iw/fig2")
    assert cli.main(["run", "iw/fig2", "--quick", "--out", str(tmp_path)]) == 1
    assert "AssertionError: a trial ran" in capsys.readouterr().err


def test_a_figure_on_another_topology_has_a_csv_of_its_own() -> None:
    """The topology is in the resume key through the figure's directory (spec.Figure.on)."""
    from topologies.topology import Topology

    other = FIG.on(Topology(shape="dumbbell", pairs=2))
    assert other.directory != FIG.directory and other.csv_name == FIG.csv_name


STUDY = """study = "mystudy"
[[figure]]
name = "iw50"
title = "Download time vs initial window"
workload = "download"
y = "download_time_ms"
x = { factor = "initcwnd", levels = [3, 10], quick = [3, 10] }
fixed = { rtt = "50ms", rate = "3mbit", cc = "cubic", protocol = "http/1.1", object_bytes = 37000 }
topology = { shape = "dumbbell", rtts = "RTTS" }
"""


def test_rows_of_a_study_files_earlier_topology_are_refused(tmp_path: Path) -> None:
    """A study file's figure keeps its name (and its CSV) when its per-pair RTTs change: its rows say which
    topology they ran on, and a resume on the other is refused, naming both."""
    from netrepro.front import studyfile

    def figure(rtts: str) -> Any:
        path = tmp_path / f"{rtts.replace(',', '_')}.toml"
        path.write_text(STUDY.replace("RTTS", rtts))
        return studyfile.load(path)[0]

    before, after = figure("40ms,120ms"), figure("40ms,400ms")
    assert before.full_name == after.full_name and before.csv_name == after.csv_name
    earlier = rows(cc="cubic", topology=before.topology.label)
    check_resume(before, CSV, earlier, Setup("delayline", "bridge", "6.1.0-test", {"cubic": "kernel"},
                                            topology=before.topology.label))  # fmt: skip
    with pytest.raises(ResumeMismatch) as refused:
        check_resume(after, CSV, earlier, Setup("delayline", "bridge", "6.1.0-test", {"cubic": "kernel"},
                                               topology=after.topology.label))  # fmt: skip
    said = str(refused.value)
    assert "\n" not in said and "rtts=40ms,120ms; this run would use topology" in said and "40ms,400ms" in said, said
    assert "--fresh starts it over" in said
