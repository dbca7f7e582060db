"""The lock that lets one command at a time write a figure's CSV.

Two runs appending to one CSV would interleave their rows and each resume
from a file the other is changing; a merge that rewrites the CSV while a run
appends to it would lose the run's rows.  So every command that writes or
rewrites a CSV (a run, a resumed run, `merge --into`), root or not, holds an
exclusive lock on the file beside it, `<figure>.csv.lock`, from before it
reads the CSV until it is done with it.  A command that only reads it
(`--plot-only`) holds the lock shared: readers do not exclude one another,
and a writer excludes them all.  Neither waits: a lock another command holds
is refused at once (FigureBusy), naming its holder's pid (and host, where it
is another one).

The lock is an fcntl byte-range lock (`fcntl.lockf`, POSIX `F_SETLK`) of the
whole file, which NFSv4 honours across hosts, so two machines that share a
results directory (`--out` on NFS) exclude each other too.  NFSv3 without
lockd (or a mount with `nolock`, whose locks are local only) is not
supported: a lock that the filesystem refuses (ENOLCK) stops the command.  A
POSIX lock belongs to the process, not to the file descriptor, and closing
*any* descriptor of the file lets go of it: so this module opens a lock file
only once per process, and a second hold of one CSV within a process is
refused without opening the file again.

The kernel (or the NFS server, when the client's lease ends) drops a lock
when its holder dies, however it dies: a stale lock file locks nothing.  The
exclusive holder writes its pid and host into the file, hands the file back
to the sudo caller like the results beside it, and unlinks it as it lets go;
whoever finds, once locked, that the file it locked is no longer the one at
the path takes the one that is there.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import platform
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from ground.errors import SetupError
from ground.results import RESULTS, hand_back

log = logging.getLogger("netrepro.figurelock")

SUFFIX = ".lock"


class FigureBusy(SetupError):
    """Another command holds this figure's CSV."""


def lock_path(csv_path: Path) -> Path:
    """The lock file of a CSV: beside it, named after it (`fig3.csv.lock`), in its directory as resolved,
    so that every way of naming one file shares one lock."""
    csv_path = Path(csv_path)
    return csv_path.parent.resolve() / f"{csv_path.name}{SUFFIX}"


# The lock files this process holds, by path and by (device, inode): see the module's docstring.
_held: dict[str, tuple[int, int]] = {}
_held_guard = threading.Lock()


def _identity(fd_or_path: int | Path) -> tuple[int, int]:
    st = os.fstat(fd_or_path) if isinstance(fd_or_path, int) else os.stat(fd_or_path, follow_symlinks=False)
    return st.st_dev, st.st_ino


