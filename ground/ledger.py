"""The run's ledger: a journal of everything a run created or changed.

Each entry is written (and synced) to a file under /run/netrepro/ledger
before its change is made (`Ledger.change`), with the run's signals held
off around the pair, so that a run killed at any moment has recorded all it
did, and at worst an intent it never carried out.  An entry is written
whole or not at all: a write cut short (a full disk) is cut off the file
again and the change is refused (LedgerError).  The file appears under its
name with its owner line already in it, so there is never a ledger without
one.  Undoing is idempotent: each step checks that its object is still
there, so the normal teardown, a repeated `clean` and an intent never
carried out are all harmless.

A namespace is recorded with its cookie and the boot's id (the inode alone
is given to another namespace as soon as the first dies): a namespace is
acted on only when it is provably the run's, else it is left alone and said
so.  A ledger from an earlier boot has only its files undone.

A run unwinds its own ledger when it ends, whatever the reason; `run.sh
clean` unwinds the ledgers of runs that died without doing so (SIGKILL,
power loss of the shell).  Undoing goes in phases, each newest first:
namespaces held, processes ended (the run's cgroup killed), the namespaces'
last sockets closed and the namespaces let go, congestion controls and
modules, sysctls, trace settings, mounts, files; a module is never removed
while a process that pins it lives.

What is machine-wide (the allowed congestion controls, a sysctl, the
tracefs mount, a registered algorithm) is changed under one machine lock,
and undone only when no other live run holds the same thing: two runs, or
a run and `clean`, never undo each other's state.  A module is unloaded only
if no other live ledger may hold it: one it names, or one loaded since
another's `modules_loaded` or `autoloads` recorded what was loaded before
it.  The modules the kernel loads by itself for a lab's tools (ifb, which
adds ifb0 and ifb1 to the root namespace; br_netfilter, which adds the
bridge-nf-call-* sysctls that send every bridge's packets through
iptables; sch_*, xt_*, nfnetlink_queue) are the run's from the lab's start
(`autoloads`), and go with it.

Entry kinds:
  owner        {pid, start, boot, purpose?}  the run itself (boot: /proc/sys/kernel/random/boot_id)
  cgroup       {path, origin}          kill the run's cgroup (every process in it) and remove it
  process      {pid, start, argv}      end the process group, if still the same process
  namespace    {inode, name, cookie, boot}  close its sockets, end what still runs in it, wait for it to go
                                       (only if the namespace with that inode has that cookie, this boot)
  sysctl       {key, old, added}       write the old value back (root namespace)
  cc_allowed   {name, added}           remove the name from tcp_allowed_congestion_control
  link         {name}                  delete the root-namespace interface
  netns        {name}                  delete the named namespace
  struct_ops   {name}                  unregister the BPF struct_ops map
  module       {name}                  remove the kernel module
  modules_loaded {cause, before, loaded?}  remove the modules loaded since (`before`: the names then) that
                                       nothing holds: what loading `cause` brought, and what its users did
                                       (never one that another live ledger may hold); `loaded`, recorded
                                       again after the load: what the load itself brought
  autoloads    {before, inherited}     the modules the kernel loaded for the lab's own tools (`ip link add
                                       ... ifb`, `tc`, `iptables`, `ss -K`), from the lab's start to the run's
                                       end: remove those of the lab's families loaded since `before`, and
                                       those `inherited` (loaded by another live run's lab before this one
                                       began), that nothing holds and no other live ledger may hold; with
                                       them go what they brought to the root namespace (ifb's ifb0 and
                                       ifb1, br_netfilter's bridge-nf-call-* sysctls)
  module_param {module, name, old, added}  write the old value back to /sys/module/<module>/parameters/<name>
  tracefs      {path}                  remove a tracefs instance directory
  trace_enable {path, old}             write the old value of a tracefs control file
  mount        {path, added}           unmount a filesystem a run mounted (tracefs)
  path         {path}                  remove a file or directory tree this run made
  cancel       {cancels}               the change of entry number `cancels` was not made after all
                                       (or was undone already by the code that made it)
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ground import cgroups, modules, proc
from ground.errors import SetupError

log = logging.getLogger("netrepro.ledger")

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


def _write_sysctl(key: str, value: str) -> None:
    sysctl_path(key).write_text(value + "\n")


class LedgerError(SetupError):
    """The ledger could not be written (the change is not made), or some undo steps failed (listed)."""


class LeftAlone(Exception):
    """An undo step found its object not provably the run's: nothing was done, and the message says why."""


SYS_MODULE = Path("/sys/module")


def module_param_path(module: str, name: str) -> Path:
    return SYS_MODULE / module / "parameters" / name


def _private_dir(directory: Path) -> None:
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
    _private_dir(directory)
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
def _identity(e: Entry) -> tuple[str, str] | None:
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


