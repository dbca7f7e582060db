"""An sshd of its own on a loopback port, for Dask's SSH launcher on one machine.

`--hosts root@127.0.0.1` needs an SSH server that lets root in; the suite's
test of the launcher and `run.sh bench soak --cluster` start this one rather
than rely on the machine's: it listens on 127.0.0.1 only (or on the loopback
addresses given: two of them are two "hosts" of one machine), on a free port,
with a host key and a client key made for it in a private directory the
caller gives (its `config` is an OpenSSH client configuration for
`--ssh-config`), lets in only that client key, and stops when the block
ends.  What the launcher starts runs under the daemon: `descendants` finds
it by parentage, named by pid and start time.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ground.proc import start_time


@dataclass(frozen=True)
class Sshd:
    config: Path  # an OpenSSH client config for it (`--ssh-config`)
    pid: int  # the daemon: what the launcher starts runs under it
    addresses: tuple[str, ...] = ("127.0.0.1",)  # where it listens, each a host of `--hosts`


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def loopback_sshd(where: Path, addresses: tuple[str, ...] = ("127.0.0.1",)) -> Iterator[Sshd]:
    """An sshd on a loopback port of each of `addresses` that lets in root with a key made here, under
    `where` (a new directory, made private); stopped, and Debian's privilege separation directory
    removed if it made it, when the block ends."""
    if not addresses or not all(ipaddress.ip_address(a).is_loopback for a in addresses):
        raise ValueError(f"loopback_sshd: {addresses}: loopback addresses only (127.0.0.0/8)")
    sshd_bin = shutil.which("sshd") or "/usr/sbin/sshd"
    if not os.path.exists(sshd_bin):
        raise FileNotFoundError("no sshd: run.sh installs openssh-server")
    where.mkdir(mode=0o700)
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(where / name)], check=True)
    (where / "authorized_keys").write_text((where / "client.pub").read_text())
    port = free_port()
    listen = "".join(f"ListenAddress {a}\n" for a in addresses)
    (where / "sshd_config").write_text(
        f"{listen}Port {port}\nHostKey {where / 'host'}\nPidFile {where / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {where / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
    )
    host_key = (where / "host.pub").read_text().split()
    (where / "known_hosts").write_text("".join(f"[{a}]:{port} {host_key[0]} {host_key[1]}\n" for a in addresses))
    (where / "config").write_text(
        f"Host {' '.join(addresses)}\n  Port {port}\n  User root\n  IdentityFile {where / 'client'}\n"
        f"  UserKnownHostsFile {where / 'known_hosts'}\n"
    )
    privsep = Path("/run/sshd")  # sshd's privilege separation directory; Debian's service makes it
    made = not privsep.exists()
    if made:
        privsep.mkdir(mode=0o755)
    with open(where / "sshd.log", "wb") as log:
        daemon = subprocess.Popen([sshd_bin, "-D", "-e", "-f", str(where / "sshd_config")], stderr=log)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex((addresses[-1], port)) == 0:
                    break
            time.sleep(0.2)
        yield Sshd(where / "config", daemon.pid, tuple(addresses))
    finally:
        daemon.terminate()
        daemon.wait(30)
        if made:
            privsep.rmdir()


def descendants(pid: int) -> dict[int, tuple[int | None, str]]:
    """The processes under `pid` (not itself): pid -> (start time, command line)."""
    parents: dict[int, int] = {}
    lines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        lines[int(entry.name)] = cmdline
    found: dict[int, tuple[int | None, str]] = {}
    for child in parents:
        up = parents.get(child)
        while up is not None and up > 1:
            if up == pid:
                found[child] = (start_time(child), lines[child])
                break
            up = parents.get(up)
    return found


def still_running(launched: dict[int, tuple[int | None, str]]) -> list[str]:
    """Of processes found by `descendants`, those still running (the same pid and start time: an
    orphan the daemon no longer parents still counts)."""
    return [line for pid, (start, line) in launched.items() if start is not None and start_time(pid) == start]
