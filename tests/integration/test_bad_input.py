"""Bad input, as root on the real machine: refused with what was typed, exit 2, no traceback, nothing built.

The suite's fixture compares the whole machine before and after (namespaces,
links, qdiscs, sysctls, congestion controls, trace instances, ledgers, ...).
"""

import subprocess
import sys
from pathlib import Path

import pytest

from ground.ledger import ledger_files
from ground.results import REPO

pytestmark = pytest.mark.root

CASES = [
    (["run", "cubicplus/fig3", "--set", "initcwnd=sixteen"], "--set initcwnd=sixteen: a whole number"),
    (["run", "cubicplus/fig3", "--set", "page=huge"], "--set page=huge: one of tiny, small, medium, large"),
    (["run", "cubicplus/fig3", "--series", "cc=cubic,bbr2"], "bbr2: no such congestion control here; allowed:"),
    (["run", "iw/fig2", "--set", "cc=bbr2"], "--set cc=bbr2: no such congestion control here"),
    (["check", "--cc", "typo"], "--cc typo: no such congestion control here"),
    (["run", "cubicplus/fig3", "--set", "rate=abc"], "--set rate=abc: expected a rate such as 3mbit"),
    (["run", "cubicplus/fig3", "--vary", "loss=7"], "--vary loss=7: a bare number is a fraction; did you mean 7%?"),
    (["run", "iw/fig2", "--out", "/proc/x"], "--out /proc/x: cannot write results there"),
    (["run", "iw/fig2", "--set", "n=6"], "n is a parameter of cubic_plus"),
]


@pytest.mark.parametrize(("argv", "message"), CASES, ids=[" ".join(a[1:]) for a, _ in CASES])
def test_bad_input_is_refused_before_anything_is_built(argv: list[str], message: str, tmp_path: Path) -> None:
    ledgers_before = [f.path for f in ledger_files()]
    out = [] if "--out" in argv or argv[0] != "run" else ["--out", str(tmp_path / "out")]
    done = subprocess.run(
        [sys.executable, "-m", "netrepro", *argv, *out], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert [f.path for f in ledger_files()] == ledgers_before
    assert not (tmp_path / "out" / "cubicplus").exists() or not any((tmp_path / "out" / "cubicplus").iterdir())
