"""What multi-flow studies measure (ground/flows.py), on output captured from the real tools.

The iperf3 reports with -i 0.1 come from tests/fixtures/iperf3_i01_capture.sh (a 20 Mbit/s
bottleneck each way between two throwaway namespaces), the qdisc counters from
tests/fixtures/tc_qdisc_capture.sh (UDP bursts into an HTB class with a 5-packet FIFO).
Expected numbers are worked out by hand from the fixtures' own fields.
"""

import json
import math
from pathlib import Path
from typing import Any

import pytest

from ground.flows import (
    Flow,
    FlowDataError,
    QdiscStats,
    ThroughputBin,
    find_qdisc,
    flow_series,
    jain_index,
    qdisc_delta,
    qdisc_stats,
    throughput_bins,
    udp_delivered,
    window_throughput,
)
from ground.parsers import ParseError
from ground.tcpprobe import UNSET_SSTHRESH, ProbeSample, parse_line

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def report(*intervals: dict[str, Any], protocol: str = "TCP") -> str:
    """An iperf3 -J report with these interval sums (receiver's, unless an interval says otherwise)."""
    sums = [{"sender": False, "omitted": False, **iv} for iv in intervals]
    return json.dumps(
        {
            "start": {"connecting_to": {"host": "10.0.0.2"}, "test_start": {"protocol": protocol, "reverse": 1}},
            "intervals": [{"streams": [{"socket": 5, **s}], "sum": s} for s in sums],
            "end": {},
        }
    )


# --- throughput_bins -----------------------------------------------------------------------------


def test_receiver_bins_lie_on_the_grid_and_prorate_iperf3s_intervals() -> None:
    # The client's report of a -R run: its intervals are the receiver's.
    # Interval 0 is 0-0.10007 s with 241816 B, interval 1 0.10007-0.200054 s with 240368 B.
    bins = throughput_bins(fixture("iperf3_tcp_reverse_i01.json"))
    assert len(bins) == 21
    assert (bins[0].start_s, bins[0].end_s) == (0.0, 0.1)
    assert bins[0].bytes == pytest.approx(241816 * 0.1 / 0.10007)
    assert bins[1].start_s == pytest.approx(0.1) and bins[1].end_s == pytest.approx(0.2)
    assert bins[1].bytes == pytest.approx(241816 * 0.00007 / 0.10007 + 240368 * 0.09993 / 0.099984)
    assert bins[0].bits_per_second == pytest.approx(241816 * 0.1 / 0.10007 * 8 / 0.1)
    # The last interval ends at 2.000077 s: the last bin is clipped there, not stretched to 2.1 s.
    assert bins[-1].start_s == pytest.approx(2.0) and bins[-1].end_s == 2.000077
    assert all(b.retransmits is None for b in bins)
    # Proration moves bytes between bins, never loses any: end.sum_received.bytes.
    assert sum(b.bytes for b in bins) == pytest.approx(4785640, rel=1e-12)


def test_the_whole_run_is_iperf3s_own_receiver_rate() -> None:
    bins = throughput_bins(fixture("iperf3_tcp_reverse_i01.json"))
    whole = window_throughput(bins, bins[0].start_s, bins[-1].end_s)
    assert whole == pytest.approx(19141823.039812967, rel=1e-9)  # end.sum_received.bits_per_second


def test_coarser_bins_hold_what_the_finer_ones_do() -> None:
    text = fixture("iperf3_tcp_reverse_i01.json")
    fine, coarse = throughput_bins(text, 0.1), throughput_bins(text, 0.5)
    assert [(round(b.start_s, 9), round(b.end_s, 9)) for b in coarse] == [
        (0.0, 0.5),
        (0.5, 1.0),
        (1.0, 1.5),
        (1.5, 2.0),
        (2.0, 2.000077),
    ]
    for i, b in enumerate(coarse[:4]):
        assert b.bytes == pytest.approx(sum(f.bytes for f in fine[5 * i : 5 * i + 5]), rel=1e-12)


