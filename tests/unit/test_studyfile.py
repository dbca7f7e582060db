"""Studies in TOML files: read into the same figure specs as expts/, every mistake named before a run."""

import re
from pathlib import Path

import pytest

from expts import iw
from ground.results import REPO
from ground.trials import Row, trial_key
from netrepro.front import cli, studyfile
from netrepro.runner import derive
from netrepro.studykit import claims, decisions

EXAMPLE = REPO / "expts" / "example-study.toml"

GOOD = """
study = "mine"

[[figure]]
name = "dl"
title = "Download time ({rate})"
workload = "download"
y = "download_time_ms"
x = { factor = "initcwnd", levels = [3, 10], quick = [3] }
fixed = { rtt = "50ms", rate = "3mbit", cc = "cubic", protocol = "http/1.1", object_bytes = 37000 }
series = [ { label = "CUBIC" }, { label = "Reno", cc = "reno" } ]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


def test_the_readme_example_is_iw_fig2_trial_for_trial() -> None:
    [fig] = studyfile.load(EXAMPLE)
    assert fig.full_name == "example/iw" and fig.directory == "example"
    for quick in (False, True):
        mine = [trial_key(p, i) for p in fig.grid(quick) for i in range(fig.trial_count(quick))]
        theirs = [trial_key(p, i) for p in iw.FIG2.grid(quick) for i in range(iw.FIG2.trial_count(quick))]
        assert mine == theirs
    assert fig.heading == iw.FIG2.heading


@pytest.mark.parametrize("rtts", ['["40ms", "120ms"]', '"40ms,120ms"'])
def test_a_study_file_declares_its_topology(tmp_path: Path, rtts: str) -> None:
    """Per-pair RTTs as a TOML list (one per pair), or as the one string of before."""
    text = GOOD.replace('name = "dl"', f'name = "dl"\ntopology = {{ shape = "dumbbell", rtts = {rtts}, cross = true }}')
    [fig] = studyfile.load(write(tmp_path, text))
    assert (fig.topology.shape, fig.topology.pairs, fig.topology.cross) == ("dumbbell", 2, True)
    assert [str(r) for r in fig.topology.rtts] == ["40ms", "120ms"]


PAIRS = """
study = "mine"

[[figure]]
name = "share"
title = "Goodput of N flows"
workload = "competing"
y = "jain_index"
topology = { shape = "dumbbell" }
x = { factor = "pairs", levels = [1, 2, 4], quick = [1, 2] }
fixed = { rtt = "40ms", rate = "10mbit", cc = "cubic", duration_s = 5 }
"""


def test_the_number_of_pairs_is_an_x_factor_with_a_lab_for_each(tmp_path: Path) -> None:
    """`pairs` sizes each trial's dumbbell: the trials of one size share a lab, another size another."""
    from netrepro.runner import shards
    from netrepro.runner.plan import Plan

    [fig] = studyfile.load(write(tmp_path, PAIRS))
    plan = Plan.of(fig, quick=True)
    todo = [t for phase in plan.phases() for task in phase for t in task]
    assert sorted({t.topology.pairs for t in todo}) == [1, 2] and fig.topology.pairs == 1
    assert all(t.topology.shape == "dumbbell" for t in todo)
    assert plan.settings == 2 and len({shards.setting(t.setting) for t in todo}) == 2
    assert "pairs=2" in "\n".join(plan.describe())


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('topology = { shape = "dumbbell" }', "", "pairs 1: the figure's topology is a path; pairs is a dumbbell's"),
        ("[1, 2, 4], quick = [1, 2]", "[1, 40], quick = [1]", "pairs 40: from 1 to 28"),
        ('shape = "dumbbell"', 'shape = "dumbbell", rtts = ["40ms", "80ms"]', "pairs 1: the topology gives 2 per-pair"),
    ],
)
def test_a_number_of_pairs_the_topology_cannot_take_is_refused(tmp_path: Path, old: str, new: str, named: str) -> None:
    with pytest.raises(studyfile.StudyFileError) as refused:
        studyfile.load(write(tmp_path, PAIRS.replace(old, new)))
    assert named in str(refused.value)


