"""The ledger: what is recorded is undone, by the run itself or by `clean`."""

import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ground import cgroups, kernel, proc
from ground import ledger as ledger_mod
from ground.ledger import Entry, Ledger, LedgerError
from ground.proc import NamespaceError, Netns, Process, is_alive, start_time, terminate

needs_cgroups = pytest.mark.skipif(not cgroups.usable(), reason="needs root and a cgroup v2 hierarchy")


def dead_owner() -> dict[str, Any]:
    """The owner line of a run that has ended."""
    dead = subprocess.Popen(["true"])
    started = start_time(dead.pid) or 1
    dead.wait()
    return {"kind": "owner", "pid": dead.pid, "start": started}


def write_ledger(path: Path, entries: list[dict[str, Any]], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + tail)
    return path


def test_unwind_undoes_everything_and_drops_the_file(tmp_path: Path) -> None:
    made = tmp_path / "made"
    made.mkdir()
    (made / "inside").write_text("x")
    with Ledger(tmp_path, contain=False) as led:
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
    led = Ledger(tmp_path, contain=False)
    with pytest.raises(ValueError):
        led.record({"kind": "mystery"})
    led.unwind()


def test_undo_is_idempotent(tmp_path: Path) -> None:
    led = Ledger(tmp_path, contain=False)
    led.record({"kind": "path", "path": str(tmp_path / "never-made")})
    led.record({"kind": "process", "pid": 2**22 - 1, "start": 1, "argv": ["gone"]})
    led.unwind()


def test_failed_steps_are_all_reported(tmp_path: Path) -> None:
    led = Ledger(tmp_path, contain=False)
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
    alive = Ledger(tmp_path, contain=False)  # this process is alive: its ledger must not be touched
    alive.record({"kind": "path", "path": str(tmp_path / "mine")})
    (tmp_path / "mine").write_text("y")

    report = ledger_mod.clean(tmp_path)

    assert report == [
        'run-1-1.jsonl: undid 2 change(s) (its last line, \'{"kind": "pa\', was cut by the crash: never carried out)'
    ]
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


@needs_cgroups
def test_a_contained_run_ends_processes_that_left_its_process_group(tmp_path: Path) -> None:
    """A daemon that made a session of its own (setsid) cannot escape the run's cgroup."""
    with Ledger(tmp_path) as led:
        assert led.cgroup is not None and os.getpid() in cgroups.members(led.cgroup)
        kinds = [json.loads(line)["kind"] for line in led.file.read_text().splitlines()]
        assert kinds == ["owner", "cgroup"], "the cgroup is recorded before anything runs in it"
        pidfile = tmp_path / "escaped.pid"
        subprocess.run(["setsid", "-f", "sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"], check=True)
        for _ in range(100):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            time.sleep(0.02)
        escaped = int(pidfile.read_text())
        started = start_time(escaped)
        assert started is not None and os.getpgid(escaped) != os.getpgid(0)
        group = led.cgroup
    assert not is_alive(escaped, started)
    assert not group.exists()
    assert os.getpid() not in cgroups.members(group)