def test_a_senders_report_is_refused_unless_asked_for_and_carries_the_retransmits() -> None:
    server = fixture("iperf3_tcp_reverse_i01_server.json")  # the sending server's own report of a -R run
    with pytest.raises(ParseError, match="interval 0 was measured at the sender, not the receiver.*-R"):
        throughput_bins(server)
    bins = throughput_bins(server, measured_at="sender")
    assert [b.retransmits for b in bins[:3]] == [116, 46, 0]
    assert sum(b.retransmits or 0 for b in bins) == 162  # end.sum_sent.retransmits
    assert [b.retransmits for b in throughput_bins(server, 0.5, measured_at="sender")] == [162, 0, 0, 0, 0]
    client = throughput_bins(fixture("iperf3_tcp_i01.json"), measured_at="sender")  # a client that sends
    assert [b.retransmits for b in client[:3]] == [117, 12, 13]
    with pytest.raises(ParseError, match="measured at the receiver, not the sender"):
        throughput_bins(fixture("iperf3_tcp_reverse_i01.json"), measured_at="sender")


def test_bins_finer_than_iperf3s_intervals_are_refused() -> None:
    text = fixture("iperf3_tcp_reverse.json")  # -t 3 -O 1 with the default 1 s intervals
    with pytest.raises(ParseError, match=r"intervals of 1 s, longer than the 0.1 s bins asked for \(run iperf3 with"):
        throughput_bins(text)
    bins = throughput_bins(text, 1.0)
    # The omitted second (-O 1) is left out; iperf3 restarts its clock after it, at 2.8e-05 s.
    assert [(b.start_s, round(b.end_s, 6)) for b in bins] == [(2.8e-05, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 3.000027)]
    assert sum(b.bytes for b in bins) == pytest.approx(393856 + 372136 + 451776)


def test_one_stream_of_a_parallel_run() -> None:
    text = fixture("iperf3_tcp_2streams_i01_server.json")  # the receiving server of -P 2: sockets 5 and 8
    both = throughput_bins(text)
    five, eight = throughput_bins(text, stream=5), throughput_bins(text, stream=8)
    assert sum(b.bytes for b in five) == pytest.approx(2290736)  # end.streams[0].receiver.bytes
    assert sum(b.bytes for b in eight) == pytest.approx(2368928)
    # Each stream keeps its own interval times, a few microseconds off the sum's.
    for b, f, e in zip(both, five, eight, strict=True):
        assert b.bytes == pytest.approx(f.bytes + e.bytes, rel=1e-3)
    with pytest.raises(ParseError, match=r"interval 0 has no stream with socket 7 \(it has \[5, 8\]\)"):
        throughput_bins(text, stream=7)


def test_an_offset_puts_the_bins_on_the_runs_clock() -> None:
    bins = throughput_bins(fixture("iperf3_tcp_reverse_i01.json"), offset_s=0.25)
    assert bins[0].start_s == 0.25 and bins[0].end_s == pytest.approx(0.3)
    assert bins[0].bytes == pytest.approx(241816 * 0.05 / 0.10007)
    assert bins[1].start_s == pytest.approx(0.3) and bins[1].end_s == pytest.approx(0.4)
    assert bins[-1].end_s == pytest.approx(2.250077)
    assert sum(b.bytes for b in bins) == pytest.approx(4785640)


def test_udp_bins_agree_with_what_the_receiver_reports() -> None:
    bins = throughput_bins(fixture("iperf3_udp_reverse_i01.json"))  # the client received
    assert sum(b.bytes for b in bins) == pytest.approx(4855200)
    whole = window_throughput(bins, bins[0].start_s, bins[-1].end_s)
    assert whole == pytest.approx(udp_delivered(fixture("iperf3_udp_reverse_i01.json")).delivered_bps, rel=1e-9)
    with pytest.raises(ParseError, match="measured at the sender"):
        throughput_bins(fixture("iperf3_udp_i01.json"))  # the client sent 30 Mbit/s; 19.4 arrived


