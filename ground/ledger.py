"""The run's ledger: a journal of everything a run created or changed.

This module writes it (`Ledger`); reading ledgers, the machine lock and what other runs hold are
ground.ledgers; the undo step of each entry kind, and `clean`, are ground.undo.

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

A run unwinds its own ledger when it ends, whatever the reason (a signal
that comes meanwhile waits until it is done); `run.sh clean` unwinds the
ledgers of runs that died without doing so (SIGKILL, power loss of the
shell).  Undoing goes in phases, each newest first:
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
iptables; sch_*, xt_*, nfnetlink_queue) are the run's when they appear
while one of its own commands runs, or during its lab's start (`autoloads`),
and go with it; one loaded by anyone else at another moment stays.

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
  modules_loaded {cause, before, loaded?}  remove what loading `cause` brought (`loaded`, recorded again
                                       after the load; without it, `cause` and its dependencies loaded since
                                       `before`), that nothing holds and no other live ledger may hold; a
                                       probe's (`cause` a command, run under the machine lock): what of the
                                       lab's families was loaded since `before`
  autoloads    {before, inherited}     from the lab's start: what was loaded then, and what of the lab's
                                       families of that another live run held (`inherited`: this run
               {cause, loaded}         holds it too); then, for each command of the run's (and the lab's
                                       start) during which the kernel loaded modules (`ip link add ... ifb`,
                                       `tc`, `iptables`, `ss -K`), what it loaded.  The run's end removes
                                       what its commands `loaded` and what it `inherited`, that nothing
                                       holds and no other live ledger may hold; with them go what they
                                       brought to the root namespace (ifb's ifb0 and ifb1, br_netfilter's
                                       bridge-nf-call-* sysctls).  A module that appeared otherwise during
                                       the run (another program's modprobe) is left, and said so
  module_param {module, name, old, added}  write the old value back to /sys/module/<module>/parameters/<name>
  tracefs      {path}                  remove a tracefs instance directory
  trace_enable {path, old}             write the old value of a tracefs control file
  mount        {path, added}           unmount a filesystem a run mounted (tracefs)
  path         {path}                  remove a file or directory tree this run made
  subnet       {subnet}                a lab's addresses (ground.subnets): nothing to undo; while the
                                       run lives, no other lab is given them
  cancel       {cancels}               the change of entry number `cancels` was not made after all
                                       (or was undone already by the code that made it)
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from ground import cgroups, ledgers, modules, proc
from ground.ledgers import (
    CC_ALLOWED,
    Entry,
    LedgerError,
    LedgerFile,
    autoloaded_for_a_lab,
    inherited,
    ledger_files,
    machine_lock,
    module_param_path,
    modules_held_elsewhere,
    private_dir,
    read_sysctl,
    write_sysctl,
)
from ground.undo import UNDO_STEPS, unwind_entries

log = logging.getLogger("netrepro.ledger")

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
        directory = directory or ledgers.LEDGER_DIR
        private_dir(directory)
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
        self._autoload_guard = threading.Lock()  # commands of several threads may record what they loaded
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
            added = not mounted or inherited(("mount", str(path)), self.file, self.directory) is not None
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
        if now is not None:
            proc.command_watchers.append(self._watch_command)

    def _watch_command(self, argv: Sequence[str]) -> contextlib.AbstractContextManager[None]:
        return self.autoloading(" ".join(argv)[:160])

    @contextlib.contextmanager
    def autoloading(self, cause: str) -> Iterator[None]:
        """Around something of the run's own that may make the kernel load modules (a command of its;
        the lab's start, whose commands Mininet runs): what appears meanwhile is recorded as the run's
        (an `autoloads` entry with `loaded`), removed when the run ends.  The kernel does not say who
        asked for a module: one another program loads in this window counts as the run's, so windows
        are kept to the run's own commands.  Nothing before `watch_autoloads`, or where the kernel has
        no loadable modules."""
        before = modules.proc_modules() if self._watching_autoloads and self._fd is not None else None
        try:
            yield
        finally:
            after = modules.proc_modules() if before is not None else None
            new = sorted(set(modules.parse_proc_modules(after or "")) - set(modules.parse_proc_modules(before or "")))
            if after is not None and new and self._fd is not None:
                with self._autoload_guard:
                    try:
                        self.record({"kind": "autoloads", "cause": cause, "loaded": new})
                    except LedgerError as e:
                        log.warning("%s; %s, loaded for the run, will be left loaded", e, ", ".join(new))

    def set_module_parameter(self, module: str, name: str, value: str) -> None:
        """Write a module's parameter (/sys/module/<module>/parameters/<name>); the value before any
        run changed it is written back when the last run holding it ends."""
        path = module_param_path(module, name)
        with machine_lock(self.directory):
            old = path.read_text().strip()
            first = inherited(("module_param", f"{module}/{name}"), self.file, self.directory)
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
            first = inherited(("sysctl", key), self.file, self.directory)
            entry = {"kind": "sysctl", "key": key, "old": first["old"] if first else old}
            entry["added"] = bool(first) or old != value
            with self.change(entry):
                if old != value:
                    log.debug("[root] sysctl %s=%s (was %s)", key, value, old)
                    write_sysctl(key, value)

    def allow_congestion_control(self, name: str) -> None:
        """Let non-root namespaces select `name`, holding it until this run ends."""
        with machine_lock(self.directory):
            if any(e.get("kind") == "cc_allowed" and e.get("name") == name for e in self._entries):
                return
            allowed = read_sysctl(CC_ALLOWED).split()
            added = name not in allowed or inherited(("cc_allowed", name), self.file, self.directory) is not None
            with self.change({"kind": "cc_allowed", "name": name, "added": added}):
                if name not in allowed:
                    log.debug("[root] sysctl %s += %s", CC_ALLOWED, name)
                    write_sysctl(CC_ALLOWED, " ".join([*allowed, name]))

    # -- undoing -----------------------------------------------------------

    def unwind(self) -> None:
        """Undo every entry, in phases, then drop the file; a file whose undo failed stays for `clean`.
        Once only: a second call does nothing.

        Signals are held off while it undoes (they are raised again when it is done): a run that
        began to unwind on an error, or on a first signal, and is then sent another (SIGTERM after
        an error; Ctrl-C pressed twice) would otherwise stop between two phases and leave the rest
        for `clean`."""
        if self._fd is None:
            return
        with proc.signals_held():
            self._unwind()

    def _unwind(self) -> None:
        assert self._fd is not None
        fd, self._fd = self._fd, None
        with contextlib.suppress(ValueError):
            proc.command_watchers.remove(self._watch_command)
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
    directory = directory or ledgers.LEDGER_DIR
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
