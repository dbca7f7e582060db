"""One reader of a trial CSV: a row that does not match its header, or a file of a newer format, is refused.

Tried as a user would have it: a row with two fields more than its header
used to merge with exit 0 (the header gained an unnamed column, the cell
became "['JUNK1', 'JUNK2']"), and a row cut to 12 of its fields merged as
a failed trial.  Now merge and resume (a run opening the CSV to append)
refuse each in one line naming the file and the line, and write nothing;
rows of another topology (a study file's figure whose `topology` changed)
are refused too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ground.errors import UserError
from ground.trials import CSV_FORMAT, Row, RowsRefused, TrialLog, read_rows, write_rows
from netrepro.runner import shards

HEADER = "trial_key,figure,trial,status,download_time_ms,csv_format"


def good(n: int) -> str:
    return f'"k{n}",iw/fig2,{n},ok,{500 + n},{CSV_FORMAT}'


def csv_file(tmp_path: Path, *lines: str, name: str = "fig2.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    return path


BAD = {
    "two fields more": good(2) + ",JUNK1,JUNK2",
    "cut short": '"k2",iw/fig2,2',
    "a newer format": f'"k2",iw/fig2,2,ok,502,{CSV_FORMAT + 1}',
}


@pytest.mark.parametrize("bad", BAD, ids=list(BAD))
def test_merge_refuses_the_row_naming_file_and_line_and_writes_nothing(tmp_path: Path, bad: str) -> None:
    other = csv_file(tmp_path, good(3), name="other.csv")
    path = csv_file(tmp_path, good(1), BAD[bad])
    with pytest.raises(RowsRefused) as refused:
        shards.merge_files([other, path])
    assert str(refused.value).startswith(f"{path}: line 3: ") and "\n" not in str(refused.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig2.csv", "other.csv"]


@pytest.mark.parametrize("bad", BAD, ids=list(BAD))
def test_resume_refuses_the_row_and_leaves_the_file_as_it_was(tmp_path: Path, bad: str) -> None:
    path = csv_file(tmp_path, good(1), BAD[bad])
    before = path.read_bytes()
    with pytest.raises(RowsRefused, match=r"line 3: "):
        TrialLog(path)
    assert path.read_bytes() == before


def test_rows_of_the_format_before_are_read_and_new_rows_name_theirs(tmp_path: Path) -> None:
    path = tmp_path / "fig2.csv"
    path.write_text('trial_key,figure,trial,status\n"k1",iw/fig2,1,ok\n')  # written before csv_format
    log = TrialLog(path)
    log.append({"trial_key": "k2", "figure": "iw/fig2", "trial": 2, "status": "ok"})
    rows = read_rows(path)
    assert [r.get("csv_format") for r in rows] == ["", str(CSV_FORMAT)]
    write_rows(rows, tmp_path / "copy.csv")
    assert read_rows(tmp_path / "copy.csv") == rows


def test_merge_refuses_rows_of_another_topology_even_when_mixing_is_allowed(tmp_path: Path) -> None:
    """A study file's figure keeps its name when its topology changes: the rows say which they ran on."""
    header = HEADER + ",seed,topology"
    near = tmp_path / "near.csv"
    far = tmp_path / "far.csv"
    near.write_text(f'{header}\n{good(1)},1,"topo=dumbbell+rtts=40ms,120ms"\n')
    far.write_text(f'{header}\n{good(2)},1,"topo=dumbbell+rtts=40ms,400ms"\n')
    for allow_mixed in (False, True):
        with pytest.raises(UserError) as refused:
            shards.merge_files([near, far], allow_mixed=allow_mixed)
        said = str(refused.value)
        assert "ran on 2 topologies" in said and "40ms,120ms (" in said and "40ms,400ms (" in said, said
        assert "\n" not in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["far.csv", "near.csv"]


def test_a_row_read_back_is_typed(tmp_path: Path) -> None:
    path = csv_file(tmp_path, good(1), f'"k2",iw/fig2,2,failed,,{CSV_FORMAT}')
    done, failed = read_rows(path)
    assert isinstance(done, Row) and (done.ok, done.key, done.status, done.seed) == (True, "k1", "ok", 1)
    assert done.number("download_time_ms") == 501.0 and done["download_time_ms"] == "501"
    assert (failed.ok, failed.number("download_time_ms"), failed.number("no_such_column")) == (False, None, None)
    assert (done.figure, done.trial, done.series, done.cc, done.trial_seconds) == ("iw/fig2", 1, "", "", None)
    assert (done.text("download_time_ms"), done.text("no_such_column")) == ("501", "")
    assert done.measured("download_time_ms") == 501.0
    with pytest.raises(ValueError, match="k2: no number in its 'download_time_ms'"):
        failed.measured("download_time_ms")


def test_a_rows_fields_are_typed_and_a_column_it_lacks_reads_empty() -> None:
    cells = {"trial_key": "k", "series": "IW 10", "cc": "cubic", "cc_impl": "bpf", "topology": "path",
             "backend": "netem", "switch": "none", "kernel": "6.18.0", "host": "vm1", "worker": "tls://10.0.0.1:4001",
             "code": "0ebe09c1a2b3"}  # fmt: skip
    row = Row({**cells, "trial": "3", "draw_seed": "5", "trial_seconds": "2.5", "seed": "7", "status": "ok"})
    texts = {"trial_key": row.key, **{c: getattr(row, c) for c in cells if c != "trial_key"}}
    assert texts == cells
    assert (row.trial, row.draw_seed, row.trial_seconds, row.seed) == (3, 5, 2.5, 7)
    older = Row(trial_key="k", trial="", draw_seed="", status="ok")  # columns written empty, or not at all
    assert (older.trial, older.draw_seed, older.trial_seconds, older.cc, older.worker) == (None, None, None, "", "")


def test_the_rule_of_a_trials_outcome_is_written_once() -> None:
    """`status ok` was written 31 times in 19 files; now ground.trials.row_ok (and Row.ok) says it."""
    import re
    import subprocess

    from ground.results import REPO

    listed = subprocess.run(
        ["git", "-c", f"safe.directory={REPO}", "-C", str(REPO), "ls-files", "*.py"],
        capture_output=True,
        text=True,
        check=True,
    )
    rule = re.compile(r"""(get\("status"\)|\["status"\]) ?(==|!=) ?"ok\"""")
    found = [
        f
        for f in listed.stdout.split()
        if not f.startswith("tests/") and rule.search((REPO / f).read_text(encoding="utf-8"))
    ]
    assert found == ["ground/trials.py"]
