"""An independent clock: tcpdump on a host's interface, in its namespace.

`tcpdump_argv` captures headers only, with nanosecond kernel timestamps;
`PacketCapture` runs it for the duration of a `with` block, fails if tcpdump
or the kernel lost a packet, and returns the parsed packets.  It measures a
page load's span independently of h2load's per-request log
(`servers.clients.load_page`).
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from types import TracebackType

from ground.ledger import Ledger
from ground.proc import CommandError, Netns, Process
from servers.clients import WorkloadError
from servers.parsers import Packet, parse_pcap

__all__ = ["PacketCapture", "tcpdump_argv"]


_TCPDUMP_COUNT = re.compile(r"^(\d+) packets (captured|received by filter|dropped by kernel)$", re.M)


def tcpdump_argv(dev: str, pcap: Path, port: int, snaplen: int = 128) -> list[str]:
    """Headers only, each packet handed over and written at once, nanosecond kernel timestamps, as root."""
    return [
        "tcpdump",
        "-i",
        dev,
        "-w",
        str(pcap),
        "-U",
        "--immediate-mode",
        "-n",
        "-Z",
        "root",
        "-s",
        str(snaplen),
        "--time-stamp-precision=nano",
        "tcp",
        "port",
        str(port),
    ]


class PacketCapture:
    """tcpdump on a host's interface for the duration of a `with` block; `packets` afterwards."""

    def __init__(self, ns: Netns, dev: str, pcap: Path, port: int, ledger: Ledger | None) -> None:
        self.ns, self.dev, self.pcap, self.port, self.ledger = ns, dev, pcap, port, ledger
        self.log = pcap.with_suffix(".log")
        self.packets: list[Packet] = []
        self._proc: Process | None = None

    def start(self, timeout: float = 5.0) -> PacketCapture:
        with open(self.log, "wb") as err:
            self._proc = Process(
                tcpdump_argv(self.dev, self.pcap, self.port),
                self.ns,
                ledger=self.ledger,
                stdout=subprocess.DEVNULL,
                stderr=err,
                label="tcpdump",
            )
        deadline = time.monotonic() + timeout
        while "listening on" not in self.log.read_text(errors="replace"):
            if not self._proc.running() or time.monotonic() > deadline:
                text = self.log.read_text(errors="replace")
                self._proc.stop()
                self._proc = None
                raise CommandError(tcpdump_argv(self.dev, self.pcap, self.port), self.ns, None, text)
            time.sleep(0.01)
        return self

    def stop(self, settle: float = 0.1) -> list[Packet]:
        """Stop tcpdump (after `settle` seconds for the last packets) and read the capture.

        Fails if tcpdump saw a packet it did not write, or the kernel dropped one.
        """
        if self._proc is None:
            return self.packets
        time.sleep(settle)
        self._proc.stop()
        self._proc = None
        text = self.log.read_text(errors="replace")
        counts = dict((m.group(2), int(m.group(1))) for m in _TCPDUMP_COUNT.finditer(text))
        if counts.get("captured") != counts.get("received by filter") or counts.get("dropped by kernel"):
            raise WorkloadError(f"tcpdump did not capture every packet: {counts}")
        self.packets = parse_pcap(self.pcap.read_bytes())
        return self.packets

    def __enter__(self) -> PacketCapture:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if e is None:
            self.stop()
        elif self._proc is not None:
            self._proc.stop()
            self._proc = None
