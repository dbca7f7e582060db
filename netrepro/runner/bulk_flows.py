"""Workloads of long iperf3 flows through the bottleneck, and the RTT under load beside them.

`competing` (a bulk flow on every client/server pair at once) and
`long_flow` (one flow, its window every half second) run iperf3 from each
server to its client, beside UDP cross traffic where a trial asks for it
(`cross_rate`); tcp_probe sees every ACK, the bottleneck queue is sampled
(topologies.queue_sampler), and with `probe_hz` a ping probe crosses the
bottleneck beside the flows (topologies.ping_probe): goodput, windows,
drops, and the delay the loaded path adds (ground.latency).  `iperf3_trace`
is one such flow alone, for the checks that read a congestion control's
window (`run.sh bench ports`, the root tests).  Registered with the other
workloads in netrepro.runner.workloads.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ground import flows, latency, series
from ground.ledger import Ledger
from ground.parsers import ParseError, iperf3_json, parse_iperf3_tcp
from ground.path import IP_UDP_HEADERS
from ground.proc import Process, run
from ground.tcpprobe import ProbeSample, TcpProbe, data_samples, sender_samples
from ground.units import parse_rate
from netrepro.runner.session import Metrics, Session
from netrepro.studykit.params import RATE, Key
from netrepro.studykit.trial import Trial, key
from servers.iperf import IPERF_PORT, CrossTraffic, iperf3_client_argv, iperf3_server_argv, wait_listening
from topologies.lab import Lab
from topologies.ping_probe import MAX_HZ, PingProbe


def base_rtt_ms(lab: Lab, pair: Any = None) -> float:
    """The RTT the lab sets between a pair's hosts (the first pair's by default), with empty queues."""
    return float(lab.network.rtt(pair or lab.pairs[0]).ms)


def joined(values: Sequence[float | int], fmt: str = "{}") -> str:
    return ";".join(fmt.format(v) for v in values)


CROSS_RATE = Key("cross_rate", str, "UDP cross traffic, xsender to xreceiver (topology with --cross)", form=RATE)
PROBE_HZ = Key(
    "probe_hz",
    int,
    "ICMP echo requests a second from the (first) client to its server while the flows run, through the "
    "bottleneck: their RTTs as ping_p50_ms, ping_p95_ms, ping_p99_ms (0: no probe; flent's RRUL pings at 5)",
    low=0,
    high=MAX_HZ,
    default="0",
)


def pair_flow(session: Session, pair: Any, seconds: int, *, port: int, **options: Any) -> CrossTraffic:
    """An iperf3 flow from a pair's server to its client for `seconds` (its namespaces, its server's address,
    its round trip for the flow's end), the run's own in its ledger; `options` as CrossTraffic takes them."""
    lab = session.lab
    return CrossTraffic(
        lab.ns(pair.client),
        lab.ns(pair.server),
        lab.ip(pair.server),
        session.ledger,
        session.work_dir,
        duration_s=seconds,
        port=port,
        rtt_s=lab.network.rtt(pair).seconds,
        **options,
    )


def udp_cross_traffic(
    session: Session, rate: str, seconds: int, *, port: int, datagram: int = 1400, interval_s: float | None = None
) -> CrossTraffic:
    """UDP at `rate` from the topology's xsender to its xreceiver, through the bottleneck."""
    x = session.lab.network.cross
    if x is None:
        raise flows.FlowDataError(f"cross_rate {rate}: this topology has no cross-traffic hosts (--cross)")
    udp_rate = parse_rate(rate, "cross_rate")
    return pair_flow(session, x, seconds, port=port, udp_rate=udp_rate, datagram=datagram, interval_s=interval_s)


def _pinging(session: Session, hz: int, seconds: float) -> contextlib.AbstractContextManager[PingProbe | None]:
    """A ping probe from the first pair's client to its server at `hz` while the flows run; none at 0."""
    if not hz:
        return contextlib.nullcontext()
    lab, pair = session.lab, session.lab.pairs[0]
    return PingProbe(lab.ns(pair.client), lab.ip(pair.server), hz, session.ledger, seconds)


def _ping_columns(pinged: PingProbe | None) -> Metrics:
    return latency.ping_columns(pinged.result) if pinged is not None and pinged.result is not None else {}


def run_together(senders: Sequence[CrossTraffic]) -> list[str]:
    """Start the flows in order, wait for each to end, and return their iperf3 reports; stop them all."""
    try:
        for sender in senders:
            sender.start()
        return [sender.report() for sender in senders]
    finally:
        for sender in senders:
            sender.stop()


COMPETING_PORT = 5210  # the first pair's flow; each further pair's the next port


