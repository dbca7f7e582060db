"""The stock-kernel lane: run a netrepro command inside Debian's own kernel.

This project's machines lack `sch_netem` and loadable modules; the users'
VMs have both.  `run.sh --vm <command ...>` boots the distribution's kernel
(`linux-image-amd64`) under QEMU with virtme-ng, which shows the guest the
host's files (the repository writable, so results land in the host's
`results/`; an `--out DIR` outside it is shared writable too, at the same
path), and runs `python -m netrepro <command ...>` there.  In the
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
import logging
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ground.errors import SetupError
from ground.kernel import VM_ACCEL_ENV
from ground.ledger import Ledger
from ground.proc import Process, run
from ground.results import REPO
from kmod import loader

log = logging.getLogger("netrepro.lanes.vm")

KVM_PROBE_SECONDS = 45
# The guest's own view of its machine: 2 CPUs as on the host, memory for Apache and Mininet.
GUEST_CPUS, GUEST_MEMORY = "2", "2G"


class VmError(SetupError):
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
            "no distribution kernel with its headers: install the distribution's kernel and its headers "
            "(Debian: linux-image-amd64 linux-headers-amd64; Ubuntu: linux-image-generic linux-headers-generic; "
            "run.sh --vm does so)"
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


def vng_argv(kernel: StockKernel, accel: str, guest_argv: list[str], shared: Sequence[Path] = ()) -> list[str]:
    """Boot `kernel`, run guest_argv in the repository, power off.

    The repository and each directory in `shared` are writable in the guest
    at their host paths (virtme-ng's `--rwdir PATH` mounts host PATH at the
    same path; PATH=GUEST would rename it).  virtme-ng takes the guest
    command as one shell string; shlex.join quotes every argument, so
    nothing in guest_argv is interpreted by that shell.
    """
    argv = [vng(), "--run", str(kernel.image), "--cpus", GUEST_CPUS, "--memory", GUEST_MEMORY]
    argv += ["--rwdir", str(REPO)]
    for directory in shared:
        argv += ["--rwdir", str(directory)]
    argv += ["--cwd", str(REPO)]
    if accel != "kvm":
        argv.append("--disable-kvm")
    return [*argv, "--exec", shlex.join(guest_argv)]


def qemu_version() -> str:
    done = run(["qemu-system-x86_64", "--version"], check=False)
    return done.stdout.splitlines()[0] if done.returncode == 0 and done.stdout else "unknown"


# Beside the virtual environment netrepro runs from (run.sh's is REPO/.venv).
ACCEL_CACHE = Path(sys.prefix) / ".netrepro-vm-accel.json"


def detect_accel(kernel: StockKernel, ledger: Ledger, cache: Path = ACCEL_CACHE) -> dict[str, str]:
    """{"accel": "kvm"|"tcg", "why": ...}: KVM if a KVM guest boots and answers in time."""
    key = {"kernel": kernel.release, "qemu": qemu_version()}
    saved = saved_accel(cache)
    if saved is not None and {k: saved.get(k) for k in key} == key:
        return {"accel": saved["accel"], "why": saved["why"] + " (detected earlier)"}
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        found = {"accel": "tcg", "why": "no usable /dev/kvm"}
    else:
        probe = Process(
            vng_argv(kernel, "kvm", ["true"]),
            ledger=ledger,
            stdout=subprocess.DEVNULL,
            label="vng kvm probe",
            env=vng_env(),
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


def saved_accel(cache: Path = ACCEL_CACHE) -> dict[str, str] | None:
    """What detect_accel kept, or None: none kept, or a file it could not have written (cut short, edited,
    another shape), which is logged and then treated as absent (detected again and written over)."""
    try:
        saved = json.loads(cache.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        log.warning("--vm: %s cannot be read (%s): detecting the acceleration again", cache, e)
        return None
    fields = ("kernel", "qemu", "accel", "why")
    if (
        not isinstance(saved, dict)
        or not all(isinstance(saved.get(k), str) for k in fields)
        or saved["accel"] not in ("kvm", "tcg")
    ):
        log.warning("--vm: %s is not what netrepro writes (%.200r): detecting the acceleration again", cache, saved)
        return None
    return {k: saved[k] for k in fields}


def build_modules(kernel: StockKernel, directory: Path = REPO / "kmod") -> None:
    """The modules of kmod/, for exactly the guest's kernel (before it boots).

    The guest loads a module as it is only if the loader finds it built (newer
    than its sources, for its kernel), else it runs make there, most of a
    minute per load under software emulation.  kbuild keeps a module whose
    sources' contents it judges unchanged even when a source is newer (a
    Makefile edited or checked out since), so such a module is removed first
    and linked again here.
    """
    for name in loader.VARIANTS:
        if not loader.module_built_for(name, kernel.release, directory):
            (directory / f"{name}.ko").unlink(missing_ok=True)
    run(["make", "-s", "-C", str(directory), f"KDIR={kernel.headers}"], timeout=900)


# --out DIR outside the repository: the guest writes its results there, so the
# directory is shared at its host path.  These cannot be (the guest mounts its
# own /proc, /sys, /dev and /run over them) or must not be (all of the host).
UNSHAREABLE = (Path("/proc"), Path("/sys"), Path("/dev"), Path("/run"))
# virtme-ng puts a shared path unquoted into a command line and the kernel's;
# it accepts [A-Za-z0-9_+ /.-] and splits on blanks.
_SHAREABLE_PATH = re.compile(r"[A-Za-z0-9_+/.-]+")


def unshareable(path: Path) -> str | None:
    """Why the absolute, resolved `path` cannot be shared with the guest; None if it can."""
    if path == Path("/"):
        return "it is the root of the host's filesystem"
    for top in UNSHAREABLE:
        if path == top or top in path.parents:
            return f"the guest has its own {top}"
    if not _SHAREABLE_PATH.fullmatch(str(path)):
        return "virtme-ng can share only paths of letters, digits and _ + . - /"
    return None


# argparse also takes an unambiguous prefix: no other option of netrepro's starts with --o.
_OUT_SPELLINGS = ("--out", "--ou", "--o")


def out_options(netrepro_args: Sequence[str]) -> list[tuple[int, str, str]]:
    """Each `--out DIR` / `--out=DIR` in a netrepro command: (index of the value, DIR, prefix).

    The prefix is "" for `--out DIR` (DIR is its own argument) and "--out=" for
    the joined form.  `test` hands everything after it to pytest: nothing there
    is netrepro's.
    """
    if netrepro_args[:1] == ["test"]:
        return []
    found = []
    for i, arg in enumerate(netrepro_args):
        option, joined, value = arg.partition("=")
        if option not in _OUT_SPELLINGS:
            continue
        if joined:
            found.append((i, value, option + "="))
        elif i + 1 < len(netrepro_args):
            found.append((i + 1, netrepro_args[i + 1], ""))
    return found


def share_out_dirs(netrepro_args: Sequence[str], cwd: Path, repo: Path = REPO) -> tuple[list[str], dict[Path, str]]:
    """The guest's arguments with each --out made absolute, and the directories to share
    (each with the --out value it was typed as).

    A directory inside the repository is already shared; one outside it is
    shared at its own path.  Raises VmError, naming what was typed, for one
    that cannot be shared.  Reads the filesystem only to resolve links.
    """
    guest_args = list(netrepro_args)
    shared: dict[Path, str] = {}
    for index, typed, prefix in out_options(netrepro_args):
        path = (cwd / typed).resolve()
        guest_args[index] = prefix + str(path)
        if path == repo or repo in path.parents or path in shared:
            continue
        why = unshareable(path)
        if why is not None:
            raise VmError(f"--out {typed}: {path} cannot be shared with the guest ({why}); choose another directory")
        shared[path] = typed
    return guest_args, shared


def make_out_dir(path: Path, typed: str) -> None:
    """Create `path` and its missing parents on the host, each given to the sudo caller.

    `path` is resolved, so every existing part is a real directory; the parts
    made here are made with mkdir (which never follows a link) and chowned
    without following links.
    """
    missing = []
    existing = path
    while not os.path.lexists(existing):
        missing.append(existing)
        existing = existing.parent
    if not existing.is_dir() or existing.is_symlink():
        raise VmError(f"--out {typed}: {existing} is not a directory, so {path} cannot be created and shared")
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    for directory in reversed(missing):
        try:
            os.mkdir(directory)
            if uid is not None:
                os.chown(directory, int(uid), int(gid or uid), follow_symlinks=False)
        except OSError as e:
            raise VmError(f"--out {typed}: cannot create {directory} to share with the guest: {e}") from e


def guest_command(netrepro_args: list[str], accel: str) -> list[str]:
    """What the guest runs: netrepro from this repository's environment, told how it was booted."""
    passed = [f"{VM_ACCEL_ENV}={accel}"]
    # NETREPRO_VM_RECORD=1: the guest tests write their measurements to results/vm/ (tests/guest)
    passed += [f"{k}={os.environ[k]}" for k in ("SUDO_UID", "SUDO_GID", "NETREPRO_VM_RECORD") if k in os.environ]
    return ["env", *passed, sys.executable, "-m", "netrepro", *netrepro_args]


