"""WebDriver BiDi over a WebSocket on loopback: how the project drives Firefox (Chromium: servers.devtools).

Firefox started with `--remote-debugging-port 0` picks a free port, listens
on 127.0.0.1 only, and says where on its stderr ("WebDriver BiDi listening on
ws://127.0.0.1:PORT", `listening_url`).  The browser runs in the lab's client
namespace, so that loopback is the namespace's own: nothing outside the
namespace can reach the port, and inside it only this run's processes run.

The run itself sits in the root namespace: `connect_in` makes the TCP
connection from a thread that enters the client's namespace (setns, that
thread only) and ends, and the WebSocket runs over that socket.

`BiDi` opens the session (`session.new`), sends a command and waits for its
reply (`call`), keeping the events that arrive meanwhile; an error reply, a
browser gone (the socket closed) or a deadline passed raises `BiDiError`.
The WebSocket itself is the `websockets` library's synchronous client
(pinned in pyproject.toml), not hand-written framing.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from ground.errors import TrialError
from ground.proc import CLONE_NEWNET, Netns

__all__ = ["BiDi", "BiDiError", "connect_in", "listening_url"]

Message = dict[str, Any]
_LISTENING = re.compile(r"WebDriver BiDi listening on (ws://127\.0\.0\.1:\d+)\b")


class BiDiError(TrialError):
    """The browser did not do what was asked: an error reply, the browser gone, a deadline passed."""


def listening_url(stderr: str) -> str | None:
    """The WebSocket URL Firefox printed on its stderr once it listens (loopback only), or None yet."""
    found = _LISTENING.search(stderr)
    return found.group(1) if found else None


def connect_in(ns: Netns, url: str, timeout: float) -> socket.socket:
    """A TCP connection to `url`'s host and port as seen inside `ns` (its own loopback, for a lab host)."""
    parts = urlsplit(url)
    address = (parts.hostname or "127.0.0.1", parts.port or 80)
    if ns.fd is None:  # the root namespace: this one
        return socket.create_connection(address, timeout=timeout)
    made: list[socket.socket | OSError] = []
    fd = ns.fd

    def inside() -> None:  # this thread alone enters the namespace, and ends right after
        try:
            setns = getattr(os, "setns", None)  # Python 3.12 and later
            if setns is not None:
                setns(fd, CLONE_NEWNET)
            elif ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err))
            made.append(socket.create_connection(address, timeout=timeout))
        except OSError as e:
            made.append(e)

    thread = threading.Thread(target=inside, name=f"bidi-connect-{ns.name}", daemon=True)
    thread.start()
    thread.join()
    if isinstance(made[0], OSError):
        raise made[0]
    made[0].settimeout(None)
    return made[0]


class BiDi:
    """A WebDriver BiDi session with the browser listening at `url` (ws://127.0.0.1:PORT)."""

    def __init__(self, url: str, what: str = "the browser", timeout: float = 30.0, ns: Netns | None = None) -> None:
        """`ns`: the namespace whose loopback `url` is on (None: this process's own)."""
        from websockets.exceptions import WebSocketException
        from websockets.sync.client import connect

        self.what = what
        self.events: list[Message] = []
        self._last_id = 0
        sock: socket.socket | None = None
        try:
            sock = connect_in(ns, url, timeout) if ns is not None else None
            # no proxy (a WebSocket to loopback), no size limit (a page's timing entries are one message)
            self._socket = connect(f"{url}/session", sock=sock, open_timeout=timeout, max_size=None, proxy=None)
        except (OSError, TimeoutError, WebSocketException) as e:
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
            raise BiDiError(f"{what}: no WebDriver BiDi session at {url}: {e}") from None
        self.capabilities: dict[str, Any] = self.call("session.new", {"capabilities": {}}, timeout=timeout)[
            "capabilities"
        ]

    def call(self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0) -> dict[str, Any]:
        """Send a command and return its result."""
        from websockets.exceptions import ConnectionClosed

        self._last_id += 1
        ident = self._last_id
        try:
            self._socket.send(json.dumps({"id": ident, "method": method, "params": params or {}}))
        except ConnectionClosed:
            raise BiDiError(f"{self.what} is gone: {method} could not be sent") from None
        deadline = time.monotonic() + timeout
        while True:
            try:
                raw = self._socket.recv(timeout=max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                raise BiDiError(f"{self.what}: the reply to {method} did not come within {timeout:g} s") from None
            except ConnectionClosed:
                raise BiDiError(f"{self.what} is gone (its socket closed) while waiting for {method}") from None
            message: Message = json.loads(raw)
            if message.get("id") != ident:
                self.events.append(message)
                continue
            if message.get("type") == "error":
                raise BiDiError(f"{self.what}: {method} failed: {message.get('error')}: {message.get('message')}")
            result: dict[str, Any] = message.get("result", {})
            return result

    def close(self) -> None:
        self._socket.close()
