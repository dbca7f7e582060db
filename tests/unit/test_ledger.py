"""The ledger: what is recorded is undone, by the run itself or by `clean`."""

import errno
import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ground import cgroups, kernel, ledgers, modules, proc, undo
from ground import ledger as ledger_mod
from ground.errors import SetupError
from ground.ledger import Ledger
from ground.ledgers import Entry, LedgerError
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
    """Unwinding twice: the second undoes nothing again (the same path, made anew since, is not the
    run's) and raises nothing."""
    made = tmp_path / "made"
    made.mkdir()
    led = Ledger(tmp_path, contain=False)
    led.record({"kind": "path", "path": str(made)})
    led.record({"kind": "path", "path": str(tmp_path / "never-made")})
    led.record({"kind": "process", "pid": 2**22 - 1, "start": 1, "argv": ["gone"]})
    led.unwind()
    assert not made.exists() and not led.file.exists()
    made.mkdir()
    led.unwind()
    assert made.is_dir(), "undone once only"
    assert not led.file.exists()


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

    report = undo.clean(tmp_path)

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

    report = undo.clean(tmp_path, only=undo.with_purpose("cc load cubic_plus"))

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

    def remove_module(e: Entry, ctx: undo.Context) -> None:
        seen.append("server alive" if is_alive(server.pid, server_start or -1) else "server gone")

    phases = tuple(
        (name, {**steps, "module": remove_module} if "module" in steps else steps) for name, steps in undo.PHASES
    )
    monkeypatch.setattr(undo, "PHASES", phases)
    stale = write_ledger(
        tmp_path / "run-1-1.jsonl",
        [
            dead_owner(),
            {"kind": "process", "pid": server.pid, "start": server_start, "argv": ["apache2"]},
            {"kind": "module", "name": "cubic_plus"},
        ],
    )
    assert undo.clean(tmp_path) == ["run-1-1.jsonl: undid 2 change(s)"]
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
    report = undo.clean(tmp_path)
    assert len(report) == 1 and "kept" in report[0] and "failed" in report[0]
    assert "line 3" in report[0] and "line 4" in report[0], report[0]
    assert not made.exists(), "what could be read is still undone"
    assert stale.exists(), "a ledger with lines it cannot read stays for a look"


def test_a_ledger_in_which_nothing_can_be_read_is_removed_with_a_note(tmp_path: Path) -> None:
    """Empty, or only an owner line cut short (a run that died making it, under older code): no
    change can be undone from it, and keeping it would have `clean` report it for ever.  Whose it
    is, the name says; one whose run lives is left alone, one with entries but no owner kept."""
    owner = dead_owner()
    dead = f"{owner['pid']}-{owner['start']}"
    empty = write_ledger(tmp_path / f"run-{dead}-aaaaaa.jsonl", [])
    torn = write_ledger(tmp_path / f"run-{dead}-bbbbbb.jsonl", [], tail='{"kind": "owner", "pi')
    living = write_ledger(tmp_path / f"run-{os.getpid()}-{start_time(os.getpid())}-cccccc.jsonl", [])
    ownerless = write_ledger(tmp_path / f"run-{dead}-dddddd.jsonl", [{"kind": "path", "path": "/nonexistent"}])
    report = undo.clean(tmp_path)
    assert sorted(report) == [
        f"run-{dead}-aaaaaa.jsonl: removed, no change could be read in it (empty); its run died",
        f"run-{dead}-bbbbbb.jsonl: removed, no change could be read in it "
        '(only \'{"kind": "owner", "pi\', cut short); its run died',
        f"run-{dead}-dddddd.jsonl: kept, failed: no owner line, cannot tell whose it is ()",
    ]
    assert not empty.exists() and not torn.exists()
    assert living.exists() and ownerless.exists()


