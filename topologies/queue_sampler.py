"""The bottleneck queue's backlog sampled while a trial runs, for its time series (ground.series).

A thread of its own reads the bottleneck FIFO's counters (`tc -s -j qdisc show`
on the bottleneck's egress port, in its namespace: topologies.lab.Lab.
bottleneck_queue) every `step_s`, and keeps each reading's backlog with the
moment it was taken (the middle of the read, CLOCK_MONOTONIC: tcp_probe's clock,
so each sample lines up with the flows' states).  A read that fails (the lab
torn down under it, tc's output cut) is skipped and counted (the row's `queue_reads_failed`); the trial goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from types import TracebackType

from ground.flows import QdiscStats
from ground.series import QueueSample

log = logging.getLogger("netrepro.lab")


class QueueSampler:
    """Samples `read()` (the bottleneck FIFO's counters) every `step_s` seconds between enter and exit."""

    def __init__(self, read: Callable[[], QdiscStats], step_s: float) -> None:
        if step_s <= 0:
            raise ValueError(f"a sampling step is positive, not {step_s}")
        self.read = read
        self.step_s = step_s
        self.samples: list[QueueSample] = []
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="queue sampler", daemon=True)

    def __enter__(self) -> QueueSampler:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        if self.failed:
            log.debug("queue sampler: %d of %d reads failed", self.failed, self.failed + len(self.samples))

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            before = time.monotonic()
            try:
                fifo = self.read()
            except Exception as e:
                self.failed += 1
                if self.failed == 1:
                    log.debug("queue sampler: a read failed: %s", e)
            else:
                after = time.monotonic()
                self.samples.append(QueueSample(round((before + after) / 2, 6), fifo.qlen, fifo.backlog_bytes))
            next_at += self.step_s
            self._stop.wait(max(0.0, next_at - time.monotonic()))
