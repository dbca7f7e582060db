"""The ledger: what is recorded is undone, by the run itself or by `clean`."""

import json
import subprocess
from pathlib import Path

import pytest

from netrepro import ledger as ledger_mod
from netrepro.ledger import Ledger, LedgerError
from netrepro.proc import Process, is_alive, start_time


def test_unwind_undoes_newest_first_and_drops_the_file(tmp_path: Path) -> None:
    made = tmp_path / "made"
    made.mkdir()
    (made / "inside").write_text("x")
    with Ledger(tmp_path) as led:
        led.record({"kind": "path", "path": str(made)})
        sleeper = Process(["sleep", "30"], ledger=led)
        assert sleeper.running()
        file = led.file
        kinds = [json.loads(line)["kind"] for line in file.read_text().splitlines()]
        assert kinds == ["owner", "path", "process"]
    assert not made.exists()
    assert not is_alive(sleeper.pid, sleeper.started)
    sleeper.popen.wait()
    assert not file.exists()


def test_unknown_kind_is_refused(tmp_path: Path) -> None:
    led = Ledger(tmp_path)
    with pytest.raises(ValueError):
        led.record({"kind": "mystery"})
    led.unwind()


def test_undo_is_idempotent(tmp_path: Path) -> None:
    led = Ledger(tmp_path)
    led.record({"kind": "path", "path": str(tmp_path / "never-made")})
    led.record({"kind": "process", "pid": 2**22 - 1, "start": 1, "argv": ["gone"]})
    led.unwind()


def test_failed_steps_are_all_reported(tmp_path: Path) -> None:
    led = Ledger(tmp_path)
    led.record({"kind": "sysctl", "key": "net.netrepro.does_not_exist", "old": "1"})
    led.record({"kind": "path", "path": str(tmp_path / "fine")})
    with pytest.raises(LedgerError, match="does_not_exist"):
        led.unwind()


def test_clean_undoes_ledgers_of_dead_runs_only(tmp_path: Path) -> None:
    # A run that died: its owner process is gone, its sleeper lives on.
    dead = subprocess.Popen(["true"])
    dead_start = start_time(dead.pid)
    dead.wait()
    orphan = subprocess.Popen(["sleep", "30"], start_new_session=True)
    orphan_start = start_time(orphan.pid)
    assert orphan_start is not None
    leftover = tmp_path / "leftover"
    leftover.write_text("x")
    stale = tmp_path / "run-1-1.jsonl"
    lines = [
        {"kind": "owner", "pid": dead.pid, "start": dead_start or 1},
        {"kind": "path", "path": str(leftover)},
        {"kind": "process", "pid": orphan.pid, "start": orphan_start, "argv": ["sleep", "30"]},
    ]
    stale.write_text("".join(json.dumps(e) + "\n" for e in lines) + '{"kind": "pa')  # cut by the crash
    alive = Ledger(tmp_path)  # this process is alive: its ledger must not be touched
    alive.record({"kind": "path", "path": str(tmp_path / "mine")})
    (tmp_path / "mine").write_text("y")

    report = ledger_mod.clean(tmp_path)

    assert report == ["run-1-1.jsonl: undid 2 change(s)"]
    assert orphan.wait(timeout=5) != 0
    assert not leftover.exists() and not stale.exists()
    assert alive.file.exists() and (tmp_path / "mine").exists()
    alive.unwind()
    assert not (tmp_path / "mine").exists()


def test_clean_by_purpose_leaves_other_dead_runs_alone(tmp_path: Path) -> None:
    """`cc unload NAME` undoes what `cc load NAME` left, not another dead run's changes."""
    dead = subprocess.Popen(["true"])
    dead_start = start_time(dead.pid) or 1
    dead.wait()
    for name, purpose in (("run-1-1.jsonl", "cc load cubic_plus"), ("run-2-2.jsonl", None)):
        made = tmp_path / name.replace(".jsonl", ".made")
        made.write_text("x")
        owner = {"kind": "owner", "pid": dead.pid, "start": dead_start, **({"purpose": purpose} if purpose else {})}
        entries = [owner, {"kind": "path", "path": str(made)}]
        (tmp_path / name).write_text("".join(json.dumps(e) + "\n" for e in entries))

    report = ledger_mod.clean(tmp_path, only=ledger_mod.with_purpose("cc load cubic_plus"))

    assert report == ["run-1-1.jsonl: undid 1 change(s)"]
    assert not (tmp_path / "run-1-1.made").exists()
    assert (tmp_path / "run-2-2.jsonl").exists() and (tmp_path / "run-2-2.made").exists()
