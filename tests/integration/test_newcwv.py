"""newcwv (RFC 7661) on this kernel, read from tcp_probe: the window across idle, its loss response.

One persistent HTTP/1.1 connection fetches 600 KB (the window opens well
past the initial 10 segments), idles 1.5 s (several RTOs), then fetches
again.  The server's tcp_probe sample at the first ACK of the second
response holds the window it resumed with.

For the loss response the connection, after the same opening, turns
application-limited: small bursts every 100 ms, far below its window, so
that pipeACK < cwnd / 2 (the non-validated phase).  Then loss is switched on.
"""

import math
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ground.ledger import Ledger
from ground.path import PathSpec
from ground.proc import Process
from ground.tcpprobe import UNSET_SSTHRESH, ProbeSample
from netrepro.runner.session import Session
from netrepro.runner.workloads import NoKeys
from netrepro.studykit.trial import build
from servers.apache import HTTP_PORT
from servers.bursts import burst_client_argv, run_bursts
from topologies.lab import Lab

pytestmark = pytest.mark.root

IDLE_S = 1.5
INITCWND = 10


@pytest.fixture
def session() -> Iterator[Session]:
    path = PathSpec.parse(rtt="40ms", rate="20mbit")
    with Ledger() as ledger, Lab(path, ledger) as lab, tempfile.TemporaryDirectory() as work:
        s = Session(lab, ledger, Path(work), None, cc_impl="bpf")
        try:
            yield s
        finally:
            s.stop()


def window_across_idle(session: Session, params: dict[str, Any]) -> tuple[int, int]:
    """(cwnd before the idle period, cwnd the server resumed with)."""
    trial = build({**params, "initcwnd": INITCWND}, 0, "cc", NoKeys)
    session.congestion_control(trial)
    session.apply_hosts(trial)
    obj = session.web_object(600_000)
    probe = session.probe(HTTP_PORT)
    seen = len(probe.flush())
    run_bursts(session.lab.client, session.lab.ip("server"), [(obj.path, 0.0), (obj.path, IDLE_S)])
    server = f"{session.lab.ip('server')}:{HTTP_PORT}>"
    trace: list[ProbeSample] = [s for s in probe.flush()[seen:] if s.flow.startswith(server)]
    gap = max(range(1, len(trace)), key=lambda i: trace[i].time - trace[i - 1].time)
    assert trace[gap].time - trace[gap - 1].time > IDLE_S * 0.9, "the idle period shows in the trace"
    # The first sample after the gap is the request arriving; the window is
    # restarted (or not) when the response goes out, so read it at the first
    # ACK of the new response.
    request = trace[gap]
    resumed = next(s for s in trace[gap:] if s.snd_nxt != request.snd_nxt)
    return trace[gap - 1].snd_cwnd, resumed.snd_cwnd


def test_reno_restarts_after_idle(session: Session) -> None:
    before, after = window_across_idle(session, {"cc": "reno", "slow_start_after_idle": True})
    assert before > 4 * INITCWND
    # Linux's restart (RFC 2861): the window halves for every RTO of idle
    # time, down to the initial window; 1.5 s is at least three RTOs here.
    assert INITCWND <= after <= before / 8, (before, after)


def test_newcwv_keeps_the_window_across_idle(session: Session) -> None:
    params = {"cc": "newcwv", "cc_params": {"nvp_ms": 300_000}, "slow_start_after_idle": True}
    before, after = window_across_idle(session, params)
    assert before > 4 * INITCWND
    assert after >= 0.9 * before, (before, after)


def test_newcwv_halves_the_window_when_the_non_validated_period_expires(session: Session) -> None:
    params = {"cc": "newcwv", "cc_params": {"nvp_ms": 500}, "slow_start_after_idle": True}
    before, after = window_across_idle(session, params)
    assert before > 4 * INITCWND
    # 1.5 s idle spans three 500 ms periods: halved at each expiry, never below the initial window
    assert INITCWND <= after <= 0.55 * before, (before, after)


SMALL = 10_000  # bytes per burst while application-limited
SMALL_SEGMENTS = math.ceil((SMALL + 400) / 1448)  # with the response's headers


