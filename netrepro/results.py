"""Result files and their provenance.

Results live in results/<study>/<figure>.{csv,png,manifest.json}.  Files a
root run writes are handed back to the user who called sudo (SUDO_UID), and
every manifest carries what a reviewer needs to trust the numbers: kernel,
tool versions, git commit, and everything the run was told.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from netrepro import kernel

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
MANIFEST_VERSION = 1
TOOLS = ("ip", "tc", "iptables-legacy", "ethtool", "ping", "iperf3", "apache2", "h2load", "curl", "bpftool", "clang")


def hand_back(path: Path) -> None:
    """Give a file (and the directories up to results/) to the sudo caller."""
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    if os.geteuid() != 0 or uid is None:
        return
    for p in (path, *path.parents):
        if p == REPO or REPO not in p.parents:
            break
        os.chown(p, int(uid), int(gid or uid))


def git_state() -> dict[str, Any]:
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip()

    return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain"))}


def code_version() -> str:
    """The commit the code runs from, short, with `+dirty` for uncommitted changes (recorded in every trial row)."""
    state = git_state()
    commit = str(state["commit"] or "")
    return (commit[:12] + ("+dirty" if state["dirty"] else "")) if commit else "unknown"


def provenance() -> dict[str, Any]:
    """The machine, kernel, tools and code a result came from."""
    return {
        "format": MANIFEST_VERSION,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        "kernel": kernel.release(),
        "python": platform.python_version(),
        "git": git_state(),
        "tools": {t: kernel.tool_version(t) for t in TOOLS},
        # In the stock-kernel lane: the guest's kernel and its acceleration (kvm or tcg).
        **({"vm": guest} if (guest := kernel.guest_info()) is not None else {}),
    }


def write_json(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    hand_back(path)
