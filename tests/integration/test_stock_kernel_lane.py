"""The stock-kernel lane end to end: boot Debian's kernel, run the guest's tests there.

`run.sh --vm test tests/guest` builds kmod/ against the guest kernel's
headers, detects KVM or falls back to software emulation, boots, and runs
tests/guest inside; this test asserts that all of them ran and passed there.
A figure run with --out outside the repository leaves its files on the host:
seed 003's table of cubic_plus, read back from the kernel module.
"""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from expts import spdy
from ground.results import REPO
from ground.trials import read_rows

pytestmark = pytest.mark.root


def test_guest_suite_passes_in_the_stock_kernel(summary_lines: list[str]) -> None:
    done = subprocess.run(
        # run.sh, as a user would: it installs QEMU, the stock kernel and virtme-ng on first use
        [str(REPO / "run.sh"), "--vm", "test", "tests/guest", "-rA", "--durations=20"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=2100,  # the guest's suite took 1361 s under TCG here (the whole lane test 1465 s)
    )
    # the guest's console (its pytest report) is stdout; run.sh's setup and the lane's own lines are stderr
    failures = done.stdout.find("= FAILURES =")
    guest = done.stdout[failures : failures + 8000] + "\n[...]\n" if failures >= 0 else ""
    out = done.stderr[-1500:] + "\n--- the guest's console ---\n" + guest + done.stdout[-3000:]
    print(out)
    # the guest's slowest tests, at the end of the host's report: where the lane's time goes
    console = done.stdout.replace("\r", "")  # a serial console's line ends
    slowest = re.search(r"=+ slowest \d+ durations =+\n(.*?)\n(?:=|\n)", console, re.S)
    if slowest:
        summary_lines.append("the stock-kernel lane, the guest's slowest tests:")
        summary_lines += [f"  {line}" for line in slowest.group(1).splitlines()]
    assert done.returncode == 0, out
    summary = re.search(r"=+ (.*) in [\d.]+s", done.stdout)
    assert summary is not None, done.stdout[-3000:]
    assert "passed" in summary.group(1) and "skipped" not in summary.group(1) and "failed" not in summary.group(1)


def test_a_vm_run_writes_its_results_to_an_out_outside_the_repository(tmp_path: Path) -> None:
    """`run.sh --vm spdy/betatable --impl lkm --out DIR`: DIR (here under /tmp) is shared with the guest,
    so the figure's files are on the host afterwards, not in the guest's own /tmp; the loader
    chose the module there, and its table equals seed 003's.

    Started as run.sh hands over after its setup (`python -m netrepro` from the
    repository, with the environment's python); the test above goes through
    run.sh itself, which installs the lane's packages.
    """
    out = tmp_path / "vm-results"  # not made yet: the lane makes it
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "netrepro", "--vm", "spdy/betatable", "--impl", "lkm", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    out_text = done.stdout + done.stderr
    print(f"{time.monotonic() - started:.0f} s\n" + out_text[-4000:])
    assert done.returncode == 0, out_text[-6000:]
    # seed 003's table, read back from the kernel module (the guest has it; the host, only the BPF program)
    rows = read_rows(out / "spdy" / "betatable.csv")
    ours = {(int(r["n"]), int(r["beta"])): (int(r["beta_effective"]), int(r["backoff_pct"])) for r in rows}
    ref = {(r["n"], r["beta"]): (r["beta_effective"], r["backoff_pct"]) for r in spdy.reference_table()}
    assert ours == ref
    manifest = json.loads((out / "spdy" / "betatable.manifest.json").read_text())
    assert manifest["congestion_control"] == ["cubic_plus (lkm)"]
    assert manifest["vm"]["via"] == "virtme-ng" and manifest["vm"]["accel"] in ("kvm", "tcg")