def _names(e: Entry) -> list[Entry]:
    """An entry as one entry per name (older ledgers wrote cc_allowed with `added: [names]`)."""
    if e.get("kind") == "cc_allowed" and isinstance(e.get("added"), list):
        return [{**e, "name": n, "added": True} for n in e["added"]]
    return [e]


def _others(exclude: Path, directory: Path) -> list[LedgerFile]:
    return [f for f in ledger_files(directory) if f.path != exclude]


def held_elsewhere(e: Entry, exclude: Path, directory: Path) -> LedgerFile | None:
    """A live run (or `cc load`) whose ledger holds the same machine-wide state as e."""
    ident = _identity(e)
    if ident is None:
        return None
    for other in _others(exclude, directory):
        if other.holding and any(_identity(x) == ident for o in other.effective() for x in _names(o)):
            return other
    return None


def _inherited(ident: tuple[str, str], exclude: Path, directory: Path) -> Entry | None:
    """An entry of another ledger (live or dead) that made this state what it is now."""
    for other in _others(exclude, directory):
        if other.earlier_boot:
            continue
        for o in other.effective():
            for x in _names(o):
                if _identity(x) == ident and x.get("added"):
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
                claimed = {n for n in wanted if n in named or (n not in before and n not in own)}
            else:
                continue
            for name in claimed:
                held.setdefault(name, other.path.name)
    return held


def _loaded_by(entries: Iterable[Entry]) -> set[str]:
    """What a ledger's own loads loaded (`modules_loaded` entries' `loaded`, read under the machine lock)."""
    return {str(n) for e in entries if e.get("kind") == "modules_loaded" for n in e.get("loaded", [])}


# -- the ledger of this run ------------------------------------------------------


