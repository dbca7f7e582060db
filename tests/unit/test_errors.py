"""Errors by kind: the exception tree, which trial errors are recorded, and what the command line says."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import expts
from ground import results
from ground.cgroups import CgroupError
from ground.errors import NetreproError, SetupError, TrialError, UserError
from ground.figurelock import FigureBusy
from ground.ledgers import LedgerError
from ground.parsers import ParseError
from ground.proc import ROOT, CommandError, NamespaceError
from ground.tcpprobe import TraceIncomplete, TraceUnavailable
from ground.trials import Row, TrialLog, read_rows
from ground.units import QuantityError
from kmod import loader
from netrepro.front import cli, figure_commands
from netrepro.lanes.vm import VmError
from netrepro.runner import attempts, sweep
from netrepro.runner.workloads import WORKLOADS, NoKeys, Workload
from netrepro.studykit.spec import Figure
from netrepro.studykit.trial import Trial, build_all
from servers.apache import ApacheError
from servers.clients import ProtocolMismatch, WorkloadError
from topologies.delayline import DelayLineError, Lateness
from topologies.emulation import ShaperUnavailable
from topologies.lab import LabError

KINDS = (UserError, SetupError, TrialError)


@pytest.mark.parametrize(
    ("cls", "kind"),
    [
        (QuantityError, UserError),
        (expts.UnknownFigure, UserError),
        (loader.CongestionControlInputError, UserError),
        (loader.CongestionControlUnavailable, SetupError),
        (ShaperUnavailable, SetupError),
        (LabError, SetupError),
        (DelayLineError, SetupError),
        (LedgerError, SetupError),
        (CgroupError, SetupError),
        (NamespaceError, SetupError),
        (VmError, SetupError),
        (ApacheError, SetupError),
        (TraceUnavailable, SetupError),
        (FigureBusy, SetupError),
        (sweep.VerificationFailed, SetupError),
        (sweep.RunAborted, SetupError),
        (TraceIncomplete, TrialError),
        (ParseError, TrialError),
        (WorkloadError, TrialError),
        (ProtocolMismatch, TrialError),
        (sweep.TrialTimeout, TrialError),
    ],
)
def test_every_project_exception_is_of_one_kind(cls: type[Exception], kind: type[NetreproError]) -> None:
    assert issubclass(cls, kind) and issubclass(cls, NetreproError)
    assert [k for k in KINDS if issubclass(cls, k)] == [kind]


def test_the_old_bases_still_hold_for_existing_except_clauses() -> None:
    assert issubclass(QuantityError, ValueError) and issubclass(ParseError, ValueError)
    assert issubclass(expts.UnknownFigure, LookupError)
    assert issubclass(loader.CongestionControlInputError, loader.CongestionControlError)
    assert issubclass(loader.CongestionControlUnavailable, loader.CongestionControlError)
    assert issubclass(NetreproError, RuntimeError)


# -- which exceptions a trial records --------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (sweep.TrialTimeout("no result within 5 s"), "timeout"),
        (ParseError("h2load", "no 'finished in' line", "garbage"), "failed"),
        (ProtocolMismatch("h2", "http/1.1", "curl"), "failed"),
        (CommandError(["curl", "http://x"], ROOT, 7, "connection refused"), "failed"),
        (TraceIncomplete("tcp_probe lost 3 events"), "failed"),
        (FileNotFoundError(2, "No such file or directory", "/tmp/h2load.log"), "failed"),
        (ApacheError("apache2 died"), None),
        (DelayLineError("no answer"), None),
        (TraceUnavailable("no tracepoint"), None),
        (QuantityError("--set", "x", "bad"), None),
        (TypeError("unsupported operand"), None),
        (KeyError("object_bytes"), None),
        (AttributeError("'NoneType' object has no attribute 'x'"), None),
        (NameError("name 'y' is not defined"), None),
        (AssertionError("install() first"), None),
        (ValueError("protocol 'h3': one of http/1.1, h2c, h2"), None),
    ],
)
def test_trial_outcome(exc: BaseException, status: str | None) -> None:
    assert sweep.trial_outcome(exc) == status


class _Lab:
    backend = "netem"
    switch_kind = "bridge"
    loss_repeatable = True
    # what each lateness() call returns after the one that opens a trial's window, in turn (None: netem's)
    late: ClassVar[list[Lateness | None]] = []

    def __init__(self, path: Any, *args: Any, **kwargs: Any) -> None:
        self.path = path
        self.windows = 0

    def reseed(self, seed: int) -> None:
        pass

    def lateness(self) -> Lateness | None:
        self.windows += 1
        if self.windows % 2 or not self.late:  # a trial's window opens
            return None
        return self.late.pop(0)

    def __enter__(self) -> _Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class _Ledger:
    cgroup = None

    def __enter__(self) -> _Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def temp_dir(self, prefix: str) -> Path:
        return Path("/nonexistent")


class _Apache:
    def error_log_tail(self) -> str:
        return ""


class _Session:
    # for each attempt in turn, whether its BPF congestion control repaired an ssthresh (empty: no BPF)
    repaired: ClassVar[list[bool]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.apache = _Apache()
        self.stopped = False
        self.repairs_read = 0
        self.repairs = 0

    def congestion_control(self, trial: Trial) -> dict[str, Any]:
        return {"cc_impl": "kernel"}

    def apply_hosts(self, trial: Trial) -> None:
        pass

    def ss_repairs(self, trial: Trial) -> int | None:
        if not self.repaired:
            return None
        self.repairs_read += 1
        if self.repairs_read % 2 == 0:  # the read after the workload: this attempt's repair, if any
            self.repairs += self.repaired.pop(0)
        return self.repairs

    def stop(self) -> None:
        pass


class _Verification:
    ok = True
    checks: ClassVar[list[Any]] = []

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "checks": []}


@contextlib.contextmanager
def _fake_lab(monkeypatch: pytest.MonkeyPatch, raises: list[BaseException | None]) -> Iterator[list[int]]:
    """run_trials on a lab of stand-ins whose workload raises, trial by trial, what `raises` lists."""
    calls: list[int] = []

    def workload(session: Any, trial: Trial, keys: NoKeys) -> dict[str, Any]:
        calls.append(trial.level)
        exc = raises[len(calls) - 1]
        if exc is not None:
            raise exc
        return {"metric": 1.0}

    monkeypatch.setattr(sweep, "Ledger", _Ledger)
    monkeypatch.setattr(sweep, "Lab", _Lab)
    monkeypatch.setattr(sweep, "Session", _Session)
    monkeypatch.setattr(sweep, "verify", lambda lab: _Verification())
    monkeypatch.setattr(results, "code_version", lambda: "test")
    monkeypatch.setitem(WORKLOADS, "stand_in", Workload("stand_in", workload, NoKeys, ("metric",), ()))
    yield calls


def _figure(levels: int) -> Figure:
    return Figure("t", "fig", "a test", "stand_in", "level", tuple(range(levels)), "metric", {"rtt": "10ms"})


def _run(fig: Figure, tmp_path: Path) -> list[Row]:
    csv_path = tmp_path / "fig.csv"
    todo = build_all(fig.grid(), 1, fig.x, NoKeys)
    sweep.run_trials(fig, todo, sweep.Options(out=tmp_path), TrialLog(csv_path))
    return read_rows(csv_path) if csv_path.exists() else []


def test_a_trial_error_is_recorded_and_the_run_goes_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    raises: list[BaseException | None] = [ParseError("curl", "not JSON", "x"), None, sweep.TrialTimeout("late")]
    with _fake_lab(monkeypatch, raises) as calls:
        rows = _run(_figure(3), tmp_path)
    assert calls == [0, 1, 2]
    assert [r["status"] for r in rows] == ["failed", "ok", "timeout"]
    assert "curl output: not JSON" in rows[0]["error"]


def _late(p99_ms: float) -> Lateness:
    return Lateness(packets=1000, median_ms=0.01, p99_ms=p99_ms, max_ms=p99_ms * 2)


def test_a_trial_the_delay_line_held_too_long_is_failed_and_run_again_after_a_pause(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Over its bound (ten of the 10 ms path's RTT tolerances: 5 ms), a trial's row is failed, saying how
    late; it runs again after a pause (LATE_PAUSES_S, longer the second time), three attempts at most, and
    the third late attempt stays failed; under the bound, a row records it."""
    pauses: list[float] = []  # every sleep: each trial's start offset (under the 10 ms RTT) and the pauses
    monkeypatch.setattr(time, "sleep", pauses.append)
    monkeypatch.setattr(_Lab, "late", [_late(6.0), _late(0.05), _late(9.0), _late(7.0), _late(8.0)])
    with _fake_lab(monkeypatch, [None] * 5) as calls:
        rows = _run(_figure(2), tmp_path)
    assert calls == [0, 0, 1, 1, 1]
    assert [r["status"] for r in rows] == ["failed", "ok", "failed", "failed", "failed"]
    assert "p99 6.000 ms over the bound 5.000 ms" in rows[0]["error"]
    assert rows[1]["late_p99_ms"] == "0.05" and rows[1]["late_bound_ms"] == "5.0"
    # a pause before each attempt after a late one, none after the last
    first, second = attempts.LATE_PAUSES_S
    assert [p for p in pauses if p >= 1] == [first, first, second] and 1 <= first < second
    assert attempts.late_bound_ms(1300.0) == 130.0 and attempts.late_bound_ms(20.0) == 5.0


