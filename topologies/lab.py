"""The lab: a topology (topologies.topology) built on Mininet, with its links emulated.

Every node lives in a network namespace of its own, so that nothing of the
lab lives in the root namespace.  Switches are Linux bridges (or Open
vSwitch, topologies.ovs, with `--switch ovs`: a private ovsdb-server and
ovs-vswitchd in the switch's namespace); routers are namespaces that forward.  Where each
link direction's rate, queue, delay and loss act is the topology's rule:
delay and loss where a direction enters a switch or router, rate and queue
where it leaves one.  On `path` (today's lab, and the studies' default):

    client-eth0 ── s1-eth1 [up: delay+loss in | down: HTB+FIFO out]
                   s1-eth2 [down: delay+loss in | up: HTB+FIFO out] ── server-eth0

The lab's own round trip (veths, bridges, forwarding, and for the delay line
the trips through NFQUEUE to userspace: about 0.2 ms idle on this project's
VMs per pair) is measured once at start with zero delay, for each pair, and
taken off the delay of the two directions where that pair's hosts enter the
network, so that an idle ping sees the RTT that was asked for.  Under load
the delay line wakes sooner and the RTT comes out up to ~0.1 ms short; both
are inside the verification's tolerance, and `base_rtt` is recorded.

Every interface a packet crosses has the path's MTU (`PathSpec.mtu`): each
node's ports (a veth drops what is larger than its receiving end's MTU, so
both ends must agree), each Linux bridge's own device, each netem stage's IFB.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from ipaddress import IPv4Network, ip_interface
from types import TracebackType
from typing import Any

from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.topo import Topo

from ground import flows, subnets
from ground.errors import SetupError
from ground.ledger import Ledger
from ground.parsers import parse_ping, ping_argv
from ground.path import DEFAULT_MTU, DROP_TAIL, PathSpec
from ground.proc import Netns, kill_netns_processes, run, start_time
from ground.units import Duration, Probability
from topologies import shaping
from topologies.delayline import Lateness
from topologies.emulation import (
    DelayLineStage,
    DelayLossStage,
    NetemStage,
    Stage,
    choose_backend,
)
from topologies.ovs import NamespacedOVS, choose_switch, load_datapath
from topologies.queue_sampler import QueueSampler
from topologies.topology import HOST, ROUTER, SWITCH, Direction, Network, Pair, Topology

log = logging.getLogger("netrepro.lab")


class LabError(SetupError):
    """The lab did not come up as a working network."""


class NamespacedBridge(LinuxBridge):  # type: ignore[misc]
    """Mininet's Linux bridge, in a namespace of its own.

    LinuxBridge.setup() inspects the root namespace's bridge-netfilter
    sysctls, which do not concern a bridge in its own namespace.
    """

    isSetup = True


def hold_nodes(net: Any, ledger: Ledger, handles: dict[str, Netns]) -> None:
    """Record each node of a built Mininet net (its shell's process, its namespace) in the ledger,
    and hold each namespace by a handle in `handles`, from the moment it exists."""
    for node in (*net.hosts, *net.switches):
        ledger.process(node.pid, start_time(node.pid) or -1, [node.name])
        handle = Netns.open(node.name, node.pid)
        handles[node.name] = handle
        ledger.namespace(handle)


class NetworkTopo(Topo):  # type: ignore[misc]
    """A placed network as Mininet's Topo: nodes in order, links in order, addresses on each end."""

    def build(  # type: ignore[override]
        self, network: Network, addresses: dict[tuple[str, str], str], switch_params: dict[str, Any]
    ) -> None:
        first: dict[str, str] = {}
        for (name, _link), address in addresses.items():
            first.setdefault(name, address)
        for node in network.nodes:
            if node.kind == SWITCH:
                self.addSwitch(node.name, inNamespace=True, **switch_params)
            else:
                self.addHost(node.name, ip=first[node.name])
        for link in network.links:
            ends = [{"ip": addresses[(n, link.name)]} if (n, link.name) in addresses else {} for n in (link.a, link.b)]
            self.addLink(link.a, link.b, params1=ends[0], params2=ends[1])


class Lab:
    """One emulated network, up from `start()` (or `with`) until `stop()`."""

    def __init__(
        self,
        path: PathSpec,
        ledger: Ledger,
        *,
        shaper: str = "auto",
        seed: int = 1,
        cc: str = "cubic",
        topology: Topology | None = None,
        switch: str = "auto",
    ) -> None:
        self.path = path
        self.topology = topology or Topology()
        self.network = self.topology.place(path)  # refuse early: nothing created yet
        self.ledger = ledger
        self.seed = seed
        self.cc = cc
        self.backend = choose_backend(shaper)
        # Open vSwitch (kernel datapath) or the Linux bridge; a chain has no switch to choose
        has_switches = any(n.kind == SWITCH for n in self.network.nodes)
        self.switch_kind = choose_switch(switch, self.backend) if has_switches else "none"
        self.net: Any = None
        self._handles: dict[str, Netns] = {}  # each node's namespace, held from the moment it exists
        self.stages: dict[str, DelayLossStage] = {}  # by the node they live in
        self._stage_of: dict[str, str] = {}  # direction name -> node
        self._seed_offset: dict[str, int] = {}  # direction name -> its stage's seed, less the lab's
        self._ports: dict[tuple[str, str], str] = {}  # (node, link name) -> interface
        self.addresses: dict[tuple[str, str], str] = {}
        self._subnet: subnets.Allocation | None = None  # the lab's own /24 (ground.subnets), from start()
        self.base_rtts: dict[Pair, Duration] = {}  # measured by start()

    # -- names of the parts ---------------------------------------------------

    def ns(self, name: str) -> Netns:
        """The namespace of a node, entered through the handle the lab holds."""
        try:
            return self._handles[name]
        except KeyError:
            raise LabError(f"no node {name!r} in the lab (it has {', '.join(self._handles)})") from None

    @property
    def pairs(self) -> tuple[Pair, ...]:
        return self.network.pairs

    @property
    def client(self) -> Netns:
        """The first pair's client (on `path`, the client)."""
        return self.ns(self.pairs[0].client)

    @property
    def server(self) -> Netns:
        return self.ns(self.pairs[0].server)

    @property
    def switch(self) -> Netns:
        return self.ns("s1")

    @property
    def subnet(self) -> IPv4Network:
        """The /24 every address of the lab is in, and no other live lab's is."""
        if self._subnet is None:
            raise LabError("the lab has no subnet until start()")
        return self._subnet.subnet

    @property
    def base_rtt(self) -> Duration:
        """The first pair's own round trip through the lab at zero delay."""
        return self.base_rtts.get(self.pairs[0], Duration(0))

    @property
    def stage(self) -> DelayLossStage | None:
        """The one node's stages, where the topology has one such node (`path`: s1)."""
        return next(iter(self.stages.values())) if len(self.stages) == 1 else None

    def ip(self, host: str) -> str:
        """A host's address (its first interface's), as `client` and `server` names it on `path`."""
        if host in ("client", "server") and self.network.shape == "dumbbell":
            host = getattr(self.pairs[0], host)
        for (node, _link), address in self.addresses.items():
            if node == host:
                return str(ip_interface(address).ip)
        raise LabError(f"no host {host!r} in the lab")

    def port(self, node: str, link: str) -> str:
        """The interface of `node` on `link` (e.g. s1-eth2)."""
        return self._ports[(node, link)]

    def host_port(self, host: str) -> str:
        """A host's one interface (e.g. server1-eth0)."""
        link = next((k for k in self.network.links if host in (k.a, k.b)), None)
        if link is None or self.network.node(host).network:
            raise LabError(f"no host {host!r} in the lab")
        return self.port(host, link.name)

    def port_of(self, direction: Direction, at: str) -> str:
        link = next(k for k in self.network.links if {k.a, k.b} == {direction.src, direction.dst})
        return self.port(at, link.name)

    # -- the bottleneck's queue and the server's pacing ---------------------------

    def bottleneck_reading(self) -> list[flows.QdiscStats]:
        """The counters of the qdiscs on the bottleneck's egress port, now."""
        d = self.network.direction(*self.network.bottleneck.split(">"))
        return flows.qdisc_stats(run(shaping.qdisc_counters(self.port_of(d, d.src)), self.ns(d.src)).stdout)

    def bottleneck_queue(self, since: list[flows.QdiscStats] | None = None) -> flows.QdiscStats:
        """The bottleneck FIFO's counters (sent, drops, backlog): since an earlier reading, or in all."""
        now = self.bottleneck_reading()
        return flows.find_qdisc(flows.qdisc_delta(since, now) if since is not None else now, shaping.BOTTLENECK_FIFO)

    def queue_sampler(self, step_s: float) -> QueueSampler:
        """The bottleneck FIFO's backlog every `step_s` while the sampler returned is entered."""
        return QueueSampler(self.bottleneck_queue, step_s)

    def quiet_bottleneck(self, within_s: float = 60.0) -> list[flows.QdiscStats]:
        """Wait until the bottleneck has sent nothing for a round trip (an earlier trial's sender may
        still be draining its socket buffer over a long path), and return its reading then."""
        idle = max(0.5, self.path.rtt.seconds)
        deadline = time.monotonic() + within_s
        last = self.bottleneck_reading()
        while True:
            time.sleep(idle)
            now = self.bottleneck_reading()
            fifo = shaping.BOTTLENECK_FIFO
            if flows.find_qdisc(now, fifo).sent_packets == flows.find_qdisc(last, fifo).sent_packets:
                return now
            if time.monotonic() > deadline:
                raise flows.FlowDataError(f"the bottleneck was still busy {within_s:g} s after the trial began")
            last = now

    def fair_queue_at_server(self, on: bool) -> None:
        """fq as the root qdisc of the (first) server's port, or its default root again: in the server's
        namespace, gone with the lab."""
        run(shaping.fair_queue(self.host_port(self.pairs[0].server), on), self.server)

    # -- life cycle -------------------------------------------------------------

    def start(self) -> Lab:
        # Mininet.init() would raise root-namespace sysctls (fixLimits) and
        # never restore them; the lab sets what it needs per namespace instead.
        Mininet.inited = True
        # What the kernel loads for the lab's links, queues and filters (ifb, sch_*, ...) while the lab
        # starts, or while one of the run's commands runs, is the run's, and goes when the run ends.
        self.ledger.watch_autoloads()
        self.ledger.allow_congestion_control(self.cc)
        self._subnet = subnets.allocate(self.ledger)
        try:
            self.addresses = self.network.addresses(str(self._subnet.subnet))
            if self.switch_kind == "ovs":
                load_datapath(self.ledger)
            self.net = Mininet(
                topo=NetworkTopo(network=self.network, addresses=self.addresses, switch_params=self._switch_params()),
                switch=NamespacedOVS if self.switch_kind == "ovs" else NamespacedBridge,
                controller=None,
                # one subnet: every host's neighbour is known; routed: ARP finds the routers
                autoStaticArp=self.network.shape == "path",
                build=False,
            )
            # Mininet runs its commands itself (not through proc.run): the start is one window.
            with self.ledger.autoloading("the lab's start"):
                self.net.build()
                hold_nodes(self.net, self.ledger, self._handles)
                for link in self.net.links:
                    for intf in (link.intf1, link.intf2):
                        self._ports[(intf.node.name, self._link_name(intf.node.name, intf.link))] = intf.name
                self.net.start()
                self._configure_nodes()
                self._install_emulation()
        except BaseException:
            self.stop()
            raise
        return self

    def _switch_params(self) -> dict[str, Any]:
        return {"ledger": self.ledger, "datapath": "system"} if self.switch_kind == "ovs" else {}

    def _link_name(self, node: str, mn_link: Any) -> str:
        ends = {mn_link.intf1.node.name, mn_link.intf2.node.name}
        return next(k.name for k in self.network.links if {k.a, k.b} == ends)

    def _configure_nodes(self) -> None:
        for (name, _link), port in self._ports.items():
            run(shaping.offloads_off(port), self.ns(name))
        self._set_mtu(self.path.mtu, self._interfaces())
        for node in self.network.nodes:
            ns = self.ns(node.name)
            if node.kind == HOST:
                run(shaping.sysctl("net.ipv4.tcp_congestion_control", self.cc), ns)
                run(shaping.sysctl("net.ipv4.tcp_no_metrics_save", 1), ns)
            elif node.kind == ROUTER:
                run(shaping.sysctl("net.ipv4.ip_forward", 1), ns)
        for name, destination, via in self.routes():
            run(shaping.route(destination, via), self.ns(name))

    def routes(self) -> list[tuple[str, str, str]]:
        """(node, destination, next hop): each host's default route through its router, each
        router's routes to the subnets it is not on."""
        subnet_of = {end: str(ip_interface(a).network) for end, a in self.addresses.items()}
        found = []
        for node in self.network.nodes:
            if node.kind == HOST:
                router = self._next_router(node.name)
                if router is not None:
                    found.append((node.name, "default", router))
            elif node.kind == ROUTER:
                mine = {net for (n, _l), net in subnet_of.items() if n == node.name}
                for (other, _l), net in sorted(subnet_of.items(), key=lambda kv: kv[1]):
                    if net in mine or any(r[:2] == (node.name, net) for r in found):
                        continue
                    via = self._next_hop(node.name, other)
                    if via is not None:
                        found.append((node.name, net, via))
        return found

    def _next_hop(self, src: str, dst: str) -> str | None:
        """The address of the first host or router after `src` (past switches) on the way to `dst`."""
        for d in self.network.route(src, dst):
            if self.network.node(d.dst).kind != SWITCH:
                link = next(k for k in self.network.links if {k.a, k.b} == {d.src, d.dst})
                return str(ip_interface(self.addresses[(d.dst, link.name)]).ip)
        return None

    def _next_router(self, host: str) -> str | None:
        routers = [n.name for n in self.network.nodes if n.kind == ROUTER]
        for d in self.network.route(host, routers[0]) if routers else []:
            if self.network.node(d.dst).kind == ROUTER:
                link = next(k for k in self.network.links if {k.a, k.b} == {d.src, d.dst})
                return str(ip_interface(self.addresses[(d.dst, link.name)]).ip)
        return None

    def _emulated_in_order(self) -> list[Direction]:
        """Emulated directions, the first pair's data route first (its seed and NFQUEUE numbers as
        the lab always gave them on `path`: down first), then the rest in link order."""
        pair = self.pairs[0]
        first = [d for d in self.network.route(pair.server, pair.client) if d.emulated]
        return first + [d for d in self.network.directions() if d.emulated and d not in first]

    def _install_emulation(self) -> None:
        by_node: dict[str, list[Stage]] = {}
        for i, d in enumerate(self._emulated_in_order()):
            stages = by_node.setdefault(d.dst, [])
            k = len(stages)
            bridged = self.network.node(d.dst).kind == SWITCH
            stages.append(
                Stage(d.name, self.port_of(d, d.dst), queue_num=k, ifb=f"ifb{k}", seed=self.seed + i, bridged=bridged)
            )
            self._stage_of[d.name] = d.dst
            self._seed_offset[d.name] = i
        for node, stages in by_node.items():
            stage: DelayLossStage
            if self.backend == "netem":
                stage = NetemStage(self.ns(node), stages)
            else:
                stage = DelayLineStage(self.ns(node), stages, self.ledger)
            self.stages[node] = stage
            stage.install()
            self._set_mtu(self.path.mtu, [(node, ifb) for ifb in _ifbs(stage)])
        for d in self.network.directions():
            if d.rate is not None:
                run(shaping.bottleneck_root(self.port_of(d, d.src)), self.ns(d.src))
        wanted = self.path
        self.reconfigure(wanted.without_loss())
        for node, stage in self.stages.items():
            for name in self._directions_at(node):
                stage.set(name, Duration(0), Probability(0))
        self._wait_until_forwarding()
        self.base_rtts = {pair: self._measure_base_rtt(pair) for pair in self.pairs}
        self.reconfigure(wanted)

    def _interfaces(self) -> list[tuple[str, str]]:
        """(node, device) of every interface a packet of the lab crosses, as far as it exists yet: each
        node's ports, each Linux bridge's own device (last: set, it stops following its smallest port),
        and the IFBs of the netem stages installed.  Open vSwitch sets its bridge's internal port to its
        smallest port's MTU by itself; that port carries none of the lab's packets."""
        found = [(node, port) for (node, _link), port in self._ports.items()]
        for node, stage in self.stages.items():
            found += [(node, ifb) for ifb in _ifbs(stage)]
        if self.switch_kind == "bridge":
            found += [(n.name, n.name) for n in self.network.nodes if n.kind == SWITCH]  # Mininet names it so
        return found

    def _set_mtu(self, mtu: int, interfaces: list[tuple[str, str]], *, change: bool = False) -> None:
        """Give each (node, device) this MTU, in its node's namespace: on a new device only where it is
        not the default every device comes with, on the lab's own when `change`."""
        if mtu == DEFAULT_MTU and not change:
            return
        for node, dev in interfaces:
            run(shaping.link_mtu(dev, mtu), self.ns(node))

    def _directions_at(self, node: str) -> list[str]:
        return [name for name, at in self._stage_of.items() if at == node]

    def _measure_base_rtt(self, pair: Pair, count: int = 10) -> Duration:
        """The median ping RTT of a pair with zero delay: the lab's own cost."""
        argv = ping_argv(self.ip(pair.server), count, 0.02, reply_wait_s=1)
        samples = parse_ping(run(argv, self.ns(pair.client), check=False).stdout).rtts_ms
        if not samples:
            raise LabError(f"no ping crossed {pair.client} -> {pair.server} while measuring its base RTT")
        base = Duration(sorted(samples)[len(samples) // 2] / 1e3)
        log.info("lab base RTT %s %.3f ms, deducted from the emulated delay", pair.name, base.ms)
        return base

    def _wait_until_forwarding(self, within: float = 10.0) -> None:
        """Return once a ping crosses each pair: bridge ports take a moment to forward, routers to ARP."""
        deadline = max(1, round(within + 2 * self.path.rtt.seconds))
        cross = [self.network.cross] if self.network.cross else []
        for pair in (*self.pairs, *cross):
            # One echo request every 50 ms until the first reply (-c 1) or the deadline (-w).
            argv = ping_argv(self.ip(pair.server), 1, 0.05, deadline_s=deadline)
            if run(argv, self.ns(pair.client), check=False).returncode != 0:
                raise LabError(f"no ping crossed {pair.client} -> {pair.server} within {deadline} s")

    @property
    def loss_repeatable(self) -> bool:
        """Whether emulated loss follows the lab's seed (netem before Linux/iproute2 6.3 takes none)."""
        assert self.stages, "start() first"
        return all(stage.seeded for stage in self.stages.values())

    def reconfigure(self, path: PathSpec) -> None:
        """Apply a new path in place: rates, buffers, delays and losses, where the topology puts them,
        and the MTU of every interface where the new path's differs."""
        assert self.stages or not self._stage_of, "start() first"
        network = self.topology.place(path)
        if path.mtu != self.path.mtu:
            self._set_mtu(path.mtu, self._interfaces(), change=True)
        running = {d.name: shaping.leaf_kind(d.queue or self.path.queue, self.path.qdisc)
                   for d in self.network.directions() if d.rate is not None}  # fmt: skip
        for d in network.directions():
            if d.rate is not None:
                port = self.port_of(d, d.src)
                queue, was = d.queue or path.queue, running.get(d.name)
                for argv in shaping.bottleneck(port, d.rate, queue, path.frame, path.qdisc, replacing=was):
                    run(argv, self.ns(d.src))
        if path.qdisc != DROP_TAIL:  # tc took it (a kernel without the AQM fails the command): read it back
            kind = self.bottleneck_queue().kind
            if kind != path.qdisc:
                raise SetupError(f"the bottleneck's queue is {kind}, not the {path.qdisc} the path asks for")
        for d in network.directions():
            if d.emulated:
                self.stages[self._stage_of[d.name]].set(d.name, self.hold(d), d.loss, d.jitter)
        for stage in self.stages.values():
            stage.settle()  # a packet sent from now on meets the new path, not the old one's queue
        self.path, self.network = path, network
        log.info("path: %s (%s)", path, self.backend)

    def reseed(self, seed: int) -> None:
        """Restart the emulated loss and jitter from `seed`, in place: delays, losses and what the
        stages hold are left as they are (sweep.run_trials gives each trial a seed of its own).

        Each direction's stage gets `seed` plus its place in the order start() numbered them (as it
        gave them the lab's first seed).  The delay line's `seed=` restarts the direction's two PRNGs
        (loss, jitter); netem's qdisc is changed with the seed, which restarts its loss PRNG, where
        the kernel takes one (`loss_repeatable`); where it takes none there is nothing to restart.
        """
        assert self.stages or not self._stage_of, "start() first"
        if seed < 0 or seed + len(self._seed_offset) >= 2**64:
            raise ValueError(f"seed {seed}: the stages take unsigned 64-bit seeds")
        self.seed = seed
        for d in self.network.directions():
            if d.emulated:
                stage = self.stages[self._stage_of[d.name]]
                stage.reseed(d.name, seed + self._seed_offset[d.name])
                if stage.seeded:
                    stage.set(d.name, self.hold(d), d.loss, d.jitter)
        log.debug("emulated loss and jitter restarted from seed %d", seed)

    def hold(self, direction: Direction) -> Duration:
        """What a direction's stage delays: its delay, less half the lab's own round trip where a
        pair's host enters the network by it."""
        own = [base for pair, base in self.base_rtts.items() if direction.src in (pair.client, pair.server)]
        return Duration(max(0.0, direction.delay.seconds - (max(own).seconds / 2 if own else 0.0)))

    @contextlib.contextmanager
    def emulating(self, *, delay: bool = True, loss: bool = True) -> Iterator[None]:
        """The network with its delays or losses taken off (for measuring the rest), restored after."""
        for d in self.network.directions():
            if d.emulated:
                stage = self.stages[self._stage_of[d.name]]
                hold, jitter = (self.hold(d), d.jitter) if delay else (Duration(0), Duration(0))
                stage.set(d.name, hold, d.loss if loss else Probability(0), jitter)
        for stage in self.stages.values():
            stage.settle()
        try:
            yield
        finally:
            self.reconfigure(self.path)

    def counters(self) -> dict[str, object]:
        """Each node's delay-and-loss counters."""
        return {node: stage.counters() for node, stage in self.stages.items()}

    def lateness(self) -> Lateness | None:
        """How late the lab's delay lines released packets since the last call (a new window starts
        with each call): every stage's releases together; None where netem delays (not measured)."""
        replies = [r for r in (stage.lateness() for stage in self.stages.values()) if r is not None]
        return Lateness.of(replies) if replies else None

    def stop(self) -> None:
        try:
            for stage in self.stages.values():
                stage.remove()
            self.stages.clear()
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
                if self.network.node(name).kind == HOST:
                    _destroy_sockets(handle)
                handle.close()
            self._handles.clear()
            if self._subnet is not None:  # its namespaces gone: the next lab may have its addresses
                allocation, self._subnet = self._subnet, None
                subnets.release(self.ledger, allocation)

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _ifbs(stage: DelayLossStage) -> list[str]:
    """The IFB devices a stage delays on (netem's; the delay line has none)."""
    return [s.ifb for s in stage.stages.values()] if isinstance(stage, NetemStage) else []


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
