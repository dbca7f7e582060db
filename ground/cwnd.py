"""Window curves: epochs between reductions in tcp_probe traces, the CUBIC fit, and slow start's rounds.

CUBIC (RFC 9438; Linux's tcp_cubic) grows the window after a reduction as

    W(t) = W_origin + C * (t - K)^3

with t the time since the epoch began (the first window increase after
recovery), W_origin the window it returns to (the window before the loss, or
less under fast convergence) and K the time it takes to return there.  Linux
uses C = 410/1024 ~ 0.4 (segments / s^3).

`cubic_fit` fits W_origin, C and K to one epoch of a flow's samples: for a
fixed K the model is linear in W_origin and C, so those come by least
squares, and K is searched on a grid, then refined.  No shape is assumed
beyond the cubic itself, so the fit also measures an implementation that is
not CUBIC (its residual says so).

`slow_start_rounds` is the slow-start model the studies set beside their
measurements: the round trips a window starting at IW, doubling each round,
needs to deliver S segments.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ground.tcpprobe import UNSET_SSTHRESH, ProbeSample


def slow_start_rounds(initcwnd: int, segs: int) -> int:
    """The smallest R with IW (2^R - 1) >= S: slow-start rounds to deliver S segments (no loss, no limit)."""
    r = 1
    while initcwnd * (2**r - 1) < segs:
        r += 1
    return r


@dataclass(frozen=True)
class CubicFit:
    start: float  # epoch start, trace time (s)
    seconds: float  # epoch length
    w_start: int  # window at the epoch's start (segments)
    w_end: int  # window at its end
    origin: float  # fitted W_origin (segments)
    c: float  # fitted C (segments / s^3)
    k: float  # fitted K (s)
    rms: float  # root-mean-square residual (segments)


def epochs(samples: Sequence[ProbeSample]) -> list[list[ProbeSample]]:
    """One flow's growth phases: from where the window starts to grow again
    after a reduction to the sample before the next reduction.

    Reductions are found as `tcpprobe.reductions` finds them; the last phase,
    cut by the end of the trace rather than by a loss, is not returned.
    """
    starts = [
        i
        for i in range(1, len(samples))
        if samples[i].ssthresh != samples[i - 1].ssthresh
        and samples[i].ssthresh != UNSET_SSTHRESH
        and samples[i].ssthresh < samples[i - 1].snd_cwnd
        and samples[i].snd_cwnd < samples[i - 1].snd_cwnd
    ]
    out = []
    for a, b in itertools.pairwise(starts):
        phase = samples[a:b]
        low = min(s.snd_cwnd for s in phase)
        last_low = max(i for i, s in enumerate(phase) if s.snd_cwnd == low)
        out.append(list(phase[last_low:]))
    return out


def _thin(phase: Sequence[ProbeSample], every: float) -> list[tuple[float, float]]:
    """(t since start, cwnd), at most one point per `every` seconds, so that
    bursts of ACKs do not outweigh the rest of the curve."""
    t0 = phase[0].time
    points: list[tuple[float, float]] = []
    for s in phase:
        t = s.time - t0
        if not points or t - points[-1][0] >= every:
            points.append((t, float(s.snd_cwnd)))
    return points


def _solve(points: Sequence[tuple[float, float]], k: float) -> tuple[float, float, float]:
    """Least squares of w = origin + c * (t - k)^3 for fixed k: (sse, origin, c)."""
    n = len(points)
    xs = [(t - k) ** 3 for t, _ in points]
    ws = [w for _, w in points]
    mx, mw = sum(xs) / n, sum(ws) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return math.inf, mw, 0.0
    c = sum((x - mx) * (w - mw) for x, w in zip(xs, ws, strict=True)) / sxx
    origin = mw - c * mx
    sse = sum((origin + c * x - w) ** 2 for x, w in zip(xs, ws, strict=True))
    return sse, origin, c


def cubic_fit(phase: Sequence[ProbeSample], k_max: float = 30.0, every: float = 0.02) -> CubicFit:
    """Fit the CUBIC curve to one growth phase (see `epochs`)."""
    points = _thin(phase, every)
    if len(points) < 10:
        raise ValueError(f"a growth phase of {len(points)} points is too short to fit")
    grid = [0.1 * i for i in range(1, int(k_max * 10) + 1)]
    k = min(grid, key=lambda g: _solve(points, g)[0])
    fine = [k - 0.1 + 0.002 * i for i in range(101)]
    k = min((g for g in fine if g > 0), key=lambda g: _solve(points, g)[0])
    sse, origin, c = _solve(points, k)
    return CubicFit(
        start=phase[0].time,
        seconds=phase[-1].time - phase[0].time,
        w_start=phase[0].snd_cwnd,
        w_end=phase[-1].snd_cwnd,
        origin=origin,
        c=c,
        k=k,
        rms=math.sqrt(sse / len(points)),
    )