def test_a_trial_whose_ssthresh_was_repaired_runs_again_until_a_clean_attempt_or_the_bound(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The ssthresh corruption (kmod/README.md) has no avoiding shape: a trial whose attempt met it runs again
    at once, without a pause, until an attempt is clean or SSTHRESH_ATTEMPTS (8) attempts met it; each attempt
    is a row, and a trial's repaired attempts run again do not count as failures in a row (five of them
    would stop the run)."""
    pauses: list[float] = []
    monkeypatch.setattr(time, "sleep", pauses.append)
    assert attempts.SSTHRESH_ATTEMPTS == 8
    # the first trial: seven repaired attempts, then a clean one; the second: eight repaired, and no ninth
    monkeypatch.setattr(_Session, "repaired", [True] * 7 + [False] + [True] * 8)
    with _fake_lab(monkeypatch, [None] * 16) as calls:
        rows = _run(_figure(2), tmp_path)
    assert calls == [0] * 8 + [1] * 8
    assert [r["status"] for r in rows] == ["failed"] * 7 + ["ok"] + ["failed"] * 8
    failed = [r for r in rows if r["status"] == "failed"]
    assert all(r["ssthresh_repaired"].lower() == "true" and "corrupted ssthresh" in r["error"] for r in failed)
    assert [p for p in pauses if p >= 1] == []
    # the caption counts them per series, of all that series' attempts; a run without any says nothing
    (line,) = attempts.discarded_for_ssthresh(rows)
    assert "corrupted ssthresh" in line and line.endswith(f": {rows[0].series} 15 of 16"), line
    assert attempts.discarded_for_ssthresh([r for r in rows if r.ok]) == []
    # the rule itself: lateness keeps its own bound (ATTEMPTS_AT_ONCE)
    assert attempts.attempt_again({"ssthresh_repaired": True}, 0, 7)
    assert not attempts.attempt_again({"ssthresh_repaired": True}, 0, 8)
    assert attempts.attempt_again({"late_over_bound": True}, 2, 5)
    assert not attempts.attempt_again({"late_over_bound": True}, 3, 0)
    assert not attempts.attempt_again({"status": "ok"}, 0, 0)


def test_a_trial_on_netem_records_no_lateness(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with _fake_lab(monkeypatch, [None]):
        (row,) = _run(_figure(1), tmp_path)
    assert row["status"] == "ok" and "late_p99_ms" not in row


@pytest.mark.parametrize("exc", [TypeError("bad operand"), KeyError("object_bytes"), ApacheError("died")])
def test_a_programming_or_setup_error_stops_the_run_without_a_row(
    exc: Exception, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with _fake_lab(monkeypatch, [None, exc, None]) as calls, pytest.raises(type(exc)):
        _run(_figure(3), tmp_path)
    assert calls == [0, 1]  # the third trial never ran
    assert [r["status"] for r in read_rows(tmp_path / "fig.csv")] == ["ok"]


# -- the command line ------------------------------------------------------------------


@pytest.mark.parametrize("out", ["/proc/x", "/proc/x/y"])
def test_an_unwritable_out_is_refused_naming_it(out: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "cubicplus/fig10", "--quick", "--plot-only", "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("run.sh run: --out /proc/x") and "writable" in err
    assert "Traceback" not in err


def test_an_out_that_is_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "results"
    a_file.write_text("not a directory")
    assert cli.main(["run", "cubicplus/fig10", "--quick", "--plot-only", "--out", str(a_file)]) == 2
    assert f"--out {a_file}" in capsys.readouterr().err
    assert a_file.read_text() == "not a directory"


def test_the_out_probe_leaves_only_what_was_there(tmp_path: Path) -> None:
    fig = expts.find("cubicplus/fig10")
    (tmp_path / "cubicplus").mkdir()
    (tmp_path / "cubicplus" / "fig10.csv").write_bytes(b"trial_key\r\n")
    assert figure_commands.writable_out(tmp_path / "." / "", fig) == tmp_path.resolve()
    assert [p.name for p in (tmp_path / "cubicplus").iterdir()] == ["fig10.csv"]
    assert (tmp_path / "cubicplus" / "fig10.csv").read_bytes() == b"trial_key\r\n"


@pytest.mark.parametrize("where", [".", "out", "docs/runs"])
def test_an_out_in_the_checkout_but_not_under_results_is_refused_before_anything_is_made(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own files would make the run's code +dirty (git status sees them); results/ and elsewhere are fine."""
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)  # a checkout, as git_state reads it
    monkeypatch.setattr(results, "REPO", checkout)
    fig = expts.find("cubicplus/fig10")
    with pytest.raises(UserError, match=r"^--into .*: inside the checkout .* not under its results/"):
        figure_commands.writable_out(checkout / where, fig, "--into")
    assert sorted(p.name for p in checkout.iterdir()) == [".git"]  # nothing made
    for allowed in (checkout / "results" / "mine", tmp_path / "elsewhere"):
        assert figure_commands.writable_out(allowed, fig) == allowed
        assert (allowed / "cubicplus").is_dir()


