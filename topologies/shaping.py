"""Command builders for link emulation: pure functions returning argument lists.

Nothing here runs a command; the backends and the lab run what these return,
and the unit tests compare them without root.  The shapes:

  bottleneck   HTB (one class, rate = ceil, a burst of 5 ms of the rate)
               with a leaf that holds the bottleneck buffer, on the
               switch's egress port: pfifo/bfifo (drop-tail), or the AQM
               the path names (`qdisc`, `aqm_leaf`) with the buffer as its
               limit.
  netem stage  the port's ingress redirected through an IFB device carrying
               netem delay and loss, so the delay sits in the switch,
               before the bottleneck queue and away from both hosts.
  delay line   iptables NFQUEUE on packets arriving at a port (physdev
               on a bridge, -i on a router), handed to the userspace
               delay line.
"""

from __future__ import annotations

import math

from ground.path import DROP_TAIL, FRAME
from ground.units import Duration, Probability, Queue, Rate

Argv = list[str]

# iptables-legacy and iptables-nft must not be mixed; the legacy one is used
# because its NFQUEUE target works on kernels without nft's queue expression.
IPTABLES = "iptables-legacy"


def offloads_off(dev: str) -> Argv:
    """Segmentation and receive offloads off, so queues and loss act on real packets."""
    return ["ethtool", "-K", dev, "gso", "off", "tso", "off", "gro", "off"]


def link_mtu(dev: str, mtu: int) -> Argv:
    """An interface's MTU: the largest IP packet it sends, and takes, whole."""
    return ["ip", "link", "set", "dev", dev, "mtu", str(mtu)]


BOTTLENECK_FIFO = "10:"  # the handle of the bottleneck's FIFO leaf, which holds its queue (and counts its drops)


def bottleneck_root(dev: str) -> Argv:
    """The HTB root that carries the bottleneck class; made once per port."""
    return ["tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1"]


# How far HTB may catch up after it ran late.  tc's default burst is rate/HZ plus an MTU, with
# HZ read from /proc/net/psched: on a kernel with high-resolution timers that is 10^9, so the
# default is one MTU, and every late run of the qdisc's watchdog or of the softirq that
# dequeues (a virtual CPU's scheduling; the delay line here measured its own timers up to
# 27 ms late, 83 us on average) is time the link stays idle for good.  A 100 Mbit/s, 20 ms
# path delivered 86-94 Mbit/s of its 95.6 that way, and failed the lab's goodput check in CI;
# with 5 ms of tokens, 94.5-95.6.  The price: after an idle period the first 5 ms worth of the
# rate leaves at once (at least one frame: below 2.4 Mbit/s that is what tc did anyway).
# Mininet's TCLink gives HTB a fixed 15 KB, 1.2 ms at 100 Mbit/s and 120 ms at 1 Mbit/s.
BURST = Duration(0.005)


def burst_bytes(rate: Rate, frame: int = FRAME) -> int:
    """HTB's burst (and cburst) for a rate: BURST's worth of it, at least one full frame."""
    return max(frame, round(rate.bps / 8 * BURST.seconds))


def aqm_leaf(qdisc: str, rate: Rate, queue: Queue, frame: int = FRAME) -> Argv:
    """An AQM leaf whose hard limit is the buffer, its other settings the qdisc's own defaults (fq_codel
    and codel: target 5 ms, interval 100 ms; pie: target 15 ms).  A buffer in bytes is counted in full
    frames.  cake shapes nothing here (HTB above it does: `unlimited`), its memory the buffer; red drops
    early from a third of half the buffer to half of it, adaptively (tc-red(8)'s rules of thumb)."""
    packets = queue.packets if queue.packets is not None else max(1, math.ceil((queue.bytes or 0) / frame))
    if qdisc in ("fq_codel", "codel", "pie"):
        return [qdisc, "limit", str(packets)]
    if qdisc == "cake":
        return ["cake", "unlimited", "memlimit", str(packets * frame)]
    if qdisc == "red":
        limit = max(packets, 6) * frame
        high = limit // 2
        low = high // 3
        burst = (2 * low + high) // (3 * frame) + 1
        return ["red", "limit", str(limit), "min", str(low), "max", str(high), "avpkt", str(frame),
                "burst", str(burst), "bandwidth", f"{int(rate.bps)}bit", "adaptive"]  # fmt: skip
    raise ValueError(f"no AQM {qdisc!r}")


def leaf_kind(queue: Queue, qdisc: str = DROP_TAIL) -> str:
    """The kind of the bottleneck's leaf: the AQM `qdisc` names, or the FIFO of a buffer in packets (pfifo)
    or in bytes (bfifo)."""
    if qdisc != DROP_TAIL:
        return qdisc
    return "pfifo" if queue.packets is not None else "bfifo"


