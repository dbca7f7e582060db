"""What the running kernel and userland offer, probed rather than assumed.

Qdiscs, IFB and NFQUEUE are probed by trying them in a throwaway network
namespace (`unshare --net`), which vanishes with the probe's process.  A
modular kernel loads modules on first use (br_netfilter, nfnetlink_queue,
sch_netem, ifb with its two root-namespace devices, ...); the probe unloads
the ones it loaded, so it changes nothing on the machine.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ground import proc

log = logging.getLogger("netrepro.kernel")

TRACEFS = Path("/sys/kernel/tracing")


PROC_MODULES = Path("/proc/modules")
# A module the probe used is released when its scratch namespace is torn
# down, which the kernel does asynchronously after the probe's process exits.
MODULE_SETTLE_SECONDS = 2.0


@functools.cache
def works_in_scratch_netns(*argv: str) -> bool:
    """Does argv succeed in a fresh, empty network namespace?  (Modules it loaded are unloaded.)"""
    before = _read_proc_modules()
    try:
        done = proc.run(["unshare", "--net", "--", *argv], check=False, timeout=10)
    except (OSError, proc.CommandError):  # missing, or timed out
        return False
    finally:
        if before is not None:
            unload_modules_loaded_since(before)
    return done.returncode == 0


@dataclass(frozen=True)
class LoadedModule:
    """One line of /proc/modules."""

    name: str
    refcount: int
    used_by: tuple[str, ...]  # the modules that depend on it
    state: str  # Live, Loading or Unloading


def parse_proc_modules(text: str) -> dict[str, LoadedModule]:
    """/proc/modules: `name size refcount used_by,... state address` per line (used_by "-" if none)."""
    found = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        used_by = tuple(u for u in fields[3].split(",") if u and u != "-")
        found[fields[0]] = LoadedModule(fields[0], int(fields[2]), used_by, fields[4])
    return found


def modules_to_unload(before: str, after: str) -> list[str]:
    """The modules in `after` but not in `before` that nothing else holds, in an order rmmod accepts.

    A module's refcount counts the modules using it and any other holder (a
    socket, a qdisc, a device).  Removing a new module releases one reference
    on each module it uses; a new module is removable once its count, less the
    users removed before it, is zero.  Anything still held is left loaded.
    """
    old, now = parse_proc_modules(before), parse_proc_modules(after)
    new = {name: m for name, m in now.items() if name not in old and m.state == "Live"}
    order: list[str] = []
    progress = True
    while progress:
        progress = False
        for name in sorted(new):
            if name in order:
                continue
            released = sum(1 for user in new[name].used_by if user in order)
            if new[name].refcount - released == 0:
                order.append(name)
                progress = True
    return order


def _read_proc_modules() -> str | None:
    """/proc/modules, or None where the kernel has no loadable modules."""
    try:
        return PROC_MODULES.read_text()
    except FileNotFoundError:
        return None


def unload_modules_loaded_since(before: str, settle: float = MODULE_SETTLE_SECONDS) -> None:
    """rmmod the modules loaded since `before` that nothing holds; wait up to `settle` for holders to go."""
    deadline = time.monotonic() + settle
    while True:
        now = _read_proc_modules() or ""
        for name in modules_to_unload(before, now):
            try:
                proc.run(["rmmod", name], check=False, timeout=10)
            except (OSError, proc.CommandError) as e:
                log.debug("rmmod %s: %s", name, e)
        left = sorted(set(parse_proc_modules(_read_proc_modules() or "")) - set(parse_proc_modules(before)))
        if not left:
            return
        if time.monotonic() >= deadline:
            log.warning("a kernel probe loaded %s; still in use after %.0f s, left loaded", ", ".join(left), settle)
            return
        time.sleep(0.05)


def qdisc_works(kind: str, *args: str) -> bool:
    return works_in_scratch_netns("tc", "qdisc", "add", "dev", "lo", "root", kind, *args)


def netem_works() -> bool:
    return qdisc_works("netem", "delay", "1ms")


def netem_seed_works() -> bool:
    """netem with a PRNG seed for its loss (Linux and iproute2 6.3 and later)."""
    return qdisc_works("netem", "loss", "1%", "seed", "1")


def ifb_works() -> bool:
    return works_in_scratch_netns("ip", "link", "add", "nrprobe0", "type", "ifb")


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


_VERSION_ARGS = {
    "apache2": ["-v"],
    "ping": ["-V"],
    "tc": ["-V"],
    "ip": ["-V"],
}


@functools.cache
def tool_version(tool: str) -> str | None:
    """The first line a tool prints about its version, or None if missing."""
    if shutil.which(tool) is None:
        return None
    argv = [tool, *_VERSION_ARGS.get(tool, ["--version"])]
    done = proc.run(argv, check=False, timeout=10)
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else "present"


# Set by the stock-kernel lane (netrepro.vm) in the guest's environment.
VM_ACCEL_ENV = "NETREPRO_VM_ACCEL"


def guest_info() -> dict[str, str] | None:
    """Inside the stock-kernel lane's guest: its kernel and acceleration (for manifests); else None."""
    accel = os.environ.get(VM_ACCEL_ENV)
    if accel is None:
        return None
    return {"accel": accel, "kernel": release(), "via": "virtme-ng"}
