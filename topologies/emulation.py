"""The delay-and-loss stages of a switch or router, with two backends of one meaning.

`netem`: the kernel's netem on an IFB device fed from a port's ingress.
`delayline`: the userspace delay line fed by NFQUEUE from the same place
(a bridge's port through `-m physdev`, a router's with `-i`).
Either way each link direction's delay and loss act on packets that have
left the sending host and not yet reached the receiving one (docs/lab.md:
the delay stays off both hosts' stacks), and before the egress queue on
the way out.
One object serves all the stages of one node, each named by its direction
(`server>s1`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from ground import kernel, modules
from ground.errors import SetupError
from ground.ledger import Ledger
from ground.proc import Netns, run
from ground.units import Duration, Probability
from topologies import shaping
from topologies.delayline import BINARY as DELAYLINE_BINARY
from topologies.delayline import DelayLine

log = logging.getLogger("netrepro.emulation")

DIRECTIONS = ("down", "up")
BACKENDS = ("netem", "delayline")


class ShaperUnavailable(SetupError):
    """The requested backend cannot run on this kernel or machine."""


@dataclass(frozen=True)
class Stage:
    """Where one direction's delay and loss are applied: the port it enters by."""

    direction: str  # the link direction, e.g. "server>s1"
    ingress_port: str
    queue_num: int  # NFQUEUE number (delayline)
    ifb: str  # IFB device (netem)
    seed: int
    bridged: bool = True  # the port is a Linux bridge's (physdev match), else a router's


class DelayLossStage(Protocol):
    backend: str
    seeded: bool  # the loss pattern is drawn from the stage's seed (repeatable)

    def install(self) -> None: ...
    def set(self, direction: str, delay: Duration, loss: Probability, jitter: Duration = Duration(0)) -> None: ...
    def reseed(self, direction: str, seed: int) -> None: ...
    def settle(self) -> None: ...
    def counters(self) -> dict[str, object]: ...
    def lateness(self) -> dict[str, Any] | None: ...
    def remove(self) -> None: ...


def nfqueue_works() -> bool:
    return kernel.works_in_scratch_netns(*shaping.nfqueue_rule("-A", "probe", 0))


def netem_backend_works() -> bool:
    return kernel.netem_works() and kernel.ifb_works()


def delayline_backend_works() -> bool:
    return DELAYLINE_BINARY.exists() and nfqueue_works()


def choose_backend(requested: str) -> str:
    """Resolve `auto` and check that the backend can run here, before anything is built.

    Only the backend that may be used is probed: a probe can load modules
    (NFQUEUE's pull in br_netfilter's neighbours, nfnetlink_queue, xt_NFQUEUE),
    so the delay line is not probed where netem is asked for or chosen.
    """
    if requested not in (*BACKENDS, "auto"):
        raise ShaperUnavailable(f"--shaper {requested!r}: choose netem, delayline or auto")
    if requested == "netem" and not netem_backend_works():
        raise ShaperUnavailable(
            "--shaper netem: this kernel has no sch_netem (or no ifb); use --shaper delayline or run with --vm"
        )
    if requested == "delayline" and not delayline_backend_works():
        raise ShaperUnavailable(f"--shaper delayline: needs iptables NFQUEUE and the built {DELAYLINE_BINARY}")
    if requested != "auto":
        return requested
    if netem_backend_works():
        return "netem"
    if delayline_backend_works():
        return "delayline"
    raise ShaperUnavailable("neither netem (sch_netem + ifb) nor the delay line (NFQUEUE + built binary) works here")


class NetemStage:
    backend = "netem"

    def __init__(self, node: Netns, stages: list[Stage]) -> None:
        self.node = node
        self.stages = {s.direction: s for s in stages}
        # netem's `seed` came with Linux 6.3 and iproute2 6.3; older ones draw
        # loss from the kernel's PRNG, unrepeatable from run to run.
        self.seeded = kernel.netem_seed_works()
        if not self.seeded:
            log.warning("netem here takes no seed (Linux/iproute2 older than 6.3): loss is not repeatable")

    def _seed(self, s: Stage) -> int | None:
        return s.seed if self.seeded else None

    def install(self) -> None:
        for s in self.stages.values():
            for argv in shaping.netem_stage(s.ingress_port, s.ifb, Duration(0), Probability(0), self._seed(s)):
                run(argv, self.node)

    def set(self, direction: str, delay: Duration, loss: Probability, jitter: Duration = Duration(0)) -> None:
        s = self.stages[direction]
        run(shaping.netem_qdisc(s.ifb, delay, loss, self._seed(s), jitter), self.node)

    def reseed(self, direction: str, seed: int) -> None:
        """The seed the direction's next set() gives netem (a change of its qdisc with `seed` restarts
        its loss PRNG; where netem takes no seed, the kernel draws one at each change)."""
        self.stages[direction] = replace(self.stages[direction], seed=seed)

    def settle(self) -> None:
        """Nothing to wait for: netem sends each packet at its own due time (its queue is ordered by
        it), so a packet sent after a delay decrease never waits behind one held under the old delay."""

    def counters(self) -> dict[str, object]:
        return {
            d: run(["tc", "-s", "-j", "qdisc", "show", "dev", s.ifb], self.node).stdout for d, s in self.stages.items()
        }

    def lateness(self) -> dict[str, Any] | None:
        """netem's timers are the kernel's: not measured here."""
        return None

    def remove(self) -> None:
        pass  # the IFBs and qdiscs live in the node's namespace and go with it


