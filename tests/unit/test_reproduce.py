"""`run.sh reproduce STUDY|all`: a study's declared figures in one command, side by side, without a lab (the
figures' runs and the machine's probes replaced); the real run is the benchmark's (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

import expts
from expts import iw as iw_study
from ground.errors import SetupError, UserError
from netrepro.front import cli, figure_commands, reproduce, side_by_side
from netrepro.runner import admission, derive, estimate, packing, preflight, shards
from netrepro.studykit.spec import Figure


def parsed(*argv: str) -> argparse.Namespace:
    return cli.build_parser().parse_args(["reproduce", *argv])


def test_a_study_is_its_declared_figures_and_kept_ones_and_all_is_every_study() -> None:
    iw = reproduce.figures_of("iw")
    assert [f.full_name for f in iw] == [f.full_name for f in iw_study.FIGURES]
    every = [f.full_name for f in reproduce.figures_of("all")]
    assert sorted(every) == sorted(f.full_name for f in [*expts.all_figures(), *expts.kept_figures()])
    # each kept derived figure right after its declared one (a figure that plots another's rows last)
    assert every.index("newcwv/pacing@idle_s=5") == every.index("newcwv/pacing") + 1
    assert not any(f.endswith("@variation=none") for f in every)  # rows kept from before trials varied
    with pytest.raises(
        UserError, match=r"reproduce iww: no such study 'iww'; the studies are iw, cubicplus, .*, or all"
    ):
        reproduce.figures_of("iww")
    both = reproduce.figures_of("iw,spdy")
    assert [f.study for f in both] == ["iw"] * len(iw) + ["spdy"] * (len(both) - len(iw))
    with pytest.raises(UserError, match=r"reproduce iw,iw: a study named twice; the studies are"):
        reproduce.figures_of("iw,iw")
    with pytest.raises(UserError, match=r"reproduce iw,webb: no such study 'webb';"):
        reproduce.figures_of("iw,webb")


def test_a_figure_that_plots_anothers_rows_comes_after_it() -> None:
    for what in ("cubicplus", "all"):
        order = [f.full_name for f in reproduce.figures_of(what)]
        for fig in reproduce.figures_of(what):
            if fig.trials_of:
                owner = f"{fig.study}/{fig.trials_of}"
                assert order.index(owner) < order.index(fig.full_name), (owner, fig.full_name)


def test_reproduce_takes_runs_options() -> None:
    args = parsed("iw", "--quick", "--jobs", "2", "--out", "/tmp/x", "--seed", "3")
    assert (args.study, args.quick, args.jobs, args.out, args.seed) == ("iw", True, "2", Path("/tmp/x"), 3)
    assert cli.needs_root(args) and not cli.needs_root(parsed("iw", "--dry-run"))


def _no_machine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, lacking: frozenset[str] = frozenset(), seconds: float = 0.0
) -> Path:
    """Each figure's run replaced: its child writes `start <figure> <time>` and `end ...` lines to the file
    returned (each figure a child process: nothing it does in memory comes back) and takes `seconds`; the
    machine's probe refuses the figures `lacking`."""
    record = tmp_path / "ran.txt"

    def check_machine(needs: preflight.Needs) -> None:
        if needs.what.removeprefix("run ") in lacking:
            raise SetupError(f"{needs.what}: pacer=fq needs the fq qdisc (sch_fq), which this kernel does not have")

    def cmd_run(args: argparse.Namespace) -> int:
        with record.open("a") as f:
            f.write(f"start {args.figure} {time.monotonic()} {args.jobs} {args.quick} {args.seed} {args.out}\n")
        time.sleep(seconds)
        with record.open("a") as f:
            f.write(f"end {args.figure} {time.monotonic()}\n")
        return 3 if args.figure == "iw/fig5a" else 0

    monkeypatch.setattr(preflight, "check_machine", check_machine)
    monkeypatch.setattr(figure_commands, "cmd_run", cmd_run)
    monkeypatch.setattr(side_by_side, "POLL_S", 0.05)
    monkeypatch.setattr("netrepro.front.report.write", lambda tree, out: (out, []))
    return record


def ran(record: Path) -> list[str]:
    """The figures whose runs started, in the order they started."""
    lines = record.read_text().splitlines() if record.exists() else []
    return [line.split()[1] for line in lines if line.startswith("start ")]


