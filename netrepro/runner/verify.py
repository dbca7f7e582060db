"""Verification of an emulated network: measure it, compare with what was asked.

Every time a lab comes up its paths are measured with real tools, as seed 001
did: ping for the RTT of every client/server pair (against the sum of its
links' delays), an iperf3 TCP transfer (Reno) over the first pair for the
bottleneck's goodput, iperf3 UDP datagrams for the loss rate of every pair
whose links lose packets (and always the first pair's data direction).
Checks of the first pair are named `rtt`, `goodput`, `loss_down`,
`loss_up`; those of pair N also carry `_pairN`.  Tolerances:

  RTT      median within max(1 %, 0.5 ms) of the set RTT, or, with jitter,
           within three standard errors of a median of the samples; the
           pings 20 ms apart, or farther where the path's rate is so low
           that one ping would still be serialized when the next comes
           (twice its time on the slower direction: 196 ms at 8 kbit/s)
  jitter   (where set; the pings then 2 J apart, so that none waits behind
           another) the RTT samples' standard deviation within 0.65-1.35
           times the model's, sqrt(sum of J^2/3 over the stages crossed),
           plus 0.3 ms of the lab's own timing noise; where the model's is
           below half the step ping prints to (1 ms from an RTT of 100 ms),
           from 0 to that plus half a step
  goodput  within 5 % of the ideal rate x MSS/frame (1448/1514 at MTU 1500),
           and one segment's share of the count over the measured seconds
  loss     the count of lost datagrams inside the 99 % binomial interval
           of the set rate (zero when no loss is set); datagrams the
           receiving host's full socket buffer dropped (its Udp
           RcvbufErrors) are the measurement's, not the path's, and are
           recorded as `receiver_drops` and left out of the count

A UDP test whose handshake datagram was lost to the emulated loss (iperf3
never resends it) runs again, at most three times, with a warning.

A check outside its tolerance is a warning, recorded with the results;
`--strict` makes it fatal.  The user decides, as seed 001's authors argued.
"""

from __future__ import annotations

import logging
import math
import statistics
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from ground.ledgers import read_sysctl
from ground.parsers import parse_iperf3_tcp, parse_iperf3_udp, parse_ping, parse_snmp, ping_argv
from ground.path import ETHERNET_HEADER, PathSpec
from ground.proc import CommandError, Netns, Process, run
from ground.units import Duration, Rate
from servers.iperf import IPERF_PORT, iperf3_server_argv, wait_listening
from topologies.topology import Network, Pair

log = logging.getLogger("netrepro.runner.verify")

UDP_PAYLOAD = 200  # small datagrams: many samples for the loss estimate


class PathUnderTest(Protocol):
    """What a measurement needs of one client/server path (a PairView, or the lab's first pair)."""

    @property
    def path(self) -> PathSpec: ...
    @property
    def ledger(self) -> Any: ...
    @property
    def base_rtt(self) -> Duration: ...  # the lab's own RTT, deducted from the emulated delay

    @property
    def client(self) -> Netns: ...
    @property
    def server(self) -> Netns: ...
    def ip(self, host: str) -> str: ...


class LabUnderTest(Protocol):
    """What verification needs of a lab with any number of pairs (topologies.lab.Lab)."""

    ledger: Any
    network: Network
    base_rtts: dict[Pair, Duration]

    def ns(self, name: str) -> Netns: ...
    def ip(self, host: str) -> str: ...
    def emulating(self, *, delay: bool = True, loss: bool = True) -> AbstractContextManager[None]: ...


@dataclass
class PairView:
    """One client/server pair of a lab, seen as the single path the measurements know."""

    lab: LabUnderTest
    pair: Pair
    undelayed: bool = False  # measured with the delays taken off: the path is the lab's own RTT

    @property
    def path(self) -> PathSpec:
        view = self.lab.network.view(self.pair)
        return replace(view, rtt=Duration(max(self.base_rtt.seconds, 0.001))) if self.undelayed else view

    @property
    def ledger(self) -> Any:
        return self.lab.ledger

    @property
    def base_rtt(self) -> Duration:
        return self.lab.base_rtts.get(self.pair, Duration(0))

    @property
    def client(self) -> Netns:
        return self.lab.ns(self.pair.client)

    @property
    def server(self) -> Netns:
        return self.lab.ns(self.pair.server)

    def ip(self, host: str) -> str:
        return self.lab.ip({"client": self.pair.client, "server": self.pair.server}.get(host, host))


