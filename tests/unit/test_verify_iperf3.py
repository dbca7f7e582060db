"""verify's iperf3 runs: a UDP test whose handshake was lost to emulated loss runs again, where the caller allows it."""

import subprocess
from typing import Any

import pytest

from ground.proc import ROOT, CommandError
from netrepro.runner import verify

LOST = '{"start": {"connected": []}, "error": "unable to read from stream socket: "}'
GOOD = '{"end": {}}'


class FakeLab:
    def ip(self, host: str) -> str:
        return {"client": "10.0.0.1", "server": "10.0.0.2"}[host]

    client = ROOT


def replay(monkeypatch: pytest.MonkeyPatch, outputs: list[tuple[int, str]]) -> list[list[str]]:
    calls: list[list[str]] = []

    def once(lab: Any, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        code, out = outputs[len(calls) - 1]
        return subprocess.CompletedProcess(argv, code, out, "")

    monkeypatch.setattr(verify, "_iperf3_once", once)
    return calls


def test_a_lost_udp_handshake_is_run_again_and_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    calls = replay(monkeypatch, [(1, LOST), (0, GOOD)])
    out = verify._iperf3(FakeLab(), ["-u", "-R"], timeout=10, attempts=verify.UDP_ATTEMPTS)  # type: ignore[arg-type]
    assert out == (GOOD, 2)
    assert len(calls) == 2
    assert "handshake was lost" in caplog.text


def test_three_lost_handshakes_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = replay(monkeypatch, [(1, LOST)] * 3)
    with pytest.raises(CommandError):
        verify._iperf3(FakeLab(), ["-u", "-R"], timeout=10, attempts=verify.UDP_ATTEMPTS)  # type: ignore[arg-type]
    assert len(calls) == verify.UDP_ATTEMPTS


def test_a_test_is_run_once_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = replay(monkeypatch, [(1, LOST)])
    with pytest.raises(CommandError):
        verify._iperf3(FakeLab(), ["-R", "-t", "3"], timeout=10)  # type: ignore[arg-type]
    assert len(calls) == 1
