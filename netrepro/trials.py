"""The trial log: one CSV row per trial, appended as each trial ends.

A row holds every parameter the trial ran with, its metrics and its
verification outcome.  Rows are appended and flushed one at a time, so an
interrupted figure leaves a valid file; re-running resumes by skipping the
(parameters, trial index) pairs already present.  When a later row brings a
column the file does not have yet, the file is rewritten with the wider
header (atomically), so every row stays readable by any CSV reader.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from netrepro.results import hand_back

Row = dict[str, Any]


def trial_key(params: Mapping[str, Any], trial: int) -> str:
    """A stable name for one trial of one parameter setting."""
    return json.dumps({"params": {k: params[k] for k in sorted(params)}, "trial": trial}, sort_keys=True, default=str)


def _cell(value: Any) -> str:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


class TrialLog:
    """The CSV of one figure."""

    def __init__(self, path: Path, fresh: bool = False) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            path.unlink(missing_ok=True)
        self.columns: list[str] = []
        self.rows: list[dict[str, str]] = []
        if path.exists():
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                self.columns = list(reader.fieldnames or [])
                self.rows = list(reader)

    def done(self) -> set[str]:
        """Keys of the trials already in the file."""
        return {row["trial_key"] for row in self.rows if row.get("trial_key")}

    def append(self, row: Row) -> None:
        cells = {k: _cell(v) for k, v in row.items()}
        new = [k for k in cells if k not in self.columns]
        self.rows.append(cells)
        if new or not self.path.exists():
            self.columns += new
            self._rewrite()
            return
        with open(self.path, "a", newline="") as f:
            csv.DictWriter(f, fieldnames=self.columns).writerow(cells)
            f.flush()
            os.fsync(f.fileno())

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(".csv.tmp")
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.columns)
            writer.writeheader()
            writer.writerows(self.rows)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.path)
        hand_back(self.path)


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def numbers(rows: Iterable[Mapping[str, str]], column: str) -> list[float]:
    """The column's values that are numbers (failed trials leave it empty)."""
    out = []
    for row in rows:
        try:
            out.append(float(row[column]))
        except (KeyError, ValueError):
            continue
    return out
