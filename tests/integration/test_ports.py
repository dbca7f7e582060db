"""The BPF ports of the kernel's congestion controls on this kernel (kmod/bpf/port.h).

This kernel has none of the eleven as a module or built in, so each port
registers under the kernel's own name.  All eleven carry a flow through one
lab at the same time (20 s, one iperf3 flow each), which the kernel's socket
table must show running under each port's name; then the run's ledger
unregisters them and nothing of them is left.
"""

import time
from pathlib import Path

import pytest

from ground import kernel
from ground.ledger import Ledger
from ground.parsers import parse_iperf3_tcp
from ground.path import PathSpec
from ground.proc import run
from ground.undo import struct_ops_names
from kmod import loader
from servers.iperf import CrossTraffic
from topologies.lab import Lab

pytestmark = pytest.mark.root

SECONDS = 20


def sockets_by_algorithm(lab: Lab) -> dict[str, int]:
    """Established TCP sockets on the server, counted by the congestion control `ss -ti` names."""
    counts: dict[str, int] = {}
    out = run(["ss", "-tiHn", "state", "established"], lab.server).stdout
    for word in out.split():
        if word in loader.PORTS:
            counts[word] = counts.get(word, 0) + 1
    return counts


def test_every_port_registers_carries_a_flow_through_the_lab_and_goes_away(tmp_path: Path) -> None:
    before = kernel.congestion_controls()
    path = PathSpec.parse(rtt="40ms", rate="20mbit", queue="100p")
    goodput: dict[str, float] = {}
    with Ledger() as ledger, Lab(path, ledger, seed=1) as lab:
        ports = {name: loader.load(name, ledger, "bpf") for name in loader.PORTS}
        for name, port in ports.items():
            assert port.registered == name, "this kernel has none of them: each runs under the kernel's name"
            values = port.read()
            assert values["set"] == 1 and values["ss_repairs"] == 0, (name, values)
            assert {p.name: values[p.name] for p in port.variant.params} == {
                p.name: p.default for p in port.variant.params
            }, name
        flows = {
            name: CrossTraffic(
                lab.client, lab.server, lab.ip("server"), ledger, tmp_path, duration_s=SECONDS, port=5300 + i, cc=name
            )  # fmt: skip
            for i, name in enumerate(ports)
        }
        try:
            for flow in flows.values():
                flow.start()
            time.sleep(SECONDS / 2)
            running = sockets_by_algorithm(lab)
            for name, flow in flows.items():
                goodput[name] = parse_iperf3_tcp(flow.report()).goodput_bps / 1e6
        finally:
            for flow in flows.values():
                flow.stop()
        conns = {name: port.counters()["conns"] for name, port in ports.items()}
    print({name: round(mbps, 2) for name, mbps in goodput.items()})
    assert set(running) == set(loader.PORTS), running
    assert all(n >= 1 for n in conns.values()), conns
    assert all(mbps > 0.1 for mbps in goodput.values()), goodput
    assert sum(goodput.values()) == pytest.approx(20 * 0.96, rel=0.1), goodput
    assert kernel.congestion_controls() == before
    assert not set(loader.PORTS) & struct_ops_names()
