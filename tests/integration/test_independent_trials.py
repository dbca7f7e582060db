"""The trials of one cell are independent samples, not replays, and each is reproducible.

Each trial draws (ground.trials.trial_draw, from its key and the run's seed) the seed its emulated
loss and jitter restart from and the phase of a round trip at which its workload starts; the row
records the draw.  Here: the lab restarts its loss and jitter draws from a seed (Lab.reseed); the
trials of one cell of iw/fig2 under the study's variation (netrepro.studykit.variation: +-1 ms of
jitter) differ by far more than the delay line's timer noise, and each, run again, comes back to its
own values; two trials of a cell of newcwv/fig8 drew differently, each what its key and seed give.
"""

import json
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import pytest

from ground.ledger import Ledger
from ground.path import PathSpec
from ground.proc import run
from ground.results import REPO
from ground.trials import Row, latest_rows, read_rows, trial_draw
from ground.units import parse_duration
from topologies.lab import Lab

pytestmark = pytest.mark.root

PINGS = 40


def pings(lab: Lab) -> dict[int, float]:
    """Echo requests 50 ms apart (far more than the jitter: no draw waits for another): the RTT of
    each one answered, by sequence number."""
    out = run(["ping", "-n", "-c", str(PINGS), "-i", "0.05", "-W", "1", lab.ip("server")], lab.client,
              check=False, timeout=30).stdout  # fmt: skip
    return {int(seq): float(ms) for seq, ms in re.findall(r"icmp_seq=(\d+) .*?time=([0-9.]+) ms", out)}


def test_reseeding_restarts_the_loss_and_jitter_draws(summary_lines: list[str]) -> None:
    """The same seed drops the same replies and delays each packet by the same draw; another seed
    drops others.  Only the pings cross the lab, so each queue sees the same packets in each round."""
    path = PathSpec.parse(rtt="20ms", rate="20mbit", loss="30%", jitter="3ms")
    with Ledger() as ledger, Lab(path, ledger, shaper="delayline", seed=1) as lab:
        rounds = []
        for seed in (211163472745246, 211163472745246, 5):
            lab.reseed(seed)
            rounds.append(pings(lab))
        assert lab.seed == 5
    first, again, other = rounds
    assert 0 < len(first) < PINGS, first  # some replies were lost, not all
    assert set(again) == set(first)  # the same replies lost
    assert set(other) != set(first)  # another seed, other losses
    both = set(first) & set(again)
    # each answered echo drew the same delay (+-3 ms on each way): what is left is the lab's timing noise
    same = statistics.median(abs(first[s] - again[s]) for s in both)
    differ = statistics.median(abs(first[s] - other[s]) for s in set(first) & set(other))
    summary_lines.append(f"reseed: {PINGS - len(first)}, {PINGS - len(again)}, {PINGS - len(other)} of {PINGS} "
                         f"replies lost (seeds a, a, b); RTT differences per echo, median: {same:.3f} ms between "
                         f"the rounds of one seed, {differ:.3f} ms between seeds")  # fmt: skip
    assert same < 0.5 and differ > 1.0, (same, differ)


