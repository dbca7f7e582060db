"""The soak: a figure run killed or signalled at random moments loses no row and leaves nothing.

Each round starts a figure run (by default `cubicplus/fig3 --quick`: Apache,
h2load, the BPF `cubic_plus`, tcp_probe tracing, the delay line, the CSV),
waits a moment drawn from a seeded generator, and then either SIGKILLs it
(the main process alone, or its whole process group) and runs `clean`, or
sends it SIGINT, SIGTERM or SIGHUP and lets it undo itself.  After each
round the machine must be as before (machinestate.snapshot, once the kernel
has let go of closing sockets) and the CSV, if one was written, must parse
with every row complete.  The suite runs a few rounds; `run.sh bench soak`
runs as many as asked and reports how many the machine survived.

With `cluster` (`run.sh bench soak --cluster`) each run is a `--hosts
root@127.0.0.1` run, through an sshd of the soak's own on a loopback port
(netrepro.lanes.loopback_sshd): the Dask scheduler, nanny, worker and trial
process the launcher starts under that sshd must also be gone within a
minute of the kill, and the host's copy of the run's certificate with them.
With `jobs` (`run.sh bench soak --jobs N`) each run is JOBS_FIGURE with N
labs side by side on a local Dask cluster: its scheduler and nannies die with the run, its
workers when their parent does, their labs by their ledgers and `clean`.
"""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ground.machinestate import snapshot, wait_until_as_before
from ground.results import REPO
from netrepro.engine.ssh_cluster import remote_certificate_copies
from netrepro.lanes.loopback_sshd import Sshd, descendants, still_running

FIGURE = ("run", "cubicplus/fig3", "--quick")
# --jobs: a figure of one path split between the labs, with a congestion control the run holds for them (a
# BPF port on a kernel without vegas); its 120 trials take about 35 s in two labs, most of the kill window
JOBS_FIGURE = ("run", "iw/fig2", "--set", "cc=vegas")
# Up to 40 s covers the lab's start, the path's verification, the algorithm's load and the first trials.
KILL_WINDOW_S = (0.5, 40.0)
SIGNALLED_EXIT_S = 120.0  # a signalled run stops its trial and undoes its lab within this
SETTLE_S = 150.0  # a struct_ops held by closing sockets is freed by the kernel within about two minutes
LAUNCHED_END_S = 60.0  # what the SSH launcher started ends within this of the coordinator's death


@dataclass
class Round:
    how: str  # "SIGKILL process", "SIGKILL group", "SIGINT", "SIGTERM", "SIGHUP"
    after_s: float
    exit_code: int | None = None
    clean_output: str = ""
    left: list[str] = field(default_factory=list)
    csv_problems: list[str] = field(default_factory=list)
    rows: int = 0
    settle_s: float = 0.0
    launched: int = 0  # with a cluster: the processes the SSH launcher started

    @property
    def survived(self) -> bool:
        return not self.left and not self.csv_problems

    def line(self) -> str:
        verdict = "clean" if self.survived else "LEFT: " + "; ".join(self.left + self.csv_problems)
        rows = f"{self.rows} rows" + (f", {self.launched} launched" if self.launched else "")
        return f"{self.how:<16} after {self.after_s:5.1f} s: exit {self.exit_code}, {rows}, {verdict}"


def csv_problems(path: Path) -> tuple[int, list[str]]:
    """(rows, problems) of a figure CSV after a kill: it must end with a whole line, every row whole."""
    if not path.exists():
        return 0, []
    data = path.read_bytes()
    problems = []
    if data and not data.endswith(b"\n"):
        problems.append(f"{path.name} ends in a cut line")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    for number, row in enumerate(rows, 2):
        if None in row or any(v is None for v in row.values()):
            problems.append(f"{path.name} line {number} is not a whole row")
    return len(rows), problems


def _netrepro(*args: str) -> list[str]:
    return [sys.executable, "-m", "netrepro", *args]