def _held_here(path: Path) -> bool:
    if str(path) in _held:
        return True
    try:
        return _identity(path) in _held.values()
    except OSError:
        return False


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder wrote it: `pid 123`, or `pid 123 on host` for another host."""
    text = os.pread(fd, 400, 0).decode(errors="replace").split()
    if not text:
        return "pid unknown"
    host = text[1] if len(text) > 1 else ""
    return f"pid {text[0]}" + (f" on {host}" if host and host != platform.node() else "")


def _busy(csv_path: Path, fd: int | None, shared: bool) -> FigureBusy:
    """The refusal: a writer holds the CSV (its pid from the file), or readers do (`--plot-only`)."""
    if fd is None:  # this very process holds it
        who = f"pid {os.getpid()}"
    else:
        who = _holder(fd)
        if not shared:
            try:  # only readers? they let a reader in, and wrote no pid
                fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                pass
            else:
                return FigureBusy(
                    f"{csv_path} is busy: another command is reading it (--plot-only); "
                    "wait for it to end, or give this run its own results directory (--out DIR) to run beside it"
                )
    return FigureBusy(
        f"{csv_path} is busy: another run ({who}) is writing it. Wait for it to end, "
        "or give this run its own results directory (--out DIR) to run beside it"
    )


def _open(path: Path, csv_path: Path, shared: bool) -> int | None:
    """The lock file, opened to be locked (made if missing); None where a reader can neither make nor open it.

    A writer that may not write the file (another user's: root's, run without sudo) is refused, as busy
    where its owner holds it now."""
    flags = os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o644)
    except PermissionError:
        if not shared:
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_RDONLY | flags)
                try:
                    if not _lock(fd, path, shared=True):
                        raise _busy(csv_path, fd, shared=True)
                finally:
                    os.close(fd)
            raise SetupError(
                f"{path}: cannot open the figure's lock file for writing (it, or its directory, is another "
                "user's): run the command as that user, or give it another --out"
            ) from None
    except OSError:
        if not shared:
            raise
    try:  # a reader may lock a file it may only read (F_RDLCK needs no more)
        return os.open(path, os.O_RDONLY | flags)
    except OSError as e:
        log.info("%s: not locked (%s): reading only the complete rows of its CSV", path, e.strerror or e)
        return None


def _lock(fd: int, path: Path, shared: bool) -> bool:
    """Take the lock without waiting: false when another holds it; SetupError where the filesystem has no locks."""
    try:
        fcntl.lockf(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return False
        if e.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
            raise SetupError(
                f"{path}: this filesystem does not lock files ({os.strerror(e.errno)}): the figure's CSV cannot "
                "be kept to one writer; results on NFS need NFSv4 (or NFSv3 with lockd): give --out a local "
                "directory or such a mount"
            ) from None
        raise
    return True


@contextlib.contextmanager
def holding(csv_path: Path, *, shared: bool = False, tree: Path | None = None) -> Iterator[Path]:
    """Hold the CSV's lock for the duration of the block, or raise FigureBusy at once.

    Exclusive for a command that writes the CSV, taken before it reads it; `shared` for one that
    only reads it.  `tree` is the results directory up to which a root run hands the lock file (and
    the directories it made for it) back to the sudo caller (ground.results.hand_back).
    """
    path = lock_path(csv_path)
    with _held_guard:
        if _held_here(path):
            raise _busy(csv_path, None, shared)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            if not shared:
                raise
        while True:
            fd = _open(path, Path(csv_path), shared)
            if fd is None:  # a reader that cannot lock: it reads what is complete (ground.trials)
                break
            try:
                locked = _lock(fd, path, shared)
                busy = None if locked else _busy(csv_path, fd, shared)
            except BaseException:
                os.close(fd)
                raise
            if busy is not None:
                os.close(fd)
                raise busy
            # The previous holder unlinks its file as it lets go: a lock won on a
            # file no longer at `path` is no lock, so take the one that is there.
            try:
                still_there = os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False))
            except FileNotFoundError:
                still_there = False
            if still_there:
                _held[str(path)] = _identity(fd)
                break
            os.close(fd)
    if fd is None:
        yield csv_path
        return
    try:
        if not shared:
            with contextlib.suppress(OSError):  # whatever the umask: readers of other users may lock it shared
                os.fchmod(fd, 0o644)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {platform.node()} {Path(csv_path).resolve()}\n".encode(), 0)
        try:
            hand_back(path, tree.resolve() if tree is not None else path.parent)
        except OSError as e:  # the lock holds all the same
            log.warning("%s: not handed back (%s)", path, e.strerror or e)
        yield csv_path
    finally:
        with _held_guard:
            _let_go(fd, path, shared)
            _held.pop(str(path), None)


@contextlib.contextmanager
def reading(csv_path: Path) -> Iterator[Path]:
    """Hold the CSV's lock shared while reading it (FigureBusy while a command writes it), or nothing more
    where this process holds it already (a merge reading the CSV it is about to rewrite)."""
    with _held_guard:
        mine = _held_here(lock_path(csv_path))
    if mine:
        yield csv_path
        return
    with holding(csv_path, shared=True):
        yield csv_path


def _let_go(fd: int, path: Path, shared: bool) -> None:
    """Unlink the lock file while still holding it alone (so that no one can have locked it meanwhile), then
    close it.  A reader unlinks it only where it is the last holder (its lock made exclusive at once)."""
    try:
        if shared:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fails, keeping the shared lock, while others read
            except OSError:
                return
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False)):
                path.unlink()
    finally:
        os.close(fd)


def remove_stale(trees: Iterable[Path] = (RESULTS,)) -> list[str]:
    """Remove the lock files of commands that died under the results trees (SIGKILL leaves the file, never the
    lock): each file no live command holds is locked and unlinked while held, as a holder lets go; a held one,
    and one this process holds, is left alone."""
    removed = []
    for tree in trees:
        if not tree.is_dir():
            continue
        for path in sorted(tree.rglob(f"*.csv{SUFFIX}")):
            if _held_here(path) or path.is_symlink():
                continue
            try:
                fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:  # gone meanwhile, a link planted here, or another user's
                continue
            try:
                if not _lock(fd, path, shared=False):
                    continue
                if os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False)):
                    holder = _holder(fd)
                    path.unlink()
                    removed.append(f"removed the stale figure lock {path} ({holder})")
            except (FileNotFoundError, SetupError):
                pass
            finally:
                os.close(fd)
    return removed
