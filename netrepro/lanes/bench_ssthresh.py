"""`bench ssthresh`: how often a congestion control's ssthresh is replaced by a value no TCP code set.

The reproducer of kmod/README.md's "ssthresh corruption": bulk iperf3 flows
(server to client, `flows` in parallel, each run `seconds` long) through one
lab path, each named congestion control in turn, `runs` times.  For each
flow, tcp_probe's samples are judged by the BPF programs' guard rule
(`ground.tcpprobe.implausible_ssthresh`), so that the kernel's own
algorithms, which have no guard, are judged by the same rule as the BPF
ones; for a BPF program the repairs its guard counted (`ss_repairs`) stand
beside.  Per congestion control: the events per flow-minute with an exact
95 % Poisson interval, and the values seen (on x86 a stale kernel-stack word
is recognisable: kmod/README.md).

It judges nothing: a rate of 0 in N flow-minutes is reported as its interval.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ground.ledger import Ledger
from ground.path import PathSpec
from ground.tcpprobe import implausible_ssthresh, reductions
from kmod import loader
from netrepro.lanes.bench import write_rows
from netrepro.runner.bulk_flows import iperf3_traces
from topologies.lab import Lab

log = logging.getLogger(__name__)

# The path the corruption was first seen on (cubicplus fig3/fig12 at 10 % loss: 100 Mbit/s, 20 ms).
DEFAULT_PATH = {"rtt": "20ms", "rate": "100mbit", "loss": "10%", "queue": "100p"}
DEFAULT_ALGORITHMS = ("reno_beta", "cubic_plus", "reno", "cubic")


def poisson_interval(events: int, exposure: float, level: float = 0.95) -> tuple[float, float]:
    """The exact (Garwood) interval of a Poisson rate: `events` seen in `exposure` units."""
    from scipy import stats

    alpha = 1 - level
    low = stats.chi2.ppf(alpha / 2, 2 * events) / 2 if events else 0.0
    high = stats.chi2.ppf(1 - alpha / 2, 2 * events + 2) / 2
    return low / exposure, high / exposure


def ssthresh(
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS,
    runs: int = 8,
    flows: int = 4,
    seconds: int = 30,
    path: PathSpec | None = None,
    out: Path | None = None,
) -> dict[str, dict[str, Any]]:
    """Each of `algorithms` (a netrepro variant or port, loaded as BPF; else the kernel's own) for `runs`
    runs of `flows` parallel flows; returns the summary per algorithm (also in the manifest)."""
    path = path or PathSpec.parse(**DEFAULT_PATH)
    rows: list[dict[str, Any]] = []
    summary: dict[str, dict[str, Any]] = {}
    with Ledger() as ledger, Lab(path, ledger, seed=13) as lab:
        ours = {*loader.VARIANTS, *loader.PORTS}  # loaded as BPF; any other name is the kernel's own
        loaded = {name: loader.load(name, ledger, "bpf") if name in ours else None for name in algorithms}
        for run_no in range(1, runs + 1):
            for name, algorithm in loaded.items():
                cc = algorithm.registered if algorithm is not None else name
                log.info("ssthresh: %s, run %d of %d", name, run_no, runs)
                before = algorithm.counters().get("ss_repairs") if algorithm is not None else None
                traces = iperf3_traces(lab, ledger, cc, seconds, parallel=flows)
                after = algorithm.counters().get("ss_repairs") if algorithm is not None else None
                found = [(trace, implausible_ssthresh(trace)) for trace in traces]
                measured = {
                    "algorithm": name,
                    "implementation": algorithm.impl if algorithm is not None else "kernel",
                    "run": run_no,
                    "flows": len(traces),
                    "seconds": seconds,
                    "reductions": sum(len(reductions(t)) for t in traces),
                    "acks": sum(len(t) for t in traces),
                    "events": sum(len(idx) for _, idx in found),
                    "flows_with_events": sum(1 for _, idx in found if idx),
                    "guard_repairs": None if before is None or after is None else after - before,
                    # each event as ssthresh/cwnd (cwnd, by PRR, derived from it) at the sample
                    "values": " ".join(f"{t[i].ssthresh}/{t[i].snd_cwnd}" for t, idx in found for i in idx),
                }
                print(" ".join(f"{k}={v}" for k, v in measured.items()), flush=True)
                rows.append(measured)
                summary[name] = _summary([m for m in rows if m["algorithm"] == name])
                about = {"path": path.describe(), "runs": runs, "flows": flows, "seconds": seconds}
                write_rows(rows, "ssthresh", {**about, "rows_done": len(rows), "summary": summary}, out)
    for name, s in summary.items():
        print(
            f"{name} ({s['implementation']}): {s['events']} events in {s['flow_minutes']:.1f} flow-minutes, "
            f"{s['rate_per_flow_minute']:.3f} per flow-minute (95 % {s['rate_low']:.3f}-{s['rate_high']:.3f})"
            + (f"; the guard repaired {s['guard_repairs']}" if s["guard_repairs"] is not None else ""),
            flush=True,
        )
    return summary


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One algorithm's runs (each as it was measured) taken together."""
    minutes = sum(run["flows"] * run["seconds"] for run in runs) / 60
    events = sum(run["events"] for run in runs)
    low, high = poisson_interval(events, minutes)
    repairs = [run["guard_repairs"] for run in runs if run["guard_repairs"] is not None]
    return {
        "implementation": runs[0]["implementation"],
        "flow_minutes": round(minutes, 2),
        "events": events,
        "rate_per_flow_minute": round(events / minutes, 4),
        "rate_low": round(low, 4),
        "rate_high": round(high, 4),
        "per_1000_reductions": round(1000 * events / max(1, sum(run["reductions"] for run in runs)), 3),
        "guard_repairs": sum(repairs) if repairs else None,
        "values": sorted({v for run in runs for v in run["values"].split()}),
    }
