"""The emulated path between client and server: what a study asks for.

A path is its round-trip time, its bottleneck rate in each direction, the
per-packet loss in each direction, the bottleneck buffer, the links' MTU and
the jitter of the emulated delays.
"Down" is the data direction (server to client), "up" the other one.  Where
the topology puts each of these is the topology's business, not the user's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ground.units import (
    Duration,
    Probability,
    QuantityError,
    Queue,
    Rate,
    parse_duration,
    parse_probability,
    parse_queue,
    parse_rate,
)

# Linux's default txqueuelen, which is the buffer Mininet (and so seed 001) had.
DEFAULT_QUEUE = Queue(packets=1000)
DEFAULT_MTU = 1500  # Ethernet's, and a veth's own
MIN_MTU, MAX_MTU = 576, 9000  # IPv4's smallest datagram every host must take; a jumbo frame
TCP_OVERHEAD = 52  # IP (20), TCP (20) and the timestamp option (12) in every full segment
ETHERNET_HEADER = 14  # what the qdisc counts on top of the MTU
MSS = DEFAULT_MTU - TCP_OVERHEAD  # 1448: the payload of a full segment at MTU 1500
FRAME = DEFAULT_MTU + ETHERNET_HEADER  # 1514: a full-sized Ethernet frame as the qdisc counts it
# The bottleneck's queue discipline: drop-tail (pfifo; bfifo for a buffer in bytes), or an AQM where the
# kernel has it (this project's build hosts have none: the stock-kernel lane, `run.sh --vm`, has them all).
DROP_TAIL = "pfifo"
QDISCS = (DROP_TAIL, "fq_codel", "codel", "pie", "red", "cake")
IP_UDP_HEADERS = 28  # a UDP datagram's IPv4 and UDP headers: the datagram that fills an MTU is MTU - 28


def parse_mtu(text: str | int, option: str = "--mtu") -> int:
    """Parse an MTU in bytes ("3500" or 3500), a whole number from MIN_MTU to MAX_MTU."""
    if isinstance(text, bool):
        raise QuantityError(option, text, "expected a whole number of bytes, e.g. 1500")
    try:
        value = text if isinstance(text, int) else int(str(text).strip())
    except ValueError:
        raise QuantityError(option, text, "expected a whole number of bytes, e.g. 1500") from None
    if not MIN_MTU <= value <= MAX_MTU:
        raise QuantityError(option, text, f"allowed range is {MIN_MTU} to {MAX_MTU} bytes")
    return value


@dataclass(frozen=True)
class PathSpec:
    """One emulated path, in typed quantities."""

    rtt: Duration = Duration(0.020)
    rate_down: Rate = Rate(100e6)
    rate_up: Rate = Rate(100e6)
    loss_down: Probability = Probability(0.0)
    loss_up: Probability = Probability(0.0)
    queue: Queue = DEFAULT_QUEUE
    mtu: int = DEFAULT_MTU  # bytes, every link's
    # Each emulated stage draws a packet's delay uniformly from its delay +- this (netem's
    # `delay D J`), never letting it leave before the packet ahead: timing noise that breaks
    # the phase a drop-tail queue otherwise locks into behind an ACK-clocked flow.
    jitter: Duration = Duration(0)
    # The bottleneck buffer's discipline (QDISCS): its limit is the buffer (`queue`) whatever it is.
    qdisc: str = DROP_TAIL

    @classmethod
    def parse(
        cls,
        rtt: str | Duration = "20ms",
        rate: str | Rate = "100mbit",
        rate_up: str | Rate | None = None,
        loss: str | float | Probability = 0.0,
        loss_up: str | float | Probability = 0.0,
        queue: str | Queue = DEFAULT_QUEUE,
        mtu: str | int = DEFAULT_MTU,
        jitter: str | Duration = "0ms",
        qdisc: str = DROP_TAIL,
    ) -> PathSpec:
        """Build a path from user text, naming the offending option on error."""
        down = parse_rate(rate, "--rate")
        path = cls(
            rtt=parse_duration(rtt, "--rtt"),
            rate_down=down,
            rate_up=down if rate_up is None else parse_rate(rate_up, "--rate-up"),
            loss_down=parse_probability(loss, "--loss"),
            loss_up=parse_probability(loss_up, "--loss-up"),
            queue=parse_queue(queue, "--queue"),
            mtu=parse_mtu(mtu, "--mtu"),
            jitter=parse_duration(jitter, "--jitter", high=Duration(1.0)),
            qdisc=parse_qdisc(qdisc),
        )
        if path.queue.bytes is not None and path.queue.bytes < path.frame:
            # a byte buffer smaller than one frame would drop every full-sized packet
            raise QuantityError(
                "--queue",
                str(queue),
                f"at MTU {path.mtu} one full frame is {path.frame}b: " f"allowed range is {path.frame}b to 1024mb",
            )
        return path

    @property
    def one_way_delay(self) -> Duration:
        """The delay each direction carries: the RTT split evenly."""
        return Duration(self.rtt.seconds / 2)

    @property
    def mss(self) -> int:
        """The payload of a full TCP segment on this path: the MTU less IP, TCP and the timestamp option."""
        return self.mtu - TCP_OVERHEAD

    @property
    def frame(self) -> int:
        """A full-sized frame on this path as the qdisc counts it: the MTU and the Ethernet header."""
        return self.mtu + ETHERNET_HEADER

    @property
    def ideal_goodput_down(self) -> Rate:
        """TCP payload rate a saturated bottleneck carries: rate x MSS / frame, of this path's MTU."""
        return Rate(self.rate_down.bps * self.mss / self.frame)

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
            # only where it is not Ethernet's, so that the records of 1500-byte paths stay as they were
            **({"mtu": self.mtu} if self.mtu != DEFAULT_MTU else {}),
            **({"jitter_ms": self.jitter.ms} if self.jitter.seconds else {}),
            **({"qdisc": self.qdisc} if self.qdisc != DROP_TAIL else {}),
        }

    def __str__(self) -> str:
        up = "" if self.rate_up == self.rate_down else f" (up {self.rate_up})"
        lossup = f", loss up {self.loss_up}" if self.loss_up.fraction else ""
        mtu = f", MTU {self.mtu}" if self.mtu != DEFAULT_MTU else ""
        jitter = f", jitter +-{self.jitter}" if self.jitter.seconds else ""
        queue = f"queue {self.queue}" + (f" {self.qdisc}" if self.qdisc != DROP_TAIL else "")
        return f"RTT {self.rtt}, {self.rate_down}{up}, loss {self.loss_down}{lossup}, {queue}{mtu}{jitter}"


def parse_qdisc(text: str, option: str = "--qdisc") -> str:
    """One of QDISCS; QuantityError naming `option` otherwise."""
    if text not in QDISCS:
        raise QuantityError(option, text, f"one of {', '.join(QDISCS)}")
    return text
