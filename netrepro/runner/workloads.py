"""Trials: one workload run on a lab with one parameter setting, as a result row.

Each workload takes the session (netrepro.runner.session: the servers and host
settings a figure's trials share), the trial (netrepro.studykit.trial.Trial)
and the trial's workload parameters, typed (its own dataclass, each field a
`key(...)` declaration: one per key, one default), and returns the trial's
metrics; a TrialError (a client or parser that did not get what it needed)
or a failed tool fails the trial, anything else stops the run
(sweep.trial_outcome).  A workload declares itself (`Workload`): its
parameters' dataclass, the metrics it reports and the tools it runs,
registered by name in WORKLOADS; `run.sh workloads` lists them.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ground import flows, latency, series
from ground.errors import UserError
from ground.path import MSS
from ground.tcpprobe import ProbeSample, sender_samples
from netrepro.runner import countertrace
from netrepro.runner.bulk_flows import (
    LONG_FLOW_WINDOWS_S,
    CompetingKeys,
    LongFlowKeys,
    base_rtt_ms,
    competing,
    joined,
    long_flow,
    pair_flow,
)
from netrepro.runner.session import Metrics, Session
from netrepro.studykit.params import Key
from netrepro.studykit.trial import Trial, key, keys_of
from servers import browser, burst_trace, clients, content
from servers.apache import HTTP_PORT, TLS_PORT
from servers.bursts import run_bursts
from servers.capture import PacketCapture


def _port(protocol: str) -> int:
    return TLS_PORT if clients.is_tls(protocol) else HTTP_PORT


def first_flight(samples: list[ProbeSample], server: str, port: int) -> dict[str, int | None]:
    """The server's initial window and first flight, from its first tcp_probe sample.

    Apache defers accept until the request arrives (TCP_DEFER_ACCEPT), so the
    request never passes tcp_rcv_established and the server's first sample
    is the first ACK of its response.  The sample is taken before that ACK is
    processed: snd_cwnd is still the initial window, and snd_nxt - snd_una is
    everything sent before any of it was acknowledged, the first flight.
    """
    first = next((s for s in samples if s.flow.startswith(f"{server}:{port}>")), None)
    if first is None:
        return {"initcwnd_measured": None, "first_flight_segments": None}
    in_flight = (first.snd_nxt - first.snd_una) % 2**32
    return {"initcwnd_measured": first.snd_cwnd, "first_flight_segments": math.ceil(in_flight / MSS)}


def download(session: Session, trial: Trial, keys: DownloadKeys) -> Metrics:
    """One object over one new connection, timed by curl; the first flight read from tcp_probe."""
    protocol = keys.protocol
    obj = session.web_object(keys.object_bytes)
    lab = session.lab
    server_ip = lab.ip("server")
    probe = session.probe(_port(protocol))
    earlier = list(probe.flush())
    d = clients.download(lab.client, server_ip, obj.path, protocol, cacert=session.apache.config.cert_file)
    # Keep only connections this trial opened.  The server's first sample is
    # the first ACK of its response (see first_flight), which can reach it
    # after curl is done: with the whole response in one flight it leaves
    # the client with the last byte and takes half an RTT to arrive.  Wait
    # for it, or it would count as the next trial's.
    old = {s.flow for s in earlier}
    sender = f"{server_ip}:{_port(protocol)}>"
    deadline = time.monotonic() + lab.path.rtt.seconds + 1.0
    while True:
        samples = [s for s in probe.flush()[len(earlier) :] if s.flow not in old]
        if any(s.flow.startswith(sender) for s in samples) or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    return {
        "download_time_ms": round(d.total * 1e3, 3),
        "connect_ms": round(d.connect * 1e3, 3),
        "first_byte_ms": round(d.first_byte * 1e3, 3),
        "bytes": d.size,
        "negotiated": d.negotiated,
        **first_flight(samples, server_ip, _port(protocol)),
        **latency.columns([(sender_samples(samples, f"{server_ip}:{_port(protocol)}"), base_rtt_ms(lab))]),
    }


def page_load(session: Session, trial: Trial, keys: PageLoadKeys) -> Metrics:
    """A page (HTML and all its objects) loaded by h2load or a real browser: PLT, throughput, connections.

    The initial window comes from tcp_probe; so does the server's count of connections, beside the client's."""
    protocol = keys.protocol
    lab = session.lab
    page = session.page(keys.page)
    server = lab.ip("server")
    probe = session.probe()
    old = {s.flow for s in probe.take()}  # the samples of earlier trials are let go
    if keys.client == "h2load":
        result = clients.load_page(lab.client, server, page, protocol, session.work_dir, ledger=session.ledger)
        measured: Metrics = {"connections": result.connections}
        plt_ms = result.page_load_time * 1e3
        negotiated, port = result.negotiated, _port(protocol)
    else:
        if (why := browser.refused(keys.client, protocol)) is not None:  # preflight refuses it first
            raise UserError(why)
        load = browser.load_in_browser(
            lab.client,
            server,
            page.html.path,
            protocol,
            session.apache.config.cert_file.read_bytes(),
            session.browser_folder(),
            client=keys.client,
            ledger=session.ledger,
            resources=len(page.resources),
            timeout=BROWSER_LOAD_TIMEOUT_S,
        )
        plt_ms, negotiated, port = load.plt_ms, load.negotiated, TLS_PORT
        measured = {
            "plt_ms": load.plt_ms,
            "onload_ms": load.onload_ms,
            "objects": load.objects,
            "connections": load.connections,
            "browser": load.browser,
            "browser_version": load.version,
        }
    # A page load lasts many round trips: the first ACK of every connection has long reached the server.
    samples = [s for s in probe.take() if s.flow not in old]
    return {
        "page_load_time_ms": round(plt_ms, 3),
        "throughput_mbit": round(page.total_bytes * 8 / (plt_ms * 1e3), 4),
        "bytes": page.total_bytes,
        **measured,
        # the server's side of the count: every connection to its port whose ACKs tcp_probe saw
        "server_connections": len({s.flow for s in samples if s.flow.startswith(f"{server}:{port}>")}),
        "negotiated": negotiated,
        **first_flight(samples, server, port),
        **latency.columns([(sender_samples(samples, f"{server}:{port}"), base_rtt_ms(lab))]),
    }


def bulk(session: Session, trial: Trial, keys: BulkKeys) -> Metrics:
    """A fixed-duration bulk download over one HTTP/2 or six HTTP/1.1 connections."""
    protocol = keys.protocol
    # Fixed duration: the object is requested again and again for duration_s.
    obj = session.web_object(keys.object_bytes)
    lab = session.lab
    result = clients.run_bulk(
        lab.client,
        lab.ip("server"),
        obj.path,
        protocol,
        connections=keys.connections,
        duration_s=keys.duration_s,
    )
    return {
        "throughput_mbit": round(result.throughput_bps / 1e6, 4),
        "bytes": result.bytes,
        "seconds": round(result.seconds, 3),
        "connections": result.connections,
        "negotiated": result.negotiated,
    }


BULK_WARMUP_S = 5.0  # the bulk flow's slow start is over before the first burst
SETTLE_IDLE_S = 1.0
BULK_PORT = 5211


def idle_periods(text: str) -> list[float]:
    """`1,3,5` as idle periods in seconds (ValueError says why not)."""
    try:
        idles = [float(part) for part in str(text).split(",")]
    except ValueError:
        raise ValueError(f"idle periods in seconds separated by commas, e.g. 1,3,5, not {text!r}") from None
    if not idles or any(not 0.5 <= t <= 600 for t in idles):
        raise ValueError(f"idle periods from 0.5 to 600 s, not {text!r}")
    return idles


def idle_text(text: str) -> str:
    """Idle periods in their normal form as text (`1, 3.0` is `1,3`): the form of the key idle_s."""
    return ",".join(f"{t:g}" for t in idle_periods(text))


def http_bursts(session: Session, trial: Trial, keys: HttpBurstsKeys) -> Metrics:
    """Bursts of burst_kb over one persistent HTTP/1.1 connection, one after each idle period (idle_s,
    each `repeats` times, shuffled per trial) following two that set the window up, beside a bulk TCP
    flow on the second pair (bulk=1): each burst's time, window and first flight, its retransmissions,
    the bulk flow's goodput; with pipeack_trace=1, newcwv's own pipeACK and cwnd every 0.1 s
    (netrepro.runner.countertrace)."""
    lab = session.lab
    size = keys.burst_kb * 1000
    order = idle_periods(keys.idle_s) * keys.repeats
    random.Random(trial.key).shuffle(order)
    obj = session.web_object(size)
    # Two responses before the counted bursts: the first opens the window from the initial window, the
    # second (after SETTLE_IDLE_S) leaves it as a burst after idle does, so that every counted burst
    # follows a burst of its own size after idle, whatever arm runs.
    plan = [(obj.path, 0.0), (obj.path, SETTLE_IDLE_S)] + [(obj.path, t) for t in order]
    pacer = session.pace(trial.hosts.pacer)
    server_ip = lab.ip("server")
    probe = session.probe(HTTP_PORT)
    old = {s.flow for s in probe.take()}  # the samples of earlier trials are let go
    bulk = None
    if keys.bulk:
        if len(lab.pairs) < 2:
            raise UserError(f"bulk=1: the bulk flow runs on a second client/server pair; this lab has {len(lab.pairs)}")
        pair = lab.pairs[1]
        session.ledger.allow_congestion_control("reno")
        seconds = int(BULK_WARMUP_S + sum(order) + 30 * len(plan) + 30)
        bulk = pair_flow(session, pair, seconds, port=BULK_PORT, cc="reno", interval_s=0.5)
    counters = _pipeack_reader(session, trial) if keys.pipeack_trace else None
    drops_before = lab.bottleneck_reading()
    report = None
    trace = None
    with PacketCapture(
        lab.server, lab.host_port(lab.pairs[0].server), session.work_dir / "bursts.pcap", HTTP_PORT, session.ledger
    ) as capture:
        try:
            if bulk is not None:
                bulk.start()
                time.sleep(BULK_WARMUP_S)
            started = time.monotonic()
            if counters is not None:
                with countertrace.CounterTrace(counters) as trace:
                    bursts = run_bursts(lab.client, server_ip, plan)
            else:
                bursts = run_bursts(lab.client, server_ip, plan)
            if bulk is not None:
                report = bulk.interrupt()
        finally:
            if bulk is not None:
                bulk.stop()
    drops = lab.bottleneck_queue(since=drops_before).drops
    sender = f"{server_ip}:{HTTP_PORT}>"
    samples = [s for s in probe.take() if s.flow not in old and s.flow.startswith(sender)]
    if len({s.flow for s in samples}) != 1:
        raise burst_trace.BurstTraceError(f"tcp_probe shows {len({s.flow for s in samples})} connections, not 1")
    counted = len(plan) - len(order)
    windows = burst_trace.resumed_windows(samples, len(plan))[counted - 1 :]
    departures = burst_trace.burst_departures(capture.packets, server_ip, HTTP_PORT, len(plan))[counted:]
    timed = bursts.bursts[counted:]
    if any(b.size != size for b in bursts.bursts):
        raise burst_trace.BurstTraceError(f"a response was not {size} bytes: {[b.size for b in bursts.bursts]}")
    metrics: Metrics = {
        "bursts": len(timed),
        "idle_s": joined(order, "{:g}"),
        "burst_ms": joined([b.completion_time * 1e3 for b in timed], "{:.1f}"),
        "mean_burst_ms": round(statistics.fmean(b.completion_time * 1e3 for b in timed), 2),
        "cwnd_before": joined([w.cwnd_before for w in windows]),
        "cwnd_resumed": joined([w.cwnd_resumed for w in windows]),
        "retransmitted": joined([d.retransmitted for d in departures]),
        "retrans_per_burst": round(statistics.fmean(d.retransmitted for d in departures), 3),
        "first_flight_retransmitted": joined([d.first_flight_retransmitted for d in departures]),
        "first_flight": joined([d.first_flight for d in departures]),
        "first_flight_ms": joined([d.first_flight_s * 1e3 for d in departures], "{:.1f}"),
        "bottleneck_drops": drops,
        "pacer_used": pacer or "none",
        **latency.columns([(samples, base_rtt_ms(lab))]),
        series.FIELD: series.from_probe(samples).as_json(),
    }
    if report is not None:
        bins = flows.throughput_bins(report, 0.5)
        metrics["bulk_goodput_mbit"] = round(flows.window_throughput(bins, BULK_WARMUP_S, bins[-1].end_s) / 1e6, 4)
    if trace is not None:
        metrics.update(countertrace.pipeack_metrics(trace.samples, samples, started))
    return metrics


def _pipeack_reader(session: Session, trial: Trial) -> Callable[[], Mapping[str, int]]:
    """newcwv's own counters, to read often (pipeack_trace=1): refused as preflight refuses them
    (countertrace.refused), for a trial started some other way."""
    algorithm = session.algorithm("newcwv")
    why = countertrace.refused(trial.cc.name, session.held)
    if why is not None or algorithm is None:
        raise UserError(why or "pipeack_trace=1: newcwv is not loaded by this lab's session")
    return algorithm.counter_reader()


def readback(session: Session, trial: Trial, keys: NoKeys) -> Metrics:
    """No traffic: the variant's effective values as the kernel reports them for the trial's parameters."""
    reported = session.congestion_control(trial)
    return {k.removeprefix("cc_"): v for k, v in reported.items() if k != "cc_impl"}


@dataclass(frozen=True)
class Workload:
    """One kind of trial: what it runs, its parameters (a dataclass of `key` fields), what it reports, the
    tools it needs, and whether each trial stores its flows' time series (ground.series; `run.sh plot`)."""

    name: str
    run: Callable[[Session, Trial, Any], Metrics]
    keys_type: type
    metrics: tuple[str, ...]
    tools: tuple[str, ...]
    time_series: bool = False

    def __call__(self, session: Session, trial: Trial) -> Metrics:
        return self.run(session, trial, trial.workload)

    @property
    def keys(self) -> tuple[Key, ...]:
        """The keys it takes, each declared once (its parameters' fields)."""
        return keys_of(self.keys_type)

    @property
    def doc(self) -> str:
        return (self.run.__doc__ or "").split("\n")[0]


