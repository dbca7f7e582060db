"""A trial's time series (ground.series): resampled from tcp_probe, stored beside the CSV by the trial log,
listed and drawn by `run.sh plot`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ground import latency, series
from ground.flows import QdiscStats
from ground.proc import ROOT, CommandError
from ground.tcpprobe import ProbeSample
from ground.trials import TrialLog, read_rows
from netrepro.front import cli
from topologies.queue_sampler import QueueSampler

FLOW = "10.0.0.2:5201>10.0.0.1:40000"
MSS = 1448


def flow(seconds: float, per_s: int = 100, flow: str = FLOW, start: float = 100.0) -> list[ProbeSample]:
    """A flow ACKed `per_s` times a second at 8 Mbit/s, its cwnd rising by one an ACK, its SRTT 40 ms
    rising by 1 ms a second; snd_una starts near the top of the sequence space (it wraps)."""
    step = 8e6 / 8 / per_s
    una0 = 2**32 - 50_000
    return [
        ProbeSample(start + i / per_s, flow, 10 + i, 2**31 - 1 if i < 50 else 20, int((40 + i / per_s) * 1e3),
                    int(una0 + i * step) % 2**32, 0, 0)
        for i in range(int(seconds * per_s))
    ]  # fmt: skip


def test_a_flow_is_resampled_on_the_step_with_its_goodput_across_a_wrap() -> None:
    found = series.from_probe(flow(2.0))
    assert found.flows() == [FLOW] and found.step_s == series.STEP_S
    points = found.of(FLOW)
    assert [p.time_s for p in points][:3] == pytest.approx([0.1, 0.2, 0.3]) and len(points) == 20
    assert points[0].ssthresh is None and points[-1].ssthresh == 20  # none before the first loss
    assert points[4].srtt_ms == pytest.approx(40.5) and points[4].cwnd == 10 + 50
    # 8 Mbit/s acknowledged in every full step, the wrap of snd_una included
    assert [p.goodput_mbit for p in points[1:-1]] == pytest.approx([8.0] * 18, rel=0.02)


def test_a_flow_that_starts_late_starts_its_series_then() -> None:
    found = series.from_probe([*flow(1.0), *flow(0.5, flow="10.0.0.4:5201>10.0.0.3:1", start=100.55)])
    late = found.of("10.0.0.4:5201>10.0.0.3:1")
    assert late[0].time_s == pytest.approx(0.6) and len(late) == 6  # (0.5, 0.6] holds its first ACK
    assert series.from_probe([]).points == ()


def test_the_json_form_and_the_file_give_the_series_back(tmp_path: Path) -> None:
    found = series.from_probe(flow(1.0))
    assert series.TimeSeries.from_json(json.loads(json.dumps(found.as_json()))) == found
    path = tmp_path / "s.csv"
    path.write_bytes(found.csv_bytes())
    assert series.read(path) == found
    with pytest.raises(ValueError, match="columns"):
        series.TimeSeries.from_json({"step_s": 0.1, "columns": ["t"], "rows": []})
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a time series file"):
        series.read(tmp_path / "other.csv")


def stored_figure(tree: Path) -> Path:
    """Two trials of iw/fig2 in a results tree, one with a time series (as a lab's process sends it: JSON)."""
    csv_path = tree / "iw" / "fig2.csv"
    log = TrialLog(csv_path, tree=tree)
    key = json.dumps({"params": {"cc": "cubic", "rtt": "40ms", "initcwnd": 10}, "trial": 0}, sort_keys=True)
    log.append({"trial_key": key, "trial": 0, "cc": "cubic", "draw_seed": 1234, "status": "ok",
                series.FIELD: series.from_probe(flow(1.0)).as_json()})  # fmt: skip
    log.append({"trial_key": key.replace('"trial": 0', '"trial": 1'), "trial": 1, "status": "ok"})
    return csv_path


def test_the_trial_log_stores_the_series_beside_the_csv_and_names_it_in_the_row(tmp_path: Path) -> None:
    csv_path = stored_figure(tmp_path)
    rows = read_rows(csv_path)
    assert series.FIELD not in rows[0] and rows[0][series.FILE_COLUMN] == "fig2.series/1234.csv"
    assert rows[1][series.FILE_COLUMN] == ""
    assert series.read(csv_path.parent / "fig2.series" / "1234.csv") == series.from_probe(flow(1.0))


def test_plot_lists_the_trials_with_a_series_and_draws_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stored_figure(tmp_path)
    assert cli.main(["plot", "iw/fig2", "--results", str(tmp_path)]) == 0
    listed = capsys.readouterr().out
    assert "1 trials with a time series" in listed and "1  trial 0, ok: cc=cubic, initcwnd=10, rtt=40ms" in listed
    assert cli.main(["plot", "iw/fig2", "--results", str(tmp_path), "--trial", "1"]) == 0
    png = tmp_path / "iw" / "fig2.series" / "1234.png"
    assert png.stat().st_size > 10_000 and png.with_suffix(".svg").is_file()
    assert f"wrote {png}" in capsys.readouterr().out
    png.unlink()
    assert cli.main(["plot", str(tmp_path / "iw" / "fig2.csv"), "--trial", "1"]) == 0  # the CSV itself
    assert png.is_file() and "fig2: 1 trials" not in capsys.readouterr().err


def test_plot_refuses_a_trial_it_does_not_have_and_a_figure_with_no_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stored_figure(tmp_path)
    assert cli.main(["plot", "iw/fig2", "--results", str(tmp_path), "--trial", "2"]) == 2
    assert "--trial 2: iw/fig2 has trials 1 to 1 with a series" in capsys.readouterr().err
    TrialLog(tmp_path / "iw" / "fig5a.csv", tree=tmp_path).append({"trial_key": "k", "status": "ok"})
    assert cli.main(["plot", "iw/fig5a", "--results", str(tmp_path)]) == 2
    assert "holds no trial with a time series" in capsys.readouterr().err
    before = sorted(p.name for p in (tmp_path / "iw").rglob("*"))
    assert cli.main(["plot", "iw/fig2", "--results", str(tmp_path / "none")]) == 2
    assert sorted(p.name for p in (tmp_path / "iw").rglob("*")) == before


def test_the_data_connection_is_told_from_iperf3s_control_connection_on_the_same_port() -> None:
    """iperf3 opens a control connection to its server's port beside the data: the RTT under load and the
    series are the data connection's (a trial's series had two flows, one of them idle at cwnd 10)."""
    from ground.tcpprobe import data_samples

    control = [ProbeSample(100.0 + i, "10.0.0.2:5201>10.0.0.1:39999", 10, 2**31 - 1, 40_000, 1000 + i, 0, 0)
               for i in range(3)]  # fmt: skip
    data = flow(1.0)
    assert data_samples([*control, *data], "10.0.0.2:5201") == data
    assert data_samples(control, "10.0.0.2:5201") == control and data_samples(data, "10.0.0.9:5201") == []


def test_each_step_carries_the_bottleneck_backlog_sampled_within_it() -> None:
    samples = flow(1.0)
    # the queue sampled every 0.1 s from 100.05 s, its backlog 10 packets more each time; none in 100.4-100.6
    queue = [series.QueueSample(100.05 + k / 10, 10 * k, 15000 * k) for k in range(10) if k not in (4, 5)]
    found = series.from_probe(samples, queue=queue)
    at = {round(p.time_s, 1): p.queue_pkts for p in found.of(FLOW)}
    assert at[0.1] == 0 and at[0.2] == 10 and at[0.4] == 30 and at[1.0] == 90
    assert at[0.5] is None and at[0.6] is None  # no sample fell in these steps: nothing is made up
    assert series.from_probe(samples).of(FLOW)[0].queue_pkts is None  # not sampled: no queue
    back = series.TimeSeries.from_json(json.loads(json.dumps(found.as_json())))
    assert back == found


def test_a_series_stored_before_the_queue_was_sampled_still_reads(tmp_path: Path) -> None:
    found = series.from_probe(flow(0.5))
    old = tmp_path / "old.csv"
    lines = found.csv_bytes().decode().splitlines()
    old.write_text("\n".join(line.replace(",queue_pkts", "").replace(",,0.1", ",0.1") for line in lines) + "\n")
    assert old.read_text().startswith("time_s,flow,cwnd,ssthresh,srtt_ms,goodput_mbit,step_s\n")
    assert series.read(old) == found


def test_the_queue_occupancy_columns() -> None:
    queue = [series.QueueSample(k / 10, k % 10, 1500 * (k % 10)) for k in range(100)]
    cols = latency.queue_columns(queue)
    assert cols == {
        "queue_p50_pkts": 4.5,
        "queue_p95_pkts": 9.0,
        "queue_max_pkts": 9,
        "queue_samples": 100,
        "queue_reads_failed": 0,
    }
    assert latency.queue_columns([]) == {} and latency.queue_columns([], failed=3) == {"queue_reads_failed": 3}


def test_the_sampler_reads_every_step_and_survives_a_failed_read() -> None:
    reads = iter(range(1000))

    def read() -> QdiscStats:
        n = next(reads)
        if n == 2:
            raise CommandError(["tc"], ROOT, 1, "Cannot find device")
        return QdiscStats(None, "pfifo", "10:", "1:1", 0, 0, 0, 0, 0, n * 1500, n)

    with QueueSampler(read, 0.01) as sampler:
        time.sleep(0.3)
    packets = [s.packets for s in sampler.samples]
    assert sampler.failed == 1 and 2 not in packets and packets[:3] == [0, 1, 3]
    assert 15 <= len(packets) <= 31  # about one a step over 0.3 s
    times = [s.time for s in sampler.samples]
    assert times == sorted(times) and times[-1] <= time.monotonic()
    with pytest.raises(ValueError, match="positive"):
        QueueSampler(read, 0)
