"""`run.sh shell --script`: a scripted node command is waited for, not polled for (no core spun);
a script whose path holds a space runs, and its first failing line fails the command.

Mininet's CLI polls its stdin beside the node's output while a node's
command runs (waitForNode); a stdin at end of file is always readable, so
with /dev/null as stdin the wait spun a whole core (ten seconds of `sleep`
cost 9.97 s of CPU).  The shell gives the CLI a pipe that stays open and
empty instead: the wait sleeps in poll().
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ground.results import REPO

pytestmark = pytest.mark.root

SLEEP_S = 6


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat's fields from the state on (field 3), the command name (which may hold spaces) cut off."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """The process's own user and system time (utime and stime, fields 14 and 15)."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendant_running(ancestor: int, argv: list[str]) -> int | None:
    """A process with this command line below `ancestor`, if one runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "cmdline").read_bytes().split(b"\0")[:-1] != [a.encode() for a in argv]:
                continue
            pid = int(entry.name)
            while pid > 1:
                pid = int(_stat(pid)[1])
                if pid == ancestor:
                    return int(entry.name)
        except (OSError, ValueError):
            continue
    return None


def test_a_scripted_command_is_waited_for_without_spinning(tmp_path: Path) -> None:
    script = tmp_path / "sleep.mn"
    script.write_text(f"client sleep {SLEEP_S}\n")
    shell = subprocess.Popen(
        [sys.executable, "-m", "netrepro", "shell", "--script", str(script)],
        cwd=REPO,
        stdin=subprocess.DEVNULL,  # no terminal, as under a CI job or nohup
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        sleeper = None
        while sleeper is None and shell.poll() is None and time.monotonic() < deadline:
            sleeper = descendant_running(shell.pid, ["sleep", str(SLEEP_S)])
            time.sleep(0.05)
        assert sleeper is not None, "the scripted sleep never ran"
        began, cpu_before = time.monotonic(), cpu_seconds(shell.pid)
        while Path(f"/proc/{sleeper}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        waited, cpu = time.monotonic() - began, cpu_seconds(shell.pid) - cpu_before
        out, _ = shell.communicate(timeout=60)
    finally:
        if shell.poll() is None:
            shell.terminate()  # the shell undoes its lab on SIGTERM
            shell.wait(timeout=60)
    assert shell.returncode == 0, out
    assert waited > SLEEP_S - 2, f"the sleep ended after {waited:.1f} s"
    assert cpu < 1.0, f"{cpu:.2f} s of CPU while a scripted `sleep {SLEEP_S}` ran ({waited:.1f} s)"


def test_a_failing_scripted_command_fails_the_shell_and_the_lab_goes(tmp_path: Path) -> None:
    """A script in a directory with a space (Mininet's `source` split it: "usage: source <file>", exit 0):
    its lines run until `client false`, which exits 1 naming its line; the line after it never runs, and
    the lab is torn down (the fixture leaves_machine_as_found checks the machine)."""
    script = tmp_path / "a lab" / "fails on line 3.mn"
    script.parent.mkdir()
    ran, never = tmp_path / "ran", tmp_path / "never"
    script.write_text(f"# a comment\nclient touch {ran}\nclient false\nclient touch {never}\n")
    shell = subprocess.run(
        [sys.executable, "-m", "netrepro", "shell", "--script", str(script)],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shell.returncode == 1, shell.stdout + shell.stderr
    assert shell.stderr.endswith(
        f"run.sh shell: --script {script} line 3: `client false`: exited with status 1; "
        "the lines after it were not run\n"
    ), shell.stderr
    assert ran.exists() and not never.exists()
