"""`--until-decided` (netrepro.runner.looks): more trials only for the settings of undecided claims, up to the
budget, each look judged at its design's confidence, resumable from the rows; on constructed rows and a fake
trial runner (no lab).  The error over all looks is simulated in test_sequential.py; here, that the looks
judge with the very design and rule that simulation runs."""

from __future__ import annotations

import argparse
import json
import math
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pytest

from ground.errors import UserError
from ground.trials import Row, TrialLog, setting_key, setting_of, trial_key
from netrepro.front import cli
from netrepro.front.options import until_decided
from netrepro.runner.looks import Looks, UntilDecided, run_looks
from netrepro.runner.resume import RowSink
from netrepro.studykit import evidence, intervals, reads
from netrepro.studykit.cells import Group
from netrepro.studykit.claims import Claim, judge
from netrepro.studykit.decisions import HOLDS, UNDECIDED, Better, Exact, Regrouped
from netrepro.studykit.sequential import MOST_LOOKS, Design, Look, Plan, decide, false_holds_rate, next_batch
from netrepro.studykit.spec import Figure, Series
from netrepro.studykit.trial import Trial

WORTH = 0.05
CLEAR = Claim("000_x.txt", "clear", "B loads faster", Better("plt_ms", "B", "A", higher=False, levels=("1%",)))
NOISY = Claim("000_x.txt", "noisy", "C is faster", Better("plt_ms", "C", "A", higher=True, levels=("2%",)))
CHECK = Claim("000_x.txt", "check", "a reading", Exact("a reading", lambda fig, rows: None), check=True)
FIXED = Claim("000_x.txt", "fixed", "D the same", Better("plt_ms", "D", "A", higher=True, levels=("3%",)))


def figure(*claims: Claim, trials: int = 3) -> Figure:
    series = tuple(Series(s, {"n": i}) for i, s in enumerate("ABCD"))
    return Figure(study="t", name="f", title="t", workload="bulk", x="loss", levels=("1%", "2%", "3%"),
                  y="plt_ms", fixed={}, series=series, trials=trials, claims=claims)  # fmt: skip


def value(series: str, loss: str, i: int) -> float:
    """A trial's page load time: B far faster than A at 1 %; C against A at 2 % too noisy to decide in a
    few trials; D and A at 3 % exactly the same, trial after trial (a deterministic replay)."""
    if loss == "3%" and series in "AD":
        return 100.0 if series == "A" else 200.0
    rng = np.random.default_rng([ord(series), int(loss[0]), i])
    spread = 1.0 if loss == "2%" else 0.01
    centre = 50.0 if (series, loss) == ("B", "1%") else 100.0
    return float(centre * math.exp(rng.normal(0.0, spread)))


class Lab:
    """A fake runner: the CSV's rows, and each trial it runs made by `value`."""

    def __init__(self, fig: Figure) -> None:
        self.fig = fig
        self.rows: list[Row] = []
        self.ran: list[str] = []
        self.add({setting_key(p): fig.trials for p in fig.grid()})

    def add(self, reached: Mapping[str, int]) -> bool:
        have = {r.key for r in self.rows}
        for p in self.fig.grid():
            for i in range(reached[setting_key(p)]):
                key = trial_key(p, i)
                if key not in have:
                    self.ran.append(key)
                    cells = {"series": str(p["series"]), "loss": str(p["loss"]), "n": str(p["n"])}
                    self.rows.append(Row(trial_key=key, status="ok", seed="1", trial=str(i), **cells,
                                         plt_ms=repr(value(cells["series"], cells["loss"], i))))  # fmt: skip
        return True

    def select(self, reached: Mapping[str, int]) -> list[Row]:
        keys = evidence.wanted(self.fig.grid(), self.fig.trials, reached)
        return [r for r in self.rows if r.key in keys]

    def looks(self, plan: Plan, hours: float | None = None, clock: Callable[[], float] = time.monotonic) -> Looks:
        return run_looks(self.fig, self.fig.grid(), plan, self.select, self.add, hours, clock, say=lambda line: None)


def grown(fig: Figure, out: Looks) -> set[tuple[str, str]]:
    """The (series, level) settings taken past the declared trials."""
    by_key = {setting_key(p): (str(p["series"]), str(p["loss"])) for p in fig.grid()}
    return {by_key[s] for s, n in out.reached.items() if n > fig.trials}


