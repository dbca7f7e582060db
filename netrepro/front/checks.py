"""Files the command line is given, checked before anything is built: refused in one line naming the file.

A figure's CSV is read by a resumed run, by `--plot-only` and by `merge`
(ground.trials); what those readers could not read is refused here first,
with what is wrong and where: a symbolic link (a run writes the CSV only
as the file itself, never through a link), bytes that are not UTF-8, a
field longer than Python's csv module reads (FIELD_LIMIT characters: no
row netrepro writes has one), or a line the csv module cannot parse.  A torn
last line (a run cut short mid-row) is left to the readers, which read
around it or drop it.

`writable_page` checks where `report` writes its page: an existing directory
it can write to, and not a directory itself.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from ground.errors import UserError
from ground.trials import RowsRefused, complete_length, parse_rows

# What csv.reader takes in one field unless told otherwise (csv.field_size_limit()'s default).
FIELD_LIMIT = 131072


def readable_csv(path: Path, who: str) -> None:
    """Refuse (UserError, `who`: how the message begins, e.g. `merge: ` or `--plot-only: `) a CSV that
    a run, --plot-only or merge could not read.  A missing file passes: the callers say what it means."""
    if path.is_symlink():
        raise UserError(
            f"{who}{path}: a symbolic link (to {os.readlink(path)}): a figure's CSV is read and written only as "
            "the file itself; give the file, or copy it here"
        )
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (FileNotFoundError, NotADirectoryError):  # nothing there (--out is checked on its own)
        return
    except OSError as e:
        raise UserError(f"{who}{path}: cannot read it ({e.strerror or e})") from None
    data = data[: complete_length(data)]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UserError(
            f"{who}{path}: line {line}: not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}): "
            "not a CSV netrepro wrote"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    limit = csv.field_size_limit()
    try:
        csv.field_size_limit(FIELD_LIMIT)
        for _ in reader:
            pass
    except csv.Error as e:
        why = f"a field longer than {FIELD_LIMIT} characters" if "field limit" in str(e) else str(e)
        raise UserError(f"{who}{path}: line {reader.line_num}: {why}: not a CSV netrepro wrote") from None
    finally:
        csv.field_size_limit(limit)
    try:
        parse_rows(text, path)  # every row as its header names it, in a format this netrepro reads
    except RowsRefused as e:
        raise UserError(f"{who}{e}") from None


def writable_page(out: Path, option: str = "--out") -> None:
    """Refuse (UserError naming it) a page `report` could not write: its directory missing or not writable,
    or `out` a directory."""
    parent = out.parent
    if out.is_dir():
        raise UserError(f"{option} {out}: a directory; give the page's file, e.g. {out / 'index.html'}")
    if not parent.is_dir():
        raise UserError(f"{option} {out}: no such directory {parent}; give a page in an existing directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{option} {out}: cannot write in {parent}; give a page in a writable directory")
