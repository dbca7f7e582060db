"""Each BPF port shows its algorithm on this kernel, read from tcp_probe on the delay line.

The ports (kmod/bpf/<name>.bpf.c) must behave as the kernel's modules do;
here each shows the mark its publication gives it, measured from what the
kernel did to the sender's window (the `tcp:tcp_probe` tracepoint):

- the multiplicative decrease, ssthresh after / cwnd before at each loss:
  scalable 7/8, bic 819/1024, highspeed 1/2 below 38 segments and
  1 - b(w) above (RFC 3649), veno 4/5 on a random loss with an empty
  queue and 1/2 with a full one, illinois 7/8 with low delay and 1/2 with
  high delay, westwood's ssthresh set to the bandwidth estimate x the
  minimum RTT when the recovery completes;
- the increase: hybla's slow start 2^rho times Reno's per RTT, htcp's
  growing with the time since the last loss;
- the queue: vegas keeps between alpha and beta packets in it, yeah
  leaves its fast mode and drains the queue Reno fills.

Not here: lp yielding to Reno; measured, it does not yield here, and why
is known. TCP-LP's one-way delay is TSval x (1000 / remote_hz) - TSecr in
integers, remote_hz its running estimate of the peer's timestamp clock.
(1) Linux's TSval carries a random per-connection offset
(tcp_timestamps=1), so that delay is an arbitrary 32-bit number; at its
first sample LP resets min and max around it (min = sowd, max = 2 sowd),
and its threshold, min + 15 % of (max - min), then lies 15 % of that
number (typically hundreds of millions of ms) above any delay a path adds:
no cut after the first. On a 2 Mbit/s, 40 ms, 50-packet path, lp beside
Reno for 20 s: 0 cuts, 1.02 against 0.89 Mbit/s. With the receiver's
offset off (tcp_timestamps=2 in its namespace): 3 cuts, 0.82 against 1.09
Mbit/s. (2) The estimate averages 1000 dTSval / dTSecr over successive
ACKs; it stays near 1000 while ACKs come several ms apart, and rises above
1000 once they come about every 2 ms (10 Mbit/s with delayed ACKs), where
1000 / remote_hz is 0 (measured on DROPTAIL: 4.0 and 4.5 Mbit/s beside
Reno's 4.8 and 4.9; with tcp_timestamps=2, 0.33 Mbit/s even alone). The
module has the same arithmetic; in Debian's 6.1, module and port gave the
same goodput and backoff on one flow (kmod/README.md).

Three paths carry most checks: RANDOM (100 Mbit/s, 40 ms, 0.2 % random
loss, a 300-packet buffer the windows do not reach: losses with an empty
queue, windows of 20 to 60 segments, about 25 reductions in 8 s),
OVERFLOW (10 Mbit/s, 40 ms, no random loss, 20 packets: every loss is
the buffer overflowing, about one a second with Reno's sawtooth) and
DROPTAIL (the same with 100 packets, room for a queue to be seen).
"""

import itertools
import math
import statistics
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from ground.cwnd import epochs
from ground.ledger import Ledger
from ground.path import PathSpec
from ground.tcpprobe import ProbeSample, TcpProbe, delivery_rate, reduction_starts, reductions, sender_samples
from kmod import loader
from servers.iperf import CrossTraffic
from topologies.lab import Lab

pytestmark = pytest.mark.root

RANDOM = PathSpec.parse(rtt="40ms", rate="100mbit", loss="0.2%", queue="300p")
OVERFLOW = PathSpec.parse(rtt="40ms", rate="10mbit", queue="20p")
DROPTAIL = PathSpec.parse(rtt="40ms", rate="10mbit", queue="100p")
MSS = 1448
PORT = 5201


@pytest.fixture
def lab_on(request: pytest.FixtureRequest) -> Iterator[tuple[Lab, Ledger, dict[str, loader.LoadedAlgorithm]]]:
    """A lab on the path the test names (`@pytest.mark.parametrize("lab_on", [PATH], indirect=True)`),
    with the ports the test uses loaded."""
    path, names = request.param
    with Ledger() as ledger, Lab(path, ledger, seed=7) as lab:
        yield lab, ledger, {name: loader.load(name, ledger, "bpf") for name in names}


def flow(lab: Lab, ledger: Ledger, work: Path, cc: str, seconds: int, port: int = PORT) -> CrossTraffic:
    return CrossTraffic(lab.client, lab.server, lab.ip("server"), ledger, work, duration_s=seconds, port=port, cc=cc)


