"""Bursts after idle periods, read from synthetic traces: the windows, the first flights, the model."""

import pytest

from ground.tcpprobe import ProbeSample
from servers import burst_trace
from servers.parsers import Packet

SERVER, CLIENT = "10.0.0.2", "10.0.0.1"
FLOW = f"{SERVER}:80>{CLIENT}:40000"


def sample(t: float, cwnd: int, nxt: int) -> ProbeSample:
    return ProbeSample(t, FLOW, cwnd, 2**31 - 1, 200_000, nxt - 1448, nxt, 0)


def test_split_at_idle_takes_the_longest_gaps() -> None:
    times = [0.0, 0.2, 0.4, 1.5, 1.9, 2.3, 3.9, 4.0]  # an RTO-like 0.4 s gap inside a burst
    assert burst_trace.split_at_idle(times, 3) == [(0, 3), (3, 6), (6, 8)]
    with pytest.raises(burst_trace.BurstTraceError, match="cannot hold 9 bursts"):
        burst_trace.split_at_idle(times, 9)


def test_resumed_windows_reads_the_window_at_the_first_ack_after_idle() -> None:
    samples = [
        sample(0.0, 10, 1000), sample(0.2, 20, 5000), sample(0.4, 40, 9000),  # a burst: the window opens
        sample(2.4, 40, 9000),  # the request after 2 s idle: the window is still 40
        sample(2.6, 3, 13000),  # the response's first ACK: it went out with a restarted window of 3
        sample(2.8, 6, 17000),
    ]  # fmt: skip
    (w,) = burst_trace.resumed_windows(samples, 2)
    assert (w.idle_s, w.cwnd_before, w.cwnd_resumed) == (2.0, 40, 3)


def test_resumed_windows_refuses_a_burst_without_an_ack() -> None:
    samples = [sample(0.0, 10, 1000), sample(2.0, 10, 1000)]
    with pytest.raises(burst_trace.BurstTraceError, match="no ACK of its response"):
        burst_trace.resumed_windows(samples, 2)


def data(t: float, seq: int) -> Packet:
    return Packet(t, SERVER, 80, CLIENT, 40000, 0x10, seq, 1448)


def ack(t: float) -> Packet:
    return Packet(t, CLIENT, 40000, SERVER, 80, 0x10, 1, 0)


def test_burst_departures_first_flight_and_retransmissions() -> None:
    packets = [
        data(0.0, 1), data(0.001, 1449), ack(0.2), data(0.2, 2897),  # burst 1: a first flight of two
        Packet(1.5, CLIENT, 40000, SERVER, 80, 0x18, 1, 100),  # the next request (data: not an ACK)
        data(1.6, 4345), data(1.7, 5793), data(1.8, 7241),  # burst 2, paced over 0.2 s
        ack(1.8001), data(2.0, 5793),  # one segment sent again
    ]  # fmt: skip
    first, second = burst_trace.burst_departures(packets, SERVER, 80, 2)
    assert (first.segments, first.first_flight, first.retransmitted) == (3, 2, 0)
    assert first.first_flight_s == pytest.approx(0.001)
    assert (second.segments, second.first_flight, second.retransmitted) == (4, 3, 1)
    assert second.first_flight_s == pytest.approx(0.2)
    assert second.first_flight_retransmitted == 1  # 5793 first left in the first flight


def test_a_loss_after_the_first_flight_is_not_the_first_flights() -> None:
    packets = [
        data(0.0, 1), data(0.001, 1449), ack(0.2),  # the first flight: two segments
        data(0.2, 2897), data(0.2001, 4345), ack(0.4),  # the next round, clocked by the ACKs
        data(0.6, 4345), data(0.61, 1449),  # both sent again: one of the second round, one of the first flight
    ]  # fmt: skip
    (burst,) = burst_trace.burst_departures(packets, SERVER, 80, 1)
    assert (burst.retransmitted, burst.first_flight_retransmitted) == (2, 1)


def test_restart_window_halves_per_rto_down_to_the_initial_window() -> None:
    assert burst_trace.restart_window(58, 1.0, 0.4, 3) == 14  # 1.0 s is two RTOs and a bit: halved twice
    assert burst_trace.restart_window(58, 15.0, 0.4, 3) == 3
    assert burst_trace.restart_window(2, 15.0, 0.4, 3) == 2  # never above the window it had
    assert burst_trace.restart_window(58, 0.3, 0.4, 3) == 58  # shorter than an RTO: kept


def test_the_rounds_and_the_gain() -> None:
    assert burst_trace.burst_rounds(3, 56) == 5  # 3 + 6 + 12 + 24 + 48
    assert burst_trace.burst_rounds(55, 56) == 2
    assert burst_trace.burst_rounds(60, 56) == 1
    assert burst_trace.gain_pct(400.0, 200.0) == 50.0
    with pytest.raises(ValueError):
        burst_trace.gain_pct(0.0, 1.0)