def test_omitted_intervals_are_left_out() -> None:
    text = report(
        {"start": 0, "end": 0.1, "bytes": 999, "omitted": True},
        {"start": 0, "end": 0.1, "bytes": 100},
        {"start": 0.1, "end": 0.2, "bytes": 300},
    )
    assert [b.bytes for b in throughput_bins(text)] == pytest.approx([100, 300])


def test_interval_ends_a_few_microseconds_apart_are_joined() -> None:
    """As iperf3 wrote them in a dumbbell run: the next interval began 42 us before the last one ended."""
    text = report(
        {"start": 0, "end": 0.100263, "bytes": 1000},
        {"start": 0.100305, "end": 0.2, "bytes": 1000},
    )
    bins = throughput_bins(text)
    assert [b.bytes for b in bins] == pytest.approx([1000 * 0.1 / 0.100263, 1000 * (1 - 0.1 / 0.100263) + 1000])
    assert sum(b.bytes for b in bins) == pytest.approx(2000)


def test_an_empty_sliver_iperf3_left_out_is_joined_over() -> None:
    """A stats tick 0.49 s late, the next on time: iperf3 left the 9.8 ms between them (no bytes,
    under a tenth of its 0.1 s interval) out of its report (captured: iperf3_late_tick_capture.py).
    CI's dumbbell run wrote the same under load: 0.495431 s, then 0.50011 s."""
    text = fixture("iperf3_tcp_reverse_i01_late_tick.json")
    starts = [i["sum"]["start"] for i in json.loads(text)["intervals"]]
    assert 0.90021 in starts and 0.890438 not in starts  # the gap is in the report as captured
    bins = throughput_bins(text)
    assert sum(b.bytes for b in bins) == pytest.approx(2100)  # every byte the receiver counted (end.sum_received)
    assert [b.start_s for b in bins[:10]] == pytest.approx([0.1 * k for k in range(10)])
    joined = 1.000116 - 0.890438  # the interval after the gap, begun where the one before ended
    assert bins[8].bytes == pytest.approx(600 * (0.9 - 0.890438) / joined)
    assert bins[9].bytes == pytest.approx(600 * 0.1 / joined)


@pytest.mark.parametrize(
    "second_start",
    [
        pytest.param(0.115, id="a gap of 15 ms, over a tenth of the 0.1 s interval"),
        pytest.param(0.0953, id="an overlap of 4.7 ms"),
    ],
)
def test_a_gap_iperf3_would_not_leave_is_refused(second_start: float) -> None:
    text = report(
        {"start": 0, "end": 0.1, "bytes": 1},
        {"start": second_start, "end": second_start + 0.1, "bytes": 1},
        {"start": second_start + 0.1, "end": second_start + 0.2, "bytes": 1},
    )
    with pytest.raises(ParseError, match=f"interval 1 starts at {second_start} s, the one before ended at 0.1 s"):
        throughput_bins(text)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("iperf3: error - unable to connect", "not JSON"),
        ('{"start": {}, "error": "unable to connect to server: Connection refused"}', "error: unable to connect"),
        (report(), r"no intervals \(was it run with -i 0\?\)"),
        (report({"start": 0, "end": 0.1}), "interval 0 has no number 'bytes' \\(got None\\)"),
        (report({"start": 0, "end": 0.1, "bytes": "many"}), "interval 0 has no number 'bytes' \\(got 'many'\\)"),
        (
            report({"start": 0, "end": 0.1, "bytes": 1}, {"start": 0.2, "end": 0.3, "bytes": 1}),
            "interval 1 starts at 0.2 s, the one before ended at 0.1 s",
        ),
        (report({"start": 0.1, "end": 0.05, "bytes": 1}), "interval 0 runs from 0.1 s to 0.05 s"),
        (report({"start": 0, "end": 0.1, "bytes": 1, "omitted": True}), "every interval is omitted"),
        (
            json.dumps({"intervals": [{"sum": {"start": 0, "end": 0.1, "bytes": 1}}]}),
            "interval 0 does not say whether its sender or its receiver measured it",
        ),
    ],
)
def test_a_bad_report_names_what_is_wrong(text: str, match: str) -> None:
    with pytest.raises(ParseError, match=match):
        throughput_bins(text)


