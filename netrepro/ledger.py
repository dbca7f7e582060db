"""The run's ledger: a journal of everything a run created or changed.

Each entry is written (and synced) to a file under /run/netrepro/ledger the
moment the change is made, and says how to undo it.  A run unwinds its own
ledger when it ends, whatever the reason; `run.sh clean` unwinds the ledgers
of runs that died without doing so (SIGKILL, power loss of the shell).
Undoing is idempotent: each step checks that its object is still there and
still ours, so the normal teardown and the ledger never fight.

Entry kinds:
  process      {pid, start, argv}      end the process group, if still the same process
  sysctl       {key, old}              write the old value back (root namespace)
  cc_allowed   {added: [names]}        remove those names from tcp_allowed_congestion_control
  link         {name}                  delete the root-namespace interface
  netns        {name}                  delete the named namespace
  struct_ops   {name}                  unregister the BPF struct_ops map
  module       {name}                  remove the kernel module
  tracefs      {path}                  remove a tracefs instance directory
  trace_enable {path, old}             write the old value of a tracefs control file
  mount        {path}                  unmount a filesystem this run mounted (tracefs)
  path         {path}                  remove a file or directory tree this run made
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from netrepro import proc

log = logging.getLogger("netrepro.ledger")

LEDGER_DIR = Path(os.environ.get("NETREPRO_LEDGER_DIR", "/run/netrepro/ledger"))
Entry = dict[str, Any]


def sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def read_sysctl(key: str) -> str:
    return sysctl_path(key).read_text().strip()


def _write_sysctl(key: str, value: str) -> None:
    sysctl_path(key).write_text(value + "\n")


class LedgerError(RuntimeError):
    """Some undo steps failed; the message lists each."""


class Ledger:
    """The journal of one run, backed by one file."""

    def __init__(self, directory: Path = LEDGER_DIR, purpose: str = "") -> None:
        """`purpose` names a ledger meant to outlive its process (`cc load NAME`)."""
        directory.mkdir(parents=True, exist_ok=True)
        me = os.getpid()
        self.owner: Entry = {"pid": me, "start": proc.start_time(me)}
        if purpose:
            self.owner["purpose"] = purpose
        self.file = directory / f"run-{me}-{self.owner['start']}.jsonl"
        self._entries: list[Entry] = []
        self._append({"kind": "owner", **self.owner, "time": time.time()})

    # -- recording ---------------------------------------------------------

    def _append(self, entry: Entry) -> None:
        with open(self.file, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def record(self, entry: Entry) -> None:
        """Record a change already made, with what undoing it needs."""
        if entry["kind"] not in UNDO:
            raise ValueError(f"unknown ledger entry kind {entry['kind']!r}")
        self._entries.append(entry)
        self._append(entry)

    def set_sysctl(self, key: str, value: str) -> None:
        """Change a root-namespace sysctl, recording its old value first."""
        old = read_sysctl(key)
        if old == value:
            return
        self.record({"kind": "sysctl", "key": key, "old": old})
        log.debug("[root] sysctl %s=%s (was %s)", key, value, old)
        _write_sysctl(key, value)

    def allow_congestion_control(self, name: str) -> None:
        """Let non-root namespaces select `name`, recording the widening."""
        key = "net.ipv4.tcp_allowed_congestion_control"
        allowed = read_sysctl(key).split()
        if name in allowed:
            return
        self.record({"kind": "cc_allowed", "added": [name]})
        log.debug("[root] sysctl %s += %s", key, name)
        _write_sysctl(key, " ".join([*allowed, name]))

    # -- undoing -----------------------------------------------------------

    def unwind(self) -> None:
        """Undo every entry, newest first, then drop the file."""
        errors = unwind_entries(self._entries)
        self._entries.clear()
        if errors:
            raise LedgerError("; ".join(errors))
        self.file.unlink(missing_ok=True)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unwind()


def unwind_entries(entries: list[Entry]) -> list[str]:
    """Undo entries newest first; return a message per step that failed."""
    errors = []
    for entry in reversed(entries):
        undo = UNDO.get(entry["kind"])
        if undo is None:
            continue
        try:
            undo(entry)
        except Exception as e:  # keep undoing the rest, then report all
            errors.append(f"{entry['kind']} {entry}: {e}")
    return errors


# -- one undo step per kind --------------------------------------------------


def _undo_process(e: Entry) -> None:
    proc.terminate(e["pid"], e["start"])


def _undo_sysctl(e: Entry) -> None:
    _write_sysctl(e["key"], e["old"])


def _undo_cc_allowed(e: Entry) -> None:
    key = "net.ipv4.tcp_allowed_congestion_control"
    allowed = [n for n in read_sysctl(key).split() if n not in e["added"]]
    _write_sysctl(key, " ".join(allowed))


def _quiet(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def _undo_link(e: Entry) -> None:
    if _quiet(["ip", "link", "show", "dev", e["name"]]).returncode == 0:
        proc.run(["ip", "link", "del", "dev", e["name"]])


def _undo_netns(e: Entry) -> None:
    if Path("/run/netns", e["name"]).exists():
        proc.run(["ip", "netns", "del", e["name"]])


def _struct_ops_names() -> set[str]:
    listed = _quiet(["bpftool", "-j", "struct_ops", "list"])
    return {m.get("name") for m in json.loads(listed.stdout or "[]")} if listed.returncode == 0 else set()


def _undo_struct_ops(e: Entry, settle: float = 20.0) -> None:
    if e["name"] in _struct_ops_names():
        # A second unregister of a map already on its way out fails; what
        # counts is that it goes, checked below.
        _quiet(["bpftool", "struct_ops", "unregister", "name", e["name"]])
    # Sockets of namespaces being torn down still hold the algorithm for a
    # moment; it is gone only when the kernel has freed it.
    deadline = time.monotonic() + settle
    while e["name"] in _struct_ops_names():
        if time.monotonic() > deadline:
            # Unregistered; the kernel frees it when the last socket using it closes.
            log.warning("struct_ops %s unregistered, still held by closing sockets", e["name"])
            return
        time.sleep(0.2)


def _undo_module(e: Entry, settle: float = 30.0) -> None:
    refcnt = Path("/sys/module", e["name"], "refcnt")
    # A deleted namespace holds its default congestion control until the
    # kernel's asynchronous namespace cleanup has run; wait for the last user.
    deadline = time.monotonic() + settle
    while refcnt.exists() and int(refcnt.read_text()) > 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    if refcnt.exists():
        proc.run(["rmmod", e["name"]])


def _undo_tracefs(e: Entry) -> None:
    if Path(e["path"]).is_dir():
        Path(e["path"]).rmdir()


def _undo_trace_enable(e: Entry) -> None:
    if Path(e["path"]).exists():
        Path(e["path"]).write_text(e["old"] + "\n")


def _undo_mount(e: Entry) -> None:
    # Another run may still trace in its own instance: then the mount stays
    # (the last run to finish, or `clean`, unmounts it).
    instances = Path(e["path"], "instances")
    if os.path.ismount(e["path"]) and not (instances.is_dir() and any(instances.iterdir())):
        proc.run(["umount", e["path"]])


def _undo_path(e: Entry) -> None:
    target = Path(e["path"])
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    else:
        target.unlink(missing_ok=True)


UNDO: dict[str, Callable[[Entry], None]] = {
    "owner": lambda e: None,
    "process": _undo_process,
    "sysctl": _undo_sysctl,
    "cc_allowed": _undo_cc_allowed,
    "link": _undo_link,
    "netns": _undo_netns,
    "struct_ops": _undo_struct_ops,
    "module": _undo_module,
    "tracefs": _undo_tracefs,
    "trace_enable": _undo_trace_enable,
    "mount": _undo_mount,
    "path": _undo_path,
}


# -- clean: ledgers of runs that are gone -------------------------------------


def _read(file: Path) -> list[Entry]:
    entries = []
    for line in file.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(json.JSONDecodeError):  # a line cut by a crash
            entries.append(json.loads(line))
    return entries


def stale_ledgers(directory: Path = LEDGER_DIR) -> Iterator[tuple[Path, list[Entry]]]:
    """Ledgers whose owning run is no longer alive."""
    if not directory.is_dir():
        return
    for file in sorted(directory.glob("run-*.jsonl")):
        entries = _read(file)
        owner = next((e for e in entries if e.get("kind") == "owner"), None)
        if owner is not None and owner.get("start") is not None and proc.is_alive(owner["pid"], owner["start"]):
            continue
        yield file, entries


def with_purpose(purpose: str) -> Callable[[list[Entry]], bool]:
    """Select, for `clean`, the ledgers made with `Ledger(purpose=purpose)`."""
    return lambda entries: any(e.get("kind") == "owner" and e.get("purpose") == purpose for e in entries)


def clean(directory: Path = LEDGER_DIR, only: Callable[[list[Entry]], bool] | None = None) -> list[str]:
    """Undo what dead runs left (those `only` selects); return a line per ledger handled."""
    report = []
    for file, entries in stale_ledgers(directory):
        if only is not None and not only(entries):
            continue
        errors = unwind_entries(entries)
        if errors:
            report.append(f"{file.name}: {len(errors)} step(s) failed: " + "; ".join(errors))
        else:
            file.unlink(missing_ok=True)
            report.append(f"{file.name}: undid {len(entries) - 1} change(s)")
    return report