def _write_whole(fd: int, data: bytes) -> None:
    """Write all of data (os.write may write less than asked: a full disk, a signal)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, "the write wrote nothing")
        view = view[written:]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _link_unnamed(fd: int, path: Path) -> None:
    """Give the unnamed file `fd` (O_TMPFILE) its name: linkat through /proc/self/fd, following the
    link (os.link follows only when given a directory descriptor)."""
    fds = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.link(str(fd), path, src_dir_fd=fds, follow_symlinks=True)
    finally:
        os.close(fds)


def _why(e: OSError) -> str:
    name = errno.errorcode.get(e.errno, str(e.errno)) if e.errno is not None else "?"
    return f"{name}: {e.strerror or e}"


class Ledger:
    """The journal of one run, backed by one file."""

    def __init__(
        self,
        directory: Path | None = None,
        purpose: str = "",
        contain: bool | None = None,
        *,
        name_stale: bool = True,
    ) -> None:
        """`purpose` names a ledger meant to outlive its process (`cc load NAME`).

        `contain`: put this process, and so every process it starts from now
        on, into a cgroup of the run's own (default: where this process may,
        and the ledger is not one with a purpose).  `name_stale`: warn of the
        ledgers dead runs left (a run's own; not a probe's).
        """
        directory = directory or LEDGER_DIR
        _private_dir(directory)
        self.directory = directory
        me = os.getpid()
        self.owner: Entry = {"pid": me, "start": proc.start_time(me)}
        boot = proc.boot_id()
        if boot is not None:
            self.owner["boot"] = boot
        if purpose:
            self.owner["purpose"] = purpose
        self.file = directory / f"run-{me}-{self.owner['start']}-{secrets.token_hex(3)}.jsonl"
        self._entries: list[Entry] = []
        self._seq = 0
        self._broken = ""  # why no more entries can be written, once that is so
        self._watching_autoloads = False
        self._fd: int | None = self._create({"kind": "owner", **self.owner, "time": time.time()})
        self.cgroup: Path | None = None
        if not purpose and name_stale:
            _name_stale_ledgers(directory)
        if contain if contain is not None else (not purpose and cgroups.usable()):
            self._contain()

    # -- recording ---------------------------------------------------------

    def _create(self, owner: Entry) -> int:
        """The ledger file, which appears under its name with its owner line whole and synced in it:
        written into an unnamed file (O_TMPFILE), or a temporary name, then linked into place."""
        data = (json.dumps(owner) + "\n").encode()
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
        temporary: Path | None = None
        linked = False
        try:
            try:
                fd = os.open(self.directory, flags | os.O_TMPFILE, 0o600)
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                    raise
                temporary = self.directory / f"tmp-{self.file.name}"  # a filesystem without unnamed files
                fd = os.open(temporary, flags | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError as e:
            raise LedgerError(
                f"the run's ledger {self.file} could not be made ({_why(e)}): nothing is changed without one"
            ) from e
        try:
            try:
                _write_whole(fd, data)
                os.fsync(fd)
                if temporary is None:
                    _link_unnamed(fd, self.file)
                else:
                    os.link(temporary, self.file, follow_symlinks=False)
                linked = True
                _fsync_dir(self.directory)
            except OSError as e:
                if linked:
                    self.file.unlink(missing_ok=True)
                raise LedgerError(
                    f"the run's ledger {self.file} could not be made ({_why(e)}): nothing is changed without one"
                ) from e
        except BaseException:
            os.close(fd)
            raise
        finally:
            if temporary is not None:
                temporary.unlink(missing_ok=True)
        return fd

    def _append(self, entry: Entry) -> None:
        """Write one entry whole and sync it, or leave the file as it was and raise LedgerError."""
        if self._fd is None or self._broken:
            raise LedgerError(f"the ledger {self.file}: {self._broken or 'the run has unwound it'}; not recording more")
        fd = self._fd
        size = os.fstat(fd).st_size
        try:
            _write_whole(fd, (json.dumps(entry) + "\n").encode())
            os.fsync(fd)
        except OSError as e:
            why = _why(e)
            try:
                os.ftruncate(fd, size)  # the torn bytes go: the file stays one entry a line
                os.fsync(fd)
            except OSError as cut:
                self._broken = f"a torn entry could not be cut off after {why} ({_why(cut)})"
                log.error("ledger %s: %s", self.file, self._broken)
            raise LedgerError(
                f"the ledger {self.file} could not record a {entry.get('kind')} entry ({why}): the change is not made"
            ) from e

    def record(self, entry: Entry) -> int:
        """Record a change (about to be made, or just made by a call that
        cannot say beforehand, such as a process start); return its number.
        Raises LedgerError, with nothing recorded, when the entry cannot be written whole."""
        if entry["kind"] not in UNDO_STEPS:
            raise ValueError(f"unknown ledger entry kind {entry['kind']!r}")
        entry = {**entry, "seq": self._seq + 1}
        self._append(entry)
        self._seq += 1
        self._entries.append(entry)
        return self._seq

    @contextlib.contextmanager
    def change(self, entry: Entry) -> Iterator[None]:
        """Record the intent, then make the change in the body, with signals held off
        around the pair; a change that fails is marked as not made.  An intent that
        cannot be recorded raises LedgerError before the body: the change is never made."""
        with proc.signals_held():
            seq = self.record(entry)
            try:
                yield
            except BaseException:
                self._cancel(seq)
                raise

    def handed_back(self, seq: int) -> None:
        """A recorded change its owner has undone, or will undo itself: the unwind leaves it alone
        (a run killed before this still has it undone by `clean`)."""
        self._cancel(seq)

    def _cancel(self, seq: int) -> None:
        try:
            self.record({"kind": "cancel", "cancels": seq})
        except LedgerError as e:  # the run's own unwind still knows; `clean` would undo it, harmlessly
            log.warning("%s", e)
            self._entries.append({"kind": "cancel", "cancels": seq})

    def _contain(self) -> None:
        path = cgroups.group_path(f"run-{self.owner['pid']}-{self.owner['start']}-{self.file.stem[-6:]}")
        origin = cgroups.current()
        assert origin is not None
        with self.change({"kind": "cgroup", "path": str(path), "origin": str(origin)}):
            cgroups.create(path)
        if not cgroups.killable(path):
            log.warning("this kernel has no cgroup.kill (Linux 5.14+): a run's processes are ended one by one")
            cgroups.remove(path)
            return
        cgroups.enter(path)
        self.cgroup = path

    def temp_dir(self, prefix: str) -> Path:
        """A new private directory under the system's temporary directory, removed with the run."""
        path = Path(tempfile.gettempdir()) / f"{prefix}{secrets.token_hex(6)}"
        with self.change({"kind": "path", "path": str(path)}):
            path.mkdir(mode=0o700)  # never an existing one, never through a link
        return path

    def mount(self, path: Path, argv: list[str]) -> None:
        """Mount a filesystem at `path` where none is yet (argv mounts it), or hold the one
        another run mounted; it is unmounted when the last run holding it ends."""
        with machine_lock(self.directory):
            mounted = os.path.ismount(path)
            added = not mounted or _inherited(("mount", str(path)), self.file, self.directory) is not None
            with self.change({"kind": "mount", "path": str(path), "added": added}):
                if not mounted:
                    proc.run(argv)

    def process(self, pid: int, start: int, argv: list[str]) -> int:
        """Record a process the run started, by pid and start time (so that a pid the kernel has given
        to another process since is never ended); `start` -1 when it was unreadable."""
        return self.record({"kind": "process", "pid": pid, "start": start, "argv": argv})

    def modprobe(self, module: str, before: Iterable[str]) -> None:
        """Load `module`, with whatever it brings, given the modules loaded before, under the machine
        lock: the run removes, when it ends, every module loaded since that nothing holds and no other
        live run may hold (those loaded meanwhile, read again under the lock, count as loaded before)."""
        with machine_lock(self.directory):
            now = modules.proc_modules()
            names = set(before) | (set(modules.parse_proc_modules(now)) if now is not None else set())
            entry = {"kind": "modules_loaded", "cause": module, "before": sorted(names)}
            with self.change(entry):
                proc.run(["modprobe", module])
            after = modules.proc_modules()
            if after is not None:  # what the load itself brought: this run's alone (no other loads meanwhile)
                self.record({**entry, "loaded": sorted(set(modules.parse_proc_modules(after)) - names)})

    def watch_autoloads(self) -> None:
        """From now until the run ends, the modules the kernel loads for the lab's tools are the run's
        (an `autoloads` entry, once per run, under the machine lock): what was loaded before, and what
        of that another run's lab or load may hold (a live one, or a dead one `clean` has yet to
        undo), which this run then holds as well: the last run holding a module removes it.  Nothing
        where the kernel has no loadable modules."""
        if self._watching_autoloads:
            return
        with machine_lock(self.directory):
            now = modules.proc_modules()
            if now is not None:
                names = set(modules.parse_proc_modules(now))
                lab = {n for n in names if autoloaded_for_a_lab(n)}
                inherited = modules_held_elsewhere(lab, self.file, self.directory, dead_too=True)
                self.record({"kind": "autoloads", "before": sorted(names), "inherited": sorted(inherited)})
        self._watching_autoloads = True

    def set_module_parameter(self, module: str, name: str, value: str) -> None:
        """Write a module's parameter (/sys/module/<module>/parameters/<name>); the value before any
        run changed it is written back when the last run holding it ends."""
        path = module_param_path(module, name)
        with machine_lock(self.directory):
            old = path.read_text().strip()
            first = _inherited(("module_param", f"{module}/{name}"), self.file, self.directory)
            entry = {"kind": "module_param", "module": module, "name": name, "old": first["old"] if first else old}
            entry["added"] = bool(first) or old != value
            with self.change(entry):
                if old != value:
                    log.debug("[root] %s=%s (was %s)", path, value, old)
                    path.write_text(f"{value}\n")

    def namespace(self, ns: proc.Netns) -> None:
        """Record a namespace the run made, by inode and by what no other namespace can have (its
        cookie, this boot's id), so that whatever lives in it ends with the run, and only that."""
        if ns.inode is not None:
            self.record({"kind": "namespace", "inode": ns.inode, "name": ns.name, **namespace_identity(ns)})

    def set_sysctl(self, key: str, value: str) -> None:
        """Change a root-namespace sysctl; the value before any run changed it is restored last."""
        with machine_lock(self.directory):
            old = read_sysctl(key)
            first = _inherited(("sysctl", key), self.file, self.directory)
            entry = {"kind": "sysctl", "key": key, "old": first["old"] if first else old}
            entry["added"] = bool(first) or old != value
            with self.change(entry):
                if old != value:
                    log.debug("[root] sysctl %s=%s (was %s)", key, value, old)
                    _write_sysctl(key, value)

    def allow_congestion_control(self, name: str) -> None:
        """Let non-root namespaces select `name`, holding it until this run ends."""
        with machine_lock(self.directory):
            if any(e.get("kind") == "cc_allowed" and e.get("name") == name for e in self._entries):
                return
            allowed = read_sysctl(CC_ALLOWED).split()
            added = name not in allowed or _inherited(("cc_allowed", name), self.file, self.directory) is not None
            with self.change({"kind": "cc_allowed", "name": name, "added": added}):
                if name not in allowed:
                    log.debug("[root] sysctl %s += %s", CC_ALLOWED, name)
                    _write_sysctl(CC_ALLOWED, " ".join([*allowed, name]))

    # -- undoing -----------------------------------------------------------

    def unwind(self) -> None:
        """Undo every entry, in phases, then drop the file; a file whose undo failed stays for `clean`.
        Once only: a second call does nothing."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self.cgroup is not None:
                origin = next(e["origin"] for e in self._entries if e["kind"] == "cgroup")
                cgroup, self.cgroup = self.cgroup, None
                cgroups.leave(cgroup, Path(origin))
            mine = LedgerFile(self.file, [{"kind": "owner", **self.owner}, *self._entries])
            notes: list[str] = []
            errors = unwind_entries(mine.effective(), self.file, self.directory, notes)
            self._entries.clear()
            for note in notes:
                log.warning("%s", note)
        finally:
            os.close(fd)
        if errors:
            raise LedgerError("; ".join(errors) + f" (left in {self.file}: `run.sh clean` tries again)")
        self.file.unlink(missing_ok=True)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unwind()


def namespace_identity(ns: proc.Netns) -> Entry:
    """What tells this namespace from any other that gets its inode number later: its cookie
    (none before Linux 5.14) and the boot's id."""
    found: Entry = {}
    cookie = proc.netns_cookie(ns.fd) if ns.fd is not None else None
    boot = proc.boot_id()
    if cookie is not None and boot is not None:
        found = {"cookie": cookie, "boot": boot}
    return found