def test_bin_width_must_be_positive() -> None:
    with pytest.raises(ValueError, match="bin_s must be positive, got 0"):
        throughput_bins(fixture("iperf3_tcp_reverse_i01.json"), 0)


# --- window_throughput ---------------------------------------------------------------------------

TWO_SECONDS = [ThroughputBin(0.0, 1.0, 100, None), ThroughputBin(1.0, 2.0, 300, None)]


def test_a_window_counts_the_bins_in_it_and_straddling_bins_in_proportion() -> None:
    assert window_throughput(TWO_SECONDS, 0.0, 2.0) == pytest.approx(400 * 8 / 2)
    assert window_throughput(TWO_SECONDS, 0.0, 1.0) == pytest.approx(100 * 8)
    assert window_throughput(TWO_SECONDS, 0.5, 1.5) == pytest.approx((50 + 150) * 8 / 1.0)
    assert window_throughput(TWO_SECONDS, 1.25, 1.5) == pytest.approx(300 * 8)


def test_the_first_second_of_a_real_run() -> None:
    bins = throughput_bins(fixture("iperf3_tcp_reverse_i01.json"))
    data = json.loads(fixture("iperf3_tcp_reverse_i01.json"))["intervals"]
    # Intervals 0-9 end at 1.000059 s; the 59 us past 1 s are cut from the last one in proportion.
    last = data[9]["sum"]
    assert last["end"] == 1.000059
    expected = sum(iv["sum"]["bytes"] for iv in data[:10]) - last["bytes"] * 0.000059 / last["seconds"]
    assert window_throughput(bins, 0.0, 1.0) == pytest.approx(expected * 8, rel=1e-6)


def test_a_window_outside_the_run_is_refused() -> None:
    with pytest.raises(FlowDataError, match=r"window 0-15 s reaches outside the run's bins, 0-2 s \(the flow ended"):
        window_throughput(TWO_SECONDS, 0.0, 15.0)
    with pytest.raises(FlowDataError, match="window -1-1 s reaches outside"):
        window_throughput(TWO_SECONDS, -1.0, 1.0)
    with pytest.raises(ValueError, match="window from 1 s to 1 s is empty"):
        window_throughput(TWO_SECONDS, 1.0, 1.0)
    with pytest.raises(ValueError, match="window_throughput of no bins"):
        window_throughput([], 0.0, 1.0)


def test_a_gap_inside_the_window_is_refused_and_one_outside_is_not() -> None:
    gappy = [ThroughputBin(0.0, 1.0, 100, None), ThroughputBin(1.5, 2.0, 50, None)]
    with pytest.raises(FlowDataError, match="the bins leave 1-1.5 s unmeasured, inside the window"):
        window_throughput(gappy, 0.0, 2.0)
    assert window_throughput(gappy, 0.0, 1.0) == pytest.approx(800)
    assert window_throughput(gappy, 1.5, 2.0) == pytest.approx(800)
    with pytest.raises(ValueError, match="bins overlap"):
        window_throughput([ThroughputBin(0.0, 1.0, 1, None), ThroughputBin(0.5, 2.0, 1, None)], 0.0, 2.0)


# --- jain_index ----------------------------------------------------------------------------------


def test_jain_index() -> None:
    assert jain_index([5.0, 5.0, 5.0]) == pytest.approx(1.0)
    assert jain_index([8.0, 0.0, 0.0, 0.0]) == pytest.approx(1 / 4)
    assert jain_index([1.0, 2.0, 3.0]) == pytest.approx(36 / (3 * 14))
    assert jain_index([7.0]) == pytest.approx(1.0)