def test_only_the_settings_an_undecided_claim_read_get_trials_up_to_the_budget() -> None:
    fig = figure(CLEAR, NOISY, CHECK, FIXED)
    lab, plan = Lab(fig), Plan.of(3, 9)
    out = lab.looks(plan)
    assert grown(fig, out) == {("A", "2%"), ("C", "2%")}
    assert {out.reached[setting_key(p)] for p in fig.grid() if (p["series"], p["loss"]) == ("C", "2%")} == {9}
    assert out.stopped == "budget" and len(out.looks) == plan.looks == 3
    assert [j.outcome for j in out.judged] == [HOLDS, UNDECIDED, UNDECIDED, HOLDS] and out.judged[3].deterministic
    # the clear claim and the deterministic one were decided at look 1, and never looked at again
    assert [[c["where"] for c in look["claims"]] for look in out.looks] == [
        ["clear", "noisy", "check", "fixed"],
        ["noisy", "check"],
        ["noisy", "check"],
    ]
    assert [look["confidence"] for look in out.looks] == [plan.design.confidence_at(k) for k in (1, 2, 3)]
    assert out.looks[2]["claims"][0]["trials"] == {"loss=2% A": 9, "loss=2% C": 9}
    assert len(lab.ran) == len(fig.grid()) * 3 + 2 * 6  # the declared trials, then 6 more of two settings
    record = out.manifest()
    assert record["design"]["looks"] == 3 and record["design"]["budget"] == 9
    assert set(record["trials_judged"].values()) == {9} and len(record["trials_judged"]) == 2


def test_a_figure_decided_at_its_first_look_gets_no_trial_more() -> None:
    fig = figure(CLEAR, FIXED, CHECK)
    lab = Lab(fig)
    declared = len(lab.rows)
    out = lab.looks(Plan.of(3, 9))
    assert out.stopped == "decided" and len(out.looks) == 1 and len(lab.rows) == declared
    assert out.manifest()["trials_judged"] == {}


def test_the_same_rows_give_the_same_looks_and_a_resume_runs_nothing_again() -> None:
    fig = figure(CLEAR, NOISY)
    lab = Lab(fig)
    first = lab.looks(Plan.of(3, 9))
    ran = len(lab.ran)
    again = lab.looks(Plan.of(3, 9))
    assert len(lab.ran) == ran
    assert again.manifest() == first.manifest()
    # the judged rows, as evidence selects them from what the manifest records, are the last look's
    reached = evidence.reached_of({"sequential": first.manifest()})
    assert {r.key for r in lab.select(first.reached)} == evidence.wanted(fig.grid(), fig.trials, reached)


def test_a_time_budget_starts_no_batch_once_spent() -> None:
    fig = figure(NOISY)
    lab = Lab(fig)
    ticks = iter([0.0, 7200.0])
    out = lab.looks(Plan.of(3, 30), hours=1.0, clock=lambda: next(ticks))
    assert out.stopped == "hours" and len(out.looks) == 1 and out.manifest()["design"]["hours"] == 1.0


def test_a_look_that_cannot_have_its_rows_stops_the_looks() -> None:
    fig = figure(NOISY)
    lab = Lab(fig)
    out = run_looks(fig, fig.grid(), Plan.of(3, 9), lab.select, lambda reached: False, say=lambda line: None)
    assert out.stopped == "missing" and len(out.looks) == 1 and grown(fig, out) == set()


def test_a_claim_reads_the_measurements_of_its_own_groups_only() -> None:
    fig = figure(NOISY)
    rows = Lab(fig).rows
    _, keys = reads.judge_reading(NOISY, fig, rows, {k for p in fig.grid() for k in p})
    assert {tuple(sorted(json_params(k).items())) for k in keys} == {
        (("loss", "2%"), ("n", 0), ("series", "A")),
        (("loss", "2%"), ("n", 2), ("series", "C")),
    }


def test_a_regrouped_claim_reads_its_groups_not_every_row_of_its_view() -> None:
    fig = figure()
    test = Better("plt_ms", Group(where={"loss": "2%", "series": "C"}), Group(where={"loss": "1%", "series": "B"}))
    claim = Claim("000_x.txt", "regrouped", "C against B", Regrouped(test, at="C vs B"))
    _, keys = reads.judge_reading(claim, fig, Lab(fig).rows, {k for p in fig.grid() for k in p})
    assert {(json_params(k)["series"], json_params(k)["loss"]) for k in keys} == {("C", "2%"), ("B", "1%")}


def json_params(key: str) -> dict[str, object]:
    return dict(json.loads(setting_of(key)))


