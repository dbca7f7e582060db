"""The stock-kernel lane end to end: boot Debian's kernel, run the guest's tests there.

`run.sh --vm test tests/guest` builds kmod/ against the guest kernel's
headers, detects KVM or falls back to software emulation, boots, and runs
tests/guest inside; this test asserts that all of them ran and passed there.
A figure run with --out outside the repository (shared with the guest at its
own path) is not booted a second time here: its argument logic is
tests/unit/test_vm_out.py, and the run is checked by hand
(docs/stock-kernel-lane.md).
"""

import re
import subprocess

import pytest

from ground.results import REPO

pytestmark = pytest.mark.root


def test_guest_suite_passes_in_the_stock_kernel(summary_lines: list[str]) -> None:
    done = subprocess.run(
        # run.sh, as a user would: it installs QEMU, the stock kernel and virtme-ng on first use
        [str(REPO / "run.sh"), "--vm", "test", "tests/guest", "-rA", "--durations=20"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=2400,  # the guest's suite took 1361 s under TCG here (the whole lane test 1465 s); 2100 s was hit once
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
