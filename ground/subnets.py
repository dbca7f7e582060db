"""Lab subnets: each lab's own /24 of 10.0.0.0/8, allocated under the machine lock, never one another
live lab holds nor one the host routes or has an address in.

The registry is the runs' ledgers (ground.ledger): a lab's subnet is a `subnet` entry in its run's
ledger, whose owner line names the run (pid, start time, boot id).  So every run (serial, each lab
of `--jobs`, tests) allocates from the same registry, in the ledger directory; a torn last line is
ignored as the ledger's reader ignores it; a lab that stops hands its entry back (a `cancel` entry);
a run that ends takes its ledger, and with it the entry, away; a dead run's entry is free again at
the next allocation (or when `run.sh clean` removes its ledger), unless a namespace it made still
has processes in it (a lab that outlived its run: its flows would carry the subnet's addresses).

Tracepoints such as tcp:tcp_probe see every namespace: distinct subnets, and a capture that keeps
only its lab's addresses (ground.tcpprobe), keep two labs side by side from reading each other's
flows.  The candidates are today's: 10.a.b.0/24 for a and b from 1 to 250, in that order.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

from ground import proc
from ground.errors import SetupError
from ground.ledger import Ledger
from ground.ledgers import LedgerFile, ledger_files, machine_lock

log = logging.getLogger("netrepro.subnets")

PREFIX = 24
OCTETS = range(1, 251)  # 10.a.b.0/24, a and b in 1..250: 62,500 subnets
KIND = "subnet"


class NoFreeSubnet(SetupError):
    """Every candidate subnet is another live lab's or overlaps the host's routes or addresses."""


@dataclass(frozen=True)
class Allocation:
    """A lab's subnet, and the number of the ledger entry that holds it."""

    subnet: IPv4Network
    seq: int


def candidates() -> Iterator[IPv4Network]:
    """The subnets a lab may have, in the order they are tried."""
    for a in OCTETS:
        for b in OCTETS:
            yield IPv4Network(f"10.{a}.{b}.0/{PREFIX}")


# -- the host's own networks ----------------------------------------------------------


def _network(text: str) -> IPv4Network | None:
    try:
        return IPv4Network(text, strict=False)
    except ValueError:
        return None


def _json_list(text: str, what: str) -> list[Any]:
    try:
        found = json.loads(text or "[]")
    except json.JSONDecodeError as e:
        raise SetupError(f"`{what}` printed no JSON ({e.msg}: {text[:60]!r})") from None
    if not isinstance(found, list):
        raise SetupError(f"`{what}` printed {type(found).__name__}, not a list: {text[:60]!r}")
    return found


ROUTE_ARGV = ["ip", "-j", "-4", "route", "show", "table", "all"]
ADDR_ARGV = ["ip", "-j", "-4", "addr", "show"]


def parse_routes(text: str) -> list[IPv4Network]:
    """The destinations of `ip -j -4 route show table all` (a host route as a /32); a default route,
    which covers everything, is where the host sends what it has no other route for, and is left out."""
    found = []
    for route in _json_list(text, " ".join(ROUTE_ARGV)):
        dst = str(route.get("dst", "")) if isinstance(route, dict) else ""
        net = None if dst == "default" else _network(dst)
        if net is not None and net.prefixlen > 0:
            found.append(net)
    return found


def parse_addresses(text: str) -> list[IPv4Network]:
    """The networks of the host's IPv4 addresses (`ip -j -4 addr show`)."""
    found = []
    for link in _json_list(text, " ".join(ADDR_ARGV)):
        for info in link.get("addr_info", []) if isinstance(link, dict) else []:
            net = _network(f"{info.get('local')}/{info.get('prefixlen')}") if info.get("family") == "inet" else None
            if net is not None:
                found.append(net)
    return found


def host_networks() -> list[IPv4Network]:
    """What the root namespace routes to or has an address in (but for its default route)."""
    return parse_routes(proc.run(ROUTE_ARGV).stdout) + parse_addresses(proc.run(ADDR_ARGV).stdout)


# -- the registry ----------------------------------------------------------------


def _subnets_in(found: LedgerFile) -> list[IPv4Network]:
    nets = (_network(str(e.get(KIND))) for e in found.effective() if e.get("kind") == KIND)
    return [n for n in nets if n is not None]


def _lingering(found: LedgerFile) -> bool:
    """Whether a namespace a dead run of this boot made still has processes in it."""
    if found.earlier_boot:
        return False
    inodes = [int(e["inode"]) for e in found.effective() if e.get("kind") == "namespace" and "inode" in e]
    return bool(inodes) and bool(proc.processes_in_netns(inodes))


def held(directory: Path | None = None) -> dict[IPv4Network, str]:
    """The subnets labs hold now, each with the ledger that holds it: a live run's, or a dead run's
    whose namespaces still have processes in them.  Read under the machine lock."""
    taken: dict[IPv4Network, str] = {}
    for found in ledger_files(directory):
        nets = _subnets_in(found)
        if nets and (found.alive or _lingering(found)):
            for net in nets:
                taken.setdefault(net, found.path.name)
    return taken


def choose(taken: dict[IPv4Network, str], host: list[IPv4Network]) -> IPv4Network:
    """The first candidate no lab holds and no host network overlaps; NoFreeSubnet, saying why, if none."""
    overlapped: dict[IPv4Network, IPv4Network] = {}
    for net in candidates():
        if net in taken:
            continue
        cover = next((h for h in host if net.overlaps(h)), None)
        if cover is None:
            return net
        overlapped[net] = cover
    first, last = next(candidates()), IPv4Network(f"10.{OCTETS[-1]}.{OCTETS[-1]}.0/{PREFIX}")
    holders, covers = sorted(set(taken.values())), sorted({str(h) for h in overlapped.values()})
    raise NoFreeSubnet(
        f"no free /{PREFIX} for a lab from {first} to {last}: {len(taken)} held by labs"
        + (f" ({_some(holders)}; `run.sh clean` ends those whose runs died)" if holders else "")
        + f", {len(overlapped)} overlap the host's routes or addresses"
        + (f" ({_some(covers)})" if covers else "")
    )


def _some(names: list[str], shown: int = 3) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def allocate(ledger: Ledger, host: Callable[[], list[IPv4Network]] = host_networks) -> Allocation:
    """A subnet for a lab of `ledger`'s run, recorded in its ledger under the machine lock (so that no
    other allocation can take it meanwhile); `release` it when the lab stops."""
    with machine_lock(ledger.directory):
        taken = held(ledger.directory)
        subnet = choose(taken, host())
        seq = ledger.record({"kind": KIND, KIND: str(subnet)})
    log.debug("lab subnet %s (%d held by other labs)", subnet, len(taken))
    return Allocation(subnet, seq)


def release(ledger: Ledger, allocation: Allocation) -> None:
    """Free a lab's subnet for the next lab (its run's ledger marks the entry handed back)."""
    with machine_lock(ledger.directory):
        ledger.handed_back(allocation.seq)
