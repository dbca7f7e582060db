"""Topologies as data: the shapes a lab can take, and where each link's rate, delay, loss and queue act.

A `Topology` is what the user asked for: a shape (`path`, `dumbbell`,
`chain`), its size, and per-link refinements (`--link r1-r2:rate=11mbit,
delay=250ms,queue=15p`).  `Topology.place(path)` turns it and the path
options into a `Network`: nodes, links and, for each direction of each link,
the rate, queue, delay and loss it carries, and the path's MTU (every link's).
Nothing here runs a command; topologies.lab builds a `Network` on Mininet.

The shapes (the server of each pair sends the data: "down"):

    path       client — s1 — server                         (today's lab)
    dumbbell   client1..N — s1 — r1 ══ r2 — s2 — server1..N  [+ xreceiver — r1, xsender — r2]
    chain      client — r1 ══ r2 ══ … ══ rK — server        [+ xreceiver — r1, xsender — rK]

The path options keep one meaning on every shape: `--rtt` is the round trip
of every client/server pair (a dumbbell may give each pair its own), `--rate`,
`--rate-up`, `--queue`, `--loss` and `--loss-up` are the bottleneck's (s1's
two egress ports on `path`, r2 → r1 down and r1 → r2 up elsewhere).  Delays
set on a link are kept; the rest of each pair's round trip is spread evenly
over the pair's links that have none (its two access links on a dumbbell,
every link of a chain or path; where all are set, they make the round trip).
Cross traffic (xsender → xreceiver) enters and leaves at the routers and
crosses the bottleneck alongside the data.

Where each quantity acts (one rule, both backends):

  rate, queue   at the egress port of the switch or router a direction
                leaves (HTB + FIFO); a host's own egress is never shaped.
  delay, loss   where a direction enters a switch or router (netem on an IFB
                fed from that port's ingress, or the delay line through
                NFQUEUE), away from both hosts' stacks (docs/lab.md).
                A link's delay toward a host is carried by its direction
                from that host, so the round trip is what was set; loss
                toward a host has no place and is refused.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from ipaddress import IPv4Network
from typing import Any

from ground.path import DEFAULT_MTU, DEFAULT_QUEUE, PathSpec
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

HOST, SWITCH, ROUTER = "host", "switch", "router"
SHAPES = ("path", "dumbbell", "chain")
MAX_PAIRS = 28  # a dumbbell's LAN is a /27 of the run's /24: 30 addresses, one the router's
MAX_ROUTERS = 6  # a chain's links are /27s of the run's /24 (with cross traffic, K + 3 of 8)


@dataclass(frozen=True)
class Node:
    name: str
    kind: str  # host, switch or router

    @property
    def network(self) -> bool:
        """A switch or router: where the emulation lives."""
        return self.kind != HOST


@dataclass(frozen=True)
class Direction:
    """One direction of a link, src → dst, with what acts on it."""

    src: str
    dst: str
    rate: Rate | None = None  # shaped at src's egress; None: the veth's own rate
    queue: Queue | None = None  # the FIFO behind the rate
    delay: Duration = Duration(0)
    loss: Probability = Probability(0)
    jitter: Duration = Duration(0)  # each packet's delay drawn from delay +- this, in order
    emulated: bool = False  # has a delay-and-loss stage where it enters dst

    @property
    def name(self) -> str:
        return f"{self.src}>{self.dst}"


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    ab: Direction
    ba: Direction
    delay: Duration | None = None  # one-way, as set (None: placed from --rtt)

    @property
    def name(self) -> str:
        return f"{self.a}-{self.b}"

    def directions(self) -> tuple[Direction, Direction]:
        return self.ab, self.ba


@dataclass(frozen=True)
class Pair:
    """A client and the server that sends it data."""

    client: str
    server: str

    @property
    def name(self) -> str:
        return f"{self.client}-{self.server}"


# -- per-link refinements ------------------------------------------------------------

LINK_KEYS = ("rate", "delay", "loss", "queue")
_LINK_RE = re.compile(r"^(?P<a>[A-Za-z0-9]+)(?P<sep>[->])(?P<b>[A-Za-z0-9]+):(?P<opts>.+)$")


@dataclass(frozen=True)
class LinkOption:
    """`A-B:key=value,...` (both directions) or `A>B:...` (A to B only)."""

    a: str
    b: str
    both: bool
    rate: Rate | None = None
    delay: Duration | None = None
    loss: Probability | None = None
    queue: Queue | None = None
    text: str = ""

    @classmethod
    def parse(cls, text: str, option: str = "--link") -> LinkOption:
        m = _LINK_RE.match(text.strip())
        if m is None:
            raise QuantityError(option, text, "write LINK:KEY=VALUE,... e.g. r1-r2:rate=11mbit,delay=250ms,queue=15p")
        values: dict[str, Any] = {}
        for item in m["opts"].split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or key not in LINK_KEYS:
                raise QuantityError(option, text, f"{item.strip()!r}: the keys are {', '.join(LINK_KEYS)}")
            if key in values:
                raise QuantityError(option, text, f"{key} given twice")
            where = f"{option} {m['a']}{m['sep']}{m['b']} {key}"
            parse = {"rate": parse_rate, "delay": parse_duration, "loss": parse_probability, "queue": parse_queue}
            values[key] = parse[key](value.strip(), where)  # type: ignore[operator]
        return cls(m["a"], m["b"], m["sep"] == "-", text=text.strip(), **values)


# -- the placed network ------------------------------------------------------------------


@dataclass(frozen=True)
class Network:
    """A topology with the path placed on it: what the lab builds."""

    shape: str
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    pairs: tuple[Pair, ...]
    cross: Pair | None  # the cross traffic's receiver (client) and sender (server)
    bottleneck: str  # the link carrying --rate, --queue and --loss
    mtu: int = DEFAULT_MTU  # every link's, bytes

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def directions(self) -> list[Direction]:
        return [d for link in self.links for d in link.directions()]

    def direction(self, src: str, dst: str) -> Direction:
        for d in self.directions():
            if (d.src, d.dst) == (src, dst):
                return d
        raise KeyError(f"{src}>{dst}")

    def neighbours(self, name: str) -> list[str]:
        return [d.dst for d in self.directions() if d.src == name]

    def route(self, src: str, dst: str) -> list[Direction]:
        """The directions a packet from src to dst crosses (the shapes are trees: one route)."""
        previous: dict[str, str] = {src: src}
        todo = deque([src])
        while todo:
            here = todo.popleft()
            for nxt in self.neighbours(here):
                if nxt not in previous and (nxt == dst or self.node(nxt).network):
                    previous[nxt] = here
                    todo.append(nxt)
        if dst not in previous:
            raise KeyError(f"no route {src} -> {dst}")
        hops = [dst]
        while hops[-1] != src:
            hops.append(previous[hops[-1]])
        hops.reverse()
        return [self.direction(a, b) for a, b in itertools.pairwise(hops)]

    def rtt(self, pair: Pair) -> Duration:
        """The round trip the links give a pair: the sum of every delay both ways."""
        both = self.route(pair.client, pair.server) + self.route(pair.server, pair.client)
        return Duration(sum(d.delay.seconds for d in both))

    def rtt_jitter_sd(self, pair: Pair) -> Duration:
        """The standard deviation jitter gives a pair's round trip: each stage it crosses adds a
        uniform draw of +-J, whose variance is J^2/3 (for packets more than 2 J apart, so that
        none waits for the one ahead)."""
        both = self.route(pair.client, pair.server) + self.route(pair.server, pair.client)
        return Duration(math.sqrt(sum(d.jitter.seconds**2 / 3 for d in both)))

    def view(self, pair: Pair) -> PathSpec:
        """The pair's path as one PathSpec: its round trip, narrowest rate and queue, end-to-end loss, the
        MTU, and the jitter of its stages."""
        down, up = self.route(pair.server, pair.client), self.route(pair.client, pair.server)

        def narrowest(route: list[Direction]) -> Direction | None:
            shaped = [d for d in route if d.rate is not None]
            return min(shaped, key=lambda d: d.rate.bps if d.rate else math.inf) if shaped else None

        def loss(route: list[Direction]) -> Probability:
            kept = 1.0
            for d in route:
                kept *= 1 - d.loss.fraction
            return Probability(round(1 - kept, 12))

        bottleneck_down, bottleneck_up = narrowest(down), narrowest(up)
        line = Rate(10e9)
        return PathSpec(
            rtt=self.rtt(pair),
            rate_down=bottleneck_down.rate if bottleneck_down and bottleneck_down.rate else line,
            rate_up=bottleneck_up.rate if bottleneck_up and bottleneck_up.rate else line,
            loss_down=loss(down),
            loss_up=loss(up),
            queue=(bottleneck_down.queue if bottleneck_down and bottleneck_down.queue else DEFAULT_QUEUE),
            mtu=self.mtu,
            jitter=max((d.jitter for d in down + up), key=lambda j: j.seconds, default=Duration(0)),
        )

    def describe(self) -> dict[str, Any]:
        """Plain values for manifests: every link as placed, every pair's round trip."""

        def direction(d: Direction) -> dict[str, Any]:
            return {
                "rate_bps": d.rate.bps if d.rate else None,
                "queue": str(d.queue) if d.queue else None,
                "delay_ms": d.delay.ms,
                "loss": d.loss.fraction,
                # only where set, so that the records of paths without it stay as they were
                **({"jitter_ms": d.jitter.ms} if d.jitter.seconds else {}),
                "emulated": d.emulated,
            }

        return {
            "shape": self.shape,
            "bottleneck": self.bottleneck,
            **({"mtu": self.mtu} if self.mtu != DEFAULT_MTU else {}),  # as PathSpec.describe has it
            "pairs": [{"client": p.client, "server": p.server, "rtt_ms": self.rtt(p).ms} for p in self.pairs],
            "cross": {"sender": self.cross.server, "receiver": self.cross.client} if self.cross else None,
            "links": {
                link.name: {d.name: direction(d) for d in link.directions()}
                | ({"delay_set_ms": link.delay.ms} if link.delay is not None else {})
                for link in self.links
            },
        }

    # -- addresses ------------------------------------------------------------------------

    def segments(self) -> list[list[tuple[str, str]]]:
        """The IP subnets: links joined through switches, as (node, link name) ends of routers and hosts."""
        parent: dict[str, str] = {link.name: link.name for link in self.links}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for sw in (n.name for n in self.nodes if n.kind == SWITCH):
            touching = [link.name for link in self.links if sw in (link.a, link.b)]
            for other in touching[1:]:
                parent[find(other)] = find(touching[0])
        groups: dict[str, list[tuple[str, str]]] = {}
        for link in self.links:
            ends = groups.setdefault(find(link.name), [])
            ends += [(n, link.name) for n in (link.a, link.b) if self.node(n).kind != SWITCH]
        return list(groups.values())

    def addresses(self, base: str) -> dict[tuple[str, str], str]:
        """Each host's and router's address on each link ("10.a.b.c/len"), carved from the run's /24."""
        net = IPv4Network(base)
        segments = self.segments()
        extra = max(0, math.ceil(math.log2(len(segments)))) if len(segments) > 1 else 0
        subnets = list(net.subnets(prefixlen_diff=extra))
        out: dict[tuple[str, str], str] = {}
        for segment, subnet in zip(segments, subnets, strict=False):
            hosts = list(subnet.hosts())
            if len(segment) > len(hosts):
                raise QuantityError("--pairs", len(self.pairs), f"too many nodes for a /{subnet.prefixlen} subnet")
            for (node, link), address in zip(segment, hosts, strict=False):
                out[(node, link)] = f"{address}/{subnet.prefixlen}"
        return out


