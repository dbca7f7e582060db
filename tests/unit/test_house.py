"""The house's habits that a test can hold: no tracked file names a tracker issue; nothing reads a trial's
parameter by its name outside netrepro/studykit/trial.py, and nothing but ground.trials.row_ok says which
rows count (tests/unit/test_csv_rows.py).

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


PARAMETER_READ = re.compile(r"params\[|params\.get\(")
# Not a trial's parameters: the trial key's serialisation of the setting, and Mininet's own node params.
NOT_A_TRIALS = {"ground/trials.py", "topologies/ovs.py"}


def test_only_the_trial_module_reads_a_trials_parameters_by_name() -> None:
    listed = subprocess.run(
        ["git", "-c", f"safe.directory={REPO}", "-C", str(REPO), "ls-files", "-z", "*.py"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    found = [
        name
        for name in filter(None, listed.split("\0"))
        if not name.startswith("tests/")
        and name not in NOT_A_TRIALS
        and PARAMETER_READ.search((REPO / name).read_text(encoding="utf-8"))
    ]
    assert not found, f"read the typed Trial (netrepro.studykit.trial) instead: {found}"
