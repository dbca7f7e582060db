"""Open vSwitch as the switch (userspace datapath, which this kernel can run): it forwards, and leaves nothing.

Each test runs a net h1 — s1 — h2 whose switch is a NamespacedOVS with its
own ovsdb-server and ovs-vswitchd inside s1's namespace; the fixture in
conftest.py checks that the machine is as before (the daemons are among the
processes it watches).
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from machine import snapshot, wait_until_as_before
from output import read_until, stop
from ovs_net import OvsNet

from ground import kernel, ledgers, undo
from ground.ledger import Ledger
from ground.parsers import parse_ping
from ground.proc import netns_inode, processes_in_netns, start_time
from ground.results import REPO
from topologies.ovs import OvsError, missing_tools

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(bool(missing_tools()), reason="no Open vSwitch (apt-get install openvswitch-switch)"),
]

DAEMONS = ("ovsdb-server", "ovs-vswitchd")
HELPER = Path(__file__).parent / "ovs_net.py"


def ovs_processes() -> dict[int, str]:
    """Every live ovsdb-server and ovs-vswitchd on the machine, by pid: the command line of each.

    A daemon ended by `clean` stays a zombie until init, which inherited it, reaps it.
    """
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() in DAEMONS and start_time(int(entry.name)) is not None:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
    return found


def test_hosts_ping_through_a_private_open_vswitch_in_the_switch_namespace() -> None:
    before = ovs_processes()
    with Ledger() as ledger:
        net = OvsNet(ledger, datapath="netdev")
        started = time.monotonic()
        net.start()
        try:
            up = time.monotonic() - started
            switch = net.switch
            assert switch.files is not None and switch.ovsdb is not None and switch.vswitchd is not None
            directory = switch.files.directory
            assert directory.stat().st_mode & 0o777 == 0o700
            daemons = {switch.ovsdb.pid, switch.vswitchd.pid}
            assert daemons <= set(ovs_processes()) - set(before)
            # Inside s1's namespace, not the root one, and each in the ledger.
            s1 = net.handles["s1"].inode
            assert all(netns_inode(pid) == s1 for pid in daemons)
            assert daemons <= set(processes_in_netns([s1] if s1 is not None else []))
            recorded = ledgers.read(ledger.file).effective()
            assert daemons <= {e["pid"] for e in recorded if e["kind"] == "process"}
            assert {"kind": "path", "path": str(directory)} in [
                {k: e[k] for k in ("kind", "path")} for e in recorded if e["kind"] == "path"
            ]
            assert all(str(directory) in cmdline for pid, cmdline in ovs_processes().items() if pid in daemons)
            assert not Path("/var/run/openvswitch").exists()

            started = time.monotonic()
            replies = parse_ping(net.ping(count=5))
            ping = time.monotonic() - started
            assert len(replies.rtts_ms) == 5, replies
        finally:
            started = time.monotonic()
            net.stop()
            down = time.monotonic() - started
    print(f"up {up:.2f} s, 5 pings {ping:.2f} s (median {sorted(replies.rtts_ms)[2]:.3f} ms), down {down:.2f} s")
    assert not directory.exists()
    assert ovs_processes().keys() & daemons == set()
    assert set(ovs_processes()) <= set(before)


@pytest.mark.skipif(kernel.openvswitch_datapath_works(), reason="this kernel has the openvswitch datapath")
def test_the_kernel_datapath_where_there_is_none_fails_saying_why_and_leaves_nothing() -> None:
    before = ovs_processes()
    with Ledger() as ledger:
        net = OvsNet(ledger, datapath="system")
        started = time.monotonic()
        with pytest.raises(OvsError) as failed:
            net.start()
        took = time.monotonic() - started
    print(f"refused in {took:.2f} s: {failed.value}")
    assert "s1: ovs-vsctl: Error detected while setting up 's1'" in str(failed.value)
    assert "failed to open datapath of type system" in str(failed.value)  # from ovs-vswitchd's log
    assert took < 5
    assert set(ovs_processes()) <= set(before)
    assert not list(Path(tempfile.gettempdir()).glob("netrepro-ovs-*"))


def wait_for(p: "subprocess.Popen[str]", marker: str, timeout: float = 60) -> list[str]:
    """Read the helper's output until a line starting with `marker`; return that line's other words.
    Without one in time the helper is stopped by SIGTERM, on which it takes its net down and undoes
    its ledger (SIGKILL only if it has not ended a minute later), and the test fails with its output."""
    seen, line = read_until(p, lambda text: text.startswith(marker), timeout)
    if line is not None:
        return line.split()[1:]
    pytest.fail(f"never saw {marker!r} in {timeout} s; output:\n{seen}{stop(p)}")


def helper_up() -> tuple["subprocess.Popen[str]", Path, Path, set[int]]:
    """ovs_net.py as a script, its net up under a ledger of its own and held until it is signalled:
    (the process, its ledger file, the switch's directory, the switch's two daemons)."""
    before_ovs = ovs_processes()
    held = subprocess.Popen(
        [sys.executable, str(HELPER), "netdev"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"},
    )
    ledger_file, directory = map(Path, wait_for(held, "NET-IS-UP"))
    daemons = set(ovs_processes()) - set(before_ovs)
    assert len(daemons) == 2 and directory.is_dir() and ledger_file.is_file()
    return held, ledger_file, directory, daemons


def test_sigterm_takes_the_switch_down_and_undoes_its_ledger() -> None:
    """What wait_for relies on when the helper never comes up: SIGTERM leaves nothing for `clean`."""
    before = snapshot()
    held, ledger_file, directory, daemons = helper_up()

    held.terminate()
    out, _ = held.communicate(timeout=60)
    assert held.returncode == 128 + signal.SIGTERM, out
    assert not ledger_file.exists() and not directory.exists(), out
    assert not set(ovs_processes()) & daemons
    assert wait_until_as_before(before, within_s=10)[0] == []


def test_sigkill_then_clean_leaves_nothing_of_the_switch() -> None:
    before = snapshot()
    held, ledger_file, directory, daemons = helper_up()

    held.send_signal(signal.SIGKILL)
    held.wait()
    assert held.stdout is not None
    held.stdout.close()
    assert daemons <= set(ovs_processes()), "the switch's daemons outlive the run that started them"
    assert directory.is_dir()

    started = time.monotonic()
    report = undo.clean(only=lambda found: found.path == ledger_file)
    took = time.monotonic() - started
    assert len(report) == 1 and "undid" in report[0], report
    print(f"clean after SIGKILL: {took:.2f} s: {report[0]}")
    assert not directory.exists()
    assert not set(ovs_processes()) & daemons
    assert wait_until_as_before(before, within_s=10)[0] == []
