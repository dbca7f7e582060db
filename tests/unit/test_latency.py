"""RTT under load (ground.latency): the SRTT percentiles of a trial's sender and the queueing delay over each
flow's base RTT, from tcp_probe samples."""

from __future__ import annotations

import numpy as np
import pytest

from ground import latency
from ground.parsers import PingResult
from ground.proc import ROOT
from ground.tcpprobe import ProbeSample
from netrepro.runner.workloads import WORKLOADS
from topologies.ping_probe import PingProbe


def samples(srtt_ms: list[float], flow: str = "10.0.0.2:80>10.0.0.1:5000") -> list[ProbeSample]:
    return [ProbeSample(i * 0.01, flow, 10, 2**31 - 1, int(v * 1e3), 0, 0, 0) for i, v in enumerate(srtt_ms)]


def test_the_percentiles_and_the_queueing_delay_over_the_base_rtt() -> None:
    values = list(np.linspace(100.0, 200.0, 101))  # a queue filling from empty to one BDP on a 100 ms path
    found = latency.rtt_under_load([(samples(values), 100.0)])
    assert found is not None and found.samples == 101
    assert (found.p50_ms, found.p95_ms, found.p99_ms) == pytest.approx((150.0, 195.0, 199.0))
    assert (found.queueing_p50_ms, found.queueing_p95_ms) == pytest.approx((50.0, 95.0))
    assert found.columns() == {
        "rtt_p50_ms": 150.0, "rtt_p95_ms": 195.0, "rtt_p99_ms": 199.0,
        "queueing_delay_p50_ms": 50.0, "queueing_delay_p95_ms": 95.0,
    }  # fmt: skip


def test_flows_of_different_base_rtts_queue_over_their_own() -> None:
    """A dumbbell's pairs: 40 ms and 120 ms base RTTs, each 10 ms over its own: the queueing delay is 10 ms,
    the RTTs are the pooled ones."""
    found = latency.rtt_under_load([(samples([50.0] * 10), 40.0), (samples([130.0] * 10), 120.0)])
    assert found is not None and found.queueing_p50_ms == pytest.approx(10.0)
    assert found.queueing_p95_ms == pytest.approx(10.0) and found.p99_ms == pytest.approx(130.0)


def test_samples_before_the_first_rtt_sample_and_no_samples_give_no_columns() -> None:
    assert latency.rtt_under_load([(samples([0.0, 0.0]), 20.0)]) is None
    assert latency.columns([]) == {} and latency.columns([(samples([0.0]), 20.0)]) == {}
    found = latency.rtt_under_load([(samples([0.0, 30.0]), 20.0)])
    assert found is not None and found.samples == 1 and found.p50_ms == pytest.approx(30.0)


def test_every_workload_with_a_tcp_probe_reports_latency_under_load() -> None:
    for name in ("download", "page_load", "http_bursts", "competing", "long_flow"):
        assert set(latency.METRICS) <= set(WORKLOADS[name].metrics), name


def test_a_ping_probe_sends_at_its_rate_and_stops_on_its_own_after_the_trial() -> None:
    probe = PingProbe(ROOT, "10.0.0.2", 5, ledger=None, seconds=15)  # type: ignore[arg-type]
    assert probe.argv() == ["ping", "-n", "-c", "225", "-i", "0.2", "-w", "45", "10.0.0.2"]
    assert PingProbe(ROOT, "10.0.0.2", 100, ledger=None, seconds=1).argv()[4:6] == ["-i", "0.01"]  # type: ignore[arg-type]
    for hz in (0, 101):
        with pytest.raises(ValueError, match="1 to 100 requests a second"):
            PingProbe(ROOT, "10.0.0.2", hz, ledger=None, seconds=15)  # type: ignore[arg-type]


def test_ping_columns_give_the_replies_percentiles_and_the_requests_unanswered() -> None:
    replies = PingResult([40.0 + i for i in range(100)], transmitted=104, received=100)
    cols = latency.ping_columns(replies)
    assert set(cols) == set(latency.PING_METRICS)
    assert (cols["ping_p50_ms"], cols["ping_p95_ms"], cols["ping_p99_ms"]) == (89.5, 134.05, 138.01)
    assert (cols["ping_sent"], cols["ping_lost"]) == (104, 4)
    assert latency.ping_columns(PingResult([], 5, 0)) == {"ping_sent": 5, "ping_lost": 5}
