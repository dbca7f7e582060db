"""`run.sh bench reproduce`: studies' declared figures through `reproduce` at full trial counts, packed into labs
side by side, and what that costs and changes.

From a clean commit (a dirty tree is refused: the numbers must name the code that made them), it runs
`run.sh reproduce <studies>` as a user would, into an output tree of its own (removed after, unless --out
keeps it), with the reference's seed, so that every trial draws what the stored reference's trial of the
same key drew.  It measures the wall time against the serial and the packed estimates of the same figures
(netrepro.runner.estimate), the machine's CPU over the run (/proc/stat), the labs over time (the run's
schedule.json: each figure's labs from its start to its end), the delay lines' lateness (the largest p99
and max of any trial, and the trials whose lateness passed their bound), whether every path verified, and
every claim's outcome beside the stored reference's (results/reference: each study's figures run one
figure and one lab at a time).  A verdict that differs is listed with both outcomes: labs side by side
share the CPU, and a claim whose outcome moves with it is a fidelity failure; so can a claim near its edge
in any second run of a network, which the comparison with the reference's own spread has to tell apart.
The result goes to results/bench/reproduce.json; docs/benchmarks.md shows it (netrepro.front.docfacts_bench).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import expts
from ground import results
from ground.errors import UserError
from ground.manifests import ManifestUnreadable, read_manifest
from ground.trials import Row, latest_rows, read_rows
from netrepro.lanes.bench_jobs import busy_seconds
from netrepro.runner import admission, estimate
from netrepro.studykit.spec import Figure

STUDIES = "iw,spdy,web"
NAME = "reproduce"


def figures_of(studies: str) -> list[Figure]:
    """The declared figures of the named studies (comma-separated), each with its kept derived ones, as
    `reproduce` takes them."""
    names = {s.__name__.rsplit(".", 1)[-1]: s for s in expts.STUDIES}
    unknown = [s for s in studies.split(",") if s not in names]
    if unknown:
        raise UserError(f"bench reproduce --studies {studies}: no such study {', '.join(unknown)}; {', '.join(names)}")
    return expts.measured_of([fig for s in studies.split(",") for fig in names[s].FIGURES])


def labs_over_time(schedule: Mapping[str, Any]) -> list[tuple[float, int]]:
    """(seconds from the run's start, labs running from then on), at each figure's start and end."""
    spans = [
        (float(f["start_s"]), float(f["end_s"]), int(f["labs"]))
        for f in schedule.get("figures", [])
        if f.get("start_s") is not None and f.get("end_s") is not None
    ]
    moments = sorted({t for s, e, _ in spans for t in (s, e)})
    return [(t, sum(n for s, e, n in spans if s <= t < e)) for t in moments]


def mean_labs(timeline: Sequence[tuple[float, int]]) -> float:
    """The labs running on average over the timeline's span (weighted by time)."""
    if len(timeline) < 2:
        return float(timeline[0][1]) if timeline else 0.0
    span = timeline[-1][0] - timeline[0][0]
    weighted = sum(n * (timeline[k + 1][0] - t) for k, (t, n) in enumerate(timeline[:-1]))
    return weighted / span if span > 0 else 0.0


def _claims(manifest: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    verdict = manifest.get("verdict")
    claims = verdict.get("claims") if isinstance(verdict, dict) else None
    return [c for c in claims or [] if isinstance(c, dict) and not c.get("check")]


def _manifest(tree: Path, fig: Figure) -> Mapping[str, Any]:
    try:
        return read_manifest(fig.manifest_in(tree)).doc
    except ManifestUnreadable:
        return {}


def compare_claims(fig: Figure, now: Mapping[str, Any], reference: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each claim of the figure (checks aside): its outcome in this run and in the reference, by its quote and
    reading (a claim the reference does not have is compared with nothing)."""
    before = {(str(c.get("quote")), str(c.get("reading"))): c for c in _claims(reference)}
    found = []
    for claim in _claims(now):
        key = (str(claim.get("quote")), str(claim.get("reading")))
        then = before.get(key)
        found.append(
            {
                "figure": fig.full_name,
                "quote": str(claim.get("quote", "")),
                "outcome": str(claim.get("outcome", "")),
                "reference": str(then.get("outcome", "")) if then else "",
                "evidence": str(claim.get("evidence", "")),
                "reference_evidence": str(then.get("evidence", "")) if then else "",
                "same": then is not None and then.get("outcome") == claim.get("outcome"),
            }
        )
    return found


def _paths_verified(manifest: Mapping[str, Any]) -> tuple[int, int]:
    """(paths verified within tolerance, paths) of a figure's manifest."""
    paths = [v for v in (manifest.get("verification") or {}).values() if isinstance(v, dict)]
    ok = sum(1 for v in paths if all(c.get("ok") for c in v.get("checks", []) if isinstance(c, dict)))
    return ok, len(paths)


def _attempts(tree: Path, fig: Figure, seed: int) -> list[Row]:
    """Every attempt of the figure's trials at `seed` (a late or repaired one run again included)."""
    path = tree / fig.directory / fig.csv_name
    return [r for r in read_rows(path) if r.seed == seed] if path.is_file() else []


def reproduce(studies: str = STUDIES, quick: bool = False, out: Path | None = None, keep: Path | None = None) -> bool:
    """Run the benchmark; write results/bench/reproduce.json (or under `out`); True when every trial was ok,
    every path verified and every verdict is the reference's."""
    state = results.git_state()
    if state.get("dirty") and not quick:
        raise UserError("bench reproduce: the checkout has uncommitted changes; commit them, then run it")
    figures = figures_of(studies)
    seed = 1  # the reference's
    tree = keep or Path(tempfile.mkdtemp(prefix="netrepro-bench-reproduce-", dir="/var/tmp"))
    try:
        planned = estimate.of(figures, quick, None, results.REFERENCE)
        argv = [sys.executable, "-m", "netrepro", "reproduce", studies, "--out", str(tree), "--seed", str(seed)]
        argv += ["--quick"] if quick else []
        print(f"bench reproduce: {' '.join(argv[2:])}", flush=True)
        busy, began = busy_seconds(), time.monotonic()
        status = subprocess.run(argv, cwd=results.REPO, check=False).returncode
        wall, cpu = time.monotonic() - began, busy_seconds() - busy
        label = studies.replace(",", "+")
        written = tree / "reproduce" / label / "schedule.json"
        schedule = json.loads(written.read_text()) if written.is_file() else {}  # none: it stopped before any
        timeline = labs_over_time(schedule)
        claims: list[dict[str, Any]] = []
        per_figure = []
        p99s, maxes = [], []
        over = trials = not_ok = 0
        verified = paths = 0
        for fig in figures:
            now, ref = _manifest(tree, fig), _manifest(results.REFERENCE, fig)
            claims += compare_claims(fig, now, ref)
            attempts = _attempts(tree, fig, seed)
            rows = latest_rows(attempts)
            trials += len(rows)
            not_ok += sum(1 for r in rows if not r.ok)
            p99s += [v for r in rows if (v := r.number("late_p99_ms")) is not None and math.isfinite(v)]
            maxes += [v for r in rows if (v := r.number("late_max_ms")) is not None and math.isfinite(v)]
            over += sum(1 for r in attempts if r.text("late_over_bound") == "true")  # each run again
            ok, n = _paths_verified(now)
            verified, paths = verified + ok, paths + n
            verdict, ref_verdict = (m.get("verdict") for m in (now, ref))
            per_figure.append(
                {
                    "figure": fig.full_name,
                    "trials": len(rows),
                    "verdict": verdict.get("verdict", "") if isinstance(verdict, dict) else "",
                    "reference_verdict": ref_verdict.get("verdict", "") if isinstance(ref_verdict, dict) else "",
                    "paths_verified": f"{ok} of {n}",
                }
            )
        doc = {
            **results.provenance(),
            "benchmark": NAME,
            "studies": studies,
            "quick": quick,
            "seed": seed,
            "exit_status": status,
            "cores": admission.cores(),
            "wall_s": round(wall, 1),
            "serial_estimate_s": round(planned.serial_s, 1),
            "packed_estimate_s": round(planned.packed_s, 1),
            "cpu_busy_s": round(cpu, 1),
            "cpu_share": round(cpu / (wall * admission.cores()), 3) if wall > 0 else None,
            "labs_over_time": timeline,
            "labs_max": max((n for _, n in timeline), default=0),
            "labs_mean": round(mean_labs(timeline), 2),
            "trials": trials,
            "trials_not_ok": not_ok,
            "late_p99_ms_max": max(p99s, default=None),
            "late_max_ms_max": max(maxes, default=None),
            "attempts_late_over_bound": over,
            "paths_verified": verified,
            "paths": paths,
            "figures": per_figure,
            "schedule": schedule.get("figures", []),
            "claims": claims,
            "claims_same": sum(1 for c in claims if c["same"]),
        }
        target = out or results.RESULTS / "bench"
        results.write_json(target / f"{NAME}.json", doc, out or results.RESULTS)
        print(summary(doc))
        print(f"wrote {target / f'{NAME}.json'}")
        return status == 0 and not not_ok and verified == paths and doc["claims_same"] == len(claims)
    finally:
        if keep is None:
            shutil.rmtree(tree, ignore_errors=True)


def clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def summary(doc: Mapping[str, Any]) -> str:
    """The benchmark's numbers in a few lines."""
    lines = [
        f"reproduce {doc['studies']}: {doc['wall_s']:.0f} s ({clock(doc['wall_s'])}) on {doc['cores']} cores; "
        f"serial estimate {clock(doc['serial_estimate_s'])}, packed estimate {clock(doc['packed_estimate_s'])}",
        f"  labs: at most {doc['labs_max']}, {doc['labs_mean']} on average; CPU busy {doc['cpu_share']:.0%}",
        f"  trials {doc['trials']}, not ok {doc['trials_not_ok']}; lateness p99 at most {doc['late_p99_ms_max']} ms, "
        f"max {doc['late_max_ms_max']} ms, {doc['attempts_late_over_bound']} attempts over their bound (run again)",
        f"  paths verified {doc['paths_verified']} of {doc['paths']}; claims as the reference's: "
        f"{doc['claims_same']} of {len(doc['claims'])}",
    ]
    lines += [
        f"  differs: {c['figure']}: {c['quote'][:70]}: {c['outcome']} (reference: {c['reference'] or 'none'})"
        for c in doc["claims"]
        if not c["same"]
    ]
    return "\n".join(lines)
