"""What the running kernel and userland offer, probed rather than assumed.

Qdiscs, IFB and NFQUEUE are probed by trying them in a throwaway network
namespace (`unshare --net`), which vanishes with the probe's process.  A
modular kernel loads modules on first use (br_netfilter, nfnetlink_queue,
sch_netem, ifb with its two root-namespace devices, ...); the probe unloads
the ones it loaded, so it changes nothing on the machine.  Open vSwitch's
datapath is looked up among the generic netlink families (a dump, which
loads nothing), and only where it is absent is its module loaded and
unloaded again.

Where modules can load, a probe runs under the machine lock with a ledger
of its own (`ground.ledger.module_probe`): what was loaded before it is
recorded first, so that `clean` unloads what a probe killed midway left, and
a module another live run may hold is never unloaded by a probe.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shutil
import socket
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ground import ledger, modules, proc

log = logging.getLogger("netrepro.kernel")

TRACEFS = Path("/sys/kernel/tracing")


@contextlib.contextmanager
def _journaled(cause: str) -> Iterator[Callable[[], str] | None]:
    """Around a probe that may load modules: None where the kernel loads none; else, under the
    machine lock and in a ledger of the probe's own, a function that gives what to keep loaded
    after the probe (/proc/modules before it, with the modules other live runs may hold)."""
    before = modules._read_proc_modules()
    if before is None:
        yield None
        return
    if os.geteuid() != 0:  # loads nothing (nor unloads): no machine lock, no ledger to keep
        yield lambda: before
        return
    with ledger.module_probe(cause) as kept:
        yield kept


@functools.cache
def works_in_scratch_netns(*argv: str) -> bool:
    """Does argv succeed in a fresh, empty network namespace?  (Modules it loaded are unloaded.)"""
    with _journaled("probe: " + " ".join(argv)) as kept:
        try:
            done = proc.run(["unshare", "--net", "--", *argv], check=False, timeout=10)
        except (OSError, proc.CommandError):  # missing, or timed out
            return False
        finally:
            if kept is not None:
                modules.unload_modules_loaded_since(kept())
        return done.returncode == 0


def qdisc_works(kind: str, *args: str) -> bool:
    return works_in_scratch_netns("tc", "qdisc", "add", "dev", "lo", "root", kind, *args)


def netem_works() -> bool:
    return qdisc_works("netem", "delay", "1ms")


def netem_seed_works() -> bool:
    """netem with a PRNG seed for its loss (Linux and iproute2 6.3 and later)."""
    return qdisc_works("netem", "loss", "1%", "seed", "1")


def ifb_works() -> bool:
    return works_in_scratch_netns("ip", "link", "add", "nrprobe0", "type", "ifb")


# Generic netlink (linux/netlink.h, linux/genetlink.h): the controller's family dump.
NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLA_TYPE_MASK = 0x3FFF  # without the nested and byte-order flags
OVS_DATAPATH_FAMILY = "ovs_datapath"  # registered by the openvswitch module (net/openvswitch/datapath.c)


def _align4(n: int) -> int:
    return (n + 3) & ~3


def family_dump_request(seq: int) -> bytes:
    """A netlink message asking the generic netlink controller for every registered family."""
    genl = struct.pack("=BBH", CTRL_CMD_GETFAMILY, 1, 0)
    return struct.pack("=IHHII", 16 + len(genl), GENL_ID_CTRL, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + genl


def parse_family_dump(data: bytes) -> tuple[list[str], bool]:
    """The family names in one read of a controller dump, and whether the dump ended in it.

    Each message: nlmsghdr (16 bytes), genlmsghdr (4), then attributes, each
    `len, type` (2+2) and its payload padded to 4 bytes.  An error message
    raises OSError with the kernel's errno.
    """
    names: list[str] = []
    offset = 0
    while offset + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, offset)
        if length < 16 or offset + length > len(data):
            raise ValueError(f"a netlink message of length {length} at {offset} of {len(data)} bytes")
        if kind == NLMSG_DONE:
            return names, True
        if kind == NLMSG_ERROR:
            (error,) = struct.unpack_from("=i", data, offset + 16)
            if error:
                raise OSError(-error, f"generic netlink family dump: {os.strerror(-error)}")
            return names, True
        attr, end = offset + 20, offset + length
        while attr + 4 <= end:
            attr_len, attr_type = struct.unpack_from("=HH", data, attr)
            if attr_len < 4:
                break
            if attr_type & NLA_TYPE_MASK == CTRL_ATTR_FAMILY_NAME:
                names.append(data[attr + 4 : attr + attr_len].rstrip(b"\0").decode("ascii", "replace"))
            attr += _align4(attr_len)
        offset += _align4(length)
    return names, False


def genetlink_families(timeout: float = 5.0) -> set[str]:
    """The generic netlink families registered now.

    A dump, unlike a lookup by name, never makes the kernel load a module for
    the family asked about.
    """
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC) as sock:
        sock.settimeout(timeout)
        sock.bind((0, 0))
        sock.send(family_dump_request(seq=1))
        found: set[str] = set()
        done = False
        while not done:
            names, done = parse_family_dump(sock.recv(1 << 16))
            found.update(names)
    return found


@functools.cache
def openvswitch_datapath_works() -> bool:
    """Does this kernel have Open vSwitch's datapath (the `system` datapath type)?

    Yes where its generic netlink family is registered (built in, or the
    module already loaded).  Otherwise, on a kernel with loadable modules,
    the `openvswitch` module is loaded, the family looked for again, and
    every module the probe loaded unloaded.  No modules, no family: no.
    """
    try:
        if OVS_DATAPATH_FAMILY in genetlink_families():
            return True
    except OSError as e:
        log.debug("generic netlink family dump: %s", e)
        return False
    if modules._read_proc_modules() is None:
        return False
    with _journaled("probe: modprobe openvswitch") as kept:
        try:
            try:
                loaded = proc.run(["modprobe", "openvswitch"], check=False, timeout=30).returncode == 0
            except (OSError, proc.CommandError) as e:
                log.debug("modprobe openvswitch: %s", e)
                return False
            return loaded and OVS_DATAPATH_FAMILY in genetlink_families()
        finally:
            if kept is not None:
                modules.unload_modules_loaded_since(kept())


def modules_supported() -> bool:
    """Loadable modules exist when the kernel has /proc/modules."""
    return Path("/proc/modules").exists()


def lockdown() -> str:
    """The kernel lockdown mode ("none" when there is no lockdown LSM)."""
    f = Path("/sys/kernel/security/lockdown")
    if not f.exists():
        return "none"
    m = re.search(r"\[(\w+)\]", f.read_text())
    return m.group(1) if m else "none"


def struct_ops_supported() -> bool:
    """BPF congestion control needs BTF and the kernel's bpf_tcp_ca glue."""
    if not Path("/sys/kernel/btf/vmlinux").exists():
        return False
    try:
        with open("/proc/kallsyms", encoding="ascii", errors="replace") as f:
            return any("bpf_tcp_ca_" in line for line in f)
    except OSError:
        return False