def spans(record: Path) -> dict[str, tuple[float, float]]:
    """Each figure's run: from its start to its end (monotonic seconds)."""
    begun: dict[str, float] = {}
    found = {}
    for line in record.read_text().splitlines():
        what, fig, at = line.split()[:3]
        if what == "start":
            begun[fig] = float(at)
        else:
            found[fig] = (begun[fig], float(at))
    return found


def test_every_figure_runs_and_the_exit_status_counts_the_one_not_ok(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    record = _no_machine(monkeypatch, tmp_path)
    with caplog.at_level(logging.INFO, logger="netrepro.reproduce"):
        status = reproduce.cmd_reproduce(parsed("iw", "--quick", "--out", str(tmp_path)))
    assert sorted(ran(record)) == sorted(f.full_name for f in reproduce.figures_of("iw"))
    assert status == figure_commands.TRIALS_NOT_OK  # iw/fig5a's run had a trial not ok
    said = capsys.readouterr().out
    assert "iw/fig5a             trials not ok" in said and "iw/fig2              ok" in said
    assert re.search(r"iw/fig5a: trials not ok in 0:00:0\d on \d labs?; see \S+iw-fig5a-\S+\.log", caplog.text)
    assert "iw/fig2: started, " in caplog.text and "what it prints goes to" in caplog.text
    logs = list((tmp_path / "reproduce" / "iw" / "logs").iterdir())
    assert len(logs) == 4 and all(p.name.startswith("iw-fig") for p in logs)
    schedule = json.loads((tmp_path / "reproduce" / "iw" / "schedule.json").read_text())
    assert {f["figure"]: f["status"] for f in schedule["figures"]}["iw/fig5a"] == "trials not ok"
    assert all(0 <= f["start_s"] <= f["end_s"] <= schedule["wall_s"] and f["labs"] >= 1 for f in schedule["figures"])


def test_a_figure_this_machine_cannot_run_is_skipped_saying_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = _no_machine(monkeypatch, tmp_path, lacking=frozenset({"iw/fig2"}))
    status = reproduce.cmd_reproduce(parsed("iw", "--quick", "--out", str(tmp_path)))
    assert "iw/fig2" not in ran(record) and len(ran(record)) == 3 and status == figure_commands.TRIALS_NOT_OK
    captured = capsys.readouterr()
    assert "iw/fig2: skipped: run iw/fig2: pacer=fq needs the fq qdisc" in captured.out
    assert "`sudo ./run.sh --vm reproduce iw` runs them in the stock-kernel lane" in captured.err


def test_cheap_figures_run_side_by_side_and_unmeasured_ones_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Figures whose labs cost little of a core run at once; a figure never measured runs with nothing beside."""
    record = _no_machine(monkeypatch, tmp_path, seconds=0.4)
    monkeypatch.setattr(admission, "cores", lambda: 2)
    monkeypatch.setattr(admission, "measured_cost", lambda fig, out=None: admission.Cost(0.05, 10, "test"))
    assert reproduce.cmd_reproduce(parsed("iw", "--quick", "--out", str(tmp_path))) == figure_commands.TRIALS_NOT_OK
    cheap = spans(record)
    assert len(cheap) == 4 and not one_after_another(cheap)  # side by side, at most 8 labs in all
    schedule = json.loads((tmp_path / "reproduce" / "iw" / "schedule.json").read_text())
    moments = {f["start_s"] for f in schedule["figures"]}
    assert max(sum(f["labs"] for f in schedule["figures"] if f["start_s"] <= t < f["end_s"]) for t in moments) <= 8
    record.unlink()
    monkeypatch.setattr(admission, "measured_cost", lambda fig, out=None: None)
    reproduce.cmd_reproduce(parsed("iw", "--quick", "--out", str(tmp_path / "alone")))
    assert one_after_another(spans(record))


def one_after_another(found: dict[str, tuple[float, float]]) -> bool:
    ordered = sorted(found.values())
    return all(ordered[k][1] <= ordered[k + 1][0] for k in range(len(ordered) - 1))


def test_figures_on_a_fast_path_or_holding_one_variant_never_run_beside_another(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """spdy's figures load cubic_plus and run 100 Mbit/s paths: however cheap their labs, one at a time, each
    with one lab of its own, and no iw figure beside one of them; iw's own figures (3 Mbit/s, the kernel's
    CUBIC) side by side."""
    record = _no_machine(monkeypatch, tmp_path, seconds=0.3)
    monkeypatch.setattr(admission, "measured_cost", lambda fig, out=None: admission.Cost(0.01, 10, "test"))
    reproduce.cmd_reproduce(parsed("iw,spdy", "--quick", "--out", str(tmp_path)))
    found = spans(record)
    spdy = {k: v for k, v in found.items() if k.startswith("spdy/")}
    iw = {k: v for k, v in found.items() if k.startswith("iw/")}
    assert len(spdy) == 3 and len(iw) == 4
    for name, (start, end) in spdy.items():  # nothing else runs while a spdy figure does
        beside = [k for k, (s, e) in found.items() if k != name and s < end and start < e]
        assert beside == [], (name, beside)
    assert not one_after_another(iw)
    lines = [s for s in map(str.split, record.read_text().splitlines()) if s[0] == "start"]
    labs = {s[1]: 1 if s[3] == "None" else int(s[3]) for s in lines}  # one lab: no --jobs
    assert {labs[name] for name in spdy} == {1} and max(labs[name] for name in iw) > 1, labs
    assert admission.exclusive(reproduce.figures_of("spdy")[0], True) == admission.Exclusive(
        frozenset({"cubic_plus"}), fast=True
    )
    assert admission.exclusive(reproduce.figures_of("iw")[0], True) == admission.Exclusive()


def test_a_figure_that_draws_anothers_rows_starts_after_its_owner_ends(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    record = _no_machine(monkeypatch, tmp_path, seconds=0.2)
    monkeypatch.setattr(admission, "measured_cost", lambda fig, out=None: admission.Cost(0.01, 10, "test"))
    drawn = [f for f in reproduce.figures_of("cubicplus") if f.trials_of]
    assert drawn
    reproduce.cmd_reproduce(parsed("cubicplus", "--quick", "--out", str(tmp_path)))
    found = spans(record)
    for fig in drawn:
        owner = f"{fig.study}/{fig.trials_of}"
        assert found[owner][1] <= found[fig.full_name][0], (owner, fig.full_name)


def test_labs_admitted_fit_the_measured_cpu() -> None:
    busy = [packing.Task("a", "s", 1, 1.0, 0.6)]
    assert side_by_side.labs_to_admit([], 0.2, 8, 2, None) == 7  # 7 x 0.2 within 75 % of 2 cores
    assert side_by_side.labs_to_admit(busy, 0.2, 8, 2, None) == 4  # 0.6 + 4 x 0.2 <= 1.5
    assert side_by_side.labs_to_admit(busy, 0.2, 2, 2, None) == 2  # at most one a trial left
    assert side_by_side.labs_to_admit(busy, math.inf, 8, 2, None) == 0  # unmeasured: waits for an empty machine
    assert side_by_side.labs_to_admit([], math.inf, 8, 2, None) == 1  # and then runs alone
    late = packing.RecentLateness(p99_ms=9.0, bound_ms=10.0, labs=1)  # past LATE_SHED: no lab added
    assert side_by_side.labs_to_admit(busy, 0.2, 8, 2, late) == 0


def test_the_dry_run_prints_the_plan_and_the_wall_time_at_the_labs_it_would_use(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = _no_machine(monkeypatch, tmp_path)
    assert reproduce.cmd_reproduce(parsed("all", "--dry-run")) == 0
    assert ran(record) == []  # nothing run
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(f"reproduce all: {len(reproduce.figures_of('all'))} figures; serially about ")
    serial, packed = (reproduce_clock(t) for t in last.split(" about ")[1:3])
    assert 0 < packed < serial, last  # labs side by side fill the cores the waiting figures leave


def reproduce_clock(text: str) -> int:
    h, m, s = text.split()[0].rstrip(";").split(":")
    return int(h) * 3600 + int(m) * 60 + int(s)


def test_the_run_of_each_figure_is_runs_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each figure goes through `run`'s own command with reproduce's options: its files, resume and exit."""
    record = _no_machine(monkeypatch, tmp_path)
    assert reproduce.cmd_reproduce(parsed("spdy", "--quick", "--seed", "4", "--out", str(tmp_path))) == 0
    seen = [line.split() for line in record.read_text().splitlines() if line.startswith("start ")]
    assert sorted(s[1] for s in seen) == sorted(f.full_name for f in reproduce.figures_of("spdy"))
    assert all(s[4:] == ["True", "4", str(tmp_path)] for s in seen), seen


