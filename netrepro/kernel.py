"""What the running kernel and userland offer, probed rather than assumed.

Qdiscs, IFB and NFQUEUE are probed by trying them in a throwaway network
namespace (`unshare --net`), which vanishes with the probe's process, so a
probe changes nothing on the machine.  Modular kernels load the module on
first use, which is exactly what a real run would do.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")


@functools.cache
def works_in_scratch_netns(*argv: str) -> bool:
    """Does argv succeed in a fresh, empty network namespace?"""
    try:
        done = subprocess.run(["unshare", "--net", "--", *argv], capture_output=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
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
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=10)
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
