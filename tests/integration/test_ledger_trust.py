"""`clean` acts on a namespace only when it is provably the dead run's.

A namespace's inode number goes to the next namespace made as soon as the
first is freed: a dead run's ledger that names a namespace by inode alone
would have `clean` SIGKILL whatever now lives in another one.  The ledger
records each namespace's cookie (SO_NETNS_COOKIE, never given twice in a
boot) and the boot's id; `clean` acts only where both match now.
"""

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ground import ledgers, proc, undo
from ground.ledger import Ledger

pytestmark = pytest.mark.root


def dead_owner() -> dict[str, Any]:
    dead = subprocess.Popen(["true"])
    started = proc.start_time(dead.pid) or 1
    dead.wait()
    return {"kind": "owner", "pid": dead.pid, "start": started, "boot": proc.boot_id()}


def write_ledger(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


class Namespace:
    """A namespace of its own with a sleeper in it, as a lab host's would be."""

    def __init__(self) -> None:
        self.sleeper = subprocess.Popen(["unshare", "--net", "--", "sleep", "60"], start_new_session=True)
        deadline = time.monotonic() + 5
        while proc.netns_inode(self.sleeper.pid) in (None, proc.netns_inode()):
            assert time.monotonic() < deadline, "unshare did not make a namespace"
            time.sleep(0.01)
        self.started = proc.start_time(self.sleeper.pid)
        assert self.started is not None
        self.handle = proc.Netns.open("host", self.sleeper.pid)
        assert self.handle.inode is not None
        self.inode: int = self.handle.inode
        self.cookie = proc.netns_cookie(self.handle.fd)
        assert self.cookie is not None, "SO_NETNS_COOKIE (Linux 5.14+)"

    def alive(self) -> bool:
        return proc.is_alive(self.sleeper.pid, self.started or -1)

    def end(self) -> None:
        self.handle.close()
        if self.sleeper.poll() is None:
            self.sleeper.kill()
        self.sleeper.wait()


@pytest.fixture
def namespaces() -> Iterator[list[Namespace]]:
    made: list[Namespace] = []
    yield made
    for ns in made:
        ns.end()


def test_clean_leaves_alone_a_namespace_that_took_a_dead_runs_inode(
    tmp_path: Path, namespaces: list[Namespace]
) -> None:
    """X, recorded by a run that died, is gone; Y holds X's inode number now (the kernel's own reuse
    where it happens here at once, else Y's inode written in the dead ledger with X's cookie)."""
    x = Namespace()
    namespaces.append(x)
    x_inode, x_cookie = x.inode, x.cookie
    x.end()
    y = None
    for _ in range(20):  # the kernel frees a namespace asynchronously: try for the same number
        y = Namespace()
        namespaces.append(y)
        if y.inode == x_inode:
            break
        time.sleep(0.05)
    assert y is not None
    print(f"X inode {x_inode}, Y inode {y.inode}: {'reused' if y.inode == x_inode else 'not reused, faked'}")
    stale = write_ledger(
        tmp_path / "run-1-1.jsonl",
        [
            dead_owner(),
            {"kind": "namespace", "inode": y.inode, "name": "client", "cookie": x_cookie, "boot": proc.boot_id()},
        ],
    )

    report = undo.clean(tmp_path)

    assert report == [
        f"run-1-1.jsonl: undid 0 change(s); namespace inode {y.inode} (client): "
        "another namespace holds that number now; left alone"
    ]
    assert y.alive(), "nothing inside the namespace that took the number was killed"
    assert proc.processes_in_netns([y.inode]) == [y.sleeper.pid]
    assert not stale.exists(), "nothing left of the run's to undo"


def test_an_older_ledger_without_the_identity_acts_only_through_a_process_it_recorded(
    tmp_path: Path, namespaces: list[Namespace]
) -> None:
    """An entry of {inode, name} alone proves nothing: left alone.  The same entry beside a process
    the run recorded (pid and start time) that still lives in that namespace: the run's, undone."""
    y = Namespace()
    namespaces.append(y)
    write_ledger(tmp_path / "run-1-1.jsonl", [dead_owner(), {"kind": "namespace", "inode": y.inode, "name": "h1"}])
    report = undo.clean(tmp_path)
    assert report == [
        f"run-1-1.jsonl: undid 0 change(s); namespace inode {y.inode} (h1): its identity was not recorded "
        "(an older ledger) and no process of the run is in it; left alone"
    ]
    assert y.alive()

    # A second process in the namespace, not recorded: ended with the namespace once it is proven the run's.
    stray = subprocess.Popen(y.handle.wrap(["sleep", "60"]), pass_fds=y.handle.pass_fds, start_new_session=True)
    try:
        deadline = time.monotonic() + 5
        while len(proc.processes_in_netns([y.inode])) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        write_ledger(
            tmp_path / "run-2-2.jsonl",
            [
                dead_owner(),
                {"kind": "process", "pid": y.sleeper.pid, "start": y.started, "argv": ["h1"]},
                {"kind": "namespace", "inode": y.inode, "name": "h1"},
            ],
        )
        assert undo.clean(tmp_path) == ["run-2-2.jsonl: undid 2 change(s)"]
        assert stray.wait(timeout=10) != 0 and y.sleeper.wait(timeout=10) != 0
    finally:
        if stray.poll() is None:
            stray.kill()
        stray.wait()


def test_a_namespace_is_recorded_with_its_identity_and_clean_ends_what_is_in_it(
    tmp_path: Path, namespaces: list[Namespace]
) -> None:
    """`Ledger.namespace` records the cookie and the boot; a dead run's namespace that still has
    them is the run's: whatever runs in it is ended, though the run never recorded it."""
    y = Namespace()
    namespaces.append(y)
    with Ledger(tmp_path, contain=False) as led:
        led.namespace(y.handle)
        entry = ledgers.read(led.file).entries[-1]
        assert entry == {
            "kind": "namespace",
            "inode": y.inode,
            "name": "host",
            "cookie": y.cookie,
            "boot": proc.boot_id(),
            "seq": 1,
        }
        led._entries.clear()  # this test's ledger leaves the namespace to the "dead" one below
    write_ledger(tmp_path / "run-1-1.jsonl", [dead_owner(), entry])
    assert undo.clean(tmp_path) == ["run-1-1.jsonl: undid 1 change(s)"]
    assert y.sleeper.wait(timeout=10) != 0, "the sleeper the run never recorded is ended with its namespace"
