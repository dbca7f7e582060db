"""Benchmarks (`run.sh bench ...`): they report numbers and judge nothing.

`delayline`: at a fixed RTT, per bottleneck rate, the idle ping RTT (median
and p99 error against the set RTT), iperf3 goodput against the ideal
rate x 1448/1514, and the delay line's CPU use during that transfer.

`delayline-links`: the delay line at several links at once: a dumbbell of
two pairs (RTT 20 and 40 ms) with UDP cross traffic through one core, per
core rate: each pair's idle ping RTT error, then both pairs' bulk flows
beside UDP at a fifth of the core for 20 s: what the core carried (TCP and
UDP frames) against its rate, and the CPU of all the delay lines together.

`runner`: figure iw/fig2 at its full trial count, from scratch; the wall time
against the sum of the trials' own download times.  The ratio is the
runner's overhead: lab set-up, verification, per-trial set-up, teardown.

`ports`: each BPF port of a kernel congestion control (kmod/bpf/port.h)
against the kernel's own module, on the same seeded path, in turn, several
runs each: mean goodput with its standard error, and the median ssthresh
after / cwnd before at the loss events, read from tcp_probe; whether the
goodputs lie within noise (two standard errors of their difference) and the
backoffs within 0.02, and within noise (two standard errors of the
difference of medians, from resampling whole flows).  Every cut goes to
<name>-cuts.csv too, so that runs can be pooled.  `control`: the module
against itself, the same flows in the same alternation, for how far two
samples of one implementation lie apart.  It needs the modules:
`run.sh --vm bench ports`.

`jobs` (netrepro.lanes.bench_jobs): a figure serially, again, then with 2,
4 and 8 labs side by side (--jobs): wall time, CPU, the delay lines'
lateness, and each trial's metric and each claim beside the serial run's.

`cluster`: a figure (iw/fig5b, 210 trials on 7 path settings) from scratch
on a local Dask cluster of one worker, then of two (netrepro.engine.cluster): the
wall time of each and the speed-up.  Both workers' labs share this
machine's cores; beside the measured ratio stands the one a worker per VM
would give, the model: each setting's load is its trials' own seconds plus
an equal share of the one-worker run's time outside trials (lab set-up,
verification), the settings dealt largest first to the least loaded
worker; the slowest worker's load is the run's length.

`ssthresh` (netrepro.lanes.bench_ssthresh): the reproducer of the ssthresh corruption on BPF
congestion controls (kmod/README.md): its rate per flow-minute, for each algorithm named.

`soak`: `cubicplus/fig3 --quick` killed (SIGKILL, then `clean`) at N seeded
random moments, then interrupted by SIGINT, SIGTERM and SIGHUP; per round,
whether the machine came back as it was and the CSV stayed whole, and
each killed run resumed to its end with every trial ok once
(netrepro.lanes.soak).  The suite runs five rounds of the same.  With `--cluster`,
each run a `--hosts root@127.0.0.1` run through an sshd of the soak's own:
what the SSH launcher started must end too; with `--jobs N`, each run has
N labs side by side.  With `--lose-host`, each of N runs is a `--hosts` run
over two loopback hosts whose second host's SSH session is killed mid-trial.
"""

from __future__ import annotations

import contextlib
import csv
import faulthandler
import io
import logging
import math
import os
import random
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ground.errors import SetupError
from ground.ledger import Ledger
from ground.path import FRAME, MSS, PathSpec
from ground.results import RESULTS, hand_back, provenance, replace_file, write_json
from ground.tcpprobe import ProbeSample, delivery_rate, reductions
from kmod import loader
from netrepro.runner.verify import measure_goodput, ping_rtts, rtt_check
from netrepro.studykit import trial
from topologies.emulation import DelayLineStage
from topologies.lab import Lab

log = logging.getLogger(__name__)

