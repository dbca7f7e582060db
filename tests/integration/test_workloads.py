"""The HTTP workloads end to end in the lab: pages, one download per initcwnd, bursts, bulk beside cross traffic.

Each test brings up its own lab and server and must leave the machine as it
found it (the autouse fixture in conftest.py checks).  Numbers are printed
(`pytest -s`) so that a run shows what it measured.
"""

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ground.ledger import Ledger
from ground.parsers import IperfTcp, IperfUdp
from ground.path import FRAME, MSS, PathSpec
from ground.tcpprobe import TcpProbe
from ground.units import Rate
from servers import bursts, clients, content
from servers.apache import Apache, ApacheError
from servers.capture import PacketCapture
from servers.clients import ProtocolMismatch, WorkloadError
from servers.hosttcp import HostTcp, apply_host_tcp, read_route_metrics, route_device
from servers.iperf import CrossTraffic
from servers.parsers import request_to_last_byte
from topologies import shaping
from topologies.lab import Lab

pytestmark = pytest.mark.root

PATH = PathSpec.parse(rtt="50ms", rate="20mbit")


@dataclass
class Bench:
    lab: Lab
    ledger: Ledger
    server: Apache
    address: str  # the server's
    client_address: str


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    with Ledger() as ledger, Lab(PATH, ledger) as lab:
        server = Apache(lab.server, lab.ip("server"), ledger, results_dir=tmp_path / "results")
        yield Bench(lab, ledger, server, lab.ip("server"), lab.ip("client"))
        server.stop()


def wire_time(body_bytes: int, rate: Rate) -> float:
    """The least time `body_bytes` of TCP payload take through the bottleneck (full-sized frames):
    at its rate, but for the burst the bottleneck's HTB passes at once after an idle period."""
    return max(0, math.ceil(body_bytes / MSS) * FRAME - shaping.burst_bytes(rate)) * 8 / rate.bps


def test_small_page_over_http2_and_http1(bench: Bench, tmp_path: Path) -> None:
    page = content.write_page(bench.server.docroot, "small")
    rtt, transfer = PATH.rtt.seconds, wire_time(page.total_bytes, PATH.rate_down)
    dev = route_device(bench.lab.client, bench.address)
    with bench.server:
        for protocol in ("h2c", "h2", "http/1.1"):
            tls = protocol == "h2"
            port = 443 if tls else 80
            name = protocol.replace("/", "")
            with PacketCapture(bench.lab.client, dev, tmp_path / f"{name}.pcap", port, bench.ledger) as capture:
                load = clients.load_page(
                    bench.lab.client, bench.address, page, protocol, tmp_path / name, ledger=bench.ledger
                )
            first, last = request_to_last_byte(capture.packets, bench.address, port, tls=tls)
            syn = min(p.time for p in capture.packets if p.flags & 0x02)
            print(
                f"\n{protocol:8} negotiated {load.negotiated:8} over {load.connections} connection(s): "
                f"PLT {load.page_load_time * 1e3:.2f} ms (capture {(last - first) * 1e3:.2f} ms, "
                f"request starts {(first - load.first_request_epoch) * 1e3:+.2f} ms apart), "
                f"from SYN {(last - syn) * 1e3:.2f} ms; physics >= {(rtt + transfer) * 1e3:.1f} ms "
                f"(from SYN >= {((3 if tls else 2) * rtt + transfer) * 1e3:.1f} ms); "
                f"{load.throughput_bps / 1e6:.2f} Mbit/s"
            )
            assert load.negotiated == protocol
            assert load.bytes == page.total_bytes and len(load.objects) == len(page.resources)
            # Not less than the physics allows: a request's round trip plus the bytes at the bottleneck rate...
            assert load.page_load_time >= rtt + transfer
            # ...and, counting the handshakes (TCP, and TLS 1.3's one round trip), one or two RTTs more.
            assert last - syn >= (3 if tls else 2) * rtt + transfer
            assert load.page_load_time < 3 * rtt + 3 * transfer, "no more than a few slow-start rounds"
            # h2load's clock and the kernel's packet timestamps agree within a few milliseconds: where h2load's
            # page ends (its first request's epoch plus its PLT) and the capture's last response byte...
            assert abs(load.first_request_epoch + load.page_load_time - last) < 0.003
            # ...and where it starts. In clear text the first client payload is the request. Over TLS it is
            # the client's Finished, which the request follows at once or a little later (CI: h2load stamped
            # its request 3.31 ms after the Finished left), never a round trip later.
            if tls:
                assert -rtt / 2 < first - load.first_request_epoch < 0.003
            else:
                assert abs(first - load.first_request_epoch) < 0.003


