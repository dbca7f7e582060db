"""The Chrome DevTools protocol over a pipe: how the project drives a browser, with no port opened.

Chromium started with `--remote-debugging-pipe` reads commands from its
descriptor 3 and writes replies and events to its descriptor 4, each message
JSON ended by a NUL byte.  Nothing listens anywhere: only the process holding
the pipe's other ends can drive the browser.  The numbers 3 and 4 are fixed
by Chromium, so the browser is started through this module's `main`
(`pipe_argv`), which moves the two descriptors it was given into place and
replaces itself with the browser; `subprocess` cannot renumber descriptors
without a hook that is unsafe in a threaded process.

`DevTools` sends a command and waits for its reply (`call`), keeping the
events that arrive meanwhile, and waits for an event (`wait_event`); a reply
with an error, a browser gone (end of the pipe) or a deadline passed raises
`DevToolsError`.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import select
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from ground.errors import TrialError

__all__ = ["COMMANDS_FD", "REPLIES_FD", "DevTools", "DevToolsError", "main", "pipe_argv"]

COMMANDS_FD, REPLIES_FD = 3, 4  # Chromium's --remote-debugging-pipe: it reads 3, writes 4
_FIRST_FREE = 10  # where descriptors are moved out of the way before they are put at 3 and 4

Message = dict[str, Any]


class DevToolsError(TrialError):
    """The browser did not do what was asked: an error reply, the browser gone, a deadline passed."""


def pipe_argv(commands_fd: int, replies_fd: int, argv: Sequence[str]) -> list[str]:
    """argv started with `commands_fd` as its descriptor 3 and `replies_fd` as its 4 (pass both to the child)."""
    return [sys.executable, "-m", "servers.devtools", str(commands_fd), str(replies_fd), "--", *argv]


def main(args: Sequence[str] | None = None) -> int:
    """Put two inherited descriptors at 3 and 4 and exec the browser (`pipe_argv`)."""
    parser = argparse.ArgumentParser(prog="python -m servers.devtools", description=main.__doc__)
    parser.add_argument("commands_fd", type=int)
    parser.add_argument("replies_fd", type=int)
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    ns = parser.parse_args(args)
    argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv
    if not argv:
        parser.error("give the browser's argument list after --")
    # Out of the way first (either may already sit at 3 or 4), then into place, inheritable.
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, _FIRST_FREE) for fd in (ns.commands_fd, ns.replies_fd)]
    for fd, target in zip(moved, (COMMANDS_FD, REPLIES_FD), strict=True):
        os.dup2(fd, target)  # dup2 leaves the new descriptor inheritable
        os.close(fd)
    os.execv(argv[0], argv)
    return 127  # not reached


class DevTools:
    """A DevTools client on the parent's ends of the pipe: `send_fd` (to the browser's 3), `recv_fd` (from its 4)."""

    def __init__(self, send_fd: int, recv_fd: int, what: str = "the browser") -> None:
        self.send_fd, self.recv_fd, self.what = send_fd, recv_fd, what
        self.events: list[Message] = []
        self._buffer = b""
        self._last_id = 0

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        """Send a command (to a target's session, flat mode, when given) and return its result."""
        self._last_id += 1
        ident = self._last_id
        message: Message = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self.send_fd, data) :]
        except BrokenPipeError:
            raise DevToolsError(f"{self.what} is gone: {method} could not be sent") from None
        reply = self._until(lambda m: m.get("id") == ident, f"the reply to {method}", timeout)
        if "error" in reply:
            error = reply["error"]
            raise DevToolsError(f"{self.what}: {method} failed: {error.get('message', error)}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def wait_event(self, method: str, *, session: str | None = None, timeout: float = 30.0) -> Message:
        """The first event `method` (of `session`, when given) not yet taken, waiting for it until `timeout`."""

        def wanted(m: Message) -> bool:
            return m.get("method") == method and (session is None or m.get("sessionId") == session)

        for i, event in enumerate(self.events):
            if wanted(event):
                return self.events.pop(i)
        return self._until(wanted, f"the event {method}", timeout)

    def _until(self, wanted: Callable[[Message], bool], what: str, timeout: float) -> Message:
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, _, self._buffer = self._buffer.partition(b"\0")
                message: Message = json.loads(raw)
                if wanted(message):
                    return message
                self.events.append(message)
            left = deadline - time.monotonic()
            readable, _, _ = select.select([self.recv_fd], [], [], max(0.0, left))
            if not readable:
                raise DevToolsError(f"{self.what}: {what} did not come within {timeout:g} s")
            chunk = os.read(self.recv_fd, 1 << 16)
            if not chunk:
                raise DevToolsError(f"{self.what} is gone (its pipe closed) while waiting for {what}")
            self._buffer += chunk

    def close(self) -> None:
        for fd in (self.send_fd, self.recv_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


if __name__ == "__main__":
    raise SystemExit(main())
