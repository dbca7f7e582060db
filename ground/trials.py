"""The trial log: one CSV row per trial, appended as each trial ends.

A row holds every parameter the trial ran with, its metrics and its
verification outcome.  Each row is one write of one complete line, synced
before the next trial starts, so an interrupted figure leaves a valid file;
a line cut short (a crash or a full disk mid-write) is dropped when a run
next opens the file to write it (under its exclusive lock,
ground.figurelock); a command that only reads it (`--plot-only`, `merge`'s
reading of its inputs) reads the complete lines and leaves the rest, with a
warning, as it is.  Re-running resumes by skipping the (parameters, trial
index) pairs that already have a successful row for the run's seed; a failed
or timed-out trial is kept as a row and run again, so one trial may have
several rows, of which the latest counts (`latest_rows`).  When a later row
brings a column the file does not have yet, the file is rewritten with the
wider header (atomically), so every row stays readable by any CSV reader.
A trial's time series (ground.series) is not a cell: it is stored as a
file of its own beside the CSV, and the row names that file.

Every row names the file's format (`csv_format`, CSV_FORMAT); rows are
read back by one reader (`parse_rows`), which refuses, naming the file and
the line, a row with more or fewer fields than the header names and a file
of a format newer than this netrepro reads: merge and resume never take a
row they could not read as it was written.  Each comes back a `Row`, whose
properties say what every row says about its trial (its key, status,
series, congestion control, where and from what code it ran), typed; a
metric is read by the column its figure or claim names (`Row.number`).
Outside this module a row is read through these, never as a dict of its
cells (tests/unit/test_house.py).

Each trial also draws what makes it an independent sample rather than a
replay of the trial before (`trial_draw`): the seed of the emulated loss
and jitter, and the phase at which its workload starts.  The draw is a hash
of the trial's key and the run's seed, so a re-run of a trial draws the
same, and a trial's row records it (`draw_seed`, `loss_seed`,
`start_offset_ms`; rows written before these columns came have none).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ground import series
from ground.errors import SetupError, UserError
from ground.results import hand_back, replace_file, sync_directory

log = logging.getLogger("netrepro.trials")

DEFAULT_SEED = 1  # the seed of rows written before rows recorded theirs
# The format of a trial CSV, named in every row (`csv_format`).  2: the column is there; 1 (the column empty or
# missing): rows written before it, read alike.
CSV_FORMAT = 2


class RowsRefused(UserError):
    """A trial CSV with a row that does not match its header, or of a format this netrepro does not read."""

    def __init__(self, path: Path, line: int, why: str) -> None:
        super().__init__(f"{path}: line {line}: {why}; nothing was written")
        self.path = path
        self.line = line


def parse_rows(text: str, path: Path) -> tuple[list[str], list[Row]]:
    """The header and the rows of a trial CSV's text, each row checked against the header: as many fields as
    it names, and a format (`csv_format`) this netrepro reads; RowsRefused naming the line otherwise."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        return [], []
    if len(set(header)) != len(header) or not all(header):
        raise RowsRefused(path, 1, f"a header with an empty or repeated column name ({header[:8]}...)")
    rows = []
    for fields in reader:
        if len(fields) != len(header):
            raise RowsRefused(
                path,
                reader.line_num,
                f"{len(fields)} fields where the header names {len(header)} (a row cut "
                "short, or with fields of its own: not a row this file's writer wrote)",
            )
        row = Row(zip(header, fields, strict=True))
        found = row.text("csv_format") or "1"
        if not found.isdigit() or int(found) > CSV_FORMAT:
            raise RowsRefused(
                path, reader.line_num, f"csv_format {found!r}: a format this netrepro ({CSV_FORMAT}) does not read"
            )
        rows.append(row)
    return header, rows


def trial_key(params: Mapping[str, Any], trial: int) -> str:
    """A stable name for one trial of one parameter setting."""
    return json.dumps({"params": {k: params[k] for k in sorted(params)}, "trial": trial}, sort_keys=True, default=str)


def setting_key(params: Mapping[str, Any]) -> str:
    """A stable name for one parameter setting, whatever its trials (`setting_of` of each of its trial keys)."""
    return json.dumps({k: params[k] for k in sorted(params)}, sort_keys=True, default=str)


def setting_of(key: str) -> str:
    """The setting_key of the trial `key` (trial_key)."""
    return json.dumps(json.loads(key)["params"], sort_keys=True)


