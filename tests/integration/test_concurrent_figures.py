"""Two runs of one figure at once: the second is refused at once, the first is not disturbed."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from figures import ok_rows
from output import read_until

from expts import iw
from ground import figurelock
from ground.results import REPO
from ground.trials import read_rows, trial_key

pytestmark = pytest.mark.root


def fig2_argv(out: Path) -> list[str]:
    return [sys.executable, "-m", "netrepro", "run", "iw/fig2", "--quick", "--trials", "1", "--out", str(out)]


def test_a_second_run_of_a_running_figure_is_refused(tmp_path: Path) -> None:
    csv_path = tmp_path / "iw" / "fig2.csv"
    first = subprocess.Popen(
        fig2_argv(tmp_path),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert first.stdout is not None
        # The figure's heading is printed with the lock held, before the lab is built.
        seen, _ = read_until(first, lambda line: "iw/fig2:" in line, 60)
        assert "iw/fig2:" in seen, seen
        assert figurelock.lock_path(csv_path) == csv_path.with_name("fig2.csv.lock")  # beside the CSV
        assert figurelock.lock_path(csv_path).exists()

        began = time.monotonic()
        second = subprocess.run(fig2_argv(tmp_path), cwd=REPO, capture_output=True, text=True, timeout=60)
        assert second.returncode == 1, second.stdout + second.stderr
        assert time.monotonic() - began < 30
        assert f"run.sh run: {csv_path} is busy" in second.stderr and f"pid {first.pid}" in second.stderr
        assert "--out DIR" in second.stderr
        assert "settings x" not in second.stdout  # it did nothing

        rest, _ = first.communicate(timeout=900)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 0, (seen + rest)[-3000:]
    rows = ok_rows(read_rows(csv_path))  # a failed attempt only where it is run again (a busy machine)
    expected = sorted(trial_key(p, 0) for p in iw.FIG2.grid(quick=True))
    assert sorted(r["trial_key"] for r in rows) == expected  # every trial, each exactly once
    assert not figurelock.lock_path(csv_path).exists()  # let go at the end
