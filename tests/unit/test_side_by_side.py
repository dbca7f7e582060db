"""Labs side by side (--jobs): how trials are dealt to labs, how many labs a figure's cost admits, the
time the plan shows, what --jobs refuses, and how the delay line's lateness histogram is read."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import expts
from ground.errors import UserError
from ground.trials import Row
from ground.units import QuantityError
from netrepro.engine import local
from netrepro.engine.cluster import Engine
from netrepro.front.cli import main
from netrepro.runner import admission, session, shards
from netrepro.runner.plan import CLUSTER_SECONDS, LAB_SECONDS, Plan, makespan
from netrepro.runner.workloads import NoKeys
from netrepro.studykit.trial import Trial, build, build_all
from topologies.delayline import FINE_BUCKETS, Lateness, bucket_upper_us, percentile_us


def _todo(settings: int, trials: int) -> list[Trial]:
    grid = [{"rtt": f"{10 * (s + 1)}ms", "cc": f"cc{c}"} for s in range(settings) for c in range(trials)]
    return build_all(grid, 1, "cc", NoKeys)


@pytest.mark.parametrize(
    ("settings", "trials", "labs", "sizes"),
    [
        (1, 6, 3, [2, 2, 2]),  # linuxcc/fig6 --quick: one path, its trials split evenly
        (1, 6, 4, [2, 2, 1, 1]),
        (1, 6, 8, [1, 1, 1, 1, 1, 1]),  # never an empty task
        (3, 6, 2, [6, 6, 6]),  # as many settings as labs or more: one task a setting
        (3, 6, 4, [6, 6, 3, 3]),
        (2, 1, 4, [1, 1]),
    ],
)
def test_trials_are_dealt_to_labs_whole_settings_first(settings: int, trials: int, labs: int, sizes: list[int]) -> None:
    todo = _todo(settings, trials)
    tasks = shards.tasks(todo, labs)
    assert [len(t) for t in tasks] == sizes
    assert sorted(map(repr, (x for t in tasks for x in t))) == sorted(map(repr, todo))  # each trial once
    for task in tasks:  # a task is one lab: one path setting
        assert len({shards.setting(t.setting) for t in task}) == 1


def test_a_split_setting_keeps_the_runs_order() -> None:
    todo = _todo(1, 6)
    tasks = shards.tasks(todo, 3)
    assert [x for t in tasks for x in t] == todo


def test_makespan_deals_the_largest_task_first_to_the_free_lab() -> None:
    assert makespan([10, 10, 10], 3) == 10
    assert makespan([10, 10, 10], 2) == 20
    assert makespan([8, 5, 4, 3], 2) == 11  # 8 | 5, then 4 to the lab at 5, then 3 to the lab at 8
    assert makespan([1, 1], 1) == 2


def test_the_plan_with_jobs_is_the_makespan_of_its_labs() -> None:
    fig = expts.find("linuxcc/fig6")
    serial = Plan.of(fig, quick=True)
    assert serial.stored is not None and serial.stored.seconds_per_trial
    per = serial.stored.seconds_per_trial
    three = Plan.of(fig, quick=True, jobs=3)
    assert serial.seconds() == pytest.approx(6 * per + LAB_SECONDS)
    assert three.seconds() == pytest.approx(CLUSTER_SECONDS + 2 * per + LAB_SECONDS)
    assert len(three.phases()) == 1  # its ports at their defaults: one tuning, held for every lab
    assert any("--jobs 3: 3 labs side by side, 3 labs built in all" in line for line in three.describe())


def _rows(shares: list[float], status: str = "ok") -> list[Row]:
    return [Row(status=status, cpu_s=f"{s * 10:.3f}", trial_seconds="10") for s in shares]


def test_a_labs_cost_is_the_90th_percentile_of_its_trials_share_of_a_core() -> None:
    cost = admission.cost_of(_rows([0.01 * k for k in range(1, 11)]), "x.csv")
    assert cost is not None and cost.cores == pytest.approx(0.09) and cost.rows == 10
    assert admission.cost_of(_rows([0.5], status="failed"), "x.csv") is None  # a failed row measures nothing
    assert admission.cost_of([Row(status="ok", trial_seconds="3")], "x.csv") is None  # rows before cpu_s


def test_auto_admits_labs_under_the_budget_and_says_why() -> None:
    light = admission.Cost(0.05, 30, "x.csv")
    heavy = admission.Cost(0.9, 30, "x.csv")
    mid = admission.Cost(0.3, 30, "x.csv")
    assert admission.admit(light, trials=6, machine_cores=2).jobs == 6  # one lab per trial
    assert admission.admit(light, trials=100, machine_cores=2).jobs == admission.MAX_AUTO_JOBS
    assert admission.admit(mid, trials=100, machine_cores=2).jobs == 5  # 1.5 cores / 0.3
    saturated = admission.admit(heavy, trials=100, machine_cores=2)
    assert saturated.jobs == 1 and "saturate" in saturated.why and "0.90 of a core" in saturated.why
    unmeasured = admission.admit(None, trials=100, machine_cores=2)
    assert unmeasured.jobs == 1 and "cpu_s" in unmeasured.why
    assert admission.admit(light, trials=1, machine_cores=2).jobs == 1
    fast = admission.admit(light, trials=100, machine_cores=2, fast=True)  # a path of 50 Mbit/s or more
    assert fast.jobs == 1 and fast.why == admission.FAST_ALONE and "its own too" in fast.why


def test_the_cost_is_read_from_the_runs_own_rows_first(tmp_path: Path) -> None:
    fig = expts.find("iw/fig5a")
    (tmp_path / fig.directory).mkdir(parents=True)
    header = "trial_key,status,cpu_s,trial_seconds\n"
    (tmp_path / fig.directory / fig.csv_name).write_text(header + "k1,ok,1.0,2.0\nk2,ok,0.5,2.0\n")
    cost = admission.measured_cost(fig, tmp_path)
    assert cost is not None and cost.cores == pytest.approx(0.5) and cost.source.endswith(fig.csv_name)


@pytest.mark.parametrize("text", ["0", "-2", "33", "many", "2.5", ""])
def test_a_bad_jobs_value_is_refused_naming_it(text: str) -> None:
    with pytest.raises(QuantityError) as e:
        admission.parse_jobs(text)
    assert f"--jobs {text!r}" in str(e.value)


def test_jobs_parse() -> None:
    assert admission.parse_jobs("auto") is None and admission.parse_jobs("AUTO") is None
    assert admission.parse_jobs("3") == 3


@pytest.mark.parametrize(
    "where", [["--hosts", "root@vm1"], ["--scheduler", "tls://10.0.0.1:8786"]], ids=["hosts", "scheduler"]
)
def test_jobs_and_another_engine_are_refused_before_anything_runs(
    where: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "iw/fig2", "--quick", "--dry-run", "--jobs", "2", *where]) == 2
    err = capsys.readouterr().err
    assert f"--jobs 2 and {where[0]}" in err and "give one" in err
    with pytest.raises(UserError, match="give one"):
        Engine.parse(where[1] if where[0] == "--hosts" else None, where[1] if where[0] != "--hosts" else None, jobs=2)


def test_dry_run_with_jobs_says_the_labs_and_auto_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "linuxcc/fig6", "--quick", "--dry-run", "--jobs", "3"]) == 0
    out = capsys.readouterr().out
    assert "--jobs 3: 3 labs side by side" in out
    assert main(["run", "linuxcc/fig6", "--quick", "--dry-run", "--jobs", "auto"]) == 0
    out = capsys.readouterr().out
    assert "--jobs" in out and ("labs fit" in out or "cpu_s" in out)  # as its rows admit, and why
    # trials that tune a variant two ways (cubic_plus with and without RTT scaling): two phases
    assert main(["run", "cubicplus/fig7", "--quick", "--dry-run", "--jobs", "4"]) == 0
    assert "in 2 phases (its trials tune a netrepro variant 2 ways" in capsys.readouterr().out


def test_list_with_jobs_shows_the_times(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--jobs", "4"]) == 0
    out = capsys.readouterr().out
    assert "--jobs 4: the time with that many labs side by side" in out


def test_an_engine_for_jobs_describes_itself() -> None:
    engine = Engine.parse(None, None, jobs=3)
    assert engine is not None and engine.jobs == 3 and engine.describe() == "3 labs side by side on this machine"
    assert Engine.parse(None, None, jobs=1) is None  # one lab: the run's own, no cluster


def _late_bucket(late_us: int) -> int:
    """delayline.c's late_bucket, in microseconds (independently written from its comment)."""
    if late_us < FINE_BUCKETS:
        return late_us
    e = late_us.bit_length() - 1
    return 16 + (e - 4) * 8 + ((late_us >> (e - 3)) & 7)