def tcp_probe_available() -> bool:
    """The tcp:tcp_probe tracepoint, looked up in tracefs or, unmounted, in kallsyms."""
    if (TRACEFS / "events").is_dir():
        return (TRACEFS / "events/tcp/tcp_probe").is_dir()
    with open("/proc/kallsyms", encoding="ascii", errors="replace") as f:
        return any("__traceiter_tcp_probe" in line for line in f)


def congestion_controls() -> tuple[list[str], list[str]]:
    """(available, allowed for non-root namespaces)."""
    base = Path("/proc/sys/net/ipv4")
    return (
        (base / "tcp_available_congestion_control").read_text().split(),
        (base / "tcp_allowed_congestion_control").read_text().split(),
    )


def loadable_congestion_controls() -> list[str]:
    """Congestion controls this kernel ships as modules (tcp_<name>.ko*), loaded or not."""
    base = Path("/lib/modules", release(), "kernel/net/ipv4")
    return sorted({p.name.split(".")[0].removeprefix("tcp_") for p in base.glob("tcp_*.ko*")} - {"diag"})


def release() -> str:
    return Path("/proc/sys/kernel/osrelease").read_text().strip()


def cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """The processor a result ran on: its model as the kernel names it (the first `model name` of
    cpuinfo; "unknown" where none is given) and how many CPUs this process may run on.  A delay line's
    timing, and so how late it releases packets, is the CPU's: two machines of one kind may differ here."""
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in cpuinfo.read_text(errors="replace").splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == "model name" and value.strip():
                model = value.strip()
                break
    return {"model": model, "cpus": len(os.sched_getaffinity(0))}


_VERSION_ARGS = {
    "apache2": ["-v"],
    "ping": ["-V"],
    "tc": ["-V"],
    "ip": ["-V"],
}


@functools.cache
def tool_version(tool: str, timeout: float = 30.0) -> str | None:
    """The first line a tool prints about its version, or None if missing.

    A tool that does not answer within timeout seconds (clang, its first time
    under an emulated CPU, has taken more than 10) is reported as present and
    silent: a manifest or doctor's report is never lost to a slow --version.
    """
    if shutil.which(tool) is None:
        return None
    argv = [tool, *_VERSION_ARGS.get(tool, ["--version"])]
    try:
        done = proc.run(argv, check=False, timeout=timeout)
    except proc.CommandError:
        return f"present; `{' '.join(argv)}` did not answer in {timeout:g} s"
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else "present"


# Set by the stock-kernel lane (netrepro.lanes.vm) in the guest's environment.
VM_ACCEL_ENV = "NETREPRO_VM_ACCEL"


def guest_info() -> dict[str, str] | None:
    """Inside the stock-kernel lane's guest: its kernel and acceleration (for manifests); else None."""
    accel = os.environ.get(VM_ACCEL_ENV)
    if accel is None:
        return None
    return {"accel": accel, "kernel": release(), "via": "virtme-ng"}
