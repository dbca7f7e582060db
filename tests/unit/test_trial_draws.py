"""Each trial's own draw (ground.trials.trial_draw): a hash of its key and the run's seed, so that the
trials of one setting are independent samples, not replays, and a re-run reproduces each of them.
The draw's seed reaches the emulated loss and jitter (Lab.reseed, through the stages), and the rows
and the manifest say what ran where."""

import os
from pathlib import Path
from typing import Any, ClassVar

import pytest

import expts
from ground import kernel, results
from ground.path import PathSpec
from ground.trials import (
    LOSS_SEED_LIMIT,
    START_OFFSET_FLOOR_S,
    Row,
    TrialDraw,
    TrialLog,
    read_rows,
    trial_draw,
    trial_key,
)
from ground.units import Duration, Probability
from netrepro.runner import sweep
from netrepro.runner.manifest import figure_manifest
from netrepro.runner.sweep import Options
from netrepro.runner.workloads import WORKLOADS, NoKeys, Workload
from netrepro.studykit.spec import Figure
from netrepro.studykit.trial import Trial, build_all, trial_path
from topologies import shaping
from topologies.delayline import set_command
from topologies.emulation import DelayLineStage, NetemStage, Stage

SETTING = {"initcwnd": 10, "rtt": "100ms", "rate": "3mbit", "series": ""}
U64 = 2**64


def test_the_same_trial_and_seed_draw_the_same() -> None:
    key = trial_key(SETTING, 3)
    assert trial_draw(key, 1) == trial_draw(key, 1)
    assert trial_draw(trial_key(dict(SETTING), 3), 1) == trial_draw(key, 1)  # the key, not the dict's identity


def test_the_derivation_is_pinned() -> None:
    """A row's draw is recomputed from its key and seed: changing how it is derived would make the
    rows already written unreproducible, so the derivation is pinned."""
    key = trial_key({"initcwnd": 10, "rtt": "100ms"}, 0)
    assert trial_draw(key, 1) == TrialDraw(
        draw_seed=6135908757718333664, loss_seed=211163472745246, phase=0.5863578581050187
    )


def test_another_trial_setting_or_seed_draws_another() -> None:
    first = trial_draw(trial_key(SETTING, 0), 1)
    others = [
        trial_draw(trial_key(SETTING, 1), 1),  # the next trial of the cell
        trial_draw(trial_key(SETTING, 0), 2),  # the same trial in a run of another seed
        trial_draw(trial_key({**SETTING, "initcwnd": 26}, 0), 1),  # another cell
    ]
    for other in others:
        assert other.draw_seed != first.draw_seed
        assert other.loss_seed != first.loss_seed
        assert other.phase != first.phase
    draws = [trial_draw(trial_key(SETTING, i), 1) for i in range(200)]
    assert len({d.draw_seed for d in draws}) == len({d.loss_seed for d in draws}) == 200


def test_the_start_offset_spans_a_round_trip_and_no_more() -> None:
    rtt = trial_path(SETTING).rtt.seconds
    assert rtt == pytest.approx(0.1)
    draws = [trial_draw(trial_key(SETTING, i), seed) for i in range(100) for seed in (1, 7)]
    phases = [d.phase for d in draws]
    assert max(phases) > 0.9 and min(phases) < 0.1, (min(phases), max(phases))
    assert all(0 <= p < 1 for p in phases)
    offsets = [d.start_offset_s(rtt) for d in draws]
    assert all(0 <= o < rtt for o in offsets)
    assert max(offsets) > 0.9 * rtt and min(offsets) < 0.1 * rtt
    # a path of a shorter RTT than the floor (or none) still starts at a phase of the floor
    assert all(0 <= d.start_offset_s(0.0) < START_OFFSET_FLOOR_S for d in draws)
    assert max(d.start_offset_s(0.0) for d in draws) > 0.9 * START_OFFSET_FLOOR_S
    # the longest RTT a path takes (10 s): the offset stays under it
    assert all(d.start_offset_s(10.0) < 10.0 for d in draws)