@pytest.mark.parametrize("late_us", [0, 1, 15, 16, 17, 31, 32, 100, 999, 1000, 4095, 65_000, 2_000_000])
def test_a_lateness_bucket_holds_its_values(late_us: int) -> None:
    b = _late_bucket(late_us)
    assert late_us < bucket_upper_us(b)
    assert b == 0 or late_us >= bucket_upper_us(b - 1)
    assert bucket_upper_us(b) <= max(late_us * 1.125 + 1, late_us + 1)  # 1 us fine, then within 12.5 %


def test_lateness_percentiles_from_the_histograms_of_every_delay_line() -> None:
    # 98 packets at 3 us, then 2 at about 1 ms (bucket of 1000 us), over two delay lines
    one = {"count": 60, "max_ns": 3_500, "buckets": [[3, 60]]}
    two = {"count": 40, "max_ns": 1_003_000, "buckets": [[3, 38], [_late_bucket(1000), 2]]}
    late = Lateness.of([one, two])
    assert late.packets == 100 and late.median_ms == pytest.approx(0.004) and late.max_ms == pytest.approx(1.003)
    # the p99's bucket ends at 1.024 ms, past the latest packet: the percentile stops at the maximum
    assert bucket_upper_us(_late_bucket(1000)) / 1e3 > late.max_ms and late.p99_ms == late.max_ms
    two["max_ns"] = 1_100_000  # a later packet, in a bucket of its own: the p99 is its bucket's upper end
    two["buckets"] = [[3, 38], [_late_bucket(1000), 1], [_late_bucket(1100), 1]]
    assert Lateness.of([one, two]).p99_ms == pytest.approx(bucket_upper_us(_late_bucket(1000)) / 1e3)
    del two["max_ns"]  # no maximum to stop at: the bucket's upper end, never a lateness hidden under 0
    assert Lateness.of([one, two]).p99_ms == pytest.approx(bucket_upper_us(_late_bucket(1000)) / 1e3)
    assert percentile_us([], 0, 99) == 0.0
    assert Lateness.of([{"count": 0, "max_ns": 0, "buckets": []}]).columns()["late_p99_ms"] == 0.0


