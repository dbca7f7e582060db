"""Each study's declared variation (netrepro.studykit.variation): what a trial's setting takes from it, that
its draws come from the trial's key and that its row records it, and that `variation=none` is the emulator
the reference measured before trials varied (its trial keys are those rows' keys)."""

import json
from pathlib import Path

import pytest

import expts
from ground.errors import UserError
from ground.results import REFERENCE, REPO
from ground.trials import DEFAULT_SEED, Row, latest_rows, read_rows, trial_draw
from netrepro.front.report import Entry, findings, moved_by_variation, page
from netrepro.runner import sweep
from netrepro.runner.derive import overrides
from netrepro.runner.manifest import beside_unvaried, judgement_lines, judgement_of
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit import cells, params, variation
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


def unvaried_csv(fig: Figure) -> Path:
    """Where the reference keeps `fig`'s rows measured without variation (af4479f): its twin's folder once
    the reference is measured again with each study's variation, until then its own."""
    twin = fig.unvaried()
    if twin is not None and (here := REFERENCE / twin.directory / twin.csv_name).exists():
        return here
    return REFERENCE / fig.directory / fig.csv_name


def test_variation_none_names_the_rows_the_reference_measured_without_variation() -> None:
    """iw/fig2@variation=none reads the stored rows measured before trials varied: its grid's trial keys are
    theirs, and none of those rows names a variation or a jitter."""
    fig = expts.find("iw/fig2").derive({variation.KEY: NONE})
    assert fig.full_name == "iw/fig2@variation=none"
    wanted = {t.key for t in trials_of(fig, fig.trials)}
    stored = [r for r in read_rows(unvaried_csv(expts.find("iw/fig2"))) if r.ok]
    assert wanted <= {r.key for r in stored}
    assert all(not r.text(variation.KEY) and not r.text("jitter") for r in stored)


def test_a_variation_the_key_does_not_take_is_refused_as_typed() -> None:
    key = params.trial_keys(())[variation.KEY]
    assert key.parse("none") == NONE
    with pytest.raises(ValueError, match="one of study, none"):
        key.parse("some")
    with pytest.raises(UserError, match="variation=some"):
        overrides(expts.find("iw/fig2"), ["variation=some"])


@pytest.fixture
def varied(monkeypatch: pytest.MonkeyPatch) -> None:
    """Declared figures under their study's variation (as from the commit the reference is re-measured at)."""
    monkeypatch.setattr(variation, "DECLARED", STUDY)


def test_a_figure_its_variation_changes_has_a_twin_without_it(varied: None) -> None:
    fig = expts.find("iw/fig2")
    twin = fig.unvaried()
    assert twin is not None and twin.full_name == "iw/fig2@variation=none"
    assert all(variation.KEY not in p and "jitter" not in p for p in twin.grid())
    assert all(p["jitter"] == "1ms" for p in fig.grid())
    assert twin.unvaried() is None  # a derived figure has none
    # newcwv's pacing figures that set their own jitter are their own setting: no twin
    assert expts.find("newcwv/pacing").derive({"jitter": "3ms"}).unvaried() is None
    names = [f.full_name for f in expts.with_kept()]
    assert names.index("iw/fig2@variation=none") == names.index("iw/fig2") + 1


def test_declared_figures_that_do_not_vary_have_no_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(variation, "DECLARED", NONE)
    assert all(f.unvaried() is None for f in expts.all_figures())
    assert [f.full_name for f in expts.with_kept()] == [f.full_name for f in expts.measured_of(expts.all_figures())]


def twin_manifest(tree: Path, fig: Figure, outcomes: list[str], verdict: str) -> None:
    twin = fig.unvaried()
    assert twin is not None
    claims = [
        {"quote": c.quote, "outcome": o, "deterministic": o == "holds"}
        for c, o in zip(fig.claims, outcomes, strict=False)
    ]
    doc = {"verdict": {"verdict": verdict, "claims": claims}, "code_of_rows": ["af4479f0123456789"]}
    (tree / twin.directory).mkdir(parents=True)
    (tree / twin.directory / f"{twin.name}.manifest.json").write_text(json.dumps(doc))