@pytest.mark.parametrize("rtts", ["[]", "[40, 120]", "40"])
def test_per_pair_rtts_that_are_not_a_list_of_times_are_refused(tmp_path: Path, rtts: str) -> None:
    text = GOOD.replace('name = "dl"', f'name = "dl"\ntopology = {{ shape = "dumbbell", rtts = {rtts} }}')
    with pytest.raises(studyfile.StudyFileError, match=r"topology.rtts = .*: give a list of times, one per pair"):
        studyfile.load(write(tmp_path, text))


def test_a_study_file_with_series(tmp_path: Path) -> None:
    [fig] = studyfile.load(write(tmp_path, GOOD))
    assert [s.label for s in fig.series] == ["CUBIC", "Reno"]
    assert {(p["initcwnd"], p["cc"]) for p in fig.grid()} == {(3, "cubic"), (10, "cubic"), (3, "reno"), (10, "reno")}
    assert [p["initcwnd"] for p in fig.grid(quick=True)] == [3, 3]
    assert fig.heading == "Download time (3 Mbit/s)" and fig.trial_timeout(None) == 120  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (('name = "dl"', 'name = "dl"\ncolour = "red"'), "unknown key 'colour'"),
        (('workload = "download"', 'workload = "video"'), "workload 'video'; netrepro has"),
        (('y = "download_time_ms"', 'y = "goodput"'), "y = 'goodput' is not a metric of download"),
        (('rate = "3mbit"', 'rate = "fast"'), "rate 'fast'"),
        (('rtt = "50ms"', 'rtt = "50"'), "rtt '50'"),
        (('study = "mine"', 'study = "iw"'), "study 'iw' is one of netrepro's own"),
        (('y = "download_time_ms"\n', ""), "`y` is missing"),
        (("quick = [3]", "quick = [4]"), "x.quick [4] must be among x.levels"),
        (('name = "dl"', 'name = "d/l"'), "name 'd/l'"),
        (("levels = [3, 10]", "levels = [3, 3]"), "x.levels = [3, 3]"),
        (('fixed = { rtt = "50ms"', 'fixed = { initcwnd = 4, rtt = "50ms"'), "'initcwnd' is the x factor"),
        (('study = "mine"', 'study = "mine"\n['), "not valid TOML"),
        (('study = "mine"', 'study = "mine"\nauthor = "me"'), "unknown top-level key 'author'"),
        (('rate = "3mbit"', 'rate = "3mbit", pgae = "small"'), "'pgae' is not a key any part of a trial takes"),
        (("object_bytes = 37000", 'object_bytes = "big"'), "object_bytes='big': a whole number"),
        (('name = "dl"', 'name = "dl"\ntopology = { shape = "ring" }'), "topology topo 'ring': the topologies are"),
        (
            ('name = "dl"', 'name = "dl"\ntopology = { shape = "chain", links = ["r1-r9:rate=1mbit"] }'),
            "chain has no link r1-r9",
        ),  # fmt: skip
        (('name = "dl"', 'name = "dl"\ntopology = { shape = "chain", hops = 3 }'), "topology = { shape = ..."),
        (('name = "dl"', 'name = "dl"\ntopology = { shape = "dumbbell", pairs = "2" }'), "topology.pairs = '2'"),
        (('name = "dl"', 'name = "dl"\ntopology = { shape = "chain", routers = 2.5 }'), "topology.routers = 2.5"),
        (('title = "Download time ({rate})"', 'title = "Download {"'), "title 'Download {': Single '{'"),
        (('title = "Download time ({rate})"', 'title = "{rate[0]}"'), "field {rate[0]} is not a KEY"),
        (('title = "Download time ({rate})"', 'title = "{rate:{w}}"'), "field {rate}: a field nested in its format"),
        (('title = "Download time ({rate})"', 'title = "$x^$ ({rate})"'), "title: matplotlib cannot draw"),
        (('name = "dl"', 'name = "dl"\ndeviations = "one"'), "deviations = 'one': give a list of strings"),
        (('name = "dl"', 'name = "dl"\ny_log = 1'), "y_log = 1: give true or false"),
        (('name = "dl"', 'name = "dl"\nx_label = 3'), "x_label = 3: give a string"),
    ],
)
def test_mistakes_are_named_with_the_file_and_figure(tmp_path: Path, change: tuple[str, str], named: str) -> None:
    path = write(tmp_path, GOOD.replace(*change, 1))
    with pytest.raises(studyfile.StudyFileError) as refused:
        studyfile.load(path)
    assert named in str(refused.value) and str(path) in str(refused.value)


