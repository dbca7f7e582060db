"""The stock-kernel lane end to end: boot Debian's kernel, run the guest's tests there.

`run.sh --vm test tests/guest` builds kmod/ against the guest kernel's
headers, detects KVM or falls back to software emulation, boots, and runs
tests/guest inside; this test asserts that all of them ran and passed there.
A figure run with --out outside the repository (shared with the guest at its
own path) is not booted a second time here: its argument logic is
tests/unit/test_vm_out.py, and the run is checked by hand
(docs/stock-kernel-lane.md).
"""

import os
import re
import signal
import subprocess

import pytest

from ground.results import REPO

pytestmark = pytest.mark.root


# The guest's suite took 1361 s under TCG here once (the whole lane test 1465 s), usually 610 to 682 s;
# a guest several times slower from boot on ran past 2100 s once and past 2400 s on CI once.
GUEST_SUITE_LIMIT_S = 2400
STOP_GRACE_S = 120


def guest_suite() -> tuple[int | None, str, str]:
    """(exit status, stdout, stderr) of `run.sh --vm test tests/guest`, as a user would run it (run.sh
    installs QEMU, the stock kernel and virtme-ng on first use).  Past the limit it is stopped as Ctrl-C
    stops it, so that its run takes the guest down and undoes what it made (killed outright, QEMU would
    go on running beside the rest of the suite); the status is then None."""
    argv = [str(REPO / "run.sh"), "--vm", "test", "tests/guest", "-v", "-rA", "--durations=20"]
    with subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as lane:
        try:
            out, err = lane.communicate(timeout=GUEST_SUITE_LIMIT_S)
            return lane.returncode, out, err
        except subprocess.TimeoutExpired:
            os.killpg(lane.pid, signal.SIGINT)
            try:
                out, err = lane.communicate(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(lane.pid, signal.SIGKILL)
                out, err = lane.communicate()
            return None, out, err + f"\n(stopped after {GUEST_SUITE_LIMIT_S} s: the guest's suite ran too long)"


def test_guest_suite_passes_in_the_stock_kernel(summary_lines: list[str]) -> None:
    code, stdout, stderr = guest_suite()
    # the guest's console (its pytest report) is stdout; run.sh's setup and the lane's own lines are stderr
    failures = stdout.find("= FAILURES =")
    guest = stdout[failures : failures + 8000] + "\n[...]\n" if failures >= 0 else ""
    out = stderr[-1500:] + "\n--- the guest's console ---\n" + guest + stdout[-3000:]
    print(out)
    # how soon the guest answered (a guest slow from boot on is slow there) and its slowest tests, at the end
    # of the host's report: where the lane's time goes
    answered = re.search(r"--vm: the guest answered (\d+) s after QEMU started", stderr)
    if answered:
        summary_lines.append(f"the stock-kernel lane: the guest answered {answered.group(1)} s after QEMU started")
    console = stdout.replace("\r", "")  # a serial console's line ends
    slowest = re.search(r"=+ slowest \d+ durations =+\n(.*?)\n(?:=|\n)", console, re.S)
    if slowest:
        summary_lines.append("the stock-kernel lane, the guest's slowest tests:")
        summary_lines += [f"  {line}" for line in slowest.group(1).splitlines()]
    assert code == 0, out
    assert answered, stderr[-1500:]
    summary = re.search(r"=+ (.*) in [\d.]+s", stdout)
    assert summary is not None, stdout[-3000:]
    assert "passed" in summary.group(1) and "skipped" not in summary.group(1) and "failed" not in summary.group(1)