def test_a_short_write_refuses_the_change_and_leaves_the_ledger_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk: the entry's first half is written, then ENOSPC.  The change is never made, the
    error names the file and the errno, and the half entry is cut off again: the file reads as
    before, and the next entry is not glued onto a torn one."""
    led = Ledger(tmp_path, contain=False)
    real_write = os.write
    writes: list[int] = []

    def full_disk(fd: int, data: Any) -> int:
        if fd != led._fd:
            return real_write(fd, data)
        writes.append(len(data))
        if len(writes) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full_disk)
    made: list[str] = []
    target = tmp_path / "never"
    with pytest.raises(SetupError) as raised, led.change({"kind": "path", "path": str(target)}):
        made.append("changed")
        target.mkdir()
    monkeypatch.setattr(os, "write", real_write)
    assert made == [] and not target.exists(), "the change is not made"
    assert str(led.file) in str(raised.value) and "ENOSPC" in str(raised.value)
    assert len(writes) == 2, "the rest of a short write is tried before giving up"
    found = ledgers.read(led.file)
    assert not found.torn and not found.unreadable
    assert [e["kind"] for e in found.entries] == ["owner"]
    later = tmp_path / "later"
    with led.change({"kind": "path", "path": str(later)}):
        later.mkdir()
    found = ledgers.read(led.file)
    assert [e["kind"] for e in found.entries] == ["owner", "path"] and not found.unreadable
    assert found.entries[1]["seq"] == 1, "the refused entry took no number"
    led.unwind()
    assert not later.exists() and not led.file.exists()


def test_a_ledger_file_never_exists_without_its_owner_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file appears under its name with its owner line already written and synced; a failure
    while making it (here fsync's EIO) leaves no file at all, and says so."""
    real_write = os.write
    seen: list[list[Path]] = []

    def watch(fd: int, data: Any) -> int:
        if b'"kind": "owner"' in bytes(data):
            seen.append(sorted(tmp_path.glob("*run-*.jsonl")))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", watch)
    led = Ledger(tmp_path, contain=False)
    monkeypatch.setattr(os, "write", real_write)
    assert seen == [[]], "no file under a ledger's name while its owner line is being written"
    assert [e["kind"] for e in ledgers.read(led.file).entries] == ["owner"]
    assert ledgers.read(led.file).owner == {"kind": "owner", **led.owner, "time": ANY_TIME}
    led.unwind()

    def broken_disk(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", broken_disk)
    with pytest.raises(SetupError, match="EIO"):
        Ledger(tmp_path, contain=False)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir() if p.name != "machine.lock"] == [], "no empty ledger left"


class _AnyTime(float):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, float)

    __hash__ = float.__hash__


ANY_TIME = _AnyTime()


def test_clean_keeps_a_ledger_whose_undo_failed_and_says_why(tmp_path: Path) -> None:
    stale = write_ledger(
        tmp_path / "run-1-1.jsonl", [dead_owner(), {"kind": "sysctl", "key": "net.netrepro.nope", "old": "1"}]
    )
    first = undo.clean(tmp_path)
    assert "kept" in first[0] and "net.netrepro.nope" in first[0]
    assert stale.exists()
    assert undo.clean(tmp_path) == first, "clean tries again, and says so again, instead of forgetting"


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


def test_a_signal_while_unwinding_waits_until_everything_is_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that began to unwind and is then sent SIGTERM undoes every entry and drops its file first."""
    made = [tmp_path / "first", tmp_path / "second"]
    led = Ledger(tmp_path, contain=False)
    for path in made:
        path.mkdir()
        led.record({"kind": "path", "path": str(path)})
    files = dict(undo.PHASES)["files"]
    undo_path = files["path"]

    def undo_and_be_signalled(e: Entry, ctx: undo.Context) -> None:
        undo_path(e, ctx)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler would run here, between this entry and the next

    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    monkeypatch.setitem(files, "path", undo_and_be_signalled)
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        with pytest.raises(SystemExit):
            led.unwind()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert not any(path.exists() for path in made)
    assert not led.file.exists()


class FakeSysctls:
    def __init__(self, allowed: str) -> None:
        self.values = {ledgers.CC_ALLOWED: allowed}

    def read(self, key: str) -> str:
        return self.values[key]

    def write(self, key: str, value: str) -> None:
        self.values[key] = value

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """In place of /proc/sys, for the run's ledger (which widens) and for undoing (which narrows)."""
        for module in (ledger_mod, undo):
            monkeypatch.setattr(module, "read_sysctl", self.read)
            monkeypatch.setattr(module, "write_sysctl", self.write)


