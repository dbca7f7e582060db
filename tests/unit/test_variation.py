"""Each study's declared variation (netrepro.studykit.variation): what a trial's setting takes from it, that
its draws come from the trial's key and that its row records it, and that `variation=none` is the emulator
the reference measured before trials varied (its trial keys are those rows' keys)."""

import json

import pytest

import expts
from ground.errors import UserError
from ground.results import REFERENCE
from ground.trials import read_rows, trial_draw
from netrepro.runner import sweep
from netrepro.runner.derive import overrides
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit import params, variation
from netrepro.studykit.spec import Figure
from netrepro.studykit.trial import Trial, build_all, trial_path
from netrepro.studykit.variation import NONE, STUDY, Variation

IW = Variation.of("1ms", "a test's")


def test_a_setting_under_the_study_s_variation_takes_its_jitter_and_names_it() -> None:
    setting = {"rtt": "100ms", "initcwnd": 10, variation.KEY: STUDY}
    assert IW.applied(setting) == {"rtt": "100ms", "initcwnd": 10, variation.KEY: STUDY, "jitter": "1ms"}
    # none: the setting as the emulator without variation ran it, with no key (so its trial keys are those rows')
    assert IW.applied({**setting, variation.KEY: NONE}) == {"rtt": "100ms", "initcwnd": 10}
    # a figure's own jitter is its setting, not the study's variation: nothing to add, nothing to name
    assert IW.applied({**setting, "jitter": "3ms"}) == {"rtt": "100ms", "initcwnd": 10, "jitter": "3ms"}
    # a study that declares none varies nothing
    assert variation.NO_VARIATION.applied(setting) == {"rtt": "100ms", "initcwnd": 10}
    # a setting that names no variation runs with the declared default
    assert IW.applied({"rtt": "100ms"}) == IW.applied({"rtt": "100ms", variation.KEY: variation.DECLARED})
    with pytest.raises(ValueError, match="variation=sometimes: one of study, none"):
        IW.applied({variation.KEY: "sometimes"})


def test_a_declaration_is_checked_as_the_path_key_is() -> None:
    with pytest.raises(ValueError, match="variation jitter"):
        Variation.of("2s", "more than a path takes")


def test_every_study_declares_its_variation_and_why() -> None:
    for study in expts.STUDIES:
        declared: Variation = study.VARIATION
        assert declared.jitter.seconds and len(declared.why) > 80, study.__name__
        assert all(fig.variation == declared for fig in study.FIGURES), study.__name__


def trials_of(fig: Figure, trials: int) -> list[Trial]:
    return build_all(fig.grid(), trials, fig.x, WORKLOADS[fig.workload].keys_type, fig.topology)


def test_a_trial_s_variation_is_drawn_from_its_key_and_recorded_in_its_row() -> None:
    """Under variation=study each trial of iw/fig2 has the study's jitter in its path and its key; the jitter's
    draws restart from the seed its key gives (the same trial, the same seed; another, another), and the row
    the runner writes names the variation and the jitter beside the seed."""
    fig = expts.find("iw/fig2").derive({variation.KEY: STUDY})
    grid = fig.grid()
    assert all(p[variation.KEY] == STUDY and p["jitter"] == "1ms" for p in grid)
    trials = trials_of(fig, 2)
    assert {t.path.jitter.ms for t in trials} == {1.0} == {trial_path(p).jitter.ms for p in grid}
    again = trials_of(fig, 2)
    assert [trial_draw(t.key, 1) for t in trials] == [trial_draw(t.key, 1) for t in again]
    seeds = [trial_draw(t.key, 1).loss_seed for t in trials]
    assert len(set(seeds)) == len(trials)  # every trial its own draws
    row = sweep._cell_params(trials[0].setting)  # the parameter columns of its row
    assert (row[variation.KEY], row["jitter"]) == (STUDY, "1ms")
    assert json.loads(trials[0].key)["params"][variation.KEY] == STUDY


def test_variation_none_names_the_rows_the_reference_measured_without_variation() -> None:
    """iw/fig2@variation=none reads the stored rows measured before trials varied: its grid's trial keys are
    theirs, and none of those rows names a variation or a jitter."""
    fig = expts.find("iw/fig2").derive({variation.KEY: NONE})
    assert fig.full_name == "iw/fig2@variation=none"
    wanted = {t.key for t in trials_of(fig, fig.trials)}
    stored = [r for r in read_rows(REFERENCE / "iw" / "fig2.csv") if r.ok]
    assert wanted <= {r.key for r in stored}
    assert all(not r.text(variation.KEY) and not r.text("jitter") for r in stored)


def test_a_variation_the_key_does_not_take_is_refused_as_typed() -> None:
    key = params.trial_keys(())[variation.KEY]
    assert key.parse("none") == NONE
    with pytest.raises(ValueError, match="one of study, none"):
        key.parse("some")
    with pytest.raises(UserError, match="variation=some"):
        overrides(expts.find("iw/fig2"), ["variation=some"])
