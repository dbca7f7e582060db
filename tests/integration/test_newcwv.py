"""newcwv (RFC 7661) on this kernel, read from tcp_probe: the window across an idle period.

One persistent HTTP/1.1 connection fetches 600 KB (the window opens well
past the initial 10 segments), idles 1.5 s (several RTOs), then fetches
again.  The server's tcp_probe sample at the first ACK of the second
response holds the window it resumed with.
"""

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netrepro.ledger import Ledger
from netrepro.path import PathSpec
from netrepro.tcpprobe import ProbeSample
from netrepro.workloads import Session
from servers import clients
from servers.apache import HTTP_PORT
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
    session.congestion_control(params)
    session.apply_hosts({**params, "initcwnd": INITCWND})
    obj = session.web_object(600_000)
    probe = session.probe(HTTP_PORT)
    seen = len(probe.flush())
    clients.run_bursts(session.lab.client, session.lab.ip("server"), [(obj.path, 0.0), (obj.path, IDLE_S)])
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
