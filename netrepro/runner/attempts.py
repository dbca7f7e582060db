"""When a trial's attempt is run again, and when a run of failing trials stops.

A trial whose delay lines released packets later than its bound (`late_bound_ms`) or whose BPF congestion
control repaired a corrupted ssthresh is failed and run again (`attempt_again`, each attempt a row); a run
whose trials fail FAILURES_IN_A_ROW times in a row stops (`FailureStreak`), naming why.  The sweep
(netrepro.runner.sweep) asks these after every attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ground.trials import Row
from netrepro.runner.verify import rtt_tolerance_ms

FAILURES_IN_A_ROW = 5
# A trial whose delay lines released packets later than its bound (late_bound_ms) is failed and run again,
# up to ATTEMPTS_AT_ONCE late attempts; the last such attempt stays failed (a resume runs it again).  A late
# attempt is followed by a pause of nothing first, longer each time (LATE_PAUSES_S): what held the delay line
# back was the machine, and a burst of someone else's work passes.  CI saw two attempts of one trial in a row
# late (p99 10 ms), and on a later run three, 5 s apart, within 19 s (p99 18 ms; the path's goodput had read
# 85.8 of 95.6 Mbit/s just before).
ATTEMPTS_AT_ONCE = 3
LATE_PAUSES_S = (5.0, 30.0)  # before the second attempt and before the third, where the one before was late
assert len(LATE_PAUSES_S) == ATTEMPTS_AT_ONCE - 1
# A trial whose BPF congestion control repaired a corrupted ssthresh (kmod/README.md, "The ssthresh
# corruption": a kernel defect no program shape avoids) is failed and run again at once, up to
# SSTHRESH_ATTEMPTS repaired attempts; each attempt is a row.  The bound: at the highest rate seen, 19 % of
# a trial's attempts repaired (cubicplus fig12 at high loss), all of 8 attempts meet it with probability
# 0.19^8 = 1.7e-6; the quick suite has 56 trials on BPF (cubicplus; fewer of them on lossy paths), so at most
# one suite run in about 10,000 keeps a trial failed for this cause (3 attempts: 56 x 0.19^3 = 0.38, one run
# in 3; 6: one in 380).  An attempt run again for this cause does not count towards FAILURES_IN_A_ROW: the
# trial's last attempt does.
SSTHRESH_ATTEMPTS = 8


def attempt_again(made: Mapping[str, Any], late_attempts: int, repaired_attempts: int) -> bool:
    """Whether a trial runs again after the attempt that made the row `made`: late past its bound, while fewer
    than ATTEMPTS_AT_ONCE of its attempts were late; its ssthresh repaired, while fewer than SSTHRESH_ATTEMPTS
    were.  The counts include this attempt."""
    if made.get("late_over_bound"):
        return late_attempts < ATTEMPTS_AT_ONCE
    if made.get("ssthresh_repaired"):
        return repaired_attempts < SSTHRESH_ATTEMPTS
    return False


def discarded_for_ssthresh(attempts: Iterable[Row]) -> list[str]:
    """The caption's line on the attempts not kept for the BPF ssthresh corruption, per series, of all that
    series' attempts; none where no attempt was.  The discards fall on BPF series only and grow with loss, so
    the kept trials are the ones the corruption spared: a reader weighs a series' numbers with its count."""
    tried: dict[str, int] = {}
    repaired: dict[str, int] = {}
    for row in attempts:
        tried[row.series] = tried.get(row.series, 0) + 1
        repaired[row.series] = repaired.get(row.series, 0) + row.ssthresh_repaired
    counts = [f"{series} {n} of {tried[series]}" for series, n in repaired.items() if n]
    if not counts:
        return []
    return [
        "attempts not kept, their BPF congestion control having repaired a corrupted ssthresh (kmod/README.md; "
        "each trial ran again): " + ", ".join(counts)
    ]


LATE_TOLERANCES = 10  # late_bound_ms: how many of the path's RTT tolerances a trial's p99 lateness may reach


class FailureStreak:
    """The failed (or timed-out) trials since the last successful one."""

    def __init__(self, limit: int = FAILURES_IN_A_ROW) -> None:
        self.limit = limit
        self.errors: list[str] = []

    def record(self, status: str, error: str = "") -> bool:
        """Count one trial's outcome; true when the streak has reached the limit."""
        if status == "ok":
            self.errors.clear()
            return False
        self.errors.append(f"{status}: {error}" if error else status)
        return len(self.errors) >= self.limit

    def report(self, server_log: str | None = None) -> str:
        """Why the run stopped: the failures' errors and, where there is one, the tail of the server's error log."""
        lines = [f"{len(self.errors)} trials in a row failed; the run stopped (their rows are kept):"]
        lines += [f"  {e}" for e in self.errors]
        if server_log:
            lines += ["the server's error log ends:", *(f"  {line}" for line in server_log.splitlines())]
        return "\n".join(lines)


def late_bound_ms(rtt_ms: float) -> float:
    """How late the delay line may release the 99th percentile of a trial's packets: ten times the path's
    RTT tolerance (runner.verify.rtt_tolerance_ms: 1 %, at least 0.5 ms), so 10 % of the RTT and at least
    5 ms: a tail an order of magnitude past the error a verified path may have is a machine too busy for
    the path, not the path.  Serially this project's VM releases the 99th percentile within 0.2 ms; one
    trial of cubicplus/fig12 in the suite passed 0.5 ms (the tolerance itself, the first bound tried)."""
    return round(LATE_TOLERANCES * rtt_tolerance_ms(rtt_ms), 3)
