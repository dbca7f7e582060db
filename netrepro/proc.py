"""Running external commands: checked, logged, in a chosen network namespace.

Every command is an argument list (never a shell string).  `run` waits for a
command and raises `CommandError` with the command, its namespace and its
stderr when it fails.  `Process` owns a long-running child: it starts it in
its own session, records it in the run's ledger, and stops it with SIGINT,
then SIGTERM, then SIGKILL, reaping it each time.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from netrepro.ledger import Ledger

log = logging.getLogger("netrepro.cmd")


@dataclass(frozen=True)
class Netns:
    """A network namespace, named for logs, entered through a process living in it."""

    name: str
    pid: int | None = None  # None: the root namespace

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The argument list that runs argv inside this namespace."""
        if self.pid is None:
            return list(argv)
        return ["nsenter", f"--net=/proc/{self.pid}/ns/net", "--", *argv]


ROOT = Netns("root")


class CommandError(RuntimeError):
    """An external command that failed; says what, where and why."""

    def __init__(self, argv: Sequence[str], ns: Netns, returncode: int | None, stderr: str) -> None:
        what = "timed out" if returncode is None else f"exited {returncode}"
        detail = stderr.strip()[-2000:]
        super().__init__(f"[{ns.name}] {' '.join(argv)}: {what}" + (f": {detail}" if detail else ""))
        self.argv = list(argv)
        self.ns = ns
        self.returncode = returncode
        self.stderr = stderr


def run(
    argv: Sequence[str],
    ns: Netns = ROOT,
    *,
    check: bool = True,
    timeout: float | None = 60.0,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run argv in ns to completion and return its output."""
    log.debug("[%s] %s", ns.name, " ".join(argv))
    try:
        done = subprocess.run(
            ns.wrap(argv),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise CommandError(argv, ns, None, stderr) from e
    if check and done.returncode != 0:
        raise CommandError(argv, ns, done.returncode, done.stderr)
    return done


def start_time(pid: int) -> int | None:
    """The kernel's start time of pid (clock ticks since boot), or None if gone.

    A pid and its start time together name one process for good, so a pid
    reused by an unrelated process is never mistaken for ours.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie has already ended
        return None
    return int(fields[19])


def is_alive(pid: int, started: int) -> bool:
    return start_time(pid) == started


def terminate(pid: int, started: int, grace: float = 2.0) -> None:
    """End the process group led by (pid, started): SIGINT, SIGTERM, then SIGKILL.

    Only a process whose start time still matches is signalled.  Used for
    processes that are not our children (a `clean` after a killed run).
    """
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if not is_alive(pid, started):
            return
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and is_alive(pid, started):
            time.sleep(0.02)


class Process:
    """A long-running child process that this run owns."""

    def __init__(
        self,
        argv: Sequence[str],
        ns: Netns = ROOT,
        *,
        ledger: Ledger | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stdout: int | IO[bytes] | None = subprocess.PIPE,
        stderr: int | IO[bytes] | None = subprocess.PIPE,
        label: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.ns = ns
        self.label = label or argv[0]
        log.debug("[%s] start: %s", ns.name, " ".join(argv))
        self.popen = subprocess.Popen(
            ns.wrap(argv),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            env=env,
            start_new_session=True,  # its own group, so stop() reaches its children
        )
        self.pid = self.popen.pid
        started = start_time(self.pid)
        self.started = started if started is not None else -1
        if ledger is not None:
            ledger.record({"kind": "process", "pid": self.pid, "start": self.started, "argv": self.argv})

    def running(self) -> bool:
        return not self._exited()

    def _exited(self) -> bool:
        """Has the leader exited?  Asks without reaping it, so its pid (and
        so its group id) cannot be reused while we still signal the group."""
        if self.popen.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def stop(self, grace: float = 2.0) -> int:
        """Stop the process and its group; return its exit status."""
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            if self._exited():
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, sig)
            deadline = time.monotonic() + grace
            while not self._exited() and time.monotonic() < deadline:
                time.sleep(0.01)
        if self.popen.returncode is None:
            # Children of the group may outlive the leader; the unreaped
            # leader keeps the group id ours until they are gone.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
        code = self.popen.wait()
        for pipe in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if pipe is not None:
                pipe.close()
        log.debug("[%s] stopped %s (pid %d): %d", self.ns.name, self.label, self.pid, code)
        return code

    def wait(self, timeout: float | None = None) -> int:
        return self.popen.wait(timeout=timeout)
