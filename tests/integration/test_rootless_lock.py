"""A root run and the commands its user types without root share one lock, beside the CSV.

iw/fig2 --quick --trials 1 runs as root (as `sudo` runs it: its files handed
back to SUDO_UID, here `nobody`) in the background; while it runs, `merge
--into` its results directory and `--plot-only`, run as `nobody` through
run.sh, are refused naming the run (before, their locks were in another
directory: the merge rewrote the CSV the run was appending to).  Once it
ends, the same merge goes through and every trial the run wrote is in the
merged CSV, once; --plot-only then leaves the CSV byte-identical.  A
private directory above the checkout is opened to others for the test
(o+x, put back), as in test_rootless.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from machine import NOBODY, NOBODY_UID, searchable_by_others
from output import read_until

from expts import iw
from ground import figurelock
from ground.results import REPO
from ground.trials import read_rows, trial_key

pytestmark = pytest.mark.root


@pytest.fixture
def reachable() -> Iterator[None]:
    """Every directory above the checkout searchable by others, for the test's length."""
    with searchable_by_others(REPO):
        yield


@pytest.fixture
def nobodys_out() -> Iterator[Path]:
    """A results directory `nobody` owns, in a directory every user can reach (not pytest's, which is root's)."""
    base = Path(tempfile.mkdtemp(prefix="netrepro-rootless-lock-"))
    try:
        os.chmod(base, 0o755)
        out = base / "out"
        out.mkdir()
        os.chown(out, NOBODY_UID, NOBODY_UID)
        yield out
    finally:
        shutil.rmtree(base)


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "LANG": "C.UTF-8"}
    return subprocess.run([*NOBODY, str(REPO / "run.sh"), *argv], cwd="/", env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_a_rootless_merge_and_plot_only_wait_for_a_root_run_and_lose_no_row(reachable: None, nobodys_out: Path) -> None:
    out = nobodys_out
    csv_path = out / "iw" / "fig2.csv"
    argv = [sys.executable, "-m", "netrepro", "run", "iw/fig2", "--quick", "--trials", "1", "--out", str(out)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SUDO_UID": str(NOBODY_UID), "SUDO_GID": str(NOBODY_UID)}
    run = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert run.stdout is not None
        seen, _ = read_until(run, lambda line: "iw/fig2:" in line, 120)
        assert "iw/fig2:" in seen, seen  # printed with the lock held, before the lab is built
        lock = figurelock.lock_path(csv_path)
        assert lock.exists() and lock.stat().st_uid == NOBODY_UID  # beside the CSV, handed back

        merged = as_nobody("merge", str(csv_path), "--into", str(out))
        plotted = as_nobody("iw/fig2", "--quick", "--trials", "1", "--plot-only", "--out", str(out))
        assert run.poll() is None, "the run ended before the rootless commands: the test proved nothing"
        for done in (merged, plotted):
            assert done.returncode == 1, done.stdout + done.stderr
            assert f"{csv_path} is busy: another run (pid {run.pid}) is writing it" in done.stderr, done.stderr
        assert not (out / "iw" / "fig2.manifest.json").exists()  # neither drew anything

        rest, _ = run.communicate(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 0, (seen + rest)[-3000:]
    written = read_rows(csv_path)
    expected = sorted(trial_key(p, 0) for p in iw.FIG2.grid(quick=True))
    assert sorted(r["trial_key"] for r in written) == expected, [r.get("error") for r in written]
    assert not figurelock.lock_path(csv_path).exists()

    # The run over: the same merge goes through, every row the run wrote in it, once.
    merged = as_nobody("merge", str(csv_path), "--into", str(out))
    # 3: the merged figure has a part of its trials, the rest not run (docs/commands.md, exit status)
    assert merged.returncode == 3, merged.stdout + merged.stderr
    assert f"{len(expected)} trials, seed 1" in merged.stdout
    assert sorted(r["trial_key"] for r in read_rows(csv_path)) == expected
    before = csv_path.read_bytes()
    plotted = as_nobody("iw/fig2", "--quick", "--trials", "1", "--plot-only", "--out", str(out))
    assert plotted.returncode == 0, plotted.stdout + plotted.stderr
    assert csv_path.read_bytes() == before
    assert not figurelock.lock_path(csv_path).exists()