def run_derived(figure: str, out: Path, *options: str, trials: int = 2) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "netrepro", figure, "--quick", "--trials", str(trials), "--out", str(out), *options],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def cells(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """The rows by cell: the trial key less its trial index."""
    by: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by[json.dumps(json.loads(r["trial_key"])["params"], sort_keys=True)].append(r)
    return by


def check_draws(rows: Sequence[Row], seed: int, count: int, trials: int = 2) -> dict[str, list[Row]]:
    assert len(rows) == count and {r["status"] for r in rows} == {"ok"}, [r["error"] for r in rows]
    for r in rows:
        assert int(r["seed"]) == seed
        draw = trial_draw(r["trial_key"], seed)  # what a re-run of the trial draws again
        assert (int(r["draw_seed"]), int(r["loss_seed"])) == (draw.draw_seed, draw.loss_seed), r["trial_key"]
        rtt = parse_duration(r["rtt"]).seconds
        assert float(r["start_offset_ms"]) == pytest.approx(draw.start_offset_s(rtt) * 1e3, abs=1e-3)
        assert 0 <= float(r["start_offset_ms"]) < rtt * 1e3
        assert r["switch"] in ("bridge", "ovs") and r["cc_impl"] and r["loss_seeded"] == "true"
    by = cells(rows)
    for cell in by.values():
        assert sorted(int(r["trial"]) for r in cell) == list(range(trials))
        for column in ("draw_seed", "loss_seed", "start_offset_ms"):
            assert len({r[column] for r in cell}) == trials, (column, cell[0]["trial_key"])
    return by


def check_manifest(out: Path, directory: str, name: str, rows: Sequence[Row]) -> None:
    manifest = json.loads((out / directory / f"{name}.manifest.json").read_text())
    assert manifest["switches_of_rows"] == sorted({r["switch"] for r in rows})
    assert manifest["cc_impls_of_rows"] == sorted({r["cc_impl"] for r in rows})
    assert manifest["kernels_of_rows"] == sorted({r["kernel"] for r in rows})
    drawn = manifest["drawn_by"]
    assert (drawn["host"], drawn["kernel"]) == (manifest["host"], manifest["kernel"]) and drawn["commit"]
    assert manifest["hosts_of_rows"] == [drawn["host"]] and manifest["code_of_rows"]  # ran and drawn here


def test_the_trials_of_a_cell_vary_and_each_re_runs_to_its_own_values(tmp_path: Path, summary_lines: list[str]) -> None:
    """iw/fig2 at IW 3 under iw's variation, six trials, run twice (seed 1), and newcwv/fig8 at 80 KB (its
    quick idle periods, 1 and 5 s), two trials each (seed 2).  Each iw trial's jitter draws restart from its
    own seed, one per packet in order, so a re-run comes back to the trial's values up to what reorders the
    draws (a delayed ACK sent or not); the trials differ by the draws themselves."""
    runs = []
    for name in ("first", "again"):
        run_derived("iw/fig2", tmp_path / name, "--vary", "initcwnd=3", "--set", "variation=study", trials=6)
        rows = latest_rows(read_rows(tmp_path / name / "iw" / "fig2@variation=study+initcwnd=3" / "fig2.csv"))
        check_draws(rows, 1, 6, trials=6)
        assert {(r["variation"], r["jitter"]) for r in rows} == {("study", "1ms")}  # recorded in every row
        runs.append({int(r["trial"]): float(r["download_time_ms"]) for r in rows})
    check_manifest(tmp_path / "again", "iw/fig2@variation=study+initcwnd=3", "fig2", rows)
    first, again = runs
    timer_noise = max(float(r["late_p99_ms"]) for r in rows)  # the delay line's releases, 99th percentile
    spread = statistics.stdev(first.values())
    between = statistics.median(abs(first[i] - first[j]) for i in first for j in first if i < j)
    re_run = statistics.median(abs(again[i] - first[i]) for i in first)
    summary_lines.append(
        f"iw/fig2 IW 3 under +-1 ms jitter, six trials: {', '.join(f'{first[i]:.2f}' for i in sorted(first))} ms "
        f"(SD {spread:.2f} ms; delay-line timer noise, p99: {timer_noise:.3f} ms); run again: "
        f"{', '.join(f'{again[i]:.2f}' for i in sorted(again))} ms; median |difference| {between:.2f} ms between "
        f"trials, {re_run:.2f} ms between a trial and its re-run"
    )
    # Measured (2026-12-06, 16 trials at IW 3 and 10): SD 1.3-2.3 ms against 0.07-0.15 ms of timer noise;
    # between trials a median |difference| near 1.5 ms, against 0.16 ms (at most 0.87) from a trial's re-run.
    assert spread > 4 * timer_noise, (spread, timer_noise)
    assert re_run < between / 3, (re_run, between)

    run_derived("newcwv/fig8", tmp_path, "--vary", "burst_kb=80", "--seed", "2")
    rows = latest_rows(read_rows(tmp_path / "newcwv" / "fig8@burst_kb=80" / "fig8.csv"))
    newcwv = check_draws(rows, 2, 3 * 2)  # three arms, two trials each
    check_manifest(tmp_path, "newcwv/fig8@burst_kb=80", "fig8", rows)
    for trials in newcwv.values():
        shown = ", ".join(f"{r['burst_ms']} ms (offset {r['start_offset_ms']} ms)" for r in trials)
        summary_lines.append(f"newcwv/fig8 80 KB {trials[0]['series']}, two trials' bursts: {shown}")