def test_a_twin_drawn_on_no_rows_is_not_set_beside(varied: None, tmp_path: Path) -> None:
    """A twin never measured, drawn by a --plot-only on no rows, judged every claim undecided: that is no
    judgement without variation, and none is set beside the figure's."""
    fig = expts.find("iw/fig2")
    twin_manifest(tmp_path, fig, ["undecided"] * len(fig.claims), "undecided")
    path = tmp_path / fig.unvaried().directory / "fig2.manifest.json"  # type: ignore[union-attr]
    path.write_text(json.dumps({**json.loads(path.read_text()), "rows": 0}))
    judgement = judgement_of(fig, [], [])
    beside_unvaried(judgement, fig, tmp_path)
    assert "without_variation" not in judgement
    assert not any("without_variation" in c for c in judgement["claims"])


def test_the_caption_manifest_and_report_show_a_claim_s_judgement_under_both(varied: None, tmp_path: Path) -> None:
    """iw/fig2's claims judged on no rows (undecided), beside its twin's stored outcomes: each claim's line says
    both ("UNDECIDED; HOLDS WITHOUT VARIATION"), the verdict line the twin's verdict and the commit of its
    rows, and the report's page and findings say the same."""
    fig = expts.find("iw/fig2")
    twin_manifest(tmp_path, fig, ["holds", "differs"], "partly")
    judgement = judgement_of(fig, [], [])
    beside_unvaried(judgement, fig, tmp_path)
    assert judgement["without_variation"] == {
        "figure": "iw/fig2@variation=none",
        "verdict": "partly",
        "code_of_rows": ["af4479f0123456789"],
    }
    first, second = judgement["claims"][:2]
    assert (first["without_variation"], second["without_variation"]) == ("holds", "differs")
    lines = judgement_lines(judgement)
    assert lines[0].endswith("; without variation: partly (iw/fig2@variation=none, rows of af4479f01234)")
    assert lines[1].endswith("UNDECIDED; HOLDS WITHOUT VARIATION (DETERMINISTIC)")  # a replay's reading, so said
    assert lines[2].endswith("UNDECIDED; DIFFERS WITHOUT VARIATION")
    assert "without_variation" not in judgement["claims"][2]  # the twin judged only two of them here
    entry = Entry(fig, {"title": "t", "verdict": judgement}, "fig2.png")
    text = findings([entry])
    assert "**undecided**; without variation: partly (iw/fig2@variation=none, rows of af4479f01234)" in text
    assert "**undecided; holds without variation (deterministic)**" in text
    assert "**undecided; differs without variation**" in text
    html = page([entry])
    assert "undecided; holds without variation (deterministic)" in html and "; without variation: partly" in html


def test_no_twin_stored_no_second_judgement(varied: None, tmp_path: Path) -> None:
    fig = expts.find("iw/fig2")
    judgement = judgement_of(fig, [], [])
    beside_unvaried(judgement, fig, tmp_path)
    assert "without_variation" not in judgement and "without variation" not in " ".join(judgement_lines(judgement))


def test_each_study_s_page_says_what_varies_as_declared() -> None:
    """The docs page of each study says how much its paths jitter, as its declaration does, and why."""
    for study in expts.STUDIES:
        name = study.__name__.rsplit(".", 1)[-1]
        page = (REPO / "docs" / "studies" / f"{name}.md").read_text()
        section = page.split("\n## What varies\n", 1)[1].split("\n## ", 1)[0]
        declared: Variation = study.VARIATION
        flat = " ".join(section.split())
        assert f"within ±{declared.jitter.ms:g} ms" in flat, name
        assert " ".join(declared.why.replace("+-", "±").split()) in flat, name
        assert "No cross traffic is added:" in flat, name


def test_the_findings_list_the_claims_the_variation_moved(varied: None, tmp_path: Path) -> None:
    fig = expts.find("iw/fig2")
    twin_manifest(tmp_path, fig, ["undecided", "holds"], "partly")
    judgement = judgement_of(fig, [], [])
    beside_unvaried(judgement, fig, tmp_path)
    entry = Entry(fig, {"title": "t", "verdict": judgement}, "fig2.png")
    assert [line.split(": ", 1)[0] for line in moved_by_variation([entry])] == [f"- iw/fig2, {fig.claims[1].where}"]
    assert moved_by_variation([entry])[0].endswith(": undecided; holds without variation")
    text = findings([entry])
    assert "Judged beside their twins without variation (1 figure): 1 claim whose outcome the variation moved:" in text


