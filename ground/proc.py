"""Running external commands: checked, logged, in a chosen network namespace.

Every command is an argument list (never a shell string), started in a
session of its own.  `run` waits for a command and raises `CommandError`
with the command, its namespace and its stderr when it fails; a command cut
short (a time limit, a signal to the run) is killed with its whole group
before the error goes on.  `Process` owns a long-running child: it records
it in the run's ledger the moment it exists, with the run's signals held off
in between, and stops it with SIGINT, then SIGTERM, then SIGKILL, reaping it
each time.  A namespace is entered through a file descriptor held since it
was made (`Netns.open`), never through a pid that could be reused.  A
namespace is told from another by its cookie (`netns_cookie`), which the
kernel never gives twice in one boot, unlike the inode number.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol

from ground.errors import NetreproError, SetupError

log = logging.getLogger("netrepro.cmd")


class Journal(Protocol):
    """Where a Process records itself: the run's ledger (ground.ledger.Ledger), which imports this module."""

    def process(self, pid: int, start: int, argv: list[str]) -> int: ...


class NamespaceError(SetupError):
    """A namespace that is gone, or that turned out to be the run's own (root) namespace."""


def netns_inode(pid: int | str = "self") -> int | None:
    """The inode of a process's network namespace (None if the process is gone)."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


BOOT_ID = "/proc/sys/kernel/random/boot_id"
SO_NETNS_COOKIE = 71  # linux/socket.h, Linux 5.14 and later
CLONE_NEWNET = 0x40000000


def boot_id() -> str | None:
    """This boot's id: pids, start times, namespace inodes and cookies mean nothing across boots."""
    try:
        with open(BOOT_ID, encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _own_netns_cookie() -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        (cookie,) = struct.unpack("=Q", sock.getsockopt(socket.SOL_SOCKET, SO_NETNS_COOKIE, 8))
        return int(cookie)


def _setns(fd: int) -> None:
    setns = getattr(os, "setns", None)  # Python 3.12 and later
    if setns is not None:
        setns(fd, CLONE_NEWNET)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def netns_cookie(fd: int | None = None) -> int | None:
    """The cookie of the network namespace `fd` refers to (None: this thread's own): a number the
    kernel gives each namespace once and never again in the same boot (SO_NETNS_COOKIE, Linux
    5.14+), read from a socket opened inside it, by a thread of its own that enters it and ends.
    None where the kernel cannot say (an older kernel, a namespace that is gone)."""
    if fd is None:
        try:
            return _own_netns_cookie()
        except OSError:
            return None
    found: list[int] = []

    def inside() -> None:
        with contextlib.suppress(OSError):
            _setns(fd)  # this thread only; it ends right after
            found.append(_own_netns_cookie())

    thread = threading.Thread(target=inside, name="netns-cookie", daemon=True)
    thread.start()
    thread.join()
    return found[0] if found else None


@dataclass(frozen=True)
class Netns:
    """A network namespace, named for logs, entered through a descriptor this run holds.

    `fd` refers to the namespace itself: it cannot come to point elsewhere
    when the process that made the namespace dies and its pid is reused.
    """

    name: str
    pid: int | None = None  # None: the root namespace
    fd: int | None = None
    inode: int | None = None

    @classmethod
    def open(cls, name: str, pid: int) -> Netns:
        """Take hold of the namespace process `pid` lives in; refuse the run's own namespace."""
        try:
            fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except (FileNotFoundError, ProcessLookupError) as e:
            raise NamespaceError(f"{name}: process {pid} is gone, and its namespace with it") from e
        inode = os.fstat(fd).st_ino
        if inode == netns_inode():
            os.close(fd)
            raise NamespaceError(f"{name}: process {pid} is in the run's own (root) namespace; refusing to act there")
        return cls(name, pid, fd, inode)

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (self.fd,) if self.fd is not None else ()

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The argument list that runs argv inside this namespace."""
        if self.pid is None:
            return list(argv)
        if self.fd is None:
            raise NamespaceError(f"{self.name}: no handle on the namespace (Netns.open makes one)")
        # nsenter inherits the descriptor (pass_fds) and opens it as its own.
        return ["nsenter", f"--net=/proc/self/fd/{self.fd}", "--", *argv]


ROOT = Netns("root")

HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold off SIGINT, SIGTERM and SIGHUP (they are raised again when this ends): a change
    and its record in the ledger are made together or not at all.

    Deferred in Python, not masked: a process-directed signal masked in the
    main thread is taken by any other thread (a trace reader), and Python
    runs its handler in the main thread all the same.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: arrived.append(signum)) for sig in HELD_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(arrived):
            signal.raise_signal(signum)


class CommandError(NetreproError):
    """An external command that failed; says what, where and why."""

    def __init__(self, argv: Sequence[str], ns: Netns, returncode: int | None, stderr: str) -> None:
        what = "timed out" if returncode is None else f"exited {returncode}"
        detail = stderr.strip()[-2000:]
        super().__init__(f"[{ns.name}] {' '.join(argv)}: {what}" + (f": {detail}" if detail else ""))
        self.argv = list(argv)
        self.ns = ns
        self.returncode = returncode
        self.stderr = stderr


# Called around every command `run` runs, with its argv: what watches them (ground.ledger notes the
# modules the kernel loads for a run's own commands).  Whoever adds a watcher removes it.
CommandWatcher = Callable[[Sequence[str]], contextlib.AbstractContextManager[object]]
command_watchers: list[CommandWatcher] = []


def run(
    argv: Sequence[str],
    ns: Netns = ROOT,
    *,
    check: bool = True,
    timeout: float | None = 60.0,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run argv in ns to completion and return its output.

    The command runs in a session of its own; whatever ends the wait early
    (its time limit, a signal to the run, an error) kills its whole group.
    """
    log.debug("[%s] %s", ns.name, " ".join(argv))
    with contextlib.ExitStack() as watched:
        for watcher in list(command_watchers):
            watched.enter_context(watcher(argv))
        return _run(argv, ns, check=check, timeout=timeout, input=input)


def _run(
    argv: Sequence[str], ns: Netns, *, check: bool, timeout: float | None, input: str | None
) -> subprocess.CompletedProcess[str]:
    popen = subprocess.Popen(
        ns.wrap(argv),
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        pass_fds=ns.pass_fds,
    )
    try:
        stdout, stderr = popen.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        _kill_group(popen)
        _, stderr = popen.communicate()
        raise CommandError(argv, ns, None, stderr or "") from e
    except BaseException:
        _kill_group(popen)
        popen.wait()
        raise
    done = subprocess.CompletedProcess(popen.args, popen.returncode, stdout, stderr)
    if check and done.returncode != 0:
        raise CommandError(argv, ns, done.returncode, done.stderr)
    return done


def _kill_group(popen: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, signal.SIGKILL)


def start_time(pid: int) -> int | None:
    """The kernel's start time of pid (clock ticks since boot), or None if gone.

    A pid and its start time together name one process for good, so a pid
    reused by an unrelated process is never mistaken for ours.
    """
    fields = _stat_fields(pid)
    if fields is None or fields[0] == "Z":  # a zombie has already ended
        return None
    return int(fields[19])


def is_alive(pid: int, started: int) -> bool:
    return start_time(pid) == started


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat[stat.rindex(")") + 2 :].split()


def parent(pid: int) -> int | None:
    """The process's parent pid, or None where the process is gone."""
    fields = _stat_fields(pid)
    return int(fields[1]) if fields is not None else None


def command_name(pid: int) -> str:
    """The process's command name (/proc/<pid>/comm), or "" where it is gone."""
    try:
        with open(f"/proc/{pid}/comm", encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


def group_members(pgid: int, started: int) -> list[int]:
    """Live processes of the group `pgid` led (or once led) by the process that started at `started`.

    A group outlives its leader while any member lives, and its id cannot be
    reused until then; members started before the leader cannot be its own.
    """
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is None or fields[0] == "Z":
            continue
        if int(fields[2]) == pgid and int(fields[19]) >= started:
            found.append(int(entry.name))
    return found


def terminate(pid: int, started: int, grace: float = 2.0) -> None:
    """End the process group led by (pid, started): SIGINT, SIGTERM, then SIGKILL.

    Only a process whose start time still matches is signalled, and where the
    leader has died, the members of its group that started after it.  Used
    for processes that are not our children (a `clean` after a killed run).
    """
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        leader = is_alive(pid, started)
        members = group_members(pid, started)
        if not leader and not members:
            return
        if leader:
            try:
                os.killpg(pid, sig)
            except PermissionError:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        else:  # the leader is gone: its group id is still ours while members live
            for member in members:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(member, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and (is_alive(pid, started) or group_members(pid, started)):
            time.sleep(0.02)


def processes_in_netns(inodes: Collection[int]) -> list[int]:
    """Every live process whose network namespace is one of `inodes` (found by inode, not name)."""
    wanted = set(inodes)
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and netns_inode(entry.name) in wanted and start_time(int(entry.name)) is not None:
            found.append(int(entry.name))
    return found


def kill_netns_processes(inodes: Collection[int], settle: float = 10.0) -> list[int]:
    """SIGKILL every process inside the namespaces `inodes` and wait for them to go; return those killed."""
    killed = processes_in_netns(inodes)
    for pid in killed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + settle
    while processes_in_netns(inodes) and time.monotonic() < deadline:
        time.sleep(0.02)
    return killed


class Process:
    """A long-running child process that this run owns."""

    def __init__(
        self,
        argv: Sequence[str],
        ns: Netns = ROOT,
        *,
        ledger: Journal | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stdout: int | IO[bytes] | None = subprocess.PIPE,
        stderr: int | IO[bytes] | None = subprocess.PIPE,
        label: str | None = None,
        env: Mapping[str, str] | None = None,
        pass_fds: Sequence[int] = (),
    ) -> None:
        """`pass_fds`: descriptors the child keeps, at the same numbers, beside the namespace's."""
        self.argv = list(argv)
        self.ns = ns
        self.label = label or argv[0]
        log.debug("[%s] start: %s", ns.name, " ".join(argv))
        with signals_held():  # started and recorded together, or not at all
            self.popen = subprocess.Popen(
                ns.wrap(argv),
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                env=env,
                start_new_session=True,  # its own group, so stop() reaches its children
                pass_fds=(*ns.pass_fds, *pass_fds),
            )
            self.pid = self.popen.pid
            started = start_time(self.pid)
            self.started = started if started is not None else -1
            if ledger is not None:
                try:
                    ledger.process(self.pid, self.started, self.argv)
                except BaseException:
                    self.stop()  # a child the ledger does not know of must not live on
                    raise

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