def _variant_trial(cc: str, index: int, **params: object) -> Trial:
    return build({"cc": cc, "rtt": "100ms", **params}, index, "cc", NoKeys)


def test_trials_run_in_phases_one_tuning_of_each_variant_at_a_time() -> None:
    todo = [
        _variant_trial("cubic_plus", 0, n=6),
        _variant_trial("cubic", 1),
        _variant_trial("cubic_plus", 2, n=1),
        _variant_trial("reno_beta", 3, r=500),
        _variant_trial("cubic_plus", 4, n=6),
        _variant_trial("reno_beta", 5, r=900),
    ]
    phases = session.tuning_phases(todo)
    assert [[t.index for t in phase] for phase in phases] == [[0, 1, 3, 4], [2, 5]]
    for phase in phases:  # each phase holds one tuning of each variant: hold_algorithms takes it
        tunings, differ = session.shared_tunings(phase)
        assert not differ and set(tunings) <= {"cubic_plus", "reno_beta"}
    _, differ = session.shared_tunings(todo)
    assert [d.split(" ")[0] for d in differ] == ["cubic_plus", "reno_beta"]
    assert session.tuning_phases([_variant_trial("cubic", 0), _variant_trial("vegas", 1)]) == [
        [_variant_trial("cubic", 0), _variant_trial("vegas", 1)]
    ]


CLUSTER_THEN_WAIT = """
import gc, logging, sys, time
import multiprocessing.synchronize as ms
import dask.config
from distributed import LocalCluster, Nanny
from netrepro.engine import local
dask.config.set({"temporary-directory": sys.argv[1]})
local.resource_tracker_apart()
cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, worker_class=Nanny, host="127.0.0.1",
                       dashboard_address=None, silence_logs=logging.ERROR, local_directory=sys.argv[1])
names = [o._semlock.name for o in gc.get_objects() if isinstance(o, ms.SemLock) and o._semlock.name]
print(" ".join(names), flush=True)
time.sleep(600)
"""


def test_a_killed_groups_semaphores_are_removed_by_its_resource_tracker_apart(tmp_path: Path) -> None:
    """A --jobs run's nannies make named semaphores in /dev/shm that only multiprocessing's resource tracker
    removes; SIGKILLed with the run's group, it left them (18 for three labs, the soak at 7f97e2d).  Started
    in a session of its own, it outlives the kill and removes them."""
    # Dask's scratch in the test's own folder: by default /tmp/dask-scratch-space, which a kill leaves
    run = subprocess.Popen([sys.executable, "-c", CLUSTER_THEN_WAIT, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                           start_new_session=True, cwd=Path(local.__file__).parents[2])  # fmt: skip
    try:
        line = run.stdout.readline() if run.stdout else ""
        made = [Path("/dev/shm") / f"sem.{n.lstrip('/')}" for n in line.split()]
        assert made and all(p.exists() for p in made), line
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    deadline = time.monotonic() + 20
    while any(p.exists() for p in made) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in made if p.exists()]