# The start offset spans a round trip of the trial's path, and at least this on a shorter one.
START_OFFSET_FLOOR_S = 0.010
# loss_seed is below this: the lab seeds its stages loss_seed + 0, 1, 2, ... (one per emulated direction),
# which stays far inside what the delay line's `seed=` and netem's `seed` take (an unsigned 64-bit
# integer both), and a number this size is exact in a float (a spreadsheet, JSON in JavaScript).
LOSS_SEED_LIMIT = 2**48


@dataclass(frozen=True)
class TrialDraw:
    """What one trial draws at random: the same for the same trial key and run seed, another for another.

    `draw_seed`: 63 bits of the hash, the draw's name; `loss_seed`: the seed the lab's emulated loss
    and jitter restart from for this trial (Lab.reseed), 0 <= loss_seed < LOSS_SEED_LIMIT; `phase`:
    in [0, 1), where in a round trip the trial's workload starts (`start_offset_s`).
    """

    draw_seed: int
    loss_seed: int
    phase: float

    def start_offset_s(self, rtt_s: float) -> float:
        """How long the trial waits before its workload starts: the phase of one round trip of its path
        (of START_OFFSET_FLOOR_S where the RTT is shorter), so 0 <= offset < max(rtt, floor)."""
        return self.phase * max(rtt_s, START_OFFSET_FLOOR_S)


def trial_draw(key: str, seed: int) -> TrialDraw:
    """The draw of the trial `key` (trial_key) in a run of `seed`: sha256 of both, cut in three."""
    digest = hashlib.sha256(f"netrepro trial draw\0{int(seed)}\0{key}".encode()).digest()
    draw_seed = int.from_bytes(digest[0:8], "big") >> 1  # 63 bits: a signed 64-bit integer holds it
    loss_seed = int.from_bytes(digest[8:16], "big") % LOSS_SEED_LIMIT
    phase = (int.from_bytes(digest[16:24], "big") >> 11) / 2**53  # 53 bits: exact, and below 1
    return TrialDraw(draw_seed=draw_seed, loss_seed=loss_seed, phase=phase)


def row_ok(row: Mapping[str, Any]) -> bool:
    """The one rule of a trial's outcome: its row counts as a measurement only with status ok (failed and
    timeout rows record an attempt, run again)."""
    return row.get("status") == "ok"


class Row(dict[str, str]):
    """A row of a trial CSV as read back (`parse_rows`): its cells by column, as text, and what every row
    says about its trial, typed: a column a row lacks (written before it was recorded) reads as "" or None.
    A metric is read by the column its figure or claim names (`number`), a cell wanted as text by a name the
    caller holds (`text`)."""

    @property
    def ok(self) -> bool:
        return row_ok(self)

    @property
    def key(self) -> str:
        """The trial's key (trial_key): its parameters and index."""
        return self.text("trial_key")

    @property
    def status(self) -> str:
        return self.text("status")

    @property
    def error(self) -> str:
        return self.text("error")

    @property
    def seed(self) -> int | None:
        return row_seed(self)

    @property
    def figure(self) -> str:
        return self.text("figure")

    @property
    def series(self) -> str:
        """The label of the figure's series (a line, a bar) the trial is drawn in."""
        return self.text("series")

    @property
    def trial(self) -> int | None:
        """The trial's index among the trials of its setting."""
        return self._whole("trial")

    @property
    def cc(self) -> str:
        """The congestion control the trial asked for ("": the hosts' default)."""
        return self.text("cc")

    @property
    def cc_impl(self) -> str:
        """The implementation it ran as: the kernel's own, a module or BPF."""
        return self.text("cc_impl")

    @property
    def topology(self) -> str:
        """The label of the topology the trial ran on."""
        return self.text("topology")

    @property
    def backend(self) -> str:
        """The emulation backend that shaped its links."""
        return self.text("backend")

    @property
    def switch(self) -> str:
        return self.text("switch")

    @property
    def kernel(self) -> str:
        """The release of the kernel it ran on."""
        return self.text("kernel")

    @property
    def host(self) -> str:
        return self.text("host")

    @property
    def worker(self) -> str:
        """The cluster worker that ran it ("": the run's own process)."""
        return self.text("worker")

    @property
    def code(self) -> str:
        """The commit of the netrepro that ran it, as results.code_version writes it (`+dirty`: with changes)."""
        return self.text("code")

    @property
    def ssthresh_repaired(self) -> bool:
        """Whether the attempt was not kept because its BPF congestion control repaired a corrupted
        ssthresh (kmod/README.md, "The ssthresh corruption")."""
        return self.text("ssthresh_repaired").lower() in ("true", "1")

    @property
    def draw_seed(self) -> int | None:
        """The name of the trial's draw (trial_draw)."""
        return self._whole("draw_seed")

    @property
    def trial_seconds(self) -> float | None:
        """How long the trial took, wall clock."""
        return self.number("trial_seconds")

    def number(self, column: str) -> float | None:
        """The column's value as a number; None where the row has none (a failed trial leaves it empty)."""
        try:
            return float(self[column])
        except (KeyError, ValueError):
            return None

    def measured(self, column: str) -> float:
        """The column's value as a number, in a row that must hold one (a successful trial's metric):
        ValueError, naming the trial and the column, where it holds none."""
        value = self.number(column)
        if value is None:
            raise ValueError(f"{self.key or 'a row'}: no number in its {column!r} ({self.get(column)!r})")
        return value

    def text(self, column: str) -> str:
        """The column's cell as written; "" where the row has none."""
        return self.get(column) or ""

    def _whole(self, column: str) -> int | None:
        try:
            return int(self[column])
        except (KeyError, ValueError):
            return None


