"""Each key a trial may have is declared once; a trial is checked against them before anything runs."""

import dataclasses
from typing import Any

import pytest

import expts
from ground.errors import UserError
from ground.path import PathSpec
from ground.trials import trial_key
from netrepro.front import cli, options
from netrepro.runner import derive
from netrepro.runner.workloads import WORKLOADS, NoKeys
from netrepro.studykit import params, trial
from netrepro.studykit.spec import Figure
from netrepro.studykit.trial import path_params


def keys_of(name: str) -> dict[str, params.Key]:
    return params.trial_keys(WORKLOADS[expts.find(name).workload].keys)


def derived(*argv: str) -> Figure:
    args = cli.build_parser().parse_args(["run", *argv])
    return derive.derived_figure(expts.find(args.figure), args)


def test_every_declared_figure_has_only_keys_its_consumers_take() -> None:
    for fig in expts.all_figures():
        keys = params.trial_keys(WORKLOADS[fig.workload].keys)
        for setting in [*fig.grid(), *fig.grid(quick=True)]:
            assert trial.problems(setting, keys) == [], fig.full_name


def test_a_misspelt_key_in_a_figure_spec_is_refused() -> None:
    fig = expts.find("cubicplus/fig3")
    misspelt = dataclasses.replace(fig, fixed={**fig.fixed, "pgae": "small"})
    with pytest.raises(UserError, match="'pgae' is not a key any part of a trial takes"):
        trial.check_grid(misspelt.full_name, misspelt.grid(), keys_of("cubicplus/fig3"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["cubicplus/fig3", "--set", "page=huge"], "--set page=huge: one of tiny, small, medium, large"),
        (["cubicplus/fig3", "--set", "initcwnd=2000"], "--set initcwnd=2000: a whole number from 1 to 1024"),
        (["cubicplus/fig3", "--set", "initcwnd=16.5"], "--set initcwnd=16.5: a whole number"),
        (["iw/fig2", "--set", "protocol=spdy"], "--set protocol=spdy: one of http/1.1, h2c, h2"),
        (["iw/fig2", "--set", "n=6"], "n is a parameter of cubic_plus, and the trial's cc is 'cubic'"),
        (["iw/fig2", "--set", "slow_start_after_idle=2"], "one of 0, 1"),
        (["spdy/conns", "--set", "duration_s=forever"], "--set duration_s=forever: a number"),
        (["spdy/conns", "--set", "cc_params=n"], "--set 'cc_params=n'"),
    ],
)
def test_bad_values_are_refused_with_what_was_typed_and_what_is_allowed(argv: list[str], message: str) -> None:
    with pytest.raises(UserError) as refused:
        derived(*argv)
    assert message in str(refused.value)


def test_the_mtu_is_a_path_key() -> None:
    keys = keys_of("iw/fig2")
    assert keys["mtu"].parse("3500") == 3500
    with pytest.raises(ValueError, match="a whole number from 576 to 9000"):
        keys["mtu"].parse("100")
    fig = derived("iw/fig2", "--set", "mtu=3500")
    assert all(p["mtu"] == 3500 for p in fig.grid())
    assert {PathSpec.parse(**path_params(p)).mtu for p in fig.grid()} == {3500}
    with pytest.raises(UserError, match="--set mtu=100: a whole number from 576 to 9000"):
        derived("iw/fig2", "--set", "mtu=100")


def test_jitter_is_a_path_key() -> None:
    keys = keys_of("newcwv/pacing")
    assert keys["jitter"].parse("3000us") == "3ms"
    with pytest.raises(ValueError, match="allowed range is 0ms to 1s"):
        keys["jitter"].parse("2s")
    fig = derived("newcwv/pacing", "--set", "jitter=3ms")
    assert {PathSpec.parse(**path_params(p)).jitter.ms for p in fig.grid()} == {3.0}
    with pytest.raises(UserError, match="--set jitter=3: "):
        derived("newcwv/pacing", "--set", "jitter=3")


def test_set_takes_a_key_the_figure_does_not_fix() -> None:
    fig = derived("cubicplus/fig3", "--set", "slow_start_after_idle=0")
    assert all(p["slow_start_after_idle"] == 0 for p in fig.grid())


def test_values_take_their_keys_types() -> None:
    keys = keys_of("spdy/conns")
    assert keys["duration_s"].parse("2.5") == 2.5
    assert keys["rate"].parse("3000kbit") == "3mbit"
    assert keys["loss"].parse("0.5%") == "0.5%"
    assert keys["initcwnd"].parse("16") == 16
    with pytest.raises(ValueError, match="did you mean 2%"):
        keys["loss"].parse("2")


def test_workloads_lists_every_workload_with_its_keys_and_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["workloads"]) == 0
    out = capsys.readouterr().out
    for w in WORKLOADS.values():
        assert f"{w.name}: " in out and ", ".join(w.metrics) in out
    assert "page                   one of tiny, small, medium, large" in out
    assert "initcwnd               a whole number from 1 to 1024" in out


