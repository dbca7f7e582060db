"""The run's ledger: a journal of everything a run created or changed.

Each entry is written (and synced) to a file under /run/netrepro/ledger
before its change is made (`Ledger.change`), with the run's signals held
off around the pair, so that a run killed at any moment has recorded all it
did, and at worst an intent it never carried out.  Undoing is idempotent:
each step checks that its object is still there, so the normal teardown, a
repeated `clean` and an intent never carried out are all harmless.

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
a run and `clean`, never undo each other's state.

Entry kinds:
  owner        {pid, start, purpose?}  the run itself
  cgroup       {path, origin}          kill the run's cgroup (every process in it) and remove it
  process      {pid, start, argv}      end the process group, if still the same process
  namespace    {inode, name}           close its sockets, end what still runs in it, wait for it to go
  sysctl       {key, old, added}       write the old value back (root namespace)
  cc_allowed   {name, added}           remove the name from tcp_allowed_congestion_control
  link         {name}                  delete the root-namespace interface
  netns        {name}                  delete the named namespace
  struct_ops   {name}                  unregister the BPF struct_ops map
  module       {name}                  remove the kernel module
  modules_loaded {cause, before}       remove the modules loaded since (`before`: the names then) that
                                       nothing holds: what loading `cause` brought, and what its users did
  tracefs      {path}                  remove a tracefs instance directory
  trace_enable {path, old}             write the old value of a tracefs control file
  mount        {path, added}           unmount a filesystem a run mounted (tracefs)
  path         {path}                  remove a file or directory tree this run made
  cancel       {cancels}               the change of entry number `cancels` was not made after all
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
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

from ground import cgroups, kernel, proc
from ground.errors import SetupError

log = logging.getLogger("netrepro.ledger")

LEDGER_DIR = Path(os.environ.get("NETREPRO_LEDGER_DIR", "/run/netrepro/ledger"))
Entry = dict[str, Any]
CC_ALLOWED = "net.ipv4.tcp_allowed_congestion_control"


def sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def read_sysctl(key: str) -> str:
    return sysctl_path(key).read_text().strip()


def _write_sysctl(key: str, value: str) -> None:
    sysctl_path(key).write_text(value + "\n")


class LedgerError(SetupError):
    """Some undo steps failed; the message lists each."""


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
    def alive(self) -> bool:
        owner = self.owner
        return owner is not None and owner.get("start") is not None and proc.is_alive(owner["pid"], owner["start"])

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
        for o in other.effective():
            for x in _names(o):
                if _identity(x) == ident and x.get("added"):
                    return x
    return None


# -- the ledger of this run ------------------------------------------------------


class Ledger:
    """The journal of one run, backed by one file."""

    def __init__(self, directory: Path | None = None, purpose: str = "", contain: bool | None = None) -> None:
        """`purpose` names a ledger meant to outlive its process (`cc load NAME`).

        `contain`: put this process, and so every process it starts from now
        on, into a cgroup of the run's own (default: where this process may,
        and the ledger is not one with a purpose).
        """
        directory = directory or LEDGER_DIR
        _private_dir(directory)
        self.directory = directory
        me = os.getpid()
        self.owner: Entry = {"pid": me, "start": proc.start_time(me)}
        if purpose:
            self.owner["purpose"] = purpose
        self.file = directory / f"run-{me}-{self.owner['start']}-{secrets.token_hex(3)}.jsonl"
        self._fd = os.open(
            self.file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        self._entries: list[Entry] = []
        self._seq = 0
        self._append({"kind": "owner", **self.owner, "time": time.time()})
        self.cgroup: Path | None = None
        if not purpose:
            _name_stale_ledgers(directory)
        if contain if contain is not None else (not purpose and cgroups.usable()):
            self._contain()

    # -- recording ---------------------------------------------------------

    def _append(self, entry: Entry) -> None:
        os.write(self._fd, (json.dumps(entry) + "\n").encode())
        os.fsync(self._fd)

    def record(self, entry: Entry) -> int:
        """Record a change (about to be made, or just made by a call that
        cannot say beforehand, such as a process start); return its number."""
        if entry["kind"] not in UNDO_STEPS:
            raise ValueError(f"unknown ledger entry kind {entry['kind']!r}")
        self._seq += 1
        entry = {**entry, "seq": self._seq}
        self._entries.append(entry)
        self._append(entry)
        return self._seq

    @contextlib.contextmanager
    def change(self, entry: Entry) -> Iterator[None]:
        """Record the intent, then make the change in the body, with signals held off
        around the pair; a change that fails is marked as not made."""
        with proc.signals_held():
            seq = self.record(entry)
            try:
                yield
            except BaseException:
                self.record({"kind": "cancel", "cancels": seq})
                raise

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
        """Load `module`, with whatever it brings, given the modules loaded before: the run removes, when
        it ends, every module loaded since that nothing holds."""
        with self.change({"kind": "modules_loaded", "cause": module, "before": sorted(before)}):
            proc.run(["modprobe", module])

    def namespace(self, ns: proc.Netns) -> None:
        """Record a namespace the run made (by inode), so that whatever lives in it ends with the run."""
        if ns.inode is not None:
            self.record({"kind": "namespace", "inode": ns.inode, "name": ns.name})

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
        """Undo every entry, in phases, then drop the file; a file whose undo failed stays for `clean`."""
        if self.cgroup is not None:
            origin = next(e["origin"] for e in self._entries if e["kind"] == "cgroup")
            cgroups.leave(self.cgroup, Path(origin))
        mine = LedgerFile(self.file, [{"kind": "owner", **self.owner}, *self._entries])
        errors = unwind_entries(mine.effective(), self.file, self.directory)
        self._entries.clear()
        if errors:
            raise LedgerError("; ".join(errors) + f" (left in {self.file}: `run.sh clean` tries again)")
        os.close(self._fd)
        self.file.unlink(missing_ok=True)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unwind()


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
    """What an undo step may need to know: which ledger it undoes, where the others are,
    and the namespaces it holds on to while their processes end."""

    file: Path
    directory: Path
    held: dict[int, proc.Netns] = field(default_factory=dict)


def _hold_namespace(e: Entry, ctx: Context) -> None:
    """Take a handle on a namespace while a process still lets us in, so that its sockets can be
    closed after its processes are gone (their last FINs would otherwise retransmit into a dead
    namespace for minutes, holding their congestion control)."""
    for pid in proc.processes_in_netns([e["inode"]]):
        try:
            ns = proc.Netns.open(str(e.get("name", "lab host")), pid)
        except proc.NamespaceError:
            continue
        if ns.inode == e["inode"]:
            ctx.held[e["inode"]] = ns
            return
        ns.close()


def _undo_process(e: Entry, ctx: Context) -> None:
    proc.terminate(e["pid"], e["start"])


def _undo_cgroup(e: Entry, ctx: Context) -> None:
    cgroups.kill(Path(e["path"]))


def _undo_namespace(e: Entry, ctx: Context) -> None:
    """Whatever still runs inside (found by the namespace's inode) is ended, its sockets are
    closed (`ss -K`), and the handle goes, and with it the namespace."""
    killed = proc.kill_netns_processes([e["inode"]])
    if killed:
        log.info("ended %d process(es) still inside %s", len(killed), e.get("name", "a lab namespace"))
    held = ctx.held.pop(e["inode"], None)
    if held is not None:
        try:
            proc.run(["ss", "-K", "-t", "-a"], held, check=False, timeout=10)
        finally:
            held.close()
    if proc.processes_in_netns([e["inode"]]):
        raise LedgerError(f"processes still inside namespace {e.get('name')} (inode {e['inode']})")


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
    kernel.unload_modules_not_in(e["before"], settle=10.0)


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
            "cc_allowed": _shared(_undo_cc_allowed),
            "struct_ops": _shared(_undo_struct_ops),
            "module": _shared(_undo_module),
        },
    ),  # fmt: skip
    ("modules", {"modules_loaded": _shared(_undo_modules_loaded)}),
    ("sysctls", {"sysctl": _shared(_undo_sysctl)}),
    ("tracing", {"trace_enable": _undo_trace_enable, "tracefs": _undo_tracefs}),
    ("mounts", {"mount": _shared(_undo_mount)}),
    ("files", {"path": _undo_path}),
)
UNDO_STEPS = {"owner", "cancel", *(kind for _, steps in PHASES for kind in steps)}


def unwind_entries(entries: list[Entry], file: Path, directory: Path | None = None) -> list[str]:
    """Undo entries phase by phase, newest first within each; return a message per step that failed."""
    ctx = Context(file, directory or LEDGER_DIR)
    errors: list[str] = []
    try:
        _unwind_phases(entries, ctx, errors)
    finally:
        for held in ctx.held.values():
            held.close()
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


def clean(directory: Path | None = None, only: Callable[[LedgerFile], bool] | None = None) -> list[str]:
    """Undo what dead runs left (those `only` selects); return a line per ledger handled.

    A ledger whose undo failed in part, or that has lines it cannot read, is
    kept (and said so): what it records may still be on the machine.
    """
    report = []
    for found in stale_ledgers(directory):
        if only is not None and not only(found):
            continue
        name = found.path.name
        if found.owner is None:
            report.append(
                f"{name}: kept, failed: no owner line, cannot tell whose it is ({'; '.join(found.unreadable)})"
            )
            continue
        entries = found.effective()
        errors = unwind_entries(entries, found.path, directory)
        changes = sum(1 for e in entries if e.get("kind") != "owner")
        if found.unreadable:
            errors.append("unreadable, so not undone: " + "; ".join(found.unreadable))
        if errors:
            report.append(f"{name}: kept, {len(errors)} step(s) failed: " + "; ".join(errors))
        else:
            found.path.unlink(missing_ok=True)
            torn = f" (its last line, {found.torn!r}, was cut by the crash: never carried out)" if found.torn else ""
            report.append(f"{name}: undid {changes} change(s){torn}")
    return report