def test_a_kept_figure_derived_by_set_has_its_twin_too(varied: None) -> None:
    """newcwv/pacing@idle_s=5 (kept) has pacing@idle_s=5+variation=none, whose keys are its stored rows'; a
    figure that names a variation, or sets its own jitter, has none; nor one derived by --vary."""
    kept = expts.find("newcwv/pacing").derive({"idle_s": "5"})
    twin = kept.unvaried()
    assert twin is not None and twin.full_name == "newcwv/pacing@idle_s=5+variation=none"
    assert twin.unvaried() is None and expts.find("iw/fig2").derive({variation.KEY: STUDY}).unvaried() is None
    assert expts.find("newcwv/pacing").derive({"jitter": "3ms"}).unvaried() is None
    assert expts.find("iw/fig2").derive(vary=("initcwnd", [3, 10])).unvaried() is None
    names = [f.full_name for f in expts.with_kept()]
    assert names.index("newcwv/pacing@idle_s=5+variation=none") == names.index("newcwv/pacing@idle_s=5") + 1
    keys = {r.key for r in read_rows(unvaried_csv(kept)) if r.ok}
    assert keys and keys <= {t.key for t in trials_of(twin, 50)}  # each stored trial, a trial of the twin


def test_a_twin_that_cannot_be_read_is_said_so(varied: None, tmp_path: Path) -> None:
    """A twin's manifest that is not JSON leaves the claims without a second outcome, and the verdict line and
    the report say the twin was not read, and why, rather than showing nothing."""
    fig = expts.find("iw/fig2")
    twin = fig.unvaried()
    assert twin is not None
    twin.manifest_in(tmp_path).parent.mkdir(parents=True)
    twin.manifest_in(tmp_path).write_text("{not json")
    judgement = judgement_of(fig, [], [])
    beside_unvaried(judgement, fig, tmp_path)
    assert not any("without_variation" in c for c in judgement["claims"])
    assert "; without variation: not read (iw/fig2@variation=none: " in judgement_lines(judgement)[0]
    entry = Entry(fig, {"title": "t", "verdict": judgement}, "fig2.png")
    assert "; without variation: not read (iw/fig2@variation=none: " in findings([entry])


def test_the_cells_whose_trials_do_not_vary_are_named_in_the_judgement() -> None:
    """iw/fig2 as the emulator without variation measured it (af4479f): five of its six cells' trials are
    equal within the delay line's timer noise, and the caption names them; the same rows on a jittered path
    have no timer noise to hide in (cells.timer_noise), so only equal values would be alike, and none is."""
    fig = expts.iw.FIGURES[0]
    rows = read_rows(unvaried_csv(fig))
    judged = judgement_of(fig, [], rows)["trials"]
    assert judged["cells"] == 6 and len(judged["fixed"]) == 5 and "IW 3" not in judged["fixed"][0]
    assert judged["fixed"][0] == "initcwnd=3"  # the one series is unnamed: its cells are its initial windows
    note = [line for line in judgement_lines(judgement_of(fig, [], rows)) if line.startswith("  note: 5 of")]
    assert len(note) == 1 and "5 of 6 cells do not vary" in note[0] and "Cells that do not vary" in note[0]
    jittered = [type(r)({**r, "jitter": "1ms"}) for r in rows]
    assert judgement_of(fig, [], jittered)["trials"]["fixed"] == []


def test_a_figure_whose_y_is_across_trials_judges_its_cells_by_each_trial_s_value() -> None:
    """newcwv/fig7's y is a gain between two arms; whether its cells vary is read from each trial's mean
    burst time (its `trial_metric`), one cell per arm and burst size."""
    fig = next(f for f in expts.newcwv.FIGURES if f.name == "fig7")
    rows = read_rows(REFERENCE / "newcwv" / "fig7.csv")
    found = judgement_of(fig, [], rows)["trials"]
    assert found["cells"] == len(fig.series) * len(fig.levels) and found["cells"] > 0


def _varied_figures() -> list[tuple[Figure, list[Row]]]:
    """Each drawn figure of the reference (a manifest beside its CSV) whose rows ran with their study's
    variation: its latest rows at the reference's seed."""
    found = []
    declared = [f for s in expts.STUDIES for f in s.FIGURES]
    every = {f.full_name: f for f in [*declared, *expts.measured_of(declared)]}.values()
    for fig in every:
        csv_path = REFERENCE / fig.directory / fig.csv_name
        if not fig.manifest_in(REFERENCE).is_file() or not csv_path.is_file():
            continue
        rows = latest_rows(r for r in read_rows(csv_path) if r.seed == DEFAULT_SEED)
        if rows and all(r.text(variation.KEY) == STUDY for r in rows if r.ok):
            found.append((fig, rows))
    return found


