"""A run's own cgroup (v2): every process the run starts is inside, and none can escape.

The run moves itself into a new group, a child of the one it started in, so
that each process it forks (Mininet's host shells, servers, clients, the
delay line, QEMU, and whatever those fork in turn) is a member from birth,
whatever session or process group it makes for itself.  Ending the run's
processes is then one write to `cgroup.kill` (Linux 5.14 and later), which
SIGKILLs every member at once: no process can slip away by forking or by
ignoring a signal.  Only groups this run created are ever touched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

from ground.errors import SetupError

log = logging.getLogger("netrepro.cgroups")

# The pure v2 hierarchy, or the v2 half of a hybrid one (systemd's "unified").
MOUNTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))


class CgroupError(SetupError):
    """The run's cgroup could not be made, entered or emptied."""


def hierarchy() -> Path | None:
    """The mount point of the cgroup v2 hierarchy whose groups can be killed, or None."""
    for mount in MOUNTS:
        if (mount / "cgroup.procs").exists() and (mount / "cgroup.controllers").exists():
            # cgroup.kill exists in every non-root group of a 5.14+ kernel; the root has none.
            return mount
    return None


def current(pid: int | str = "self", mount: Path | None = None) -> Path | None:
    """The v2 group a process is in, as a directory under the mount (None without v2)."""
    mount = mount or hierarchy()
    if mount is None:
        return None
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return mount / line[3:].lstrip("/")
    return None


def usable() -> bool:
    """Can this process make groups (root, with a v2 hierarchy mounted)?  Whether the kernel
    has cgroup.kill shows once a group exists (`killable`)."""
    return os.geteuid() == 0 and current() is not None


def killable(path: Path) -> bool:
    return (path / "cgroup.kill").exists()


def group_path(owner: str) -> Path:
    """Where this run's group goes: below the group the run starts in."""
    here = current()
    if here is None:
        raise CgroupError("no cgroup v2 hierarchy is mounted")
    return here / f"netrepro-{owner}"


def create(path: Path) -> None:
    """Make the group (the ledger has recorded it first)."""
    try:
        path.mkdir(mode=0o755)
    except FileExistsError as e:
        raise CgroupError(f"{path} exists already: not this run's, not touching it") from e


def enter(path: Path, pid: int | str = 0) -> None:
    """Move a process (0: this one, with all its threads) into the group."""
    (path / "cgroup.procs").write_text(f"{pid}\n")


def cpu_seconds(path: Path | None) -> float | None:
    """The CPU time (user and system) of every process that has been in the group and below, from its
    `cpu.stat` (present in every v2 group, whichever controllers are enabled); None without one."""
    if path is None:
        return None
    try:
        for line in (path / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
    except (OSError, ValueError):
        return None
    return None


def members(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except FileNotFoundError:
        return []


def populated(path: Path) -> bool:
    """Does the group or any group below it hold a process?"""
    try:
        for line in (path / "cgroup.events").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "populated":
                return value.strip() == "1"
    except FileNotFoundError:
        return False
    return bool(members(path))


def kill(path: Path, settle: float = 10.0) -> None:
    """SIGKILL every process in the group and below, wait until it is empty, remove it."""
    if not path.is_dir():
        return
    if os.getpid() in members(path):
        raise CgroupError(f"{path}: this process is still inside; leave() first")
    (path / "cgroup.kill").write_text("1\n")
    deadline = time.monotonic() + settle
    while populated(path):
        if time.monotonic() > deadline:
            raise CgroupError(f"{path}: processes {members(path)} still there {settle:g} s after cgroup.kill")
        time.sleep(0.02)
    remove(path)


def remove(path: Path) -> None:
    """Remove an empty group and any empty groups below it (a nested run's, already ended)."""
    for child in sorted((p for p in path.glob("*/") if p.is_dir()), reverse=True):
        remove(child)
    with contextlib.suppress(FileNotFoundError):
        path.rmdir()


def leave(path: Path, origin: Path) -> None:
    """Move this process back where it came from, if it is still in `path`."""
    if os.getpid() not in members(path):
        return
    target = origin if origin.is_dir() else path.parent
    enter(target)