def test_the_seeds_are_what_the_delay_line_and_netem_take() -> None:
    """Both take an unsigned 64-bit decimal seed; the lab adds each stage's place (a few) to loss_seed."""
    draws = [trial_draw(trial_key(SETTING, i), seed) for i in range(200) for seed in (0, 1, 2**40)]
    assert all(0 <= d.draw_seed < 2**63 for d in draws)  # a signed 64-bit integer holds it
    assert max(d.draw_seed for d in draws) > 2**62  # and it uses its 63 bits
    assert all(0 <= d.loss_seed < LOSS_SEED_LIMIT for d in draws)
    assert LOSS_SEED_LIMIT + 1000 < U64 and LOSS_SEED_LIMIT <= 2**53  # room for the stages, exact in a float
    seed = max(d.loss_seed for d in draws) + 7  # the eighth stage's
    assert set_command(0, Duration(0.05), Probability(0.01), seed).endswith(f" seed={seed}")
    argv = shaping.netem_qdisc("ifb0", Duration(0.05), Probability(0.01), seed)
    assert argv[argv.index("seed") + 1] == str(seed) and int(argv[-1]) < U64


class FakeLine:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def set(self, queue: int, delay: Duration, loss: Probability, seed: int, jitter: Duration = Duration(0)) -> None:
        self.sent.append(set_command(queue, delay, loss, seed, jitter))


def test_a_reseeded_stage_restarts_from_the_new_seed() -> None:
    """The delay line's `seed=` restarts a queue's loss and jitter PRNGs: a stage reseeded sends its
    next set() with the new seed, the same delay, loss and jitter; the other direction keeps its own."""
    stages = [Stage("server>s1", "s1-eth2", 0, "ifb0", seed=1), Stage("client>s1", "s1-eth1", 1, "ifb1", seed=2)]
    stage = DelayLineStage(None, stages, None)  # type: ignore[arg-type]
    line = FakeLine()
    stage.line = line  # type: ignore[assignment]
    stage.set("server>s1", Duration(0.05), Probability(0.02), Duration(0.005))
    stage.reseed("server>s1", 211163472745246)
    stage.set("server>s1", Duration(0.05), Probability(0.02), Duration(0.005))
    stage.set("client>s1", Duration(0.05), Probability(0))
    assert line.sent == [
        "set 0 delay_us=50000 jitter_us=5000 loss=0.020000000 seed=1",
        "set 0 delay_us=50000 jitter_us=5000 loss=0.020000000 seed=211163472745246",
        "set 1 delay_us=50000 jitter_us=0 loss=0.000000000 seed=2",
    ]
    assert stage.stages["server>s1"].queue_num == 0 and stage.stages["server>s1"].ingress_port == "s1-eth2"


def test_a_reseeded_netem_stage_changes_its_qdisc_with_the_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr("topologies.emulation.run", lambda argv, ns: ran.append(argv))
    for seeded in (True, False):
        monkeypatch.setattr("ground.kernel.netem_seed_works", lambda seeded=seeded: seeded)
        stage = NetemStage(None, [Stage("server>s1", "s1-eth2", 0, "ifb0", seed=1)])  # type: ignore[arg-type]
        stage.reseed("server>s1", 99)
        stage.set("server>s1", Duration(0.05), Probability(0.02))
    assert ran[0] == shaping.netem_qdisc("ifb0", Duration(0.05), Probability(0.02), 99)
    assert ran[1] == shaping.netem_qdisc("ifb0", Duration(0.05), Probability(0.02), None)  # no seed to give


