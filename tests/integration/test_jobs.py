"""Labs side by side on this machine (`--jobs`): every trial once, each lab verified, the run's cluster its own.

iw/fig2 --quick (with vegas: on a kernel without it, netrepro's BPF port,
which the run loads once and holds for both labs) has one path setting;
with `--jobs 2` its trials are split between two labs side by side, each
built and verified on its own, on a local Dask cluster whose every
connection is TLS with the run's certificates.  Each row records its lab's CPU and its delay line's
lateness, under the bound.  A SIGKILL of the run mid-trial, then `clean`,
leaves the machine as it was (the soak's state check).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from figures import ok_rows

import expts
from ground.machinestate import snapshot, wait_until_as_before
from ground.results import REPO
from ground.trials import Row, read_rows, trial_key
from netrepro.lanes import soak

pytestmark = pytest.mark.root


FIGURE = "iw/fig2"  # --quick: one path setting, its trials split between the labs
# vegas: on a kernel without it, netrepro's BPF port, held loaded once for both labs by the run
VEGAS = ("--set", "cc=vegas")


def test_two_labs_side_by_side_run_every_trial_once_each_verified(tmp_path: Path) -> None:
    fig = expts.find(FIGURE).derive({"cc": "vegas"})
    out = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "netrepro", "run", FIGURE, "--quick", *VEGAS, "--jobs", "2", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    said = done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0, said
    assert "2 labs side by side on this machine: 2 labs for 1 path settings" in done.stdout, said
    attempts = read_rows(out / fig.directory / fig.csv_name)
    rows = ok_rows(attempts)  # a failed attempt only where it is run again: late, or ssthresh repaired
    wanted = sorted(trial_key(p, i) for p in fig.grid(quick=True) for i in range(fig.trial_count(True, None)))
    assert sorted(r["trial_key"] for r in rows) == wanted, said  # each once
    assert len({r["worker"] for r in rows}) == 2 and all(r["worker"].startswith("tls://127.0.0.1:") for r in rows)
    assert all(r["verify_ok"] == "true" for r in rows)  # each lab verified its own path
    # vegas held once for both labs: each row says what ran (here netrepro's BPF port, or the kernel's own)
    assert {(r["cc"], r["cc_impl"]) for r in rows} in ({("vegas", "bpf")}, {("vegas", "kernel")}), rows
    for r in attempts:  # the lab's CPU and the delay line's lateness, measured per trial
        assert 0 < float(r["cpu_s"]) < 4 * float(r["trial_seconds"]), r
        assert int(r["late_packets"]) > 0 and float(r["late_median_ms"]) <= float(r["late_p99_ms"]), r
    manifest = json.loads((out / fig.directory / f"{fig.name}.manifest.json").read_text())
    assert manifest["engine"]["launcher"] == "2 labs side by side on this machine"
    assert len(manifest["engine"]["workers"]) == 2 and manifest["trials_missing"] == 0


def test_a_killed_run_with_labs_side_by_side_leaves_nothing_after_clean(tmp_path: Path) -> None:
    """SIGKILLed once its first row is home (the cluster up, vegas held, both labs verified, trials
    running in both), then `clean`: the machine as before, by the soak's state check."""
    before = snapshot()
    out = tmp_path / "results"
    run = subprocess.Popen(
        [sys.executable, "-m", "netrepro", "run", FIGURE, "--quick", *VEGAS, "--jobs", "2", "--out", str(out)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and run.poll() is None and not _rows(out):
            time.sleep(0.05)
        assert run.poll() is None and len(_rows(out)) < 12, "the run ended before it could be killed mid-way"
    finally:
        run.kill()
        run.wait()
    cleaned = subprocess.run([sys.executable, "-m", "netrepro", "clean"], cwd=REPO, capture_output=True, text=True)
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    left, _ = wait_until_as_before(before, soak.SETTLE_S, step_s=0.5)
    assert not left, (left, cleaned.stdout)
    assert all(row["status"] == "ok" for row in _rows(out))  # the rows home before the kill are whole


def _rows(out: Path) -> list[Row]:
    found = sorted(out.rglob("fig2.csv"))
    return read_rows(found[0]) if found else []