BRIDGE_NETFILTER = "br_netfilter"
BRIDGE_SYSCTLS = Path("/proc/sys/net/bridge")  # there while br_netfilter is loaded (or built in)


def load_bridge_netfilter(ledger: Ledger) -> None:
    """A bridge's packets reach iptables (physdev, bridge-nf-call-iptables) through br_netfilter: a
    module on stock kernels that nothing loads before its sysctl is written, so it is loaded here,
    through the ledger, where it is not loaded (built in: nothing to do)."""
    before = modules.proc_modules()
    if before is None or BRIDGE_NETFILTER in modules.parse_proc_modules(before) or BRIDGE_SYSCTLS.is_dir():
        return
    ledger.modprobe(BRIDGE_NETFILTER, modules.parse_proc_modules(before))


class DelayLineStage:
    backend = "delayline"
    seeded = True  # the delay line draws loss from its own seeded generator

    def __init__(self, node: Netns, stages: list[Stage], ledger: Ledger) -> None:
        self.node = node
        self.stages = {s.direction: s for s in stages}
        self.ledger = ledger
        self.line: DelayLine | None = None
        self.delays: dict[str, Duration] = {}  # each direction's delay as last set
        self.shortened: dict[int, float] = {}  # queue -> how long its longest earlier delay was (s)

    def install(self) -> None:
        if any(s.bridged for s in self.stages.values()):
            load_bridge_netfilter(self.ledger)
            # br_netfilter is per namespace: only this switch's bridge is affected.
            run(shaping.sysctl("net.bridge.bridge-nf-call-iptables", 1), self.node)
        self.line = DelayLine(self.node, [s.queue_num for s in self.stages.values()], self.ledger)
        for s in self.stages.values():
            run(shaping.nfqueue_rule("-A", s.ingress_port, s.queue_num, bridged=s.bridged), self.node)

    def set(self, direction: str, delay: Duration, loss: Probability, jitter: Duration = Duration(0)) -> None:
        assert self.line is not None, "install() first"
        s = self.stages[direction]
        self.line.set(s.queue_num, delay, loss, s.seed, jitter)
        before = self.delays.get(direction)
        self.delays[direction] = delay
        if before is not None and delay.seconds < before.seconds:
            self.shortened[s.queue_num] = max(self.shortened.get(s.queue_num, 0.0), before.seconds)

    def reseed(self, direction: str, seed: int) -> None:
        """The seed the direction's next set() gives the delay line (its `seed=` restarts the queue's
        two PRNGs, loss and jitter)."""
        self.stages[direction] = replace(self.stages[direction], seed=seed)

    def settle(self) -> None:
        """Return once what the line held under a longer delay than the one now set has left.

        The line lets no packet overtake an older one (a link does not reorder), so after a
        delay decrease a new packet would wait behind those: the first packets of a trial
        that follows one on a longer path (a SYN after a 3 s RTT trial's last ACKs) would
        meet the old delay, not the new.  netem, which lets them overtake, needs no wait.
        """
        if self.line is not None and self.shortened:
            # everything held arrived before the change, so it is due within the longest old delay
            self.line.drain(self.shortened, within_s=max(self.shortened.values()) + 0.05)
        self.shortened.clear()

    def counters(self) -> dict[str, object]:
        return self.line.stats() if self.line is not None else {}

    def lateness(self) -> dict[str, Any] | None:
        """How late the line released packets since the last call (delayline.DelayLine.lateness)."""
        return self.line.lateness() if self.line is not None else None

    def remove(self) -> None:
        if self.line is not None:
            self.line.stop()
            self.line = None
