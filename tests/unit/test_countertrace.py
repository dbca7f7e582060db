"""newcwv's own counters over a trial: the sampler, and what a trial's row makes of them (seed 002's Figure 5)."""

import threading
import time

import pytest

from ground.tcpprobe import ProbeSample
from netrepro.runner.countertrace import UNDEFINED, CounterSample, CounterTrace, pipeack_metrics


def sample(t: float, pipeack: int, cwnd: int) -> CounterSample:
    return CounterSample(t, {"last_pipeack": pipeack, "last_cwnd": cwnd})


def ack(t: float, cwnd: int) -> ProbeSample:
    return ProbeSample(t, "10.0.0.2:80>10.0.0.1:5000", cwnd, 2147483647, 200_000, 0, 0, 0)


def test_a_trial_row_from_the_counters_and_tcp_probe() -> None:
    start = 100.0
    samples = [
        sample(99.9, 7, 9),  # before the first request: left out
        sample(100.1, UNDEFINED, 3),
        sample(100.2, 3, 6),
        sample(100.3, 3, 12),  # 3 < 12 / 2: non-validated
        sample(100.4, 12, 24),
        sample(100.5, 0, 24),  # every sample expired (idle): counted as a value, not in the variation
    ]
    probe = [ack(100.05, 3), ack(100.25, 6), ack(100.32, 30), ack(100.35, 12), ack(100.45, 24)]
    row = pipeack_metrics(samples, probe, start)
    assert row["trace_s"] == "0.10;0.20;0.30;0.40;0.50"
    assert row["trace_pipeack"] == ";3;3;12;0"
    assert row["trace_cwnd"] == "3;6;12;24;24"
    assert row["trace_probe_cwnd"] == "3;3;6;12;24"  # the last ACK at or before each instant
    assert row["max_cwnd"] == 30  # every ACK counts, not only those at the instants
    assert row["first_nonvalidated_s"] == pytest.approx(0.3)
    assert row["nonvalidated_share"] == pytest.approx(2 / 4)  # 3 of 12, and 0 of 24
    assert row["growth_nonvalidated_share"] == pytest.approx(1 / 3, abs=1e-4)  # up to the first cwnd of 24: 3 of 12
    mean = (3 + 3 + 12) / 3
    sd = (((3 - mean) ** 2 * 2 + (12 - mean) ** 2) / 3) ** 0.5
    assert row["pipeack_cv"] == pytest.approx(sd / mean, abs=1e-4)


def test_the_counters_count_from_the_senders_first_ack() -> None:
    # before it, the client's connection (a request sent, nothing received) may have published its own
    samples = [sample(0.6, 1, 10), sample(0.7, 1, 10), sample(0.8, 2, 3), sample(0.9, 3, 6)]
    row = pipeack_metrics(samples, [ack(0.75, 3), ack(0.85, 6)], 0.5)
    assert row["trace_s"] == "0.30;0.40"
    assert row["trace_pipeack"] == "2;3" and row["trace_cwnd"] == "3;6"


def test_a_trial_never_non_validated_has_no_first_entry() -> None:
    row = pipeack_metrics([sample(1.0, 10, 12), sample(1.1, 10, 20)], [ack(0.9, 12)], 0.5)
    assert row["first_nonvalidated_s"] is None
    assert row["nonvalidated_share"] == 0
    assert row["pipeack_cv"] == 0


def test_a_trace_without_a_value_says_so() -> None:
    row = pipeack_metrics([sample(1.0, UNDEFINED, 3)], [], 0.5)
    assert row["trace_pipeack"] == ""
    assert row["max_cwnd"] is None and row["pipeack_cv"] is None and row["nonvalidated_share"] is None


def test_the_trace_reads_at_its_interval_and_stops() -> None:
    calls = []

    def read() -> dict[str, int]:
        calls.append(time.monotonic())
        return {"last_pipeack": len(calls), "last_cwnd": 10}

    with CounterTrace(read, interval_s=0.02) as trace:
        time.sleep(0.2)
    n = len(trace.samples)
    assert 5 <= n <= 12, n
    time.sleep(0.06)
    assert len(trace.samples) == n  # stopped with the `with`
    assert [s.values["last_pipeack"] for s in trace.samples] == list(range(1, n + 1))
    assert not any(t.name == "counter trace" for t in threading.enumerate())


def test_a_failed_read_is_raised_when_the_trace_ends() -> None:
    def read() -> dict[str, int]:
        raise OSError("bpftool: map not found")

    with pytest.raises(OSError, match="map not found"), CounterTrace(read, interval_s=0.01):
        time.sleep(0.05)