def test_allowed_congestion_controls_are_held_not_undone_under_a_live_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead run widened the list; a live run uses the same name: clean leaves it, and
    the live run, last out, narrows it back to what it was before either."""
    sysctls = FakeSysctls("reno bbr cubic")
    sysctls.install(monkeypatch)
    write_ledger(tmp_path / "run-1-1.jsonl", [dead_owner(), {"kind": "cc_allowed", "name": "cubic", "added": True}])
    live = Ledger(tmp_path, contain=False)
    live.allow_congestion_control("cubic")
    live.allow_congestion_control("reno")
    assert undo.clean(tmp_path) == ["run-1-1.jsonl: undid 1 change(s)"]
    assert sysctls.values[ledgers.CC_ALLOWED] == "reno bbr cubic", "still held by the live run"
    live.unwind()
    assert sysctls.values[ledgers.CC_ALLOWED] == "reno bbr", "reno was there before; cubic came with the runs"


def test_two_runs_unwinding_at_once_do_not_each_leave_a_change_to_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two labs of one --jobs run stopped together: the first to reach its congestion-control phase sees
    the second holding `cubic` and leaves it; the second, with the first still unwinding, must not see the
    first holding it too (the soak at 7f97e2d found cubic left in the list after a SIGKILL)."""
    sysctls = FakeSysctls("reno bbr")
    sysctls.install(monkeypatch)
    first, second = Ledger(tmp_path, contain=False), Ledger(tmp_path, contain=False)
    first.allow_congestion_control("cubic")
    second.allow_congestion_control("cubic")
    assert sysctls.values[ledgers.CC_ALLOWED] == "reno bbr cubic"
    # the first run's undo, its file still there (its owner alive, its unwind not finished)
    undo.unwind_entries(ledgers.read(first.file).effective(), first.file, tmp_path)
    assert sysctls.values[ledgers.CC_ALLOWED] == "reno bbr cubic", "the second run still uses it"
    second.unwind()
    assert sysctls.values[ledgers.CC_ALLOWED] == "reno bbr", "the last out narrows it"
    first.unwind()  # nothing of its own left to undo
    assert sysctls.values[ledgers.CC_ALLOWED] == "reno bbr"


def test_older_ledgers_cc_allowed_lists_are_still_undone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sysctls = FakeSysctls("reno bbr cubic cubic_plus")
    sysctls.install(monkeypatch)
    write_ledger(tmp_path / "run-1-1.jsonl", [dead_owner(), {"kind": "cc_allowed", "added": ["cubic", "cubic_plus"]}])
    undo.clean(tmp_path)
    assert sysctls.values[ledgers.CC_ALLOWED] == "reno bbr"


def test_the_machine_lock_nests_in_a_process_and_excludes_others(tmp_path: Path) -> None:
    with ledgers.machine_lock(tmp_path), ledgers.machine_lock(tmp_path):
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
    unloaded: list[tuple[list[str], set[str]]] = []

    def unload_owned(before: str, ours: set[str], settle: float) -> None:
        unloaded.append((sorted(modules.parse_proc_modules(before)), set(ours)))

    monkeypatch.setattr(modules, "unload_owned", unload_owned)
    led.unwind()
    assert unloaded == [(["bridge", "veth"], {"tcp_yeah"})], "the cancelled load undoes nothing"


