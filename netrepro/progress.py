"""A one-line progress bar with the trial count and an estimate of the time left."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total: int, label: str, stream: TextIO = sys.stderr) -> None:
        self.total = total
        self.label = label
        self.stream = stream
        self.done = 0
        self.began = time.monotonic()
        self.tty = stream.isatty()

    def line(self, note: str = "") -> str:
        width = 30
        filled = width * self.done // max(self.total, 1)
        elapsed = time.monotonic() - self.began
        left = elapsed / self.done * (self.total - self.done) if self.done else None
        eta = _clock(left) if left is not None else "?"
        return (
            f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"trials, {_clock(elapsed)} elapsed, ~{eta} left{'  ' + note if note else ''}"
        )

    def step(self, note: str = "") -> None:
        self.done += 1
        # On a terminal, redraw one line; in a log (CI), one line per trial.
        end = "\r" if self.tty and self.done < self.total else "\n"
        self.stream.write(self.line(note) + end)
        self.stream.flush()
