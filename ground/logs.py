"""Logging for the command line: one handler for the `netrepro` loggers, and a log file per figure run.

Mininet's `mininet.log` calls `logging.setLoggerClass(MininetLogger)` when it
is imported, so every logger made after that import is a MininetLogger:
Mininet's level (25, between INFO and WARNING) and a handler of its own that
writes without a newline.  Which netrepro loggers that hits depends on import
order (`netrepro`, `netrepro.lab` and `netrepro.sweep` were); with
`basicConfig`'s root handler on top, a warning of `netrepro.sweep` came out
three times on one line, and the DEBUG records of `-v` (every command) were
dropped by the inherited level.  Taking `logging.getLogger("netrepro")` before
Mininet is imported is not enough (the children made later are still
MininetLoggers with handlers), and a logger cannot be swapped for another once
modules hold it.  So `configure` imports mininet.log first, so that its class
switch is behind us, sets the default class back to `logging.Logger` for the
loggers made from then on, makes each netrepro logger already made a plain
`logging.Logger` with no handler or level of its own (its class is changed in
place: module-level `log` objects keep working), and gives `netrepro` the one
handler, to stderr, not propagated to the root.  Mininet's `mininet` logger
keeps its own class, handler and level (`setLogLevel`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

ROOT = "netrepro"
CLEAR_LINE = "\r\x1b[K"
FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class Console(logging.StreamHandler[TextIO]):
    """The handler to stderr that keeps a status line (the progress bar) below the records it writes.

    While a status is shown, each record first erases it and draws it again
    after, so a log line is never glued to the bar.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(stream if stream is not None else sys.stderr)
        self.status = ""

    def emit(self, record: logging.LogRecord) -> None:
        # handle() holds self.lock here
        if self.status:
            self.stream.write(CLEAR_LINE)
        super().emit(record)
        if self.status:
            self.stream.write(self.status + "\r")
            self.flush()

    def show(self, status: str) -> None:
        """Draw `status` on the last line (`""`: erase it)."""
        with self.lock if self.lock is not None else contextlib.nullcontext():
            self.stream.write(CLEAR_LINE + (status + "\r" if status else ""))
            self.flush()
            self.status = status


def configure(verbose: bool, stream: TextIO | None = None) -> Console:
    """Give the `netrepro` loggers one handler (to `stream`, default stderr): DEBUG with -v, else INFO."""
    plain_loggers()
    level = logging.DEBUG if verbose else logging.INFO
    console = Console(stream)
    console.setLevel(level)
    console.setFormatter(logging.Formatter("%(name)s: %(message)s" if verbose else "%(message)s"))
    top = logging.getLogger(ROOT)
    top.setLevel(level)
    top.addHandler(console)
    top.propagate = False  # the root logger's handlers (basicConfig, Mininet's) would write it again
    return console


def plain_loggers() -> None:
    """Make every netrepro logger, made or to be made, a plain `logging.Logger` without handler or level of its own."""
    with contextlib.suppress(ImportError):
        import mininet.log  # noqa: F401  (its setLoggerClass must come before ours)
    logging.setLoggerClass(logging.Logger)
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if (name == ROOT or name.startswith(ROOT + ".")) and isinstance(logger, logging.Logger):
            if type(logger) is not logging.Logger:
                logger.__class__ = logging.Logger
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.setLevel(logging.NOTSET)
            logger.propagate = True


def console() -> Console | None:
    """The handler `configure` installed, if any."""
    return next((h for h in logging.getLogger(ROOT).handlers if isinstance(h, Console)), None)


def create_exclusive(directory: Path, stem: str) -> tuple[Path, int]:
    """A new file `<stem>-<YYYYmmdd-HHMMSS>.log` in `directory`: never an existing file, never through a link."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for n in range(1, 100):
        path = directory / (f"{stem}-{stamp}.log" if n == 1 else f"{stem}-{stamp}-{n}.log")
        try:
            return path, os.open(path, flags, 0o644)
        except FileExistsError:  # a run of the same figure in the same second
            continue
    raise FileExistsError(f"{directory}: no free name for {stem}-{stamp}.log")


@contextlib.contextmanager
def log_file(directory: Path, stem: str) -> Iterator[Path]:
    """Write every netrepro log record (DEBUG and up: every command) to a new timestamped file while this lasts."""
    if console() is None:
        plain_loggers()  # not configured by the CLI: a MininetLogger's level would drop DEBUG on its way here
    directory.mkdir(parents=True, exist_ok=True)
    path, fd = create_exclusive(directory, stem)
    # line-buffered: a killed run keeps its lines; closed below, where a full disk may refuse its last line
    stream = open(fd, "w", encoding="utf-8", buffering=1)  # noqa: SIM115
    handler = _LogFile(stream)
    ended = False
    try:
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(logging.Formatter(FILE_FORMAT))
        top = logging.getLogger(ROOT)
        level = top.level
        if top.getEffectiveLevel() > logging.DEBUG:
            top.setLevel(logging.DEBUG)  # the console keeps its own level
        top.addHandler(handler)
        try:
            yield path
            ended = True
        finally:
            top.removeHandler(handler)
            top.setLevel(level)
            handler.close()
    finally:
        try:
            stream.close()
        except OSError as e:  # the last lines, which it could not write either
            handler.failed = handler.failed or e
    if ended and handler.failed is not None:  # else the run's own error says what is wrong (a full disk)
        logging.getLogger(ROOT).warning("%s: cut short: %s", path, handler.failed.strerror or handler.failed)


class _LogFile(logging.StreamHandler[TextIO]):
    """A run's log file: a line it cannot write (a full disk) ends its writing, once, instead of a traceback
    on stderr for every record after it (logging's handleError)."""

    failed: OSError | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.failed is None:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            self.failed = error
            return
        super().handleError(record)
