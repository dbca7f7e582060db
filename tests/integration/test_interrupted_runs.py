"""A run killed mid-way leaves a ledger that `clean` undoes; SIGTERM undoes at once."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from machine import differences, snapshot, wait_until_as_before
from output import read_until, stop

from ground.ledgers import LEDGER_DIR
from ground.results import REPO

pytestmark = pytest.mark.root


def start_shell(script: Path, *topology: str) -> subprocess.Popen[str]:
    """`run.sh shell` with a script that holds the lab up, started as run.sh would."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "netrepro",
            "shell",
            "--rtt",
            "10ms",
            "--rate",
            "10mbit",
            *topology,
            "--script",
            str(script),
        ],  # fmt: skip
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def wait_for_line(p: subprocess.Popen[str], marker: str, timeout: float = 60) -> str:
    """The output up to a line with `marker`.  Without one in time the command is stopped by
    SIGTERM, which undoes what it made (a SIGKILL here would leave its changes to the next
    tests: CI's one timeout failed two more so), and the test fails with what it printed."""
    seen, line = read_until(p, lambda text: marker in text, timeout)
    if line is not None:
        return seen
    pytest.fail(f"never saw {marker!r} in {timeout} s; output:\n{seen}{stop(p)}")


@pytest.fixture
def holding_script(tmp_path: Path) -> Path:
    script = tmp_path / "hold.mn"
    script.write_text("client echo LAB-IS-UP\nclient sleep 120\n")
    return script


# A dumbbell adds routers, a second switch, more namespaces and queues, and (with the
# delay line) one delay line per switch and router: all of it must be in the ledger.
DUMBBELL = ("--topo", "dumbbell", "--pairs", "2", "--cross", "--shaper", "delayline")


@pytest.mark.parametrize("topology", [(), DUMBBELL], ids=["path", "dumbbell"])
def test_sigkill_then_clean_leaves_nothing(tmp_path: Path, topology: tuple[str, ...]) -> None:
    holding_script = tmp_path / "hold.mn"
    host = "client1" if topology else "client"
    holding_script.write_text(f"{host} echo LAB-IS-UP\n{host} sleep 120\n")
    before = snapshot()
    shell = start_shell(holding_script, *topology)
    wait_for_line(shell, "LAB-IS-UP")
    during = snapshot()
    assert "cubic" in during.sysctls[0], "the lab widened tcp_allowed_congestion_control"
    assert during.ledgers - before.ledgers, "the run keeps a ledger"

    shell.send_signal(signal.SIGKILL)
    shell.wait()
    assert shell.stdout is not None
    shell.stdout.close()
    left = snapshot()
    assert differences(before, left), "a SIGKILLed run leaves its ledger and changes behind"

    done = subprocess.run([sys.executable, "-m", "netrepro", "clean"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "undid" in done.stdout
    assert wait_until_as_before(before, 5)[0] == []
    assert not any(LEDGER_DIR.glob("*.jsonl")) or snapshot().ledgers == before.ledgers


def test_sigterm_undoes_everything_without_clean(holding_script: Path) -> None:
    before = snapshot()
    shell = start_shell(holding_script)
    wait_for_line(shell, "LAB-IS-UP")
    shell.send_signal(signal.SIGTERM)
    out, _ = shell.communicate(timeout=60)
    assert shell.returncode == 128 + signal.SIGTERM, out
    assert "undoing what this run created" in out
    assert wait_until_as_before(before, 5)[0] == []


def test_sigint_stops_a_figure_run_started_with_sigint_ignored(tmp_path: Path) -> None:
    """A shell starts a background job (`./run.sh fig2 &`, or a suite under nohup) with SIGINT
    ignored, and Python then leaves it ignored: netrepro installs its own handler, so SIGINT still
    stops the run mid-trial and undoes everything (the soak's SIGINT round once ran to the end)."""
    before = snapshot()
    run = subprocess.Popen(
        [sys.executable, "-m", "netrepro", "iw/fig2", "--quick", "--out", str(tmp_path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # what `&` does in a script
    )
    wait_for_line(run, "1/12 trials")
    run.send_signal(signal.SIGINT)
    out, _ = run.communicate(timeout=60)
    assert run.returncode == 130, out[-3000:]
    assert "interrupted; everything it created has been undone" in out
    assert wait_until_as_before(before, 5)[0] == []