@dataclass
class Check:
    name: str
    unit: str
    desired: float
    measured: float
    low: float
    high: float
    detail: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.low <= self.measured <= self.high

    def line(self) -> str:
        verdict = "ok" if self.ok else "OUT OF TOLERANCE"
        extra = "".join(f", {k} {v:g}" for k, v in self.detail.items())
        return (
            f"{self.name:<10} set {self.desired:10.4g} {self.unit:<6} measured {self.measured:10.4g} "
            f"(allowed {self.low:.4g}..{self.high:.4g}{extra})  {verdict}"
        )


@dataclass
class Verification:
    checks: list[Check]
    seconds: float

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "seconds": round(self.seconds, 2),
            "checks": [{**asdict(c), "ok": c.ok} for c in self.checks],
        }


# -- tolerances (pure, unit-tested) -------------------------------------------


def rtt_tolerance_ms(rtt_ms: float, jitter_sd_ms: float = 0.0, samples: int = 30) -> float:
    """How far the median RTT may be from the set one: 1 % (at least 0.5 ms), or three standard
    errors of the median of `samples` draws whose SD the jitter makes `jitter_sd_ms` (1.25 SD/sqrt(n))."""
    return max(0.01 * rtt_ms, 0.5, 3 * 1.2533 * jitter_sd_ms / math.sqrt(max(samples, 1)))


# A default ping as the shaper counts it: 56 bytes of data, ICMP's 8, IP's 20 and Ethernet's header (98).
PING_FRAME = 56 + 8 + 20 + ETHERNET_HEADER


def ping_interval(path: PathSpec) -> float:
    """Seconds between the pings of an RTT check: 20 ms, or farther apart where the path's jitter
    spreads the replies (2 J) or its rate serializes a ping slowly (twice a ping's time on the slower
    direction), so that no ping waits behind the one before it.  The shaper's bucket passes a ping at
    once while it holds a ping's worth; pings closer than their own serialization empty it and then
    queue, each a little longer: at 8 kbit/s a ping takes 98 ms, and 30 pings 20 ms apart read a
    median of 2064 ms on a 1000 ms path (iw/fig5c, every row of that level)."""
    slower = min(path.rate_down.bps, path.rate_up.bps)
    return max(0.02, 2 * path.jitter.seconds, 2 * PING_FRAME * 8 / slower)


def jitter_bounds_ms(sd_ms: float, resolution_ms: float = 0.0) -> tuple[float, float]:
    """Where the standard deviation of 30 RTT samples may fall when the model gives `sd_ms`: a
    sample's SD is off by about 11 % (one standard error, for the triangular sum of two uniform
    draws); three of those either side, and the lab's own timing noise above.  Samples printed to
    `resolution_ms` (ping_resolution_ms) can round a spread below half that step away, or show up
    to half a step where a rounding edge splits them: the bounds then widen to 0 and by half a step."""
    if sd_ms < resolution_ms / 2:
        return 0.0, 1.35 * sd_ms + 0.3 + resolution_ms / 2
    return 0.65 * sd_ms, 1.35 * sd_ms + 0.3


def ping_resolution_ms(rtt_ms: float) -> float:
    """The step iputils' ping prints a round trip to: whole milliseconds from 100 ms, tenths from 10 ms,
    hundredths from 1 ms, microseconds below (ping_common.c's `time=` formats)."""
    if rtt_ms >= 99.95:
        return 1.0
    if rtt_ms >= 9.995:
        return 0.1
    return 0.01 if rtt_ms >= 1.0 else 0.001


def binomial_interval(n: int, p: float, level: float = 0.99) -> tuple[int, int]:
    """The central `level` interval of Binomial(n, p), in counts."""
    if n == 0 or p == 0:
        return 0, 0
    tail = (1 - level) / 2
    log_p, log_q = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    cdf, low = 0.0, None
    for k in range(n + 1):
        cdf += math.exp(base - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q)
        if low is None and cdf > tail:
            low = k
        if cdf >= 1 - tail:
            return (low if low is not None else k), k
    return (low if low is not None else n), n


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


