"""The preflight, with every probe replaced: no root, no kernel probe, nothing built."""

from __future__ import annotations

from pathlib import Path

import pytest

import expts
from ground import kernel
from ground.errors import SetupError, UserError
from kmod import loader
from netrepro.front import cli
from netrepro.runner import preflight, sweep
from netrepro.runner.workloads import WORKLOADS
from topologies import emulation
from topologies.emulation import ShaperUnavailable


def _never(*args: object) -> bool:
    raise AssertionError("the preflight went past the input check")


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """A root machine with every tool, netem, reno and cubic built in, and the variants loadable as BPF."""
    state: dict[str, object] = {"missing": set(), "backend": "netem"}
    monkeypatch.setattr(preflight, "is_root", lambda: True)
    monkeypatch.setattr(preflight, "on_path", lambda tool: tool not in state["missing"])  # type: ignore[operator]
    monkeypatch.setattr(preflight, "kernel_congestion_controls", lambda: ["reno", "cubic"])
    monkeypatch.setattr(emulation, "choose_backend", lambda requested: state["backend"])
    monkeypatch.setattr(loader, "loadable", lambda name, requested=None: requested or "bpf")
    return state


def test_an_unknown_cc_is_a_user_error_listing_the_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight, "kernel_congestion_controls", lambda: ["reno", "cubic"])
    monkeypatch.setattr(preflight, "is_root", _never)  # bad input is refused first, root or not
    allowed = "reno, cubic, cubic_plus, reno_beta, newcwv, bic, .*, yeah"  # the kernel's, the variants, the ports
    with pytest.raises(UserError, match=rf"--cc typo: .*allowed: {allowed}$"):
        preflight.preflight(preflight.lab_needs("check", "typo", "auto", None))


def test_set_cc_is_named_as_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight, "kernel_congestion_controls", lambda: ["reno", "cubic", "bbr"])
    monkeypatch.setattr(preflight, "is_root", _never)
    fig = expts.find("iw/fig2")
    grid = fig.grid(True, {"cc": "bbr2"})
    with pytest.raises(UserError, match=r"^--set cc=bbr2: .*allowed: reno, cubic, bbr, cubic_plus"):
        preflight.preflight(preflight.figure_needs(fig, grid, {"cc": "bbr2"}, "auto", None))


def test_not_root_is_a_setup_error_naming_sudo(machine: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight, "is_root", lambda: False)
    with pytest.raises(SetupError, match="check needs root.*sudo"):
        preflight.preflight(preflight.lab_needs("check", "cubic", "auto", None))


def test_a_missing_tool_is_a_setup_error_naming_it(machine: dict[str, object]) -> None:
    machine["missing"] = {"h2load", "mnexec"}
    fig = expts.find("cubicplus/fig10")
    with pytest.raises(SetupError, match=r"run cubicplus/fig10 needs mnexec, h2load: not found on PATH"):
        preflight.preflight(preflight.figure_needs(fig, fig.grid(True), {}, "auto", None))


def test_tools_follow_the_workload(machine: dict[str, object]) -> None:
    machine["missing"] = {"h2load"}
    fig = expts.find("iw/fig2")  # downloads with curl: h2load is not needed
    assert fig.workload == "download"
    preflight.preflight(preflight.figure_needs(fig, fig.grid(True), {}, "auto", None))
    machine["missing"] = {"curl"}
    with pytest.raises(SetupError, match="needs curl"):
        preflight.preflight(preflight.figure_needs(fig, fig.grid(True), {}, "auto", None))


def test_a_figure_needs_the_tools_its_workload_declares() -> None:
    for name, tools in (("cubicplus/fig3", {"h2load", "flock"}), ("iw/fig2", {"curl"}), ("spdy/betatable", set())):
        fig = expts.find(name)
        needs = preflight.figure_needs(fig, fig.grid(True), {}, "auto", None)
        assert set(WORKLOADS[fig.workload].tools) == tools and tools <= set(needs.tools)


def test_the_delay_line_needs_iptables(machine: dict[str, object]) -> None:
    machine["missing"] = {"iptables-legacy"}
    preflight.preflight(preflight.lab_needs("check", "cubic", "auto", None))  # netem: no iptables
    machine["backend"] = "delayline"
    with pytest.raises(SetupError, match="needs iptables-legacy"):
        preflight.preflight(preflight.lab_needs("check", "cubic", "auto", None))


def test_a_variant_needs_its_build_tools(machine: dict[str, object]) -> None:
    machine["missing"] = {"clang"}
    preflight.preflight(preflight.lab_needs("check", "cubic_plus", "auto", "lkm"))
    with pytest.raises(SetupError, match="needs clang"):
        preflight.preflight(preflight.lab_needs("check", "cubic_plus", "auto", "bpf"))


