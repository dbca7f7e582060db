"""A snapshot of the machine state a run must leave as it found it.

Read by the root tests around each test and by the soak (`run.sh bench
soak`): what differs after a run, once the kernel has let go of closing
sockets, is what the run left behind.
"""

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ground import cgroups, ledgers

WATCHED = {
    "ovsdb-server",
    "ovs-vswitchd",
    "delayline",
    "iperf3",
    "apache2",
    "h2load",
    "curl",
    "nghttp",
    "ping",
    "mnexec",
    "nsenter",
    "tcpdump",
    "flock",
    "chromium",
    # Firefox ESR and the processes it starts (their names, as /proc/PID/comm cuts them to 15 characters)
    "firefox-esr",
    "crashhelper",
    "forkserver",
    "Socket Process",
    "RDD Process",
    "Utility Process",
    "GPU Process",
    "WebExtensions",
    "Web Content",
    "Isolated Web Co",
    "Privileged Cont",
    "Chroot Helper",
}


def _ledgers() -> frozenset[str]:
    """The ledgers' files: a run's that its end did not remove is state it left."""
    directory = ledgers.LEDGER_DIR
    return frozenset(p.name for p in directory.glob("*.jsonl")) if directory.is_dir() else frozenset()


def _out(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=False).stdout


def _struct_ops() -> str:
    """`bpftool struct_ops list`, retried: a map the kernel frees while bpftool lists the maps makes it
    fail and print nothing, which would read as "none registered"; a listing it never gives is said."""
    for _ in range(10):
        done = subprocess.run(["bpftool", "struct_ops", "list"], capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return done.stdout
        time.sleep(0.05)
    return f"(bpftool struct_ops list failed: {done.stderr.strip()[:200]})"


def _processes() -> frozenset[str]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if comm in WATCHED or "mininet:" in cmdline:
            found.add(f"{entry.name} {cmdline.strip()}")
    return frozenset(found)


def _cgroups() -> frozenset[str]:
    """The run cgroups (netrepro-run-*) anywhere in the v2 hierarchy."""
    mount = cgroups.hierarchy()
    if mount is None:
        return frozenset()
    return frozenset(str(p.relative_to(mount)) for p in mount.rglob("netrepro-run-*") if p.is_dir())


def _modules() -> frozenset[str]:
    try:
        return frozenset(line.split()[0] for line in Path("/proc/modules").read_text().splitlines())
    except FileNotFoundError:
        return frozenset()


def _temporary_files() -> frozenset[str]:
    """The run's folders (netrepro-*), what a browser makes of its own in /tmp or /dev/shm (.org.chromium.*),
    and multiprocessing's semaphores in /dev/shm."""
    made = [*Path(tempfile.gettempdir()).glob("netrepro-*"), *Path(tempfile.gettempdir()).glob(".org.chromium.*")]
    shm = Path("/dev/shm")
    # and the named semaphores of Python's multiprocessing (a Dask cluster's, with --jobs)
    made += [*shm.glob(".org.chromium.*"), *shm.glob("sem.mp-*")] if shm.is_dir() else []
    return frozenset(str(p) if p.parent == shm else p.name for p in made)


def _tracing() -> str:
    tracefs = Path("/sys/kernel/tracing")
    if not os.path.ismount(tracefs):
        return "tracefs not mounted"
    instances = sorted(p.name for p in (tracefs / "instances").iterdir())
    enabled = (tracefs / "events/tcp/tcp_probe/enable").read_text().strip()
    return f"instances {instances}, tcp_probe enable {enabled}"


def _bridge_netfilter() -> tuple[str, ...]:
    """The root namespace's bridge-nf-call-* sysctls, which exist while br_netfilter is loaded."""
    found = Path("/proc/sys/net/bridge")
    return (
        tuple(f"{p.name}={p.read_text().strip()}" for p in sorted(found.glob("bridge-nf-*"))) if found.is_dir() else ()
    )


@dataclass(frozen=True)
class MachineState:
    netns: str
    links: frozenset[str]
    iptables: str
    sysctls: tuple[str, ...]
    bridge_netfilter: tuple[str, ...]
    struct_ops: str
    tracing: str
    processes: frozenset[str]
    ledgers: frozenset[str]
    cgroups: frozenset[str]
    modules: frozenset[str]
    temporary_files: frozenset[str]


def snapshot() -> MachineState:
    links = frozenset(link["ifname"] for link in json.loads(_out(["ip", "-j", "link", "show"]) or "[]"))
    keys = [
        "net/ipv4/tcp_allowed_congestion_control",
        "net/ipv4/tcp_congestion_control",
        "net/core/rmem_max",
        "net/core/wmem_max",
        "net/ipv4/tcp_rmem",
        "net/ipv4/tcp_wmem",
        "net/core/netdev_max_backlog",
    ]
    return MachineState(
        netns=_out(["ip", "netns", "list"]),
        links=links,
        iptables=_out(["iptables-legacy", "-S"]) + _out(["iptables-nft", "-S"]),
        sysctls=tuple(f"{k}={Path('/proc/sys', k).read_text().strip()}" for k in keys),
        bridge_netfilter=_bridge_netfilter(),
        struct_ops=_struct_ops(),
        tracing=_tracing(),
        processes=_processes(),
        ledgers=_ledgers(),
        cgroups=_cgroups(),
        modules=_modules(),
        temporary_files=_temporary_files(),
    )


def differences(before: MachineState, after: MachineState) -> list[str]:
    out = []
    for field in before.__dataclass_fields__:
        a, b = getattr(before, field), getattr(after, field)
        if a != b:
            if isinstance(a, frozenset):
                out.append(f"{field}: added {sorted(b - a)}, removed {sorted(a - b)}")
            else:
                out.append(f"{field}: {a!r} -> {b!r}")
    return out


def wait_until_as_before(before: MachineState, within_s: float, step_s: float = 0.1) -> tuple[list[str], float]:
    """(what still differs from `before`, seconds waited): polled until nothing differs or `within_s`
    has passed (processes being reaped, sockets of dead namespaces freed)."""
    began = time.monotonic()
    while True:
        left = differences(before, snapshot())
        waited = time.monotonic() - began
        if not left or waited > within_s:
            return left, waited
        time.sleep(step_s)
