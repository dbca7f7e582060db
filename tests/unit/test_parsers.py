"""Parsers, on output captured from the real tools (tests/fixtures); ping's command line."""

from pathlib import Path

import pytest

from ground.parsers import ParseError, parse_iperf3_tcp, parse_iperf3_udp, parse_ping, parse_snmp, ping_argv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_ping_argv_is_the_one_the_lab_and_verification_run() -> None:
    """The address last (ping takes it after the options); a deadline or a reply wait only when asked."""
    assert ping_argv("10.0.0.2", 30, 0.01, deadline_s=3) == ["ping", "-n", "-c", "30", "-i", "0.01", "-w", "3",
                                                            "10.0.0.2"]  # fmt: skip
    assert ping_argv("10.0.0.2", 10, 0.02, reply_wait_s=1) == ["ping", "-n", "-c", "10", "-i", "0.02", "-W", "1",
                                                               "10.0.0.2"]  # fmt: skip
    assert ping_argv("10.0.0.2", 1, 0.05) == ["ping", "-n", "-c", "1", "-i", "0.05", "10.0.0.2"]


def test_ping_replies() -> None:
    result = parse_ping(fixture("ping_5_replies_10ms.txt"))
    assert result.transmitted == 5 and result.received == 5
    assert result.rtts_ms == [10.3, 10.3, 10.2, 10.1, 10.2]


def test_ping_counts_match_replies() -> None:
    result = parse_ping(fixture("ping_loss.txt"))
    assert len(result.rtts_ms) == result.received < result.transmitted == 60
    assert all(10.0 < r < 12.0 for r in result.rtts_ms)


def test_ping_without_statistics_is_an_error() -> None:
    with pytest.raises(ParseError):
        parse_ping("ping: connect: Network is unreachable\n")


def test_iperf3_tcp() -> None:
    result = parse_iperf3_tcp(fixture("iperf3_tcp_reverse.json"))
    assert result.goodput_bps == pytest.approx(3247352.1071643685, rel=1e-9)
    assert result.seconds == pytest.approx(3.0, abs=0.01)
    assert result.retransmits == 53


def test_iperf3_udp() -> None:
    result = parse_iperf3_udp(fixture("iperf3_udp_reverse.json"))
    assert (result.packets, result.lost) == (2513, 108)


def test_iperf3_error_document() -> None:
    with pytest.raises(ParseError, match="unable to connect"):
        parse_iperf3_tcp('{"start": {}, "error": "unable to connect to server: Connection refused"}')
    with pytest.raises(ParseError, match="not JSON"):
        parse_iperf3_udp("iperf3: error")


def test_snmp_udp_counters_by_name() -> None:
    """Captured in a namespace where 50 datagrams met a 4 KB receive buffer nobody read."""
    udp = parse_snmp(fixture("proc_net_snmp_rcvbuf_drops.txt"), "Udp")
    assert udp["OutDatagrams"] == 50
    assert udp["RcvbufErrors"] == 47
    assert udp["InDatagrams"] == 0


def test_snmp_without_the_protocol_is_an_error() -> None:
    with pytest.raises(ParseError, match="no Sctp"):
        parse_snmp(fixture("proc_net_snmp_rcvbuf_drops.txt"), "Sctp")
