"""Ledgers as found on disk: where they live, reading them, the machine lock, and which machine-wide
state another live run's ledger holds.

What a run writes into its own ledger is ground.ledger; what undoing an entry does, and `clean`,
is ground.undo.  Both read ledgers through this module, and change machine-wide state (the allowed
congestion controls, a sysctl, a module) only under `machine_lock`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ground import proc
from ground.errors import SetupError

LEDGER_DIR = Path(os.environ.get("NETREPRO_LEDGER_DIR", "/run/netrepro/ledger"))
Entry = dict[str, Any]
CC_ALLOWED = "net.ipv4.tcp_allowed_congestion_control"

# The modules the kernel loads on its own for the lab's tools: links (`ip link add`: veth, bridge,
# ifb), queues, classifiers and actions (`tc`), netfilter (`iptables`, NFQUEUE, physdev through
# br_netfilter), socket diagnostics (`ss -K`) and a congestion control named in a namespace's sysctl.
# `ss` loads the *_diag module of every socket family it asks about (af_packet_diag, unix_diag, ...).
AUTOLOADED_NAMES = frozenset(
    {
        "veth",
        "bridge",
        "stp",
        "llc",
        "ifb",
        "br_netfilter",
        "x_tables",
        "ip_tables",
        "ip6_tables",
        "nf_tables",
        "nfnetlink",
    }
)
AUTOLOADED_PREFIXES = (
    "sch_",
    "cls_",
    "act_",
    "em_",
    "xt_",
    "ipt_",
    "ip6t_",
    "iptable_",
    "ip6table_",
    "nf_",
    "nft_",
    "nfnetlink_",
    "tcp_",
)


def autoloaded_for_a_lab(name: str) -> bool:
    """Whether the kernel may have loaded module `name` for a lab's own tools (else a lab's end leaves
    it: someone else loaded it meanwhile)."""
    return name in AUTOLOADED_NAMES or name.startswith(AUTOLOADED_PREFIXES) or name.endswith("_diag")


def sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def read_sysctl(key: str) -> str:
    return sysctl_path(key).read_text().strip()


def write_sysctl(key: str, value: str) -> None:
    sysctl_path(key).write_text(value + "\n")


class LedgerError(SetupError):
    """The ledger could not be written (the change is not made), or some undo steps failed (listed)."""


class LeftAlone(Exception):
    """An undo step found its object not provably the run's: nothing was done, and the message says why."""


SYS_MODULE = Path("/sys/module")


def module_param_path(module: str, name: str) -> Path:
    return SYS_MODULE / module / "parameters" / name


def private_dir(directory: Path) -> None:
    """Make the ledger directory root's own; refuse one that is a link or someone else's."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(directory)
    if stat.S_ISLNK(st.st_mode) or (os.geteuid() == 0 and st.st_uid != 0):
        raise LedgerError(f"{directory} is a link or not root's: not keeping a ledger there")


_lock_depth: dict[Path, int] = {}  # this process's hold on each machine lock (it nests)


@contextlib.contextmanager
def machine_lock(directory: Path | None = None) -> Iterator[None]:
    """The one lock for machine-wide changes, shared by every run and `clean`.

    It nests within a process (loading an algorithm widens the allowed list
    under the same hold); between processes it excludes.
    """
    directory = directory or LEDGER_DIR
    if _lock_depth.get(directory):
        _lock_depth[directory] += 1
        try:
            yield
        finally:
            _lock_depth[directory] -= 1
        return
    private_dir(directory)
    fd = os.open(directory / "machine.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _lock_depth[directory] = 1
        yield
    finally:
        _lock_depth.pop(directory, None)
        os.close(fd)  # releases the lock


# -- reading ledgers ------------------------------------------------------------


@dataclass
class LedgerFile:
    """A ledger as found on disk: its entries, the lines that could not be read, its owner."""

    path: Path
    entries: list[Entry] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    torn: str = ""  # a last line cut short by a crash: an intent whose change was never made

    @property
    def owner(self) -> Entry | None:
        return next((e for e in self.entries if e.get("kind") == "owner"), None)

    @property
    def earlier_boot(self) -> bool:
        """Made in an earlier boot: its pids, start times, namespaces and modules are not this boot's."""
        owner = self.owner
        boot = owner.get("boot") if owner else None
        return boot is not None and boot != proc.boot_id()

    @property
    def alive(self) -> bool:
        owner = self.owner
        if owner is None:  # nothing readable: the name says whose it is
            named = owner_from_name(self.path.name)
            return named is not None and proc.is_alive(*named)
        if self.earlier_boot:
            return False
        return owner.get("start") is not None and proc.is_alive(owner["pid"], owner["start"])

    @property
    def purpose(self) -> str:
        owner = self.owner
        return str(owner.get("purpose") or "") if owner else ""

    @property
    def holding(self) -> bool:
        """Does this ledger stand for state someone still uses (a live run, or `cc load`'s)?"""
        return self.alive or bool(self.purpose)

    def effective(self) -> list[Entry]:
        """The entries whose change stands: without cancelled intents and cancel marks."""
        cancelled = {e.get("cancels") for e in self.entries if e.get("kind") == "cancel"}
        return [e for e in self.entries if e.get("kind") != "cancel" and e.get("seq", -1) not in cancelled]


