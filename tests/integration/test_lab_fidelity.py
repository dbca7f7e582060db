"""The lab's path, measured with real tools, is what was asked for.

Three points of the issue's acceptance: 3 Mbit/s with 100 ms; 100 Mbit/s with
20 ms; 10 Mbit/s with 50 ms and 2 % loss.  The tolerances are the lab's own
(netrepro.runner.verify): median RTT within max(1 %, 0.5 ms), goodput within 5 % of
rate x 1448/1514, loss inside the 99 % binomial interval.
"""

import itertools
import re
import time

import pytest

from ground.ledger import Ledger
from ground.parsers import parse_ping
from ground.path import PathSpec
from ground.proc import Process, run
from netrepro.runner.verify import measure_loss, verify
from topologies.lab import Lab

pytestmark = pytest.mark.root


@pytest.mark.parametrize(
    ("rtt", "rate", "loss"),
    [("100ms", "3mbit", "0%"), ("20ms", "100mbit", "0%"), ("50ms", "10mbit", "2%")],
)
def test_path_is_within_tolerance(rtt: str, rate: str, loss: str) -> None:
    path = PathSpec.parse(rtt=rtt, rate=rate, loss=loss)
    with Ledger() as ledger, Lab(path, ledger, seed=11) as lab:
        result = verify(lab)
        backend = lab.backend
    report = "\n".join(c.line() for c in result.checks)
    assert result.ok, f"{path} via {backend}:\n{report}"
    assert {c.name for c in result.checks} == {"rtt", "goodput", "loss_down"}


def test_reconfigure_in_place_changes_the_path() -> None:
    """A new level (here the RTT, the rate, and the buffer from packets to bytes, a leaf of another kind,
    as an AQM's is) applies without rebuilding the lab."""
    first = PathSpec.parse(rtt="10ms", rate="20mbit")
    with Ledger() as ledger, Lab(first, ledger) as lab:
        pid_before = lab.net["client"].pid
        lab.reconfigure(PathSpec.parse(rtt="40ms", rate="5mbit", queue="75000b"))
        assert lab.bottleneck_queue().kind == "bfifo"
        result = verify(lab)
        assert lab.net["client"].pid == pid_before
    report = "\n".join(c.line() for c in result.checks)
    assert result.ok, report
    assert result.checks[0].desired == 40.0


def test_after_a_longer_delay_the_next_packets_meet_the_new_one() -> None:
    """A trial after one on a longer path starts on the new path: its first packet does not wait
    behind what the old path still held.  (fig5a's shuffled trials once measured handshakes of
    up to 1.4 s at a 20 ms RTT: the SYN queued behind the last ACKs of a 3 s trial, and was sent again.)"""
    with Ledger() as ledger, Lab(PathSpec.parse(rtt="2000ms", rate="20mbit"), ledger) as lab:
        # an echo request held for a second on the way out, as the last packets of a trial are
        earlier = Process(["ping", "-n", "-c", "1", "-W", "5", lab.ip("server")], lab.client, ledger=ledger)
        try:
            time.sleep(0.2)
            lab.reconfigure(PathSpec.parse(rtt="20ms", rate="20mbit"))
            out = run(["ping", "-n", "-c", "3", "-i", "0.2", "-W", "3", lab.ip("server")], lab.client,
                      check=False, timeout=20).stdout  # fmt: skip
        finally:
            earlier.stop()
    rtts = parse_ping(out).rtts_ms
    assert len(rtts) == 3 and max(rtts) < 25, out  # 20 ms each, none behind the old request (800 ms)


def test_jitter_spreads_the_delay_and_keeps_the_packets_in_order() -> None:
    """+-5 ms on each stage: the round trip spreads as the model says (verification's own check),
    and echo requests 2 ms apart, whose draws overlap, still come back in the order they left."""
    path = PathSpec.parse(rtt="100ms", rate="3mbit", jitter="5ms")
    with Ledger() as ledger, Lab(path, ledger, shaper="delayline") as lab:
        result = verify(lab)
        out = run(["ping", "-n", "-c", "300", "-i", "0.002", "-W", "2", lab.ip("server")], lab.client,
                  check=False, timeout=30).stdout  # fmt: skip
    report = "\n".join(c.line() for c in result.checks)
    assert result.ok and "jitter" in {c.name for c in result.checks}, report
    jitter = next(c for c in result.checks if c.name == "jitter")
    assert jitter.desired == pytest.approx(5 * (2 / 3) ** 0.5, abs=0.01) and jitter.measured > 2.5, report
    seqs = [int(m) for m in re.findall(r"icmp_seq=(\d+)", out)]
    assert len(seqs) >= 290, out[-500:]
    assert seqs == sorted(seqs), f"reordered: {[(a, b) for a, b in itertools.pairwise(seqs) if b < a][:5]}"
    rtts = parse_ping(out).rtts_ms
    assert max(rtts) - min(rtts) > 10, "2 ms apart, the draws of +-5 ms (twice) show in the spread"


def test_loss_is_seeded_and_reproducible() -> None:
    """Same seed, same packets: the same datagrams are lost."""
    counts = []
    for _ in range(2):
        path = PathSpec.parse(rtt="2ms", rate="20mbit", loss="5%")
        with Ledger() as ledger, Lab(path, ledger, seed=42) as lab:
            assert lab.stage is not None
            check = measure_loss(lab, "down", seconds=2)
            counts.append((check.detail["datagrams"], check.detail["lost"]))
    assert counts[0][1] > 0
    # iperf3 paces by time, so the datagram count can differ by a few; the
    # drop pattern is fixed by the seed, so the loss counts track each other.
    assert abs(counts[0][1] - counts[1][1]) <= max(3, 0.05 * counts[0][1])