def trace(lab: Lab, ledger: Ledger, work: Path, cc: str, seconds: int) -> list[ProbeSample]:
    """One iperf3 flow server -> client with `cc`: the tcp_probe samples of its data connection."""
    with TcpProbe(ledger, [PORT], network=lab.subnet) as probe, flow(lab, ledger, work, cc, seconds) as f:
        f.report()
    flows: dict[str, list[ProbeSample]] = {}
    for s in sender_samples(probe.samples, f"{lab.ip('server')}:{PORT}"):
        flows.setdefault(s.flow, []).append(s)
    return max(flows.values(), key=len)  # the data connection, not iperf3's control one


def backoffs(samples: Sequence[ProbeSample], low: int = 20, high: int = 10**9) -> list[float]:
    """ssthresh after / cwnd before at each reduction from a window in [low, high)."""
    return [after / before for before, after in reductions(samples) if low <= before < high]


def median_backoff(samples: Sequence[ProbeSample], low: int = 20, high: int = 10**9, least: int = 3) -> float:
    found = backoffs(samples, low, high)
    assert len(found) >= least, f"too few reductions from windows of {low} to {high}: {found}"
    return statistics.median(found)


def queued(samples: Sequence[ProbeSample], after_s: float, over_base: bool = False) -> list[float]:
    """The packets a flow keeps queued, cwnd x (RTT - base RTT) / RTT, after `after_s` (YeAH's
    estimate); `over_base`: divided by the base RTT instead, tcp_vegas's `diff`."""
    base = min(s.srtt_us for s in samples if s.srtt_us > 0)
    t0 = samples[0].time
    return [
        s.snd_cwnd * (s.srtt_us - base) / (base if over_base else s.srtt_us)
        for s in samples
        if s.time - t0 > after_s and s.srtt_us
    ]


# -- the decrease -------------------------------------------------------------


@pytest.mark.parametrize("lab_on", [(RANDOM, ("scalable", "bic", "veno", "illinois"))], indirect=True)
def test_the_decrease_on_random_loss_with_an_empty_queue(
    lab_on: tuple[Lab, Ledger, dict[str, loader.LoadedAlgorithm]], tmp_path: Path
) -> None:
    lab, ledger, _ = lab_on
    measured = {
        cc: median_backoff(trace(lab, ledger, tmp_path, cc, 8)) for cc in ("scalable", "bic", "veno", "illinois")
    }
    print(measured)
    assert measured["scalable"] == pytest.approx(7 / 8, abs=0.02)  # b = 1/8 (Kelly)
    assert measured["bic"] == pytest.approx(819 / 1024, abs=0.02)  # the module's beta
    assert measured["veno"] == pytest.approx(4 / 5, abs=0.02)  # random loss: backlog below beta = 3
    # Low delay: illinois's beta is 1/8 while the average delay above the base stays within a tenth
    # of the largest seen (da <= dm / 10), and rises towards 1/2 with da / dm beyond it.  On an empty
    # queue both are the delay line's jitter, whose shape varies with the machine's load: measured
    # 0.875 on a quiet machine, 0.806 during a suite run; either way far above Reno's 1/2.
    assert 0.75 <= measured["illinois"] <= 7 / 8 + 0.03, measured


@pytest.mark.parametrize("lab_on", [(OVERFLOW, ("veno", "illinois", "westwood"))], indirect=True)
def test_the_decrease_when_the_buffer_overflows(
    lab_on: tuple[Lab, Ledger, dict[str, loader.LoadedAlgorithm]], tmp_path: Path
) -> None:
    lab, ledger, _ = lab_on
    traces = {cc: trace(lab, ledger, tmp_path, cc, 10) for cc in ("veno", "illinois", "westwood")}
    measured = {cc: median_backoff(traces[cc]) for cc in ("veno", "illinois")}
    # westwood: when the recovery completes (CA_EVENT_COMPLETE_CWR), ssthresh and cwnd = bandwidth
    # estimate x minimum RTT; the estimate is the rate the ACKs delivered (Reno's halving comes first)
    west = westwood_settings(traces["westwood"])
    print(measured, {"westwood (entry ssthresh, ssthresh set, delivered rate x min RTT)": west})
    assert measured["veno"] == pytest.approx(1 / 2, abs=0.03)  # full queue: Reno's halving
    # High delay: illinois's beta is beta_max = 1/2 once the average delay above the base reaches
    # 8/10 of dm, the largest delay above the base the flow has seen.  dm never falls, so one hiccup
    # of the delay line lifts every later cut towards 7/8: measured 0.509 in 12 of 12 runs alone and
    # beside two busy cores, 0.611 in one CI suite (a hiccup of about 10 ms, by illinois's rule; 20 ms
    # would give 0.69, 40 ms 0.76).  Its cut on an empty queue, 7/8 (the test above), stays far above.
    assert 0.47 <= measured["illinois"] <= 0.78, measured
    assert len(west) >= 3, west
    assert statistics.median(ss / model for _, ss, model in west) == pytest.approx(1, abs=0.15), west
    assert all(ss > entry for entry, ss, _ in west), west  # here the estimate is above half the window


