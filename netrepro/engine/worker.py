"""What a cluster's worker runs: one path setting's trials, on a lab of its own, rows sent home.

The coordinator (netrepro.engine.cluster) submits `run_setting` once per path
setting.  It runs in a thread of a Dask worker, where neither signals nor
a lab's clean-up on a kill can work, so it starts this module as a process
of its own (`python -m netrepro.engine.worker`), which runs the trials exactly as a
local run does (`sweep.run_trials`: the lab once, verified, then each trial)
and speaks a line protocol with the thread:

- in, on stdin: the job (one line: cloudpickle, base64), then one answer a
  line, `run` or `skip`, to each question;
- out, on file descriptor 3: JSON lines: `{"ask": KEY}` before each trial
  (a trial whose row the coordinator already has is skipped: one run
  elsewhere, on a worker that died after sending its row, counts),
  `{"row": ROW}` after it, `{"verifications": ...}` at the end, or
  `{"refused": WHY}` / `{"error": WHY}`.

The thread answers the questions from the run's `done` variable, puts each
row on the run's queue (both live on the scheduler), and returns the
verifications.  Before its first trial the process checks that it runs the
coordinator's code (commit, and the same uncommitted changes if any) and
that the machine passes the figure's doctor (`preflight.check_machine`);
either mismatch is a refusal, and so is a lab that would run with another
backend, switch, kernel or implementation than the run agreed on
(netrepro.engine.agree: a worker that joined after the run asked its
hosts), or, for a running scheduler, a worker reached over plain TCP from
another machine.  The process dies with the worker that started
it (PR_SET_PDEATHSIG: SIGTERM, on which it unwinds its lab), and with the
run: a stop event the thread watches.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import platform
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import IO, Any

from ground import kernel, logs, results
from ground.errors import NetreproError, SetupError, UserError
from ground.ledger import Ledger
from ground.results import REPO
from netrepro.runner import preflight, sweep
from netrepro.studykit.spec import Figure
from netrepro.studykit.trial import Trial

PROTOCOL_FD = 3
PR_SET_PDEATHSIG = 1
STOP_POLL_SECONDS = 1.0


class WorkerRefused(UserError):
    """A worker's machine or code is not the coordinator's: it runs no trial."""


class WorkerFailed(SetupError):
    """A worker's trials stopped: its lab, its server or five failed trials in a row."""


@dataclass(frozen=True)
class Job:
    """One path setting's trials, and what the worker must match."""

    figure: Figure
    todo: list[Trial]
    quick: bool
    overrides: dict[str, Any]
    seed: int
    strict: bool
    shaper: str
    switch: str
    cc_impl: str | None
    code: str  # results.code_fingerprint() of the coordinator
    rows: str  # the run's Dask queue of rows
    done: str  # the run's Dask variable: trial keys with a successful row
    stop: str  # the run's Dask event: stop now
    # --jobs: the variants the coordinator holds loaded for every lab on this machine, with their row columns
    held: dict[str, dict[str, Any]] = field(default_factory=dict)
    expected: dict[str, Any] = field(default_factory=dict)  # the run's setup (agree.Agreed.expected); {}: any
    plain_tcp_ok: bool = True  # False: a worker reached over plain TCP from another machine refuses


# -- in the Dask worker's thread ----------------------------------------------------------------


def run_setting(job: Job) -> dict[str, Any]:
    """Run `job` in a process of its own; relay its rows and questions; return its verifications."""
    from distributed import Event, Queue, Variable, get_worker

    from netrepro.engine.agree import unsafe_workers

    worker = get_worker()
    machine = {"worker": worker.address, "host": platform.node(), "kernel": kernel.release()}
    if not job.plain_tcp_ok and unsafe_workers([worker.address]):
        raise WorkerRefused(
            f"worker {worker.address} ({machine['host']}) refused: it is reached over plain TCP from another "
            "machine; start it with TLS, or give --insecure"
        )
    rows, done, stop = Queue(job.rows), Variable(job.done), Event(job.stop)
    with tempfile.TemporaryFile("w+", prefix="netrepro-worker-") as log_file:
        child, read_end = start_trial_process(job, log_file)
        answers = child.stdin
        assert answers is not None
        ending: dict[str, Any] = {}
        try:
            for msg in _messages(read_end, child, stop):
                if "ask" in msg:
                    keys = set(done.get())
                    with contextlib.suppress(BrokenPipeError):  # it died: its end is below
                        answers.write(("skip" if msg["ask"] in keys else "run") + "\n")
                        answers.flush()
                elif "row" in msg:
                    rows.put({"row": msg["row"], **machine})
                else:
                    ending = msg
        finally:
            os.close(read_end)
            _end(child)
        if "verifications" in ending:
            return {"verifications": ending["verifications"], **machine}
        log_file.seek(0)
        tail = "".join(log_file.readlines()[-20:])
        where = f"worker {worker.address} ({machine['host']})"
        if "refused" in ending:
            raise WorkerRefused(f"{where} refused: {ending['refused']}")
        if "error" in ending:
            raise WorkerFailed(f"{where}: {ending['error']}")
        if stop.is_set():
            return {"verifications": {}, "stopped": True, **machine}
        raise WorkerFailed(f"{where}: its trial process ended (exit {child.returncode}) without a result:\n{tail}")


