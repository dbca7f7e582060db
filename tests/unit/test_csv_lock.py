"""One lock beside each CSV (ground.figurelock), taken by every command that writes it before it reads it, and
shared by the commands that only read it; a read-only command leaves the CSV byte-identical, a torn tail too."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import expts
from ground import figurelock, results
from ground.errors import SetupError
from ground.figurelock import FigureBusy
from ground.trials import Row, TrialLog, read_rows, trial_key
from netrepro.front import cli

FIG = expts.find("iw/fig2")

HOLD = """
import sys, time
from pathlib import Path
from ground import figurelock
with figurelock.holding(Path(sys.argv[1]), **({"shared": True} if sys.argv[2] == "shared" else {})):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes it
"""


@contextlib.contextmanager
def held_by_another_process(csv_path: Path, shared: bool = False) -> Iterator[subprocess.Popen[str]]:
    """The CSV's lock held by another process (as a run would hold it) for the block's length."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(csv_path), "shared" if shared else "exclusive"],
                              cwd=results.REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.communicate(timeout=60)
    assert holder.returncode == 0


def lock_in_another_process(csv_path: Path, shared: bool = False) -> str:
    """Whether another process may take the CSV's lock now: `taken`, or the refusal's message."""
    code = (
        "import sys; from pathlib import Path; from ground import figurelock\n"
        "try:\n"
        f"    with figurelock.holding(Path(sys.argv[1]){', shared=True' if shared else ''}): print('taken')\n"
        "except figurelock.FigureBusy as e: print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(csv_path)], cwd=results.REPO, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    return done.stdout.strip()


def fig2_rows(seed: int = 1, status: str = "ok", **more: object) -> list[dict[str, object]]:
    return [
        {"trial_key": trial_key(p, 0), "figure": FIG.full_name, **p, "trial": 0, "status": status, "seed": seed,
         "download_time_ms": 400.0 + n, "backend": "delayline", "kernel": "6.1.0-test", **more}
        for n, p in enumerate(FIG.grid(quick=True))
    ]  # fmt: skip


def write_csv(path: Path, rows: list[dict[str, object]]) -> Path:
    log = TrialLog(path)
    for row in rows:
        log.append(row)
    return path


# -- the lock ---------------------------------------------------------------------------------


def test_the_lock_is_a_file_beside_the_csv_that_other_processes_see(tmp_path: Path) -> None:
    csv_path = tmp_path / "iw" / "fig2.csv"
    with figurelock.holding(csv_path):
        lock = tmp_path / "iw" / "fig2.csv.lock"
        assert figurelock.lock_path(csv_path) == lock and stat.S_IMODE(lock.stat().st_mode) == 0o644
        refused = lock_in_another_process(csv_path)
        assert f"{csv_path} is busy: another run (pid {os.getpid()}) is writing it" in refused
        assert "busy" in lock_in_another_process(csv_path, shared=True)  # a reader waits for no writer
    assert not lock.exists()  # let go, and unlinked as it was
    assert lock_in_another_process(csv_path) == "taken"


def test_readers_share_the_lock_and_exclude_a_writer(tmp_path: Path) -> None:
    csv_path = tmp_path / "iw" / "fig2.csv"
    with held_by_another_process(csv_path, shared=True):
        assert lock_in_another_process(csv_path, shared=True) == "taken"
        with figurelock.holding(csv_path, shared=True):  # this process, a third reader
            pass
        busy = pytest.raises(FigureBusy, match=r"fig2\.csv is busy: another command is reading it")
        with busy, figurelock.holding(csv_path):
            pass
        # the refusal closed no descriptor the other reader's lock depends on: it is still held
        assert "reading" in lock_in_another_process(csv_path)
    assert lock_in_another_process(csv_path) == "taken"
    assert not figurelock.lock_path(csv_path).exists()


def test_a_second_hold_in_one_process_is_refused_without_letting_go_of_the_first(tmp_path: Path) -> None:
    """A POSIX lock is the process's: a second open and close of the lock file would drop the first hold."""
    csv_path = tmp_path / "iw" / "fig2.csv"
    with figurelock.holding(csv_path):
        for shared in (False, True):
            with pytest.raises(FigureBusy, match=rf"pid {os.getpid()}"), figurelock.holding(csv_path, shared=shared):
                pass
        assert "busy" in lock_in_another_process(csv_path)
        with figurelock.reading(csv_path):  # this process writes it: it may read it
            pass
        assert "busy" in lock_in_another_process(csv_path)


def test_a_filesystem_without_locks_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_locks(fd: int, cmd: int, *_: int) -> None:
        raise OSError(37, os.strerror(37))  # ENOLCK: NFSv3 without lockd

    monkeypatch.setattr(fcntl, "lockf", no_locks)
    with (
        pytest.raises(SetupError, match=r"does not lock files.*NFSv4"),
        figurelock.holding(tmp_path / "a.csv"),
    ):
        pass


# -- read-only commands leave the CSV as it is -------------------------------------------------


@pytest.mark.parametrize("tail", [b"", b"iw/fig2,0,tor", b'"an error\nwith a newline'])
def test_plot_only_leaves_the_csv_byte_identical(
    tail: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A torn last row may be a run's row being written (on another host, or before the lock): --plot-only reads
    around it, warns, and truncates nothing."""
    csv_path = write_csv(tmp_path / "iw" / "fig2.csv", fig2_rows())
    with open(csv_path, "ab") as f:
        f.write(tail)
    before = csv_path.read_bytes()
    assert cli.main(["run", "iw/fig2", "--quick", "--plot-only", "--out", str(tmp_path)]) == 0
    assert csv_path.read_bytes() == before
    manifest = json.loads((tmp_path / "iw" / "fig2.manifest.json").read_text())
    assert manifest["rows"] == len(FIG.grid(quick=True))  # every complete row, none of the torn one
    err = capsys.readouterr().err
    assert ("last row is torn" in err and "left as it is" in err) == bool(tail), err
    assert not figurelock.lock_path(csv_path).exists()


def test_plot_only_beside_another_reader_and_refused_beside_a_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv_path = write_csv(tmp_path / "iw" / "fig2.csv", fig2_rows())
    argv = ["run", "iw/fig2", "--quick", "--plot-only", "--out", str(tmp_path)]
    with held_by_another_process(csv_path, shared=True):
        assert cli.main(argv) == 0
    with held_by_another_process(csv_path) as writer:
        assert cli.main(argv) == 1
        assert f"pid {writer.pid}" in capsys.readouterr().err


# -- merge locks before it reads -----------------------------------------------------------------


def test_merge_locks_its_target_before_it_reads_a_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = fig2_rows()
    shard = write_csv(tmp_path / "vm1" / "iw" / "fig2.csv", rows[:2])
    target = write_csv(tmp_path / "into" / "iw" / "fig2.csv", rows[2:])
    read = read_rows
    locked_when_read = []

    def reading(path: Path) -> list[Row]:
        locked_when_read.append(lock_in_another_process(target))
        return read(path)

    monkeypatch.setattr("netrepro.runner.shards.read_rows", reading)
    # 3: the rows are a part of the figure's trials, the rest not run (docs/commands.md, exit codes)
    assert cli.main(["merge", str(shard), str(target), "--into", str(tmp_path / "into")]) == 3
    # the first read of each file finds the figure, the second (under the lock) merges its rows
    assert all("busy" in w for w in locked_when_read[2:]) and len(locked_when_read) == 4, locked_when_read
    assert sorted(r["trial_key"] for r in read_rows(target)) == sorted(str(r["trial_key"]) for r in rows)
    capsys.readouterr()


def test_merge_is_refused_while_a_run_writes_its_target_or_one_of_its_csvs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = fig2_rows()
    shard = write_csv(tmp_path / "vm1" / "iw" / "fig2.csv", rows[:2])
    target = write_csv(tmp_path / "into" / "iw" / "fig2.csv", rows[2:])
    argv = ["merge", str(shard), str(target), "--into", str(tmp_path / "into")]
    for running in (target, shard):
        before = {p: p.read_bytes() for p in (shard, target)}
        with held_by_another_process(running) as run:
            assert cli.main(argv) == 1
        err = capsys.readouterr().err
        assert f"{running} is busy: another run (pid {run.pid}) is writing it" in err, err
        assert {p: p.read_bytes() for p in (shard, target)} == before  # nothing read into, nothing written over


# -- a reader letting go, and what others may plant in a results directory --------------------

LETTING_GO = """
import fcntl, os, sys
from pathlib import Path
path = Path(sys.argv[1])
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)  # as a reader does, making sure it is the last
print("letting go", flush=True)
sys.stdin.read()
path.unlink()
os.close(fd)
"""


def test_a_reader_letting_go_does_not_make_another_reader_see_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last reader takes the lock exclusively for an instant before it unlinks the file: a reader that
    comes then tries again, on the file that is there after, and is not refused.  (The instant is made
    long here: the other process lets go only once this reader has met it.)"""
    csv_path = tmp_path / "iw" / "fig2.csv"
    csv_path.parent.mkdir(parents=True)
    other = subprocess.Popen([sys.executable, "-c", LETTING_GO, str(figurelock.lock_path(csv_path))],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert other.stdout is not None and other.stdout.readline() == "letting go\n"
    met = []

    def let_it_go() -> None:
        met.append(True)
        other.communicate(timeout=30)

    monkeypatch.setattr(figurelock, "_pause", let_it_go, raising=False)
    try:
        with figurelock.holding(csv_path, shared=True):
            assert "reading" in lock_in_another_process(csv_path)
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
    assert met == [True] and other.returncode == 0


def test_a_reader_is_still_refused_while_a_writer_holds_the_csv(tmp_path: Path) -> None:
    csv_path = tmp_path / "iw" / "fig2.csv"
    with held_by_another_process(csv_path) as writer:
        refused = lock_in_another_process(csv_path, shared=True)
        assert f"another run (pid {writer.pid}) is writing it" in refused


def test_a_hard_link_planted_as_the_lock_file_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    """With fs.protected_hardlinks off, anyone may link another's file into a results directory they can
    write: a root run would have truncated it, written its pid into it and handed it to the caller."""
    csv_path = tmp_path / "iw" / "fig2.csv"
    csv_path.parent.mkdir(parents=True)
    precious = tmp_path / "precious"
    precious.write_text("root:secret\n")
    os.chmod(precious, 0o600)
    os.link(precious, figurelock.lock_path(csv_path))
    for shared in (False, True):
        planted = pytest.raises(SetupError, match=r"fig2\.csv\.lock: not used as the figure's lock file: it has 2")
        with planted, figurelock.holding(csv_path, shared=shared):
            pass
    assert precious.read_text() == "root:secret\n" and stat.S_IMODE(precious.stat().st_mode) == 0o600


def test_a_symbolic_link_or_a_fifo_planted_as_the_lock_file_is_refused(tmp_path: Path) -> None:
    csv_path = tmp_path / "iw" / "fig2.csv"
    csv_path.parent.mkdir(parents=True)
    lock = figurelock.lock_path(csv_path)
    lock.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SetupError, match="it is a symbolic link"), figurelock.holding(csv_path):
        pass
    assert not (tmp_path / "elsewhere").exists()
    lock.unlink()
    os.mkfifo(lock)
    for shared in (False, True):  # and no read of a FIFO waits for a writer that never comes
        with pytest.raises(SetupError, match="it is not a regular file"), figurelock.holding(csv_path, shared=shared):
            pass


@pytest.mark.skipif(os.geteuid() != 0, reason="a file of another user is made by root")
def test_root_refuses_a_lock_file_of_another_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUDO_UID", "4242")
    monkeypatch.setenv("SUDO_GID", "4242")
    csv_path = tmp_path / "iw" / "fig2.csv"
    csv_path.parent.mkdir(parents=True)
    lock = figurelock.lock_path(csv_path)
    lock.write_text("planted\n")
    os.chown(lock, 31337, 31337)
    planted = pytest.raises(SetupError, match="belongs to uid 31337, neither root nor the sudo caller")
    with planted, figurelock.holding(csv_path):
        pass
    assert lock.read_text() == "planted\n"
    os.chown(lock, 4242, 4242)  # the sudo caller's, as a root run hands it back: used
    with figurelock.holding(csv_path):
        assert lock.stat().st_uid == 4242 and str(os.getpid()) in lock.read_text()
