"""Result files and their provenance.

A run's results live in results/<study>/<figure>.{csv,png,manifest.json}
(untracked), the project's reference reproduction of each figure in
results/reference/<study>/ (committed), and a figure run with other
parameters than declared in results/<study>/<figure>@<what differs>/.  A result
file is replaced whole (`replace_file`: a new file beside it, synced, renamed
over it), so a crash leaves the old version or the new one, never half of
either.  Files a root run writes are handed back to the user who called sudo
(SUDO_UID), and every manifest carries what a reviewer needs to trust the
numbers: kernel, tool versions, git commit, and everything the run was told.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ground import kernel, manifests, proc

log = logging.getLogger("netrepro.results")

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
# The project's own reproduction, committed: what a user's run is set beside (results/reference/README.md).
REFERENCE = RESULTS / "reference"
TOOLS = ("ip", "tc", "iptables-legacy", "ethtool", "ping", "iperf3", "apache2", "h2load", "curl", "bpftool", "clang")


def sudo_caller() -> tuple[int, int] | None:
    """The user and group a root run hands its files back to (sudo's caller), or None (not root, or no sudo)."""
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    if os.geteuid() != 0 or uid is None:
        return None
    return int(uid), int(gid or uid)


def hand_back(path: Path, tree: Path | None = None) -> None:
    """Give a file, and the directories between it and `tree`, to the sudo caller.

    `tree` (default: the file's own directory) is the results directory the
    run was given; nothing at or above it changes owner.  The walk goes down
    from `tree` one directory at a time without following a link, and a link
    met on the way is itself chowned (harmless), never what it points to.
    """
    caller = sudo_caller()
    if caller is None:
        return
    tree = path.parent if tree is None else tree
    try:
        parts = path.relative_to(tree).parts
    except ValueError:
        parts = ("..",)
    if not parts or ".." in parts:
        log.warning("%s is not inside %s: not handed back", path, tree)
        return
    owner, group = caller
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth, name in enumerate(parts, start=1):
            os.chown(name, owner, group, dir_fd=fd, follow_symlinks=False)
            if depth == len(parts):
                break
            try:
                below = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as e:  # a link (ELOOP) or not a directory: go no further
                log.warning("%s: not handed back below %s (%s)", path, name, e.strerror)
                return
            os.close(fd)
            fd = below
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Put `data` at `path` atomically and durably.

    The bytes go to a new file of a unique name in the same directory
    (mkstemp: O_EXCL, so a link planted there is never followed), are synced,
    and the file is renamed over `path` (a link at `path` is replaced, its
    target untouched); then the directory is synced, so the rename survives a
    crash too.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
    """fsync a directory, so that the names just made or renamed in it are on disk."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# What git_state leaves out of the code: the checkout's results/, where runs write their CSVs, figures
# and manifests (the reference reproduction too, before it is committed).
NOT_CODE = f":(exclude){RESULTS.name}"


def in_the_code(path: Path) -> bool:
    """Whether files made under `path` would count as changes to the code (git_state): inside the
    git checkout and not under its results/.  A run's --out there would name its own rows +dirty."""
    repo, path = REPO.resolve(), path.resolve()
    return (repo / ".git").exists() and path.is_relative_to(repo) and not path.is_relative_to(repo / RESULTS.name)


def git_argv(*args: str, repo: Path | None = None) -> list[str]:
    """A git command on the checkout the code runs from (or `repo`), as every call here runs it (an argument list).

    The checkout is named safe explicitly: run as root in a user's checkout (or as a user in one root
    made) git would otherwise refuse it as of "dubious ownership", or trust it only by guessing from
    SUDO_UID; its config is trusted no further than the code that runs from it already is.  No
    fsmonitor command it may name is run: git_state only reads.
    """
    repo = REPO if repo is None else repo  # REPO read at each call (the tests move it)
    return ["git", "-c", f"safe.directory={repo}", "-c", "core.fsmonitor=false", "-C", str(repo), *args]


def git_state() -> dict[str, Any]:
    """The commit the code runs from, and whether anything but results/ (NOT_CODE) differs from it."""

    def git(*args: str) -> str:
        return proc.run(git_argv(*args), check=False).stdout.strip()

    changed = git("status", "--porcelain", "--", ".", NOT_CODE)
    return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(changed)}


def code_version() -> str:
    """The commit the code runs from, short, with `+dirty` for uncommitted changes (recorded in every trial row)."""
    return version_of(git_state())


def version_of(state: Mapping[str, Any]) -> str:
    """A git_state() as code_version writes it: the short commit, `+dirty`, or `unknown`."""
    commit = str(state.get("commit") or "")
    return (commit[:12] + ("+dirty" if state.get("dirty") else "")) if commit else "unknown"


def code_fingerprint() -> str:
    """code_version, and for a dirty tree a digest of its changes: equal on two machines only if
    they run the same commit with the same uncommitted changes (what a cluster's workers must)."""
    version = code_version()
    if not version.endswith("+dirty"):
        return version
    digest = hashlib.sha256()
    for args in (
        ["diff", "HEAD", "--binary", "--", ".", NOT_CODE],
        ["ls-files", "--others", "--exclude-standard", "-z", "--", ".", NOT_CODE],
    ):
        digest.update(proc.run(git_argv(*args), check=False).stdout.encode())
    return f"{version}:{digest.hexdigest()[:12]}"


def provenance() -> dict[str, Any]:
    """The machine, kernel, tools and code a result came from."""
    return {
        "format": manifests.MANIFEST_VERSION,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        "kernel": kernel.release(),
        "cpu": kernel.cpu(),
        "python": platform.python_version(),
        "git": git_state(),
        "tools": {t: kernel.tool_version(t) for t in TOOLS},
        # In the stock-kernel lane: the guest's kernel and its acceleration (kvm or tcg).
        **({"vm": guest} if (guest := kernel.guest_info()) is not None else {}),
    }


def write_json(path: Path, doc: dict[str, Any], tree: Path | None = None) -> None:
    """Write a JSON result file (replaced whole) and hand it back; `tree` as in `hand_back`."""
    replace_file(path, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode())
    hand_back(path, tree)
