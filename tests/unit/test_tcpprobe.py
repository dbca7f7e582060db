"""The tcp_probe parser, on trace output captured from this kernel."""

import os
from ipaddress import IPv4Network
from pathlib import Path

import pytest

from ground.ledger import Ledger
from ground.tcpprobe import ProbeSample, TcpProbe, event_filter, parse_line, within

TRACE = Path(__file__).resolve().parent.parent / "fixtures" / "tcp_probe_trace.txt"


def test_every_event_line_parses_and_headers_do_not() -> None:
    lines = TRACE.read_text().splitlines()
    events = [line for line in lines if "tcp_probe:" in line]
    parsed = [parse_line(line) for line in events]
    assert len(events) == 60 and all(p is not None for p in parsed)
    assert all(parse_line(line) is None for line in lines if line.startswith("#"))


def test_fields() -> None:
    first = next(p for p in map(parse_line, TRACE.read_text().splitlines()) if p is not None)
    assert first == ProbeSample(
        time=764.887000,
        flow="10.0.0.2:5201>10.0.0.1:55326",
        snd_cwnd=10,
        ssthresh=2147483647,
        srtt_us=20124,
        snd_una=0x7E0D0F68,
        snd_nxt=0x7E0D0F68,
        data_len=37,
    )


def test_a_loss_shows_as_a_finite_ssthresh() -> None:
    samples = [p for p in map(parse_line, TRACE.read_text().splitlines()) if p is not None]
    assert any(s.ssthresh < 2147483647 for s in samples)


def test_the_kernel_filter_keeps_ipv4_segments_of_the_ports() -> None:
    assert event_filter([80]) == "family == 2 && (sport == 80 || dport == 80)"
    assert event_filter([80, 443]) == "family == 2 && (sport == 80 || dport == 80 || sport == 443 || dport == 443)"
    with pytest.raises(ValueError, match="ports to filter on"):
        event_filter([])


LAB = IPv4Network("10.0.0.0/24")  # the fixture's lab


def test_a_sample_is_the_labs_when_both_its_ends_are_in_the_labs_subnet() -> None:
    sample = next(p for p in map(parse_line, TRACE.read_text().splitlines()) if p is not None)
    assert within(sample, LAB)
    assert not within(sample, IPv4Network("10.0.1.0/24"))
    half = ProbeSample(1.0, "10.0.0.2:5201>10.9.0.1:55326", 10, 1, 1, 0, 0, 0)
    assert not within(half, LAB)
    assert not within(ProbeSample(1.0, "[::1]:5201>[::1]:55326", 10, 1, 1, 0, 0, 0), LAB)


def test_the_capture_keeps_only_its_labs_addresses(tmp_path: Path) -> None:
    """Another lab's flow on the same port (same events but for the addresses) is left out as it is read."""
    events = [line for line in TRACE.read_text().splitlines() if "tcp_probe:" in line]
    other = [line.replace("10.0.0.", "10.0.1.") for line in events]
    read, write = os.pipe()
    os.write(write, ("\n".join(line for pair in zip(events, other, strict=True) for line in pair) + "\n").encode())
    os.close(write)
    with Ledger(tmp_path, contain=False) as ledger:
        probe = TcpProbe(ledger, [5201], network=LAB)
        try:
            probe._drain(read)
        finally:
            for fd in (read, probe._wake_r, probe._wake_w):
                os.close(fd)
    assert len(probe.samples) == len(events) == 60
    assert all(s.flow.startswith("10.0.0.") for s in probe.samples)
