"""Bad input that once ended in a traceback: refused in one line that names what was
given and what is allowed, before anything is built, nothing left behind; and what is not bad input
(a malformed stored manifest, an unloaded kernel module, a corrupt cache, a full disk) handled in one
line or without a word too much."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ground import kernel, logs, modules
from ground.errors import SetupError
from ground.results import REFERENCE, REPO
from ground.trials import TrialLog
from netrepro.front import cli, report
from netrepro.lanes import vm
from netrepro.runner import sweep
from netrepro.runner.session import Session
from netrepro.runner.workloads import NoKeys
from netrepro.studykit import params, trial

GOOD_STUDY = """
study = "mine"

[[figure]]
name = "dl"
title = "Download time ({rate})"
workload = "download"
y = "download_time_ms"
x = { factor = "initcwnd", levels = [3, 10], quick = [3] }
fixed = { rtt = "50ms", rate = "3mbit", cc = "cubic", protocol = "http/1.1", object_bytes = 37000 }
"""
STORED_CSV = REFERENCE / "iw" / "fig2.csv"


def _study(tmp: Path, old: str = "", new: str = "", data: bytes | None = None) -> str:
    path = tmp / "given" / "my.toml"
    path.write_bytes(data if data is not None else GOOD_STUDY.replace(old, new, 1).encode())
    return str(path)


def _bad_csv(tmp: Path, kind: str, at: Path) -> None:
    """The stored iw/fig2.csv spoilt at `at`: a byte that is not UTF-8, a 200 kB field, or a symbolic link."""
    good = STORED_CSV.read_bytes()
    at.parent.mkdir(parents=True, exist_ok=True)
    if kind == "not utf-8":
        at.write_bytes(good.replace(b"cubic", b"cub\xe9c", 1))
    elif kind == "200 kB field":
        head, first, rest = good.split(b"\n", 2)
        at.write_bytes(b"\n".join([head, first.rsplit(b",", 1)[0] + b',"' + b"x" * 200_000 + b'"', rest]))
    else:
        copy = tmp / "given" / "elsewhere.csv"
        copy.write_bytes(good)
        at.symlink_to(copy)


CSV_SAYS = {
    "not utf-8": "line 2: not UTF-8 (byte 0xe9",
    "200 kB field": "line 2: a field longer than 131072 characters",
    "symlink": "a symbolic link (to ",
}


def _csv_case(command: str, kind: str) -> Callable[[Path], tuple[list[str], str]]:
    def make(tmp: Path) -> tuple[list[str], str]:
        out = tmp / "given" / "out"
        if command == "merge":
            given = tmp / "given" / "shard1.csv"
            _bad_csv(tmp, kind, given)
            return ["merge", str(given), "--into", str(tmp / "into")], f"merge: {given}: {CSV_SAYS[kind]}"
        _bad_csv(tmp, kind, out / "iw" / "fig2.csv")
        extra = ["--plot-only"] if command == "--plot-only" else []  # else: a resumed run
        return ["run", "iw/fig2", "--out", str(out), *extra], f"{out}/iw/fig2.csv: {CSV_SAYS[kind]}"

    return make


# Each case: (argv, the message's words) from the test's directory; exit 2 unless EXIT says otherwise.
CASES: dict[str, Callable[[Path], tuple[list[str], str]]] = {
    "study file not UTF-8": lambda t: (
        ["run", _study(t, data=GOOD_STUDY.replace("Download", "T\xe9l\xe9chargement").encode("latin-1"))],
        "my.toml: not UTF-8 text (byte 0xe9 at offset",
    ),
    "title with a lone brace": lambda t: (
        ["run", _study(t, "Download time ({rate})", "Download {")],
        "figure 'dl': title 'Download {': Single '{' encountered in format string; a {KEY} field",
    ),
    "title field with an attribute": lambda t: (
        ["run", _study(t, "Download time ({rate})", "{rate.nope}")],
        "title '{rate.nope}': field {rate.nope} is not a KEY; a {KEY} field is filled from the "
        "fixed parameters (rtt, rate, cc, protocol, object_bytes); {{ and }} are braces",
    ),
    "title field no fixed parameter": lambda t: (
        ["run", _study(t, "({rate})", "({rates})")],
        "'rates' is not a fixed parameter",
    ),
    "title field with a bad format": lambda t: (
        ["run", _study(t, "({rate})", "({rate:d})")],
        "field {rate}: Unknown format code 'd'",
    ),
    "title with broken mathtext": lambda t: (
        ["run", _study(t, "({rate})", r"in $\\frac{{$ ({rate})")],
        r"title: matplotlib cannot draw 'mine/dl: Download time in $\\frac{$ (3 Mbit/s)': between $ signs is "
        r"mathtext (Expected \frac{num}{den}",
    ),
    "y label with broken mathtext": lambda t: (
        ["run", _study(t, 'y = "download_time_ms"', 'y = "download_time_ms"\ny_label = "$x^$"')],
        "y_label: matplotlib cannot draw '$x^$'",
    ),
    "topology pairs as a string": lambda t: (
        ["run", _study(t, 'name = "dl"', 'name = "dl"\ntopology = { shape = "dumbbell", pairs = "2" }')],
        "figure 'dl': topology.pairs = '2': give a whole number",
    ),
    "topology cross as a string": lambda t: (
        ["run", _study(t, 'name = "dl"', 'name = "dl"\ntopology = { shape = "dumbbell", cross = "no" }')],
        "topology.cross = 'no': give true or false",
    ),
    "x_log as a string": lambda t: (["run", _study(t, 'name = "dl"', 'name = "dl"\nx_log = "yes"')], "x_log = 'yes'"),
    "shard 0/3 with --dry-run": lambda t: (
        ["run", "iw/fig2", "--shard", "0/3", "--dry-run"],
        "--shard '0/3': K is from 1 to N (3)",
    ),
    "shard 0/3": lambda t: (["run", "iw/fig2", "--shard", "0/3"], "--shard '0/3': K is from 1 to N (3)"),
    **{
        f"{kind} csv, {command}": _csv_case(command, kind)
        for command in ("--plot-only", "merge", "resume")
        for kind in CSV_SAYS
    },
    "report into a missing directory": lambda t: (
        ["report", "--out", str(t / "given" / "missing" / "x.html")],
        f"--out {t / 'given' / 'missing' / 'x.html'}: no such directory {t / 'given' / 'missing'}",
    ),
    "report into a directory": lambda t: (
        ["report", "--out", str(t / "given")],
        f"--out {t / 'given'}: a directory; give the page's file",
    ),
    "object of 2 GiB": lambda t: (
        ["run", "iw/fig2", "--set", "object_bytes=2147483647"],
        "--set object_bytes=2147483647: at most 1073741824 bytes here (1 GiB: built in memory, whole; the limit "
        "is the smaller of 1 GiB and a quarter of this machine's available memory, 64 GiB)",
    ),
    "object beyond a quarter of a small machine's memory": lambda t: (
        ["run", "iw/fig2", "--set", "object_bytes=600000000"],
        "--set object_bytes=600000000: at most 536870912 bytes here (512 MiB: built in memory, whole; the limit "
        "is the smaller of 1 GiB and a quarter of this machine's available memory, 2 GiB)",
    ),
}


# MemAvailable the case's machine has, GiB (else 64).
MEMORY = {"object beyond a quarter of a small machine's memory": 2}


def _tree(top: Path) -> set[str]:
    return {str(p.relative_to(top)) for p in top.rglob("*")}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_refused_in_one_line_and_nothing_is_made(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "given").mkdir()
    argv, message = CASES[case](tmp_path)
    if argv[0] == "run" and "--out" not in argv:
        argv += ["--out", str(tmp_path / "out")]  # not results/, were it not refused
    monkeypatch.setattr(params, "memory_available", lambda: MEMORY.get(case, 64) << 30)
    # A run that got past its checks would build a lab: here it stops, said loudly, instead.
    monkeypatch.setattr(cli, "needs_root", lambda args: False)
    monkeypatch.setattr(sweep, "run_figure", _never)
    results_before, given_before = _tree(REPO / "results"), _tree(tmp_path)
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err, err
    assert _tree(tmp_path) == given_before, "nothing made"
    assert _tree(REPO / "results") == results_before


def _never(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("the run began: the input was not refused")


def test_dry_run_says_the_shard(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "iw/fig2", "--quick", "--shard", "2/3", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "  --shard 2/3: 4 of the 12 trials are this shard's, on 1 of the 1 path settings" in out


def test_a_title_with_good_mathtext_and_a_dollar_is_drawn(tmp_path: Path) -> None:
    from netrepro.front import studyfile
    from netrepro.studykit import plot

    path = _study_file(tmp_path, GOOD_STUDY.replace("({rate})", r"in $\\frac{{1}}{{2}}$ of \\$5 ({rate})"))
    [fig] = studyfile.load(path)
    assert plot.drawn_text_problem(fig) is None
    assert fig.heading == r"Download time in $\frac{1}{2}$ of \$5 (3 Mbit/s)"


def _study_file(tmp: Path, text: str) -> Path:
    path = tmp / "study.toml"
    path.write_text(text)
    return path


# -- report over a malformed manifest: left out, named; the rest of the page written -------------


@pytest.mark.parametrize(
    ("manifest", "says"),
    [
        (b"[1, 2]", "not a manifest as a run writes it (a JSON list, not an object)"),
        (b'{"verification": "x"}', "not a manifest as a run writes it (AttributeError:"),
        (b'{"verdict": {"claims": [{"trials_needed": "many"}]}}', "not a manifest as a run writes it"),
        (b'{"rows": \xff}', "not JSON ("),
        (b'{"rows": ', "not JSON ("),
    ],
)
def test_report_leaves_out_a_malformed_manifest_naming_it(
    manifest: bytes, says: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tree = tmp_path / "stored"
    for name in ("fig2", "fig5a"):
        for suffix in (".manifest.json", ".png"):
            (tree / "iw").mkdir(parents=True, exist_ok=True)
            shutil.copy(REFERENCE / "iw" / f"{name}{suffix}", tree / "iw" / f"{name}{suffix}")
    bad = tree / "iw" / "fig5a.manifest.json"
    bad.write_bytes(manifest)
    with caplog.at_level(logging.WARNING, logger="netrepro.front.report"):
        out, entries = report.write(tree, tmp_path / "index.html")
    assert [e.fig.full_name for e in entries] == ["iw/fig2"]
    assert f"{bad}: {says}" in caplog.text and "left out of the page" in caplog.text
    assert "iw/fig2" in out.read_text() and "iw/fig5a" not in out.read_text()


def test_every_stored_manifest_is_well_formed() -> None:
    entries = report.stored(REFERENCE, REPO / "results")
    assert entries and all(report.malformed(e) is None for e in entries)


# -- a kernel congestion control that is an unloaded module: loaded through the run's ledger -----------


class _Ledger:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.did: list[tuple[str, Any]] = []

    def modprobe(self, module: str, before: Any) -> None:
        self.did.append(("modprobe", module))

    def allow_congestion_control(self, name: str) -> None:
        self.did.append(("allow", name))


@pytest.mark.parametrize(
    ("available", "loaded", "did"),
    [
        (["reno", "cubic"], "tcp_bbr 1 0 - Live 0x0\n", [("modprobe", "tcp_bbr"), ("allow", "bbr")]),
        (["reno", "cubic", "bbr"], "", [("allow", "bbr")]),  # built in, or loaded already
    ],
)
def test_a_kernel_cc_that_is_an_unloaded_module_is_loaded_through_the_ledger(
    available: list[str], loaded: str, did: list[tuple[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bbr resolves as a port does (kmod.loader): the kernel's own, its module loaded where it is not, in
    the run's ledger (which unloads it), then allowed in the lab's namespaces."""
    monkeypatch.setattr(kernel, "congestion_controls", lambda: (available, ["reno", "cubic"]))
    monkeypatch.setattr(modules, "proc_modules", lambda: loaded)
    ledger = _Ledger(tmp_path)
    session = object.__new__(Session)
    session.ledger = ledger  # type: ignore[assignment]
    assert session.congestion_control(trial.build({"cc": "bbr"}, 0, "cc", NoKeys)) == {"cc_impl": "kernel"}
    assert ledger.did == did


