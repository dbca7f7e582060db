"""The stock-kernel lane end to end: boot Debian's kernel, run the guest's tests there.

`run.sh --vm test tests/guest` builds kmod/ against the guest kernel's
headers, detects KVM or falls back to software emulation, boots, and runs
tests/guest inside; this test asserts that all of them ran and passed there.
"""

import re
import subprocess

import pytest

from netrepro.results import REPO

pytestmark = pytest.mark.root


def test_guest_suite_passes_in_the_stock_kernel() -> None:
    done = subprocess.run(
        # run.sh, as a user would: it installs QEMU, the stock kernel and virtme-ng on first use
        [str(REPO / "run.sh"), "--vm", "test", "tests/guest", "-rA"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    out = done.stdout + done.stderr
    print(out[-6000:])
    assert done.returncode == 0, out[-6000:]
    summary = re.search(r"=+ (.*) in [\d.]+s", done.stdout)
    assert summary is not None, done.stdout[-3000:]
    assert "passed" in summary.group(1) and "skipped" not in summary.group(1) and "failed" not in summary.group(1)