@pytest.mark.parametrize("look", [1, 2, 3, 4])
def test_a_claim_judged_at_a_look_decides_as_the_simulated_procedure_does(look: int) -> None:
    # the wiring's design (Plan.of) is the design test_sequential's simulation holds to its level, and a
    # Better claim inside intervals.at_confidence decides as sequential.decide, the rule it simulates
    plan = Plan.of(10, 40)
    assert plan.design == Design(looks=4) and plan.batch == 10
    rng = np.random.default_rng(look)
    fig = figure(NOISY, trials=10)
    for ratio in (1.0, 1.2, 1.5, 3.0):
        rows = [
            Row(trial_key=trial_key({"s": s, "i": i}, 0), series=s, loss="2%", status="ok", plt_ms=repr(v))
            for s, centre in (("A", 100.0), ("C", 100.0 * ratio))
            for i, v in enumerate(centre * np.exp(rng.normal(0.0, 0.2, 10 * look)))
        ]
        with intervals.at_confidence(plan.design.confidence_at(look)):
            found = judge([NOISY], fig, rows)[0]
        a = [r.measured("plt_ms") for r in rows if r.series == "A"]
        c = [r.measured("plt_ms") for r in rows if r.series == "C"]
        assert found.outcome == decide(a, c, WORTH, True, plan.design, look).decision


def test_the_plan_adds_what_next_batch_adds_and_its_design_holds_the_error() -> None:
    plan = Plan.of(10, 35)
    assert plan.looks == 4 and [plan.trials_at(k) for k in (1, 2, 3, 4)] == [10, 20, 30, 35]
    n = plan.declared
    for k in range(1, plan.looks):
        n += next_batch(Look(k, (n, n), 1.0, 0.9, 1.2, 0.99, UNDECIDED), plan.batch, plan.design, plan.budget)
        assert n == plan.trials_at(k + 1)
    rate = false_holds_rate(2000, plan.design, plan.declared, plan.batch, 0.10, 0.2, np.random.default_rng(3))
    assert rate <= plan.design.alpha / 2 + 3 * math.sqrt(0.025 * 0.975 / 2000)
    with pytest.raises(ValueError, match="not above"):
        Plan.of(10, 10)
    # a large budget takes larger batches, not more looks than a look can be read at
    many = Plan.of(10, 1000)
    assert many.looks == MOST_LOOKS and many.trials_at(MOST_LOOKS) == 1000
    assert all(many.design.confidence_at(k) < 1 for k in range(1, MOST_LOOKS + 1))


def test_the_confidence_comes_back_after_a_look() -> None:
    with intervals.at_confidence(0.99):
        assert intervals.current_confidence() == 0.99
        assert intervals.differs_confidence(2) == pytest.approx(0.995)
    assert intervals.current_confidence() == intervals.CONFIDENCE


def _args(**given: object) -> argparse.Namespace:
    base: dict[str, object] = {"until_decided": None, "until_hours": None, "shard": None, "jobs": None,
                               "hosts": None, "scheduler": None, "quick": False, "trials": None}  # fmt: skip
    return argparse.Namespace(**{**base, **given})


def test_the_options_refuse_a_budget_not_above_the_trials_and_what_it_does_not_go_with() -> None:
    fig = figure(NOISY, trials=10)
    assert until_decided(_args(), [fig]) is None
    assert until_decided(_args(until_decided=20, until_hours=2.0), [fig]) == UntilDecided(20, 2.0)
    with pytest.raises(UserError, match=r"--until-decided 10: t/f has 10 trials per setting"):
        until_decided(_args(until_decided=10), [fig])
    with pytest.raises(UserError, match="at most 1000"):
        until_decided(_args(until_decided=1001), [fig])
    with pytest.raises(UserError, match="--until-decided 20 and --shard"):
        until_decided(_args(until_decided=20, shard="1/2"), [fig])
    with pytest.raises(UserError, match="--until-hours 2: the time budget of --until-decided"):
        until_decided(_args(until_hours=2.0), [fig])
    with pytest.raises(UserError, match="above 0"):
        until_decided(_args(until_decided=20, until_hours=0.0), [fig])


def test_run_and_reproduce_take_the_options() -> None:
    parser = cli.build_parser()
    for command in (["run", "iw/fig2"], ["reproduce", "iw"]):
        args = parser.parse_args([*command, "--until-decided", "40", "--until-hours", "1.5"])
        assert (args.until_decided, args.until_hours) == (40, 1.5)