def test_jain_index_of_two_real_streams() -> None:
    text = fixture("iperf3_tcp_2streams_i01_server.json")
    rates = [window_throughput(b, b[0].start_s, b[-1].end_s) for b in (throughput_bins(text, stream=s) for s in (5, 8))]
    # end.streams: 2290736 B over 2.008548 s and 2368928 B over 2.008551 s.
    a, b = 2290736 * 8 / 2.008548, 2368928 * 8 / 2.008551
    assert rates == pytest.approx([a, b], rel=1e-12)
    assert jain_index(rates) == pytest.approx((a + b) ** 2 / (2 * (a * a + b * b)), rel=1e-12)
    assert jain_index(rates) == pytest.approx(0.999718, abs=1e-6)


def test_jain_index_refuses_what_has_no_index() -> None:
    with pytest.raises(ValueError, match="no rates"):
        jain_index([])
    with pytest.raises(FlowDataError, match=r"every rate is 0: got \[0.0, 0.0\]"):
        jain_index([0.0, 0.0])
    with pytest.raises(ValueError, match=r"finite rates of 0 or more, got \[1.0, -2.0\]"):
        jain_index([1.0, -2.0])
    with pytest.raises(ValueError, match="got \\[nan\\]"):
        jain_index([math.nan])


# --- qdisc_stats, find_qdisc, qdisc_delta --------------------------------------------------------


def test_qdisc_counters_of_a_bottleneck_that_dropped() -> None:
    root, leaf = qdisc_stats(fixture("tc_qdisc_htb_pfifo_drops.json"))
    assert leaf == QdiscStats(
        dev=None,
        kind="pfifo",
        handle="10:",
        parent="1:1",
        sent_bytes=193494,
        sent_packets=137,
        drops=462,
        overlimits=0,
        requeues=0,
        backlog_bytes=5768,
        qlen=4,
    )
    assert (root.kind, root.handle, root.parent, root.overlimits) == ("htb", "1:", "root", 135)
    assert root.drops == leaf.drops  # the root counts its leaf's drops again
    assert leaf.drop_fraction == pytest.approx(462 / (137 + 462))


def test_every_device_and_finding_one_qdisc() -> None:
    stats = qdisc_stats(fixture("tc_qdisc_show_all.json"))
    assert [(q.dev, q.kind, q.handle) for q in stats] == [
        ("lo", "noqueue", "0:"),
        ("veth-b", "noqueue", "0:"),
        ("veth-a", "htb", "1:"),
        ("veth-a", "pfifo", "10:"),
    ]
    assert find_qdisc(stats, "10:").drops == 462
    assert find_qdisc(stats, "0:", dev="lo").drop_fraction is None  # nothing offered
    with pytest.raises(FlowDataError, match="more than one qdisc 0:; there are: noqueue 0: on lo, noqueue 0: on veth"):
        find_qdisc(stats, "0:")
    with pytest.raises(FlowDataError, match="no qdisc 10: on veth-b; there are"):
        find_qdisc(stats, "10:", dev="veth-b")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (fixture("tc_qdisc_without_stats.json"), r"qdisc htb 1: has no statistics \(run tc with -s\)"),
        ('Cannot find device "veth-x"\n', "tc output: not JSON"),
        ('{"kind": "htb"}', "not a JSON list of qdiscs"),
        ('[{"handle": "1:"}]', "qdisc 0 has no kind and handle"),
        (
            '[{"kind": "pfifo", "handle": "10:", "bytes": 1, "packets": 1, "drops": 0, "overlimits": 0,'
            ' "requeues": 0, "backlog": 0}]',
            "qdisc pfifo 10: has no counter 'qlen'",
        ),
        (
            '[{"kind": "pfifo", "handle": "10:", "bytes": 1, "packets": 1, "drops": 0, "overlimits": 0,'
            ' "requeues": 0, "backlog": 0, "qlen": 0}]',
            "qdisc pfifo 10: is neither root nor has a parent",
        ),
    ],
)
def test_bad_tc_output_names_what_is_wrong(text: str, match: str) -> None:
    with pytest.raises(ParseError, match=match):
        qdisc_stats(text)