def row_seed(row: Mapping[str, str]) -> int | None:
    """The seed a row ran with (None if unreadable, which matches no run)."""
    try:
        return int(row.get("seed") or DEFAULT_SEED)
    except ValueError:
        return None


def latest_rows(rows: Iterable[Row]) -> list[Row]:
    """The last row of each (trial, seed), in file order: a trial run again counts by its latest attempt."""
    latest: dict[tuple[str, int | None], Row] = {}
    for row in rows:
        key = (row.key, row.seed)
        latest.pop(key, None)
        latest[key] = row
    return list(latest.values())


def _cell(value: Any) -> str:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def complete_length(data: bytes) -> int:
    """How many leading bytes of a CSV file are complete lines.

    A line is complete when it ends in a newline outside quotes: a quoted
    cell (an error message) may hold newlines of its own, and a row cut
    short just after one of those is as torn as one cut anywhere else.
    """
    end = 0
    quotes = 0
    start = 0
    while (newline := data.find(b"\n", start)) != -1:
        quotes += data.count(b'"', start, newline)
        start = newline + 1
        if quotes % 2 == 0:
            end = start
    return end


def _read_all(fd: int) -> bytes:
    data = b""
    while chunk := os.read(fd, 1 << 20):
        data += chunk
    return data


def complete_text(path: Path) -> str:
    """The CSV's complete lines, as text; a torn last line (a run is writing it, or died mid-row) is left out,
    with a warning, and the file is left as it is: what a command that only reads a CSV reads."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = _read_all(fd)
    finally:
        os.close(fd)
    keep = complete_length(data)
    if keep < len(data):
        log.warning(
            "%s: its last row is torn (%d bytes: being written, or cut short by a crash): read without it, "
            "and left as it is: %r",
            path,
            len(data) - keep,
            data[keep:][:200],
        )
    return data[:keep].decode("utf-8")


class TrialLog:
    """The CSV of one figure.

    `fresh`: resume nothing from the existing file, and move it aside (to a
    dated backup beside it) only when the first new row is written, so that a
    run that never gets as far as a trial leaves it as it was.  `tree` is the
    results directory, up to which written files are handed back.
    `read_only`: a command that only reads the CSV (`--plot-only`): a torn last
    line is read around, never cut off, and no row may be appended.
    """

    def __init__(self, path: Path, fresh: bool = False, tree: Path | None = None, read_only: bool = False) -> None:
        self.path = path
        self.tree = tree
        self.fresh = fresh and not read_only
        self.read_only = read_only
        self.backup: Path | None = None  # where --fresh moved the old file
        self._move_aside_pending = self.fresh
        self.torn_rows_dropped = 0
        self.columns: list[str] = []
        self.rows: list[Row] = []
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        if self.fresh or not path.exists():
            return
        if read_only:
            text = complete_text(path)
        else:
            self._drop_torn_line()
            text = path.read_bytes().decode("utf-8")
        self.columns, self.rows = parse_rows(text, path)

    def _drop_torn_line(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            data = _read_all(fd)
            keep = complete_length(data)
            if keep == len(data):
                return
            log.warning(
                "%s: dropped a torn last row (%d bytes, cut short by a crash or a full disk): %r",
                self.path,
                len(data) - keep,
                data[keep:][:200],
            )
            os.ftruncate(fd, keep)
            os.fsync(fd)
            self.torn_rows_dropped += 1
        finally:
            os.close(fd)

    def done(self, seed: int = DEFAULT_SEED, retry_failed: bool = True) -> set[str]:
        """Keys of the trials this run (of `seed`) need not run again: those with a successful row,
        or with any row at all when failed trials are not to be retried."""
        return {row.key for row in self.rows if row.key and row.seed == seed and (not retry_failed or row.ok)}

    def append(self, row: dict[str, Any]) -> None:
        """Add one row: one write of one complete line, synced."""
        if self.read_only:
            raise RuntimeError(f"{self.path}: opened to be read only, not appended to")
        if self._move_aside_pending:
            self._move_aside()
            self._move_aside_pending = False
        row = self._store_series(row)
        cells = {"csv_format": str(CSV_FORMAT)} | {k: _cell(v) for k, v in row.items()}
        new = [k for k in cells if k not in self.columns]
        if new or not self.path.exists():
            self.columns += new
            self.rows = [Row({c: r.get(c, "") for c in self.columns}) for r in self.rows]
            self.rows.append(Row({c: cells.get(c, "") for c in self.columns}))
            self._rewrite()
            return
        line = io.StringIO(newline="")
        csv.DictWriter(line, fieldnames=self.columns).writerow(cells)
        data = line.getvalue().encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
            try:
                written = os.write(fd, data)
                while written < len(data):  # a short write (rare): the rest, under the figure's lock
                    written += os.write(fd, data[written:])
                os.fsync(fd)
            except OSError as e:
                os.ftruncate(fd, size)  # no torn line for the next row to be glued to
                # one line that names the file (a full disk, most often), not a bare OSError
                raise SetupError(
                    f"{self.path}: cannot append the trial's row: {e.strerror or e}; the file is as "
                    "it was before it: run the command again to resume"
                ) from e
        finally:
            os.close(fd)
        self.rows.append(Row({c: cells.get(c, "") for c in self.columns}))

    def _store_series(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row with its time series (series.FIELD) stored as a file of its own beside the CSV,
        `<figure>.series/<name>.csv` (the name from the trial's draw: one per trial and run seed), and
        that file's name, relative to the CSV, in its place (series.FILE_COLUMN)."""
        found = row.get(series.FIELD)
        if found is None:
            return row
        kept = {k: v for k, v in row.items() if k != series.FIELD}
        values = found if isinstance(found, series.TimeSeries) else series.TimeSeries.from_json(found)
        name = str(row.get("draw_seed") or hashlib.sha256(str(row.get("trial_key")).encode()).hexdigest()[:16])
        relative = Path(f"{self.path.stem}{series.DIR_SUFFIX}") / f"{name}.csv"
        replace_file(self.path.parent / relative, values.csv_bytes())
        hand_back(self.path.parent / relative, self.tree)
        kept[series.FILE_COLUMN] = str(relative)
        return kept

    def _rewrite(self) -> None:
        write_rows(self.rows, self.path, self.columns)
        hand_back(self.path, self.tree)

    def _move_aside(self) -> None:
        """--fresh: keep the old file as <name>.<YYYYmmdd-HHMMSS>.bak beside it (never over another backup)."""
        if not self.path.exists() and not self.path.is_symlink():
            return
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for n in range(1000):
            backup = self.path.with_name(f"{self.path.name}.{stamp}{f'-{n}' if n else ''}.bak")
            try:
                os.link(self.path, backup, follow_symlinks=False)  # fails if the name exists: no backup is lost
            except FileExistsError:
                continue
            break
        else:
            raise FileExistsError(f"{self.path}: no free backup name for {stamp}")
        self.path.unlink()
        sync_directory(self.path.parent)
        self.backup = backup
        log.info("--fresh: the earlier %s is kept as %s", self.path.name, backup.name)


def write_rows(rows: Iterable[Mapping[str, str]], target: Path, columns: Iterable[str] | None = None) -> None:
    """Rows as one trial CSV (`columns`, or those of all the rows in first-seen order), replaced atomically:
    the one writer of a whole file (a run's TrialLog appends its rows one line at a time)."""
    rows = list(rows)
    names = list(columns) if columns is not None else list(dict.fromkeys(k for row in rows for k in row))
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=names)
    writer.writeheader()
    writer.writerows({c: row.get(c, "") for c in names} for row in rows)
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_file(target, text.getvalue().encode())


def read_rows(path: Path) -> list[Row]:
    """The rows of a trial CSV's complete lines (complete_text: a torn last line is read around, never cut
    off), each checked against the header (parse_rows)."""
    return parse_rows(complete_text(path), path)[1]


def numbers(rows: Iterable[Row], column: str) -> list[float]:
    """The column's values that are numbers (failed trials leave it empty)."""
    return [value for row in rows if (value := row.number(column)) is not None]