def bursts_after_idle(trace: list[ProbeSample]) -> int:
    """How many bursts the trace shows after its first idle period (> 0.8 s)."""
    gaps = [i for i in range(1, len(trace)) if trace[i].time - trace[i - 1].time > 0.05]
    idle = next((i for i in gaps if trace[i].time - trace[i - 1].time > 0.8), None)
    return 0 if idle is None else sum(1 for i in gaps if i >= idle)


def first_reduction_when_limited(session: Session, params: dict[str, Any]) -> tuple[int, int, int]:
    """(cwnd before, ssthresh after, lowest cwnd in the next second) at the
    first reduction once the connection is application-limited and lossy."""
    trial = build({**params, "initcwnd": INITCWND}, 0, "cc", NoKeys)
    session.congestion_control(trial)
    session.apply_hosts(trial)
    big, small = session.web_object(600_000), session.web_object(SMALL)
    lab = session.lab
    probe = session.probe(HTTP_PORT)
    seen = len(probe.flush())
    server = f"{lab.ip('server')}:{HTTP_PORT}>"
    bursts = [(big.path, 0.0), (small.path, 1.0)] + [(small.path, 0.1)] * 40
    clean_path = lab.path
    client = Process(burst_client_argv(lab.ip("server"), bursts), lab.client, ledger=session.ledger)
    try:
        deadline = time.monotonic() + 30
        while bursts_after_idle([s for s in probe.flush()[seen:] if s.flow.startswith(server)]) < 3:
            assert time.monotonic() < deadline, "three small bursts after the idle period"
            time.sleep(0.05)
        lossy_from = time.monotonic()  # tcp_probe's clock is CLOCK_MONOTONIC
        lab.reconfigure(PathSpec.parse(rtt=str(clean_path.rtt), rate=str(clean_path.rate_down), loss="3%"))
        assert client.wait(timeout=60) == 0
    finally:
        client.stop()
        lab.reconfigure(clean_path)
    trace = [s for s in probe.flush()[seen:] if s.flow.startswith(server) and s.time >= lossy_from]
    for i in range(1, len(trace)):
        before, after = trace[i - 1], trace[i]
        if (
            after.ssthresh != before.ssthresh
            and after.ssthresh != UNSET_SSTHRESH
            and after.ssthresh < before.snd_cwnd
            and after.snd_cwnd < before.snd_cwnd
        ):
            recovered = min(s.snd_cwnd for s in trace[i:] if s.time - after.time < 1.0)
            return before.snd_cwnd, after.ssthresh, recovered
    raise AssertionError("no reduction in 37 bursts at 3 % loss")


def test_newcwv_loss_response_when_non_validated_follows_rfc7661(session: Session) -> None:
    """RFC 7661 4.4.1: ssthresh from max(pipeACK, LossFlightSize) / 2, not from
    the unused window, and at the end of recovery cwnd = (max(pipeACK,
    LossFlightSize) - R) / 2.  Both pipeACK and the flight are one small
    burst here, so both values sit at or below half a burst."""
    params = {"cc": "newcwv", "cc_params": {"nvp_ms": 300_000}, "slow_start_after_idle": True}
    cwnd, ssthresh, recovered = first_reduction_when_limited(session, params)
    assert cwnd >= 4 * SMALL_SEGMENTS, "the window was kept while application-limited"
    assert 2 <= ssthresh <= SMALL_SEGMENTS // 2 + 1, (cwnd, ssthresh, SMALL_SEGMENTS)
    assert recovered <= ssthresh, (cwnd, ssthresh, recovered)
    algorithm = session.algorithm("newcwv")
    assert algorithm is not None
    counts = algorithm.counters()  # loaded afresh for this test
    assert counts["nv_entries"] >= 1 and counts["nv_recoveries"] >= 1, counts
    assert counts["nvp_expiries"] == 0, counts  # a 5-minute NVP cannot expire in seconds


def test_reno_loss_response_when_application_limited_halves_its_window(session: Session) -> None:
    """The control: Reno's ssthresh is half of whatever window it had (Linux's
    RFC 2861 decay may have shrunk that window while application-limited)."""
    cwnd, ssthresh, _ = first_reduction_when_limited(session, {"cc": "reno", "slow_start_after_idle": False})
    assert abs(ssthresh - cwnd / 2) <= 1, (cwnd, ssthresh)