def test_modules_loaded_since_are_removed_unless_another_live_run_holds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`modules_loaded` (the openvswitch module, with its dependencies): the names loaded before are
    kept; undone only when no other live run has the same cause recorded."""
    kept: list[tuple[list[str], set[str]]] = []

    def unload_owned(before: str, ours: set[str], settle: float) -> None:
        kept.append((sorted(modules.parse_proc_modules(before)), set(ours)))

    monkeypatch.setattr(modules, "unload_owned", unload_owned)
    entry = {"kind": "modules_loaded", "cause": "openvswitch", "before": ["bridge", "veth"]}
    other, mine = Ledger(tmp_path, contain=False), Ledger(tmp_path, contain=False)
    other.record(dict(entry))
    mine.record(dict(entry))
    mine.unwind()
    assert kept == [], "another live run holds the datapath: left loaded"
    other.unwind()
    assert kept == [(["bridge", "veth"], {"openvswitch"})]


class FakeModules:
    """/proc/modules and rmmod, for a kernel with loadable modules (this machine has none)."""

    def __init__(self, modules: dict[str, tuple[str, ...]]) -> None:
        self.used_by = dict(modules)  # name -> the modules that use it
        self.removed: list[str] = []
        self.links: list[dict[str, Any]] = []  # the root namespace's, as `ip -j -d link show` gives them

    def text(self) -> str:
        return "".join(
            f"{name} 16384 {len(users)} {','.join(users) or '-'} Live 0x0\n" for name, users in self.used_by.items()
        )

    def run(self, argv: list[str], *args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        """rmmod NAME, or modprobe NAME (tcp_yeah brings tcp_vegas, which it uses), or the root
        namespace's links."""
        if argv[:4] == ["ip", "-j", "-d", "link"]:
            return subprocess.CompletedProcess(argv, 0, json.dumps(self.links), "")
        name = argv[1]
        if argv[0] == "modprobe":
            if name == "tcp_yeah":
                self.used_by["tcp_vegas"] = ("tcp_yeah",)
            self.used_by[name] = ()
            return subprocess.CompletedProcess(argv, 0, "", "")
        assert argv[0] == "rmmod", argv
        assert not self.used_by[name], f"{name} is in use"
        del self.used_by[name]
        self.used_by = {m: tuple(u for u in users if u != name) for m, users in self.used_by.items()}
        self.removed.append(name)
        return subprocess.CompletedProcess(argv, 0, "", "")


def test_a_runs_end_keeps_the_modules_another_live_run_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This run loaded tcp_yeah (which brought tcp_vegas); another live run then loaded tcp_hybla, a
    third insmod-ed cubic_plus, and a fourth loaded the openvswitch datapath and its lab's commands made
    the kernel load sch_netem.  All are unused and loaded since this run's `before`: this run's end
    removes its own two, and leaves the others' (before, it removed every one of them)."""
    fake = FakeModules({"veth": ()})
    monkeypatch.setattr(modules, "_read_proc_modules", fake.text)
    monkeypatch.setattr(proc, "run", fake.run)
    mine = Ledger(tmp_path, contain=False)
    mine.modprobe("tcp_yeah", ["veth"])
    hybla = Ledger(tmp_path, contain=False)
    hybla.modprobe("tcp_hybla", ["veth"])  # read before tcp_yeah came: read again under the lock
    plus = Ledger(tmp_path, contain=False)
    with plus.change({"kind": "module", "name": "cubic_plus"}):
        fake.used_by["cubic_plus"] = ()
    ovs = Ledger(tmp_path, contain=False)
    ovs.record({"kind": "modules_loaded", "cause": "openvswitch", "before": sorted(fake.used_by)})
    fake.used_by["openvswitch"] = ()
    fake.used_by["sch_netem"] = ()  # for a qdisc of its lab's, since removed
    ovs.record({"kind": "autoloads", "cause": "tc qdisc add dev s1-eth1 root netem", "loaded": ["sch_netem"]})
    entries = [json.loads(line) for line in hybla.file.read_text().splitlines()][1:]

    mine.unwind()
    assert fake.removed == ["tcp_yeah", "tcp_vegas"]
    assert set(fake.used_by) == {"veth", "tcp_hybla", "cubic_plus", "openvswitch", "sch_netem"}
    assert [(e["before"], e.get("loaded")) for e in entries] == [
        (["tcp_vegas", "tcp_yeah", "veth"], None),
        (["tcp_vegas", "tcp_yeah", "veth"], ["tcp_hybla"]),
    ], "the intent first, then what the load brought"
    hybla.unwind()
    assert fake.removed[2:] == ["tcp_hybla"], "its own, not what other live runs may hold"
    ovs.unwind()
    assert sorted(fake.removed[3:]) == ["openvswitch", "sch_netem"], "cubic_plus was loaded before it recorded"
    plus.unwind()  # its `module` entry is undone through /sys/module, not faked here