# -- a corrupt acceleration cache of the stock-kernel lane: detected again, said in the log ------------


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"\xff\xfe", b"[]", b'{"kernel": "6.1.0-56-amd64"}', b'{"accel": "warp"}', b""],
)
def test_a_corrupt_accel_cache_is_taken_as_absent(
    content: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / ".netrepro-vm-accel.json"
    cache.write_bytes(content)
    monkeypatch.setattr(vm, "qemu_version", lambda: "QEMU emulator version 7.2.0")
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # no /dev/kvm: no guest is booted
    stock = vm.StockKernel("6.1.0-56-amd64", Path("/boot/vmlinuz-6.1.0-56-amd64"), Path("/usr/src/h"))
    with caplog.at_level(logging.WARNING, logger="netrepro.lanes.vm"):
        found = vm.detect_accel(stock, None, cache)  # type: ignore[arg-type]
    assert found == {"accel": "tcg", "why": "no usable /dev/kvm"}
    assert str(cache) in caplog.text and "detecting the acceleration again" in caplog.text
    assert vm.saved_accel(cache) == {"kernel": stock.release, "qemu": "QEMU emulator version 7.2.0", **found}


# -- a full disk -------------------------------------------------------------------------------------


def test_a_full_disk_during_an_append_is_one_setup_error_naming_the_csv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "fig.csv"
    log = TrialLog(path)
    log.append({"trial_key": "a", "status": "ok"})
    before = path.read_bytes()

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(SetupError) as stopped:
        log.append({"trial_key": "b", "status": "ok"})
    assert str(stopped.value).startswith(f"{path}: cannot append the trial's row: No space left on device")
    assert "\n" not in str(stopped.value)
    monkeypatch.undo()
    assert path.read_bytes() == before


class _FullDisk:
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("failed_run", [True, False])
def test_a_log_file_on_a_full_disk_stops_without_a_traceback_per_line(
    failed_run: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    log = logging.getLogger("netrepro.runner.sweep")
    with (
        caplog.at_level(logging.WARNING, logger="netrepro"),
        contextlib.suppress(RuntimeError),
        logs.log_file(tmp_path, "fig") as path,
    ):
        [handler] = [h for h in logging.getLogger("netrepro").handlers if isinstance(h, logs._LogFile)]
        handler.stream = _FullDisk()  # type: ignore[assignment]
        for n in range(5):
            log.info("line %d", n)
        if failed_run:
            raise RuntimeError("the run's own error")
    assert "Logging error" not in capsys.readouterr().err
    cut = [r.getMessage() for r in caplog.records if "cut short" in r.getMessage()]
    assert cut == ([] if failed_run else [f"{path}: cut short: No space left on device"])


def test_a_full_disk_anywhere_else_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def full(args: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setitem(cli.COMMANDS, "list", full)
    assert cli.main(["list"]) == 1
    assert (
        capsys.readouterr().err == "run.sh list: No space left on device: free some space and run the command again\n"
    )