# Socket buffers iperf3 may ask for on any kernel: net.core.[rw]mem_max's default
# on most (212992); socket_buffer_limit reads the machine's own (4194304 on this
# project's machines).
WINDOW_LIMIT = 200 * 1024
BUFFER_LIMITS = ("net.core.rmem_max", "net.core.wmem_max")


def socket_buffer_limit() -> int:
    """The largest buffer iperf3's -w gets: the least of net.core.rmem_max and
    wmem_max.  They are one value for the whole machine (kernels since 6.10
    show it, read-only, in every network namespace; older ones only in the
    first), read here from ours.  WINDOW_LIMIT where it cannot be read."""
    try:
        return min(int(read_sysctl(key)) for key in BUFFER_LIMITS)
    except (OSError, ValueError) as e:
        log.warning("socket-buffer limit unreadable (%s); the goodput check assumes %d bytes", e, WINDOW_LIMIT)
        return WINDOW_LIMIT


def goodput_window(path: PathSpec, limit: int = WINDOW_LIMIT) -> int | None:
    """iperf3's -w for the goodput test: four bandwidth-delay products (at
    least four full frames, so that a tiny BDP still fills the pipe), at
    most the socket buffers' `limit`, and at most two thirds of what the
    path holds before its queue overflows (BDP + buffer: the window the
    kernel grants is up to about 1.5 times what -w asks for).  Such a flow
    fills the pipe and leaves slow start without a loss.  None (uncapped)
    where that leaves less than 1.25 BDPs.

    Uncapped, the flow overshoots a large buffer in slow start, and until
    its recovery ends the receiver reads in bursts: what arrived behind a
    hole reaches iperf3 at once when the hole is filled, so a window that
    begins or ends in the recovery counts bytes the link carried outside it
    (measured: 40 ms, 20 Mbit/s, 1000 packets, 20.5-20.9 Mbit/s read in 6 s
    against 19.13 carried; 100 ms, 5 Mbit/s, 3.54 against 4.78).  A capped
    flow also keeps iperf3's closing exchange from waiting behind seconds of
    queue (a 1000-packet queue is 4 s at 3 Mbit/s)."""
    want = max(4 * path.bdp_bytes, 4 * path.frame)
    holds = path.bdp_bytes + buffer_bytes(path)
    window = min(want, limit, max(2 * holds // 3, 4 * path.frame))
    return window if window >= 5 * path.bdp_bytes // 4 else None


def rounds_to_a_bdp(path: PathSpec) -> int:
    """Round trips from the handshake to a window of one BDP: the handshake, the
    initial window's (10 segments), and one per doubling after it."""
    return 2 + math.ceil(math.log2(max(1.0, path.bdp_bytes / (10 * path.mss))))


# The goodput test's longest measured part: where 40 frames take longer (under 5.4 kbit/s at MTU 1500),
# it measures fewer, and one segment's share of the count (goodput_bounds) grows with that.
GOODPUT_MAX_SECONDS = 90
GOODPUT_FRAMES = 40


def goodput_duration(path: PathSpec, limit: int = WINDOW_LIMIT) -> tuple[int, int]:
    """(seconds measured, seconds omitted before them): the omitted part long
    enough to leave slow start (at 1 s and 3 Mbit/s, 7 round trips; the 4 of
    an earlier rule left the flow at 2.62 of 2.87 Mbit/s in the 4 s after).

    At a rate so low that the window takes seconds to serialize, the omitted
    part also holds the queue the window builds: while the round trip grows
    from the RTT to the window's serialization time, the retransmission timer
    lags behind it and fires once (measured at 8 kbit/s and 1 s: a spurious
    retransmission 4.6 s in, one 1.5 s frame's slot of the link lost).  The
    measured part holds 40 frames, at most 90 s."""
    rounds = math.ceil(4 * path.rtt.seconds)
    frame_seconds = path.frame * 8 / path.rate_down.bps
    rounds = max(rounds, min(GOODPUT_MAX_SECONDS, math.ceil(GOODPUT_FRAMES * frame_seconds)))
    ramp = math.ceil(max(4, rounds_to_a_bdp(path)) * path.rtt.seconds)
    window = goodput_window(path, limit)
    if window is None:
        # Uncapped, slow start overshoots a large buffer and the recovery
        # (about a second at 100 Mbit/s) must not dominate the measurement.
        return min(GOODPUT_MAX_SECONDS, max(6, rounds)), min(30, max(2, ramp))
    # Capped, the flow is at the bottleneck rate, loss-free, once slow start is over
    # and its window's queue is built.
    queue_built = math.ceil(path.rtt.seconds + window * 8 / path.rate_down.bps)
    return min(GOODPUT_MAX_SECONDS, max(3, rounds)), min(30, max(1, ramp, queue_built))


def goodput_bounds(path: PathSpec, seconds: float) -> tuple[float, float]:
    """The goodput check's allowed range (bit/s) for `seconds` measured: 5 % of the ideal
    rate either side, widened by one segment's share of what the seconds hold.  The
    receiver counts whole segments, one every 1.5 s at 8 kbit/s, so a count over a
    window can be one segment off whatever the rate: 2.5 % of the 40 that 61 s hold
    at 8 kbit/s, 2.2 % of the 46 of 7 s at 80 kbit/s, under 0.4 % from 800 kbit/s up."""
    ideal = path.ideal_goodput_down.bps
    slack = 0.05 * ideal + path.mss * 8 / seconds
    return ideal - slack, ideal + slack


# The goodput check's congestion control: Reno, whatever the machine's default (BBR on this
# project's machines, CUBIC on most users'), so that a path verifies the same on both, and so
# that `one_flow_fills` holds for the flow that measures: a loss-based flow keeps the
# bottleneck busy through its losses when the buffer holds a BDP.  Reno is in every kernel.
GOODPUT_CC = "reno"


def goodput_args(path: PathSpec, limit: int = WINDOW_LIMIT) -> list[str]:
    """iperf3 client options for the goodput check, server to client, over Reno.

    iperf3 runs `-O` seconds on top of `-t`, and reports only the `-t` part.
    """
    measured, omitted = goodput_duration(path, limit)
    window = goodput_window(path, limit)
    return ["-R", "-C", GOODPUT_CC, "-t", str(measured), "-O", str(omitted), *(["-w", str(window)] if window else [])]


def buffer_bytes(path: PathSpec) -> int:
    """The bottleneck buffer in bytes: a buffer in packets holds that many full frames of the path's MTU."""
    return path.queue.packets * path.frame if path.queue.packets is not None else path.queue.bytes or 0


def loss_seconds(set_loss: float) -> int:
    """UDP test length: 2 s gives a lossy path's binomial check its power; on
    a loss-free path any single lost datagram fails the check, and 1 s will do."""
    return 2 if set_loss > 0 else 1


# -- measurements ---------------------------------------------------------------


def ping_rtts(lab: PathUnderTest, count: int = 30, interval: float = 0.02) -> list[float]:
    """RTT samples (ms) of `count` pings from the client to the server."""
    deadline = math.ceil(count * interval + 2 * lab.path.rtt.seconds + 3)
    out = run(
        ping_argv(lab.ip("server"), count, interval, deadline_s=deadline),
        lab.client,
        check=False,
        timeout=deadline + 5,
    ).stdout
    samples = parse_ping(out).rtts_ms
    if not samples:
        raise CommandError(["ping", lab.ip("server")], lab.client, None, "no replies:\n" + out)
    return samples


def rtt_check(lab: PathUnderTest, samples: list[float], name: str = "rtt", jitter_sd: Duration = Duration(0)) -> Check:
    """The median of the round trips `samples` (ms; ping_rtts) against the set RTT;
    `jitter_sd`: the spread the path's jitter gives the samples (Network.rtt_jitter_sd)."""
    rtt_ms = lab.path.rtt.ms
    tol = rtt_tolerance_ms(rtt_ms, jitter_sd.ms, len(samples))
    return Check(
        name,
        "ms",
        rtt_ms,
        statistics.median(samples),
        rtt_ms - tol,
        rtt_ms + tol,
        {
            "min": min(samples),
            "p99": percentile(samples, 99),
            "replies": len(samples),
            "lab_base": round(lab.base_rtt.ms, 3),
        },
    )


# iperf3 (3.12, Debian's) opens a UDP test with one datagram each way and
# never resends them; when emulated loss takes the reply, the client fails
# with this.  It is the loss being measured, hitting the handshake.
UDP_HANDSHAKE_LOST = "unable to read from stream socket"
UDP_ATTEMPTS = 3


def _iperf3_once(lab: PathUnderTest, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """One iperf3 test from client to server, the server started and stopped here."""
    server = Process(
        iperf3_server_argv(lab.ip("server"), IPERF_PORT), lab.server, ledger=lab.ledger, label="iperf3 server"
    )
    try:
        wait_listening(lab.server, lab.ip("server"), IPERF_PORT, server)
        return run(argv, lab.client, check=False, timeout=timeout)
    finally:
        server.stop()


def _iperf3(lab: PathUnderTest, client_args: list[str], timeout: float, attempts: int = 1) -> tuple[str, int]:
    """iperf3's JSON report of one test, and how many tests it took: a test whose UDP
    handshake was lost runs again, up to `attempts` tests in all."""
    argv = ["iperf3", "-c", lab.ip("server"), "-p", str(IPERF_PORT), "-J", *client_args]
    for attempt in range(1, attempts + 1):
        done = _iperf3_once(lab, argv, timeout)
        if UDP_HANDSHAKE_LOST not in done.stdout + done.stderr or attempt == attempts:
            break
        log.warning(
            "iperf3's UDP handshake was lost on the emulated path (test %d of at most %d); again", attempt, attempts
        )
    if done.returncode != 0:
        raise CommandError(argv, lab.client, done.returncode, done.stderr + done.stdout[-500:])
    return done.stdout, attempt


def measure_goodput(lab: PathUnderTest) -> Check:
    path = lab.path
    limit = socket_buffer_limit()
    measured, omitted = goodput_duration(path, limit)
    window = goodput_window(path, limit)
    # iperf3's closing exchange waits behind what the queue holds, and takes a few RTTs itself.
    queued = window or buffer_bytes(path)
    drain = 8 * queued / path.rate_down.bps
    out, _ = _iperf3(lab, goodput_args(path, limit), timeout=measured + omitted + 30 + drain + 20 * path.rtt.seconds)
    result = parse_iperf3_tcp(out)
    ideal = lab.path.ideal_goodput_down.bps
    low, high = goodput_bounds(path, measured)
    return Check(
        "goodput",
        "Mbit/s",
        ideal / 1e6,
        result.goodput_bps / 1e6,
        low / 1e6,
        high / 1e6,
        {"retransmits": result.retransmits or 0, **({"window_kb": window / 1000} if window else {})},
    )


def measure_loss(lab: PathUnderTest, direction: str, seconds: int | None = None, suffix: str = "") -> Check:
    path = lab.path
    set_loss = (path.loss_down if direction == "down" else path.loss_up).fraction
    seconds = seconds or loss_seconds(set_loss)
    rate = path.rate_down if direction == "down" else path.rate_up
    # Half the bottleneck: no datagram may be lost to the queue, only to the emulation.
    offered = Rate(min(rate.bps / 2, 20e6))
    args = ["-u", "-b", str(int(offered.bps)), "-l", str(UDP_PAYLOAD), "-t", str(seconds)]
    if direction == "down":
        args.append("-R")
    receiver = lab.client if direction == "down" else lab.server
    full_before = udp_receive_buffer_drops(receiver)
    out, tests = _iperf3(lab, args, timeout=seconds + 2 * path.rtt.seconds + 30, attempts=UDP_ATTEMPTS)
    receiver_drops = udp_receive_buffer_drops(receiver) - full_before
    result = parse_iperf3_udp(out)
    lost = max(0, result.lost - receiver_drops)
    low, high = binomial_interval(result.packets, set_loss)
    n = max(result.packets, 1)
    return Check(
        f"loss_{direction}{suffix}",
        "%",
        set_loss * 100,
        lost / n * 100,
        low / n * 100,
        high / n * 100,
        # a test run again because its handshake was lost says so
        {
            "datagrams": result.packets,
            "lost": lost,
            "receiver_drops": receiver_drops,
            **({"handshake_retries": tests - 1} if tests > 1 else {}),
        },
    )


def udp_receive_buffer_drops(ns: Netns) -> int:
    """Datagrams a namespace's kernel dropped because the receiving socket's buffer was full.

    At 12 500 datagrams a second (20 Mbit/s of 200 B) the default 208 KB buffer holds about
    16 ms of them, and a virtual CPU stalls that long here (the delay line's timers fired up to
    27 ms late).  A check on a loss-free 100 Mbit/s path once counted 7 of 12 753 datagrams
    lost, where to was not recorded then; this records it.  Only iperf3 receives UDP in the
    lab's namespaces while the check runs."""
    return parse_snmp(run(["cat", "/proc/net/snmp"], ns, timeout=10).stdout, "Udp")["RcvbufErrors"]


def jitter_check(name: str, model_sd: Duration, samples: list[float]) -> Check:
    """The RTT samples' spread against the one the stages' jitter gives (Network.rtt_jitter_sd), at the
    resolution ping printed them to (a spread of 0.08 ms is not seen in whole milliseconds)."""
    resolution = ping_resolution_ms(max(samples)) if samples else 0.0
    low, high = jitter_bounds_ms(model_sd.ms, resolution)
    spread = statistics.stdev(samples) if len(samples) > 1 else math.inf  # one reply shows no spread
    return Check(name, "ms sd", model_sd.ms, spread, low, high, {"replies": len(samples), "resolution_ms": resolution})


def views(lab: LabUnderTest) -> Iterator[tuple[str, PairView]]:
    """Each pair of the lab, with the suffix its checks carry ("" for the first)."""
    for i, pair in enumerate(lab.network.pairs):
        yield ("" if i == 0 else f"_pair{i + 1}"), PairView(lab, pair)


def one_flow_fills(path: PathSpec) -> bool:
    """Whether one loss-based flow can hold the bottleneck busy: its buffer holds a BDP.  Below
    that (seed 004's 15 packets under a 1.3 s RTT) the link idles after every loss, which is the
    congestion control's physics, not the emulation's; the rate is then measured undelayed."""
    return buffer_bytes(path) >= path.bdp_bytes


def verify(lab: LabUnderTest) -> Verification:
    """Measure every pair's RTT and the bottleneck's goodput without loss, then the loss."""
    began = time.monotonic()
    pairs = list(views(lab))
    first = pairs[0][1]
    with lab.emulating(loss=False):
        checks = []
        for suffix, view in pairs:
            # pings further apart than a stage's widest spread of draws (2 J) and than their own
            # serialization, so that none waits behind the one before it (the model of the spread
            # assumes that, and the RTT is the path's, not its probes' queue)
            spread = lab.network.rtt_jitter_sd(view.pair)
            samples = ping_rtts(view, interval=ping_interval(view.path))
            checks.append(rtt_check(view, samples, f"rtt{suffix}", spread))
            if spread.seconds:
                checks.append(jitter_check(f"jitter{suffix}", spread, samples))
        if one_flow_fills(first.path):
            checks.append(measure_goodput(first))
    if not one_flow_fills(first.path):
        with lab.emulating(loss=False, delay=False):
            check = measure_goodput(replace(first, undelayed=True))
        check.detail["undelayed"] = 1
        checks.insert(len(pairs), check)
    for i, (suffix, view) in enumerate(pairs):
        path = view.path
        if i == 0 or path.loss_down.fraction > 0:
            checks.append(measure_loss(view, "down", suffix=suffix))
        if path.loss_up.fraction > 0:
            checks.append(measure_loss(view, "up", suffix=suffix))
    result = Verification(checks, time.monotonic() - began)
    for c in result.checks:
        (log.info if c.ok else log.warning)("verify %s", c.line())
    return result
