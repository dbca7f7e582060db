"""Workload parsers, on output captured from the real tools (tests/fixtures)."""

from pathlib import Path

import pytest

from servers.parsers import (
    ParseError,
    parse_curl_json,
    parse_duration_text,
    parse_h2load,
    parse_h2load_log,
    parse_pcap,
    request_to_last_byte,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_h2load_durations() -> None:
    assert parse_duration_text("909us") == pytest.approx(909e-6)
    assert parse_duration_text("51.17ms") == pytest.approx(0.05117)
    assert parse_duration_text("2.00s") == 2.0
    with pytest.raises(ParseError):
        parse_duration_text("2 min")


def test_h2load_page_over_h2c() -> None:
    s = parse_h2load(fixture("h2load_small_h2c.txt"))
    assert s.application_protocol == "h2c" and s.tls_protocol is None
    assert (s.requests_total, s.succeeded, s.failed, s.errored, s.status_2xx) == (31, 31, 0, 0, 31)
    assert s.bytes_data == 151_486  # the small page: 30 x 5,000 bytes and its HTML
    assert s.finished_in == pytest.approx(0.27465)
    assert s.connect is not None and s.connect.max == pytest.approx(0.05066)
    assert s.first_byte is not None and s.first_byte.min == pytest.approx(0.10194)


def test_h2load_page_over_tls() -> None:
    s = parse_h2load(fixture("h2load_small_h2_tls.txt"))
    assert (s.application_protocol, s.tls_protocol) == ("h2", "TLSv1.3")
    assert s.succeeded == 31 and s.bytes_data == 151_486


def test_h2load_fallback_is_visible() -> None:
    s = parse_h2load(fixture("h2load_fallback_h2_to_h1.txt"))
    assert s.application_protocol == "http/1.1"  # asked h2 over TLS; the server offered only HTTP/1.1
    assert s.succeeded == 1


def test_h2load_failed_requests() -> None:
    s = parse_h2load(fixture("h2load_h2c_refused_by_h1_server.txt"))
    assert (s.succeeded, s.failed, s.errored, s.bytes_data) == (0, 1, 1, 0)


def test_h2load_fixed_duration() -> None:
    s = parse_h2load(fixture("h2load_bulk_h2c_2s.txt"))
    assert s.finished_in == 2.0 and s.done == 0 and s.started == 1
    assert s.bytes_data == 4_273_454


def test_h2load_log_rows_in_start_order() -> None:
    rows = parse_h2load_log(fixture("h2load_small_h2c.log"))
    assert len(rows) == 31 and all(r.status == 200 for r in rows)
    assert [r.start_us for r in rows] == sorted(r.start_us for r in rows)
    span = max(r.end_us for r in rows) - rows[0].start_us
    assert span == 223_547  # the page load time h2load measured, in microseconds
    with pytest.raises(ParseError):
        parse_h2load_log("1795295471675431\tOK\n")


def test_h2load_garbage() -> None:
    with pytest.raises(ParseError):
        parse_h2load("connect to 10.0.0.2 port 80 failed: Connection refused\n")


def test_curl_json() -> None:
    h1 = parse_curl_json(fixture("curl_37000_h1.json"))
    assert (h1.http_version, h1.response_code, h1.size_download) == ("1.1", 200, 37_000)
    assert 0 < h1.time_connect < h1.time_pretransfer < h1.time_starttransfer < h1.time_total
    assert h1.time_appconnect == 0
    tls = parse_curl_json(fixture("curl_37000_h2_tls.json"))
    assert tls.http_version == "2" and tls.time_appconnect > tls.time_connect
    assert parse_curl_json(fixture("curl_fallback_h2_to_h1.json")).http_version == "1.1"
    with pytest.raises(ParseError):
        parse_curl_json("curl: (7) Failed to connect")


def test_pcap_of_a_page_load() -> None:
    packets = parse_pcap((FIXTURES / "tcpdump_small_h2c.pcap").read_bytes())
    assert len(packets) == 218  # tcpdump_small_h2c.log: 218 packets captured
    assert packets[0].flags & 0x02 and packets[0].dst == "10.0.0.2" and packets[0].dport == 80  # the SYN
    sent = sum(p.payload for p in packets if p.src == "10.0.0.2")
    assert sent > 151_486  # bodies plus HTTP/2 framing
    first, last = request_to_last_byte(packets, "10.0.0.2", 80)
    # The same trial's h2load log gave 223.547 ms; the capture sees the same span.
    assert (last - first) * 1e3 == pytest.approx(223.5, abs=1.0)


def test_pcap_refuses_other_files() -> None:
    with pytest.raises(ParseError):
        parse_pcap(b"not a capture at all, not at all")