def westwood_settings(samples: Sequence[ProbeSample], span_s: float = 1.0) -> list[tuple[int, int, float]]:
    """At each reduction after slow start's: (ssthresh at the loss, the ssthresh set next, the rate
    delivered over the `span_s` before that x the minimum RTT, in segments)."""
    min_rtt = min(s.srtt_us for s in samples if s.srtt_us > 0) / 1e6
    out = []
    for start in reduction_starts(samples):
        entry = samples[start]
        if entry.time - samples[0].time < 2:
            continue
        after = samples[start:]
        set_next = next((b for a, b in itertools.pairwise(after) if b.ssthresh != a.ssthresh), None)
        if set_next is not None:
            window = [s for s in samples if set_next.time - span_s <= s.time <= set_next.time]
            out.append((entry.ssthresh, set_next.ssthresh, delivery_rate(window) / MSS * min_rtt))
    return out


@pytest.mark.parametrize("lab_on", [(PathSpec.parse(rtt="40ms", rate="100mbit", queue="300p"), ("highspeed",))],
                         indirect=True)  # fmt: skip
def test_highspeed_is_reno_below_38_segments_and_cuts_less_above(
    lab_on: tuple[Lab, Ledger, dict[str, loader.LoadedAlgorithm]], tmp_path: Path
) -> None:
    lab, ledger, _ = lab_on
    high = trace(lab, ledger, tmp_path, "highspeed", 20)
    lab.reconfigure(PathSpec.parse(rtt="20ms", rate="10mbit", queue="10p"))  # windows stay below 30
    low = trace(lab, ledger, tmp_path, "highspeed", 8)

    # RFC 3649: b(w) falls from 0.5 at 38 segments to 0.1 at 83000, linearly in log w
    def b(w: int) -> float:
        return 0.5 + (0.1 - 0.5) * (math.log(w) - math.log(38)) / (math.log(83000) - math.log(38))

    # Highspeed moves up its table only in congestion avoidance, so a cut before any is Reno's halving:
    # the one ending slow start, and one after a timeout (seen in a suite run: 1272 -> 636, then
    # 318 -> 159).  Compared with the model: cuts from a window grown past the last cut's ssthresh
    # (20 s leave room for them), in the median, for a cut the kernel undid lets one halving through
    # (107 -> 54 undone, then 1420 -> 710, then three of 0.652-0.653 against 0.646).
    cuts = reductions(high)
    above = [(after / before, 1 - b(before)) for (_, last), (before, after) in itertools.pairwise(cuts)
             if before >= 200 and before > last]  # fmt: skip
    print({"cuts": cuts, "above": above, "below": backoffs(low, 10, 38)})
    assert len(above) >= 2, cuts
    assert statistics.median(r - model for r, model in above) == pytest.approx(0, abs=0.03), above
    assert statistics.median(r for r, _ in above) > 0.6  # cuts less than Reno
    assert median_backoff(low, 10, 38) == pytest.approx(0.5, abs=0.05)


# -- the increase -------------------------------------------------------------


def slow_start_steps(samples: Sequence[ProbeSample]) -> list[int]:
    """How much each ACK grew the window before the first reduction (tcp_probe samples one per ACK)."""
    steps = []
    for before, after in itertools.pairwise(samples):
        if after.ssthresh != before.ssthresh:
            break
        if after.snd_cwnd > before.snd_cwnd:
            steps.append(after.snd_cwnd - before.snd_cwnd)
    return steps


@pytest.mark.parametrize("lab_on", [(PathSpec.parse(rtt="201.5ms", rate="20mbit", queue="1000p"), ("hybla",))],
                         indirect=True)  # fmt: skip
def test_hybla_slow_start_grows_by_2_to_the_rtt_ratio_per_ack(
    lab_on: tuple[Lab, Ledger, dict[str, loader.LoadedAlgorithm]], tmp_path: Path
) -> None:
    """Hybla's slow start adds 2^rho - 1 segments per ACK, rho = RTT / rtt0 (Reno: 1 per segment ACKed);
    on a 201.5 ms path rho is 8 with the module's rtt0 of 25 ms, 4 with 50 ms, and 1 (Reno) with 200 ms.
    Hybla keeps rho in eighths, rounded down from srtt / rtt0, and takes 2^(k/8) from a table for
    the rest: at 200 ms an srtt just under 200 ms (under load the lab's RTT comes out up to ~0.1 ms
    short) made rho 7 7/8 and the step 233 = 2^7 x 234/128 - 1 (a suite run); 201.5 ms lies 1.5 ms
    above that edge and 1.6 ms below 8 1/8's (203.125 ms)."""
    lab, ledger, ports = lab_on
    steps = {}
    for rtt0, rho in ((25, 8), (50, 4), (200, 1)):
        ports["hybla"].set(rtt0=rtt0)
        found = slow_start_steps(trace(lab, ledger, tmp_path, "hybla", 3))
        assert found, rtt0
        steps[rho] = statistics.mode(found)
    print(steps)
    assert steps == {rho: 2**rho - 1 for rho in steps}


