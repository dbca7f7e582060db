"""A tracer for the `tcp:tcp_probe` tracepoint: what the sender's TCP really did.

The tracepoint (successor of the `tcp_probe` module seed 001 used) fires for
each segment a TCP socket receives on an established connection; on the data
sender that is each ACK, with the sender's snd_cwnd, ssthresh and srtt.  The
tracer works in a tracefs instance of its own (so the machine's global trace
settings are never touched), filtered to one experiment's ports in the kernel
and to its lab's addresses as it reads (the tracepoint sees every namespace:
another lab's flows on the same ports are left out), with a buffer large
enough for 100 Mbit/s, and read continuously.  It refuses a
capture in which the kernel dropped events (the overrun counters), and
leaves nothing behind: the instance is removed and, if it mounted tracefs,
tracefs unmounted, all through the run's ledger.
"""

from __future__ import annotations

import csv
import errno
import io
import itertools
import os
import re
import select
import threading
import time
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from ipaddress import IPv4Network, ip_address
from pathlib import Path

from ground.errors import NetreproError, SetupError, TrialError
from ground.ledger import Ledger
from ground.results import replace_file

TRACEFS = Path("/sys/kernel/tracing")
_counter = itertools.count()

_LINE = re.compile(
    r"\s(?P<ts>\d+\.\d+): tcp_probe: family=\S+ src=(?P<src>\S+) dest=(?P<dst>\S+) mark=\S+ "
    r"data_len=(?P<data_len>\d+) snd_nxt=0x(?P<snd_nxt>[0-9a-f]+) snd_una=0x(?P<snd_una>[0-9a-f]+) "
    r"snd_cwnd=(?P<snd_cwnd>\d+) ssthresh=(?P<ssthresh>\d+) snd_wnd=\d+ srtt=(?P<srtt>\d+)"
)


class TraceError(NetreproError):
    """The capture is incomplete (events lost) or tracefs is unusable."""


class TraceIncomplete(TraceError, TrialError):
    """The kernel dropped events, or the reader fell behind: this capture cannot be trusted."""


class TraceUnavailable(TraceError, SetupError):
    """This kernel has no tcp:tcp_probe tracepoint."""


@dataclass(frozen=True)
class ProbeSample:
    time: float  # seconds, CLOCK_MONOTONIC
    flow: str  # "src>dst" as ip:port, from the socket's point of view
    snd_cwnd: int  # segments
    ssthresh: int  # segments (2147483647 until the first loss)
    srtt_us: int
    snd_una: int
    snd_nxt: int
    data_len: int  # payload of the segment that triggered the event (0 for a pure ACK)


def parse_line(line: str) -> ProbeSample | None:
    m = _LINE.search(line)
    if m is None:
        return None
    return ProbeSample(
        time=float(m["ts"]),
        flow=f"{m['src']}>{m['dst']}",
        snd_cwnd=int(m["snd_cwnd"]),
        ssthresh=int(m["ssthresh"]),
        srtt_us=int(m["srtt"]),
        snd_una=int(m["snd_una"], 16),
        snd_nxt=int(m["snd_nxt"], 16),
        data_len=int(m["data_len"]),
    )


AF_INET = 2


def event_filter(ports: Sequence[int]) -> str:
    """The tracepoint filter that keeps the experiment's flows: IPv4, from or to one of its ports.

    The addresses cannot be filtered on in the kernel: the event's saddr and daddr are 28-byte
    arrays (a sockaddr_in6), and a filter on a field of that size is accepted but compares nothing
    (it never matches); the capture keeps its lab's addresses itself (`within`).
    """
    if not ports:
        raise ValueError("tcp_probe needs the experiment's ports to filter on")
    return f"family == {AF_INET} && (" + " || ".join(f"sport == {p} || dport == {p}" for p in ports) + ")"


def within(sample: ProbeSample, network: IPv4Network) -> bool:
    """Whether both ends of a sample's connection are in `network` (a lab's subnet)."""
    ends = sample.flow.split(">")
    try:
        return len(ends) == 2 and all(ip_address(end.rpartition(":")[0]) in network for end in ends)
    except ValueError:
        return False


