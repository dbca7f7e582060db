"""The house's habits that a test can hold: no tracked file names a tracker issue.

A tracker's numbers mean nothing to a reader of the repository;
a comment, a docstring or a page says what the change is instead
(docs/contributing.md).  README.md's length is held by test_doc_numbers.
"""

from __future__ import annotations

import re
import subprocess

from ground.results import REPO

TRACKER = re.compile(r"\bissues? [0-9]", re.IGNORECASE)


def test_no_tracked_file_names_a_tracker_issue() -> None:
    listed = subprocess.run(
        ["git", "-c", f"safe.directory={REPO}", "-C", str(REPO), "ls-files", "-z"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    found = []
    for name in filter(None, listed.split("\0")):
        path = REPO / name
        if not path.is_file() or path.suffix in {".png", ".pcap", ".bin", ".csv", ".json", ".svg"}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if TRACKER.search(line)]
    assert not found, f"tracker numbers in tracked files (say what the change is instead): {found}"