def test_what_the_kernel_loaded_for_a_lab_goes_with_the_last_run_that_may_hold_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run A's lab makes the kernel load ifb and sch_netem (ifb brings ifb0 and ifb1 to the root
    namespace); run B's lab starts after, finds them loaded, and holds them too; meanwhile someone
    else loads `vfat`, and A's own end, with B alive, removes nothing.  B's lab then makes the kernel
    load br_netfilter (with its bridge-nf-call-* sysctls): B's end removes what both labs loaded and
    leaves vfat."""
    fake = FakeModules({"veth": (), "bridge": ()})
    monkeypatch.setattr(modules, "_read_proc_modules", fake.text)
    monkeypatch.setattr(proc, "run", fake.run)
    a = Ledger(tmp_path, contain=False)
    a.watch_autoloads()
    a.watch_autoloads()  # once a run, however many labs it builds
    with a.autoloading("tc qdisc add dev h1-eth0 root netem delay 10ms"):
        fake.used_by.update({"ifb": (), "sch_netem": ()})
    b = Ledger(tmp_path, contain=False)
    b.watch_autoloads()
    fake.used_by["vfat"] = ()
    a.unwind()
    assert fake.removed == [], "B's lab may use them"
    with b.autoloading("iptables -A FORWARD -m physdev --physdev-out s1-eth2 -j NFQUEUE"):
        fake.used_by["br_netfilter"] = ()
        fake.used_by["bridge"] = ("br_netfilter",)
    recorded = [json.loads(line) for line in b.file.read_text().splitlines()][1:]
    assert [(e["kind"], e.get("before"), e.get("inherited"), e.get("loaded")) for e in recorded] == [
        ("autoloads", ["bridge", "ifb", "sch_netem", "veth"], ["ifb", "sch_netem"], None),
        ("autoloads", None, None, ["br_netfilter"]),
    ]
    fake.links = [{"ifname": n, "linkinfo": {"info_kind": "ifb"}} for n in ("ifb0", "ifb1")]
    b.unwind()
    assert sorted(fake.removed) == ["br_netfilter", "ifb", "sch_netem"], "ifb0 and ifb1 go with ifb"
    assert set(fake.used_by) == {"veth", "bridge", "vfat"}


def test_a_link_module_stays_while_a_device_of_its_kind_made_by_someone_else_is_in_the_root_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lab's tools loaded bridge and veth; meanwhile someone made a bridge (docker0) in the root
    namespace: removing the module would delete it, so the bridge module stays, veth goes."""
    fake = FakeModules({})
    monkeypatch.setattr(modules, "_read_proc_modules", fake.text)
    monkeypatch.setattr(proc, "run", fake.run)
    run = Ledger(tmp_path, contain=False)
    run.watch_autoloads()
    with run.autoloading("the lab's start"):
        fake.used_by.update({"stp": ("bridge",), "llc": ("bridge", "stp"), "bridge": (), "veth": ()})
    fake.links = [{"ifname": "lo"}, {"ifname": "docker0", "linkinfo": {"info_kind": "bridge"}}]
    run.unwind()
    assert fake.removed == ["veth"] and set(fake.used_by) == {"bridge", "stp", "llc"}