def test_what_the_queue_counted_between_two_readings() -> None:
    before = qdisc_stats(fixture("tc_qdisc_htb_pfifo_midway.json"))  # after 15 of the 30 bursts
    after = qdisc_stats(fixture("tc_qdisc_htb_pfifo_drops.json"))
    leaf = find_qdisc(qdisc_delta(before, after), "10:")
    assert (leaf.sent_bytes, leaf.sent_packets, leaf.drops) == (193494 - 93996, 137 - 68, 462 - 230)
    assert (leaf.backlog_bytes, leaf.qlen) == (5768, 4)  # as at the second reading
    with pytest.raises(FlowDataError, match=r"qdisc htb 1:'s counters went down \(sent_bytes 193494 -> 93996"):
        qdisc_delta(after, before)
    with pytest.raises(FlowDataError, match="different qdiscs: htb 1:, pfifo 10:, then htb 1:$"):
        qdisc_delta(before, after[:1])


# --- flow_series ---------------------------------------------------------------------------------


def probe_samples() -> list[ProbeSample]:
    return [p for p in map(parse_line, fixture("tcp_probe_trace.txt").splitlines()) if p is not None]


def test_each_connection_is_kept_from_its_senders_end_with_every_sample() -> None:
    # The fixture: iperf3 -R's control (client port 55326) and data (55330) connections,
    # both ends of each; 10.0.0.2:5201 sent the data: snd_una from 0xf0ae8220 to 0xf0aff1c8.
    series = flow_series(probe_samples())
    assert [(str(f.flow), f.acked_bytes, len(f.points)) for f in series] == [
        ("10.0.0.1:55326>10.0.0.2:5201", 179, 6),
        ("10.0.0.2:5201>10.0.0.1:55330", 0xF0AFF1C8 - 0xF0AE8220, 38),
    ]
    data = series[1]
    assert data.flow == Flow("10.0.0.2", 5201, "10.0.0.1", 55330)
    # Times from the capture's first sample, 764.887000 (the other connection's).
    first = data.points[0]
    assert first.t == pytest.approx(764.947751 - 764.887000) and (first.cwnd, first.ssthresh) == (10, None)
    assert data.points[-1].cwnd == 39 and data.points[-1].ssthresh == 38
    assert {p.ssthresh for p in data.points} == {None, 38}


def test_a_given_t0_and_time_order() -> None:
    def sample(t: float, una: int, cwnd: int, flow: str = "10.0.0.2:80>10.0.0.1:4000") -> ProbeSample:
        return ProbeSample(t, flow, cwnd, UNSET_SSTHRESH, 100, una, una, 0)

    (one,) = flow_series([sample(12.0, 3000, 11), sample(11.0, 1000, 10)], t0=10.0)
    assert [(p.t, p.cwnd) for p in one.points] == [(1.0, 10), (2.0, 11)]
    assert one.acked_bytes == 2000


def test_acknowledged_bytes_across_the_sequence_wrap_and_ties() -> None:
    def sample(t: float, una: int, flow: str) -> ProbeSample:
        return ProbeSample(t, flow, 10, 20, 100, una, una, 0)

    sender, receiver = "[fd00::2]:80>[fd00::1]:4000", "[fd00::1]:4000>[fd00::2]:80"
    wrapped = [sample(0.0, 2**32 - 100, sender), sample(0.1, 50, sender), sample(0.2, 10, receiver)]
    (kept,) = flow_series([*wrapped, sample(0.3, 20, receiver)])
    assert (str(kept.flow), kept.acked_bytes) == (sender, 150)
    assert kept.flow == Flow("fd00::2", 80, "fd00::1", 4000)
    # A step back (two CPUs' events a hair apart) is a step back, not 4 GB forward.
    (back,) = flow_series([sample(0.0, 1000, sender), sample(0.0, 900, sender), sample(0.1, 1500, sender)])
    assert back.acked_bytes == 500
    # A connection whose ends moved alike carried nothing: both ends are kept.
    idle = [sample(0.0, 5, sender), sample(0.1, 5, receiver)]
    assert [str(f.flow) for f in flow_series(idle)] == [sender, receiver]
    assert flow_series([]) == []