def test_the_manifest_tells_the_machine_of_the_rows_from_the_one_that_drew_them() -> None:
    fig = expts.find("iw/fig2")
    grid = fig.grid(quick=True)
    new = Row(code="0ebe09c1a2b3", host="vm1", kernel="6.18.44", backend="delayline", switch="bridge", cc="cubic",
              cc_impl="kernel", status="ok", trial_seconds="1.5", draw_seed="5", loss_seed="6",
              start_offset_ms="12.5")  # fmt: skip
    old = Row(code="10854c6", backend="delayline", cc="cubic", status="ok", trial_seconds="2")
    doc = figure_manifest(fig, Options(quick=True), grid, 2, 0, [new, old], {}, [], [])
    assert doc["code_of_rows"] == ["0ebe09c1a2b3", "10854c6"]
    assert doc["hosts_of_rows"] == ["unrecorded", "vm1"] and doc["kernels_of_rows"] == ["6.18.44", "unrecorded"]
    assert doc["switches_of_rows"] == ["bridge", "unrecorded"]
    assert doc["cc_impls_of_rows"] == ["kernel", "unrecorded"]
    drawn = doc["drawn_by"]
    assert set(drawn) == {"host", "kernel", "commit"}
    assert (drawn["host"], drawn["kernel"]) == (doc["host"], doc["kernel"])  # the provenance is the drawer's
    commit = doc["git"]["commit"]
    assert drawn["commit"] == (commit[:12] + ("+dirty" if doc["git"]["dirty"] else "") if commit else "unknown")
    assert doc["cpu"] == kernel.cpu() and doc["cpu"]["cpus"] >= 1  # the processor of the run that drew it


def test_the_cpu_is_named_as_cpuinfo_names_it(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\n"
        "processor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
    )
    assert kernel.cpu(info) == {"model": "AMD EPYC 7B13", "cpus": len(os.sched_getaffinity(0))}
    info.write_text("processor\t: 0\nBogoMIPS\t: 50.00\nmodel name\t:\n")  # an arm64 cpuinfo names no model
    assert kernel.cpu(info)["model"] == "unknown"
    assert kernel.cpu(tmp_path / "missing")["model"] == "unknown"


def test_rows_read_back_reproduce_their_draw(tmp_path: Path) -> None:
    """What a reader of the CSV does: the draw columns are strings; recomputed from the row's key and
    seed they match; a row written before them has none, and is read all the same."""
    log = TrialLog(tmp_path / "fig.csv")
    log.append({"trial_key": "k0", "seed": 1, "status": "ok"})  # a row of before
    d = trial_draw("k1", 1)
    path = PathSpec.parse(rtt="100ms")
    log.append({"trial_key": "k1", "seed": 1, "status": "ok", "draw_seed": d.draw_seed, "loss_seed": d.loss_seed,
                "start_offset_ms": round(d.start_offset_s(path.rtt.seconds) * 1e3, 3)})  # fmt: skip
    before, after = read_rows(tmp_path / "fig.csv")
    assert before["draw_seed"] == before["loss_seed"] == before["start_offset_ms"] == ""
    again = trial_draw(after["trial_key"], int(after["seed"]))
    assert (int(after["draw_seed"]), int(after["loss_seed"])) == (again.draw_seed, again.loss_seed)
    assert float(after["start_offset_ms"]) == pytest.approx(again.start_offset_s(0.1) * 1e3, abs=1e-3)


