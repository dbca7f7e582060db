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

`--summarize TREE` runs nothing: it sums a `reproduce` run made in chunks (the reference's, `reproduce all`,
one chunk a working session on a build machine made afresh for each, each resumed from the rows the last
left), from each chunk's schedule (kept as reproduce/<studies>/schedule-N.json) and the rows in the tree,
into results/bench/reference.json: the wall time and labs chunk by chunk and in all, and the same numbers
of the tree, each claim set beside the stored reference's.
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
RESUMED = "reference"  # a run resumed in chunks (the reference's): results/bench/reference.json
SEED = 1  # the reference's


def figures_of(studies: str) -> list[Figure]:
    """The declared figures of the named studies (comma-separated, or `all`), each with its kept derived ones,
    as `reproduce` takes them."""
    names = {s.__name__.rsplit(".", 1)[-1]: s for s in expts.STUDIES}
    if studies == "all":
        studies = ",".join(names)
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
    return lab_seconds(timeline) / span if span > 0 else 0.0


def lab_seconds(timeline: Sequence[tuple[float, int]]) -> float:
    """The labs' seconds over the timeline: each moment's labs times the time to the next."""
    return sum(n * (timeline[k + 1][0] - t) for k, (t, n) in enumerate(timeline[:-1]))


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


def tree_numbers(figures: Sequence[Figure], tree: Path, seed: int, against: Path) -> dict[str, Any]:
    """What a reproduce run left in `tree`: its trials (the latest attempt of each) and those not ok, the delay
    lines' lateness (the largest p99 and max of any trial; the attempts over their bound, each run again), the
    paths verified, each figure's verdict, and each claim's outcome beside the one stored in `against`."""
    claims: list[dict[str, Any]] = []
    per_figure = []
    p99s, maxes = [], []
    over = trials = not_ok = 0
    verified = paths = 0
    for fig in figures:
        now, ref = _manifest(tree, fig), _manifest(against, fig)
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
    return {
        "trials": trials,
        "trials_not_ok": not_ok,
        "late_p99_ms_max": max(p99s, default=None),
        "late_max_ms_max": max(maxes, default=None),
        "attempts_late_over_bound": over,
        "paths_verified": verified,
        "paths": paths,
        "figures": per_figure,
        "claims": claims,
        "claims_same": sum(1 for c in claims if c["same"]),
    }


def passed(doc: Mapping[str, Any], same_claims: bool = True) -> bool:
    """Every trial ok, every path verified and (`same_claims`) every claim's outcome the one set beside it: a
    run beside a reference measured the same way must agree with it; the reference measured again with
    variation is set beside the rows without it to show what moved, and a claim that moved is its finding."""
    same = doc["claims_same"] == len(doc["claims"]) or not same_claims
    return not doc["trials_not_ok"] and doc["paths_verified"] == doc["paths"] and same


def reproduce(studies: str = STUDIES, quick: bool = False, out: Path | None = None, keep: Path | None = None) -> bool:
    """Run the benchmark; write results/bench/reproduce.json (or under `out`); True when every trial was ok,
    every path verified and every verdict is the reference's."""
    state = results.git_state()
    if state.get("dirty") and not quick:
        raise UserError("bench reproduce: the checkout has uncommitted changes; commit them, then run it")
    figures = figures_of(studies)
    seed = SEED
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
            **tree_numbers(figures, tree, seed, results.REFERENCE),
            "schedule": schedule.get("figures", []),
        }
        target = out or results.RESULTS / "bench"
        results.write_json(target / f"{NAME}.json", doc, out or results.RESULTS)
        print(summary(doc))
        print(f"wrote {target / f'{NAME}.json'}")
        return status == 0 and passed(doc)
    finally:
        if keep is None:
            shutil.rmtree(tree, ignore_errors=True)


def chunks_of(tree: Path, label: str) -> list[dict[str, Any]]:
    """The schedules of a run resumed in chunks, in order: <tree>/reproduce/<label>/schedule-<N>.json (each
    chunk's schedule.json, kept under its number when the chunk was stopped)."""
    here = tree / "reproduce" / label
    numbered = []
    for path in here.glob("schedule-*.json"):
        number = path.stem.removeprefix("schedule-")
        if number.isdigit():
            numbered.append((int(number), path))
    return [json.loads(path.read_text()) for _, path in sorted(numbered)]


def resumed(studies: str, tree: Path, out: Path | None = None) -> dict[str, Any]:
    """A `reproduce` run made in chunks (one a working session on a machine made afresh for each, resumed from
    the rows the last left), summed: its wall time and labs chunk by chunk and in all, and what its tree holds
    (tree_numbers, each claim beside the stored reference's).  Written to results/bench/reference.json (or
    under `out`); run before the tree's rows replace the stored ones, which they are set beside."""
    figures = figures_of(studies)
    label = studies.replace(",", "+")
    chunks = chunks_of(tree, label)
    if not chunks:
        raise UserError(
            f"bench reproduce --summarize {tree}: no reproduce/{label}/schedule-N.json in it (each chunk's "
            "schedule.json, kept as schedule-1.json, schedule-2.json, ... when the chunk was stopped)"
        )
    walls = [float(c.get("wall_s") or 0.0) for c in chunks]
    timelines = [labs_over_time(c) for c in chunks]
    planned = estimate.of(figures, False, None, results.REFERENCE)
    codes = sorted({r.text("code") for fig in figures for r in _attempts(tree, fig, SEED)} - {""})
    doc = {
        **results.provenance(),
        "benchmark": RESUMED,
        "studies": studies,
        "seed": SEED,
        "code_of_rows": codes,
        "cores": chunks[-1].get("cores", admission.cores()),
        "chunks": [
            {
                "wall_s": wall,
                "labs_max": max((n for _, n in timeline), default=0),
                "labs_mean": round(lab_seconds(timeline) / wall, 2) if wall > 0 else 0.0,  # over the chunk
                "figures": chunk.get("figures", []),
            }
            for chunk, wall, timeline in zip(chunks, walls, timelines, strict=True)
        ],
        "wall_s": round(sum(walls), 1),
        "serial_estimate_s": round(planned.serial_s, 1),
        "packed_estimate_s": round(planned.packed_s, 1),
        "labs_max": max((n for t in timelines for _, n in t), default=0),
        "labs_mean": round(sum(map(lab_seconds, timelines)) / sum(walls), 2) if sum(walls) > 0 else 0.0,
        **tree_numbers(figures, tree, SEED, results.REFERENCE),
    }
    target = out or results.RESULTS / "bench"
    results.write_json(target / f"{RESUMED}.json", doc, out or results.RESULTS)
    print(summary(doc))
    print(f"wrote {target / f'{RESUMED}.json'}")
    return doc


def clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def summary(doc: Mapping[str, Any]) -> str:
    """The benchmark's numbers in a few lines."""
    lines = [
        f"reproduce {doc['studies']}: {doc['wall_s']:.0f} s ({clock(doc['wall_s'])}) on {doc['cores']} cores; "
        f"serial estimate {clock(doc['serial_estimate_s'])}, packed estimate {clock(doc['packed_estimate_s'])}",
        f"  labs: at most {doc['labs_max']}, {doc['labs_mean']} on average; CPU busy "
        + (f"{doc['cpu_share']:.0%}" if doc.get("cpu_share") is not None else "not recorded"),
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
