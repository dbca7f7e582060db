"""The userspace delay line: the C program beside this file and the code that drives it.

The program (delayline.c) holds packets handed to it by NFQUEUE and releases
each when its due time passes (its delay, or a draw within +- a jitter, in
order), dropping a seeded pseudo-random fraction.  It
reads commands on stdin and answers each with one JSON line; it exits when
stdin closes, so a controller that dies takes it along.  This module starts
it in the switch's namespace, sets its parameters and reads its counters,
and how late it released packets in a window (`Lateness`: a trial's).
"""

from __future__ import annotations

import json
import math
import select
import subprocess
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from ground.errors import SetupError
from ground.ledger import Ledger
from ground.proc import Netns, Process
from ground.units import Duration, Probability

HERE = Path(__file__).resolve().parent
BINARY = HERE / "delayline"


class DelayLineError(SetupError):
    """The delay line refused a command or stopped answering."""


def argv(queues: list[int], capacity: int = 65536) -> list[str]:
    args = [str(BINARY)]
    for q in queues:
        args += ["--queue", str(q)]
    return [*args, "--capacity", str(capacity)]


def set_command(queue: int, delay: Duration, loss: Probability, seed: int, jitter: Duration = Duration(0)) -> str:
    return f"set {queue} delay_us={delay.us} jitter_us={jitter.us} loss={loss.fraction:.9f} seed={seed}"


FINE_BUCKETS = 16  # the histogram's buckets of one microsecond each, from 0; then eight per power of two


def bucket_upper_us(bucket: int) -> float:
    """The upper end (exclusive) of a lateness bucket, in us (delayline.c's `late_bucket`)."""
    if bucket < FINE_BUCKETS:
        return float(bucket + 1)
    octave, step = divmod(bucket - FINE_BUCKETS, 8)
    width = 1 << (octave + 1)  # 2^(e-3) with e = octave + 4
    return float((9 + step) * width)


@dataclass(frozen=True)
class Lateness:
    """How late the delay line released the packets of one window (a trial): after their due time.

    Percentiles are a histogram bucket's upper end (within 1 us below 16 us, within 12.5 % above), and
    never past the maximum, which is exact (CI once read "p99 18.432 ms ... max 18.272 ms": the p99's
    bucket ended past the latest packet).  `packets`: the releases counted."""

    packets: int
    median_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, replies: Sequence[dict[str, Any]]) -> Lateness:
        """The lateness of one window over the replies of `lateness` of every delay line in a lab."""
        merged: dict[int, int] = {}
        for reply in replies:
            for bucket, n in reply.get("buckets") or []:
                merged[int(bucket)] = merged.get(int(bucket), 0) + int(n)
        buckets = sorted(merged.items())
        count = sum(int(reply.get("count") or 0) for reply in replies)
        max_ms = max((int(reply.get("max_ns") or 0) for reply in replies), default=0) / 1e6
        # a reply without its maximum (none does: delayline.c always sends it) caps nothing
        cap = max_ms if all("max_ns" in reply for reply in replies) else math.inf
        return cls(
            packets=count,
            median_ms=min(percentile_us(buckets, count, 50) / 1e3, cap),
            p99_ms=min(percentile_us(buckets, count, 99) / 1e3, cap),
            max_ms=max_ms,
        )

    def columns(self) -> dict[str, Any]:
        """A trial row's columns."""
        return {
            "late_packets": self.packets,
            "late_median_ms": round(self.median_ms, 3),
            "late_p99_ms": round(self.p99_ms, 3),
            "late_max_ms": round(self.max_ms, 3),
        }


def percentile_us(buckets: Sequence[Sequence[int]], count: int, q: float) -> float:
    """The nearest-rank q-th percentile of a lateness histogram ([bucket, packets] pairs), as the upper
    end of the bucket that holds it; 0 for an empty window."""
    if count <= 0:
        return 0.0
    rank = max(1, math.ceil(q / 100 * count))
    seen = 0
    for bucket, n in sorted((int(b), int(n)) for b, n in buckets):
        seen += n
        if seen >= rank:
            return bucket_upper_us(bucket)
    return bucket_upper_us(max(int(b) for b, _ in buckets)) if buckets else 0.0


class DelayLine:
    """A running delay line serving one NFQUEUE number per direction."""

    def __init__(self, ns: Netns, queues: list[int], ledger: Ledger, timeout: float = 5.0) -> None:
        if not BINARY.exists():
            raise DelayLineError(f"{BINARY} is not built; run.sh builds it (make -C {HERE})")
        self.timeout = timeout
        self.process = Process(
            argv(queues), ns, ledger=ledger, stdin=subprocess.PIPE, stdout=subprocess.PIPE, label="delayline"
        )
        ready = self._reply()
        if not ready.get("ready"):
            self.stop()
            raise DelayLineError(f"delay line did not start: {ready.get('error', ready)}")

    def _reply(self) -> dict[str, Any]:
        out = cast(IO[bytes], self.process.popen.stdout)
        readable, _, _ = select.select([out], [], [], self.timeout)
        line = out.readline() if readable else b""
        if not line:
            err = (
                self.process.popen.stderr.read().decode()
                if not self.process.running() and self.process.popen.stderr
                else ""
            )
            raise DelayLineError(f"delay line gave no answer within {self.timeout}s {err}".strip())
        return cast(dict[str, Any], json.loads(line))

    def command(self, line: str) -> dict[str, Any]:
        stdin = cast(IO[bytes], self.process.popen.stdin)
        stdin.write(line.encode() + b"\n")
        stdin.flush()
        reply = self._reply()
        if not reply.get("ok"):
            raise DelayLineError(f"delay line refused {line!r}: {reply.get('error', reply)}")
        return reply

    def set(self, queue: int, delay: Duration, loss: Probability, seed: int, jitter: Duration = Duration(0)) -> None:
        self.command(set_command(queue, delay, loss, seed, jitter))

    def stats(self) -> dict[str, Any]:
        return self.command("stats")

    def lateness(self) -> dict[str, Any]:
        """How late the packets released since the last call (or the start) were, as the program says
        it (Lateness.of reads it); a new window starts."""
        return self.command("lateness")

    def drain(self, queues: Collection[int], within_s: float, step_s: float = 0.01) -> None:
        """Return once `queues` hold no packet, or after `within_s` (traffic that goes on keeps
        a queue busy; what it held before the call has left by then if `within_s` is its delay)."""
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            held = self.stats()["queues"]
            if all(held[str(q)]["held"] == 0 for q in queues):
                return
            time.sleep(min(step_s, max(0.0, deadline - time.monotonic())))

    def stop(self) -> None:
        stdin = self.process.popen.stdin
        if stdin is not None and not stdin.closed:
            stdin.close()  # EOF: the delay line unbinds and exits by itself
        self.process.stop(grace=2.0)
