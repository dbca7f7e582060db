"""The lock that lets one run at a time write a figure's CSV.

Two runs appending to one CSV would interleave their rows and each resume
from a file the other is changing, so a run holds an exclusive flock on a
lock file named after the CSV for as long as it runs.  The lock files live in
/run/netrepro/locks (NETREPRO_LOCK_DIR overrides it; without root, the
user's runtime directory); the holder writes its
pid into its file, so that a refused run can say who holds the figure.  The
kernel drops a flock when its holder dies, however it dies: a stale lock
file locks nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ground.errors import SetupError

DEFAULT_LOCK_DIR = Path("/run/netrepro/locks")


class FigureBusy(SetupError):
    """Another run holds this figure's CSV."""


def lock_dir() -> Path:
    """Where the lock files are (read when a lock is taken, so a test can point it elsewhere).

    A run without root (`--plot-only`) cannot write /run/netrepro: its locks
    are in the user's runtime directory, one the user owns.
    """
    if os.environ.get("NETREPRO_LOCK_DIR"):
        return Path(os.environ["NETREPRO_LOCK_DIR"])
    if os.geteuid() == 0:
        return DEFAULT_LOCK_DIR
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return (
        Path(runtime, "netrepro", "locks") if runtime else Path(tempfile.gettempdir(), f"netrepro-{os.getuid()}-locks")
    )


def lock_path(csv_path: Path) -> Path:
    """The lock file of a CSV: named from its resolved path, so every way of naming one file shares one lock."""
    digest = hashlib.sha256(str(csv_path.resolve()).encode()).hexdigest()[:24]
    return lock_dir() / f"{digest}.lock"


def _holder(fd: int) -> str:
    text = os.pread(fd, 200, 0).decode(errors="replace").split()
    return text[0] if text else "unknown"


@contextlib.contextmanager
def holding(csv_path: Path) -> Iterator[Path]:
    """Hold the CSV's lock for the duration of the block, or raise FigureBusy at once."""
    path = lock_path(csv_path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755 if os.geteuid() == 0 else 0o700)
    if path.parent.lstat().st_uid != os.geteuid():  # a directory planted by someone else locks nothing of ours
        raise SetupError(f"{path.parent} belongs to another user: set NETREPRO_LOCK_DIR to a directory of yours")
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise FigureBusy(
                f"{csv_path} is busy: another run (pid {holder}) is writing it. Wait for it to end, "
                "or give this run its own results directory (--out DIR) to run beside it"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        # The previous holder unlinks its file as it lets go: a lock won on a
        # file no longer at `path` is no lock, so take the one that is there.
        try:
            still_there = os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False))
        except FileNotFoundError:
            still_there = False
        if still_there:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {csv_path.resolve()}\n".encode(), 0)
        yield csv_path
    finally:
        path.unlink(missing_ok=True)  # while still held, so that no one can have locked this file meanwhile
        os.close(fd)


def remove_stale() -> list[str]:
    """Remove the lock files of runs that died (SIGKILL leaves the file, never the lock): each file no
    live run holds is taken and unlinked while held, as a holder lets go; a held one is left alone."""
    directory = lock_dir()
    if not directory.is_dir() or directory.is_symlink() or directory.lstat().st_uid != os.geteuid():
        return []
    removed = []
    for path in sorted(directory.glob("*.lock")):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:  # gone meanwhile, or a link planted here
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            if os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False)):
                path.unlink()
                removed.append(f"removed the stale figure lock {path} ({_holder(fd)})")
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)
    return removed
