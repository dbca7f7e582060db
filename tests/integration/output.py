"""Reading a running command's output line by line as it comes, with a deadline.

`select` on a pipe says whether the *descriptor* has bytes; a buffered `readline()` then reads
as much as the pipe holds and returns one line, keeping the rest in Python's buffer, where the
next `select` cannot see it.  When a command prints several lines at once and then waits (a lab
printing its summary and the script's first line, then holding the lab up), the line a test
waits for sits in that buffer until the deadline: CI's dumbbell run failed so, its
"LAB-IS-UP" read but never looked at.  Here the descriptor is read directly, so nothing is
held back, and the pipe's object is left unread for a later `communicate()`.
"""

import codecs
import os
import select
import subprocess
import time
from collections.abc import Callable


def read_until(p: "subprocess.Popen[str]", wanted: Callable[[str], bool], timeout: float) -> tuple[str, str | None]:
    """Read `p`'s stdout until a whole line satisfies `wanted`, the pipe ends, or `timeout` seconds
    pass: (all the text read, the first wanted line or None).  Text after the wanted line, read in
    the same chunk, is in the text returned and is not read again."""
    assert p.stdout is not None
    fd = p.stdout.fileno()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    seen, pending = "", ""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([fd], [], [], min(0.5, left))[0]:
            continue
        chunk = os.read(fd, 65536)
        text = decoder.decode(chunk, final=not chunk)
        seen += text
        *lines, pending = (pending + text).split("\n")
        for line in lines:
            if wanted(line):
                return seen, line
        if not chunk:
            return seen, (pending if pending and wanted(pending) else None)
    return seen, None


def stop(p: "subprocess.Popen[str]", grace_s: float = 60) -> str:
    """Stop a command that never printed what a test waited for: SIGTERM, on which a run or a test helper
    undoes what it made (a SIGKILL would leave its changes to the next tests), SIGKILL only if it has not
    ended `grace_s` later.  Returns the rest of its output."""
    p.terminate()
    try:
        rest, _ = p.communicate(timeout=grace_s)
    except subprocess.TimeoutExpired:
        p.kill()
        rest, _ = p.communicate()
    return rest