RATES_MBIT = (10, 50, 100, 200, 500)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def delayline(
    rtt: str = "20ms", rates_mbit: tuple[int, ...] = RATES_MBIT, out: Path | None = None
) -> list[dict[str, Any]]:
    rows = []
    first = PathSpec.parse(rtt=rtt, rate=f"{rates_mbit[0]}mbit")
    with Ledger() as ledger, Lab(first, ledger, shaper="delayline") as lab:
        stage = lab.stage
        assert isinstance(stage, DelayLineStage) and stage.line is not None
        pid = stage.line.process.pid
        for mbit in rates_mbit:
            lab.reconfigure(PathSpec.parse(rtt=rtt, rate=f"{mbit}mbit"))
            pings = rtt_check(lab, ping_rtts(lab, count=200, interval=0.01))
            cpu0, wall0 = _cpu_seconds(pid), time.monotonic()
            goodput = measure_goodput(lab)
            cpu = (_cpu_seconds(pid) - cpu0) / (time.monotonic() - wall0)
            row = {
                "rate_mbit": mbit,
                "rtt_ms": pings.desired,
                "rtt_median_error_ms": round(pings.measured - pings.desired, 3),
                "rtt_p99_error_ms": round(pings.detail["p99"] - pings.desired, 3),
                "rtt_within_tolerance": pings.ok,
                "goodput_mbit": round(goodput.measured, 2),
                "ideal_mbit": round(goodput.desired, 2),
                "goodput_ratio": round(goodput.measured / goodput.desired, 4),
                "goodput_within_tolerance": goodput.ok,
                "delayline_cpu_percent": round(cpu * 100, 1),
            }
            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
            rows.append(row)
    write_rows(rows, "delayline", {"rtt": rtt}, out)
    return rows


def write_rows(rows: list[dict[str, Any]], name: str, about: dict[str, Any], out: Path | None) -> None:
    """<name>.csv and <name>.manifest.json under `out`, or results/bench/."""
    tree = out or RESULTS
    target = out or RESULTS / "bench"
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=list(dict.fromkeys(k for row in rows for k in row)))
    writer.writeheader()
    writer.writerows(rows)
    replace_file(target / f"{name}.csv", text.getvalue().encode())
    hand_back(target / f"{name}.csv", tree)
    write_json(target / f"{name}.manifest.json", {**provenance(), "benchmark": name, **about}, tree)


LINK_RATES_MBIT = (20, 100, 200)


def delayline_links(rates_mbit: tuple[int, ...] = LINK_RATES_MBIT, out: Path | None = None) -> list[dict[str, Any]]:
    from netrepro.runner.session import Session
    from netrepro.runner.verify import PairView
    from netrepro.runner.workloads import WORKLOADS
    from topologies.topology import Topology

    rows = []
    topo = Topology.parse("dumbbell", rtts="20ms,40ms", cross=True)
    with Ledger() as ledger:
        for mbit in rates_mbit:
            path = PathSpec.parse(rate=f"{mbit}mbit")
            with Lab(path, ledger, shaper="delayline", topology=topo) as lab:
                lines = [s.line for s in lab.stages.values() if isinstance(s, DelayLineStage) and s.line]
                pids = [line.process.pid for line in lines]
                row: dict[str, Any] = {"core_mbit": mbit, "delay_lines": len(pids)}
                for i, pair in enumerate(lab.pairs, 1):
                    view = PairView(lab, pair)
                    rtt = rtt_check(view, ping_rtts(view, count=200, interval=0.01))
                    row[f"pair{i}_rtt_ms"] = rtt.desired
                    row[f"pair{i}_rtt_median_error_ms"] = round(rtt.measured - rtt.desired, 3)
                    row[f"pair{i}_rtt_p99_error_ms"] = round(rtt.detail["p99"] - rtt.desired, 3)
                session = Session(lab, ledger, ledger.temp_dir("netrepro-bench-"), results_dir=None)
                cpu0, wall0 = sum(map(_cpu_seconds, pids)), time.monotonic()
                try:
                    udp = f"{mbit / 5:g}mbit"
                    competing = WORKLOADS["competing"]
                    setting = {"duration_s": 20, "cross_rate": udp}
                    m = competing(session, trial.build(setting, 0, "duration_s", competing.keys_type, lab.topology))
                finally:
                    session.stop()
                cpu = (sum(map(_cpu_seconds, pids)) - cpu0) / (time.monotonic() - wall0)
                # what the core carried, in frames: TCP payload 1448 of 1514, UDP payload 1400 of 1442
                carried = m["goodput_mbit"] * FRAME / MSS + m["cross_delivered_mbit"] * (1400 + 42) / 1400
                row.update(
                    {
                        "tcp_goodput_mbit": m["goodput_mbit"],
                        "udp_offered_mbit": mbit / 5,
                        "udp_delivered_mbit": m["cross_delivered_mbit"],
                        "core_carried_ratio": round(carried / mbit, 4),
                        "jain_index": m["jain_index"],
                        "bottleneck_drops": m["bottleneck_drops"],
                        "delaylines_cpu_percent": round(cpu * 100, 1),
                    }
                )
                print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
                rows.append(row)
    write_rows(rows, "delayline_links", {"benchmark": "delayline-links", "topology": topo.describe()}, out)
    return rows


