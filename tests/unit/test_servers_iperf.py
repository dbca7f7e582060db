"""The iperf3 commands: cross traffic, and the bulk flows of the congestion-control traces."""

from ground.units import Rate
from servers.iperf import iperf3_client_argv


def test_cross_traffic_commands() -> None:
    udp = iperf3_client_argv("10.0.0.2", 5202, 6, udp_rate=Rate(5e6))
    assert udp[:8] == ["iperf3", "-c", "10.0.0.2", "-p", "5202", "-R", "-J", "-t"]
    assert udp[udp.index("-b") + 1] == "5000000" and "-u" in udp
    assert "-u" not in iperf3_client_argv("10.0.0.2", 5203, 6)
    tcp = iperf3_client_argv("10.0.0.2", 5201, 30, cc="cubic_plus")
    assert tcp[tcp.index("-C") + 1] == "cubic_plus"
    assert "-C" not in iperf3_client_argv("10.0.0.2", 5201, 30)