def test_the_table_shows_each_figures_verdict_from_its_manifest(tmp_path: Path) -> None:
    fig = reproduce.figures_of("iw")[0]
    path = tmp_path / fig.directory / f"{fig.name}.manifest.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"format": 1, "verdict": {"verdict": "deterministic", "claims": []}}')
    assert reproduce._verdict(fig, tmp_path) == "deterministic"
    assert reproduce._verdict(reproduce.figures_of("iw")[1], tmp_path) == ""  # no manifest: none


def test_the_dry_runs_times_leave_out_the_figures_skipped_here(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_machine(monkeypatch, tmp_path)
    reproduce.cmd_reproduce(parsed("iw", "--dry-run"))
    every = capsys.readouterr().out.strip().splitlines()[-1]
    _no_machine(monkeypatch, tmp_path, lacking=frozenset({"iw/fig5a"}))
    reproduce.cmd_reproduce(parsed("iw", "--dry-run"))
    fewer = capsys.readouterr().out.strip().splitlines()[-1]
    assert "4 figures, 1 skipped here;" in fewer and "skipped" not in every
    assert reproduce_clock(fewer.split(" about ")[1]) < reproduce_clock(every.split(" about ")[1])


def test_sigterm_to_the_run_reaches_each_figure_once_and_the_run_waits_for_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each child is a process group of its own: a signal reaches it once, as the parent passes it on (the
    iw figures running when it comes; those not started yet never start)."""
    record = tmp_path / "signals.txt"

    def cmd_run(args: argparse.Namespace) -> int:
        with record.open("a") as f:
            f.write(f"{args.figure} group {os.getpgid(0) == os.getpid()}\n")
        try:
            time.sleep(30)
        except BaseException as e:  # the child's own handler (exits.stop_on_signals): SystemExit(143)
            with record.open("a") as f:
                f.write(f"{args.figure} {type(e).__name__} {getattr(e, 'code', '')}\n")
            time.sleep(0.3)  # unwinding: a second signal now would cut it short
            raise
        return 0

    _no_machine(monkeypatch, tmp_path)
    monkeypatch.setattr(figure_commands, "cmd_run", cmd_run)
    monkeypatch.setattr(admission, "measured_cost", lambda fig, out=None: admission.Cost(0.01, 10, "test"))
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    began = time.monotonic()
    with pytest.raises(SystemExit) as stopped:
        reproduce.cmd_reproduce(parsed("iw", "--quick", "--out", str(tmp_path)))
    assert stopped.value.code == 128 + signal.SIGTERM and time.monotonic() - began < 10
    lines = record.read_text().splitlines()
    figures = [line.split()[0] for line in lines if "group" in line]
    assert len(figures) >= 2 and all(line.endswith("group True") for line in lines if "group" in line), lines
    stopped_once = sorted(f"{f} SystemExit 143" for f in figures)
    assert sorted(line for line in lines if "group" not in line) == stopped_once, lines  # once each
    schedule = json.loads((tmp_path / "reproduce" / "iw" / "schedule.json").read_text())
    assert sorted(f["status"] for f in schedule["figures"]) == ["exit 143"] * len(figures)  # written, stopped too


def test_a_kept_derived_figure_runs_as_its_declared_one_with_its_set() -> None:
    """reproduce runs newcwv/pacing@idle_s=5 as `run newcwv/pacing --set idle_s=5` (after the run's own --set),
    which derives that same figure."""
    fig = next(f for f in reproduce.figures_of("newcwv") if f.full_name == "newcwv/pacing@idle_s=5")
    one = side_by_side.figure_args(fig, parsed("newcwv", "--set", "slow_start_after_idle=0"))
    assert (one.command, one.figure, one.set) == ("run", "newcwv/pacing", ["slow_start_after_idle=0", "idle_s=5"])
    one = side_by_side.figure_args(fig, parsed("newcwv"))
    assert derive.derived_figure(expts.find(one.figure), one).full_name == fig.full_name
    declared = expts.find("newcwv/fig7")
    assert side_by_side.figure_args(declared, parsed("newcwv")).figure == "newcwv/fig7"


def test_figures_that_draw_one_owners_rows_run_one_at_a_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """linuxcc's fig4, fig5, fig7 and whole draw fig6's rows: each after fig6, and none beside another (two
    runs of one CSV would meet on its lock: the first reference run with them lost bufferbloat/tradeoff so)."""
    record = _no_machine(monkeypatch, tmp_path, seconds=0.2)
    monkeypatch.setattr(admission, "measured_cost", lambda fig, out=None: admission.Cost(0.01, 10, "test"))
    reproduce.cmd_reproduce(parsed("linuxcc", "--quick", "--out", str(tmp_path)))
    found = spans(record)
    drawn = {k: v for k, v in found.items() if k != "linuxcc/fig6"}
    assert len(drawn) == 4 and all(found["linuxcc/fig6"][1] <= start for start, _ in drawn.values())
    assert one_after_another(drawn)


def test_a_kept_figure_that_draws_its_own_directory_s_rows_is_measured() -> None:
    """cubicplus/fig6@client=chromium plots fig3.csv, of its own directory: no figure of the run owns those."""
    figures = reproduce.figures_of("cubicplus")
    kept = next(f for f in figures if f.full_name == "cubicplus/fig6@client=chromium")
    declared = next(f for f in figures if f.full_name == "cubicplus/fig6")
    assert not any(side_by_side._owner(o, kept) for o in figures)
    assert [o.full_name for o in figures if side_by_side._owner(o, declared)] == ["cubicplus/fig3"]


def test_a_figure_with_one_path_setting_gets_a_lab_per_trial_left(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """iw/fig2 runs every trial on one path: its labs are not one per setting (one), but as many as are
    admitted up to its trials left, its setting split among them as `run --jobs auto` splits it."""
    record = _no_machine(monkeypatch, tmp_path, seconds=0.1)
    monkeypatch.setattr(admission, "cores", lambda: 2)
    monkeypatch.setattr(admission, "measured_cost", lambda fig, out=None: admission.Cost(0.05, 10, "test"))
    fig2 = iw_study.FIGURES[0]
    assert fig2.full_name == "iw/fig2" and len({shards.setting(p) for p in fig2.grid(True)}) == 1
    left = side_by_side.trials_left(fig2, tmp_path, True, None, 1)
    assert left == fig2.trial_count(True, None) * len(fig2.grid(True)) > 1
    monkeypatch.setattr(reproduce, "figures_of", lambda what: [fig2])
    assert reproduce.cmd_reproduce(parsed("iw", "--quick", "--out", str(tmp_path))) == 0
    started = [line.split() for line in record.read_text().splitlines() if line.startswith("start")]
    assert [(s[1], s[3]) for s in started] == [("iw/fig2", str(min(left, admission.MAX_AUTO_JOBS)))]


def test_the_estimate_splits_a_one_path_figure_as_its_run_would() -> None:
    """The dry run's packed time of a figure on one path is its trials over the labs `--jobs auto` gives it,
    not one lab's chain."""
    fig2 = iw_study.FIGURES[0]
    alone = estimate.of([fig2], False, None, Path("/nonexistent"))
    assert alone.settings == admission.admit(admission.measured_cost(fig2), 120).jobs > 1
    assert alone.packed_s < alone.serial_s / 2


def test_the_time_left_weighs_each_trial_by_its_figures_estimate() -> None:
    """An hour of second-long trials promises nothing about minute-long ones: the run's time left scales
    the time so far by the estimated seconds left over those done, each figure's trials at its own."""
    import io

    from ground.progress import Progress
    from netrepro.runner.plan import Plan

    figures = [expts.find("iw/fig2"), expts.find("cubicplus/fig3"), expts.find("newcwv/fig8")]
    weight = side_by_side.trial_weights([Plan.of(f) for f in figures])
    for fig in figures:  # each its stored result's seconds a trial
        assert weight[fig.full_name] == Plan.of(fig).seconds_per_trial()
    assert weight["newcwv/fig8"] > 20 * weight["iw/fig2"]
    unknown = Plan.of(expts.find("iw/fig2"))
    unknown = Plan(unknown.fig, False, unknown.grid, 1, None)  # nothing stored, no declared duration
    assert unknown.seconds_per_trial() is None
    assert side_by_side.trial_weights([unknown, Plan.of(figures[1])])["iw/fig2"] == weight["cubicplus/fig3"]

    # nothing stored: its declared figure's, else its own study's median, never one pulled by another study's
    def bare(fig: Figure) -> Plan:
        plan = Plan.of(fig)
        return Plan(plan.fig, False, plan.grid, 1, None)

    kept = {f.full_name: f for f in expts.kept_figures()}
    browser, tiny = bare(kept["cubicplus/fig12@client=firefox"]), bare(expts.find("cubicplus/tiny"))
    assert browser.fig.declared is not None and browser.fig.declared.full_name == "cubicplus/fig12"
    cubicplus = ["cubicplus/fig4", "cubicplus/fig5", "cubicplus/fig12"]
    slow = ["newcwv/fig8", "newcwv/table2"]  # 50 s a trial and more
    weight = side_by_side.trial_weights([browser, tiny, *(Plan.of(expts.find(n)) for n in [*cubicplus, *slow])])
    assert weight["cubicplus/fig12@client=firefox"] == weight["cubicplus/fig12"]
    assert weight["cubicplus/tiny"] == sorted(weight[n] for n in cubicplus)[1] < 20.0
    # ten one-second trials home in 10 s, one 100 s trial left: 100 s left, not 1 s
    bar = Progress(11, "reproduce", stream=io.StringIO(), work=110.0)
    for _ in range(10):
        bar.step(work=1.0)
    bar.began -= 10.0
    assert "~0:01:40 left" in bar.line() or "~0:01:39 left" in bar.line()
    assert "[##" + "." * 28 + "] 10/11 trials" in bar.line(), "filled by the work done: 10 of 110, not 10 of 11"
    plain = Progress(2, "run", stream=io.StringIO())  # unweighed: each trial one unit
    plain.step()
    plain.began -= 30.0
    assert "~0:00:30 left" in plain.line()
    # the work began 20 s in (finished figures drawn again before it): one trial in 10 s, 10 s left
    late = Progress(2, "run", stream=io.StringIO())
    late.began -= 30.0
    late.begin()
    late.paced = late.began + 20.0
    late.step()
    assert "0:00:30 elapsed, ~0:00:10 left" in late.line()
    late.begin()  # the first call only
    assert late.paced == late.began + 20.0


def test_the_dry_run_of_a_resumed_run_estimates_the_trials_it_has_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With iw/fig2's stored rows in --out (120 ok trials) the run has nothing left of it: its time leaves
    the estimate, and the line says how many trials are left; a failed row is a trial left."""
    import shutil

    from ground.results import REFERENCE
    from ground.trials import read_rows, write_rows
    from netrepro.runner.plan import LAB_SECONDS, Plan

    fig2 = expts.find("iw/fig2")
    whole = estimate.of([fig2], False, None, tmp_path, left_in=tmp_path)
    assert whole.trials == whole.trials_left == 120 and whole.serial_s > 0
    csv = tmp_path / "iw" / "fig2.csv"
    csv.parent.mkdir()
    shutil.copy(REFERENCE / "iw" / "fig2.csv", csv)
    done = estimate.of([fig2], False, None, tmp_path, left_in=tmp_path)
    assert (done.trials, done.trials_left, done.serial_s, done.settings) == (120, 0, 0.0, 0)
    rows = read_rows(csv)
    write_rows([type(r)({**r, "status": "failed"}) if i < 3 else r for i, r in enumerate(rows)], csv)
    three = estimate.of([fig2], False, None, tmp_path, left_in=tmp_path)
    per_trial = Plan.of(fig2).seconds_per_trial()
    assert per_trial is not None and three.trials_left == 3
    assert three.serial_s == pytest.approx(3 * per_trial + LAB_SECONDS)  # fig2 has one path setting
    assert estimate.of([fig2], False, None, tmp_path).trials_left == 120  # without left_in: every trial
    monkeypatch.setattr(reproduce, "figures_of", lambda what: [fig2])
    monkeypatch.setattr(reproduce, "cannot_run_here", lambda fig, args: None)
    assert reproduce.cmd_reproduce(parsed("iw", "--dry-run", "--out", str(tmp_path))) == 0
    assert f"3 of their 120 trials left in {tmp_path} (resuming)" in capsys.readouterr().out
