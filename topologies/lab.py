"""The standard lab: client — s1 — server on Mininet, the path emulated inside s1.

The switch is a Linux bridge in its own network namespace, so that nothing
of the lab lives in the root namespace and the emulation sits away from both
hosts: each direction is delayed and dropped where it enters the switch and
rate-limited (with the bottleneck buffer) where it leaves.

    client-eth0 ── s1-eth1 [up: delay+loss in | down: HTB+FIFO out]
                   s1-eth2 [down: delay+loss in | up: HTB+FIFO out] ── server-eth0

The lab's own round trip (veths, bridge, and for the delay line two trips
through NFQUEUE to userspace: about 0.2 ms idle on this project's VMs) is
measured once at start with zero delay, and each direction's hold is that
much shorter, so that an idle ping sees the RTT that was asked for.  Under
load the delay line wakes sooner and the RTT comes out up to ~0.1 ms short;
both are inside the verification's tolerance, and `base_rtt` is recorded.
"""

from __future__ import annotations

import logging
import os
import time
from types import TracebackType
from typing import Any

from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.topo import Topo

from ground.errors import SetupError
from ground.ledger import Ledger
from ground.parsers import parse_ping
from ground.path import PathSpec
from ground.proc import Netns, kill_netns_processes, run, start_time
from ground.units import Duration, Probability
from topologies import shaping
from topologies.emulation import DelayLineStage, DelayLossStage, NetemStage, Stage, choose_backend

log = logging.getLogger("netrepro.lab")

CLIENT_PORT, SERVER_PORT = "s1-eth1", "s1-eth2"


def ip_base() -> str:
    """A /24 of 10.0.0.0/8 for this run's hosts, chosen by process id.

    Tracepoints such as tcp:tcp_probe see every namespace; distinct addresses
    keep two labs running side by side from reading each other's flows.
    """
    return f"10.{os.getpid() % 250 + 1}.{os.getpid() // 250 % 250 + 1}.0/24"


class LabError(SetupError):
    """The lab did not come up as a working path."""


class NamespacedBridge(LinuxBridge):  # type: ignore[misc]
    """Mininet's Linux bridge, in a namespace of its own.

    LinuxBridge.setup() inspects the root namespace's bridge-netfilter
    sysctls, which do not concern a bridge in its own namespace.
    """

    isSetup = True


class ClientSwitchServer(Topo):  # type: ignore[misc]
    def build(self) -> None:  # type: ignore[override]
        client = self.addHost("client")
        server = self.addHost("server")
        switch = self.addSwitch("s1", inNamespace=True)
        self.addLink(client, switch)  # client-eth0 <-> s1-eth1
        self.addLink(server, switch)  # server-eth0 <-> s1-eth2