@contextlib.contextmanager
def module_probe(cause: str, directory: Path | None = None) -> Iterator[Callable[[], str]]:
    """Around a kernel probe that may load modules (ground.kernel): the machine lock held, and a
    ledger of the probe's own recording what was loaded before it, so that `clean` unloads what a
    probe killed midway loaded.  Yields a function giving what to keep loaded after the probe: the
    modules loaded before, and those another live run may hold.  The probe unloads the rest itself
    (then the entry is marked done)."""
    directory = directory or LEDGER_DIR
    with machine_lock(directory):
        led = Ledger(directory, contain=False, name_stale=False)
        try:
            before = modules.proc_modules() or ""
            names = set(modules.parse_proc_modules(before))
            seq = led.record({"kind": "modules_loaded", "cause": cause, "before": sorted(names)})

            def kept() -> str:
                # Under the lock no run loads a module on purpose: what came since is the probe's,
                # but for what another live run names.
                since = set(modules.parse_proc_modules(modules.proc_modules() or "")) - names
                spared = modules_held_elsewhere(since, led.file, directory, mine=since)
                for name, holder in sorted(spared.items()):
                    log.info("module %s: another live run (%s) may hold it; the probe leaves it loaded", name, holder)
                return before + modules.as_proc_modules(sorted(spared))

            yield kept
            led._cancel(seq)
        finally:
            led.unwind()