def bottleneck(
    dev: str, rate: Rate, queue: Queue, frame: int = FRAME, qdisc: str = DROP_TAIL, replacing: str | None = None
) -> list[Argv]:
    """The bottleneck's rate (HTB class, rate = ceil, burst = cburst = `burst_bytes`) and
    buffer (the leaf: a FIFO, or the AQM `qdisc` names).

    `frame` is a full-sized frame of the path's MTU (PathSpec.frame), HTB's
    quantum.  `replace` creates or changes both in place, so a new path
    level reconfigures the running lab instead of rebuilding it.  It changes
    a leaf only into one of its own kind: the kernel refuses another ("Error:
    Invalid qdisc name", tc_modify_qdisc finding the handle and another
    kind), so where the running leaf is of another kind (`replacing`, its
    `leaf_kind`), it is deleted first; HTB holds the class's packets in a
    default FIFO of its own until the new leaf is grafted.
    """
    bits = f"{int(rate.bps)}bit"
    burst = str(burst_bytes(rate, frame))
    kind = leaf_kind(queue, qdisc)
    if qdisc != DROP_TAIL:
        leaf = aqm_leaf(qdisc, rate, queue, frame)
    else:
        leaf = [kind, "limit", str(queue.packets if queue.packets is not None else queue.bytes)]
    gone = [["tc", "qdisc", "del", "dev", dev, "parent", "1:1", "handle", BOTTLENECK_FIFO]]
    return [
        # quantum = one frame: a single class needs no fairness, and it keeps
        # HTB quiet about quanta at very low and very high rates.
        [
            "tc",
            "class",
            "replace",
            "dev",
            dev,
            "parent",
            "1:",
            "classid",
            "1:1",
            "htb",
            "rate",
            bits,
            "ceil",
            bits,
            "burst",
            burst,
            "cburst",
            burst,
            "quantum",
            str(frame),
        ],
        *(gone if replacing is not None and replacing != kind else []),
        ["tc", "qdisc", "replace", "dev", dev, "parent", "1:1", "handle", BOTTLENECK_FIFO, *leaf],
    ]


def qdisc_counters(dev: str) -> Argv:
    """The qdiscs of a port with their counters, as JSON (ground.flows.qdisc_stats reads it)."""
    return ["tc", "-s", "-j", "qdisc", "show", "dev", dev]


def fair_queue(dev: str, on: bool) -> Argv:
    """The fq qdisc (per-flow pacing) as a host port's root, or the port's default root again."""
    return ["tc", "qdisc", "replace", "dev", dev, "root", "fq"] if on else ["tc", "qdisc", "del", "dev", dev, "root"]


# netem's rate form: with a rate, netem sends each packet no earlier than the one before it (its due time
# counts from the last queued packet's), so jittered packets keep their order, as a link keeps them; this
# rate is above any path's (ground.path's ceiling is 10 Gbit/s), so its serialization adds nothing a path has.
NETEM_ORDER_RATE = "100gbit"


def netem_qdisc(
    ifb: str, delay: Duration, loss: Probability, seed: int | None = None, jitter: Duration = Duration(0)
) -> Argv:
    """netem on the IFB: delay, its jitter and loss only (the bottleneck does rate and buffer).  Jitter is
    uniform within +- `jitter` (netem's draw without a distribution table) and, through netem's rate form
    (NETEM_ORDER_RATE), in order: the delay line's jitter, in the kernel."""
    argv = ["tc", "qdisc", "replace", "dev", ifb, "root", "handle", "1:", "netem", "delay", f"{delay.us}us"]
    if jitter.seconds:
        argv += [f"{jitter.us}us", "rate", NETEM_ORDER_RATE]
    argv += [
        "loss",
        f"{loss.percent:.6g}%",
        # room for everything in flight: delay must never drop
        "limit",
        "1000000",
    ]
    if seed is not None:
        argv += ["seed", str(seed)]
    return argv


def netem_stage(port: str, ifb: str, delay: Duration, loss: Probability, seed: int | None = None) -> list[Argv]:
    """Redirect what arrives on `port` through `ifb`, where netem delays and drops it."""
    return [
        ["ip", "link", "add", ifb, "type", "ifb"],
        ["ip", "link", "set", "dev", ifb, "up"],
        ["tc", "qdisc", "add", "dev", port, "handle", "ffff:", "ingress"],
        [
            "tc",
            "filter",
            "add",
            "dev",
            port,
            "parent",
            "ffff:",
            "protocol",
            "all",
            "u32",
            "match",
            "u32",
            "0",
            "0",
            "action",
            "mirred",
            "egress",
            "redirect",
            "dev",
            ifb,
        ],
        netem_qdisc(ifb, delay, loss, seed),
    ]


def nfqueue_rule(action: str, port: str, queue_num: int, bridged: bool = True) -> Argv:
    """Queue IPv4 packets forwarded from `port` to NFQUEUE `queue_num`: a bridge's port is
    matched through br_netfilter's physdev, a router's by its input interface."""
    if action not in ("-A", "-D", "-C"):
        raise ValueError(f"iptables action {action!r}")
    match = ["-m", "physdev", "--physdev-in", port] if bridged else ["-i", port]
    return [IPTABLES, "-w", action, "FORWARD", *match, "-j", "NFQUEUE", "--queue-num", str(queue_num)]


def route(destination: str, via: str) -> Argv:
    """A static route (`default` or a subnet) through a neighbour's address."""
    return ["ip", "route", "replace", destination, "via", via]


def sysctl(key: str, value: str | int) -> Argv:
    return ["sysctl", "-q", "-w", f"{key}={value}"]