# The paths of `ports`: random losses, and drop-tail losses only (the issue's example), by label
# (the CSV's `path`), and the labels by the names `--paths` takes.  A 100-packet queue (about
# one BDP at 10 Mbit/s and 100 ms) makes the queueing delay, not a stalled guest's odd sample,
# what delay-based algorithms (illinois, its max_rtt) see: not in the default set.
PORT_PATHS = {
    "random 1 %": {"loss": "1%", "queue": "100p"},
    "drop-tail 20p": {"queue": "20p"},
    "drop-tail 100p": {"queue": "100p"},
}
PORT_PATH_NAMES = {"random": "random 1 %", "droptail": "drop-tail 20p", "droptail100": "drop-tail 100p"}


def _flow_measures(trace: list[ProbeSample]) -> tuple[float, list[tuple[int, int]]]:
    """Goodput (Mbit/s, from the bytes snd_una advanced) and (cwnd before, ssthresh after) at each reduction."""
    return delivery_rate(trace) * 8 / 1e6, [(before, after) for before, after in reductions(trace) if before >= 4]


def _quartiles(values: list[float]) -> tuple[float, float]:
    """The first and third quartiles (NaN for fewer than two values)."""
    if len(values) < 2:
        return math.nan, math.nan
    q1, _, q3 = statistics.quantiles(values, n=4)
    return q1, q3


def _median_diff_se(first: list[list[float]], second: list[list[float]], resamples: int = 2000) -> float:
    """The standard error of median(second) - median(first), each the median of its flows' cuts pooled, by
    resampling whole flows (the cuts of one flow are not independent: they share its delay samples).
    NaN below two flows with cuts on either side."""
    first, second = [f for f in first if f], [f for f in second if f]
    if len(first) < 2 or len(second) < 2:
        return math.nan
    rng = random.Random(1)

    def median_of(flows: list[list[float]]) -> float:
        return statistics.median(x for flow in rng.choices(flows, k=len(flows)) for x in flow)

    return statistics.stdev(median_of(second) - median_of(first) for _ in range(resamples))


