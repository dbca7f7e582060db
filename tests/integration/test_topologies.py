"""The dumbbell and the chain on this kernel, with the delay line: their RTTs, their
bottleneck, and the physics many flows through one bottleneck must show (issue 14).

- dumbbell: two Reno pairs of RTT 40 ms and 120 ms through a 20 Mbit/s core.
  Together they fill the core (within 5 % of rate x 1448/1514); the short
  round trip takes more than the long one (Reno's window grows one segment
  per RTT, so its rate goes as 1/RTT or faster).
- chain: seed 004's scenario 1 (200/250/200 ms one way, RTT 1.3 s; 11 Mbit/s
  core with a 15-packet queue).  A bulk flow over 120 s gets no more than the
  core; beside 10 Mbit/s of UDP entering at the routers it gets no more than
  what is left, and the UDP rate delivered is measured.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ground.ledger import Ledger
from ground.path import PathSpec
from ground.units import Rate
from netrepro import verify
from netrepro.session import Session
from netrepro.workloads import WORKLOADS
from topologies.lab import Lab
from topologies.topology import Topology, ideal_goodput

pytestmark = pytest.mark.root

DATAGRAM = 1400  # servers.iperf's UDP payload
SEED_004_SCENARIO_1 = ("client-r1:delay=200ms", "r1-r2:delay=250ms,rate=11mbit,queue=15p", "r2-server:delay=200ms")


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    with Ledger() as run_ledger:
        yield run_ledger


def competing(lab: Lab, ledger: Ledger, work: Path, **params: object) -> dict[str, Any]:
    """The `competing` workload, as a figure's trial runs it."""
    session = Session(lab, ledger, work, results_dir=None)
    try:
        session.apply_hosts(params)
        return WORKLOADS["competing"](session, params)
    finally:
        session.stop()


def test_dumbbell_shares_its_core_and_the_short_rtt_gets_more(ledger: Ledger, tmp_path: Path) -> None:
    topo = Topology.parse("dumbbell", rtts="40ms,120ms")
    path = PathSpec.parse(rate="20mbit", queue="100p")
    with Lab(path, ledger, shaper="delayline", cc="reno", topology=topo) as lab:
        checked = verify.verify(lab)
        by_name = {c.name: c for c in checked.checks}
        assert by_name["rtt"].ok and by_name["rtt"].desired == 40, by_name["rtt"].line()
        assert by_name["rtt_pair2"].ok and by_name["rtt_pair2"].desired == 120, by_name["rtt_pair2"].line()
        assert by_name["goodput"].ok, by_name["goodput"].line()
        m = competing(lab, ledger, tmp_path, cc="reno", duration_s=30, window_s=10)
    short, long = (float(g) * 1e6 for g in m["flow_goodputs_mbit"].split(";"))
    core = ideal_goodput(Rate(20e6)).bps
    print(f"dumbbell: {m}")
    assert abs(short + long - core) <= 0.05 * core, "together the two flows fill the core"
    assert short > 1.5 * long, "RTT unfairness: the 40 ms Reno flow gets more than the 120 ms one"
    assert m["jain_index"] == pytest.approx((short + long) ** 2 / (2 * (short**2 + long**2)), abs=1e-3)
    assert m["bottleneck_drops"] > 0, "two Reno flows overflow a 100-packet queue"
    assert all(float(g) > 0 for g in m["flow_first_window_mbit"].split(";"))


def test_chain_of_seed_004_alone_and_beside_udp(ledger: Ledger, tmp_path: Path) -> None:
    topo = Topology.parse("chain", cross=True, links=SEED_004_SCENARIO_1)
    with Lab(PathSpec(), ledger, shaper="delayline", cc="reno", topology=topo) as lab:
        rtt = verify.measure_rtt(verify.PairView(lab, lab.pairs[0]))
        assert rtt.desired == 1300 and rtt.ok, rtt.line()
        alone = competing(lab, ledger, tmp_path, cc="reno", duration_s=60)
        beside = competing(lab, ledger, tmp_path, cc="reno", duration_s=60, cross_rate="10mbit")
    core = ideal_goodput(Rate(11e6)).bps
    print(f"chain: alone {alone}; beside UDP {beside}")
    assert 0 < alone["goodput_mbit"] * 1e6 <= core * 1.02
    # what the UDP flow delivered, as payload and as frames on the core (payload + UDP, IP, Ethernet)
    delivered = beside["cross_delivered_mbit"] * 1e6
    on_the_wire = delivered * (DATAGRAM + 8 + 20 + 14) / DATAGRAM
    left = ideal_goodput(Rate(max(0.0, 11e6 - on_the_wire))).bps
    assert beside["goodput_mbit"] * 1e6 <= left + 0.2e6, "TCP gets at most what the UDP leaves (1 Mbit/s, less framing)"
    assert 8e6 < delivered <= 10.2e6, "the UDP rate delivered is measured, near what was sent"