def test_first_flight_equals_initcwnd(bench: Bench) -> None:
    response = content.write_object(bench.server.docroot, 37_000)
    apply_host_tcp(bench.lab.client, HostTcp(initrwnd=64), bench.address, bench.ledger)
    with bench.server:
        for initcwnd in (3, 10, 26, 42):
            apply_host_tcp(bench.lab.server, HostTcp(initcwnd=initcwnd), bench.client_address, bench.ledger)
            assert read_route_metrics(bench.lab.server, bench.client_address)["initcwnd"] == initcwnd
            with TcpProbe(bench.ledger, [80], network=bench.lab.subnet) as probe:
                download = clients.download(bench.lab.client, bench.address, response.path, "http/1.1")
                time.sleep(2 * PATH.rtt.seconds)  # the last ACKs are still on their way to the server
            server = [s for s in probe.samples if s.flow.startswith(f"{bench.address}:80>")]
            # The first event on the server's socket is the first ACK of the response, taken before
            # the ACK is processed: snd_nxt - snd_una is everything sent in the first round trip.
            first = server[0]
            in_flight = (first.snd_nxt - first.snd_una) % 2**32
            segments = math.ceil(in_flight / MSS)
            response_bytes = max(s.snd_nxt for s in server) - first.snd_una  # headers and body
            whole = math.ceil(response_bytes / MSS)  # 26 segments for this response
            rounds = next(r for r in range(1, 20) if initcwnd * (2**r - 1) >= whole)
            model = (1 + rounds) * PATH.rtt.seconds + wire_time(download.size, PATH.rate_down)
            print(
                f"\ninitcwnd {initcwnd:2}: cwnd {first.snd_cwnd}, first flight {segments} segments "
                f"({in_flight} bytes), download {download.total * 1e3:.1f} ms (model {model * 1e3:.1f} ms)"
            )
            assert first.snd_cwnd == initcwnd
            assert segments == min(initcwnd, whole)
            assert download.negotiated == "1.1" and download.size == 37_000
            assert download.total == pytest.approx(model, rel=0.15)


def test_bursts_after_idle_periods(bench: Bench) -> None:
    burst = content.write_object(bench.server.docroot, 80_000)
    plan = [(burst.path, 0.0), (burst.path, 1.0), (burst.path, 1.0)]
    completion = {}
    with bench.server:
        for after_idle in (True, False):
            apply_host_tcp(
                bench.lab.server,
                HostTcp(initcwnd=10, slow_start_after_idle=after_idle),
                bench.client_address,
                bench.ledger,
            )
            series = bursts.run_bursts(bench.lab.client, bench.address, plan)
            times = [b.completion_time for b in series.bursts]
            print(
                f"\ntcp_slow_start_after_idle={int(after_idle)}: "
                + ", ".join(
                    f"{b.size} B after {b.idle_before:.3f} s idle in {b.completion_time * 1e3:.1f} ms"
                    for b in series.bursts
                )
            )
            assert series.negotiated == "1.1" and len({b.local_port for b in series.bursts}) == 1
            assert all(b.size == 80_000 for b in series.bursts)
            assert [round(b.idle_before, 1) for b in series.bursts[1:]] == [1.0, 1.0]
            # (2 % for timer slack)
            assert min(times) >= 0.98 * (PATH.rtt.seconds + wire_time(80_000, PATH.rate_down))
            completion[after_idle] = times
    # An idle second is longer than the RTO: with slow start after idle, each burst starts again
    # from the initial window; without it, the window the first burst opened carries the next.
    assert min(completion[True][1:]) > 1.5 * max(completion[False][1:])


