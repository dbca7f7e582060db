"""`run.sh bench jobs`: a figure with 1, 2, 4 and 8 labs side by side on this machine, and what it costs.

Each figure (by default linuxcc/fig6 and iw/fig5a, --quick) runs from scratch
serially (one lab, no cluster), then serially again with the same trials'
draws (`--seed 1` both times: a replay, whose difference is timing alone),
then again with other draws (`--seed 2`: each trial's own loss seed and
start phase drawn anew, as independent trials of the same cell differ; its
difference from the first run is the figure's trial-to-trial noise), then
with `--jobs` 2, 4 and 8 (seed 1).  Per run: the wall time and the
speed-up over the serial run, the machine's CPU seconds (from /proc/stat)
and the labs' own (the rows' cpu_s), the delay lines' lateness (the
largest p99 and max of any trial, and how many trials it failed), whether
every path verified, and for each trial the relative difference of its
metric from the first run's: the largest, and how many trials lie further
from it than the replay's largest (`beyond_replay`) and than the other
draws' largest (`beyond_noise`).  Each trial's value in every run goes to
results/bench/jobs-trials.csv, each claim's outcome and numbers to
jobs-claims.csv, the table to jobs.csv.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ground.manifests import read_manifest
from ground.trials import Row, numbers, read_rows
from netrepro.lanes.bench import write_rows

FIGURES = ("linuxcc/fig6", "iw/fig5a")
LABS = (1, 2, 4, 8)


def busy_seconds() -> float:
    """The machine's CPU seconds so far: every CPU's time outside idle and iowait (/proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _by_trial(rows: Sequence[Row], metric: str) -> dict[str, float]:
    out = {}
    for row in rows:
        value = row.number(metric)
        if row.ok and value is not None:
            out[row.key] = value
    return out


def _changes(these: dict[str, float], serial: dict[str, float]) -> list[float]:
    """Each trial's relative difference from the serial run's value of it."""
    return [abs(v - serial[k]) / abs(serial[k]) for k, v in these.items() if serial.get(k)]


def jobs(
    figures: tuple[str, ...] = FIGURES, labs: tuple[int, ...] = LABS, quick: bool = True, out: Path | None = None
) -> list[dict[str, Any]]:
    import expts
    from netrepro.engine.cluster import Engine
    from netrepro.runner import sweep

    rows: list[dict[str, Any]] = []
    claims: list[dict[str, Any]] = []
    per_trial: list[dict[str, Any]] = []
    runs = [
        (1, 1, "serial"),
        (1, 1, "serial replay"),
        (1, 2, "serial, other draws"),
        *((n, 1, f"--jobs {n}") for n in labs if n > 1),
    ]
    with tempfile.TemporaryDirectory(prefix="netrepro-bench-jobs-") as scratch:
        for figure in figures:
            fig = expts.find(figure)
            serial: dict[str, float] = {}
            replay = noise = 0.0
            first_wall = 0.0
            for n, (count, seed, name) in enumerate(runs):
                engine = Engine(jobs=count) if count > 1 else None
                out_dir = Path(scratch) / f"{fig.study}-{fig.name}-{n}"
                opts = sweep.Options(out=out_dir, quick=quick, seed=seed, engine=engine)
                busy, began = busy_seconds(), time.monotonic()
                csv_path = sweep.run_figure(fig, opts).csv
                wall, busy = time.monotonic() - began, busy_seconds() - busy
                trials = read_rows(csv_path)
                manifest = read_manifest(csv_path.with_name(f"{fig.name}.manifest.json"))
                values = _by_trial(trials, fig.y)
                if n == 0:
                    serial, first_wall = values, wall
                changes = _changes(values, serial)
                if n == 1:
                    replay = max(changes, default=0.0)
                if n == 2:
                    noise = max(changes, default=0.0)
                late = [r for r in trials if r.text("late_p99_ms")]
                summary = {
                    "figure": fig.full_name,
                    "run": name,
                    "labs": count,
                    "seed": seed,
                    "trials": len(trials),
                    "ok": sum(1 for r in trials if r.ok),
                    "failed_late": sum(1 for r in trials if r.text("late_over_bound") == "true"),
                    "paths_verified": all(v.get("ok") for v in manifest.verifications.values()),
                    "wall_seconds": round(wall, 1),
                    "speed_up": round(first_wall / wall, 2),
                    "machine_cpu_seconds": round(busy, 1),
                    "labs_cpu_seconds": round(sum(numbers(trials, "cpu_s")), 1),
                    "late_p99_ms_max": max(numbers(late, "late_p99_ms"), default=0.0),
                    "late_max_ms_max": max(numbers(late, "late_max_ms"), default=0.0),
                    "metric": fig.y,
                    "largest_change_pct": round(100 * max(changes, default=0.0), 2),
                    "replay_pct": round(100 * replay, 2) if n else "",
                    "other_draws_pct": round(100 * noise, 2) if n > 1 else "",
                    "beyond_replay": sum(1 for c in changes if c > replay) if n > 1 else "",
                    "beyond_noise": sum(1 for c in changes if c > noise) if n > 2 else "",
                }
                rows.append(summary)
                print(" ".join(f"{k}={v}" for k, v in summary.items()), flush=True)
                cells = {r.key: r for r in trials if r.ok}
                for key, value in sorted(values.items()):
                    cell = cells[key]
                    per_trial.append(
                        {
                            "figure": fig.full_name,
                            "run": name,
                            "cell": f"{fig.x}={cell.text(fig.x)} {cell.series}".rstrip(),
                            "trial": cell.trial,
                            fig.y: value,
                            "serial": serial.get(key),
                            "change_pct": round(100 * (value - serial[key]) / serial[key], 2)
                            if serial.get(key)
                            else "",
                            "late_p99_ms": cell.text("late_p99_ms"),
                            "late_max_ms": cell.text("late_max_ms"),
                        }
                    )
                for c in (manifest.doc.get("verdict") or {}).get("claims") or []:
                    claims.append(
                        {
                            "figure": fig.full_name,
                            "run": name,
                            "quote": " ".join(str(c.get("quote")).split()[:10]),
                            "outcome": c.get("outcome"),
                            "ours": c.get("evidence"),
                        }
                    )
    about = {"cpus": os.cpu_count(), "figures": list(figures), "labs": list(labs), "quick": quick}
    write_rows(rows, "jobs", about, out)
    write_rows(claims, "jobs-claims", about, out)
    write_rows(per_trial, "jobs-trials", about, out)
    return rows