def test_a_variant_that_cannot_load_here_stops_the_run(
    machine: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(name: str, requested: str | None = None) -> str:
        raise loader.CongestionControlUnavailable("this kernel has neither loadable modules nor BPF struct_ops")

    monkeypatch.setattr(loader, "loadable", refuse)
    with pytest.raises(SetupError, match="neither loadable modules"):
        preflight.preflight(preflight.lab_needs("check", "reno_beta", "auto", None))


def test_no_shaper_stops_the_run(machine: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(requested: str) -> str:
        raise ShaperUnavailable("--shaper netem: this kernel has no sch_netem")

    monkeypatch.setattr(emulation, "choose_backend", unavailable)
    with pytest.raises(SetupError, match="no sch_netem"):
        preflight.preflight(preflight.lab_needs("check", "cubic", "netem", None))


def test_a_registered_variant_is_refused_by_loadable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "choose_impl", lambda name, requested=None: "bpf")
    monkeypatch.setattr(kernel, "congestion_controls", lambda: (["reno", "cubic", "cubic_plus"], []))
    monkeypatch.setattr(loader, "ledger_files", lambda: [])
    with pytest.raises(loader.CongestionControlUnavailable, match="already registered, not by netrepro"):
        loader.loadable("cubic_plus")
    assert loader.loadable("newcwv") == "bpf"


# -- through the command line: refused before anything is made --------------------------


def test_check_cc_typo_exits_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("ground.ledgers.LEDGER_DIR", tmp_path)
    monkeypatch.setattr(preflight, "kernel_congestion_controls", lambda: ["reno", "cubic"])
    monkeypatch.setattr(preflight, "is_root", _never)
    assert cli.main(["check", "--cc", "typo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("run.sh check: --cc typo: ") and "cubic_plus" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_run_set_cc_exits_2_before_the_lock(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, lock_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(preflight, "kernel_congestion_controls", lambda: ["reno", "cubic"])
    monkeypatch.setattr(preflight, "is_root", _never)
    assert cli.main(["run", "iw/fig2", "--quick", "--set", "cc=bbr2", "--out", str(tmp_path / "out")]) == 2
    assert "--set cc=bbr2" in capsys.readouterr().err
    assert list(lock_dir.iterdir()) == []
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["iw"]  # --out was checked writable, no more
    assert list((tmp_path / "out" / "iw").iterdir()) == []


def test_run_missing_tool_exits_1_before_the_lab(
    machine: dict[str, object], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine["missing"] = {"curl"}
    monkeypatch.setattr(sweep, "run_trials", _never)
    assert cli.main(["run", "iw/fig2", "--quick", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("run.sh run: run iw/fig2 needs curl: not found on PATH") and "Traceback" not in err
    assert not (tmp_path / "iw" / "fig2.csv").exists()


def test_plot_only_needs_no_preflight(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(preflight, "is_root", _never)
    monkeypatch.setattr(preflight, "check_machine", _never)
    assert cli.main(["run", "iw/fig2", "--quick", "--plot-only", "--out", str(tmp_path)]) == 0


def test_pacing_with_fq_needs_sch_fq(machine: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    fig = expts.find("newcwv/table2")
    grid = fig.grid(False, {"pacer": "fq"})
    needs = preflight.figure_needs(fig, grid, {"pacer": "fq"}, "auto", None)
    assert needs.qdiscs == ("fq",)
    monkeypatch.setattr(preflight, "qdisc_available", lambda kind: False)
    with pytest.raises(SetupError, match=r"pacer=fq needs the fq qdisc \(sch_fq\).*pacer=auto"):
        preflight.preflight(needs)
    # auto falls back to TCP's own pacing: nothing to refuse
    assert preflight.figure_needs(fig, fig.grid(), {}, "auto", None).qdiscs == ()


def test_a_pipeack_trace_is_refused_before_anything_is_built_where_it_cannot_be_read() -> None:
    fig = expts.find("newcwv/fig5")
    preflight.figure_needs(fig, fig.grid(True), {}, "auto", None)
    reno = [{**p, "cc": "reno"} for p in fig.grid(True)]  # a study file's figure could ask for it
    with pytest.raises(
        UserError, match=r"^newcwv/fig5: pipeack_trace=1 reads newcwv's own pipeACK; a trial has cc=reno "
    ):
        preflight.figure_needs(fig, reno, {}, "auto", None)
    with pytest.raises(UserError, match="labs side by side would share: run it without --jobs"):
        preflight.figure_needs(fig, fig.grid(True), {}, "auto", None, held=("newcwv",))


def test_an_aqm_the_kernel_lacks_is_refused_naming_the_lane_that_has_it(
    machine: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path's `qdisc` other than drop-tail needs its qdisc: refused before anything is built, naming the
    stock-kernel lane; the lab's own commands and `check --qdisc` the same."""
    fig = expts.find("iw/fig2")
    grid = [{**p, "qdisc": "fq_codel"} for p in fig.grid(True)]
    needs = preflight.figure_needs(fig, grid, {"qdisc": "fq_codel"}, "auto", None)
    assert needs.aqms == ("fq_codel",) and preflight.figure_needs(fig, fig.grid(True), {}, "auto", None).aqms == ()
    monkeypatch.setattr(preflight, "qdisc_available", lambda kind: False)
    lane = r"qdisc=fq_codel needs the fq_codel qdisc \(sch_fq_codel\).* stock-kernel lane has it: sudo ./run.sh --vm"
    with pytest.raises(SetupError, match=lane + " run iw/fig2"):
        preflight.preflight(needs)
    with pytest.raises(SetupError, match=lane + " check"):
        preflight.preflight(preflight.lab_needs("check", "cubic", "auto", None, "fq_codel"))
    monkeypatch.setattr(preflight, "qdisc_available", lambda kind: kind == "fq_codel")
    preflight.preflight(needs)