# -- the user's topology -----------------------------------------------------------------


@dataclass(frozen=True)
class Topology:
    """What the user asked for: a shape, its size and per-link refinements."""

    shape: str = "path"
    pairs: int = 1
    rtts: tuple[Duration, ...] = ()  # per pair (dumbbell); empty: --rtt for every pair
    routers: int = 2  # chain
    cross: bool = False  # cross-traffic hosts at the routers
    links: tuple[LinkOption, ...] = field(default=())

    @classmethod
    def parse(
        cls,
        shape: str = "path",
        pairs: int | None = None,
        rtts: str | None = None,
        routers: int | None = None,
        cross: bool = False,
        links: Iterable[str] = (),
    ) -> Topology:
        """Build a topology from user text, naming the offending option on error."""
        if shape not in SHAPES:
            raise QuantityError("--topo", shape, f"the topologies are {', '.join(SHAPES)}")
        per_pair = tuple(parse_duration(t.strip(), "--rtts") for t in rtts.split(",")) if rtts else ()
        if pairs is None:
            pairs = len(per_pair) or 1
        if per_pair and len(per_pair) != pairs:
            raise QuantityError("--rtts", rtts, f"one RTT per pair: {pairs} pair(s), {len(per_pair)} RTT(s)")
        topo = cls(
            shape=shape,
            pairs=pairs,
            rtts=per_pair,
            routers=2 if routers is None else routers,
            cross=cross,
            links=tuple(LinkOption.parse(t) for t in links),
        )
        topo.check(given_routers=routers)
        return topo

    @property
    def label(self) -> str:
        """What differs from the default `path`, as the options that give it (a derived figure's name)."""
        parts = [f"topo={self.shape}"]
        parts += [f"pairs={self.pairs}"] if self.shape == "dumbbell" and not self.rtts else []
        parts += [f"rtts={','.join(str(r) for r in self.rtts)}"] if self.rtts else []
        parts += [f"routers={self.routers}"] if self.shape == "chain" and self.routers != 2 else []
        parts += ["cross"] if self.cross else []
        parts += [f"link={o.text}" for o in self.links]
        return "+".join(parts)

    def describe(self) -> dict[str, Any]:
        """Plain values for manifests: the topology as the user gave it."""
        return {
            "shape": self.shape,
            "pairs": self.pairs,
            "rtts": [str(r) for r in self.rtts],
            "routers": self.routers if self.shape == "chain" else None,
            "cross": self.cross,
            "links": [o.text for o in self.links],
        }

    def check(self, given_routers: int | None = None) -> None:
        """Refuse what cannot be built, before anything is: sizes, names and placements."""
        if self.shape != "dumbbell" and self.pairs != 1:
            raise QuantityError("--pairs", self.pairs, f"{self.shape} has one client/server pair; a dumbbell has N")
        if self.shape != "dumbbell" and self.rtts:
            raise QuantityError("--rtts", ",".join(str(r) for r in self.rtts), "per-pair RTTs are a dumbbell's")
        if not 1 <= self.pairs <= MAX_PAIRS:
            raise QuantityError("--pairs", self.pairs, f"from 1 to {MAX_PAIRS}")
        if self.shape != "chain" and given_routers is not None:
            raise QuantityError("--routers", given_routers, "only a chain takes a number of routers")
        if not 2 <= self.routers <= MAX_ROUTERS:
            raise QuantityError("--routers", self.routers, f"from 2 to {MAX_ROUTERS}")
        if self.shape == "path" and self.cross:
            raise QuantityError("--cross", "on", "path has no routers for cross traffic to enter at; use dumbbell")
        self.place(PathSpec())  # names, directions and delays, with the default path

    # -- placing the path ------------------------------------------------------------------

    def skeleton(self) -> tuple[list[Node], list[tuple[str, str]], list[Pair], Pair | None, tuple[str, str]]:
        """Nodes, links (a, b), pairs, cross pair and the bottleneck (data leaves from its first end)."""
        if self.shape == "path":
            nodes = [Node("client", HOST), Node("server", HOST), Node("s1", SWITCH)]
            return nodes, [("client", "s1"), ("server", "s1")], [Pair("client", "server")], None, ("s1", "client")
        cross = Pair("xreceiver", "xsender") if self.cross else None
        if self.shape == "dumbbell":
            n = self.pairs
            clients = [f"client{i}" for i in range(1, n + 1)]
            servers = [f"server{i}" for i in range(1, n + 1)]
            nodes = [Node(h, HOST) for h in clients + servers]
            nodes += [Node(h, HOST) for h in ("xreceiver", "xsender") if cross]
            nodes += [Node("s1", SWITCH), Node("s2", SWITCH), Node("r1", ROUTER), Node("r2", ROUTER)]
            links = [(c, "s1") for c in clients] + [(s, "s2") for s in servers]
            links += [("s1", "r1"), ("s2", "r2"), ("r1", "r2")]
            links += [("xreceiver", "r1"), ("xsender", "r2")] if cross else []
            return nodes, links, [Pair(c, s) for c, s in zip(clients, servers, strict=True)], cross, ("r2", "r1")
        routers = [f"r{i}" for i in range(1, self.routers + 1)]
        nodes = [Node("client", HOST), Node("server", HOST)]
        nodes += [Node(h, HOST) for h in ("xreceiver", "xsender") if cross]
        nodes += [Node(r, ROUTER) for r in routers]
        links = [("client", "r1"), *itertools.pairwise(routers), (routers[-1], "server")]
        links += [("xreceiver", "r1"), ("xsender", routers[-1])] if cross else []
        return nodes, links, [Pair("client", "server")], cross, ("r2", "r1")

    def place(self, path: PathSpec) -> Network:
        """The network this topology is with `path` placed on it (see the module's docstring)."""
        nodes, ends, pairs, cross, (down_src, down_dst) = self.skeleton()
        kinds = {n.name: n.kind for n in nodes}
        names = {frozenset(e): e for e in ends}
        options = self._options_by_link(names)

        # Delays: as set, else each pair's remaining round trip spread over its own links.
        delay: dict[frozenset[str], Duration] = {}
        for key, opts in options.items():
            for opt in opts:
                if opt.delay is not None:
                    if not opt.both:
                        raise QuantityError("--link", opt.text, "a delay is a link's, both ways: write A-B, not A>B")
                    delay[key] = opt.delay
        bare = Network(
            self.shape,
            tuple(nodes),
            tuple(Link(a, b, Direction(a, b), Direction(b, a)) for a, b in ends),
            tuple(pairs),
            cross,
            "",
        )
        for i, pair in enumerate(pairs):
            rtt = self.rtts[i] if self.rtts else path.rtt
            route = [frozenset((d.src, d.dst)) for d in bare.route(pair.client, pair.server)]
            own = [k for k in route if self._carries_rtt(k, kinds)]
            fixed = sum(2 * delay[k].seconds for k in route if k in delay)
            spread = [k for k in own if k not in delay]
            rest = rtt.seconds - fixed
            if spread and rest < -1e-12:
                why = f"{pair.name}'s links are set to a round trip of {Duration(fixed)}: leave their delay unset"
                raise QuantityError("--rtt", str(rtt), why + ", or set --rtt to match")
            for k in spread:
                delay[k] = Duration(max(0.0, rest) / (2 * len(spread)))

        links = []
        for a, b in ends:
            key = frozenset((a, b))
            ab, ba = self._direction(a, b, kinds), self._direction(b, a, kinds)
            ab, ba = self._place_path_options(ab, ba, path, (down_src, down_dst), kinds)
            for opt in options.get(key, []):
                if opt.queue is not None and opt.queue.bytes is not None and opt.queue.bytes < path.frame:
                    raise QuantityError(
                        "--link",
                        opt.text,
                        f"a buffer of {opt.queue} holds no full frame at MTU {path.mtu} ({path.frame}b)",
                    )
                ab, ba = self._refine(opt, ab, ba, kinds)
            ab, ba = self._fold_delay(ab, ba, delay.get(key, Duration(0)), kinds)
            # jitter varies a delay: a stage that delays nothing (a dumbbell's core) gets none
            ab, ba = (replace(d, jitter=path.jitter) if d.emulated and d.delay.seconds else d for d in (ab, ba))
            links.append(Link(a, b, ab, ba, delay=next((o.delay for o in options.get(key, []) if o.delay), None)))
        return Network(self.shape, tuple(nodes), tuple(links), tuple(pairs), cross, f"{down_src}>{down_dst}", path.mtu)

    def _place_path_options(
        self, ab: Direction, ba: Direction, path: PathSpec, down: tuple[str, str], kinds: dict[str, str]
    ) -> tuple[Direction, Direction]:
        """--rate, --rate-up and --queue where the data and the ACKs leave the bottleneck's ends;
        --loss and --loss-up where they enter the next switch or router."""
        placed = []
        for d in (ab, ba):
            if self.shape == "path":
                # s1's two egress ports are the bottleneck; each host's link carries the loss of
                # what that host sends, where it enters s1 (the server's: the data's).
                if kinds[d.src] == SWITCH:
                    rate = path.rate_down if d.dst == "client" else path.rate_up
                    d = replace(d, rate=rate, queue=path.queue)
                else:
                    d = replace(d, loss=path.loss_down if d.src == "server" else path.loss_up)
            elif (d.src, d.dst) == down:
                d = replace(d, rate=path.rate_down, queue=path.queue, loss=path.loss_down, emulated=True)
            elif (d.dst, d.src) == down:
                d = replace(d, rate=path.rate_up, queue=path.queue, loss=path.loss_up, emulated=True)
            placed.append(d)
        return placed[0], placed[1]

    def _carries_rtt(self, key: frozenset[str], kinds: dict[str, str]) -> bool:
        """Whether --rtt is spread over this link: a pair's own links (with a host on them) on a
        dumbbell, so that pairs may differ; every link on a path or chain."""
        return self.shape != "dumbbell" or any(kinds[n] == HOST for n in key)

    def _direction(self, src: str, dst: str, kinds: dict[str, str]) -> Direction:
        """A bare direction; it has a delay-and-loss stage wherever the shape may place --rtt or
        --loss on it (decided by the shape alone, so that a new path level finds its stages)."""
        cross = src in ("xsender", "xreceiver")
        from_pair_host = kinds[src] == HOST and kinds[dst] != HOST and not cross
        between_routers = self.shape == "chain" and kinds[src] == ROUTER and kinds[dst] == ROUTER
        return Direction(src, dst, emulated=from_pair_host or between_routers)

    def _options_by_link(self, names: dict[frozenset[str], tuple[str, str]]) -> dict[frozenset[str], list[LinkOption]]:
        out: dict[frozenset[str], list[LinkOption]] = {}
        for opt in self.links:
            key = frozenset((opt.a, opt.b))
            if key not in names or opt.a == opt.b:
                known = ", ".join(f"{a}-{b}" for a, b in names.values())
                raise QuantityError("--link", opt.text, f"{self.shape} has no link {opt.a}-{opt.b}; its links: {known}")
            out.setdefault(key, []).append(opt)
        return out

    @staticmethod
    def _refine(opt: LinkOption, ab: Direction, ba: Direction, kinds: dict[str, str]) -> tuple[Direction, Direction]:
        """One --link option over the directions it names (A-B: both, where each can take it)."""

        def apply(d: Direction) -> Direction:
            if opt.both and kinds[d.src] == HOST:
                # a host's egress takes no rate or queue; its loss is where it enters the switch
                return replace(d, loss=opt.loss, emulated=True) if opt.loss is not None else d
            if opt.rate is not None:
                d = replace(d, rate=opt.rate, queue=d.queue or DEFAULT_QUEUE)
            if opt.queue is not None:
                if d.rate is None:
                    raise QuantityError(
                        "--link", opt.text, f"a queue fills only behind a rate: {d.name} has none; give rate= too"
                    )
                d = replace(d, queue=opt.queue)
            if opt.loss is not None:
                if opt.both and kinds[d.dst] == HOST:
                    return d  # A-B:loss on a host's link is the loss of what the host sends
                d = replace(d, loss=opt.loss, emulated=True)
            return d

        if opt.both:
            return apply(ab), apply(ba)
        if (opt.a, opt.b) == (ab.src, ab.dst):
            return apply(ab), ba
        return ab, apply(ba)

    @staticmethod
    def _fold_delay(
        ab: Direction, ba: Direction, delay: Duration, kinds: dict[str, str]
    ) -> tuple[Direction, Direction]:
        """Give each direction its delay where it enters a switch or router; toward a host, the
        other direction carries it (and loss or a rate there has no place)."""
        result = []
        for d, other in ((ab, ba), (ba, ab)):
            toward_host = kinds[d.dst] == HOST
            from_host = kinds[d.src] == HOST
            if toward_host and d.loss.fraction > 0:
                raise QuantityError(
                    "--link",
                    f"{d.name}:loss={d.loss}",
                    f"loss toward a host has no place (it is emulated where packets enter a switch "
                    f"or router); set it on {other.name}, or on a link between routers",
                )
            if from_host and d.rate is not None:
                raise QuantityError(
                    "--link",
                    f"{d.name}:rate={d.rate}",
                    f"a host's own egress is not shaped (TCP Small Queues would starve it); "
                    f"shape {other.name}, or a link between switches or routers",
                )
            if toward_host:
                result.append(replace(d, delay=Duration(0)))
            elif kinds[other.dst] == HOST:
                result.append(replace(d, delay=Duration(2 * delay.seconds), emulated=d.emulated or delay.seconds > 0))
            else:
                result.append(replace(d, delay=delay, emulated=d.emulated or delay.seconds > 0))
        return result[0], result[1]


def ideal_goodput(rate: Rate, mtu: int = DEFAULT_MTU) -> Rate:
    """TCP payload rate a saturated link of this MTU carries: rate x MSS / frame (1448 / 1514 at 1500)."""
    return PathSpec(rate_down=rate, mtu=mtu).ideal_goodput_down