def test_another_programs_modprobe_during_a_run_and_a_module_loaded_before_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """sch_htb was loaded before the run; the run's own command made the kernel load ifb; between two
    of its commands another program ran `modprobe br_netfilter` (Docker's bridge filtering, with
    bridge, stp and llc).  The run's end removes ifb alone, and names what it leaves.  Before, every
    module of the lab's families loaded since the lab's start went, br_netfilter and its sysctls too."""
    fake = FakeModules({"veth": (), "sch_htb": ()})
    monkeypatch.setattr(modules, "_read_proc_modules", fake.text)
    monkeypatch.setattr(proc, "run", fake.run)
    run = Ledger(tmp_path, contain=False)
    run.watch_autoloads()
    with run.autoloading("ip link add ifb-h1 type ifb"):
        fake.used_by["ifb"] = ()
    fake.used_by.update({"br_netfilter": (), "bridge": ("br_netfilter",), "stp": ("bridge",), "llc": ("bridge", "stp")})
    with run.autoloading("tc qdisc add dev h1-eth0 root handle 1: htb"):
        pass  # sch_htb was there already: nothing recorded
    caplog.set_level("INFO", logger="netrepro")
    run.unwind()
    assert fake.removed == ["ifb"]
    assert set(fake.used_by) == {"veth", "sch_htb", "br_netfilter", "bridge", "stp", "llc"}
    assert "not by it" in caplog.text and "br_netfilter, bridge, llc, stp; left loaded" in caplog.text


def test_a_command_the_run_runs_records_what_the_kernel_loaded_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a run watches (its lab has started), every command it runs through proc.run is a window:
    what appears while it runs is recorded as the run's; a command that loads nothing records nothing;
    the unwind stops watching."""
    texts = iter(["veth 1 0 - Live 0x0\n"] * 4 + ["veth 1 0 - Live 0x0\nsch_netem 1 0 - Live 0x0\n"] * 9)
    monkeypatch.setattr(modules, "_read_proc_modules", lambda: next(texts))
    run = Ledger(tmp_path, contain=False)
    run.watch_autoloads()  # reads 1
    proc.run(["true"])  # reads 2 and 3: nothing new
    assert proc.command_watchers == [run._watch_command]
    proc.run(["sh", "-c", "exit 0"])  # reads 4 (before) and 5: sch_netem came meanwhile
    proc.run(["true"])
    recorded = [json.loads(line) for line in run.file.read_text().splitlines()][1:]
    assert [(e.get("cause"), e.get("loaded")) for e in recorded] == [(None, None), ("sh -c exit 0", ["sch_netem"])]
    monkeypatch.setattr(modules, "unload_owned", lambda *a, **k: None)
    monkeypatch.setattr(modules, "unload_modules_not_in", lambda *a, **k: None)
    run.unwind()
    assert proc.command_watchers == []


def test_a_lab_that_starts_after_a_dead_run_holds_what_that_run_loaded_until_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run killed with ifb loaded by its lab: a new run's lab holds ifb (its netem stages use it),
    so `clean` of the dead run leaves it; the new run's end removes it."""
    fake = FakeModules({"veth": ()})
    monkeypatch.setattr(modules, "_read_proc_modules", fake.text)
    monkeypatch.setattr(proc, "run", fake.run)
    write_ledger(tmp_path / "run-1-1.jsonl", [dead_owner(), {"kind": "autoloads", "before": ["veth"], "inherited": []}])
    fake.used_by["ifb"] = ()
    b = Ledger(tmp_path, contain=False, name_stale=False)
    b.watch_autoloads()
    undo.clean(tmp_path)
    assert fake.removed == [] and not (tmp_path / "run-1-1.jsonl").exists()
    b.unwind()
    assert fake.removed == ["ifb"]


