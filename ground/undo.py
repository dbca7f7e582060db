"""Undoing a ledger: one step per entry kind, in phases, each newest first (`unwind_entries`),
and `clean`, which unwinds the ledgers of runs that died without doing so.

Every step is idempotent (it checks that its object is still there) and acts only on what is
provably the run's: a namespace by its cookie in this boot, machine-wide state only when no other
live ledger holds it (under the machine lock).  What a run records is ground.ledger.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ground import cgroups, ledgers, modules, proc
from ground.ledgers import (
    CC_ALLOWED,
    Entry,
    LedgerError,
    LedgerFile,
    LeftAlone,
    autoloaded_for_a_lab,
    held_elsewhere,
    identity,
    loaded_by,
    machine_lock,
    module_param_path,
    modules_held_elsewhere,
    owner_from_name,
    per_name,
    read_sysctl,
    stale_ledgers,
    write_sysctl,
)

log = logging.getLogger("netrepro.ledger")


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
    autoloaded: set[str] = field(default_factory=set)  # what the undo's own commands made the kernel load
    done: set[str] = field(default_factory=set)  # steps done once for all their entries ("autoloads")


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
        loaded = modules.proc_modules()
        proc.run(["ss", "-K", "-t", "-a"], held, check=False, timeout=10)  # may load the *_diag modules
        if loaded is not None:
            now = modules.parse_proc_modules(modules.proc_modules() or "")
            ctx.autoloaded.update(set(now) - set(modules.parse_proc_modules(loaded)))
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
                log.info("%s %s: still held by %s, left as it is", e["kind"], identity(e), holder.path.name)
            else:
                undo(e, ctx)
            # this ledger holds it no longer: a run unwinding beside it must not count it (undone, or the
            # holder's to undo); a step that failed is not marked, and stays for `clean`
            ledgers.mark_released(ctx.file, e.get("seq"))

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
    """Unload what loading e's `cause` brought (`loaded`; without it, the cause and its dependencies
    loaded since `before`) that nothing holds, but never a module another live ledger may hold (under
    the machine lock: `_shared`).  A probe's entry (its cause a command, run under the machine lock)
    owns what of the lab's families was loaded since `before`.  Anything else loaded since is left."""
    before = [str(n) for n in e.get("before", [])]
    since = set(modules.parse_proc_modules(modules.proc_modules() or "")) - set(before)
    cause = str(e.get("cause", ""))
    if "loaded" in e:
        ours = {str(n) for n in e["loaded"]}
    elif " " in cause:  # a probe's command
        ours = {n for n in since if autoloaded_for_a_lab(n)}
    else:
        ours = {cause}
    spared = modules_held_elsewhere(since, ctx.file, ctx.directory, loaded_by(ctx.entries))
    for name, holder in sorted(spared.items()):
        log.info("module %s: another live run (%s) may hold it; left loaded", name, holder)
    modules.unload_owned(modules.as_proc_modules([*before, *sorted(spared)]), ours - set(spared), settle=10.0)


def _undo_autoloads(e: Entry, ctx: Context) -> None:
    """Unload, once for all of the run's `autoloads` entries, what the kernel loaded for the run's own
    commands (their `loaded`, and the undo's own `ss -K`) and what the run `inherited`, of the lab's
    families, that nothing holds and no other live ledger may hold (under the machine lock: `_shared`).
    A module that appeared otherwise since the lab's start (another program's modprobe) is someone
    else's: left, and said so."""
    if "autoloads" in ctx.done:
        return
    ctx.done.add("autoloads")
    entries = [x for x in ctx.entries if x.get("kind") == "autoloads"]
    loaded = modules.parse_proc_modules(modules.proc_modules() or "")
    now = set(loaded)
    start = next((x for x in entries if "before" in x), e)
    since = now - {str(n) for n in start.get("before", [])}
    recorded = {str(n) for x in entries for n in x.get("loaded", [])} | ctx.autoloaded
    inherited = {str(n) for x in entries for n in x.get("inherited", [])} & now
    ours = modules.with_dependencies(recorded & since, {n: loaded[n] for n in since}) | {
        n for n in inherited if autoloaded_for_a_lab(n)
    }
    asked = {str(x.get("cause")) for x in ctx.entries if x.get("kind") == "modules_loaded"} | loaded_by(ctx.entries)
    others = sorted(since - ours - asked)
    if others:
        log.warning(
            "loaded during the run, not by it (the kernel loaded them for no command of the run's): %s; left loaded",
            ", ".join(others),
        )
    spared = modules_held_elsewhere(ours, ctx.file, ctx.directory, loaded_by(ctx.entries))
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
    names = [x["name"] for x in per_name(e) if x.get("added")]
    allowed = read_sysctl(CC_ALLOWED).split()
    if any(n in allowed for n in names):
        write_sysctl(CC_ALLOWED, " ".join(n for n in allowed if n not in names))


def _undo_sysctl(e: Entry, ctx: Context) -> None:
    if e.get("added", True) and read_sysctl(e["key"]) != e["old"]:
        write_sysctl(e["key"], e["old"])


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
# A lab's subnet (ground.subnets) holds nothing on the machine: it is free once its ledger is gone.
UNDO_STEPS = {"owner", "cancel", "subnet", *(kind for _, steps in PHASES for kind in steps)}


def unwind_entries(
    entries: list[Entry], file: Path, directory: Path | None = None, notes: list[str] | None = None
) -> list[str]:
    """Undo entries phase by phase, newest first within each; return a message per step that failed,
    and add to `notes` one per step that left its object alone (not provably the run's)."""
    ctx = Context(file, directory or ledgers.LEDGER_DIR, entries)
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
    report = [*_remove_unfinished(directory or ledgers.LEDGER_DIR)] if only is None else []
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
        changes = sum(1 for e in entries if e.get("kind") not in ("owner", "subnet")) - len(left_alone)
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