def read(path: Path) -> LedgerFile:
    found = LedgerFile(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        found.unreadable.append(f"{path.name}: {e}")
        return found
    lines = text.split("\n")
    if lines[-1]:  # no newline at the end: the write of the last entry was cut
        found.torn = lines[-1][:60]
    for number, line in enumerate(lines[:-1], 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as e:
            found.unreadable.append(f"line {number} ({line[:60]!r}): {e.msg}")
            continue
        if not isinstance(entry, dict) or "kind" not in entry:
            found.unreadable.append(f"line {number} ({line[:60]!r}): not an entry")
            continue
        found.entries.append(entry)
    return found


LEDGER_NAME = re.compile(r"(?:tmp-)?run-(\d+)-(-?\d+)(?:-[0-9a-f]+)?\.jsonl")


def owner_from_name(name: str) -> tuple[int, int] | None:
    """(pid, start) of the run a ledger file's name says made it (`run-<pid>-<start>-<token>.jsonl`)."""
    m = LEDGER_NAME.fullmatch(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def ledger_files(directory: Path | None = None) -> list[LedgerFile]:
    directory = directory or LEDGER_DIR
    if not directory.is_dir():
        return []
    return [read(p) for p in sorted(directory.glob("run-*.jsonl"))]


# Entries that stand for one piece of machine-wide state, whoever made them.
def identity(e: Entry) -> tuple[str, str] | None:
    kind = e.get("kind")
    if kind == "cc_allowed":
        return (kind, str(e.get("name")))
    if kind in ("sysctl",):
        return (kind, str(e.get("key")))
    if kind == "module_param":
        return (kind, f"{e.get('module')}/{e.get('name')}")
    if kind in ("mount",):
        return (kind, str(e.get("path")))
    if kind in ("struct_ops", "module"):
        return ("algorithm", str(e.get("name")))
    if kind == "modules_loaded":
        return (kind, str(e.get("cause")))
    return None


def per_name(e: Entry) -> list[Entry]:
    """An entry as one entry per name (older ledgers wrote cc_allowed with `added: [names]`)."""
    if e.get("kind") == "cc_allowed" and isinstance(e.get("added"), list):
        return [{**e, "name": n, "added": True} for n in e["added"]]
    return [e]


def _others(exclude: Path, directory: Path) -> list[LedgerFile]:
    return [f for f in ledger_files(directory) if f.path != exclude]


def held_elsewhere(e: Entry, exclude: Path, directory: Path) -> LedgerFile | None:
    """A live run (or `cc load`) whose ledger holds the same machine-wide state as e."""
    ident = identity(e)
    if ident is None:
        return None
    for other in _others(exclude, directory):
        if other.holding and any(identity(x) == ident for o in other.effective() for x in per_name(o)):
            return other
    return None


def mark_released(path: Path, seq: Any) -> None:
    """Say in the ledger at `path` that its entry `seq` holds nothing any more (a cancel mark): undone, or
    left to another live run that holds the same state.  Without it, two runs unwinding at once (the labs
    of one --jobs run, stopped together) each saw the other still holding a machine-wide change and both
    left it: `cubic` stayed in tcp_allowed_congestion_control after a soak's SIGKILL.  A ledger whose
    file is gone (done) or was never linked holds nothing to mark."""
    if not isinstance(seq, int):
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        os.write(fd, (json.dumps({"kind": "cancel", "cancels": seq}) + "\n").encode())
    finally:
        os.close(fd)


def inherited(ident: tuple[str, str], exclude: Path, directory: Path) -> Entry | None:
    """An entry of another ledger (live or dead) that made this state what it is now."""
    for other in _others(exclude, directory):
        if other.earlier_boot:
            continue
        for o in other.effective():
            for x in per_name(o):
                if identity(x) == ident and x.get("added"):
                    return x
    return None


def modules_held_elsewhere(
    names: Iterable[str], exclude: Path, directory: Path, mine: Iterable[str] = (), *, dead_too: bool = False
) -> dict[str, str]:
    """Of the modules `names`, those another live run (or `cc load`) may hold, each with that ledger's
    name: a module it names (a `module` entry, a `modules_loaded` cause or what its load `loaded`,
    read under the machine lock, or what its lab `inherited`), or, unless it is one of `mine` (what
    this ledger's own loads loaded), one loaded since its `modules_loaded` or `autoloads` recorded
    what was loaded before (by its own processes, for all we know).  `dead_too`: a dead run's
    ledger of this boot counts as well (what `clean` may yet undo)."""
    wanted, own = set(names), set(mine)
    held: dict[str, str] = {}
    for other in _others(exclude, directory):
        if not (other.holding or (dead_too and not other.earlier_boot)):
            continue
        for o in other.effective():
            kind = o.get("kind")
            if kind == "module":
                claimed = wanted & {str(o.get("name"))}
            elif kind in ("modules_loaded", "autoloads"):
                named = {str(o.get("cause")), *(str(n) for n in [*o.get("loaded", []), *o.get("inherited", [])])}
                before = {str(n) for n in o.get("before", [])}
                window = "before" in o  # an entry of what was loaded at a moment (a window's start)
                claimed = {n for n in wanted if n in named or (window and n not in before and n not in own)}
            else:
                continue
            for name in claimed:
                held.setdefault(name, other.path.name)
    return held


def loaded_by(entries: Iterable[Entry]) -> set[str]:
    """What a ledger's own loads loaded (`modules_loaded` entries' `loaded`, read under the machine lock)."""
    return {str(n) for e in entries if e.get("kind") == "modules_loaded" for n in e.get("loaded", [])}


def stale_ledgers(directory: Path | None = None) -> Iterator[LedgerFile]:
    """Ledgers whose owning run is no longer alive."""
    for found in ledger_files(directory):
        if not found.alive:
            yield found