def test_a_module_is_undone_only_after_the_processes_that_pin_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Phases, not plain newest-first: the server started before the algorithm was loaded
    is ended before the algorithm is removed (a module cannot go while a socket pins it)."""
    server = subprocess.Popen(["sleep", "30"], start_new_session=True)
    server_start = start_time(server.pid)
    seen: list[str] = []

    def remove_module(e: Entry, ctx: ledger_mod.Context) -> None:
        seen.append("server alive" if is_alive(server.pid, server_start or -1) else "server gone")

    phases = tuple(
        (name, {**steps, "module": remove_module} if "module" in steps else steps) for name, steps in ledger_mod.PHASES
    )
    monkeypatch.setattr(ledger_mod, "PHASES", phases)
    stale = write_ledger(
        tmp_path / "run-1-1.jsonl",
        [
            dead_owner(),
            {"kind": "process", "pid": server.pid, "start": server_start, "argv": ["apache2"]},
            {"kind": "module", "name": "cubic_plus"},
        ],
    )
    assert ledger_mod.clean(tmp_path) == ["run-1-1.jsonl: undid 2 change(s)"]
    server.wait(timeout=5)
    assert seen == ["server gone"]
    assert not stale.exists()


def test_a_malformed_line_is_reported_and_the_ledger_kept(tmp_path: Path) -> None:
    made = tmp_path / "made"
    made.write_text("x")
    stale = write_ledger(
        tmp_path / "run-1-1.jsonl",
        [dead_owner(), {"kind": "path", "path": str(made)}],
        tail='{"kind": "sysctl", "key": \n[1, 2]\n{"kind": "path", "path": "/x"}\n',
    )
    report = ledger_mod.clean(tmp_path)
    assert len(report) == 1 and "kept" in report[0] and "failed" in report[0]
    assert "line 3" in report[0] and "line 4" in report[0], report[0]
    assert not made.exists(), "what could be read is still undone"
    assert stale.exists(), "a ledger with lines it cannot read stays for a look"


def test_a_ledger_without_its_owner_line_is_kept(tmp_path: Path) -> None:
    stale = write_ledger(tmp_path / "run-1-1.jsonl", [], tail='{"kind": "owner", "pi')
    report = ledger_mod.clean(tmp_path)
    assert report and "cannot tell whose" in report[0]
    assert stale.exists()


def test_clean_keeps_a_ledger_whose_undo_failed_and_says_why(tmp_path: Path) -> None:
    stale = write_ledger(
        tmp_path / "run-1-1.jsonl", [dead_owner(), {"kind": "sysctl", "key": "net.netrepro.nope", "old": "1"}]
    )
    first = ledger_mod.clean(tmp_path)
    assert "kept" in first[0] and "net.netrepro.nope" in first[0]
    assert stale.exists()
    assert ledger_mod.clean(tmp_path) == first, "clean tries again, and says so again, instead of forgetting"


def test_a_change_that_failed_is_cancelled_and_never_undone(tmp_path: Path) -> None:
    """An intent recorded and then not carried out (the path existed: not ours) is not undone."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    led = Ledger(tmp_path, contain=False)
    with pytest.raises(FileExistsError), led.change({"kind": "path", "path": str(theirs)}):
        theirs.mkdir()
    kinds = [json.loads(line)["kind"] for line in led.file.read_text().splitlines()]
    assert kinds == ["owner", "path", "cancel"]
    led.unwind()
    assert theirs.is_dir()


def test_temp_dir_is_private_and_goes_with_the_run(tmp_path: Path) -> None:
    with Ledger(tmp_path, contain=False) as led:
        work = led.temp_dir("netrepro-test-")
        assert work.is_dir() and (work.stat().st_mode & 0o777) == 0o700
        (work / "file").write_text("x")
    assert not work.exists()


def test_signals_are_held_around_a_change_and_its_record(tmp_path: Path) -> None:
    led = Ledger(tmp_path, contain=False)
    got: list[int] = []
    previous = signal.signal(signal.SIGHUP, lambda signum, frame: got.append(signum))
    try:
        with led.change({"kind": "path", "path": str(tmp_path / "x")}):
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.05)
            assert got == [], "the signal waits until the change is recorded and made"
        assert got == [signal.SIGHUP]
    finally:
        signal.signal(signal.SIGHUP, previous)
        led.unwind()


class FakeSysctls:
    def __init__(self, allowed: str) -> None:
        self.values = {ledger_mod.CC_ALLOWED: allowed}

    def read(self, key: str) -> str:
        return self.values[key]

    def write(self, key: str, value: str) -> None:
        self.values[key] = value


