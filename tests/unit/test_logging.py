"""The CLI's logging: each record once, on a line of its own; -v shows every command with its namespace;
a log file per figure run."""

import io
import json
import logging
from pathlib import Path

import mininet.log  # noqa: F401  (imported before configuring, as the CLI does through topologies.lab)
import pytest

from ground import logs, proc
from ground.progress import Progress
from netrepro.front import cli


def test_a_warning_is_written_once_on_a_line_of_its_own(capfd: pytest.CaptureFixture[str]) -> None:
    logs.configure(verbose=False)
    logging.getLogger("netrepro.runner.sweep").warning("a warning of the sweep")
    err = capfd.readouterr().err
    assert [line for line in err.splitlines() if "a warning of the sweep" in line] == ["a warning of the sweep"]


def test_a_logger_made_after_mininet_is_plain_and_writes_once(capfd: pytest.CaptureFixture[str]) -> None:
    logs.configure(verbose=False)
    late = logging.getLogger("netrepro.made-late-by-a-test")
    assert type(late) is logging.Logger and not late.handlers
    late.warning("late")
    assert capfd.readouterr().err == "late\n"


def test_verbose_shows_each_command_once_with_its_namespace(capfd: pytest.CaptureFixture[str]) -> None:
    logs.configure(verbose=True)
    proc.run(["true"])
    err = capfd.readouterr().err
    assert err.splitlines().count("netrepro.cmd: [root] true") == 1
    assert err.count("[root] true") == 1


def test_without_verbose_commands_are_not_shown(capfd: pytest.CaptureFixture[str]) -> None:
    logs.configure(verbose=False)
    proc.run(["true"])
    assert "[root] true" not in capfd.readouterr().err


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_line_is_written_above_the_progress_bar_not_glued_to_it() -> None:
    screen = Terminal()
    logs.configure(verbose=False, stream=screen)
    progress = Progress(3, "fig")
    progress.step()
    logging.getLogger("netrepro.runner.sweep").warning("trial failed: x")
    progress.step()
    progress.step()
    shown = screen.getvalue()
    # the bar is erased before the record and drawn again after it
    assert "\r\x1b[Ktrial failed: x\nfig [##########" in shown
    # the last bar is erased and its final state left on a line of its own
    last = shown.rsplit("\r\x1b[K", 1)[1]
    assert last.startswith("fig [" + "#" * 30 + "] 3/3") and last.endswith("left\n") and "\r" not in last


def test_a_figure_run_writes_a_log_file_the_manifest_names(tmp_path: Path) -> None:
    assert cli.main(["-v", "run", "cubicplus/fig10", "--quick", "--plot-only", "--out", str(tmp_path)]) == 0
    study = tmp_path / "cubicplus"
    (log_file,) = (study / "logs").glob("fig10-*.log")
    assert json.loads((study / "fig10.manifest.json").read_text())["log"] == f"logs/{log_file.name}"
    text = log_file.read_text()
    assert "netrepro.runner.sweep: cubicplus/fig10: Options(" in text and "[root] git" in text
    assert text.startswith("20")  # each line starts with its time


def test_a_figure_run_without_verbose_still_logs_commands_to_its_file(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "cubicplus/fig10", "--quick", "--plot-only", "--out", str(tmp_path)]) == 0
    assert "[root] git" not in capfd.readouterr().err
    (log_file,) = (tmp_path / "cubicplus" / "logs").glob("fig10-*.log")
    assert "DEBUG netrepro.cmd: [root] git" in log_file.read_text()


def test_the_log_file_is_never_opened_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    directory = tmp_path / "logs"
    directory.mkdir()
    with logs.log_file(directory, "fig") as first:
        pass
    first.unlink()
    first.symlink_to(target)
    with logs.log_file(directory, "fig") as second:
        logging.getLogger("netrepro.runner.sweep").info("kept")
    assert second != first and not target.exists()
    assert "kept" in second.read_text()
