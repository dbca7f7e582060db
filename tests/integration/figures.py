"""A figure run as a user runs it (`python -m netrepro STUDY/FIGURE --quick`), for the root tests."""

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ground.results import REPO
from ground.trials import Row, latest_rows, read_rows
from netrepro.studykit.spec import Figure

__all__ = ["ok_rows", "run_quick"]


def run_quick(fig: Figure, out: Path, *options: str) -> tuple[list[Row], dict[str, object]]:
    """Run the figure's quick variant into `out` (with the run's `options`, such as --trials 1); its CSV's
    rows, each trial's latest attempt (a trial run again at once, late or with its ssthresh repaired,
    counts by the attempt after), and its manifest."""
    done = subprocess.run(
        [sys.executable, "-m", "netrepro", fig.full_name, "--quick", "--out", str(out), *options],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    manifest = json.loads((out / fig.directory / f"{fig.name}.manifest.json").read_text())
    return latest_rows(read_rows(out / fig.directory / fig.csv_name)), manifest


def ok_rows(attempts: Sequence[Row]) -> list[Row]:
    """A trial log's successful rows, once every failed attempt in it is checked to be one the runner runs
    again at once: the delay line late past its bound (a busy machine) or an ssthresh the BPF guard
    repaired (kmod/README.md).  A test that wants each trial once compares these rows' keys."""
    again = [r for r in attempts if r["status"] != "ok"]
    assert all("true" in (r.get("late_over_bound"), r.get("ssthresh_repaired")) for r in again), [
        r["error"] for r in again
    ]
    return [r for r in attempts if r["status"] == "ok"]
