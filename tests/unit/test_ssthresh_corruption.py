"""The ssthresh corruption of kmod/README.md, read from traces: the guard's rule applied to tcp_probe
samples (ground.tcpprobe.implausible_ssthresh), and the rate's interval (bench ssthresh)."""

import pytest

from ground.tcpprobe import UNSET_SSTHRESH, ProbeSample, implausible_ssthresh
from netrepro.lanes.bench_ssthresh import poisson_interval

FLOW = "10.155.78.2:5201>10.155.78.1:35382"

# Captured on this project's 6.18 VM (bench ssthresh's path: 100 Mbit/s, 20 ms, 10 % loss; reno_beta as
# BPF, r = 500, four flows): (time, snd_cwnd, ssthresh, srtt_us, snd_una, snd_nxt) of one flow around
# the event.  At 6.2548 ssthresh is 0x81104110, and the window, by the rate reduction (PRR), that
# value / prior_cwnd 5 plus the packets in flight; the next ACK's sample shows the guard's repair.
CAPTURED = (
    (6.1456, 4, 3, 20996, 3546119247, 3546125039),
    (6.1457, 4, 3, 23365, 3546120695, 3546127935),
    (6.1657, 4, 2, 22945, 3546120695, 3546129383),
    (6.1668, 3, 2, 22577, 3546120695, 3546129383),
    (6.1741, 2, 2, 22395, 3546120695, 3546130831),
    (6.1943, 2, 2, 22095, 3546129383, 3546132279),
    (6.2145, 3, 2, 22770, 3546132279, 3546136623),
    (6.2345, 4, 3, 22448, 3546136623, 3546142415),
    (6.2548, 433065224, 2165326096, 22145, 3546139519, 3546148207),
    (6.2548, 4, 2, 21909, 3546139519, 3546148207),
    (6.2559, 4, 2, 21704, 3546139519, 3546149655),
    (6.2659, 2, 2, 21661, 3546139519, 3546149655),
    (6.286, 2, 2, 21453, 3546148207, 3546151103),
    (6.3061, 1, 2, 21284, 3546148207, 3546151103),
)


def samples(rows: tuple[tuple[float, int, int, int, int, int], ...]) -> list[ProbeSample]:
    return [ProbeSample(t, FLOW, cwnd, ss, srtt, una, nxt, 0) for t, cwnd, ss, srtt, una, nxt in rows]


def series(pairs: list[tuple[int, int]]) -> list[ProbeSample]:
    """(cwnd, ssthresh) pairs as a flow's samples 10 ms apart."""
    return [ProbeSample(0.01 * i, FLOW, cwnd, ss, 20_000, 0, 0, 0) for i, (cwnd, ss) in enumerate(pairs)]


def test_the_captured_event_is_found_once_and_the_repair_is_not() -> None:
    trace = samples(CAPTURED)
    found = implausible_ssthresh(trace)
    assert found == [8]
    assert trace[8].ssthresh == 0x81104110
    # the window the kernel's rate reduction derived from it: ssthresh x delivered / prior_cwnd + in flight
    assert trace[8].snd_cwnd == 0x81104110 // 5 + 5


def test_what_tcp_does_to_ssthresh_is_plausible() -> None:
    """Slow start's exit, Reno's halvings, an undo back to infinite, an undo to 3/4 of the window, a
    timeout at a window of 1: none is flagged."""
    reno = [(10, UNSET_SSTHRESH), (40, UNSET_SSTHRESH), (20, 20), (30, 20), (15, 15), (16, 15)]
    undo_to_infinite = [*reno, (8, 8), (16, UNSET_SSTHRESH), (30, UNSET_SSTHRESH)]
    undo_to_three_quarters = [*reno, (10, 10), (12, 12), (16, 30), (30, 30)]  # up to the highest window, 40
    assert implausible_ssthresh(series(reno)) == []
    assert implausible_ssthresh(series(undo_to_infinite)) == []
    assert implausible_ssthresh(series(undo_to_three_quarters)) == []
    # a timeout in the first flight, the window 1 since a lost SYN-ACK: ssthresh 2, TCP's floor (seen as
    # "2/1" in a bench ssthresh run before the floor was part of the rule)
    assert implausible_ssthresh(series([(1, UNSET_SSTHRESH), (1, UNSET_SSTHRESH), (1, 2), (2, 2)])) == []


def test_a_value_above_every_window_is_flagged_once_however_long_it_stays() -> None:
    """The kernel's own algorithms have no guard: a corrupted ssthresh would stay until the next cut,
    the window growing towards it: one event, over when a cut from the window sets ssthresh again."""
    trace = [(10, UNSET_SSTHRESH), (20, 10), (10, 10), (11, 50_000), (22, 50_000), (44, 50_000), (30, 22), (31, 22)]
    assert implausible_ssthresh(series(trace)) == [3]
    again = [*trace, (40, 60), (41, 60)]  # 60 is above every plausible window seen (31): a second event
    assert implausible_ssthresh(series(again)) == [3, 8]


@pytest.mark.parametrize(
    ("events", "exposure", "low", "high"),
    [(0, 10.0, 0.0, 0.36889), (1, 1.0, 0.025318, 5.5716), (10, 100.0, 0.047954, 0.18390)],
)
def test_the_poisson_interval_is_garwoods(events: int, exposure: float, low: float, high: float) -> None:
    lo, hi = poisson_interval(events, exposure)
    assert lo == pytest.approx(low, rel=1e-4)
    assert hi == pytest.approx(high, rel=1e-4)
