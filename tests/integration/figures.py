"""A figure run as a user runs it (`python -m netrepro STUDY/FIGURE --quick`), for the root tests."""

import json
import subprocess
import sys
from pathlib import Path

from ground.results import REPO
from ground.trials import latest_rows, read_rows
from netrepro.studykit.spec import Figure

__all__ = ["run_quick"]


def run_quick(fig: Figure, out: Path, *options: str) -> tuple[list[dict[str, str]], dict[str, object]]:
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
