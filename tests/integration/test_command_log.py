"""`run.sh -v check`: every command is shown once, with its namespace, and no line is glued to another."""

import os
import re
import subprocess
import sys
from collections import Counter
from itertools import pairwise

import pytest

from ground.results import REPO

pytestmark = pytest.mark.root


def test_verbose_check_shows_commands_in_their_namespaces_each_line_once() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "netrepro", "-v", "check", "--rtt", "10ms", "--rate", "10mbit"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stderr.split("\n")  # not splitlines(): a stray \r must stay inside its line
    assert any(re.match(r"netrepro\.cmd: \[s1\] tc ", line) for line in lines), done.stderr[-3000:]
    assert any(re.match(r"netrepro\.cmd: \[(client|server)\] ", line) for line in lines), done.stderr[-3000:]
    # a record is on a line of its own: no second `name: ` glued after a message, no \r-drawn leftovers
    glued = [line for line in lines if len(re.findall(r"\bnetrepro(\.\w+)?: ", line)) > 1 or "\r" in line]
    assert glued == []
    # each warning once (a warning written by two handlers came out twice, one after the other)
    warnings = Counter(line for line in lines if "warning" in line.lower())
    assert all(n == 1 for n in warnings.values()), warnings
    repeated = [a for a, b in pairwise(lines) if a and a == b and not a.startswith("netrepro.cmd:")]
    assert repeated == []