def run_in_vm(netrepro_args: list[str]) -> int:
    """Boot the stock kernel, run the command there, power off; the command's exit status."""
    guest_args, shared = share_out_dirs(netrepro_args, Path.cwd())
    kernel = stock_kernel()
    for directory, typed in shared.items():
        make_out_dir(directory, typed)
        print(f"--vm: sharing {directory} with the guest (writable)", file=sys.stderr)
    print(f"--vm: stock kernel {kernel.release}; building kmod/ against {kernel.headers}", file=sys.stderr)
    build_modules(kernel)
    # The KVM probe and the guest are in the run's ledger: a --vm run killed
    # outright leaves QEMU to `run.sh clean`.
    with Ledger() as ledger:
        accel = detect_accel(kernel, ledger)
        print(f"--vm: acceleration {accel['accel']} ({accel['why']})", file=sys.stderr, flush=True)
        # The guest's console is copied through a pipe: handed our own stdout,
        # QEMU writes at offset 0 of a file it is redirected to, over what we printed.
        guest = Process(
            vng_argv(kernel, accel["accel"], guest_command(guest_args, accel["accel"]), list(shared)),
            ledger=ledger,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            label="vng",
            env=vng_env(),
        )
        booted: float | None = time.monotonic()
        try:
            assert guest.popen.stdout is not None
            console = guest.popen.stdout.fileno()
            for chunk in iter(lambda: os.read(console, 65536), b""):
                if booted is not None:
                    # A guest slow from boot on is slow here already (tests/integration/test_stock_kernel_lane)
                    print(f"--vm: the guest answered {time.monotonic() - booted:.0f} s after QEMU started",
                          file=sys.stderr, flush=True)  # fmt: skip
                    booted = None
                sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()
            return guest.wait()
        finally:
            guest.stop()
