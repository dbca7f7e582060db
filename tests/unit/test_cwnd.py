"""The CUBIC fit recovers the curve a trace was drawn from."""

import pytest

from ground.cwnd import cubic_fit, epochs
from ground.tcpprobe import UNSET_SSTHRESH, ProbeSample


def sample(t: float, cwnd: int, ssthresh: int) -> ProbeSample:
    return ProbeSample(t, "10.0.0.2:80>10.0.0.1:5000", cwnd, ssthresh, 40_000, 0, 0, 0)


def cubic_trace(c: float, origin: float, w0: float, seconds: float, t0: float = 0.0) -> list[ProbeSample]:
    """Integer windows of W(t) = origin + c (t - K)^3, one ACK every 5 ms."""
    k = ((origin - w0) / c) ** (1 / 3)
    return [
        sample(t0 + i * 0.005, int(origin + c * (i * 0.005 - k) ** 3), int(w0)) for i in range(int(seconds / 0.005))
    ]


@pytest.mark.parametrize(("c", "origin", "w0"), [(0.4, 280, 196), (0.4, 400, 280), (0.1, 300, 210)])
def test_fit_recovers_c_k_and_origin(c: float, origin: float, w0: float) -> None:
    fit = cubic_fit(cubic_trace(c, origin, w0, seconds=10))
    assert fit.c == pytest.approx(c, rel=0.03)
    assert fit.k == pytest.approx(((origin - w0) / c) ** (1 / 3), abs=0.05)
    assert fit.origin == pytest.approx(origin, abs=1.5)
    assert fit.rms < 1


def test_a_linear_window_is_no_cubic() -> None:
    """Reno's line: the fit's residual gives it away."""
    trace = [sample(i * 0.005, 200 + int(i * 0.005 * 25), 200) for i in range(2000)]
    fit = cubic_fit(trace)
    assert fit.rms > 1 or abs(fit.c - 0.4) > 0.1


def test_epochs_run_from_the_low_point_to_the_next_reduction() -> None:
    slow_start = [sample(0.01 * i, 10 + 10 * i, UNSET_SSTHRESH) for i in range(20)]
    first = cubic_trace(0.4, 200, 140, seconds=6, t0=0.2)
    recovery = [sample(6.2 + 0.01 * i, 190 - 5 * i, 133) for i in range(12)]
    second = cubic_trace(0.4, 190, 133, seconds=6, t0=6.4)
    # each reduction: a sample with a new ssthresh and a smaller window
    end = [sample(12.5, 150, 135), sample(12.51, 140, 135)]  # the last phase, cut by the trace's end
    trace = [*slow_start, sample(0.199, 140, 140), *first, *recovery, *second, *end]
    phases = epochs(trace)
    assert len(phases) == 2
    # each starts where the window last sat at its low point, before growing
    assert phases[0][0].snd_cwnd == 140 and 0.2 <= phases[0][0].time < 0.5
    assert phases[1][0].snd_cwnd == 133 and 6.4 <= phases[1][0].time < 6.7
    assert phases[1][-1].time < 12.5
