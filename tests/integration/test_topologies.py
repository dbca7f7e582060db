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

import pytest

from ground.ledger import Ledger
from ground.parsers import IperfTcp, IperfUdp
from ground.path import PathSpec
from ground.units import Rate
from netrepro import verify
from servers.iperf import CrossTraffic
from topologies.lab import Lab
from topologies.topology import Topology, ideal_goodput

pytestmark = pytest.mark.root

DATAGRAM = 1400  # servers.iperf's UDP payload
SEED_004_SCENARIO_1 = ("client-r1:delay=200ms", "r1-r2:delay=250ms,rate=11mbit,queue=15p", "r2-server:delay=200ms")


@pytest.fixture(scope="module")
def ledger() -> Iterator[Ledger]:
    with Ledger() as run_ledger:
        yield run_ledger


def bulk(lab: Lab, client: str, server: str, seconds: int, work: Path, port: int) -> CrossTraffic:
    return CrossTraffic(lab.ns(client), lab.ns(server), lab.ip(server), lab.ledger, work, duration_s=seconds, port=port)


def test_dumbbell_shares_its_core_and_the_short_rtt_gets_more(ledger: Ledger, tmp_path: Path) -> None:
    topo = Topology.parse("dumbbell", rtts="40ms,120ms")
    path = PathSpec.parse(rate="20mbit", queue="100p")
    with Lab(path, ledger, shaper="delayline", cc="reno", topology=topo) as lab:
        checked = verify.verify(lab)
        by_name = {c.name: c for c in checked.checks}
        assert by_name["rtt"].ok and by_name["rtt"].desired == 40, by_name["rtt"].line()
        assert by_name["rtt_pair2"].ok and by_name["rtt_pair2"].desired == 120, by_name["rtt_pair2"].line()
        assert by_name["goodput"].ok, by_name["goodput"].line()

        seconds = 30
        flows = [bulk(lab, f"client{i}", f"server{i}", seconds, tmp_path, 5202 + i) for i in (1, 2)]
        for f in flows:
            f.start()
        try:
            results = [f.result() for f in flows]
        finally:
            for f in flows:
                f.stop()
    short, long = (r.goodput_bps for r in results if isinstance(r, IperfTcp))
    core = ideal_goodput(Rate(20e6)).bps
    print(f"dumbbell: 40 ms {short / 1e6:.2f}, 120 ms {long / 1e6:.2f}, total {(short + long) / 1e6:.2f} "
          f"of {core / 1e6:.2f} Mbit/s")  # fmt: skip
    assert abs(short + long - core) <= 0.05 * core, "together the two flows fill the core"
    assert short > 1.5 * long, "RTT unfairness: the 40 ms Reno flow gets more than the 120 ms one"


def test_chain_of_seed_004_alone_and_beside_udp(ledger: Ledger, tmp_path: Path) -> None:
    topo = Topology.parse("chain", cross=True, links=SEED_004_SCENARIO_1)
    with Lab(PathSpec(), ledger, shaper="delayline", cc="reno", topology=topo) as lab:
        rtt = verify.measure_rtt(verify.PairView(lab, lab.pairs[0]))
        assert rtt.desired == 1300 and rtt.ok, rtt.line()
        core = ideal_goodput(Rate(11e6)).bps

        alone = bulk(lab, "client", "server", 120, tmp_path, 5203).start()
        try:
            tcp_alone = alone.result()
        finally:
            alone.stop()

        udp = CrossTraffic(lab.ns("xreceiver"), lab.ns("xsender"), lab.ip("xsender"), lab.ledger, tmp_path,
                           duration_s=120, udp_rate=Rate(10e6), port=5204)  # fmt: skip
        tcp = bulk(lab, "client", "server", 120, tmp_path, 5205)
        udp.start()
        tcp.start()
        try:
            tcp_beside, udp_result = tcp.result(), udp.result()
        finally:
            tcp.stop()
            udp.stop()
    assert isinstance(tcp_alone, IperfTcp) and isinstance(tcp_beside, IperfTcp) and isinstance(udp_result, IperfUdp)
    # what the UDP flow delivered, as payload and as frames on the core (payload + UDP, IP, Ethernet)
    delivered = (udp_result.packets - udp_result.lost) * DATAGRAM * 8 / udp_result.seconds
    on_the_wire = delivered * (DATAGRAM + 8 + 20 + 14) / DATAGRAM
    print(f"chain: TCP alone {tcp_alone.goodput_bps / 1e6:.2f} Mbit/s of {core / 1e6:.2f}; beside UDP "
          f"{tcp_beside.goodput_bps / 1e6:.3f} Mbit/s, UDP delivered {delivered / 1e6:.2f} Mbit/s "
          f"({udp_result.lost} of {udp_result.packets} datagrams lost)")  # fmt: skip
    assert 0 < tcp_alone.goodput_bps <= core * 1.02
    left = ideal_goodput(Rate(max(0.0, 11e6 - on_the_wire))).bps
    assert tcp_beside.goodput_bps <= left + 0.2e6, "TCP gets at most what the UDP leaves (1 Mbit/s, less framing)"
    assert 8e6 < delivered <= 10.2e6, "the UDP rate delivered is measured, near what was sent"