def test_a_kernel_probe_records_what_was_loaded_and_spares_what_a_live_run_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe that loads modules runs under the machine lock with a ledger of its own, written
    before the probe runs; it unloads what it loaded, not what another live run may hold."""
    fake = FakeModules({"veth": (), "tcp_hybla": ()})
    other = Ledger(tmp_path, contain=False)
    other.record({"kind": "modules_loaded", "cause": "tcp_hybla", "before": ["veth"]})
    monkeypatch.setattr(modules, "_read_proc_modules", fake.text)
    monkeypatch.setattr(ledgers, "LEDGER_DIR", tmp_path)
    seen: list[list[str]] = []
    locked: list[bool] = []

    def probe(argv: list[str], *args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        if argv[0] == "rmmod":
            return fake.run(argv)
        probes = [f for f in ledgers.ledger_files(tmp_path) if f.path != other.file]
        seen.append([e["kind"] for f in probes for e in f.entries])
        fd = os.open(tmp_path / "machine.lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked.append(False)
        except BlockingIOError:
            locked.append(True)
        finally:
            os.close(fd)
        fake.used_by["sch_netem"] = ()  # the kernel loaded it for the probe
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(proc, "run", probe)
    kernel.works_in_scratch_netns.cache_clear()
    try:
        assert kernel.works_in_scratch_netns("tc", "qdisc", "add", "dev", "lo", "root", "netem")
    finally:
        kernel.works_in_scratch_netns.cache_clear()
    assert fake.removed == ["sch_netem"] and "tcp_hybla" in fake.used_by
    assert seen == [["owner", "modules_loaded"]], "recorded before the probe ran"
    assert locked == [True], "under the machine lock"
    assert [f.path for f in ledgers.ledger_files(tmp_path)] == [other.file], "the probe's ledger is gone"
    other.unwind()


def test_a_module_parameter_is_written_back_when_the_last_run_holding_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/sys/module/<m>/parameters/<p> is machine-wide (built-in tcp_cubic's too): recorded with its
    old value before the write, and that value written back when the last run that set it ends,
    or by `clean` for a run that died."""
    monkeypatch.setattr(ledgers, "SYS_MODULE", tmp_path / "sys")
    beta = tmp_path / "sys/tcp_cubic/parameters/beta"
    beta.parent.mkdir(parents=True)
    beta.write_text("717\n")
    ledger_dir = tmp_path / "ledgers"
    first, second = Ledger(ledger_dir, contain=False), Ledger(ledger_dir, contain=False)

    real_write_text = Path.write_text

    def write_text(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        if self == beta:
            on_disk = [json.loads(line) for line in first.file.read_text().splitlines()]
            assert on_disk[-1]["kind"] == "module_param" or self.read_text() == "900\n", "recorded first"
        return real_write_text(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)
    first.set_module_parameter("tcp_cubic", "beta", "900")
    monkeypatch.setattr(Path, "write_text", real_write_text)
    second.set_module_parameter("tcp_cubic", "beta", "819")
    entries = [json.loads(line) for line in second.file.read_text().splitlines()]
    assert entries[-1] == {
        "kind": "module_param", "module": "tcp_cubic", "name": "beta", "old": "717", "added": True, "seq": 1
    }, "the value before either run"  # fmt: skip
    assert beta.read_text() == "819\n"
    first.unwind()
    assert beta.read_text() == "819\n", "still held by the second run"
    second.unwind()
    assert beta.read_text() == "717\n"

    beta.write_text("900\n")
    write_ledger(
        ledger_dir / "run-1-1.jsonl",
        [dead_owner(), {"kind": "module_param", "module": "tcp_cubic", "name": "beta", "old": "717", "added": True}],
    )
    assert undo.clean(ledger_dir) == ["run-1-1.jsonl: undid 1 change(s)"]
    assert beta.read_text() == "717\n"


def test_a_ledger_of_an_earlier_boot_has_only_its_files_undone(tmp_path: Path) -> None:
    """Its pids, start times and namespace inodes may all belong to others in this boot."""
    server = subprocess.Popen(["sleep", "30"], start_new_session=True)
    server_start = start_time(server.pid)
    made = tmp_path / "made"
    made.mkdir()
    owner = {**dead_owner(), "boot": "00000000-0000-0000-0000-000000000000"}
    write_ledger(
        tmp_path / "run-1-1.jsonl",
        [owner, {"kind": "process", "pid": server.pid, "start": server_start}, {"kind": "path", "path": str(made)}],
    )
    try:
        report = undo.clean(tmp_path)
        assert report == [
            "run-1-1.jsonl: undid 1 change(s); made in an earlier boot: only its files undone, "
            "the rest went with that boot"
        ]
        assert server.poll() is None, "a process of this boot with the pid and start time it recorded lives on"
        assert not made.exists()
    finally:
        server.kill()
        server.wait()


def test_a_processs_parent_and_name_are_read_from_proc() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert proc.parent(child.pid) == os.getpid() and proc.command_name(child.pid) == "sleep"
    finally:
        child.kill()
        child.wait()
    assert proc.parent(child.pid) is None and proc.command_name(child.pid) == ""  # gone, reaped
