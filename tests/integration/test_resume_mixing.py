"""A resume that would mix two backends in one figure is refused before anything is built.

iw/fig2's CSV holds a row of the emulation backend this machine would not
choose (as if an interrupted run had used the other one): resuming with
`--shaper auto` is refused at once, naming both backends and the way on,
and the CSV is left as it was; no lab comes up (the root tests' fixture
checks the machine is as it was).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from expts import iw
from ground import kernel
from ground.results import REPO
from ground.trials import TrialLog, trial_key
from topologies import emulation

pytestmark = pytest.mark.root


def test_a_resume_on_the_other_backend_is_refused_before_the_lab(tmp_path: Path) -> None:
    here = emulation.choose_backend("auto")
    other = "delayline" if here == "netem" else "netem"
    setting = iw.FIG2.grid(quick=True)[0]
    log = TrialLog(tmp_path / "iw" / "fig2.csv")
    log.append({"trial_key": trial_key(setting, 0), "figure": "iw/fig2", **setting, "trial": 0, "status": "ok",
                "seed": 1, "backend": other, "switch": "bridge", "kernel": kernel.release(), "cc_impl": "kernel",
                "download_time_ms": 400.0})  # fmt: skip
    before = log.path.read_bytes()
    began = time.monotonic()
    argv = [sys.executable, "-m", "netrepro", "run", "iw/fig2", "--quick", "--trials", "1", "--out", str(tmp_path)]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"holds 1 trials run with backend {other}; this run would use backend {here}" in done.stderr
    assert f"--shaper {other} resumes them" in done.stderr and "--fresh" in done.stderr
    assert log.path.read_bytes() == before
    assert time.monotonic() - began < 120  # refused before a lab, not after trials