def _mean_se(values: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    return mean, (statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan)


def ports(
    algorithms: tuple[str, ...] = tuple(loader.PORTS),
    runs: int = 5,
    seconds: int = 20,
    rate: str = "10mbit",
    rtt: str = "100ms",
    out: Path | None = None,
    paths: tuple[str, ...] = (PORT_PATH_NAMES["random"], PORT_PATH_NAMES["droptail"]),
    control: bool = False,
) -> list[dict[str, Any]]:
    """Each port against the kernel's module (module, port, module, port, ...) on each of `paths` (PORT_PATHS).

    With `control`, the module against itself: the columns of the second are `kernel_again_*`.
    """
    from netrepro.runner.bulk_flows import iperf3_trace

    missing = [name for name in algorithms if loader.kernel_has(name) is None]
    if missing:
        raise SetupError(
            f"bench ports compares each port with the kernel's own, and this kernel has no {', '.join(missing)}: "
            "`run.sh --vm bench ports` runs it in Debian's kernel, which has them all as modules"
        )
    # the two sides compared: column prefix -> implementation
    sides = {"kernel": "kernel", "kernel_again": "kernel"} if control else {"kernel": "kernel", "bpf": "bpf"}
    first, second = sides
    name_of_run = "ports-control" if control else "ports"
    rows: list[dict[str, Any]] = []
    cuts: list[dict[str, Any]] = []
    planned = len(paths) * len(algorithms)
    for label in paths:
        path = PathSpec.parse(rtt=rtt, rate=rate, **PORT_PATHS[label])
        with Ledger() as ledger, Lab(path, ledger, seed=1) as lab:
            for name in algorithms:
                loaded = {impl: loader.load(name, ledger, impl) for impl in dict.fromkeys(sides.values())}
                pair = {side: loaded[impl] for side, impl in sides.items()}
                goodput: dict[str, list[float]] = {side: [] for side in pair}
                backoff: dict[str, list[list[float]]] = {side: [] for side in pair}  # per flow
                for run_no in range(1, runs + 1):
                    for side, algorithm in pair.items():
                        log.info("ports: %s, %s, %s, flow %d of %d", label, name, side, run_no, runs)
                        lab.reconfigure(path)  # each flow meets the loss pattern from the seed's start
                        # One yeah flow in the guest once did not end in eight minutes; should a flow
                        # outlast three times its length and two minutes, every thread's stack goes to
                        # stderr, to say where it waits (the run goes on).
                        faulthandler.dump_traceback_later(3 * seconds + 120)
                        try:
                            trace = iperf3_trace(lab, ledger, algorithm.registered, seconds)
                        finally:
                            faulthandler.cancel_dump_traceback_later()
                        mbit, flow_cuts = _flow_measures(trace)
                        goodput[side].append(mbit)
                        backoff[side].append([after / before for before, after in flow_cuts])
                        cuts += [
                            {
                                "path": label,
                                "algorithm": name,
                                "side": side,
                                "flow": run_no,
                                "cwnd_before": before,
                                "ssthresh_after": after,
                            }
                            for before, after in flow_cuts
                        ]
                stats = {side: _mean_se(goodput[side]) for side in pair}
                pooled = {side: [x for flow in backoff[side] for x in flow] for side in pair}
                medians = {side: statistics.median(pooled[side]) if pooled[side] else math.nan for side in pair}
                backoff_se = _median_diff_se(backoff[first], backoff[second])
                diff = stats[second][0] - stats[first][0]
                noise = 2 * math.hypot(stats[second][1], stats[first][1])
                row = {
                    "path": label,
                    "algorithm": name,
                    "port_as": pair[second].registered,
                    "runs": runs,
                    "seconds": seconds,
                    **{f"{side}_goodput_mbit": round(stats[side][0], 3) for side in pair},
                    **{f"{side}_goodput_se": round(stats[side][1], 3) for side in pair},
                    "goodput_diff_mbit": round(diff, 3),
                    "goodput_within_noise": abs(diff) <= noise,
                    **{f"{side}_backoff_median": round(medians[side], 4) for side in pair},
                    # the spread the medians come from: an algorithm whose cut follows measured delay
                    # (illinois) spreads its backoffs over 0.5-0.875, and its median moves with the sample
                    **{
                        f"{side}_backoff_{q}": round(v, 4)
                        for side in pair
                        for q, v in zip(("q1", "q3"), _quartiles(pooled[side]), strict=True)
                    },
                    **{f"{side}_reductions": len(pooled[side]) for side in pair},
                    "backoff_within_0.02": abs(medians[second] - medians[first]) <= 0.02,
                    # how far apart two such medians lie by chance: flows resampled whole (bootstrap)
                    "backoff_diff_se": round(backoff_se, 4),
                    "backoff_within_noise": abs(medians[second] - medians[first]) <= 2 * backoff_se,
                    "port_ss_repairs": None if control else pair[second].counters().get("ss_repairs"),
                }
                print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
                rows.append(row)
                # Written after every row: a run of an hour or more under software emulation keeps what it measured.
                about = {"rate": rate, "rtt": rtt, "paths": {p: PORT_PATHS[p] for p in paths}, "control": control}
                write_rows(rows, name_of_run, {**about, "rows_done": len(rows), "rows_planned": planned}, out)
                write_rows(cuts, f"{name_of_run}-cuts", {**about, "rows_done": len(rows)}, out)
    return rows


def runner(out: Path | None = None) -> dict[str, Any]:
    from expts import iw
    from ground.trials import numbers, read_rows
    from netrepro.runner import sweep

    target = out or RESULTS / "bench"
    began = time.monotonic()
    csv_path = sweep.run_figure(iw.FIG2, sweep.Options(out=target, fresh=True)).csv
    wall = time.monotonic() - began
    rows = read_rows(csv_path)
    downloads = sum(numbers(rows, "download_time_ms")) / 1e3
    trials = sum(numbers(rows, "trial_seconds"))
    phases = sum(numbers(rows, "start_offset_ms")) / 1e3  # each trial's wait for its drawn start phase
    doc = {
        **provenance(),
        "benchmark": "runner",
        "figure": iw.FIG2.full_name,
        "trials": len(rows),
        "wall_seconds": round(wall, 1),
        "sum_of_download_seconds": round(downloads, 2),
        "sum_of_trial_seconds": round(trials, 2),
        "overhead_ratio": round(wall / downloads, 3),
        "per_trial_overhead_ms": round((trials - downloads) / len(rows) * 1e3, 1),
        "sum_of_start_phase_seconds": round(phases, 2),
        "per_trial_start_phase_ms": round(phases / len(rows) * 1e3, 1),
        "fixed_seconds": round(wall - trials, 1),
    }
    write_json(target / "runner.json", doc, out or RESULTS)
    print(
        " ".join(
            f"{k}={doc[k]}"
            for k in (
                "trials",
                "wall_seconds",
                "sum_of_download_seconds",
                "overhead_ratio",
                "per_trial_overhead_ms",
                "fixed_seconds",
            )
        )
    )
    return doc


def _makespan(loads: list[float], workers: int) -> float:
    """The longest worker's share when the settings' loads are dealt largest first to the least loaded."""
    shares = [0.0] * workers
    for load in sorted(loads, reverse=True):
        shares[shares.index(min(shares))] += load
    return max(shares)


def cluster(figure: str = "iw/fig5b", quick: bool = False, out: Path | None = None) -> list[dict[str, Any]]:
    import tempfile

    import dask
    from distributed import LocalCluster

    import expts
    from ground.trials import numbers, read_rows
    from netrepro.engine.cluster import Engine
    from netrepro.runner import shards, sweep

    fig = expts.find(figure)
    rows: list[dict[str, Any]] = []
    fixed = 0.0  # per setting: the one-worker run's seconds outside trials, shared equally
    with tempfile.TemporaryDirectory(prefix="netrepro-bench-cluster-") as scratch:
        for workers in (1, 2):
            with (
                dask.config.set({"temporary-directory": scratch}),
                LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    resources={"lab": 1},
                    dashboard_address=None,
                    local_directory=scratch,
                ) as local,
            ):
                engine = Engine(scheduler=local.scheduler_address)
                opts = sweep.Options(out=Path(scratch) / f"workers-{workers}", quick=quick, fresh=True, engine=engine)
                began = time.monotonic()
                csv_path = sweep.run_figure(fig, opts).csv
                wall = time.monotonic() - began
            trials = read_rows(csv_path)
            by_setting: dict[str, float] = {}
            for r in trials:
                by_setting[shards.setting(r)] = by_setting.get(shards.setting(r), 0.0) + r.measured("trial_seconds")
            total = sum(numbers(trials, "trial_seconds"))
            if workers == 1:
                fixed = (wall - total) / len(by_setting)
            loads = [load + fixed for load in by_setting.values()]
            rows.append(
                {
                    "figure": fig.full_name,
                    "quick": quick,
                    "workers": workers,
                    "trials": len(trials),
                    "failed": sum(1 for r in trials if not r.ok),
                    "settings": len(by_setting),
                    "wall_seconds": round(wall, 1),
                    "sum_of_trial_seconds": round(total, 1),
                    "rows_per_worker": "/".join(
                        str(n) for n in sorted(Counter(r.worker for r in trials).values(), reverse=True)
                    ),
                    # a worker per VM: trial time as measured here, spread as the settings allow
                    "model_speed_up_a_vm_each": round(sum(loads) / _makespan(loads, workers), 2),
                }
            )
            rows[-1]["speed_up"] = round(rows[0]["wall_seconds"] / wall, 2)
            print(" ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    write_rows(rows, "cluster", {"cpus": os.cpu_count(), "figure": fig.full_name, "quick": quick}, out)
    return rows


def soak(kills: int, seed: int, out: Path | None = None, cluster: bool = False, jobs: int = 0) -> bool:
    """Run the soak, one line per round as it ends; True if every round left nothing.  `cluster`:
    each run on a Dask cluster launched over SSH on loopback, through an sshd of the soak's own;
    `jobs`: each run with that many labs side by side (--jobs)."""
    import tempfile

    from netrepro.lanes import soak as soak_rounds
    from netrepro.lanes.loopback_sshd import loopback_sshd

    began = time.monotonic()
    name = "soak-cluster.json" if cluster else (f"soak-jobs{jobs}.json" if jobs else "soak.json")
    done: list[soak_rounds.Round] = []

    def summary() -> dict[str, Any]:
        return {
            **provenance(),
            "figure": " ".join(soak_rounds.JOBS_FIGURE if jobs else soak_rounds.FIGURE),
            "on": "a Dask cluster launched over SSH on loopback (--hosts root@127.0.0.1)"
            if cluster
            else (f"{jobs} labs side by side (--jobs {jobs})" if jobs else "this process"),
            "seed": seed,
            "rounds": [r.__dict__ for r in done],
            "survived": sum(1 for r in done if r.survived),
            "of": len(done),
            "planned": len(soak_rounds.plan(kills, seed)),
            "wall_seconds": round(time.monotonic() - began, 1),
        }

    def report(result: soak_rounds.Round) -> None:
        """Each round as it ends: its line, and the summary so far written (a soak stopped keeps its rounds)."""
        done.append(result)
        print(result.line(), flush=True)
        if out is not None:
            write_json(out / name, summary(), out)

    with tempfile.TemporaryDirectory(prefix="netrepro-soak-") as work, contextlib.ExitStack() as stack:
        sshd = stack.enter_context(loopback_sshd(Path(work) / "ssh")) if cluster else None
        soak_rounds.soak(kills, seed, Path(work), report=report, sshd=sshd, jobs=jobs, again=True)
    final = summary()
    print(f"soak: {final['survived']} of {final['of']} rounds left the machine as it was ({final['wall_seconds']} s)")
    return bool(final["survived"] == final["of"])


def lose_host(rounds: int, out: Path | None = None) -> bool:
    """`rounds` --hosts runs over two loopback hosts, each losing its second host's SSH session mid-trial
    (netrepro.lanes.soak.session_round), one line per round; True if every run completed on the other
    host, each trial once, and left nothing."""
    import tempfile

    from ground.machinestate import snapshot
    from netrepro.lanes import soak as soak_rounds
    from netrepro.lanes.loopback_sshd import loopback_sshd

    began = time.monotonic()
    results = []
    with (
        tempfile.TemporaryDirectory(prefix="netrepro-soak-") as work,
        loopback_sshd(Path(work) / "ssh", soak_rounds.HOSTS) as sshd,
    ):
        found = snapshot()  # every round must leave the machine as the soak found it
        for i in range(rounds):
            results.append(soak_rounds.session_round(Path(work) / f"round-{i:03d}", sshd, before=found))
            print(results[-1].line(), flush=True)
    survived = sum(1 for r in results if r.survived)
    summary = {
        **provenance(),
        "figure": " ".join(soak_rounds.HOSTS_FIGURE),
        "on": "a Dask cluster launched over SSH on two loopback hosts (--hosts "
        + ",".join(f"root@{a}" for a in soak_rounds.HOSTS)
        + "), the second's session SIGKILLed once a trial of its own was home",
        "rounds": [r.__dict__ for r in results],
        "survived": survived,
        "of": len(results),
        "wall_seconds": round(time.monotonic() - began, 1),
    }
    print(f"lose-host soak: {survived} of {len(results)} runs completed on the other host and left nothing "
          f"({summary['wall_seconds']} s)")  # fmt: skip
    if out is not None:
        write_json(out / "soak-lose-host.json", summary, out)
    return survived == len(results)