PROTOCOL = Key("protocol", str, "HTTP/1.1, HTTP/2 with prior knowledge (h2c) or over TLS (h2)", clients.PROTOCOLS)
H2C = dataclasses.replace(PROTOCOL, default="h2c")  # HTTP/2's, where a workload compares the two
OBJECT_BYTES = Key("object_bytes", int, "the object's size in bytes", low=0, high=2**31 - 1)
FIRST_FLIGHT = ("initcwnd_measured", "first_flight_segments")
PAGE = Key(
    "page",
    str,
    "a page: one of the page set of study cubicplus (servers/content.py), or N objects of a size after the HTML; "
    "+deps: its objects found through a style sheet and a script",
    form=(
        lambda text: content.page_spec(text).name,
        f"one of {', '.join(content.PAGES)}, or e.g. 20x50KB, either with {content.DEPS}",
    ),
)

CLIENT = Key(
    "client",
    str,
    "who loads the page: h2load (every request at once) or a real browser, Chromium or Firefox ESR "
    "(servers/browser.py: over TLS, objects found as the page reveals them)",
    ("h2load", *browser.BROWSERS),
    default="h2load",
)
BROWSER_LOAD_TIMEOUT_S = 600.0  # a load's own limit; the figure's trial timeout is the one that binds
BROWSER_METRICS = ("plt_ms", "onload_ms", "objects", "browser", "browser_version")