def test_a_budget_below_the_declared_trials_is_refused_before_anything(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "iw/fig2", "--dry-run", "--until-decided", "5"]) == 2
    assert "--until-decided 5: iw/fig2 has 20 trials per setting" in capsys.readouterr().err
    assert cli.main(["run", "iw/fig2", "--dry-run", "--until-decided", "40"]) == 0
    assert "--until-decided 40: up to 2 looks" in capsys.readouterr().out


def test_a_redraw_looks_as_the_run_did_and_its_judgement_is_not_stale(tmp_path: Path) -> None:
    # cubicplus/fig3's stored rows without variation (its twin's), read as 5 trials a setting with a budget
    # of 10: the rows beyond the fifth are the second look's, already in the CSV (a --plot-only runs no trial)
    import expts
    from ground.manifests import read_manifest
    from ground.results import REFERENCE
    from netrepro.runner import sweep

    fig = expts.find("cubicplus/fig3").unvaried()
    assert fig is not None
    shutil.copytree(REFERENCE / fig.directory, tmp_path / fig.directory)
    opts = sweep.Options(out=tmp_path, trials=5, plot_only=True, until=UntilDecided(10))
    sweep.run_figure(fig, opts)
    manifest = read_manifest(tmp_path / fig.directory / "fig3.manifest.json").doc
    looked = manifest["sequential"]
    assert [look["look"] for look in looked["looks"]] == [1, 2] and looked["design"]["budget"] == 10
    assert len(looked["trials_judged"]) == 8 and set(looked["trials_judged"].values()) == {10}
    assert manifest["rows"] == 25 * 5 + 8 * 5
    assert evidence.stale(fig, manifest, tmp_path) == []
    # a plain redraw replays the looks its manifest records, and judges the same
    sweep.run_figure(fig, sweep.Options(out=tmp_path, trials=5, plot_only=True))
    again = read_manifest(tmp_path / fig.directory / "fig3.manifest.json").doc
    assert again["verdict"] == manifest["verdict"] and again["sequential"]["looks"] == looked["looks"]


def test_a_run_runs_each_look_s_trials_through_run_trials_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cubicplus/fig5 at 5 trials with a budget of 15: both claims undecided at 10, the third look's trials
    # (10 to 14) are not stored, and the fake lab makes each a copy of the stored trial ten before it
    import expts
    from ground.manifests import read_manifest
    from ground.results import REFERENCE
    from netrepro.runner import preflight, resume, sweep

    shutil.copytree(REFERENCE / "cubicplus", tmp_path / "cubicplus", ignore=shutil.ignore_patterns("*@*", "*.series"))
    for name in ("check_request", "check_machine"):  # no machine is probed
        monkeypatch.setattr(preflight, name, lambda needs: None)
    monkeypatch.setattr(resume, "planned_setup", lambda *a: None)
    monkeypatch.setattr(resume, "check_resume", lambda *a: None)
    ran: list[list[str]] = []

    def fake_run_trials(fig: Figure, todo: list[Trial], opts: sweep.Options, sink: RowSink) -> dict[str, object]:
        stored = {r.key: r for r in TrialLog(tmp_path / "cubicplus" / "fig5.csv", read_only=True).rows}
        ran.append([t.key for t in todo])
        for t in todo:
            sink.append({**stored[trial_key(t.setting, t.index - 10)], "trial_key": t.key, "trial": t.index})
        return {}

    monkeypatch.setattr(sweep, "run_trials", fake_run_trials)
    fig = expts.find("cubicplus/fig5")
    opts = sweep.Options(out=tmp_path, trials=5, until=UntilDecided(15))
    outcome = sweep.run_figure(fig, opts)
    manifest = read_manifest(tmp_path / "cubicplus" / "fig5.manifest.json").doc
    looked = manifest["sequential"]
    assert [look["look"] for look in looked["looks"]] == [1, 2, 3]
    assert len(looked["trials_judged"]) == 8 and set(looked["trials_judged"].values()) == {15}
    assert len(ran) == 1 and len(ran[0]) == 8 * 5 and all(json.loads(k)["trial"] >= 10 for k in ran[0])
    assert outcome.trials == 25 * 5 + 8 * 10 and manifest["rows"] == outcome.trials
    sweep.run_figure(fig, opts)  # the same command again: the same looks, nothing run again
    assert len(ran) == 1
    assert read_manifest(tmp_path / "cubicplus" / "fig5.manifest.json").doc["sequential"]["looks"] == looked["looks"]