def _run_on_stand_ins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, repairs_in: dict[int, int] | None = None
) -> tuple[list[tuple[str, Any]], list[Trial]]:
    """Two trials of a stand-in figure run on a lab, ledger and session of stand-ins: the events seen and
    the trials.  `repairs_in`: the ssthresh repairs the BPF program counts during the Nth workload."""
    events: list[tuple[str, Any]] = []
    repairs = [0]
    workloads_run = [0]

    class Lab:
        backend, switch_kind, loss_repeatable = "delayline", "bridge", True

        def __init__(self, path: Any, *args: Any, **kwargs: Any) -> None:
            self.path = path

        def reseed(self, seed: int) -> None:
            events.append(("reseed", seed))

        def lateness(self) -> None:
            return None

        def __enter__(self) -> "Lab":
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    class Ledger:
        cgroup = None

        def __enter__(self) -> "Ledger":
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def temp_dir(self, prefix: str) -> Path:
            return tmp_path

    class Session:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.trial_key = ""

        def congestion_control(self, params: Any) -> dict[str, Any]:
            return {"cc_impl": "kernel"}

        def apply_hosts(self, params: Any) -> None:
            pass

        def ss_repairs(self, params: Any) -> int | None:
            return None if repairs_in is None else repairs[0]

        def stop(self) -> None:
            pass

    class Verification:
        ok = True
        checks: ClassVar[list[Any]] = []

        def as_dict(self) -> dict[str, Any]:
            return {"ok": True, "checks": []}

    def workload(session: Any, trial: Trial, keys: NoKeys) -> dict[str, Any]:
        events.append(("workload", trial.key))
        repairs[0] += (repairs_in or {}).get(workloads_run[0], 0)
        workloads_run[0] += 1
        return {"metric": 1.0}

    monkeypatch.setattr(sweep, "Ledger", Ledger)
    monkeypatch.setattr(sweep, "Lab", Lab)
    monkeypatch.setattr(sweep, "Session", Session)

    def verify(lab: Any) -> Verification:
        events.append(("verify", None))
        return Verification()

    monkeypatch.setattr(sweep, "verify", verify)
    monkeypatch.setattr("time.sleep", lambda s: events.append(("sleep", s)))
    monkeypatch.setattr(results, "code_version", lambda: "test")
    monkeypatch.setitem(WORKLOADS, "stand_in", Workload("stand_in", workload, NoKeys, ("metric",), ()))
    fig = Figure("t", "fig", "a test", "stand_in", "level", (0,), "metric", {"rtt": "200ms"})
    todo = build_all(fig.grid(), 2, fig.x, NoKeys)
    sweep.run_trials(fig, todo, sweep.Options(out=tmp_path, seed=9), TrialLog(tmp_path / "fig.csv"))
    return events, todo


def test_run_trials_reseeds_and_offsets_each_trial(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """On a lab of stand-ins: a path is verified from the run's seed, then each trial restarts the
    emulation from its own loss_seed and sleeps its offset before its workload, and its row says so."""
    events, todo = _run_on_stand_ins(monkeypatch, tmp_path)
    rows = read_rows(tmp_path / "fig.csv")
    draws = [trial_draw(t.key, 9) for t in todo]
    assert events == [
        ("reseed", 9), ("verify", None),
        ("reseed", draws[0].loss_seed), ("sleep", draws[0].start_offset_s(0.2)), ("workload", todo[0].key),
        ("reseed", draws[1].loss_seed), ("sleep", draws[1].start_offset_s(0.2)), ("workload", todo[1].key),
    ]  # fmt: skip
    for row, draw in zip(rows, draws, strict=True):
        assert (row["seed"], row["draw_seed"], row["loss_seed"]) == ("9", str(draw.draw_seed), str(draw.loss_seed))
        assert row["start_offset_ms"] == str(round(draw.start_offset_s(0.2) * 1e3, 3))
        assert (row["switch"], row["cc_impl"], row["status"]) == ("bridge", "kernel", "ok")


def test_a_trial_whose_ssthresh_was_repaired_is_failed_and_run_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """kmod/README.md's ssthresh corruption: a trial during which the BPF guard repaired ssthresh is not
    kept; it runs again at once, with the same draw, until an attempt is clean (eight repaired attempts at
    most: tests/unit/test_errors.py)."""
    events, todo = _run_on_stand_ins(monkeypatch, tmp_path, repairs_in={0: 1, 2: 2, 3: 1, 4: 1})
    rows = read_rows(tmp_path / "fig.csv")
    keys = [t.key for t in todo]
    assert [e[1] for e in events if e[0] == "workload"] == [keys[0], keys[0], keys[1], keys[1], keys[1], keys[1]]
    assert [(r["trial_key"], r["status"], r["cc_ss_repairs_in_trial"]) for r in rows] == [
        (keys[0], "failed", "1"), (keys[0], "ok", "0"),
        (keys[1], "failed", "2"), (keys[1], "failed", "1"), (keys[1], "failed", "1"), (keys[1], "ok", "0"),
    ]  # fmt: skip
    assert "repaired a corrupted ssthresh 2 time(s)" in rows[2]["error"]
    assert rows[0]["loss_seed"] == rows[1]["loss_seed"]  # the same draw again