def competing(session: Session, trial: Trial, keys: CompetingKeys) -> Metrics:
    """A bulk iperf3 flow on every client/server pair at once, beside UDP cross traffic at cross_rate (if
    given), for duration_s: each flow's goodput over the run and its first window_s, Jain's index, drops,
    and the RTT under load the flows' senders saw (tcp_probe, ground.latency)."""
    lab, seconds = session.lab, keys.duration_s
    window = keys.window_s
    if window > seconds:
        raise flows.FlowDataError(f"window_s {window:g} is longer than the run's duration_s {seconds}")
    cc = session.registered(trial.cc.name)  # a port's registered name, as every workload uses it
    if cc is not None:
        session.ledger.allow_congestion_control(cc)
    cross_rate = keys.cross_rate
    ports = [COMPETING_PORT + i for i in range(len(lab.pairs))]
    senders = [
        pair_flow(session, p, seconds, port=port, cc=cc, interval_s=0.1)
        for p, port in zip(lab.pairs, ports, strict=True)
    ]
    if cross_rate is not None:
        senders.append(udp_cross_traffic(session, cross_rate, seconds, port=5209, interval_s=0.1))
    before = lab.bottleneck_reading()
    with (
        TcpProbe(session.ledger, ports, network=lab.subnet) as probe,
        lab.queue_sampler(series.STEP_S) as queued,
        _pinging(session, keys.probe_hz, seconds) as pinged,
    ):
        reports = run_together(senders)
    drops = lab.bottleneck_queue(since=before).drops
    # each pair's data connection, not iperf3's control connection on the same port
    pairs = zip(lab.pairs, ports, strict=True)
    data = [(p, data_samples(probe.samples, f"{lab.ip(p.server)}:{port}")) for p, port in pairs]
    tcp = reports[: len(lab.pairs)]
    whole = [parse_iperf3_tcp(r) for r in tcp]
    first = [flows.window_throughput(flows.throughput_bins(r), 0, window) for r in tcp]
    metrics: Metrics = {
        "goodput_mbit": round(sum(r.goodput_bps for r in whole) / 1e6, 4),
        "flow_goodputs_mbit": ";".join(f"{r.goodput_bps / 1e6:.4f}" for r in whole),
        "flow_first_window_mbit": ";".join(f"{g / 1e6:.4f}" for g in first),
        "jain_index": round(flows.jain_index([r.goodput_bps for r in whole]), 4) if len(whole) > 1 else 1.0,
        "retransmits": ";".join(str(r.retransmits) for r in whole),
        "bottleneck_drops": drops,
        **latency.columns([(samples, base_rtt_ms(lab, p)) for p, samples in data]),
        **latency.queue_columns(queued.samples, queued.failed),
        **_ping_columns(pinged),
        series.FIELD: series.from_probe((s for _, samples in data for s in samples), queue=queued.samples).as_json(),
    }
    if len(reports) > len(tcp):
        metrics["cross_delivered_mbit"] = round(flows.udp_delivered(reports[-1]).delivered_bps / 1e6, 4)
    return metrics


LONG_FLOW_PORT, LONG_FLOW_CROSS_PORT = 5221, 5222
LONG_FLOW_WINDOWS_S = (10, 15)  # seed 004's Figures 6 and 7: throughput over the first 10 and 15 s
WINDOW_STEP_S = 0.5  # the window is kept in the row at this step (tcp_probe saw every ACK)