def test_a_page_is_a_parameter() -> None:
    fig = derived("cubicplus/fig3", "--set", "page=20x50kb+html")
    assert fig.fixed["page"] == "20x50KB" and fig.directory == "cubicplus/fig3@page=20x50KB"
    with pytest.raises(UserError, match="--set page=20x0KB: an object has 1 B"):
        derived("cubicplus/fig3", "--set", "page=20x0KB")


def test_the_path_keys_are_declared_once_and_the_path_takes_exactly_them() -> None:
    """params.PATH_PARAMS is the one declaration: ground.path's PathSpec.parse takes exactly its keys, and a
    path without any is the one its declared defaults give; `shell` and `check` offer an option per key
    with that default and help (before, cli.path_options declared them again, defaults and help apart)."""
    import inspect

    taken = [name for name in inspect.signature(PathSpec.parse).parameters if name != "cls"]
    assert sorted(taken) == sorted(params.PATH_KEYS)
    declared = {k.name: k.default for k in params.PATH_PARAMS if k.default is not None}
    assert PathSpec.parse() == PathSpec.parse(**declared)
    parser = options.path_options()
    for key in params.PATH_PARAMS:
        (action,) = [a for a in parser._actions if key.option in a.option_strings]
        assert action.default == key.default and key.help in str(action.help), key.name
    args = parser.parse_args(["--rate-up", "2mbit", "--loss", "1%"])
    assert options.parse_path(args) == PathSpec.parse(rate_up="2mbit", loss="1%")


def test_a_workload_reads_its_keys_typed_and_with_the_defaults_declared_beside_them() -> None:
    """Each workload's parameters are a dataclass of its keys, each field one declaration with its default
    (before: defaults at the point of use, duration_s 10, 30 or 120 and protocol http/1.1 or h2c, unseen by
    `run.sh workloads`); a trial reads them once, each in the key's type."""

    def keys(workload: str, setting: dict[str, object]) -> Any:
        return trial.build(setting, 0, "rtt", WORKLOADS[workload].keys_type).workload

    bulk = keys("bulk", {"duration_s": "20", "rtt": "20ms"})
    assert bulk.duration_s == 20.0 and isinstance(bulk.duration_s, float)
    assert (bulk.protocol, bulk.object_bytes) == ("h2c", 20_000_000)
    assert bulk.connections is None  # no default: the client's own (six for HTTP/1.1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        bulk.duration_s = 1
    download = keys("download", {"object_bytes": "37000"})
    assert (download.protocol, download.object_bytes) == ("http/1.1", 37000)
    assert keys("page_load", {"page": "small"}).protocol == "h2c"
    competing = keys("competing", {})
    assert (competing.duration_s, competing.window_s) == (30, 10.0)
    assert keys("long_flow", {}).duration_s == 120
    bursts = keys("http_bursts", {"burst_kb": 80, "bulk": 0})
    assert (bursts.idle_s, bursts.repeats, bursts.bulk) == ("1", 1, 0)
    for w in WORKLOADS.values():  # one declaration per key: the fields are the keys, by name
        assert [f.name for f in dataclasses.fields(w.keys_type)] == [k.name for k in w.keys], w.name


def test_a_trial_is_read_once_into_typed_parts() -> None:
    """Path, hosts, congestion control (a variant's tuning resolved from its own keys and cc_params),
    series and level: read here, and nowhere below by a key's name."""
    setting = {"rtt": "100ms", "rate": "3000kbit", "cc": "cubic_plus", "n": 6, "initcwnd": "10",
               "slow_start_after_idle": 0, "series": "n=6", "page": "small"}  # fmt: skip
    made = trial.build(setting, 2, "initcwnd", WORKLOADS["page_load"].keys_type)
    assert made.key == trial_key(setting, 2) and made.index == 2 and made.setting == setting
    assert made.path == PathSpec.parse(rtt="100ms", rate="3mbit")
    assert (made.hosts.initcwnd, made.hosts.slow_start_after_idle, made.hosts.pacer) == (10, False, None)
    assert made.cc.name == "cubic_plus" and made.cc.ours and made.cc.tuning["n"] == 6
    assert (made.series, made.level, made.workload.page) == ("n=6", "10", "small")
    assert trial.build({"cc": "bbr"}, 0, "cc", NoKeys).cc == trial.CongestionControl("bbr")


def test_a_declared_figure_with_a_bad_value_is_refused_when_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only in this suite: `run` checks a declared figure's grid as it checks a study file's."""
    from netrepro.front import figure_commands

    fig = expts.find("cubicplus/fig3")
    bad = dataclasses.replace(fig, fixed={**fig.fixed, "initcwnd": 2000})
    monkeypatch.setattr(expts, "find", lambda name: bad if name == fig.full_name else None)
    args = cli.build_parser().parse_args(["run", fig.full_name, "--dry-run"])
    with pytest.raises(UserError, match=r"cubicplus/fig3: .*initcwnd"):
        figure_commands.cmd_run(args)
