"""The command line refuses bad input before it creates anything."""

import json
from pathlib import Path

import pytest

from netrepro.front import cli, options


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["check", "--rtt=-5ms"], "--rtt"),
        (["check", "--loss", "150%"], "--loss"),
        (["check", "--rate", "0"], "--rate"),
        (["shell", "--rtt", "10parsecs"], "--rtt"),
        (["shell", "--queue", "0p"], "--queue"),
        (["check", "--mtu", "100"], "--mtu"),
    ],
)
def test_bad_path_values_exit_2_naming_the_option(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ground.ledgers.LEDGER_DIR", tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert "allowed" in err or "unit" in err
    assert list(tmp_path.iterdir()) == []


def test_mtu_is_a_path_option() -> None:
    args = cli.build_parser().parse_args(["check", "--mtu", "3500"])
    assert options.parse_path(args).mtu == 3500
    assert options.parse_path(cli.build_parser().parse_args(["shell"])).mtu == 1500


def test_a_value_that_looks_like_an_option_is_refused_by_argparse(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["check", "--rtt", "-5ms"])
    assert exit_.value.code == 2
    assert "--rtt" in capsys.readouterr().err


def test_unknown_shaper_is_refused_by_argparse(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["check", "--shaper", "magic"])
    assert exit_.value.code == 2
    assert "--shaper" in capsys.readouterr().err


def test_plot_only_runs_no_trial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--plot-only draws from what the CSV holds (nothing here) and counts what is missing."""
    assert cli.main(["run", "cubicplus/fig10", "--quick", "--plot-only", "--out", str(tmp_path)]) == 0
    manifest = json.loads((tmp_path / "cubicplus" / "fig10.manifest.json").read_text())
    assert manifest["trials_missing"] == 2 * 4 * 1 and manifest["rows"] == 0  # levels x series x quick trials
    assert "8 trials missing, not run" in capsys.readouterr().out


def test_plot_only_and_fresh_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["run", "fig10", "--plot-only", "--fresh"])
    assert "not allowed with" in capsys.readouterr().err


@pytest.mark.parametrize(("value", "named"), [("lossy", "'lossy'"), (",", "','")])
def test_bench_ports_refuses_a_path_it_does_not_have(
    value: str, named: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ground.ledgers.LEDGER_DIR", tmp_path)
    assert cli.main(["bench", "ports", "--algorithms", "vegas", "--paths", value]) == 2
    err = capsys.readouterr().err
    assert f"--paths {named}" in err and "random, droptail, droptail100" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--algorithms", "nosuch"], "--algorithms 'nosuch': netrepro's own (cubic_plus"),
        (["--flows", "0"], "--flows 0: allowed range is 1 to 32"),
        (["--loss", "lots"], "lots"),
    ],
)
def test_bench_ssthresh_refuses_bad_input_before_it_builds_anything(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ground.ledgers.LEDGER_DIR", tmp_path)
    assert cli.main(["bench", "ssthresh", "--out", str(tmp_path / "out"), *args]) == 2
    assert said in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_output_cut_short_by_its_reader_ends_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run.sh list | head -1`: the reader went, and the next write raised BrokenPipeError; the command
    stops without an error of its own (before: "internal error: BrokenPipeError") and with 141, as a
    filter killed by SIGPIPE does."""

    def cut_short(args: object) -> int:
        print("figure  trials")
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setitem(cli.COMMANDS, "list", cut_short)
    assert cli.main(["list"]) == 141
    assert capsys.readouterr().err == ""