def start_trial_process(job: Job, log_file: IO[str]) -> tuple[subprocess.Popen[str], int]:
    """`python -m netrepro.engine.worker`, given the job; its output to log_file.  Returns it and the
    protocol's read end."""
    read_end, write_end = os.pipe()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "netrepro.engine.worker"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            pass_fds=(write_end,),
            env={**os.environ, "NETREPRO_PARENT_PID": str(os.getpid()), "NETREPRO_PROTOCOL_FD": str(write_end)},
            text=True,
        )
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    assert child.stdin is not None
    child.stdin.write(base64.b64encode(_dumps(job)).decode() + "\n")
    child.stdin.flush()
    return child, read_end


def _dumps(job: Job) -> bytes:
    import cloudpickle  # Dask's own serialiser: the figure's callables go by reference or by value

    return bytes(cloudpickle.dumps(job))


def _messages(protocol: int, child: subprocess.Popen[str], stop: Any) -> Iterator[dict[str, Any]]:
    """The process's messages until it closes the protocol; it is stopped once the run's stop is set.

    Read unbuffered: a buffered reader may hold a second line that select() then never reports.
    """
    pending = b""
    asked, stopping = time.monotonic(), False
    while True:
        ready, _, _ = select.select([protocol], [], [], STOP_POLL_SECONDS)
        # at most once a second (a call to the scheduler), and one SIGTERM: a second would cut its unwinding short
        if not stopping and time.monotonic() - asked >= STOP_POLL_SECONDS:
            asked = time.monotonic()
            if stop.is_set() and child.poll() is None:
                child.send_signal(signal.SIGTERM)  # it unwinds its lab, then closes the protocol
                stopping = True
        if not ready:
            continue
        chunk = os.read(protocol, 1 << 16)
        if not chunk:
            return
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            yield json.loads(line)


def _end(child: subprocess.Popen[str], grace: float = 60.0) -> None:
    """The process gone: it was asked to end (SIGTERM) if it had not, and given time to unwind its lab."""
    with contextlib.suppress(OSError):
        if child.stdin is not None:
            child.stdin.close()
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
    try:
        child.wait(grace)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


# -- in the trial process -------------------------------------------------------------------------


class _Rows:
    """sweep.run_trials's trial log, here: each row goes to the worker's thread."""

    def __init__(self, say: Any) -> None:
        self.say = say

    def append(self, row: dict[str, Any]) -> None:
        self.say(row=row)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # every `with` and `finally` unwinds the lab


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if str(os.getppid()) != os.environ.get("NETREPRO_PARENT_PID"):  # it died before the line above
        raise SystemExit(1)


def main() -> int:
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    _die_with_parent()
    logs.configure(verbose=False)
    protocol = os.fdopen(int(os.environ.get("NETREPRO_PROTOCOL_FD", PROTOCOL_FD)), "w")

    def say(**msg: Any) -> None:
        protocol.write(json.dumps(msg, default=str) + "\n")
        protocol.flush()

    import pickle

    job: Job = pickle.loads(base64.b64decode(sys.stdin.readline()))
    fig = job.figure
    here = results.code_fingerprint()
    if here != job.code:
        say(refused=f"it runs code {here}, the coordinator {job.code}; check out the coordinator's commit there")
        return 2
    try:
        grid = [t.setting for t in job.todo]
        preflight.check_machine(
            preflight.figure_needs(fig, grid, {**fig.overrides, **job.overrides}, job.shaper, job.cc_impl, job.held)
        )
    except NetreproError as e:
        say(refused=f"its machine fails the doctor for {fig.full_name}: {e}")
        return 2
    if job.expected:  # the setup the run agreed on before its first trial: a worker that joined later, too
        from netrepro.engine.agree import differences
        from netrepro.runner import resume

        differs = differences(job.expected, resume.planned_setup(fig, grid, job.shaper, job.switch, job.cc_impl))
        if differs:
            say(refused=f"its lab would run with {differs}; one CSV holds one setup")
            return 2

    def claim(key: str) -> bool:
        say(ask=key)
        return sys.stdin.readline().strip() == "run"

    try:
        # through a ledger: should this process be SIGKILLed with its worker, `run.sh clean` removes it
        with Ledger(contain=False) as ledger:
            out = ledger.temp_dir("netrepro-worker-out-")
            opts = sweep.Options(
                out=out,
                quick=job.quick,
                overrides=job.overrides,
                seed=job.seed,
                strict=job.strict,
                shaper=job.shaper,
                switch=job.switch,
                cc_impl=job.cc_impl,
                held_ccs=job.held,
            )
            verifications = sweep.run_trials(fig, job.todo, opts, _Rows(say), claim=claim)
    except NetreproError as e:
        say(error=str(e))
        return 1
    say(verifications=verifications)
    return 0


if __name__ == "__main__":
    sys.exit(main())
