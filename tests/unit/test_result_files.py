"""Results that survive anything: whole-line rows, torn rows dropped, atomic files, the figure lock,
retried failures, seeds in the resume key, --fresh's backup, a run that stops when trials keep failing, and
a manifest's tool versions when a tool does not answer."""

import csv
import json
import logging
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import expts
from ground import figurelock, kernel, proc, results, trials
from ground.figurelock import FigureBusy
from ground.trials import Row, TrialLog, complete_length, latest_rows, trial_key
from netrepro.front import cli
from netrepro.runner.attempts import FailureStreak
from netrepro.runner.sweep import Options, trials_to_run
from netrepro.studykit.spec import Figure


def row(a: int, index: int, status: str = "ok", **more: Any) -> dict[str, Any]:
    return {"trial_key": trial_key({"a": a}, index), "a": a, "trial": index, "status": status, **more}


def parsed(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def lock_in_another_process(csv_path: Path, shared: bool = False) -> str:
    """Whether another process may take the CSV's lock now: `taken` or `busy`."""
    code = (
        "import sys; from pathlib import Path; from ground import figurelock\n"
        "try:\n"
        f"    with figurelock.holding(Path(sys.argv[1]), shared={shared}): print('taken')\n"
        "except figurelock.FigureBusy: print('busy')\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(csv_path)], cwd=results.REPO, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    return done.stdout.strip()


# -- rows are whole lines ---------------------------------------------------------


def test_a_torn_last_row_is_dropped_reported_and_not_glued_to(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "fig.csv"
    log = TrialLog(path)
    log.append(row(1, 0, download_time_ms=3.5))
    log.append(row(1, 1, download_time_ms=4.5))
    whole = path.read_bytes()
    with open(path, "ab") as f:  # a crash (or a full disk) in the middle of the third row
        f.write(b'{"params": {"a": 1}, "trial": 2},1,2,o')

    with caplog.at_level(logging.WARNING, logger="netrepro.trials"):
        again = TrialLog(path)
    assert again.torn_rows_dropped == 1
    assert str(path) in caplog.text and "torn" in caplog.text and "38 bytes" in caplog.text
    assert path.read_bytes() == whole
    assert len(again.rows) == 2

    again.append(row(1, 2, download_time_ms=5.5))
    lines = parsed(path)
    assert all(len(line) == len(lines[0]) for line in lines)
    assert [r["download_time_ms"] for r in trials.read_rows(path)] == ["3.5", "4.5", "5.5"]
    assert TrialLog(path).torn_rows_dropped == 0


def test_a_row_cut_after_a_newline_inside_its_error_message_is_torn_too(tmp_path: Path) -> None:
    path = tmp_path / "fig.csv"
    log = TrialLog(path)
    log.append(row(1, 0, "failed", error="apache2 died:\nno listener"))
    whole = path.read_bytes()
    assert complete_length(whole) == len(whole)
    with open(path, "ab") as f:
        f.write(b'"{""params"": {""a"": 1}, ""trial"": 1}",1,1,failed,"first line of the error\n')
    again = TrialLog(path)
    assert again.torn_rows_dropped == 1 and path.read_bytes() == whole
    again.append(row(1, 1))
    assert [r["status"] for r in trials.read_rows(path)] == ["failed", "ok"]


def test_a_torn_header_leaves_an_empty_file_that_the_next_row_rewrites(tmp_path: Path) -> None:
    path = tmp_path / "fig.csv"
    path.write_bytes(b"trial_key,a,tri")
    log = TrialLog(path)
    assert log.torn_rows_dropped == 1 and log.columns == [] and path.read_bytes() == b""
    log.append(row(1, 0))
    assert trials.read_rows(path)[0]["status"] == "ok"


def test_a_widened_header_keeps_every_row_parsing(tmp_path: Path) -> None:
    path = tmp_path / "fig.csv"
    log = TrialLog(path)
    log.append(row(1, 0))
    log.append(row(1, 1, cc_ss_repairs_in_trial=0))
    lines = parsed(path)
    assert lines[0][-1] == "cc_ss_repairs_in_trial" and all(len(line) == len(lines[0]) for line in lines)
    assert log.rows == trials.read_rows(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.csv"]  # no temporary file left


# -- resuming: failures run again, seeds apart, the latest row counts ---------------


_FIG = Figure("t", "fig", "a test", "readback", "a", (1,), "metric", {})  # a workload of no keys of its own


def test_a_failed_trial_runs_again_on_resume_unless_told_not_to(tmp_path: Path) -> None:
    path = tmp_path / "fig.csv"
    log = TrialLog(path)
    log.append(row(1, 0, "failed", error="boom", seed=1))
    log.append(row(1, 1, "timeout", error="no result within 60 s", seed=1))
    log.append(row(1, 2, "ok", seed=1))
    grid = [{"a": 1}]
    again = TrialLog(path)
    assert sorted(t.index for t in trials_to_run(_FIG, grid, 3, again, Options())) == [0, 1]
    assert trials_to_run(_FIG, grid, 3, again, Options(retry_failed=False)) == []


def test_seed_2_does_not_resume_seed_1(tmp_path: Path) -> None:
    path = tmp_path / "fig.csv"
    with open(path, "w", newline="") as f:  # a row from before rows had seeds
        csv.writer(f).writerows([["trial_key", "a", "status"], [trial_key({"a": 1}, 0), "1", "ok"]])
    log = TrialLog(path)
    log.append(row(1, 1, seed=1))
    log.append(row(1, 2, seed=2))
    assert log.done(seed=1) == {trial_key({"a": 1}, 0), trial_key({"a": 1}, 1)}
    assert log.done(seed=2) == {trial_key({"a": 1}, 2)}
    assert sorted(t.index for t in trials_to_run(_FIG, [{"a": 1}], 3, log, Options(seed=2))) == [0, 1]
    assert trial_key({"a": 1}, 0) == '{"params": {"a": 1}, "trial": 0}'  # stored keys keep resuming


def test_latest_rows_keeps_the_last_attempt_of_each_trial_and_seed() -> None:
    rows = [
        Row(trial_key="k0", seed="1", status="failed"),
        Row(trial_key="k1", seed="1", status="ok"),
        Row(trial_key="k0", seed="2", status="ok"),
        Row(trial_key="k0", seed="1", status="timeout"),
        Row(trial_key="k0", status="ok"),  # no seed column: seed 1
    ]
    assert latest_rows(rows) == [rows[1], rows[2], rows[4]]


def test_the_manifest_counts_failed_attempts_and_plots_the_latest_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fig = expts.find("iw/fig2")
    first, second = fig.grid(quick=True)[:2]
    log = TrialLog(tmp_path / "iw" / "fig2.csv")
    attempts = [
        (first, "failed", 1),
        (first, "timeout", 1),
        (first, "ok", 1),
        (first, "failed", 2),
        (second, "failed", 1),
    ]
    for setting, status, seed in attempts:
        log.append({"trial_key": trial_key(setting, 0), **setting, "trial": 0, "status": status,
                    "download_time_ms": 400.0 if status == "ok" else "", "seed": seed})  # fmt: skip
    assert cli.main(["run", "iw/fig2", "--quick", "--plot-only", "--out", str(tmp_path)]) == 0
    manifest = json.loads((tmp_path / "iw" / "fig2.manifest.json").read_text())
    assert manifest["rows"] == 2 and manifest["failed_trials"] == 1 and manifest["failed_attempts"] == 3
    assert manifest["trials_missing"] == len(fig.grid(quick=True)) * 3 - 2  # a failed trial is not missing
    assert f"{manifest['trials_missing']} trials missing, not run" in capsys.readouterr().out


# -- --fresh ---------------------------------------------------------------------------


def test_fresh_moves_the_old_csv_aside_only_when_the_first_row_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "fig.csv"
    old = TrialLog(path)
    old.append(row(1, 0))
    old.append(row(1, 1, "failed"))
    before = path.read_bytes()
    monkeypatch.setattr(time, "strftime", lambda fmt: "20260101-120000")
    taken = tmp_path / "fig.csv.20260101-120000.bak"
    taken.write_bytes(b"an earlier backup")

    log = TrialLog(path, fresh=True)
    assert log.done() == set() and log.rows == []
    assert path.read_bytes() == before  # nothing moved yet: the lab may never come up
    log.append(row(2, 0))
    assert log.backup == tmp_path / "fig.csv.20260101-120000-1.bak"
    assert log.backup.read_bytes() == before and taken.read_bytes() == b"an earlier backup"
    assert [r["a"] for r in trials.read_rows(path)] == ["2"]
    log.append(row(2, 1))  # moved once only
    assert [r["a"] for r in trials.read_rows(path)] == ["2", "2"]
    assert log.backup.read_bytes() == before


@pytest.mark.parametrize(
    ("bad", "needle"), [(["--set", "rate=abc"], "--set rate=abc"), (["--trials", "0"], "--trials")]
)
def test_a_refused_fresh_run_leaves_the_csv_byte_identical(
    bad: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cubicplus" / "fig3.csv"
    path.parent.mkdir()
    path.write_bytes(b"trial_key,status\r\nk,ok\r\nk2,fa")  # torn, even: left exactly as it is
    assert cli.main(["run", "fig3", "--fresh", *bad, "--out", str(tmp_path)]) == 2
    assert path.read_bytes() == b"trial_key,status\r\nk,ok\r\nk2,fa"
    assert sorted(p.name for p in path.parent.iterdir()) == ["fig3.csv"]
    assert needle in capsys.readouterr().err


# -- whole-file writes and handing back ----------------------------------------------


def test_replace_file_replaces_a_link_and_leaves_its_target_alone(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"not yours")
    link = tmp_path / "results" / "fig.manifest.json"
    link.parent.mkdir()
    link.symlink_to(target)
    results.replace_file(link, b"{}\n")
    assert not link.is_symlink() and link.read_bytes() == b"{}\n"
    assert target.read_bytes() == b"not yours"
    assert sorted(p.name for p in link.parent.iterdir()) == ["fig.manifest.json"]
    results.write_json(link, {"a": 1})
    assert json.loads(link.read_text()) == {"a": 1} and link.stat().st_mode & 0o777 == 0o644


class Chowns:
    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []

    def __call__(
        self, path: Any, uid: int, gid: int, *, dir_fd: int | None = None, follow_symlinks: bool = True
    ) -> None:
        assert dir_fd is not None and (uid, gid) == (4321, 4321)
        self.calls.append((str(path), follow_symlinks))


@pytest.fixture
def chowns(monkeypatch: pytest.MonkeyPatch) -> Chowns:
    recorder = Chowns()
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setenv("SUDO_UID", "4321")
    monkeypatch.setenv("SUDO_GID", "4321")
    monkeypatch.setattr(os, "chown", recorder)
    return recorder


def test_hand_back_chowns_below_the_tree_and_no_link_target(tmp_path: Path, chowns: Chowns) -> None:
    tree = tmp_path / "out"
    (tree / "iw").mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "fig2.csv").write_text("x")
    (tree / "iw" / "fig2.csv").symlink_to(secret / "fig2.csv")
    results.hand_back(tree / "iw" / "fig2.csv", tree)
    assert chowns.calls == [("iw", False), ("fig2.csv", False)]  # the links themselves, never their targets

    chowns.calls.clear()
    (tree / "spdy").symlink_to(secret)  # a linked directory: the link is chowned, nothing beyond it
    results.hand_back(tree / "spdy" / "fig2.csv", tree)
    assert chowns.calls == [("spdy", False)]

    chowns.calls.clear()
    results.hand_back(tmp_path / "secret" / "fig2.csv", tree)  # outside the tree
    results.hand_back(tree / ".." / "secret" / "fig2.csv", tree)
    results.hand_back(tree, tree)  # the tree itself is the caller's
    assert chowns.calls == []


# -- the figure lock -----------------------------------------------------------------


def test_a_second_holder_of_one_csv_is_refused(tmp_path: Path) -> None:
    csv_path = tmp_path / "cubicplus" / "fig3.csv"
    with figurelock.holding(csv_path):
        held = figurelock.lock_path(csv_path)
        assert held == tmp_path / "cubicplus" / "fig3.csv.lock"  # beside the CSV: every host sees it (NFS)
        assert held.read_text().split()[0] == str(os.getpid())
        for same in (csv_path, tmp_path / "cubicplus" / ".." / "cubicplus" / "fig3.csv"):
            with pytest.raises(FigureBusy, match=r"fig3\.csv is busy.*pid \d+.*--out DIR"), figurelock.holding(same):
                pass
        with figurelock.holding(tmp_path / "cubicplus" / "fig10.csv"):  # another CSV: another lock
            pass
    assert not held.exists()
    with figurelock.holding(csv_path):  # let go: free again
        pass


def test_two_trial_logs_on_one_csv_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run (even --plot-only) of a figure whose CSV another run holds stops at once, exit 1."""
    csv_path = tmp_path / "cubicplus" / "fig3.csv"
    with figurelock.holding(csv_path):
        # fig6 plots fig3's trials: the same CSV, the same lock
        assert cli.main(["run", "cubicplus/fig6", "--quick", "--plot-only", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("run.sh run: ") and str(csv_path) in err and "busy" in err
    assert not (tmp_path / "cubicplus" / "fig6.manifest.json").exists()


# -- a run stops when trial after trial fails -------------------------------------


def test_five_failures_in_a_row_stop_a_run() -> None:
    streak = FailureStreak()
    outcomes = ["failed", "timeout", "failed", "failed", "ok", "failed", "failed", "timeout", "failed"]
    assert not any(streak.record(s, f"error {i}") for i, s in enumerate(outcomes))  # an ok broke the streak
    assert streak.record("failed", "apache2 is not running")
    report = streak.report("[mpm_event:error] AH00485: scoreboard is full")
    assert report.startswith("5 trials in a row failed")
    assert "timeout: error 7" in report and "failed: apache2 is not running" in report
    assert "error 4" not in report and "scoreboard is full" in report


def test_a_runs_own_results_do_not_make_the_code_dirty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", "code.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "code")
    monkeypatch.setattr(results, "REPO", tmp_path)
    (tmp_path / "results" / "reference" / "study").mkdir(parents=True)
    (tmp_path / "results" / "reference" / "study" / "fig1.csv").write_text("a\n1\n")
    assert results.git_state()["dirty"] is False  # a run's CSV, not yet committed, is not code
    assert not results.in_the_code(tmp_path / "results" / "reference")
    # an --out elsewhere in the checkout (refused for that: figure_commands.writable_out) would be code
    assert results.in_the_code(tmp_path / "parts2")
    (tmp_path / "parts2").mkdir()
    (tmp_path / "parts2" / "fig6.csv").write_text("a\n1\n")
    assert results.git_state()["dirty"] is True
    (tmp_path / "parts2" / "fig6.csv").unlink()
    assert results.git_state()["dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert results.git_state()["dirty"] is True
    assert results.code_version().endswith("+dirty")


def test_clean_removes_the_lock_files_of_dead_runs_and_not_a_held_one(tmp_path: Path) -> None:
    """A run killed by SIGKILL leaves its lock file (not its lock); `clean` removes such files only."""
    dead = figurelock.lock_path(tmp_path / "iw" / "fig2.csv")
    dead.parent.mkdir()
    dead.write_text(f"999999 {platform.node()} /gone/iw/fig2.csv\n")  # as a SIGKILLed holder leaves it
    csv_path = tmp_path / "cubicplus" / "fig3.csv"
    with figurelock.holding(csv_path):
        removed = figurelock.remove_stale([tmp_path])
        assert removed == [f"removed the stale figure lock {dead} (pid 999999)"]
        # the one this process holds: left alone, and still held (no second descriptor closed on it)
        assert not dead.exists() and figurelock.lock_path(csv_path).exists()
        assert lock_in_another_process(csv_path) == "busy"
    assert figurelock.remove_stale([tmp_path]) == []


def test_a_tool_that_does_not_answer_its_version_is_recorded_as_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # clang's first --version under the guest's emulated CPU once took more than 10 s and lost the report
    tool = tmp_path / "slowtool"
    tool.write_text("#!/bin/sh\nexec sleep 30\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    began = time.monotonic()
    version = kernel.tool_version.__wrapped__("slowtool", timeout=0.5)
    assert time.monotonic() - began < 5
    assert version == "present; `slowtool --version` did not answer in 0.5 s"
    assert kernel.tool_version.__wrapped__("no-such-tool-here") is None


def test_every_git_call_names_the_checkout_safe_and_runs_no_fsmonitor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git_state and code_fingerprint run git in the checkout, as root in a user's one too: each call
    names it safe explicitly (not by git's guess from SUDO_UID) and turns off any fsmonitor command."""
    calls: list[list[str]] = []

    def fake_run(argv: list[str], *_: Any, **__: Any) -> subprocess.CompletedProcess[str]:
        calls.append(list(argv))
        return subprocess.CompletedProcess(argv, 0, "M code.py\n" if "status" in argv else "abc123\n", "")

    monkeypatch.setattr(results, "REPO", tmp_path)
    monkeypatch.setattr(proc, "run", fake_run)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    results.code_fingerprint()
    assert {argv[argv.index("-C") + 1] for argv in calls} == {str(tmp_path)}
    assert len(calls) >= 4  # status and rev-parse (twice: the version), diff, ls-files
    for argv in calls:
        assert argv[:5] == ["git", "-c", f"safe.directory={tmp_path}", "-c", "core.fsmonitor=false"], argv
