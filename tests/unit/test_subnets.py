"""Lab subnets: one registry (the runs' ledgers) that no two live labs share a /24 in, whatever their pids,
and that skips what the host routes to."""

import json
import os
import subprocess
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import pytest

from ground import proc, subnets, undo
from ground.errors import SetupError
from ground.ledger import Ledger
from ground.ledgers import ledger_files
from ground.proc import start_time

NET = IPv4Network

# `ip -j -4 route show table all` and `ip -j -4 addr show` on this project's VMs, with a VPN-like route
# into 10/8 and a host route added.
ROUTES = json.dumps(
    [
        {"dst": "default", "gateway": "192.0.2.1", "dev": "eth0", "flags": []},
        {"dst": "192.0.2.0/24", "dev": "eth0", "protocol": "kernel", "scope": "link", "prefsrc": "192.0.2.2"},
        {"dst": "10.1.1.0/24", "dev": "tun0", "scope": "link", "flags": []},
        {"dst": "10.1.2.7", "gateway": "192.0.2.1", "dev": "eth0", "flags": []},
        {"type": "local", "dst": "127.0.0.0/8", "dev": "lo", "table": "local", "scope": "host"},
        {"type": "local", "dst": "192.0.2.2", "dev": "eth0", "table": "local", "scope": "host"},
        {"type": "broadcast", "dst": "192.0.2.255", "dev": "eth0", "table": "local", "scope": "link"},
    ]
)
ADDRESSES = json.dumps(
    [
        {"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host"}]},
        {"ifname": "wg0", "addr_info": [{"family": "inet", "local": "10.1.3.9", "prefixlen": 24, "scope": "global"}]},
    ]
)


def nothing_routed() -> list[IPv4Network]:
    return []


def dead_owner() -> dict[str, Any]:
    """The owner line of a run that has ended."""
    dead = subprocess.Popen(["true"])
    started = start_time(dead.pid) or 1
    dead.wait()
    return {"kind": "owner", "pid": dead.pid, "start": started, "boot": proc.boot_id()}


def write_ledger(path: Path, entries: list[dict[str, Any]], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + tail)
    return path


def run_with_pid(monkeypatch: pytest.MonkeyPatch, directory: Path, pid: int) -> Ledger:
    """A live run's ledger whose process has id `pid` (this test's own ledger, under that pid)."""
    real_start, real_alive = proc.start_time, proc.is_alive
    monkeypatch.setattr(proc, "start_time", lambda p: 4242 if p == pid else real_start(p))
    monkeypatch.setattr(proc, "is_alive", lambda p, s: (p, s) == (pid, 4242) or real_alive(p, s))
    with monkeypatch.context() as m:
        m.setattr(os, "getpid", lambda: pid)
        return Ledger(directory, contain=False)


