"""The command line refuses bad input before it creates anything."""

from pathlib import Path

import pytest

from netrepro import cli


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["check", "--rtt=-5ms"], "--rtt"),
        (["check", "--loss", "150%"], "--loss"),
        (["check", "--rate", "0"], "--rate"),
        (["shell", "--rtt", "10parsecs"], "--rtt"),
        (["shell", "--queue", "0p"], "--queue"),
    ],
)
def test_bad_path_values_exit_2_naming_the_option(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("netrepro.ledger.LEDGER_DIR", tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert "allowed" in err or "unit" in err
    assert list(tmp_path.iterdir()) == []


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