def test_run_of_a_bad_study_file_exits_2_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, GOOD.replace('workload = "download"', 'workload = "video"'))
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "--out", str(out)]) == 2
    assert "workload 'video'" in capsys.readouterr().err
    assert not out.exists()


def test_a_study_file_not_in_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "study.toml"
    path.write_bytes(GOOD.replace("Download", "T\xe9l\xe9chargement").encode("latin-1"))
    with pytest.raises(studyfile.StudyFileError, match=r"study.toml: not UTF-8 text \(byte 0xe9 at offset \d+\)"):
        studyfile.load(path)


def test_a_missing_study_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", str(tmp_path / "nowhere.toml")]) == 2
    assert "nowhere.toml: cannot read it" in capsys.readouterr().err


def test_derivations_apply_to_a_study_files_figures(tmp_path: Path) -> None:
    args = cli.build_parser().parse_args(["run", str(write(tmp_path, GOOD)), "--set", "rtt=80ms"])
    [fig] = studyfile.load(Path(args.figure))
    derived = derive.derived_figure(fig, args)
    assert derived.directory == "mine/dl@rtt=80ms" and derived.fixed["rtt"] == "80ms"


CLAIMED = (
    GOOD
    + """
[[figure.claim]]
quote = "a larger window loads the response faster"
where = "section 4"
source = "source.txt"
test = "better"
winner = { initcwnd = 10 }
loser = { initcwnd = 3 }
higher = false
worth = 0.1
reading = "download time, IW 10 against IW 3"

[[figure.claim]]
quote = "Reno and CUBIC download alike"
where = "section 5"
test = "same"
groups = ["CUBIC", "Reno"]
margin = 0.05
"""
)


def test_a_study_file_states_its_claims_as_a_built_in_figure_does(tmp_path: Path) -> None:
    (tmp_path / "source.txt").write_text("We saw that a larger window\nloads the response faster.")
    [fig] = studyfile.load(write(tmp_path, CLAIMED))
    better, same = fig.claims
    assert (better.where, better.source, same.where) == ("section 4", "source.txt", "section 5")
    rows = [
        Row(series=s, initcwnd=str(w), status="ok", download_time_ms=str(ms + d))
        for s in ("CUBIC", "Reno")
        for w, ms in ((3, 513.0), (10, 357.0))
        for d in (-2.0, 0.0, 2.0)
    ]
    judged = claims.judge(fig.claims, fig, rows)
    assert [j.outcome for j in judged] == [decisions.HOLDS, decisions.HOLDS], [j.line() for j in judged]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (('test = "better"', 'test = "faster"'), "test = 'faster'"),
        (("winner = { initcwnd = 10 }", 'winner = "BBR"'), "winner = 'BBR'"),
        (("margin = 0.05", "margin = -1"), "margin = -1"),
        (('source = "source.txt"', 'source = "other.txt"'), "other.txt"),
        (("worth = 0.1", "worth = 0.1\nlevels = [4]"), "levels = [4]"),
    ],
)
def test_a_claims_mistakes_are_named(tmp_path: Path, change: tuple[str, str], named: str) -> None:
    (tmp_path / "source.txt").write_text("a larger window loads the response faster")
    with pytest.raises(studyfile.StudyFileError, match=re.escape(named)):
        studyfile.load(write(tmp_path, CLAIMED.replace(*change)))


def test_a_quote_not_in_its_source_is_refused(tmp_path: Path) -> None:
    (tmp_path / "source.txt").write_text("a smaller window loads the response faster")
    with pytest.raises(studyfile.StudyFileError, match="does not stand verbatim"):
        studyfile.load(write(tmp_path, CLAIMED))


