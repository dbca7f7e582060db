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

The lock takes two bytes of the file: byte 0 is the CSV's (shared by
readers, exclusive to a writer), byte 1 the writer's mark, held by a writer
for as long as it holds byte 0 and by a reader only for the instant it looks.
A command letting go holds byte 0 exclusively for an instant (a reader making
sure it is the last before it unlinks the file; `remove_stale`): a reader
that finds byte 0 taken but no writer's mark tries again, and is not told
that the figure is busy.

The kernel (or the NFS server, when the client's lease ends) drops a lock
when its holder dies, however it dies: a stale lock file locks nothing.  The
exclusive holder writes its pid and host into the file, hands the file back
to the sudo caller like the results beside it, and unlinks it as it lets go;
whoever finds, once locked, that the file it locked is no longer the one at
the path takes the one that is there.

A results directory may be writable by others: a lock file is opened
without following a link and without blocking (a FIFO), and used only if it
is a regular file with no other name (a hard link planted there would let a
root run truncate and chown what it points to) and, for root, owned by root
or by the sudo caller; everything after that check acts on the descriptor,
never on the name again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import platform
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ground.errors import SetupError
from ground.results import RESULTS, hand_back, sudo_caller

log = logging.getLogger("netrepro.figurelock")

SUFFIX = ".lock"
CSV_BYTE = 0  # shared by readers, exclusive to a writer
WRITER_BYTE = 1  # a writer's mark, for as long as it holds CSV_BYTE
# A reader that meets a command letting go tries again this often, this far apart (it lets go in microseconds).
LETTING_GO_TRIES = 50
LETTING_GO_PAUSE_S = 0.02


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
        if not shared and not _writer_present(fd):  # only readers: they wrote no pid
            return FigureBusy(
                f"{csv_path} is busy: another command is reading it (--plot-only); "
                "wait for it to end, or give this run its own results directory (--out DIR) to run beside it"
            )
    return FigureBusy(
        f"{csv_path} is busy: another run ({who}) is writing it. Wait for it to end, "
        "or give this run its own results directory (--out DIR) to run beside it"
    )


def _writer_present(fd: int) -> bool:
    """Whether another process holds the writer's mark (looked at by taking it shared for an instant)."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, WRITER_BYTE)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return True
        raise
    fcntl.lockf(fd, fcntl.LOCK_UN, 1, WRITER_BYTE)
    return False


def _pause() -> None:
    """The wait before a reader tries again, a command letting go having held the lock for an instant."""
    time.sleep(LETTING_GO_PAUSE_S)


def _checked(fd: int, path: Path) -> int:
    """fd, if what it opened may be the lock file: a regular file with no other name, and, for root, its
    own or the sudo caller's; else it is closed and SetupError says what was found."""
    st = os.fstat(fd)
    why = ""
    if not stat.S_ISREG(st.st_mode):
        why = "it is not a regular file"
    elif st.st_nlink != 1:
        why = f"it has {st.st_nlink} names (a hard link to another file)"
    elif os.geteuid() == 0 and st.st_uid not in {0, (sudo_caller() or (0, 0))[0]}:
        why = f"it belongs to uid {st.st_uid}, neither root nor the sudo caller"
    if not why:
        return fd
    os.close(fd)
    raise SetupError(
        f"{path}: not used as the figure's lock file: {why}. Someone else may have put it there: "
        "remove it (after checking what it is), or give the command another --out"
    )


def _made_or_checked(path: Path, flags: int) -> int:
    """The lock file opened to write: made here (O_EXCL: then it is ours, whoever the filesystem says
    owns it), or the one there if `_checked` accepts it."""
    while True:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | flags, 0o644)
        except FileExistsError:
            pass
        try:
            return _checked(os.open(path, os.O_RDWR | flags), path)
        except FileNotFoundError:  # its holder let go of it (and unlinked it) meanwhile: make it
            continue


def _open(path: Path, csv_path: Path, shared: bool) -> int | None:
    """The lock file, opened to be locked (made if missing); None where a reader can neither make nor open it.

    A writer that may not write the file (another user's: root's, run without sudo) is refused, as busy
    where its owner holds it now."""
    flags = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        return _made_or_checked(path, flags)
    except PermissionError:
        if not shared:
            with contextlib.suppress(OSError):
                fd = _checked(os.open(path, os.O_RDONLY | flags), path)
                try:
                    if not _lock(fd, path, shared=True):
                        raise _busy(csv_path, fd, shared=True)
                finally:
                    os.close(fd)
            raise SetupError(
                f"{path}: cannot open the figure's lock file for writing (it, or its directory, is another "
                "user's): run the command as that user, or give it another --out"
            ) from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise SetupError(
                f"{path}: not used as the figure's lock file: it is a symbolic link. Someone else may have put "
                "it there: remove it (after checking where it points), or give the command another --out"
            ) from None
        if not shared:
            raise
    try:  # a reader may lock a file it may only read (F_RDLCK needs no more)
        return _checked(os.open(path, os.O_RDONLY | flags), path)
    except SetupError:
        raise
    except OSError as e:
        log.info("%s: not locked (%s): reading only the complete rows of its CSV", path, e.strerror or e)
        return None


def _lock(fd: int, path: Path, shared: bool) -> bool:
    """Take the CSV's byte without waiting: false when another holds it; SetupError where the filesystem has
    no locks.  (A writer then takes its mark: `holding`.)"""
    try:
        fcntl.lockf(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB, 1, CSV_BYTE)
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
        tries = 0
        while True:
            fd = _open(path, Path(csv_path), shared)
            if fd is None:  # a reader that cannot lock: it reads what is complete (ground.trials)
                break
            try:
                locked = _lock(fd, path, shared)
                letting_go = not locked and shared and tries < LETTING_GO_TRIES and not _writer_present(fd)
                busy = None if locked or letting_go else _busy(csv_path, fd, shared)
                if locked and not shared:
                    # only readers looking hold it, each for an instant: wait for them
                    fcntl.lockf(fd, fcntl.LOCK_EX, 1, WRITER_BYTE)
            except BaseException:
                os.close(fd)
                raise
            if busy is not None:
                os.close(fd)
                raise busy
            if letting_go:  # a command letting go holds it for an instant: try again, on the file then there
                os.close(fd)
                tries += 1
                _pause()
                continue
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
            _hand_back(fd, path, tree.resolve() if tree is not None else path.parent)
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


def _hand_back(fd: int, path: Path, tree: Path) -> None:
    """Give the lock file (through its descriptor, never its name again) and the directories made for it
    below `tree` to the sudo caller."""
    caller = sudo_caller()
    if caller is None:
        return
    if path.parent != tree:
        hand_back(path.parent, tree)
    os.fchown(fd, *caller)


def _let_go(fd: int, path: Path, shared: bool) -> None:
    """Unlink the lock file while still holding it alone (so that no one can have locked it meanwhile), then
    close it.  A reader unlinks it only where it is the last holder (its lock made exclusive at once)."""
    try:
        if shared:
            try:
                # fails, keeping the shared lock, while others read
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, CSV_BYTE)
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
                fd = _checked(os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK), path)
            except (OSError, SetupError):  # gone meanwhile, a link or a file planted here, or another user's
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