def test_a_flow_not_named_as_tcp_probe_names_it() -> None:
    with pytest.raises(ValueError, match="src:port>dst:port"):
        Flow.parse("10.0.0.1>10.0.0.2")


# --- udp_delivered -------------------------------------------------------------------------------


def test_what_arrived_not_what_was_sent() -> None:
    text = fixture("iperf3_udp_i01.json")  # the client sent 30 Mbit/s into 20 Mbit/s
    got = udp_delivered(text)
    assert got.delivered_bps == pytest.approx(19417869.739849724)  # end.sum_received
    assert got.delivered_bps == pytest.approx(4880400 * 8 / 2.010684)
    assert json.loads(text)["end"]["sum"]["bits_per_second"] == pytest.approx(29987310.291863285)  # not it
    assert got.sent_bps == pytest.approx(29987310.291863285)
    assert (got.delivered_bytes, got.datagrams_received) == (4880400, 4880400 // 1400)
    assert (got.datagrams_sent, got.datagrams_lost, got.undelivered) == (5355, 1867, 5355 - 3486)


def test_the_receiving_servers_report_knows_what_arrived_not_what_was_sent() -> None:
    got = udp_delivered(fixture("iperf3_udp_i01_server.json"))
    assert got.delivered_bps == pytest.approx(19417869.739849724)
    assert (got.datagrams_received, got.datagrams_lost) == (3486, 1867)
    assert (got.datagrams_sent, got.sent_bps, got.undelivered) == (None, None, None)


def test_a_reverse_clients_report() -> None:
    got = udp_delivered(fixture("iperf3_udp_reverse_i01.json"))
    assert got.delivered_bps == pytest.approx(4855200 * 8 / 2.000124)
    assert (got.datagrams_sent, got.datagrams_received, got.datagrams_lost) == (5358, 4855200 // 1400, 1859)
    old = udp_delivered(fixture("iperf3_udp_reverse.json"))  # 200 B datagrams at 2 Mbit/s, on another machine
    assert (old.datagrams_sent, old.datagrams_received, old.datagrams_lost) == (2513, 478000 // 200, 108)
    assert old.delivered_bps == pytest.approx(1911942.6417207485)


def test_a_udp_report_that_cannot_say_what_arrived_is_refused() -> None:
    with pytest.raises(ParseError, match=r"the sending server's report \(-R\) does not know what arrived"):
        udp_delivered(fixture("iperf3_udp_reverse_i01_server.json"))
    with pytest.raises(ParseError, match="not a UDP report \\(protocol 'TCP'\\)"):
        udp_delivered(fixture("iperf3_tcp_reverse_i01.json"))
    with pytest.raises(ParseError, match="no end.sum_received"):
        udp_delivered(report({"start": 0, "end": 0.1, "bytes": 1}, protocol="UDP"))
    doc = json.loads(fixture("iperf3_udp_reverse_i01.json"))
    del doc["end"]["sum_received"]["lost_packets"]
    with pytest.raises(ParseError, match="end.sum_received has no number 'lost_packets'"):
        udp_delivered(json.dumps(doc))
    del doc["start"]["connecting_to"]
    with pytest.raises(ParseError, match="neither connecting_to"):
        udp_delivered(json.dumps(doc))


def test_the_window_sampled_every_step_is_the_last_at_or_before_it() -> None:
    from ground.flows import CwndPoint, sampled_every

    points = [CwndPoint(0.2, 10, None), CwndPoint(0.5, 20, None), CwndPoint(0.9, 40, None), CwndPoint(1.7, 20, 20)]
    assert sampled_every(points, 0.5, 2.0) == [
        CwndPoint(0.5, 20, None), CwndPoint(1.0, 40, None), CwndPoint(1.5, 40, None), CwndPoint(2.0, 20, 20)
    ]  # fmt: skip
    assert sampled_every(points[2:], 0.5, 1.0) == [CwndPoint(1.0, 40, None)]  # nothing before the first point
    with pytest.raises(ValueError):
        sampled_every(points, 0, 1.0)