def test_the_files_figure_keys_are_read_from_the_figure_itself() -> None:
    """One declaration: each key a study file's figure takes is a Figure field's (or stands for one:
    `claim` for claims, `timeout_s` for trial_timeout), with its meaning beside the field; a field
    given none is not a file's to set (levels: inside `x`)."""
    import dataclasses

    from netrepro.studykit.spec import Figure

    fields = {f.name: f for f in dataclasses.fields(Figure)}
    assert studyfile.FIGURE_KEYS["claim"] == fields["claims"].metadata["file_meaning"]
    assert studyfile.FIGURE_KEYS["timeout_s"] == fields["trial_timeout"].metadata["file_meaning"]
    assert {"levels", "quick_levels", "summarize", "drawing", "variant"}.isdisjoint(studyfile.FIGURE_KEYS)
    for key in studyfile.FIGURE_KEYS:
        assert key in fields or key in ("claim", "timeout_s"), key


def test_a_study_files_dry_run_estimates_from_its_declared_durations(tmp_path: Path) -> None:
    """Nothing stored: the trials' declared durations bound the time from below (3 pair counts x 10 trials
    x 5 s, and a lab each); a workload that declares no duration still has no estimate."""
    from netrepro.runner.plan import LAB_SECONDS, Plan

    [fig] = studyfile.load(write(tmp_path, PAIRS))
    plan = Plan.of(fig)
    assert plan.stored is None and plan.seconds() == 3 * 10 * 5 + 3 * LAB_SECONDS and plan.time() == ">=3 min"
    assert "the trials' declared durations, a lower bound" in "\n".join(plan.describe())
    [other] = studyfile.load(write(tmp_path, GOOD))
    assert Plan.of(other).time() == "?"


def test_a_figure_whose_finding_is_not_a_claim_says_so(tmp_path: Path) -> None:
    """No claim: unjudged, and a finding that reads like one is named as prose with the way to judge it."""
    from netrepro.runner.manifest import judgement_lines, judgement_of

    [fig] = studyfile.load(write(tmp_path, GOOD.replace("series = [", 'finding = "IW 10 beats IW 3"\nseries = [')))
    assert not fig.claims
    [head, *_] = judgement_lines(judgement_of(fig, [], []))
    assert head.startswith("verdict: unjudged: the figure's finding ('IW 10 beats IW 3') is prose, not a claim")
    assert "[[figure.claim]]" in head
    [plain] = studyfile.load(write(tmp_path, GOOD))
    assert (
        judgement_lines(judgement_of(plain, [], []))[0]
        == "verdict: unjudged (the figure states no claim of its source)"
    )


def test_the_docs_show_the_example_as_it_is() -> None:
    page = (REPO / "docs" / "your-own-study.md").read_text(encoding="utf-8")
    shown = page.split("```toml\n", 1)[1].split("```\n", 1)[0]
    assert shown == EXAMPLE.read_text(encoding="utf-8")


def test_a_study_file_declares_its_variation_as_a_study_does(tmp_path: Path) -> None:
    """`variation = { jitter, why }` is the study's Variation: its figures' trials take the jitter as a built-in
    study's do (variation=study); a file without one varies nothing; a bad one is refused, naming it."""
    from netrepro.studykit import variation

    [example] = studyfile.load(EXAMPLE)
    assert example.variation.jitter == iw.FIG2.variation.jitter and str(example.variation.jitter) == "1ms"
    [plain] = studyfile.load(write(tmp_path, GOOD))
    assert plain.variation == variation.NO_VARIATION
    varied = variation.Variation.of("2ms", "r").applied({"rtt": "50ms", variation.KEY: variation.STUDY})
    assert varied == {"rtt": "50ms", "variation": "study", "jitter": "2ms"}
    for bad, why in (
        ('variation = "1ms"', "give variation = { jitter"),
        ('variation = { jitter = "1ms" }', "give variation = { jitter"),
        ('variation = { jitter = "1ms", why = "" }', "the reason not empty"),
        ('variation = { jitter = "5 parsec", why = "r" }', "variation's jitter: variation jitter '5 parsec'"),
        ('variation = { jitter = "2s", why = "r" }', "allowed range is 0ms to 1s"),
    ):
        text = GOOD.replace('study = "mine"', f'study = "mine"\n{bad}', 1)
        with pytest.raises(studyfile.StudyFileError, match=re.escape(why)):
            studyfile.load(write(tmp_path, text))
