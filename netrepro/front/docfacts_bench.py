"""The benchmarks' numbers docs/benchmarks.md states, computed from the stored results/bench JSON.

A soak (`run.sh bench soak`, netrepro.lanes.soak) writes each round it ran
to results/bench/soak-*.json, `run.sh bench reproduce`
(netrepro.lanes.bench_reproduce) its run to results/bench/reproduce.json
(and, with --summarize, the reference's run made in chunks to reference.json),
and `run.sh bench runner` (netrepro.lanes.bench) to results/bench/runner.json;
the page's markers (netrepro.front.docnumbers) take their values from here,
so that a new run changes the prose or fails tests/unit/test_doc_numbers.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from netrepro.front.docrows import Facts, Stored, table

SOAKS = {"jobs3": "soak-jobs3.json", "lose_host": "soak-lose-host.json"}


def _rounds(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [round_ for round_ in doc.get("rounds") or [] if isinstance(round_, dict)]


def _span(values: Sequence[float], unit: str = "") -> str:
    low, high = min(values), max(values)
    return f"{low:.1f}{unit}" if round(low, 1) == round(high, 1) else f"{low:.1f} to {high:.1f}{unit}"


def _whole_span(values: Sequence[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low} to {high}"


def _commit(doc: Mapping[str, Any]) -> str:
    git = doc.get("git")
    commit = str(git.get("commit", "")) if isinstance(git, dict) else str(git or "")
    return commit[:7] + ("+dirty" if isinstance(git, dict) and git.get("dirty") else "")


def _undone(clean_output: str) -> int:
    """How many changes `run.sh clean` undid, from its lines ("run-….jsonl: undid 2 change(s)")."""
    return sum(int(n) for n in re.findall(r"undid (\d+) change", clean_output))


def _left(found: Any) -> str:
    return "nothing" if not found else "; ".join(str(x) for x in found)


def rounds_table(doc: Mapping[str, Any], *, lost_host: bool = False) -> str:
    """Each round of a soak, a line each: the signal, when, how far the run had come (rows home at the
    kill; for a lost host, trials ok at the end and how many the other host took), what `clean` undid,
    how the resume ended, and what the round left on the machine."""
    body = []
    for n, round_ in enumerate(_rounds(doc), 1):
        problems = [*(round_.get("csv_problems") or []), *(round_.get("resume_problems") or [])]
        resumed = str(round_.get("resumed") or "not needed") + (
            "; " + "; ".join(map(str, problems)) if problems else ""
        )
        body.append(
            [
                str(n),
                str(round_["how"]),
                f"{float(round_['after_s']):.1f}",
                str(round_["exit_code"]),
                str(round_["rows"]),
                *([str(round_["handed"]), str(round_["launched"])] if lost_host else []),
                str(_undone(str(round_.get("clean_output") or ""))),
                resumed,
                _left(round_.get("left")),
            ]
        )
    counts = ["trials ok", "handed over", "processes launched (all gone)"] if lost_host else ["rows home"]
    head = ["round", "signal", "at (s)", "exit", *counts, "changes `clean` undid", "resume", "left"]
    return table(head, body)


def jobs_soak(doc: Mapping[str, Any]) -> Facts:
    rounds = _rounds(doc)
    kills = [round_ for round_ in rounds if str(round_["how"]).startswith("SIGKILL")]
    mid = [kill for kill in kills if kill["exit_code"] != 0]
    resumed = sum(
        1 for kill in kills if str(kill.get("resumed", "")).startswith("exit 0") and not kill.get("resume_problems")
    )
    group = sum(1 for kill in kills if kill["how"] == "SIGKILL group")
    return {
        "bench.soak_jobs3.command": f"sudo ./run.sh bench soak --jobs 3 --kills {len(kills)} --seed {doc['seed']}",
        "bench.soak_jobs3.commit": _commit(doc),
        "bench.soak_jobs3.survived": f"{doc['survived']} of {doc['of']} rounds",
        "bench.soak_jobs3.seconds": f"{float(doc['wall_seconds']):.0f} s",
        "bench.soak_jobs3.kills": (
            f"{len(kills)} SIGKILLs ({len(kills) - group} of the run's process, {group} of its group), "
            f"{_span([float(kill['after_s']) for kill in kills], ' s')} in"
        ),
        "bench.soak_jobs3.mid": (
            f"{len(mid)} of them while it ran ({min(int(kill['rows']) for kill in mid)} to "
            f"{max(int(kill['rows']) for kill in mid)} of its rows home)"
            if mid
            else "none of them while it ran"
        ),
        "bench.soak_jobs3.resumed": f"{resumed} of {len(kills)}",
        "bench.soak_jobs3.table": rounds_table(doc),
    }


def lose_host_soak(doc: Mapping[str, Any]) -> Facts:
    rounds = _rounds(doc)
    return {
        "bench.soak_lose_host.commit": _commit(doc),
        "bench.soak_lose_host.survived": f"{doc['survived']} of {doc['of']} runs",
        "bench.soak_lose_host.seconds": f"{float(doc['wall_seconds']):.0f} s",
        "bench.soak_lose_host.killed": f"{_span([float(round_['after_s']) for round_ in rounds], ' s')} in",
        "bench.soak_lose_host.handed": _whole_span([int(round_["handed"]) for round_ in rounds]),
        "bench.soak_lose_host.launched": _whole_span([int(round_["launched"]) for round_ in rounds]),
        "bench.soak_lose_host.trials": _whole_span([int(round_["rows"]) for round_ in rounds]),
        "bench.soak_lose_host.table": rounds_table(doc, lost_host=True),
    }


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def reproduce_run(doc: Mapping[str, Any], name: str = "reproduce") -> Facts:
    """`bench reproduce` (or, `name` "reference", the reference's run made in chunks and summed by
    `bench reproduce --summarize`): the run's numbers, each figure's line, and every claim whose outcome is
    not the one stored beside it."""
    claims = [c for c in doc.get("claims") or [] if isinstance(c, dict)]
    chunks = [c for c in doc.get("chunks") or [] if isinstance(c, dict)]
    schedule: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for k, chunk in enumerate(chunks or [{"figures": doc.get("schedule") or []}], 1):
        for f in chunk.get("figures") or []:
            if isinstance(f, dict):
                schedule.setdefault(str(f["figure"]), []).append((k, f))
    figures = []
    for f in doc.get("figures") or []:
        spans = []
        for k, when in schedule.get(str(f["figure"]), []):
            start, end = when.get("start_s"), when.get("end_s")
            if start is not None and end is not None:
                spans.append((f"chunk {k}: " if chunks else "") + f"{_clock(float(start))} to {_clock(float(end))}")
        labs = [str(when.get("labs", "")) for _, when in schedule.get(str(f["figure"]), [])]
        figures.append(
            [
                str(f["figure"]),
                str(f["trials"]),
                ", ".join(labs),
                "; ".join(spans),
                str(f["paths_verified"]),
                str(f["verdict"] or "-"),
                str(f["reference_verdict"] or "-"),
            ]
        )
    moved = [
        [
            str(c["figure"]),
            str(c["quote"])[:90],
            f"{c['outcome']}: {c['evidence']}",
            f"{c['reference'] or 'none'}: " f"{c['reference_evidence']}",
        ]  # fmt: skip
        for c in claims
        if not c.get("same")
    ]
    late_p99, late_max = doc.get("late_p99_ms_max"), doc.get("late_max_ms_max")
    cpu = doc.get("cpu_share")
    key = f"bench.{name}"
    return {
        f"{key}.command": f"sudo ./run.sh bench reproduce --studies {doc['studies']}",
        f"{key}.commit": _commit(doc),
        f"{key}.rows": ", ".join(doc.get("code_of_rows") or []),
        f"{key}.chunks": ", ".join(_clock(float(c["wall_s"])) for c in chunks),
        f"{key}.wall": f"{_clock(float(doc['wall_s']))} ({float(doc['wall_s']):.0f} s)",
        f"{key}.serial": _clock(float(doc["serial_estimate_s"])),
        f"{key}.packed": _clock(float(doc["packed_estimate_s"])),
        f"{key}.speedup": f"{float(doc['serial_estimate_s']) / float(doc['wall_s']):.1f}",
        f"{key}.labs": f"at most {doc['labs_max']}, {float(doc['labs_mean']):.1f} on average",
        f"{key}.cpu": f"{float(cpu):.0%} of its {doc['cores']} cores" if cpu is not None else "not recorded",
        f"{key}.trials": f"{doc['trials']} trials, {doc['trials_not_ok']} not ok",
        f"{key}.lateness": (
            f"p99 at most {float(late_p99):.3g} ms, max at most {float(late_max):.3g} ms, "
            f"{doc['attempts_late_over_bound']} attempt{'' if doc['attempts_late_over_bound'] == 1 else 's'} "
            "over their bound and run again"
            if late_p99 is not None and late_max is not None
            else "not recorded (netem)"
        ),
        f"{key}.verified": f"{doc['paths_verified']} of {doc['paths']}",
        f"{key}.same": f"{doc['claims_same']} of {len(claims)}",
        f"{key}.figures": table(
            ["figure", "trials", "labs", "ran (from the start)", "paths verified", "verdict", "reference's"], figures
        ),
        f"{key}.moved": table(["figure", "claim", "this run", "the reference (serial)"], moved)
        if moved
        else "Every claim's outcome is the reference's.",
    }


def runner_facts(doc: Mapping[str, Any]) -> Facts:
    """`bench runner`: iw/fig2 from scratch, its wall time against its downloads, and where the rest went."""
    phase = doc.get("per_trial_start_phase_ms")
    return {
        "bench.runner.trials": str(doc["trials"]),
        "bench.runner.wall": f"{doc['wall_seconds']:.1f} s",
        "bench.runner.downloads": f"{doc['sum_of_download_seconds']:.1f} s",
        "bench.runner.ratio": f"{doc['overhead_ratio']:.2f}",
        "bench.runner.fixed": f"{doc['fixed_seconds']:.1f} s",
        "bench.runner.per_trial": f"{doc['per_trial_overhead_ms']:.1f} ms",
        "bench.runner.phase": f"{phase:.1f} ms a trial" if phase is not None else "not recorded by this run",
        "bench.runner.commit": _commit(doc),
        "bench.runner.date": str(doc.get("time", ""))[:10],
    }


def bench_facts(stored: Stored) -> Facts:
    """The soaks' and `bench reproduce`'s facts, from results/bench beside the stored tree (results/reference);
    none for a benchmark not stored."""
    bench: Path = stored.tree.parent / "bench"
    out: Facts = {}
    for name, file in SOAKS.items():
        path = bench / file
        if path.is_file():
            doc = json.loads(path.read_text())
            out |= jobs_soak(doc) if name == "jobs3" else lose_host_soak(doc)
    if (bench / "runner.json").is_file():
        out |= runner_facts(json.loads((bench / "runner.json").read_text()))
    if (bench / "reproduce.json").is_file():
        out |= reproduce_run(json.loads((bench / "reproduce.json").read_text()))
    if (bench / "reference.json").is_file():
        out |= reproduce_run(json.loads((bench / "reference.json").read_text()), "reference")
    return out