def one_round(
    how: str, after_s: float, out: Path, settle: float = SETTLE_S, sshd: Sshd | None = None, jobs: int = 0
) -> Round:
    """Run the figure into `out` (on a cluster launched through `sshd`, or with `jobs` labs side by side,
    if given), interrupt it `after_s` seconds in, clean up if killed, compare."""
    before = snapshot()
    certificates = remote_certificate_copies()
    result = Round(how, after_s)
    killed = how.startswith("SIGKILL")
    launched: dict[int, tuple[int | None, str]] = {}
    on_cluster = ["--hosts", "root@127.0.0.1", "--ssh-config", str(sshd.config)] if sshd else []
    on_cluster += ["--jobs", str(jobs)] if jobs else []
    figure = JOBS_FIGURE if jobs else FIGURE
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "run.log", "wb") as log:
        run = subprocess.Popen(
            _netrepro(*figure, "--out", str(out), *on_cluster),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, as a shell gives a job
        )
        moment = time.monotonic() + after_s
        while (code := run.poll()) is None and time.monotonic() < moment:
            if sshd is not None:
                launched.update(descendants(sshd.pid))
            time.sleep(min(0.2, max(0.0, moment - time.monotonic())))
        result.exit_code = code
        if result.exit_code is None:
            if sshd is not None:
                launched.update(descendants(sshd.pid))
            if how == "SIGKILL group":
                os.killpg(run.pid, signal.SIGKILL)
            elif how == "SIGKILL process":
                run.kill()
            else:
                run.send_signal(getattr(signal, how))
            try:
                result.exit_code = run.wait(timeout=SIGNALLED_EXIT_S)
            except subprocess.TimeoutExpired:  # a failure of the round; the next one needs the machine back
                result.left.append(f"still running {SIGNALLED_EXIT_S:.0f} s after {how}: killed, then `clean`")
                os.killpg(run.pid, signal.SIGKILL)
                result.exit_code = run.wait()
                killed = True
    result.launched = len(launched)
    ended = time.monotonic()
    while still_running(launched) and time.monotonic() - ended < LAUNCHED_END_S:
        time.sleep(0.5)
    if still_running(launched):
        result.left.append(f"launched over SSH, still running {LAUNCHED_END_S:.0f} s after: {still_running(launched)}")
    if killed:
        done = subprocess.run(_netrepro("clean"), cwd=REPO, capture_output=True, text=True, check=False)
        result.clean_output = (done.stdout + done.stderr).strip()
        if done.returncode != 0:
            result.left.append(f"clean exited {done.returncode}: {result.clean_output[-500:]}")
    left, result.settle_s = wait_until_as_before(before, settle, step_s=0.5)
    result.left += left
    if remote_certificate_copies() != certificates:
        result.left.append(
            f"the host's copy of the run's certificate: {sorted(remote_certificate_copies() - certificates)}"
        )
    written = sorted(p for p in out.rglob("*.csv") if p.is_file())  # the figure's, a derived one's directory
    result.rows, result.csv_problems = csv_problems(written[0]) if written else (0, [])
    return result


def plan(rounds: int, seed: int, signals: bool = True) -> list[tuple[str, float]]:
    """The seeded plan: SIGKILL rounds alternate process and group; then one of each signal."""
    rng = random.Random(seed)
    kills = [("SIGKILL process" if i % 2 == 0 else "SIGKILL group", rng.uniform(*KILL_WINDOW_S)) for i in range(rounds)]
    others = [(sig, rng.uniform(*KILL_WINDOW_S)) for sig in ("SIGINT", "SIGTERM", "SIGHUP")] if signals else []
    return kills + others


def soak(
    rounds: int,
    seed: int,
    work: Path,
    signals: bool = True,
    report: Callable[[Round], None] | None = None,
    sshd: Sshd | None = None,
    jobs: int = 0,
) -> list[Round]:
    """The seeded plan's rounds, each reported as it ends; on a cluster launched through `sshd`, or with
    `jobs` labs side by side, if given."""
    results = []
    for i, (how, after_s) in enumerate(plan(rounds, seed, signals)):
        result = one_round(how, after_s, work / f"round-{i:03d}", sshd=sshd, jobs=jobs)
        results.append(result)
        if report is not None:
            report(result)
    return results
