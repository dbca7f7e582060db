"""Bad input, as root on the real machine: refused with what was typed, exit 2, no traceback, nothing built.

The suite's fixture compares the whole machine before and after (namespaces,
links, qdiscs, sysctls, congestion controls, trace instances, ledgers, ...).
"""

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ground.ledgers import ledger_files
from ground.results import REFERENCE, REPO

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
    (["run", "iw/fig2", "--shard", "0/3"], "--shard '0/3': K is from 1 to N (3)"),
    (["run", "iw/fig2", "--set", "object_bytes=2147483647"], "--set object_bytes=2147483647: at most "),
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


def _study(tmp: Path, data: bytes) -> list[str]:
    path = tmp / "my.toml"
    path.write_bytes(data)
    return ["run", str(path)]


STUDY = (REPO / "expts" / "example-study.toml").read_bytes()


def _linked_csv(tmp: Path) -> list[str]:
    (tmp / "out" / "iw").mkdir(parents=True)
    (tmp / "out" / "iw" / "fig2.csv").symlink_to(REFERENCE / "iw" / "fig2.csv")
    return ["run", "iw/fig2", "--quick"]


# Input that once ended in a traceback, each as a file the test makes in its directory.
FILE_CASES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "study file not UTF-8": (lambda t: _study(t, STUDY.replace(b"Download", b"T\xe9l\xe9chargement")), "not UTF-8"),
    "study title with a lone brace": (
        lambda t: _study(t, STUDY.replace(b', {cc})"', b', {cc}) {"')),
        "Single '{' encountered in format string",
    ),
    "topology pairs as a string": (
        lambda t: _study(
            t, STUDY.replace(b"trials = 20", b'trials = 20\ntopology = { shape = "dumbbell", pairs = "2" }')
        ),
        "topology.pairs = '2': give a whole number",
    ),
    "a resumed run's CSV is a symbolic link": (_linked_csv, "fig2.csv: a symbolic link"),
    "report into a missing directory": (
        lambda t: ["report", "--out", str(t / "missing" / "x.html")],
        "x.html: no such directory",
    ),
}


@pytest.mark.parametrize("case", list(FILE_CASES))
def test_bad_files_are_refused_before_anything_is_built(case: str, tmp_path: Path) -> None:
    make, message = FILE_CASES[case]
    argv = make(tmp_path)
    out = ["--out", str(tmp_path / "out")] if argv[0] == "run" else []
    ledgers_before, files_before = [f.path for f in ledger_files()], sorted(tmp_path.rglob("*"))
    done = subprocess.run(
        [sys.executable, "-m", "netrepro", *argv, *out], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert [f.path for f in ledger_files()] == ledgers_before
    assert sorted(tmp_path.rglob("*")) == files_before, "nothing made"