# -- each workload's parameters: one declaration per key ------------------------------------


@dataclass(frozen=True)
class NoKeys:
    """A workload that takes no keys of its own."""


@dataclass(frozen=True)
class DownloadKeys:
    protocol: str = key(dataclasses.replace(PROTOCOL, default="http/1.1"))
    object_bytes: int = key(OBJECT_BYTES)


@dataclass(frozen=True)
class PageLoadKeys:
    protocol: str = key(H2C)
    page: str = key(PAGE)
    client: str = key(CLIENT)


@dataclass(frozen=True)
class BulkKeys:
    protocol: str = key(H2C)
    object_bytes: int = key(dataclasses.replace(OBJECT_BYTES, default="20000000"))
    connections: int | None = key(
        Key("connections", int, "HTTP/1.1 connections (default six; HTTP/2 uses one)", low=1, high=64)
    )
    duration_s: float = key(
        Key("duration_s", float, "how long the download lasts, seconds", low=1, high=3600, default="10")
    )


@dataclass(frozen=True)
class HttpBurstsKeys:
    burst_kb: int = key(
        Key("burst_kb", int, "the size of each burst (HTTP response body), KB of 1000 bytes", low=1, high=100_000)
    )
    idle_s: str = key(
        Key(
            "idle_s",
            str,
            "idle periods before the bursts, seconds, e.g. 1,3,5 (each once per repeat)",
            form=(idle_text, "idle periods in seconds separated by commas, e.g. 1,3,5"),
            default="1",
        )
    )
    repeats: int = key(Key("repeats", int, "bursts after each idle period per trial", low=1, high=100, default="1"))
    bulk: int | None = key(Key("bulk", int, "1: a bulk TCP flow (Reno) on the second pair throughout", choices=(0, 1)))
    pipeack_trace: int | None = key(
        Key(
            "pipeack_trace",
            int,
            "1: newcwv's own pipeACK and cwnd every 0.1 s beside tcp_probe's window (cc=newcwv)",
            choices=(0, 1),
        )
    )


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("readback", readback, NoKeys, ("beta_effective", "backoff_pct"), ()),
        Workload(
            "download",
            download,
            DownloadKeys,
            ("download_time_ms", "connect_ms", "first_byte_ms", "bytes", *FIRST_FLIGHT, *latency.METRICS),
            ("curl",),
        ),
        Workload(
            "page_load",
            page_load,
            PageLoadKeys,
            (
                "page_load_time_ms",
                "throughput_mbit",
                "bytes",
                "connections",
                "server_connections",
                "negotiated",
                *BROWSER_METRICS,
                *FIRST_FLIGHT,
                *latency.METRICS,
            ),
            ("h2load", "flock"),
        ),
        Workload(
            "bulk",
            bulk,
            BulkKeys,
            ("throughput_mbit", "bytes", "seconds", "connections"),
            ("h2load",),
        ),
        Workload(
            "http_bursts",
            http_bursts,
            HttpBurstsKeys,
            (
                "bursts",
                "idle_s",
                "burst_ms",
                "mean_burst_ms",
                "cwnd_before",
                "cwnd_resumed",
                "retransmitted",
                "first_flight_retransmitted",
                "retrans_per_burst",
                "first_flight",
                "first_flight_ms",
                "bottleneck_drops",
                "pacer_used",
                "bulk_goodput_mbit",
                *countertrace.METRICS,
                *latency.METRICS,
            ),
            ("tcpdump", "iperf3"),
            time_series=True,
        ),
        Workload(
            "competing",
            competing,
            CompetingKeys,
            (
                "goodput_mbit",
                "flow_goodputs_mbit",
                "flow_first_window_mbit",
                "jain_index",
                "retransmits",
                "bottleneck_drops",
                "cross_delivered_mbit",
                *latency.METRICS,
                *latency.QUEUE_METRICS,
                *latency.PING_METRICS,
            ),
            ("iperf3",),
            time_series=True,
        ),
        Workload(
            "long_flow",
            long_flow,
            LongFlowKeys,
            (
                "goodput_mbit",
                *(f"first_{w}s_mbit" for w in LONG_FLOW_WINDOWS_S),
                "tcp_mss",
                "segments_sent",
                "retransmits",
                "retransmit_rate",
                "bottleneck_drops",
                "bottleneck_arrivals",
                "drop_rate",
                "cwnd_max",
                "window_step_s",
                "cwnd_series",
                "ssthresh_series",
                "cross_delivered_mbit",
                *latency.METRICS,
                *latency.QUEUE_METRICS,
                *latency.PING_METRICS,
            ),
            ("iperf3",),
            time_series=True,
        ),
    )
}