class TcpProbe:
    """One capture of tcp_probe events for the given ports, of the connections within `network` (the
    lab's subnet: `Lab.subnet`)."""

    def __init__(self, ledger: Ledger, ports: Sequence[int], buffer_kb: int = 16384, *, network: IPv4Network) -> None:
        self.filter = event_filter(ports)
        self.ledger = ledger
        self.ports = list(ports)
        self.network = network
        self.buffer_kb = buffer_kb
        self.instance = TRACEFS / "instances" / f"netrepro-{os.getpid()}-{next(_counter)}"
        self.samples: list[ProbeSample] = []
        self._stop = threading.Event()
        self._flush_asked = threading.Event()
        self._flush_time = 0.0
        self._flushed = threading.Event()
        self._reader: threading.Thread | None = None
        self._wake_r, self._wake_w = os.pipe()  # wakes the reader for a flush or the stop
        self._pending = b""

    def start(self) -> TcpProbe:
        self.ledger.mount(TRACEFS, ["mount", "-t", "tracefs", "nodev", str(TRACEFS)])
        event = self.instance / "events/tcp/tcp_probe"
        with self.ledger.change({"kind": "tracefs", "path": str(self.instance)}):
            self.instance.mkdir()
        if not event.is_dir():
            raise TraceUnavailable("this kernel has no tcp:tcp_probe tracepoint")
        (self.instance / "buffer_size_kb").write_text(f"{self.buffer_kb}\n")
        (self.instance / "trace_clock").write_text("mono\n")
        (event / "filter").write_text(self.filter + "\n")
        self._reader = threading.Thread(target=self._read, name="tcp_probe reader", daemon=True)
        self._reader.start()
        try:
            (event / "enable").write_text("1\n")
        except BaseException:
            self._end_reader()  # its open trace_pipe would keep the ledger from removing the instance
            raise
        return self

    def _read(self) -> None:
        fd = os.open(self.instance / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        try:
            while True:
                stopping = self._stop.is_set()
                flushing = self._flush_asked.is_set()
                ready, _, _ = select.select([fd, self._wake_r], [], [], 0.01 if flushing or stopping else 1.0)
                if self._wake_r in ready:
                    os.read(self._wake_r, 64)
                got = self._drain(fd)
                if stopping and not got:
                    return
                # Caught up: nothing left to read, or (under other traffic on
                # the same ports) an event recorded after the flush was asked.
                if flushing and (not got or (self.samples and self.samples[-1].time >= self._flush_time)):
                    self._flush_asked.clear()
                    self._flushed.set()
        finally:
            os.close(fd)

    def _drain(self, fd: int) -> bool:
        got = False
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError as e:
                if e.errno == errno.EAGAIN:
                    return got
                raise
            if not chunk:
                return got
            got = True
            lines = (self._pending + chunk).split(b"\n")
            self._pending = lines.pop()
            for line in lines:
                sample = parse_line(line.decode(errors="replace"))
                if sample is not None and within(sample, self.network):
                    self.samples.append(sample)

    def flush(self, timeout: float = 2.0) -> list[ProbeSample]:
        """Wait until every event recorded so far has been read; return all samples."""
        self._flushed.clear()
        self._flush_time = time.monotonic()  # the trace clock is CLOCK_MONOTONIC too
        self._flush_asked.set()
        os.write(self._wake_w, b"f")
        if not self._flushed.wait(timeout):
            raise TraceIncomplete(f"tcp_probe reader did not catch up within {timeout}s")
        return self.samples

    def take(self, timeout: float = 2.0) -> list[ProbeSample]:
        """Flush, then hand over the samples and forget them: a capture that lasts a whole
        figure keeps only what no trial has taken yet."""
        self.flush(timeout)
        taken, self.samples = self.samples, []
        return taken

    def lost_events(self) -> int:
        lost = 0
        for stats in (self.instance / "per_cpu").glob("cpu*/stats"):
            for line in stats.read_text().splitlines():
                key, _, value = line.partition(":")
                if key.strip() in ("overrun", "dropped events"):
                    lost += int(value.strip())
        return lost

    def _end_reader(self, timeout: float = 10.0) -> None:
        """Tell the reader to drain what is left and close trace_pipe; wait for it."""
        self._stop.set()
        os.write(self._wake_w, b"s")
        if self._reader is not None:
            self._reader.join(timeout)

    def stop(self) -> list[ProbeSample]:
        """Disable, drain, check for lost events, remove the instance."""
        try:
            (self.instance / "events/tcp/tcp_probe/enable").write_text("0\n")
            self._end_reader()
            lost = self.lost_events()
        finally:
            # Again, should a signal have cut the wait above short: the kernel refuses to remove
            # an instance (EBUSY) while the reader still holds its trace_pipe open.
            self._end_reader()
            self.instance.rmdir()
            os.close(self._wake_r)
            os.close(self._wake_w)
        if lost:
            raise TraceIncomplete(f"tcp_probe lost {lost} events: enlarge buffer_size_kb (now {self.buffer_kb})")
        return self.samples

    def __enter__(self) -> TcpProbe:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.instance.is_dir():
            self.stop()


def write_csv(samples: Sequence[ProbeSample], path: Path) -> None:
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow([f.name for f in fields(ProbeSample)])
    writer.writerows(astuple(s) for s in samples)
    replace_file(path, text.getvalue().encode())


def sender_samples(samples: Sequence[ProbeSample], sender: str) -> list[ProbeSample]:
    """The samples of the connections whose local end is `sender` ("ip:port")."""
    return [s for s in samples if s.flow.startswith(f"{sender}>")]


def data_samples(samples: Sequence[ProbeSample], sender: str) -> list[ProbeSample]:
    """The samples of the one connection from `sender` ("ip:port") that had the most data acknowledged: a
    server port may hold a control connection beside the data (iperf3's), whose few bytes are no flow."""
    by_flow: dict[str, list[ProbeSample]] = {}
    for s in sender_samples(samples, sender):
        by_flow.setdefault(s.flow, []).append(s)
    return max(by_flow.values(), key=_acked_bytes, default=[])


def _acked_bytes(samples: Sequence[ProbeSample]) -> int:
    return sum((b.snd_una - a.snd_una) % 2**32 for a, b in itertools.pairwise(samples))


UNSET_SSTHRESH = 2**31 - 1  # TCP_INFINITE_SSTHRESH: no loss yet
SSTHRESH_FLOOR = 2  # the least ssthresh TCP sets (tcp_reno_ssthresh: max(cwnd / 2, 2); an RTO at cwnd 1)


def reductions(samples: Sequence[ProbeSample]) -> list[tuple[int, int]]:
    """(cwnd before, ssthresh after) at each multiplicative decrease of one flow (`reduction_starts`)."""
    return [(samples[i - 1].snd_cwnd, samples[i].ssthresh) for i in reduction_starts(samples)]


def reduction_starts(samples: Sequence[ProbeSample]) -> list[int]:
    """The index of the sample that first shows each multiplicative decrease of one flow.

    A sample is taken before its ACK is processed, so a new ssthresh shows in
    the sample after the ACK that triggered the reduction, whose own sample
    holds the window the reduction was computed from.  Only changes that
    start a reduction count (ssthresh below the window, and the window
    falling next): the kernel also moves ssthresh without one (seen here:
    after an undone reduction it tracks 3/4 of a growing cwnd).
    """
    out = []
    for i, (before, after) in enumerate(itertools.pairwise(samples), start=1):
        if (
            after.flow == before.flow
            and after.ssthresh != before.ssthresh
            and after.ssthresh != UNSET_SSTHRESH
            and after.ssthresh < before.snd_cwnd
            and after.snd_cwnd < before.snd_cwnd
        ):
            out.append(i)
    return out


def delivery_rate(samples: Sequence[ProbeSample]) -> float:
    """Bytes per second the ACKs of one flow delivered between its first and last sample (snd_una)."""
    acked = (samples[-1].snd_una - samples[0].snd_una) % 2**32
    return acked / (samples[-1].time - samples[0].time)


def implausible_ssthresh(samples: Sequence[ProbeSample]) -> list[int]:
    """The samples of one flow whose ssthresh no TCP code could have set: the rule of the BPF programs'
    ssthresh guard (kmod/bpf/ss_guard.h), applied to a trace, so that any congestion control, the
    kernel's own too, is judged by it.

    TCP moves ssthresh to what the congestion control computed from the window (at most the window),
    back to infinite (an undo from slow start), or up to 3/4 of the window or its value before the
    reduction (undo, restart after idle), and never below 2 segments (a timeout at a window of 1
    sets 2); so a changed, finite ssthresh above 2, its last plausible value, the highest window
    seen and the window of the sample before is implausible.  Such a
    sample's window does not count in the highest: the kernel's rate reduction (PRR) derives the
    window from ssthresh and shows the garbage in the same sample (seen: ssthresh 2165326096 with cwnd
    433065224 = ssthresh / prior_cwnd 5 + in flight).  Returns the index of the first sample of each
    run of implausible ones.
    """
    out: list[int] = []
    last: int | None = None
    highest = 0
    in_run = False
    for i, s in enumerate(samples):
        ss = s.ssthresh
        if last is not None and ss not in (last, UNSET_SSTHRESH):
            plausible = 0 if last == UNSET_SSTHRESH else last
            bound = max(SSTHRESH_FLOOR, plausible, highest, samples[i - 1].snd_cwnd)
        else:
            bound = ss
        if ss > bound:
            if not in_run:
                out.append(i)
            in_run = True
            continue
        last, in_run = ss, False
        highest = max(highest, s.snd_cwnd)
    return out