def _items_not_varying(page: str, figure: str) -> list[str]:
    """The items of a study page's "Cells that do not vary" that name `figure` in backticks, each on one line."""
    section = " ".join(page.split("\n## Cells that do not vary\n", 1)[1].split("\n## ", 1)[0].split())
    return [item for item in section.split("- ") if item.startswith(f"`{figure}`")]


def _names(item: str, name: str) -> bool:
    """Whether an item's list of cells (its first sentence: "a, b and c.") names the cell `name`."""
    listed = item.split(". ")[0]
    return f"{name}," in listed or f"{name} and" in listed or listed.endswith(name)


def test_a_cell_whose_trials_do_not_vary_under_variation_is_explained_on_its_study_s_page() -> None:
    """No figure of the reference has a cell whose trials are identical (cells.of_figure: equal, or on a path
    without jitter within the delay line's timer noise) unless its study's page says why that is physics,
    under "Cells that do not vary": the figure named in backticks, and each such cell as cells.cell_name
    names it ("<series> at <level>", or "<x>=<level>") or its every cell."""
    for fig, rows in _varied_figures():
        fixed = [cells.cell_name(fig, s, level) for (s, level), c in cells.of_figure(fig, rows).items() if c.fixed]
        if not fixed:
            continue
        page = (REPO / "docs" / "studies" / f"{fig.study}.md").read_text()
        assert "\n## Cells that do not vary\n" in page, (fig.full_name, fixed)
        items = _items_not_varying(page, fig.full_name)
        assert items, (fig.full_name, fixed)
        unexplained = [f for f in fixed if not any(_names(item, f) or "every cell" in item for item in items)]
        assert not unexplained, (fig.full_name, unexplained)


def test_the_counts_are_the_figures_own_not_their_twins(varied: None, tmp_path: Path) -> None:
    """A claim judged undecided on iw/fig2 and held on its twin without variation counts once, as undecided:
    the twin's outcome stands beside it (the findings' list of claims the variation moved), not as a second
    figure whose outcome the claim must also have."""
    from netrepro.front.report import tally

    fig = expts.find("iw/fig2")
    twin = fig.unvaried()
    assert twin is not None
    twin_manifest(tmp_path, fig, ["holds", "holds", "holds"], "agrees")
    judgement = judgement_of(fig, [], [])
    beside_unvaried(judgement, fig, tmp_path)
    theirs = json.loads(twin.manifest_in(tmp_path).read_text())
    entries = [Entry(fig, {"title": "t", "verdict": judgement}, "a.png"), Entry(twin, theirs, "b.png")]
    counted = tally(entries)
    assert "figures: 0 agrees" in counted and "(and 1 twin without variation beside them, not counted)" in counted
    assert "0 holds" in counted and "3 undecided" in counted
    assert tally(entries[1:]).startswith("figures: 1 agrees")  # alone, it is a figure like any other


def test_the_newcwv_page_s_cells_that_do_not_vary_lose_what_it_says() -> None:
    """docs/studies/newcwv.md, under "Cells that do not vary", says of fig9's first list of cells that "no
    burst of these loses a segment in any trial", and of its second that each loses "a whole number of
    segments" the same in every trial: the rows' values, read here, not the prose's alone."""
    items = _items_not_varying((REPO / "docs" / "studies" / "newcwv.md").read_text(), "newcwv/fig9")
    lossless = next(item for item in items if "No burst of these loses a segment in any trial" in item)
    whole = next(item for item in items if "loses a whole number of segments" in item)
    found = [(fig, rows) for fig, rows in _varied_figures() if fig.full_name == "newcwv/fig9"]
    assert found, "the page speaks of fig9's rows under its study's variation: the reference has none"
    fig, rows = found[0]
    checked = {"lossless": 0, "whole": 0}
    for (s, level), c in cells.of_figure(fig, rows).items():
        name = cells.cell_name(fig, s, level)
        if _names(lossless, name):
            assert set(c.values) == {0.0}, (name, c.values)
            checked["lossless"] += 1
        elif _names(whole, name):
            assert c.fixed and min(c.values) > 0, (name, c.values)  # a loss, the same in every trial
            checked["whole"] += 1
    assert checked == {"lossless": 11, "whole": 3}, checked
