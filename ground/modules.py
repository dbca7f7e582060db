"""The kernel's loadable modules: what /proc/modules says is loaded, and rmmod of what was loaded since.

A module is named by its line of /proc/modules (name, refcount, the modules
using it, state).  What was loaded since a moment is removed in an order
rmmod accepts (a module before those it uses), and only while nothing holds
it: a module still held after a short wait is left, and said so.

Which modules a run may remove (`ownership`): only those it loaded itself
(what it asked modprobe for, what the kernel loaded for its own commands:
ground.ledger records both), with what they brought in as their dependencies,
and only when nothing else holds them; one that appeared meanwhile for any
other reason is someone else's, and left.  Which modules are the run's is the
ledger's record (ground.ledger); this module only reads and removes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from ground import proc

log = logging.getLogger("netrepro.kernel")

PROC_MODULES = Path("/proc/modules")
# A module the probe used is released when its scratch namespace is torn
# down, which the kernel does asynchronously after the probe's process exits.
MODULE_SETTLE_SECONDS = 2.0


@dataclass(frozen=True)
class LoadedModule:
    """One line of /proc/modules."""

    name: str
    refcount: int
    used_by: tuple[str, ...]  # the modules that depend on it
    state: str  # Live, Loading or Unloading


def parse_proc_modules(text: str) -> dict[str, LoadedModule]:
    """/proc/modules: `name size refcount used_by,... state address` per line (used_by "-" if none)."""
    found = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        used_by = tuple(u for u in fields[3].split(",") if u and u != "-")
        found[fields[0]] = LoadedModule(fields[0], int(fields[2]), used_by, fields[4])
    return found


def modules_to_unload(before: str, after: str) -> list[str]:
    """The modules in `after` but not in `before` that nothing else holds, in an order rmmod accepts.

    A module's refcount counts the modules using it and any other holder (a
    socket, a qdisc, a device).  Removing a new module releases one reference
    on each module it uses; a new module is removable once its count, less the
    users removed before it, is zero.  Anything still held is left loaded.
    """
    old, now = parse_proc_modules(before), parse_proc_modules(after)
    return _removable({name: m for name, m in now.items() if name not in old and m.state == "Live"})


@dataclass(frozen=True)
class Ownership:
    """Of the modules loaded since a moment: what a run may remove now, and what it leaves."""

    unload: list[str]  # the run's, held by nothing else: in an order rmmod accepts
    held: list[str]  # the run's, but something else holds them (a user module, a socket, a qdisc)
    others: list[str]  # loaded since, not by the run (another program's modprobe): never the run's to remove


def with_dependencies(names: Collection[str], among: dict[str, LoadedModule]) -> set[str]:
    """`names` and the modules of `among` that they use, directly or through one another."""
    found = set(names) & set(among)
    grown = True
    while grown:
        more = {n for n, m in among.items() if n not in found and found & set(m.used_by)}
        found |= more
        grown = bool(more)
    return found


def ownership(before: str, after: str, ours: Collection[str]) -> Ownership:
    """Which of the modules in `after` but not in `before` a run may remove, given `ours`: what the run
    itself loaded (asked modprobe for, or the kernel loaded for its own commands).  Those, and what they
    brought in as their dependencies, are the run's; a module loaded before is never the run's, nor is one
    that appeared for any other reason.  One of the run's that something else still holds (a module of
    someone else's that uses it, any other reference) is left, as `modules_to_unload` decides."""
    old, now = parse_proc_modules(before), parse_proc_modules(after)
    appeared = {name: m for name, m in now.items() if name not in old}
    mine = with_dependencies(ours, appeared)
    order = _removable({name: m for name, m in appeared.items() if name in mine and m.state == "Live"})
    return Ownership(order, sorted(mine - set(order)), sorted(set(appeared) - mine))


def _removable(new: dict[str, LoadedModule]) -> list[str]:
    """Of `new`, those nothing but one another holds, users first (see `modules_to_unload`)."""
    order: list[str] = []
    progress = True
    while progress:
        progress = False
        for name in sorted(new):
            if name in order:
                continue
            released = sum(1 for user in new[name].used_by if user in order)
            if new[name].refcount - released == 0:
                order.append(name)
                progress = True
    return order


def proc_modules() -> str | None:
    """/proc/modules, or None where the kernel has no loadable modules."""
    return _read_proc_modules()


def as_proc_modules(names: Collection[str]) -> str:
    """Names as lines of /proc/modules, for `unload_modules_loaded_since`'s `before` (kept loaded)."""
    return "".join(f"{name} 0 0 - Live 0x0\n" for name in names)


def unload_modules_not_in(kept: Collection[str], settle: float = MODULE_SETTLE_SECONDS) -> None:
    """rmmod what was loaded since a moment when only `kept` were, and nothing holds now."""
    unload_modules_loaded_since(as_proc_modules(kept), settle)


def _read_proc_modules() -> str | None:
    """/proc/modules, or None where the kernel has no loadable modules."""
    try:
        return PROC_MODULES.read_text()
    except FileNotFoundError:
        return None


def unload_owned(before: str, ours: Collection[str], settle: float = MODULE_SETTLE_SECONDS) -> Ownership:
    """rmmod what `ownership` gives the run (loaded since `before`: `ours` and their dependencies) once
    nothing else holds it, waiting up to `settle` for holders to go; return what was left, and why."""
    deadline = time.monotonic() + settle
    while True:
        owned = ownership(before, _read_proc_modules() or "", ours)
        for name in owned.unload:
            try:
                proc.run(["rmmod", name], check=False, timeout=10)
            except (OSError, proc.CommandError) as e:
                log.debug("rmmod %s: %s", name, e)
        left = ownership(before, _read_proc_modules() or "", ours)
        if not (left.unload or left.held) or time.monotonic() >= deadline:
            if left.unload or left.held:
                still = ", ".join([*left.unload, *left.held])
                log.warning("%s loaded by this run; still in use after %.0f s, left loaded", still, settle)
            return left
        time.sleep(0.05)


def unload_modules_loaded_since(before: str, settle: float = MODULE_SETTLE_SECONDS) -> None:
    """rmmod the modules loaded since `before` that nothing holds; wait up to `settle` for holders to go."""
    deadline = time.monotonic() + settle
    while True:
        now = _read_proc_modules() or ""
        for name in modules_to_unload(before, now):
            try:
                proc.run(["rmmod", name], check=False, timeout=10)
            except (OSError, proc.CommandError) as e:
                log.debug("rmmod %s: %s", name, e)
        left = sorted(set(parse_proc_modules(_read_proc_modules() or "")) - set(parse_proc_modules(before)))
        if not left:
            return
        if time.monotonic() >= deadline:
            log.warning("%s loaded since; still in use after %.0f s, left loaded", ", ".join(left), settle)
            return
        time.sleep(0.05)