def test_bulk_beside_udp_and_tcp_cross_traffic(bench: Bench, tmp_path: Path) -> None:
    big = content.write_object(bench.server.docroot, 60_000_000)
    udp_rate = Rate(5e6)
    apply_host_tcp(bench.lab.client, HostTcp(receive_buffer=6 * 6_291_456), bench.address, bench.ledger)
    with bench.server:
        with CrossTraffic(
            bench.lab.client, bench.lab.server, bench.address, bench.ledger, tmp_path, duration_s=5, udp_rate=udp_rate
        ) as udp:
            bulk = clients.run_bulk(bench.lab.client, bench.address, big.path, "h2c", duration_s=4)
            received = udp.result()
        assert isinstance(received, IperfUdp)
        # What the UDP flow leaves of the bottleneck, as TCP payload (UDP frames: 1400 + 42 bytes).
        left = (PATH.rate_down.bps - udp_rate.bps * 1442 / 1400) * MSS / FRAME
        print(
            f"\nbulk {bulk.protocol} over {bulk.connections} connection: {bulk.throughput_bps / 1e6:.2f} Mbit/s "
            f"in {bulk.seconds:.2f} s beside UDP at {udp_rate}: {received.packets} datagrams, {received.lost} lost; "
            f"room left {left / 1e6:.2f} Mbit/s"
        )
        assert bulk.negotiated == "h2c"
        assert received.packets > 0
        assert received.lost / received.packets < 0.05
        assert 0.75 * left < bulk.throughput_bps < 1.03 * left

        with CrossTraffic(
            bench.lab.client, bench.lab.server, bench.address, bench.ledger, tmp_path, duration_s=4
        ) as tcp:
            six = clients.run_bulk(bench.lab.client, bench.address, big.path, "http/1.1", duration_s=3)
            competing = tcp.result()
        assert isinstance(competing, IperfTcp)
        ideal = PATH.ideal_goodput_down.bps
        print(
            f"bulk http/1.1 over {six.connections} connections: {six.throughput_bps / 1e6:.2f} Mbit/s beside "
            f"one TCP flow: {competing.goodput_bps / 1e6:.2f} Mbit/s (bottleneck goodput {ideal / 1e6:.2f} Mbit/s)"
        )
        assert six.negotiated == "http/1.1" and six.connections == 6
        assert 0.2 * ideal < six.throughput_bps < 1.03 * ideal and competing.goodput_bps > 0
        # Together they carried no more than the bottleneck can in the 4 s the competing flow ran.
        assert six.bytes * 8 + competing.goodput_bps * competing.seconds < 1.03 * ideal * competing.seconds


def test_a_silent_fallback_fails_the_trial(tmp_path: Path) -> None:
    results = tmp_path / "results"
    with Ledger() as ledger, Lab(PATH, ledger) as lab:
        address = lab.ip("server")
        server = Apache(lab.server, address, ledger, http2=False, results_dir=results)
        page = content.write_page(server.docroot, "tiny")
        obj = content.write_object(server.docroot, 37_000)
        with pytest.raises(ProtocolMismatch, match="asked for h2, negotiated http/1.1"), server:
            clients.load_page(lab.client, address, page, "h2", tmp_path / "h2", ledger=ledger)
        assert (results / "apache-error.log").exists(), "the failed trial keeps the server's error log"
        with server:
            with pytest.raises(ProtocolMismatch, match="negotiated HTTP/1.1"):
                clients.download(lab.client, address, obj.path, "h2", cacert=server.config.cert_file)
            with pytest.raises(WorkloadError, match="succeeded"):
                clients.load_page(lab.client, address, page, "h2c", tmp_path / "h2c", ledger=ledger)
            assert clients.download(lab.client, address, obj.path, "http/1.1").negotiated == "1.1"


def test_a_server_that_cannot_start_says_why(tmp_path: Path) -> None:
    with Ledger() as ledger, Lab(PATH, ledger) as lab:
        # An address the server host does not have: the configuration is valid, the bind fails.
        server = Apache(lab.server, "10.0.0.99", ledger, results_dir=tmp_path)
        with pytest.raises(ApacheError, match="could not bind"):
            server.start()
        assert server.process is None
    assert (tmp_path / "apache-error.log").read_text().count("could not bind") >= 1
    assert not server.config.run_dir.exists(), "the ledger removed the run directory"
