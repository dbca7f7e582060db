"""A ping probe through the bottleneck while a trial runs: the delay a loaded path adds, as flent measures it.

`PingProbe` sends ICMP echo requests from a pair's client to its server,
`hz` a second (`ping -i`; below 0.2 s only root may, and the lab runs as
root), for as long as it is entered.  Each reply crosses the bottleneck in
the direction the data does (server to client), so its round trip holds the
queue the flows built: it is what flent's RRUL tests report as latency under
load, measured by a packet of its own rather than by the senders' SRTTs
(ground.latency), which only a sender's kernel sees and which its own
retransmissions and delayed ACKs colour.  ping writes to an unnamed file (no
pipe to fill over a long trial; nothing a planted link could redirect), read
once it stops: each reply's RTT, and how many requests went unanswered.
"""

from __future__ import annotations

import math
import subprocess
import tempfile
from types import TracebackType

from ground.ledger import Ledger
from ground.parsers import PingResult, parse_ping, ping_argv
from ground.proc import Netns, Process

MAX_HZ = 100  # ping's floor: -i below 0.01 s is refused even to root without -f
# ping stops on its own this long after the trial was to end (-w), should the probe not be stopped
OVERRUN_S = 30.0


class PingProbe:
    """ICMP echo requests from `ns` to `address`, `hz` a second, between enter and exit (at most
    `seconds` + OVERRUN_S); `result` holds the replies once it has exited."""

    def __init__(self, ns: Netns, address: str, hz: int, ledger: Ledger, seconds: float) -> None:
        if not 1 <= hz <= MAX_HZ:
            raise ValueError(f"a ping probe sends 1 to {MAX_HZ} requests a second, not {hz}")
        self.ns, self.address, self.hz, self.ledger = ns, address, hz, ledger
        self.limit_s = seconds + OVERRUN_S
        self.result: PingResult | None = None
        self._process: Process | None = None

    def argv(self) -> list[str]:
        """ping's command: one request every 1/hz s, as many as the limit holds, none after it."""
        return ping_argv(self.address, math.ceil(self.hz * self.limit_s), 1 / self.hz, deadline_s=self.limit_s)

    def __enter__(self) -> PingProbe:
        self._out = tempfile.TemporaryFile()  # O_TMPFILE where the kernel has it: no name to plant a link at
        try:
            self._process = Process(
                self.argv(), self.ns, ledger=self.ledger, stdout=self._out, stderr=subprocess.DEVNULL, label="ping"
            )
        except BaseException:
            self._out.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        assert self._process is not None
        try:
            self._process.stop()  # SIGINT first: ping prints its summary and exits
            self._out.seek(0)
            self.result = parse_ping(self._out.read().decode(errors="replace"))
        finally:
            self._out.close()