def _name_stale_ledgers(directory: Path) -> None:
    stale = [f for f in ledger_files(directory) if not f.holding]
    if stale:
        log.warning(
            "%d run(s) that died left changes on this machine (%s): `run.sh clean` undoes them",
            len(stale),
            ", ".join(f.path.name for f in stale),
        )


# -- one undo step per kind, in phases --------------------------------------------


@dataclass(frozen=True)
class Context:
    """What an undo step may need to know: which ledger it undoes (and its entries), where the
    others are, the namespaces it holds on to while their processes end (those provably the run's),
    why it refused the others, and the notes for the report (what was left alone, and why)."""

    file: Path
    directory: Path
    entries: list[Entry] = field(default_factory=list)
    held: dict[int, proc.Netns] = field(default_factory=dict)
    refused: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _the_runs(e: Entry, ns: proc.Netns, ctx: Context) -> str:
    """Nothing ("") if the namespace `ns` (which has e's inode) is provably the one e recorded, else why not.

    Proof: the cookie e recorded, in this boot; or, for an entry without one (an older ledger), a
    process the run recorded (its pid and start time still matching) living in that namespace."""
    if "cookie" in e:
        if e.get("boot") != proc.boot_id():
            return "recorded in an earlier boot; left alone"
        if proc.netns_cookie(ns.fd) != e["cookie"]:
            return "another namespace holds that number now; left alone"
        return ""
    for p in ctx.entries:
        if p.get("kind") != "process" or not proc.is_alive(p["pid"], p["start"]):
            continue
        if proc.netns_inode(p["pid"]) == ns.inode and proc.is_alive(p["pid"], p["start"]):
            return ""  # while we hold ns, no other namespace can have its inode
    return "its identity was not recorded (an older ledger) and no process of the run is in it; left alone"


def _hold_namespace(e: Entry, ctx: Context) -> None:
    """Take a handle on a namespace while a process still lets us in, so that its sockets can be
    closed after its processes are gone (their last FINs would otherwise retransmit into a dead
    namespace for minutes, holding their congestion control) -- if it is provably the run's:
    a handle held keeps its inode number from going to another namespace meanwhile."""
    for pid in proc.processes_in_netns([e["inode"]]):
        try:
            ns = proc.Netns.open(str(e.get("name", "lab host")), pid)
        except proc.NamespaceError:
            continue
        if ns.inode != e["inode"]:  # the process moved, or died and its pid went to another
            ns.close()
            continue
        why = _the_runs(e, ns, ctx)
        if not why:
            ctx.held[e["inode"]] = ns
            return
        ns.close()
        ctx.refused[e["inode"]] = why
        return  # one namespace has that inode at a time


def _undo_process(e: Entry, ctx: Context) -> None:
    proc.terminate(e["pid"], e["start"])


def _undo_cgroup(e: Entry, ctx: Context) -> None:
    cgroups.kill(Path(e["path"]))