def test_a_bad_set_value_is_named_as_typed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "cubicplus/fig10", "--quick", "--set", "rate=abc", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--set rate=abc" in err and "--rate" not in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def _raising(exc: BaseException) -> Any:
    def command(args: Any) -> int:
        raise exc

    return command


def test_a_bug_is_one_line_without_v(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(cli.COMMANDS, "list", _raising(KeyError("object_bytes")))
    assert cli.main(["list"]) == 1
    err = capsys.readouterr().err
    assert err == "run.sh list: internal error: KeyError: 'object_bytes' (run with -v for the traceback)\n"


def test_a_bug_shows_its_traceback_under_v(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(cli.COMMANDS, "list", _raising(TypeError("bad operand")))
    assert cli.main(["list", "-v"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "TypeError: bad operand" in err


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (UserError("--x 'y': one of a, b"), 2),
        (SetupError("[client] tc qdisc add ...: exited 2: RTNETLINK answers: Invalid argument"), 1),
        (CommandError(["tc", "qdisc"], ROOT, 2, "RTNETLINK answers"), 1),
        (loader.CongestionControlInputError("--cc-param n=99: allowed range is 1 to 10"), 2),
    ],
)
def test_errors_by_kind_exit_codes(
    exc: NetreproError, code: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(cli.COMMANDS, "list", _raising(exc))
    assert cli.main(["list"]) == code
    err = capsys.readouterr().err
    assert err == f"run.sh list: {exc}\n"


def test_a_user_error_has_no_traceback_even_under_v(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(cli.COMMANDS, "list", _raising(UserError("--x 'y': one of a, b")))
    assert cli.main(["list", "-v"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_setup_error_shows_its_traceback_under_v(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(cli.COMMANDS, "list", _raising(SetupError("no sch_netem")))
    assert cli.main(["list", "-v"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and err.endswith("run.sh list: no sch_netem\n")


def test_unknown_figure_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "fig99"]) == 2
    assert "no figure 'fig99'" in capsys.readouterr().err


def test_cc_names_a_variant(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["cc", "set", "cubic_pls"]) == 2
    assert "'cubic_pls' is not a netrepro variant or port: name one of cubic_plus" in capsys.readouterr().err
