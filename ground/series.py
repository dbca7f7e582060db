"""A trial's time series: each flow's cwnd, ssthresh, smoothed RTT and goodput over the trial, and the
bottleneck queue's backlog beside them.

tcp_probe reports a sender's state at every ACK; `from_probe` resamples it
on a fixed step (STEP_S) per flow: at each step the last state seen (cwnd
and ssthresh in segments, the SRTT in ms) and the goodput over the step (the
bytes newly acknowledged, snd_una's advance).  Where the lab sampled the
bottleneck's queue (`QueueSample`, read from its qdisc's counters on the same
clock, CLOCK_MONOTONIC), each point also carries the backlog in packets at
the step's end (the last sample within the step; none where no sample fell
in it), the same for every flow at that step.  A workload returns the series
in its metrics under FIELD, in its JSON form (`as_json`: rows travel as JSON
from a lab's process); the trial log (ground.trials.TrialLog) stores it as a
CSV file of its own beside the figure's CSV, `<figure>.series/<name>.csv`,
and puts that file's name in the row's FILE_COLUMN.  `read` loads one back
(`run.sh plot`).
"""

from __future__ import annotations

import bisect
import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ground.tcpprobe import UNSET_SSTHRESH, ProbeSample

# A workload's metric holding its series (as_json), and the row column naming its stored file.
FIELD = "time_series"
FILE_COLUMN = "time_series_file"
DIR_SUFFIX = ".series"  # <figure>.series/<name>.csv beside the figure's CSV
# The step the series is resampled on: ten a second, 2,000 points a flow in a long trial of 200 s.
STEP_S = 0.1
COLUMNS = ("time_s", "flow", "cwnd", "ssthresh", "srtt_ms", "goodput_mbit", "queue_pkts")
WITHOUT_QUEUE = COLUMNS[:-1]  # files stored before the queue was sampled
_SEQ = 2**32  # snd_una wraps


@dataclass(frozen=True)
class Point:
    """One flow at the end of one step: `time_s` from the trial's first sample; ssthresh None before the
    first loss; srtt_ms None before the first RTT sample."""

    time_s: float
    flow: str
    cwnd: int
    ssthresh: int | None
    srtt_ms: float | None
    goodput_mbit: float
    queue_pkts: int | None = None  # the bottleneck's backlog at the step's end, where it was sampled


@dataclass(frozen=True)
class QueueSample:
    """The bottleneck queue's backlog at one moment (`time`: seconds, CLOCK_MONOTONIC, as tcp_probe's)."""

    time: float
    packets: int
    bytes: int


@dataclass(frozen=True)
class TimeSeries:
    step_s: float
    points: tuple[Point, ...]

    def flows(self) -> list[str]:
        """The flows, in the order they first appear."""
        return list(dict.fromkeys(p.flow for p in self.points))

    def of(self, flow: str) -> list[Point]:
        return [p for p in self.points if p.flow == flow]

    def as_json(self) -> dict[str, Any]:
        """The series as JSON values (a row's metric crosses processes as JSON)."""
        return {"step_s": self.step_s, "columns": list(COLUMNS), "rows": [_cells(p) for p in self.points]}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TimeSeries:
        columns = list(doc.get("columns") or [])
        if columns not in (list(COLUMNS), list(WITHOUT_QUEUE)):
            raise ValueError(f"a time series has the columns {list(COLUMNS)}, not {doc.get('columns')!r}")
        return cls(float(doc["step_s"]), tuple(_point(row) for row in doc["rows"]))

    def csv_bytes(self) -> bytes:
        out = io.StringIO(newline="")
        writer = csv.writer(out)
        writer.writerow([*COLUMNS, "step_s"])
        for p in self.points:
            writer.writerow([*("" if v is None else v for v in _cells(p)), self.step_s])
        return out.getvalue().encode()


def _cells(p: Point) -> list[Any]:
    return [p.time_s, p.flow, p.cwnd, p.ssthresh, p.srtt_ms, p.goodput_mbit, p.queue_pkts]


def _point(row: Sequence[Any]) -> Point:
    time_s, flow, cwnd, ssthresh, srtt_ms, goodput, *queue = row  # no queue in a file stored before it
    return Point(
        float(time_s),
        str(flow),
        int(cwnd),
        None if ssthresh in (None, "") else int(ssthresh),
        None if srtt_ms in (None, "") else float(srtt_ms),
        float(goodput),
        None if not queue or queue[0] in (None, "") else int(queue[0]),
    )


def read(path: Path) -> TimeSeries:
    """A stored series (`TimeSeries.csv_bytes`)."""
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] not in ([*COLUMNS, "step_s"], [*WITHOUT_QUEUE, "step_s"]):
        raise ValueError(f"{path}: not a time series file (its header is {rows[0] if rows else 'missing'})")
    step = float(rows[1][-1]) if len(rows) > 1 else STEP_S
    return TimeSeries(step, tuple(_point(r[:-1]) for r in rows[1:]))


def from_probe(samples: Iterable[ProbeSample], step_s: float = STEP_S, queue: Sequence[QueueSample] = ()) -> TimeSeries:
    """Each flow's state at the end of every step from the first sample, its goodput over the step, and the
    bottleneck's backlog then (the last of `queue`'s samples within the step)."""
    by_flow: dict[str, list[ProbeSample]] = {}
    for s in samples:
        by_flow.setdefault(s.flow, []).append(s)
    if not by_flow:
        return TimeSeries(step_s, ())
    start = min(flow[0].time for flow in by_flow.values())
    points: list[Point] = []
    for flow, seen in by_flow.items():
        acked = seen[0].snd_una
        i = 0
        step = int((seen[0].time - start) // step_s) + 1  # a flow that starts late starts its series then
        last = seen[0]
        while i < len(seen):
            end = start + step * step_s
            while i < len(seen) and seen[i].time <= end:
                last = seen[i]
                i += 1
            advanced = (last.snd_una - acked) % _SEQ
            acked = last.snd_una
            backlog = _backlog_in(queue, end - step_s, end)
            points.append(
                Point(
                    round(step * step_s, 6),
                    flow,
                    last.snd_cwnd,
                    None if last.ssthresh >= UNSET_SSTHRESH else last.ssthresh,
                    round(last.srtt_us / 1e3, 3) if last.srtt_us > 0 else None,
                    round(advanced * 8 / step_s / 1e6, 4),
                    backlog,
                )
            )
            step += 1
    points.sort(key=lambda p: (p.time_s, p.flow))
    return TimeSeries(step_s, tuple(points))


def _backlog_in(queue: Sequence[QueueSample], after: float, until: float) -> int | None:
    """The backlog of the last sample in (after, until], or None where none fell there."""
    k = bisect.bisect_right(queue, until, key=lambda q: q.time)
    return queue[k - 1].packets if k and queue[k - 1].time > after else None


def is_series_file(path: Path) -> bool:
    """Whether a CSV is a trial's time series (in a `<figure>.series` directory), not a figure's rows."""
    return path.parent.name.endswith(DIR_SUFFIX)
