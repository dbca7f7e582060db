"""The machine snapshot the root tests compare (it lives in ground.machinestate, beside the soak)."""

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ground.machinestate import MachineState, differences, snapshot, wait_until_as_before

__all__ = [
    "NOBODY",
    "NOBODY_UID",
    "MachineState",
    "differences",
    "searchable_by_others",
    "snapshot",
    "wait_until_as_before",
]


NOBODY_UID = 65534
# argv prefix that runs a command as nobody (no groups): a rootless user's view of the machine
NOBODY = ["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups"]


@contextlib.contextmanager
def searchable_by_others(path: Path) -> Iterator[None]:
    """Every directory from `path` up made searchable by others (o+x) for the block, as it was after."""
    opened = []
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            os.chmod(parent, stat.S_IMODE(mode) | stat.S_IXOTH)
            opened.append((parent, stat.S_IMODE(mode)))
    try:
        yield
    finally:
        for parent, mode in reversed(opened):
            os.chmod(parent, mode)
