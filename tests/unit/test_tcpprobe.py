"""The tcp_probe parser, on trace output captured from this kernel."""

from pathlib import Path

from ground.tcpprobe import ProbeSample, parse_line, port_filter

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


def test_port_filter() -> None:
    assert port_filter([80]) == "sport == 80 || dport == 80"
    assert port_filter([80, 443]) == "sport == 80 || dport == 80 || sport == 443 || dport == 443"