def slope(samples: Sequence[ProbeSample], t0: float, t1: float) -> float:
    """Least-squares growth of the window (segments per second) between t0 and t1."""
    points = [(s.time, s.snd_cwnd) for s in samples if t0 <= s.time <= t1]
    return statistics.linear_regression([t for t, _ in points], [w for _, w in points]).slope


@pytest.mark.parametrize("lab_on", [(PathSpec.parse(rtt="100ms", rate="20mbit", queue="200p"), ("htcp",))],
                         indirect=True)  # fmt: skip
def test_htcp_increase_grows_with_the_time_since_the_last_loss(
    lab_on: tuple[Lab, Ledger, dict[str, loader.LoadedAlgorithm]], tmp_path: Path
) -> None:
    lab, ledger, _ = lab_on
    samples = trace(lab, ledger, tmp_path, "htcp", 20)
    ratios = []
    for phase in epochs(samples):
        t0, t1 = phase[0].time, phase[-1].time
        if t1 - t0 >= 2.5:  # H-TCP's alpha is Reno's for the first second after a loss, then grows
            ratios.append(slope(phase, t1 - 1.0, t1) / max(slope(phase, t0, t0 + 1.0), 1e-9))
    print(ratios)
    assert len(ratios) >= 1, [round(p[-1].time - p[0].time, 2) for p in epochs(samples)]
    assert statistics.median(ratios) > 3


# -- the queue ----------------------------------------------------------------


@pytest.mark.parametrize("lab_on", [(DROPTAIL, ("vegas",))], indirect=True)
def test_vegas_keeps_between_alpha_and_beta_packets_queued(
    lab_on: tuple[Lab, Ledger, dict[str, loader.LoadedAlgorithm]], tmp_path: Path
) -> None:
    """Linux's Vegas measures its backlog as cwnd x (RTT - baseRTT) / baseRTT (the publication
    divides by RTT) and holds it between alpha and beta. Read here with the smoothed RTT, which lies
    above the per-round minimum Vegas uses: one packet's delay (1.2 ms at 10 Mbit/s) is about 1.3
    in diff at these windows, so the bounds are alpha - 1 and beta + 2 (measured: 4.4 and 12.7)."""
    lab, ledger, ports = lab_on
    samples = trace(lab, ledger, tmp_path, "vegas", 12)
    diff = statistics.median(queued(samples, after_s=3, over_base=True))
    print({"vegas diff": diff, "queued": statistics.median(queued(samples, after_s=3))})
    assert 2 - 1 <= diff <= 4 + 2  # the module's alpha = 2, beta = 4
    ports["vegas"].set(alpha=10, beta=12)  # a parameter changed while registered moves the queue
    samples = trace(lab, ledger, tmp_path, "vegas", 12)
    diff10 = statistics.median(queued(samples, after_s=3, over_base=True))
    print({"vegas diff, alpha 10, beta 12": diff10, "queued": statistics.median(queued(samples, after_s=3))})
    assert 10 - 1 <= diff10 <= 12 + 2


@pytest.mark.parametrize("lab_on", [(PathSpec.parse(rtt="40ms", rate="20mbit", queue="400p"), ("yeah",))],
                         indirect=True)  # fmt: skip
def test_yeah_leaves_its_fast_mode_and_drains_the_queue_reno_fills(
    lab_on: tuple[Lab, Ledger, dict[str, loader.LoadedAlgorithm]], tmp_path: Path
) -> None:
    lab, ledger, ports = lab_on
    q = {cc: statistics.median(queued(trace(lab, ledger, tmp_path, cc, 12), after_s=3)) for cc in ("reno", "yeah")}
    counters = ports["yeah"].counters()
    print(q, counters)
    assert q["reno"] > 150  # Reno fills most of the 400-packet buffer
    # YeAH's Q_max is 80 packets: above it, slow mode takes the queue out, once a round; the
    # estimate here (from the smoothed RTT, not YeAH's per-round minimum) sits above Q_max
    assert q["yeah"] < 1.5 * 80 and q["yeah"] < 0.6 * q["reno"]
    assert counters["fast_rounds"] > 0 and counters["slow_rounds"] > 0, counters  # it switched modes
