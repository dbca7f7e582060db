"""The house's habits that a test can hold: no tracked file names a tracker issue; nothing reads a trial's
parameter by its name outside netrepro/studykit/trial.py, nor a field of a trial's row (`row["series"]`,
`r.get("cc")`) outside ground/trials.py, whose typed Row says them (`row.series`, `row.cc`,
`row.number(metric)`); and nothing but ground.trials.row_ok says which rows count (tests/unit/test_csv_rows.py).

A tracker's numbers mean nothing to a reader of the repository;
a comment, a docstring or a page says what the change is instead
(docs/contributing.md).  README.md's length is held by test_doc_numbers.
"""

from __future__ import annotations

import re
import subprocess

from ground.results import REPO

TRACKER = re.compile(r"\bissues? [0-9]", re.IGNORECASE)


def tracked(*patterns: str) -> list[str]:
    """The repository's tracked files (those matching `patterns`, if any), as git names them."""
    listed = subprocess.run(
        ["git", "-c", f"safe.directory={REPO}", "-C", str(REPO), "ls-files", "-z", *patterns],
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name]


def test_no_tracked_file_names_a_tracker_issue() -> None:
    found = []
    for name in tracked():
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
    found = [
        name
        for name in tracked("*.py")
        if not name.startswith("tests/")
        and name not in NOT_A_TRIALS
        and PARAMETER_READ.search((REPO / name).read_text(encoding="utf-8"))
    ]
    assert not found, f"read the typed Trial (netrepro.studykit.trial) instead: {found}"


ROW_FIELD_READ = re.compile(r"""\b(row|r)\[["']|\b(row|r)\.get\(["']""")
# Files that may read a `row` or `r` by a column's name, each with why: none of them reads a trial's row back.
NOT_A_READ_BACK_ROW = {
    "ground/trials.py": "the Row itself, and the rows a TrialLog writes (they are read back as Rows)",
}


def test_only_the_row_reads_a_trial_rows_fields_by_name() -> None:
    """A trial's row read back is a ground.trials.Row: its fields are its properties, a metric `number(column)`,
    a cell wanted as text `text(column)`; a record that is not a trial's row (a soak's round, a seed's table
    entry, a worker's reply) is named for what it is."""
    found = [
        f"{name}:{n}: {line.strip()}"
        for name in tracked("*.py")
        if not name.startswith("tests/") and name not in NOT_A_READ_BACK_ROW
        for n, line in enumerate((REPO / name).read_text(encoding="utf-8").splitlines(), 1)
        if ROW_FIELD_READ.search(line)
    ]
    assert not found, f"read the typed Row (ground.trials.Row), or name a record that is no trial's row: {found}"