def test_allowed_congestion_controls_are_held_not_undone_under_a_live_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead run widened the list; a live run uses the same name: clean leaves it, and
    the live run, last out, narrows it back to what it was before either."""
    sysctls = FakeSysctls("reno bbr cubic")
    monkeypatch.setattr(ledger_mod, "read_sysctl", sysctls.read)
    monkeypatch.setattr(ledger_mod, "_write_sysctl", sysctls.write)
    write_ledger(tmp_path / "run-1-1.jsonl", [dead_owner(), {"kind": "cc_allowed", "name": "cubic", "added": True}])
    live = Ledger(tmp_path, contain=False)
    live.allow_congestion_control("cubic")
    live.allow_congestion_control("reno")
    assert ledger_mod.clean(tmp_path) == ["run-1-1.jsonl: undid 1 change(s)"]
    assert sysctls.values[ledger_mod.CC_ALLOWED] == "reno bbr cubic", "still held by the live run"
    live.unwind()
    assert sysctls.values[ledger_mod.CC_ALLOWED] == "reno bbr", "reno was there before; cubic came with the runs"


def test_older_ledgers_cc_allowed_lists_are_still_undone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sysctls = FakeSysctls("reno bbr cubic cubic_plus")
    monkeypatch.setattr(ledger_mod, "read_sysctl", sysctls.read)
    monkeypatch.setattr(ledger_mod, "_write_sysctl", sysctls.write)
    write_ledger(tmp_path / "run-1-1.jsonl", [dead_owner(), {"kind": "cc_allowed", "added": ["cubic", "cubic_plus"]}])
    ledger_mod.clean(tmp_path)
    assert sysctls.values[ledger_mod.CC_ALLOWED] == "reno bbr"


def test_the_machine_lock_nests_in_a_process_and_excludes_others(tmp_path: Path) -> None:
    with ledger_mod.machine_lock(tmp_path), ledger_mod.machine_lock(tmp_path):
        fd = os.open(tmp_path / "machine.lock", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    fd = os.open(tmp_path / "machine.lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again
    os.close(fd)


def test_a_group_whose_leader_died_is_still_ended() -> None:
    """The leader exits at once; the job it left in its group is found and ended."""
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!"], stdout=subprocess.PIPE, start_new_session=True)
    assert leader.stdout is not None
    child = int(leader.stdout.readline())
    leader_start = start_time(leader.pid) or -1
    leader.wait()
    child_start = start_time(child)
    assert child_start is not None
    terminate(leader.pid, leader_start)
    assert not is_alive(child, child_start)


def test_the_runs_own_namespace_is_refused() -> None:
    with pytest.raises(NamespaceError, match="own"):
        Netns.open("client", os.getpid())


def test_a_namespace_handle_outlives_its_pid() -> None:
    """The descriptor is what nsenter enters: not /proc/<pid>, which a reused pid would redirect."""
    ns = Netns("x", 12345, fd=7, inode=1)
    assert ns.wrap(["ip", "link"]) == ["nsenter", "--net=/proc/self/fd/7", "--", "ip", "link"]
    assert ns.pass_fds == (7,)
    with pytest.raises(NamespaceError):
        Netns("y", 12345).wrap(["true"])


def test_modprobe_records_the_modules_loaded_before_and_a_failed_load_as_not_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Ledger.modprobe`: the entry (cause, the names loaded before) is written before modprobe runs; a
    modprobe that fails leaves the entry cancelled, so nothing is unloaded for it."""
    ran: list[list[str]] = []

    def modprobe(argv: list[str], *args: object, **kwargs: object) -> None:
        ran.append(argv)
        on_disk = [json.loads(line) for line in led.file.read_text().splitlines()]
        assert on_disk[-1]["kind"] == "modules_loaded", "recorded before the change"
        if argv[-1] == "nosuch":
            raise OSError("modprobe: FATAL: Module nosuch not found")

    monkeypatch.setattr(proc, "run", modprobe)
    led = Ledger(tmp_path, contain=False)
    led.modprobe("tcp_yeah", ["veth", "bridge"])
    with pytest.raises(OSError):
        led.modprobe("nosuch", ["veth"])
    assert ran == [["modprobe", "tcp_yeah"], ["modprobe", "nosuch"]]
    entries = [json.loads(line) for line in led.file.read_text().splitlines()][1:]
    assert [(e["kind"], e.get("cause"), e.get("before")) for e in entries] == [
        ("modules_loaded", "tcp_yeah", ["bridge", "veth"]),
        ("modules_loaded", "nosuch", ["veth"]),
        ("cancel", None, None),
    ]
    assert entries[2]["cancels"] == entries[1]["seq"]
    unloaded: list[list[str]] = []
    monkeypatch.setattr(kernel, "unload_modules_not_in", lambda before, settle: unloaded.append(before))
    led.unwind()
    assert unloaded == [["bridge", "veth"]], "the cancelled load undoes nothing"


def test_modules_loaded_since_are_removed_unless_another_live_run_holds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`modules_loaded` (the openvswitch module and what its users load after it): the names loaded
    before are kept; undone only when no other live run has the same cause recorded."""
    kept: list[list[str]] = []
    monkeypatch.setattr(kernel, "unload_modules_not_in", lambda before, settle: kept.append(before))
    entry = {"kind": "modules_loaded", "cause": "openvswitch", "before": ["bridge", "veth"]}
    other, mine = Ledger(tmp_path, contain=False), Ledger(tmp_path, contain=False)
    other.record(dict(entry))
    mine.record(dict(entry))
    mine.unwind()
    assert kept == [], "another live run holds the datapath: left loaded"
    other.unwind()
    assert kept == [["bridge", "veth"]]
