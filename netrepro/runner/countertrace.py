"""A congestion control's own counters over a trial, and what they show of newCWV's pipeACK.

newcwv publishes the pipeACK and the cwnd that the last ACK of a sending
connection left (kmod/newcwv.c's read-only parameters, kmod/bpf/newcwv.bpf.c's
map).  `CounterTrace` reads them every 0.1 s while a trial runs, on the clock
of tcp_probe (CLOCK_MONOTONIC), so that the two can be set side by side:
the algorithm's own pipeACK beside the window tcp_probe saw on every ACK.
`pipeack_metrics` turns both into a trial's row (seed 002's Figure 5).
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from ground.errors import TrialError
from ground.tcpprobe import ProbeSample

METRICS = (
    "trace_s",
    "trace_pipeack",
    "trace_cwnd",
    "trace_probe_cwnd",
    "max_cwnd",
    "pipeack_cv",
    "first_nonvalidated_s",
    "nonvalidated_share",
    "growth_nonvalidated_share",
)
INTERVAL_S = 0.1  # half the RTT of seed 002's paths: every per-RTT value of pipeACK is seen
UNDEFINED = 0xFFFFFFFF  # pipeACK before its first sample and after a recovery (RFC 7661 4.1)


def refused(cc: str | None, held: Iterable[str]) -> str | None:
    """Why a trial with pipeack_trace=1 and congestion control `cc` cannot trace newcwv's pipeACK, or None:
    only newcwv publishes one, a single value for the machine, which labs side by side (`held`: the
    variants a run holds loaded for its labs) would share.  (A setting of another cc is refused with the
    grid's check, netrepro.studykit.trial.problems.)"""
    if cc != "newcwv":
        return f"pipeack_trace=1 reads newcwv's own pipeACK; a trial has cc={cc} (allowed: newcwv)"
    if "newcwv" in held:
        return (
            "pipeack_trace=1 reads the one pipeACK newcwv publishes, which labs side by side would share: "
            "run it without --jobs"
        )
    return None


@dataclass(frozen=True)
class CounterSample:
    time: float  # seconds, CLOCK_MONOTONIC (tcp_probe's clock)
    values: Mapping[str, int]


class CounterTrace:
    """Reads `read()` every `interval_s` in a thread of its own between `with` and its end; a failed read
    ends the trace, and is raised when the `with` ends."""

    def __init__(self, read: Callable[[], Mapping[str, int]], interval_s: float = INTERVAL_S) -> None:
        self._read = read
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="counter trace", daemon=True)
        self._error: BaseException | None = None
        self.samples: list[CounterSample] = []

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            before = time.monotonic()  # a read starts after it: no sample is dated after what it read
            try:
                values = self._read()
            except Exception as e:  # raised in the trial's thread when the trace ends
                self._error = e
                return
            self.samples.append(CounterSample(before, dict(values)))
            next_at += self._interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def __enter__(self) -> CounterTrace:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if kind is not None:
            return
        if self._error is not None:
            raise self._error
        if self._thread.is_alive():  # a read that never returned: the trace is not whole
            raise TrialError("the counter trace's read did not return within 30 s of the trial's end")


def _cwnd_at(probe: Sequence[ProbeSample], instants: Sequence[float]) -> list[int | None]:
    """tcp_probe's window at each instant: that of the last ACK at or before it (None before the first)."""
    out: list[int | None] = []
    k, last = 0, None
    for t in instants:
        while k < len(probe) and probe[k].time <= t:
            last = probe[k].snd_cwnd
            k += 1
        out.append(last)
    return out


def _text(values: Sequence[float | int | None], fmt: str = "{}") -> str:
    return ";".join("" if v is None else fmt.format(v) for v in values)


def pipeack_metrics(samples: Sequence[CounterSample], probe: Sequence[ProbeSample], start: float) -> dict[str, Any]:
    """A trial's row from newcwv's own counters (`samples`) and the sending connection's tcp_probe trace
    (`probe`), on a time axis from `start` (the first request).  The counters are the sending connection's
    from its first ACK on, which tcp_probe dates; before it, the client's connection, which runs newcwv
    too and has sent its request but received nothing yet, may have published its own, and those samples
    are left out.

    - trace_s, trace_pipeack, trace_cwnd, trace_probe_cwnd: every sample's time since `start`, the
      algorithm's pipeACK (empty while undefined) and cwnd, and tcp_probe's window at that instant;
    - max_cwnd: the largest window tcp_probe saw on any ACK;
    - pipeack_cv: the coefficient of variation of pipeACK over the samples where it has a value above
      zero (zero: every sample of the sampling period has expired, an idle sender's);
    - first_nonvalidated_s: the first sample where pipeACK < cwnd / 2 (RFC 7661 4.3: the
      non-validated phase), by the algorithm's own values; empty if none was;
    - nonvalidated_share: the share of the samples after pipeACK's first value that were so;
    - growth_nonvalidated_share: the same share while the window grows: up to the first sample at the
      trial's largest cwnd (by the algorithm's own values)."""
    first_ack = probe[0].time if probe else math.inf
    kept = [s for s in samples if s.time >= max(start, first_ack)]
    instants = [s.time for s in kept]
    pipeack = [None if s.values["last_pipeack"] == UNDEFINED else s.values["last_pipeack"] for s in kept]
    cwnd = [s.values["last_cwnd"] for s in kept]
    defined = [(p, c, s.time - start) for p, c, s in zip(pipeack, cwnd, kept, strict=True) if p is not None]
    nonvalidated = [t for p, c, t in defined if 2 * p < c]
    positive = [float(p) for p, _, _ in defined if p > 0]
    top = cwnd.index(max(cwnd)) if cwnd else 0
    growing = [(p, c) for p, c in zip(pipeack[: top + 1], cwnd[: top + 1], strict=True) if p is not None]
    acks = [s.snd_cwnd for s in probe if s.time >= start]
    return {
        "trace_s": _text([t - start for t in instants], "{:.2f}"),
        "trace_pipeack": _text(pipeack),
        "trace_cwnd": _text(cwnd),
        "trace_probe_cwnd": _text(_cwnd_at(probe, instants)),
        "max_cwnd": max(acks) if acks else None,
        "pipeack_cv": (
            round(statistics.pstdev(positive) / statistics.fmean(positive), 4) if len(positive) >= 2 else None
        ),
        "first_nonvalidated_s": round(nonvalidated[0], 2) if nonvalidated else None,
        "nonvalidated_share": round(len(nonvalidated) / len(defined), 4) if defined else None,
        "growth_nonvalidated_share": (round(sum(2 * p < c for p, c in growing) / len(growing), 4) if growing else None),
    }