def long_flow(session: Session, trial: Trial, keys: LongFlowKeys) -> Metrics:
    """One bulk TCP flow server -> client for duration_s, beside UDP at cross_rate (if given): its
    throughput over its first 10 s, 15 s and the whole run, its window every 0.5 s (tcp_probe, every
    ACK), its retransmissions, the bottleneck queue's drops, what the UDP flow delivered."""
    lab, seconds = session.lab, keys.duration_s
    cross_rate = keys.cross_rate
    pair = lab.pairs[0]
    address = lab.ip(pair.server)
    senders = []
    if cross_rate is not None:  # started first: the TCP flow meets the UDP flow from its first packet
        senders.append(
            udp_cross_traffic(
                session, cross_rate, seconds, port=LONG_FLOW_CROSS_PORT, datagram=lab.path.mtu - IP_UDP_HEADERS
            )
        )
    tcp = pair_flow(session, pair, seconds, port=LONG_FLOW_PORT, cc=session.registered(trial.cc.name), interval_s=0.1)
    senders.append(tcp)
    before = lab.quiet_bottleneck()  # drops counted are this trial's, not an earlier sender's tail
    with (
        TcpProbe(session.ledger, [LONG_FLOW_PORT], network=lab.subnet) as probe,
        lab.queue_sampler(series.STEP_S) as queued,
        _pinging(session, keys.probe_hz, seconds) as pinged,
    ):
        reports = run_together(senders)
    queue = lab.bottleneck_queue(since=before)
    report = reports[-1]
    whole, doc = parse_iperf3_tcp(report), iperf3_json(report)
    bins = flows.throughput_bins(report)
    mss = int(doc["start"].get("tcp_mss_default") or lab.path.mss)
    sent = (doc.get("end") or {}).get("sum_sent", {}).get("bytes")
    if not isinstance(sent, int | float):
        raise ParseError("iperf3", "no end.sum_sent.bytes: what the sender sent", report)
    segments = math.ceil(int(sent) / mss)
    retransmits = whole.retransmits or 0
    data = max(
        flows.flow_series(sender_samples(probe.samples, f"{address}:{LONG_FLOW_PORT}")),
        key=lambda f: f.acked_bytes,
        default=None,
    )
    if data is None:
        raise flows.FlowDataError(f"tcp_probe saw no ACK of the flow from {address}:{LONG_FLOW_PORT}")
    window = flows.sampled_every(data.points, WINDOW_STEP_S, seconds)
    flow_samples = data_samples(probe.samples, f"{address}:{LONG_FLOW_PORT}")  # not iperf3's control connection
    metrics: Metrics = {
        "goodput_mbit": round(whole.goodput_bps / 1e6, 4),
        **{f"first_{w}s_mbit": round(flows.window_throughput(bins, 0, w) / 1e6, 4) for w in LONG_FLOW_WINDOWS_S},
        "tcp_mss": mss,
        "segments_sent": segments,
        "retransmits": retransmits,
        "retransmit_rate": round(retransmits / segments, 6) if segments else None,
        "bottleneck_drops": queue.drops,
        "bottleneck_arrivals": queue.sent_packets + queue.drops,
        "drop_rate": round(queue.drop_fraction, 6) if queue.drop_fraction is not None else None,
        "cwnd_max": max(p.cwnd for p in data.points),
        "window_step_s": WINDOW_STEP_S,
        "cwnd_series": joined([p.cwnd for p in window]),
        "ssthresh_series": ";".join("" if p.ssthresh is None else str(p.ssthresh) for p in window),
        **latency.columns([(flow_samples, base_rtt_ms(lab, pair))]),
        **latency.queue_columns(queued.samples, queued.failed),
        **_ping_columns(pinged),
        series.FIELD: series.from_probe(flow_samples, queue=queued.samples).as_json(),
    }
    if len(reports) > 1:
        metrics["cross_delivered_mbit"] = round(flows.udp_delivered(reports[0]).delivered_bps / 1e6, 4)
    return metrics


@dataclass(frozen=True)
class CompetingKeys:
    duration_s: int = key(Key("duration_s", int, "how long the flows last, seconds", low=1, high=3600, default="30"))
    window_s: float = key(
        Key(
            "window_s",
            float,
            "each flow's goodput is also taken over its first window_s seconds",
            low=0.1,
            high=3600,
            default="10",
        )
    )
    cross_rate: str | None = key(CROSS_RATE)
    probe_hz: int = key(PROBE_HZ)


@dataclass(frozen=True)
class LongFlowKeys:
    duration_s: int = key(
        Key(
            "duration_s",
            int,
            "how long the flow lasts, seconds (its first 15 s are measured apart)",
            low=max(LONG_FLOW_WINDOWS_S),
            high=3600,
            default="120",
        )
    )
    cross_rate: str | None = key(CROSS_RATE)
    probe_hz: int = key(PROBE_HZ)


def iperf3_traces(lab: Lab, ledger: Ledger, cc: str, seconds: int, parallel: int = 1) -> list[list[ProbeSample]]:
    """`parallel` iperf3 flows server -> client with `cc`; the tcp_probe samples of each data connection."""
    server = Process(iperf3_server_argv(lab.ip("server"), IPERF_PORT), lab.server, ledger=ledger)
    try:
        wait_listening(lab.server, lab.ip("server"), IPERF_PORT, server)
        with TcpProbe(ledger, [IPERF_PORT], network=lab.subnet) as probe:
            argv = [*iperf3_client_argv(lab.ip("server"), IPERF_PORT, seconds, cc=cc), "-P", str(parallel)]
            run(argv, lab.client, timeout=seconds + 60)
    finally:
        server.stop()
    flows: dict[str, list[ProbeSample]] = {}
    for s in sender_samples(probe.samples, f"{lab.ip('server')}:{IPERF_PORT}"):
        flows.setdefault(s.flow, []).append(s)
    return sorted(flows.values(), key=len)[-parallel:]  # the data connections, not iperf3's control one


def iperf3_trace(lab: Lab, ledger: Ledger, cc: str, seconds: int) -> list[ProbeSample]:
    """An iperf3 transfer server -> client with `cc`; the tcp_probe samples of its data connection."""
    return iperf3_traces(lab, ledger, cc, seconds)[0]
