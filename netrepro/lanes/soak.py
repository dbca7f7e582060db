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

With `resume`, a SIGKILLed round then runs the same command again, to its
end: it must exit 0 with every trial of the grid ok exactly once (none
lost, none doubled: the CSV and the manifest's `trials_missing`), and leave
the machine as before.  `session_round` is the cluster's other failure: a
`--hosts` run over two loopback "hosts" of one machine (two addresses of one
sshd), in which the second host's SSH session is SIGKILLed once a trial of
its own has come home; its trials must be handed to the first host and the
run complete by itself, nothing left, and a resume find nothing to do.
"""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ground import proc
from ground.errors import SetupError, UserError
from ground.machinestate import MachineState, snapshot, wait_until_as_before
from ground.manifests import read_manifest
from ground.proc import start_time
from ground.results import REPO
from ground.trials import Row, read_rows
from netrepro.engine.ssh_cluster import remote_certificate_copies
from netrepro.lanes.loopback_sshd import Sshd, descendants, still_running
from netrepro.runner import shards

FIGURE = ("run", "cubicplus/fig3", "--quick")
# --jobs: a figure of one path split between the labs, with a congestion control the run holds for them (a
# BPF port on a kernel without vegas); its 120 trials take about 35 s in two labs, most of the kill window
JOBS_FIGURE = ("run", "iw/fig2", "--set", "cc=vegas")
# Up to 40 s covers the lab's start, the path's verification, the algorithm's load and the first trials.
KILL_WINDOW_S = (0.5, 40.0)
SIGNALLED_EXIT_S = 120.0  # a signalled run stops its trial and undoes its lab within this
SETTLE_S = 300.0  # a struct_ops held by closing sockets: freed within two minutes serially, three to four with --jobs 3
LAUNCHED_END_S = 60.0  # what the SSH launcher started ends within this of the coordinator's death
RESUME_S = 900.0  # a resumed run, or a cluster run that lost a host, ends within this (twice the slowest seen)
# Two "hosts" of one machine: the scheduler and a worker on the first, a worker on the second, one lab each.
HOSTS = ("127.0.0.1", "127.0.0.2")
HOSTS_FIGURE = ("run", "iw/fig5b", "--quick")  # three path settings of six trials: two run while one waits


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
    resumed: str = ""  # the same command again after the kill: how it ended ("" where not asked)
    resume_problems: list[str] = field(default_factory=list)
    handed: int = 0  # a killed host's settings: their trials the other host ran

    @property
    def survived(self) -> bool:
        return not self.left and not self.csv_problems and not self.resume_problems

    def line(self) -> str:
        problems = self.left + self.csv_problems + self.resume_problems
        verdict = "clean" if self.survived else "LEFT: " + "; ".join(problems)
        rows = f"{self.rows} rows" + (f", {self.launched} launched" if self.launched else "")
        rows += f", {self.handed} handed over" if self.how == "SIGKILL session" else ""
        rows += f", resumed: {self.resumed}" if self.resumed else ""
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


def completed(out: Path) -> tuple[list[Row], list[str]]:
    """(ok rows, problems) of a run that was to end complete in `out`: its CSV read whole, each trial ok once,
    and its manifest missing none of the grid."""
    written = sorted(p for p in out.rglob("*.csv") if p.is_file())
    manifests = sorted(out.rglob("*.manifest.json"))
    if not written or not manifests:
        return [], [f"no CSV and manifest in {out}"]
    try:
        rows = read_rows(written[0])
        missing = read_manifest(manifests[0]).trials_missing
    except (SetupError, UserError, OSError) as e:  # a manifest unreadable, rows refused
        return [], [str(e)]
    ok = [r for r in rows if r.ok]
    problems = []
    doubled = sorted(k for k, n in Counter(r.key for r in ok).items() if n > 1)
    if doubled:
        problems.append(f"{len(doubled)} trials ok more than once ({doubled[0]} first)")
    if missing:
        problems.append(f"{missing} trials missing")
    return ok, problems


def _netrepro(*args: str) -> list[str]:
    return [sys.executable, "-m", "netrepro", *args]


def _to_the_end(argv: list[str], log: Path, timeout: float) -> int | None:
    """Run `argv` in a process group of its own, its output to `log`; its exit status, or None (and the group
    SIGKILLed, and `clean` run) if it had not ended within `timeout`."""
    with open(log, "wb") as sink:
        run = subprocess.Popen(
            argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            return run.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
            subprocess.run(_netrepro("clean"), cwd=REPO, capture_output=True, check=False)
            return None


def resume(result: Round, argv: list[str], out: Path, before: MachineState, settle: float) -> None:
    """The killed round's command again, to its end: it must exit 0 with every trial ok once and none
    missing, and leave the machine as it was before the round."""
    code = _to_the_end(argv, out / "resume.log", RESUME_S)
    ok, problems = completed(out)
    result.resumed = f"exit {code}, {len(ok)} trials ok"
    if code != 0:
        problems.insert(0, "resume did not end in time" if code is None else f"resume exited {code}")
    left, _ = wait_until_as_before(before, settle, step_s=0.5)
    result.resume_problems += problems + [f"after the resume: {x}" for x in left]


def one_round(
    how: str,
    after_s: float,
    out: Path,
    settle: float = SETTLE_S,
    sshd: Sshd | None = None,
    jobs: int = 0,
    again: bool = False,
    before: MachineState | None = None,
) -> Round:
    """Run the figure into `out` (on a cluster launched through `sshd`, or with `jobs` labs side by side,
    if given), interrupt it `after_s` seconds in, clean up if killed, compare with `before` (the machine
    as the soak found it; by default as the round finds it); with `again`, a killed run is then resumed
    to its end (`resume`)."""
    result = Round(how, after_s)
    before = _as_found(before, result, settle)
    certificates = remote_certificate_copies()
    killed = how.startswith("SIGKILL")
    launched: dict[int, tuple[int | None, str]] = {}
    on_cluster = ["--hosts", "root@127.0.0.1", "--ssh-config", str(sshd.config)] if sshd else []
    on_cluster += ["--jobs", str(jobs)] if jobs else []
    figure = JOBS_FIGURE if jobs else FIGURE
    argv = _netrepro(*figure, "--out", str(out), *on_cluster)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "run.log", "wb") as log:
        run = subprocess.Popen(
            argv,
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
    if again and killed and not result.left:
        resume(result, argv, out, before, settle)
    return result


def _as_found(before: MachineState | None, result: Round, settle: float) -> MachineState:
    """The state a round must leave: `before` (the machine as the soak found it), once the round finds the
    machine back in it (what an earlier round's kernel still frees, a struct_ops held by closing sockets, is
    waited for, so that its going is not read as this round's doing); a round that never finds it says so."""
    if before is None:
        return snapshot()
    left, _ = wait_until_as_before(before, settle, step_s=0.5)
    result.left += [f"before the round, not as the soak found it: {x}" for x in left]
    return before


def _server_address(pid: int) -> str:
    """The address a process's SSH session reached its host on (SSH_CONNECTION's third field), or ""."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return ""
    found = [e for e in environ if e.startswith(b"SSH_CONNECTION=")]
    fields = found[0].split(b"=", 1)[1].split() if found else []
    return fields[2].decode() if len(fields) == 4 else ""


def kill_session(sshd: Sshd, address: str) -> list[int]:
    """SIGKILL the SSH sessions to `address` that run a node of the cluster: each session's sshd processes,
    between the daemon and the node.  The pids killed."""
    nodes = [
        pid
        for pid, (_, line) in descendants(sshd.pid).items()
        if "netrepro.engine.node" in line and _server_address(pid) == address
    ]
    sessions = set()
    for node in nodes:
        up = proc.parent(node)
        while up is not None and up > 1 and up != sshd.pid:
            if proc.command_name(up).startswith("sshd"):
                sessions.add((up, start_time(up)))
            up = proc.parent(up)
    for pid, started in sessions:
        if start_time(pid) == started:
            os.kill(pid, signal.SIGKILL)
    return sorted(pid for pid, _ in sessions)


def session_round(out: Path, sshd: Sshd, settle: float = SETTLE_S, before: MachineState | None = None) -> Round:
    """A `--hosts` run over `sshd`'s two addresses whose second host's SSH session is SIGKILLed once a trial
    of its own is home: the run must end by itself with every trial ok once, its launched processes and
    labs gone, `clean` find nothing of it, and a resume of it nothing to do."""
    result = Round("SIGKILL session", 0.0)
    before = _as_found(before, result, settle)
    certificates = remote_certificate_copies()
    victim = sshd.addresses[-1]
    hosts = ",".join(f"root@{a}" for a in sshd.addresses)
    argv = _netrepro(*HOSTS_FIGURE, "--out", str(out), "--hosts", hosts, "--ssh-config", str(sshd.config))
    out.mkdir(parents=True, exist_ok=True)
    launched: dict[int, tuple[int | None, str]] = {}
    theirs: set[str] = set()  # the killed host's settings, as its rows name them
    began = time.monotonic()
    with open(out / "run.log", "wb") as log:
        run = subprocess.Popen(
            argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        while run.poll() is None and not theirs and time.monotonic() - began < RESUME_S:
            launched.update(descendants(sshd.pid))
            written = sorted(p for p in out.rglob("*.csv") if p.is_file())
            try:
                rows = read_rows(written[0]) if written else []
            except (SetupError, UserError):  # a row being written
                rows = []
            theirs = {shards.setting(r) for r in rows if f"//{victim}:" in r.worker and r.ok}
            time.sleep(0.2)
        if theirs:
            result.after_s = time.monotonic() - began
            launched.update(descendants(sshd.pid))
            if not kill_session(sshd, victim):
                result.left.append(f"no SSH session to {victim} running a node was found to kill")
        else:
            result.left.append(f"no row from {victim} came home before the run ended")
        try:
            result.exit_code = run.wait(timeout=RESUME_S)
        except subprocess.TimeoutExpired:
            result.left.append(f"the run had not ended {RESUME_S:.0f} s after the session was killed")
            os.killpg(run.pid, signal.SIGKILL)
            result.exit_code = run.wait()
    result.launched = len(launched)
    if result.exit_code != 0:
        result.left.append(f"the run exited {result.exit_code}, not 0")
    ok, problems = completed(out)
    result.rows = len(ok)
    result.csv_problems = problems
    result.handed = sum(1 for r in ok if shards.setting(r) in theirs and f"//{victim}:" not in r.worker)
    if theirs and not result.handed:
        result.left.append(f"none of the trials of {victim}'s settings was run by another host")
    ended = time.monotonic()
    while still_running(launched) and time.monotonic() - ended < LAUNCHED_END_S:
        time.sleep(0.5)
    if still_running(launched):
        result.left.append(f"launched over SSH, still running {LAUNCHED_END_S:.0f} s after: {still_running(launched)}")
    done = subprocess.run(_netrepro("clean"), cwd=REPO, capture_output=True, text=True, check=False)
    result.clean_output = (done.stdout + done.stderr).strip()
    left, result.settle_s = wait_until_as_before(before, settle, step_s=0.5)
    result.left += left
    if remote_certificate_copies() != certificates:
        result.left.append("the host's copy of the run's certificate is left")
    resume(result, argv, out, before, settle)
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
    again: bool = False,
) -> list[Round]:
    """The seeded plan's rounds, each reported as it ends; on a cluster launched through `sshd`, or with
    `jobs` labs side by side, if given; with `again`, each killed run resumed to its end."""
    results = []
    found = snapshot()  # every round must leave the machine as the soak found it
    for i, (how, after_s) in enumerate(plan(rounds, seed, signals)):
        result = one_round(how, after_s, work / f"round-{i:03d}", sshd=sshd, jobs=jobs, again=again, before=found)
        results.append(result)
        if report is not None:
            report(result)
    return results
