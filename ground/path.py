"""The emulated path between client and server: what a study asks for.

A path is its round-trip time, its bottleneck rate in each direction, the
per-packet loss in each direction and the bottleneck buffer.  "Down" is the
data direction (server to client), "up" the other one.  Where the topology
puts each of these is the topology's business, not the user's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ground.units import (
    Duration,
    Probability,
    Queue,
    Rate,
    parse_duration,
    parse_probability,
    parse_queue,
    parse_rate,
)

# Linux's default txqueuelen, which is the buffer Mininet (and so seed 001) had.
DEFAULT_QUEUE = Queue(packets=1000)
MSS = 1448  # MTU 1500 less IP, TCP and the timestamp option
FRAME = 1514  # a full-sized Ethernet frame as the qdisc counts it


@dataclass(frozen=True)
class PathSpec:
    """One emulated path, in typed quantities."""

    rtt: Duration = Duration(0.020)
    rate_down: Rate = Rate(100e6)
    rate_up: Rate = Rate(100e6)
    loss_down: Probability = Probability(0.0)
    loss_up: Probability = Probability(0.0)
    queue: Queue = DEFAULT_QUEUE

    @classmethod
    def parse(
        cls,
        rtt: str | Duration = "20ms",
        rate: str | Rate = "100mbit",
        rate_up: str | Rate | None = None,
        loss: str | float | Probability = 0.0,
        loss_up: str | float | Probability = 0.0,
        queue: str | Queue = DEFAULT_QUEUE,
    ) -> PathSpec:
        """Build a path from user text, naming the offending option on error."""
        down = parse_rate(rate, "--rate")
        return cls(
            rtt=parse_duration(rtt, "--rtt"),
            rate_down=down,
            rate_up=down if rate_up is None else parse_rate(rate_up, "--rate-up"),
            loss_down=parse_probability(loss, "--loss"),
            loss_up=parse_probability(loss_up, "--loss-up"),
            queue=parse_queue(queue, "--queue"),
        )

    @property
    def one_way_delay(self) -> Duration:
        """The delay each direction carries: the RTT split evenly."""
        return Duration(self.rtt.seconds / 2)

    @property
    def ideal_goodput_down(self) -> Rate:
        """TCP payload rate a saturated bottleneck carries: rate x MSS / frame."""
        return Rate(self.rate_down.bps * MSS / FRAME)

    @property
    def bdp_bytes(self) -> int:
        """Bandwidth-delay product of the data direction, in bytes."""
        return int(self.rate_down.bps * self.rtt.seconds / 8)

    def without_loss(self) -> PathSpec:
        return replace(self, loss_down=Probability(0.0), loss_up=Probability(0.0))

    def describe(self) -> dict[str, Any]:
        """Plain values for CSV rows and manifests."""
        return {
            "rtt_ms": self.rtt.ms,
            "rate_down_bps": self.rate_down.bps,
            "rate_up_bps": self.rate_up.bps,
            "loss_down": self.loss_down.fraction,
            "loss_up": self.loss_up.fraction,
            "queue": str(self.queue),
        }

    def __str__(self) -> str:
        up = "" if self.rate_up == self.rate_down else f" (up {self.rate_up})"
        lossup = f", loss up {self.loss_up}" if self.loss_up.fraction else ""
        return f"RTT {self.rtt}, {self.rate_down}{up}, loss {self.loss_down}{lossup}, queue {self.queue}"