def _undo_namespace(e: Entry, ctx: Context) -> None:
    """In a namespace provably the run's (held since the first phase): whatever still runs inside
    (found by the inode, which the handle keeps its own) is ended, its sockets are closed
    (`ss -K`), and the handle goes, and with it the namespace.  Any other namespace with that
    inode is left alone, and said so."""
    inode = e["inode"]
    held = ctx.held.pop(inode, None)
    if held is None:
        if proc.processes_in_netns([inode]):
            why = ctx.refused.get(inode, "another namespace holds that number now; left alone")
            raise LeftAlone(f"namespace inode {inode} ({e.get('name', 'a lab namespace')}): {why}")
        return  # gone, or nothing runs in it any more
    try:
        killed = proc.kill_netns_processes([inode])
        if killed:
            log.info("ended %d process(es) still inside %s", len(killed), e.get("name", "a lab namespace"))
        proc.run(["ss", "-K", "-t", "-a"], held, check=False, timeout=10)
        left = proc.processes_in_netns([inode])
    finally:
        held.close()
    if left:
        raise LedgerError(f"processes still inside namespace {e.get('name')} (inode {inode})")


def _quiet(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return proc.run(argv, check=False)


def _undo_link(e: Entry, ctx: Context) -> None:
    if _quiet(["ip", "link", "show", "dev", e["name"]]).returncode == 0:
        proc.run(["ip", "link", "del", "dev", e["name"]])


def _undo_netns(e: Entry, ctx: Context) -> None:
    if Path("/run/netns", e["name"]).exists():
        proc.run(["ip", "netns", "del", e["name"]])


def _shared(undo: Callable[[Entry, Context], None]) -> Callable[[Entry, Context], None]:
    """Undo machine-wide state under the machine lock, and only if no other live run holds it."""

    def step(e: Entry, ctx: Context) -> None:
        with machine_lock(ctx.directory):
            holder = held_elsewhere(e, ctx.file, ctx.directory)
            if holder is not None:
                log.info("%s %s: still held by %s, left as it is", e["kind"], _identity(e), holder.path.name)
                return
            undo(e, ctx)

    return step


def struct_ops_names() -> set[str]:
    listed = _quiet(["bpftool", "-j", "struct_ops", "list"])
    return {m.get("name") for m in json.loads(listed.stdout or "[]")} if listed.returncode == 0 else set()


def _undo_struct_ops(e: Entry, ctx: Context, settle: float = 20.0) -> None:
    if e["name"] in struct_ops_names():
        # A second unregister of a map already on its way out fails; what
        # counts is that it goes, checked below.
        _quiet(["bpftool", "struct_ops", "unregister", "name", e["name"]])
    # Sockets of namespaces being torn down still hold the algorithm for a
    # moment; it is gone only when the kernel has freed it.
    deadline = time.monotonic() + settle
    while e["name"] in struct_ops_names():
        if time.monotonic() > deadline:
            # Unregistered; the kernel frees it when the last socket using it closes.
            log.warning("struct_ops %s unregistered, still held by closing sockets", e["name"])
            return
        time.sleep(0.2)


def _undo_module(e: Entry, ctx: Context, settle: float = 30.0) -> None:
    refcnt = Path("/sys/module", e["name"], "refcnt")
    # A deleted namespace holds its default congestion control until the
    # kernel's asynchronous namespace cleanup has run; wait for the last user.
    deadline = time.monotonic() + settle
    while refcnt.exists() and int(refcnt.read_text()) > 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    if refcnt.exists():
        proc.run(["rmmod", e["name"]])


def _undo_modules_loaded(e: Entry, ctx: Context) -> None:
    """Unload what was loaded since e's `before` that nothing holds, but never a module another
    live ledger may hold (under the machine lock: `_shared`)."""
    before = [str(n) for n in e.get("before", [])]
    since = set(modules.parse_proc_modules(modules.proc_modules() or "")) - set(before)
    spared = modules_held_elsewhere(since, ctx.file, ctx.directory, _loaded_by(ctx.entries))
    for name, holder in sorted(spared.items()):
        log.info("module %s: another live run (%s) may hold it; left loaded", name, holder)
    modules.unload_modules_not_in([*before, *sorted(spared)], settle=10.0)


def _undo_autoloads(e: Entry, ctx: Context) -> None:
    """Unload what the kernel loaded for the lab's tools since e's `before`, and what the run
    `inherited`, that nothing holds and no other live ledger may hold (under the machine lock:
    `_shared`).  A module of another kind loaded meanwhile is someone else's: left, and said so."""
    loaded = modules.parse_proc_modules(modules.proc_modules() or "")
    now = set(loaded)
    since = now - {str(n) for n in e.get("before", [])}
    others = sorted(n for n in since if not autoloaded_for_a_lab(n))
    if others:
        log.info("loaded during the run, not by the lab's tools: %s; left loaded", ", ".join(others))
    ours = {n for n in since | ({str(n) for n in e.get("inherited", [])} & now) if autoloaded_for_a_lab(n)}
    spared = modules_held_elsewhere(ours, ctx.file, ctx.directory, _loaded_by(ctx.entries))
    for name, holder in sorted(spared.items()):
        log.info("module %s: another live run (%s) may hold it; left loaded", name, holder)
    for name, devices in _links_a_module_would_take(ours - set(spared)).items():
        log.warning("module %s: left loaded, its removal would delete %s in the root namespace", name, devices)
        spared[name] = "the root namespace"
    kept = now - ours | set(spared)
    while grown := {n for n in ours - kept if kept & set(loaded[n].used_by)}:  # what a kept module uses stays
        kept |= grown
    if now - kept:
        log.debug("unloading what the lab's tools loaded: %s", ", ".join(sorted(now - kept)))
    modules.unload_modules_not_in(sorted(kept), settle=10.0)


# Link kinds whose module deletes every device of its kind when removed; ifb makes ifb0 and ifb1
# (numifbs=2) itself when it loads, and takes them when it goes.
LINK_MODULES = {"veth": "veth", "bridge": "bridge", "ifb": "ifb"}
IFB_OWN = re.compile(r"ifb[01]")


def _links_a_module_would_take(names: Iterable[str]) -> dict[str, str]:
    """Of the link modules among `names`, those whose removal would delete a device someone made in the
    root namespace (the lab's are gone with its namespaces by now), each with the devices."""
    kinds = {LINK_MODULES[n]: n for n in names if n in LINK_MODULES}
    if not kinds:
        return {}
    listed = _quiet(["ip", "-j", "-d", "link", "show"])
    found: dict[str, list[str]] = {}
    for link in json.loads(listed.stdout or "[]") if listed.returncode == 0 else []:
        kind, name = link.get("linkinfo", {}).get("info_kind"), str(link.get("ifname"))
        if kind in kinds and not (kind == "ifb" and IFB_OWN.fullmatch(name)):
            found.setdefault(kinds[kind], []).append(name)
    return {module: ", ".join(devices) for module, devices in found.items()}


def _undo_module_param(e: Entry, ctx: Context) -> None:
    path = module_param_path(e["module"], e["name"])
    if e.get("added", True) and path.exists() and path.read_text().strip() != e["old"]:
        path.write_text(f"{e['old']}\n")


def _undo_cc_allowed(e: Entry, ctx: Context) -> None:
    names = [x["name"] for x in _names(e) if x.get("added")]
    allowed = read_sysctl(CC_ALLOWED).split()
    if any(n in allowed for n in names):
        _write_sysctl(CC_ALLOWED, " ".join(n for n in allowed if n not in names))


def _undo_sysctl(e: Entry, ctx: Context) -> None:
    if e.get("added", True) and read_sysctl(e["key"]) != e["old"]:
        _write_sysctl(e["key"], e["old"])


def _undo_tracefs(e: Entry, ctx: Context) -> None:
    if Path(e["path"]).is_dir():
        Path(e["path"]).rmdir()


def _undo_trace_enable(e: Entry, ctx: Context) -> None:
    if Path(e["path"]).exists():
        Path(e["path"]).write_text(e["old"] + "\n")


def _undo_mount(e: Entry, ctx: Context) -> None:
    # A tracer outside netrepro may still use an instance: then the mount stays.
    instances = Path(e["path"], "instances")
    if e.get("added", True) and os.path.ismount(e["path"]) and not (instances.is_dir() and any(instances.iterdir())):
        proc.run(["umount", e["path"]])


def _undo_path(e: Entry, ctx: Context) -> None:
    target = Path(e["path"])
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    else:
        target.unlink(missing_ok=True)


def _nothing(e: Entry, ctx: Context) -> None:
    pass


Step = Callable[[Entry, Context], None]

# Each phase undoes its kinds, newest first, before the next phase begins.
PHASES: tuple[tuple[str, dict[str, Step]], ...] = (
    ("namespaces held", {"namespace": _hold_namespace}),
    ("processes", {"process": _undo_process, "cgroup": _undo_cgroup}),
    ("namespaces", {"namespace": _undo_namespace, "netns": _undo_netns, "link": _undo_link}),
    (
        "congestion control",
        {
            "module_param": _shared(_undo_module_param),
            "cc_allowed": _shared(_undo_cc_allowed),
            "struct_ops": _shared(_undo_struct_ops),
            "module": _shared(_undo_module),
        },
    ),
    ("modules", {"modules_loaded": _shared(_undo_modules_loaded), "autoloads": _shared(_undo_autoloads)}),
    ("sysctls", {"sysctl": _shared(_undo_sysctl)}),
    ("tracing", {"trace_enable": _undo_trace_enable, "tracefs": _undo_tracefs}),
    ("mounts", {"mount": _shared(_undo_mount)}),
    ("files", {"path": _undo_path}),
)
UNDO_STEPS = {"owner", "cancel", *(kind for _, steps in PHASES for kind in steps)}


def unwind_entries(
    entries: list[Entry], file: Path, directory: Path | None = None, notes: list[str] | None = None
) -> list[str]:
    """Undo entries phase by phase, newest first within each; return a message per step that failed,
    and add to `notes` one per step that left its object alone (not provably the run's)."""
    ctx = Context(file, directory or LEDGER_DIR, entries)
    errors: list[str] = []
    try:
        _unwind_phases(entries, ctx, errors)
    finally:
        for held in ctx.held.values():
            held.close()
        if notes is not None:
            notes.extend(ctx.notes)
    unknown = sorted({str(e.get("kind")) for e in entries} - UNDO_STEPS)
    if unknown:
        errors.append(f"entries of unknown kind {', '.join(unknown)} not undone")
    return errors


def _unwind_phases(entries: list[Entry], ctx: Context, errors: list[str]) -> None:
    for phase, steps in PHASES:
        for entry in reversed(entries):
            undo = steps.get(entry.get("kind", ""))
            if undo is None:
                continue
            try:
                undo(entry, ctx)
            except LeftAlone as e:
                ctx.notes.append(str(e))
            except Exception as e:  # keep undoing the rest, then report all
                errors.append(f"{phase}: {entry['kind']} {_describe(entry)}: {e}")


def _describe(e: Entry) -> str:
    return json.dumps({k: v for k, v in e.items() if k not in ("kind", "seq")}, sort_keys=True)[:200]


# -- clean: ledgers of runs that are gone -------------------------------------


def stale_ledgers(directory: Path | None = None) -> Iterator[LedgerFile]:
    """Ledgers whose owning run is no longer alive."""
    for found in ledger_files(directory):
        if not found.alive:
            yield found


def with_purpose(purpose: str) -> Callable[[LedgerFile], bool]:
    """Select, for `clean`, the ledgers made with `Ledger(purpose=purpose)`."""
    return lambda found: found.purpose == purpose


FILES_ONLY = ("owner", "path")  # what a ledger of an earlier boot still has on this machine


def clean(directory: Path | None = None, only: Callable[[LedgerFile], bool] | None = None) -> list[str]:
    """Undo what dead runs left (those `only` selects); return a line per ledger handled.

    A ledger whose undo failed in part, or that has lines it cannot read, is
    kept (and said so): what it records may still be on the machine.  What is
    not provably the run's (a namespace whose inode another now has) is left
    alone and named.  A ledger in which nothing can be read holds no change
    that can be undone: it is removed, and said so.
    """
    report = [*_remove_unfinished(directory or LEDGER_DIR)] if only is None else []
    for found in stale_ledgers(directory):
        if only is not None and not only(found):
            continue
        name = found.path.name
        if found.owner is None:
            if found.entries:
                report.append(
                    f"{name}: kept, failed: no owner line, cannot tell whose it is ({'; '.join(found.unreadable)})"
                )
                continue
            found.path.unlink(missing_ok=True)
            what = "; ".join(found.unreadable) or (f"only {found.torn!r}, cut short" if found.torn else "empty")
            report.append(f"{name}: removed, no change could be read in it ({what}); its run died")
            continue
        entries = found.effective()
        notes: list[str] = []
        if found.earlier_boot:
            entries = [e for e in entries if e.get("kind") in FILES_ONLY]
            notes.append("made in an earlier boot: only its files undone, the rest went with that boot")
        left_alone: list[str] = []
        errors = unwind_entries(entries, found.path, directory, left_alone)
        notes += left_alone
        changes = sum(1 for e in entries if e.get("kind") != "owner") - len(left_alone)
        if found.unreadable:
            errors.append("unreadable, so not undone: " + "; ".join(found.unreadable))
        if errors:
            report.append(f"{name}: kept, {len(errors)} step(s) failed: " + "; ".join([*errors, *notes]))
        else:
            found.path.unlink(missing_ok=True)
            torn = f" (its last line, {found.torn!r}, was cut by the crash: never carried out)" if found.torn else ""
            report.append(f"{name}: undid {changes} change(s){torn}" + "".join(f"; {n}" for n in notes))
    return report


def _remove_unfinished(directory: Path) -> Iterator[str]:
    """Ledgers a dead run never finished making (a temporary name, where unnamed files cannot be
    made): they hold an owner line at most, no change."""
    if not directory.is_dir():
        return
    for path in sorted(directory.glob("tmp-run-*.jsonl")):
        named = owner_from_name(path.name)
        if named is not None and not proc.is_alive(*named):
            path.unlink(missing_ok=True)
            yield f"{path.name}: removed, a ledger its run never finished making (no change in it)"