class Lab:
    """One emulated path, up from `start()` (or `with`) until `stop()`."""

    def __init__(
        self,
        path: PathSpec,
        ledger: Ledger,
        *,
        shaper: str = "auto",
        seed: int = 1,
        cc: str = "cubic",
    ) -> None:
        self.path = path
        self.ledger = ledger
        self.seed = seed
        self.cc = cc
        self.backend = choose_backend(shaper)  # refuse early: nothing created yet
        self.net: Any = None
        self._handles: dict[str, Netns] = {}  # each node's namespace, held from the moment it exists
        self.stage: DelayLossStage | None = None
        self.base_rtt = Duration(0)  # measured by start()

    # -- names of the parts ---------------------------------------------------

    def ns(self, name: str) -> Netns:
        """The namespace of a host or switch, entered through the handle the lab holds."""
        try:
            return self._handles[name]
        except KeyError:
            raise LabError(f"no node {name!r} in the lab (it has {', '.join(self._handles)})") from None

    @property
    def client(self) -> Netns:
        return self.ns("client")

    @property
    def server(self) -> Netns:
        return self.ns("server")

    @property
    def switch(self) -> Netns:
        return self.ns("s1")

    def ip(self, host: str) -> str:
        return str(self.net[host].IP())

    # -- life cycle -------------------------------------------------------------

    def start(self) -> Lab:
        # Mininet.init() would raise root-namespace sysctls (fixLimits) and
        # never restore them; the lab sets what it needs per namespace instead.
        Mininet.inited = True
        self.ledger.allow_congestion_control(self.cc)
        self.net = Mininet(
            topo=ClientSwitchServer(),
            ipBase=ip_base(),
            switch=NamespacedBridge,
            controller=None,
            autoStaticArp=True,
            build=False,
        )
        try:
            self.net.build()
            for node in (*self.net.hosts, *self.net.switches):
                self.ledger.record(
                    {"kind": "process", "pid": node.pid, "start": start_time(node.pid) or -1, "argv": [node.name]}
                )
                handle = Netns.open(node.name, node.pid)
                self._handles[node.name] = handle
                self.ledger.namespace(handle)
            self.net.start()
            self._configure_hosts()
            self._install_emulation()
        except BaseException:
            self.stop()
            raise
        return self

    def _configure_hosts(self) -> None:
        for host in ("client", "server"):
            ns = self.ns(host)
            run(shaping.offloads_off(f"{host}-eth0"), ns)
            run(shaping.sysctl("net.ipv4.tcp_congestion_control", self.cc), ns)
            run(shaping.sysctl("net.ipv4.tcp_no_metrics_save", 1), ns)
        for port in (CLIENT_PORT, SERVER_PORT):
            run(shaping.offloads_off(port), self.switch)

    def _install_emulation(self) -> None:
        stages = [
            Stage("down", SERVER_PORT, queue_num=0, ifb="ifb-down", seed=self.seed),
            Stage("up", CLIENT_PORT, queue_num=1, ifb="ifb-up", seed=self.seed + 1),
        ]
        stage: DelayLossStage
        if self.backend == "netem":
            stage = NetemStage(self.switch, stages)
        else:
            stage = DelayLineStage(self.switch, stages, self.ledger)
        self.stage = stage
        stage.install()
        for port in (CLIENT_PORT, SERVER_PORT):
            run(shaping.bottleneck_root(port), self.switch)
        wanted = self.path
        self.reconfigure(wanted.without_loss())
        for direction in ("down", "up"):
            stage.set(direction, Duration(0), Probability(0))
        self._wait_until_forwarding()
        self.base_rtt = self._measure_base_rtt()
        self.reconfigure(wanted)

    def _measure_base_rtt(self, count: int = 10) -> Duration:
        """The median ping RTT through the lab with zero delay: its own cost."""
        argv = ["ping", "-n", "-c", str(count), "-i", "0.02", "-W", "1", self.ip("server")]
        samples = parse_ping(run(argv, self.client, check=False).stdout).rtts_ms
        if not samples:
            raise LabError("no ping crossed the path while measuring its base RTT")
        base = Duration(sorted(samples)[len(samples) // 2] / 1e3)
        log.info("lab base RTT %.3f ms, deducted from the emulated delay", base.ms)
        return base

    def _wait_until_forwarding(self, within: float = 10.0) -> None:
        """Return once a ping crosses the path: bridge ports take a moment to forward."""
        # One echo request every 50 ms until the first reply (-c 1) or the deadline (-w).
        deadline = str(max(1, round(within + 2 * self.path.rtt.seconds)))
        argv = ["ping", "-n", "-c", "1", "-i", "0.05", "-w", deadline, self.ip("server")]
        if run(argv, self.client, check=False).returncode != 0:
            raise LabError(f"no ping crossed the path client -> server within {deadline} s")

    @property
    def loss_repeatable(self) -> bool:
        """Whether emulated loss follows the lab's seed (netem before Linux/iproute2 6.3 takes none)."""
        assert self.stage is not None, "start() first"
        return self.stage.seeded

    def reconfigure(self, path: PathSpec) -> None:
        """Apply a new path in place: rates, buffer, delay and loss."""
        assert self.stage is not None, "start() first"
        for argv in shaping.bottleneck(CLIENT_PORT, path.rate_down, path.queue):
            run(argv, self.switch)
        for argv in shaping.bottleneck(SERVER_PORT, path.rate_up, path.queue):
            run(argv, self.switch)
        hold = self.hold(path)
        self.stage.set("down", hold, path.loss_down)
        self.stage.set("up", hold, path.loss_up)
        self.path = path
        log.info("path: %s (%s)", path, self.backend)

    def hold(self, path: PathSpec) -> Duration:
        """What each direction's stage delays: half the RTT less half the lab's own."""
        return Duration(max(0.0, path.one_way_delay.seconds - self.base_rtt.seconds / 2))

    def stop(self) -> None:
        try:
            if self.stage is not None:
                self.stage.remove()
                self.stage = None
        finally:
            if self.net is not None:
                for node in (*self.net.hosts, *self.net.switches):
                    _interrupt(node)
                self.net.stop()
                self.net = None
            # Whatever still runs inside the lab's namespaces (found by inode, not by name) ends
            # with it; the sockets its processes closed last are destroyed through the handles,
            # which still hold the namespaces; then the handles go, and with them the namespaces.
            inodes = [h.inode for h in self._handles.values() if h.inode is not None]
            stray = kill_netns_processes(inodes)
            if stray:
                log.warning("ended %d process(es) left inside the lab's namespaces: %s", len(stray), stray)
            for name, handle in self._handles.items():
                if name != "s1":
                    _destroy_sockets(handle)
                handle.close()
            self._handles.clear()

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _destroy_sockets(ns: Netns) -> None:
    """Close every TCP socket left in a host (`ss -K`, SOCK_DESTROY).

    A socket still sending its FIN, or data, when its namespace goes keeps
    retransmitting into nowhere for a minute or more, and with it its
    congestion control stays referenced: an unregistered BPF algorithm then
    lingers in `bpftool struct_ops list`.  Kernels without
    CONFIG_INET_DIAG_DESTROY refuse; their sockets time out on their own.
    """
    run(["ss", "-K", "-t", "-a"], ns, check=False)


def _interrupt(node: Any, timeout: float = 5.0) -> None:
    """Interrupt a command a node's shell is still running (a CLI command cut
    short by a signal), so that Mininet can use the shell to tear down."""
    if not node.waiting:
        return
    node.sendInt()
    deadline = time.monotonic() + timeout
    while node.waiting and time.monotonic() < deadline:
        node.monitor(timeoutms=100)  # clears `waiting` when the shell is back
    node.waiting = False
