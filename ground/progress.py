"""A one-line progress bar with the trial count and an estimate of the time left.

The time left is the time so far scaled by the work left over the work done
(and the bar filled by the work done):
each trial one unit, unless the caller weighs them (`work`: `reproduce`
weighs each trial by its figure's estimated seconds a trial, so an hour of
one-second trials does not promise that minute-long ones will be as quick).
The time so far is counted from when the work began: from the bar's making,
unless the caller says the work began later (`begin`: a resumed `reproduce`
may first draw finished figures again from their stored rows, no trial's time).

On a terminal the bar is the last line of stderr, redrawn in place; when the
CLI's log handler (`logs.Console`) writes there, the bar goes through it, so a
log line is written above the bar, never glued to it.  Elsewhere (a pipe, a
file, CI) each trial is one ordinary line.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from ground import logs


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total: int, label: str, stream: TextIO | None = None, work: float | None = None) -> None:
        self.total = total
        self.work = float(total) if work is None else work  # in the units of step's `work`
        self.worked = 0.0
        self.label = label
        self.console = logs.console()
        if stream is None:
            stream = self.console.stream if self.console is not None else sys.stderr
        self.stream = stream
        self.done = 0
        self.began = time.monotonic()
        self.paced: float | None = None  # when the work the estimate paces began (begin), else began
        self.tty = stream.isatty()

    def line(self, note: str = "") -> str:
        width = 30
        # filled as the time left is estimated: by the work done, not the trials counted
        filled = min(int(width * self.worked / self.work), width) if self.work > 0 else 0
        now = time.monotonic()
        elapsed, working = now - self.began, now - (self.began if self.paced is None else self.paced)
        left = working / self.worked * max(self.work - self.worked, 0.0) if self.worked > 0 else None
        eta = _clock(left) if left is not None else "?"
        return (
            f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"trials, {_clock(elapsed)} elapsed, ~{eta} left{'  ' + note if note else ''}"
        )

    def begin(self) -> None:
        """The work the bar counts begins now (the first call only): the time left is paced from here,
        the elapsed time still from the bar's making."""
        if self.paced is None:
            self.paced = time.monotonic()

    def step(self, note: str = "", work: float = 1.0) -> None:
        """One trial home, `work` units of the whole's (one, unless the bar was given its `work`)."""
        self.done += 1
        self.worked += work
        line = self.line(note)
        drawn = self.tty and self.done < self.total
        if self.console is not None and self.console.stream is self.stream:
            # the handler erases and redraws the bar around each log record
            self.console.show(line if drawn else "")
            if not drawn:
                self._write(line + "\n")
            return
        # On a terminal, redraw one line; in a log (CI), one line per trial.
        self._write(line + ("\r" if drawn else "\n"))

    def close(self) -> None:
        """Leave the bar's line (a run that stopped before its last trial)."""
        if self.console is not None and self.console.status:
            self.console.show("")
            self._write(self.line() + "\n")
        elif self.tty and 0 < self.done < self.total:
            self._write("\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