def test_two_runs_whose_pids_are_62500_apart_get_different_subnets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_pid = 1000
    second_pid = first_pid + 62_500  # a pid_max above 62,500 (systemd sets 4,194,304) allows it
    # the premise: a /24 derived from the pid (10.{pid % 250 + 1}.{pid // 250 % 250 + 1}) is the same for both
    assert (first_pid % 250, first_pid // 250 % 250) == (second_pid % 250, second_pid // 250 % 250)
    first = run_with_pid(monkeypatch, tmp_path, first_pid)
    second = run_with_pid(monkeypatch, tmp_path, second_pid)
    a = subnets.allocate(first, host=nothing_routed)
    b = subnets.allocate(second, host=nothing_routed)
    assert (a.subnet, b.subnet) == (NET("10.1.1.0/24"), NET("10.1.2.0/24"))
    assert subnets.held(tmp_path) == {a.subnet: first.file.name, b.subnet: second.file.name}


def test_two_labs_of_one_run_get_different_subnets(tmp_path: Path) -> None:
    with Ledger(tmp_path, contain=False) as ledger:
        a = subnets.allocate(ledger, host=nothing_routed)
        b = subnets.allocate(ledger, host=nothing_routed)
        assert a.subnet != b.subnet


def test_the_host_routes_and_addresses_are_read_from_ip_json() -> None:
    routes = subnets.parse_routes(ROUTES)
    assert NET("0.0.0.0/0") not in routes, "the default route covers everything: it would refuse every subnet"
    assert routes == [
        NET("192.0.2.0/24"),
        NET("10.1.1.0/24"),
        NET("10.1.2.7/32"),
        NET("127.0.0.0/8"),
        NET("192.0.2.2/32"),
        NET("192.0.2.255/32"),
    ]
    assert subnets.parse_addresses(ADDRESSES) == [NET("127.0.0.0/8"), NET("10.1.3.0/24")]


def test_a_subnet_a_host_route_or_address_covers_is_skipped(tmp_path: Path) -> None:
    def host() -> list[IPv4Network]:
        return subnets.parse_routes(ROUTES) + subnets.parse_addresses(ADDRESSES)

    with Ledger(tmp_path, contain=False) as ledger:
        # 10.1.1.0/24 routed to a tunnel, 10.1.2.7 a host route, 10.1.3.0/24 an address's network
        assert subnets.allocate(ledger, host=host).subnet == NET("10.1.4.0/24")


def test_ip_output_that_is_not_json_is_refused_saying_what_was_printed() -> None:
    with pytest.raises(SetupError, match=r"ip -j -4 route show table all` printed no JSON .*'oops'"):
        subnets.parse_routes("oops")


def test_no_free_subnet_is_refused_saying_why(tmp_path: Path) -> None:
    with Ledger(tmp_path, contain=False) as ledger:
        why = r"10.1.1.0/24 to 10.250.250.0/24: 0 held .* 62500 overlap .*10.0.0.0/8"
        with pytest.raises(subnets.NoFreeSubnet, match=why):
            subnets.allocate(ledger, host=lambda: [NET("10.0.0.0/8")])
        assert not [e for e in ledger_files(tmp_path)[0].entries if e["kind"] == "subnet"], "nothing recorded"


def test_a_dead_runs_subnet_is_given_again(tmp_path: Path) -> None:
    write_ledger(tmp_path / "run-1-1.jsonl", [dead_owner(), {"kind": "subnet", "subnet": "10.1.1.0/24", "seq": 1}])
    with Ledger(tmp_path, contain=False) as ledger:
        assert subnets.allocate(ledger, host=nothing_routed).subnet == NET("10.1.1.0/24")


def test_a_dead_runs_subnet_stays_taken_while_its_namespaces_still_have_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lab that outlived its run (SIGKILL, no `clean` yet) still has flows with those addresses."""
    entries = [
        dead_owner(),
        {"kind": "namespace", "inode": 4026532999, "name": "server", "seq": 1},
        {"kind": "subnet", "subnet": "10.1.1.0/24", "seq": 2},
    ]
    write_ledger(tmp_path / "run-1-1.jsonl", entries)
    monkeypatch.setattr(proc, "processes_in_netns", lambda inodes: [12345] if 4026532999 in inodes else [])
    with Ledger(tmp_path, contain=False) as ledger:
        assert subnets.allocate(ledger, host=nothing_routed).subnet == NET("10.1.2.0/24")


def test_release_frees_the_subnet_for_the_next_lab(tmp_path: Path) -> None:
    with Ledger(tmp_path, contain=False) as ledger:
        first = subnets.allocate(ledger, host=nothing_routed)
        subnets.release(ledger, first)
        assert subnets.held(tmp_path) == {}
        assert subnets.allocate(ledger, host=nothing_routed).subnet == first.subnet


def test_the_runs_end_frees_its_subnets_and_its_ledger_unwinds(tmp_path: Path) -> None:
    with Ledger(tmp_path, contain=False) as ledger:
        subnets.allocate(ledger, host=nothing_routed)
        assert subnets.held(tmp_path)
    assert subnets.held(tmp_path) == {} and not ledger.file.exists()


def test_clean_removes_a_dead_runs_subnet_entry_as_nothing_to_undo(tmp_path: Path) -> None:
    path = write_ledger(tmp_path / "run-1-1.jsonl", [dead_owner(), {"kind": "subnet", "subnet": "10.1.1.0/24"}])
    assert undo.clean(tmp_path) == ["run-1-1.jsonl: undid 0 change(s)"]
    assert not path.exists()


def test_the_registry_survives_a_torn_write(tmp_path: Path) -> None:
    """A live run's ledger cut short mid-entry (its hand-back never written whole), with a line that cannot
    be read before it: the whole subnet entries still hold their subnets."""
    me = os.getpid()
    owner = {"kind": "owner", "pid": me, "start": start_time(me), "boot": proc.boot_id()}
    entries = [owner, {"kind": "subnet", "subnet": "10.1.1.0/24", "seq": 1}]
    path = write_ledger(tmp_path / f"run-{me}-{owner['start']}-aaaaaa.jsonl", entries)
    with path.open("a") as f:
        f.write('{"kind": "subnet", "sub\n')
        f.write(json.dumps({"kind": "subnet", "subnet": "10.1.2.0/24", "seq": 2}) + "\n")
        f.write('{"kind": "cancel", "canc')
    with Ledger(tmp_path, contain=False) as ledger:
        assert subnets.allocate(ledger, host=nothing_routed).subnet == NET("10.1.3.0/24")
