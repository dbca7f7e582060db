"""The stock-kernel lane: run a netrepro command inside Debian's own kernel.

This project's machines lack `sch_netem` and loadable modules; the users'
VMs have both.  `run.sh --vm <command ...>` boots the distribution's kernel
(`linux-image-amd64`) under QEMU with virtme-ng, which shows the guest the
host's files (the repository writable, so results land in the host's
`results/`), and runs `python -m netrepro <command ...>` there.  In the
guest the netem backend and the kernel modules are what `auto` chooses.

The modules in `kmod/` are built on the host, against the headers of exactly
the guest's kernel, before it boots.  Acceleration is detected, not
configured: a guest is booted once with KVM and a time limit; if it does not
come back (this project's VMs hang in a nested KVM guest), software emulation
(TCG) is used.  The answer is kept beside the virtual environment, per
kernel and QEMU version.  The guest learns its acceleration through the
environment and records it, with its kernel, in every manifest.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from netrepro.kernel import VM_ACCEL_ENV
from netrepro.proc import Process, run

REPO = Path(__file__).resolve().parent.parent
KVM_PROBE_SECONDS = 45
# The guest's own view of its machine: 2 CPUs as on the host, memory for Apache and Mininet.
GUEST_CPUS, GUEST_MEMORY = "2", "2G"


class VmError(RuntimeError):
    """The stock-kernel lane cannot run here (no image, no headers, no QEMU)."""


@dataclass(frozen=True)
class StockKernel:
    release: str  # e.g. 6.1.0-56-amd64
    image: Path  # /boot/vmlinuz-<release>
    headers: Path  # the kbuild tree modules are built against

    def describe(self) -> dict[str, str]:
        return {"release": self.release, "image": str(self.image), "headers": str(self.headers)}


def _version_key(release: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", release)]


def stock_kernel(boot: Path = Path("/boot"), modules: Path = Path("/lib/modules")) -> StockKernel:
    """The newest installed distribution kernel whose exact headers are installed too."""
    found = []
    for image in boot.glob("vmlinuz-*"):
        release = image.name.removeprefix("vmlinuz-")
        headers = modules / release / "build"
        if headers.is_dir():
            found.append(StockKernel(release, image, headers.resolve()))
    if not found:
        raise VmError(
            "no distribution kernel with its headers: install linux-image-amd64 and linux-headers-amd64 "
            "(run.sh --vm does so on Debian and Ubuntu)"
        )
    return max(found, key=lambda k: _version_key(k.release))


def vng() -> str:
    """virtme-ng's command, installed into the project's virtual environment."""
    path = Path(sys.executable).parent / "vng"
    if not path.exists():
        raise VmError(f"{path} is missing: run.sh --vm installs virtme-ng into the virtual environment")
    return str(path)


def vng_env() -> dict[str, str]:
    """vng starts its sibling `virtme-run` by name: the environment's bin/ must be on PATH,
    which it is not when run.sh calls the environment's python without activating it."""
    return {**os.environ, "PATH": os.pathsep.join([str(Path(vng()).parent), os.environ.get("PATH", "")])}


def vng_argv(kernel: StockKernel, accel: str, guest_argv: list[str]) -> list[str]:
    """Boot `kernel`, run guest_argv in the repository, power off.

    virtme-ng takes the guest command as one shell string; shlex.join quotes
    every argument, so nothing in guest_argv is interpreted by that shell.
    """
    argv = [vng(), "--run", str(kernel.image), "--cpus", GUEST_CPUS, "--memory", GUEST_MEMORY]
    argv += ["--rwdir", str(REPO), "--cwd", str(REPO)]
    if accel != "kvm":
        argv.append("--disable-kvm")
    return [*argv, "--exec", shlex.join(guest_argv)]


def qemu_version() -> str:
    done = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.splitlines()[0] if done.returncode == 0 and done.stdout else "unknown"


ACCEL_CACHE = REPO / ".venv" / ".netrepro-vm-accel.json"


def detect_accel(kernel: StockKernel, cache: Path = ACCEL_CACHE) -> dict[str, str]:
    """{"accel": "kvm"|"tcg", "why": ...}: KVM if a KVM guest boots and answers in time."""
    key = {"kernel": kernel.release, "qemu": qemu_version()}
    if cache.exists():
        saved = json.loads(cache.read_text())
        if {k: saved.get(k) for k in key} == key:
            return {"accel": saved["accel"], "why": saved["why"] + " (detected earlier)"}
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        found = {"accel": "tcg", "why": "no usable /dev/kvm"}
    else:
        probe = Process(
            vng_argv(kernel, "kvm", ["true"]), stdout=subprocess.DEVNULL, label="vng kvm probe", env=vng_env()
        )
        deadline = time.monotonic() + KVM_PROBE_SECONDS
        while probe.running() and time.monotonic() < deadline:
            time.sleep(0.2)
        booted = not probe.running()
        code = probe.stop()
        if booted and code == 0:
            found = {"accel": "kvm", "why": "a KVM guest booted"}
        elif booted:
            found = {"accel": "tcg", "why": f"a KVM guest failed (exit {code})"}
        else:
            found = {"accel": "tcg", "why": f"a KVM guest did not finish booting within {KVM_PROBE_SECONDS} s"}
    cache.write_text(json.dumps({**key, **found}) + "\n")
    return found


def build_modules(kernel: StockKernel) -> None:
    """The modules of kmod/, for exactly the guest's kernel (before it boots)."""
    run(["make", "-s", "-C", str(REPO / "kmod"), f"KDIR={kernel.headers}"], timeout=900)


def guest_command(netrepro_args: list[str], accel: str) -> list[str]:
    """What the guest runs: netrepro from this repository's environment, told how it was booted."""
    passed = [f"{VM_ACCEL_ENV}={accel}"]
    passed += [f"{k}={os.environ[k]}" for k in ("SUDO_UID", "SUDO_GID") if k in os.environ]
    return ["env", *passed, sys.executable, "-m", "netrepro", *netrepro_args]


def run_in_vm(netrepro_args: list[str]) -> int:
    """Boot the stock kernel, run the command there, power off; the command's exit status."""
    kernel = stock_kernel()
    print(f"--vm: stock kernel {kernel.release}; building kmod/ against {kernel.headers}", file=sys.stderr)
    build_modules(kernel)
    accel = detect_accel(kernel)
    print(f"--vm: acceleration {accel['accel']} ({accel['why']})", file=sys.stderr, flush=True)
    # The guest's console is copied through a pipe: handed our own stdout,
    # QEMU writes at offset 0 of a file it is redirected to, over what we printed.
    guest = Process(
        vng_argv(kernel, accel["accel"], guest_command(netrepro_args, accel["accel"])),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        label="vng",
        env=vng_env(),
    )
    try:
        assert guest.popen.stdout is not None
        console = guest.popen.stdout.fileno()
        for chunk in iter(lambda: os.read(console, 65536), b""):
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
        return guest.wait()
    finally:
        guest.stop()
