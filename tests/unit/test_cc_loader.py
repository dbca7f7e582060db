"""The loader's checks and choices, without touching the kernel."""

import os
import subprocess
from pathlib import Path

import pytest

from ground import kernel
from ground.tcpprobe import ProbeSample, reductions
from kmod import loader


def test_parameters_are_checked_against_their_ranges() -> None:
    cubic_plus = loader.VARIANTS["cubic_plus"]
    assert loader.parse_params(cubic_plus, {"n": "6", "beta": 512}) == {"n": 6, "beta": 512}
    with pytest.raises(loader.CongestionControlError, match="allowed range is 1 to 10"):
        loader.parse_params(cubic_plus, {"n": "11"})
    with pytest.raises(loader.CongestionControlError, match="whole number"):
        loader.parse_params(cubic_plus, {"beta": "0.7"})
    with pytest.raises(loader.CongestionControlError, match="has no parameter 'r'"):
        loader.parse_params(cubic_plus, {"r": "500"})
    assert loader.parse_params(loader.VARIANTS["reno_beta"], {"r": "900"}) == {"r": 900}


def test_implementation_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel, "modules_supported", lambda: False)
    monkeypatch.setattr(kernel, "struct_ops_supported", lambda: True)
    assert loader.choose_impl("cubic_plus") == "bpf"
    with pytest.raises(loader.CongestionControlError, match="does not load modules"):
        loader.choose_impl("cubic_plus", "lkm")
    with pytest.raises(loader.CongestionControlError, match="--impl 'ebpf': choose one of kernel, lkm, bpf"):
        loader.choose_impl("cubic_plus", "ebpf")
    with pytest.raises(loader.CongestionControlInputError, match="cubic_plus is netrepro's own"):
        loader.choose_impl("cubic_plus", "kernel")
    monkeypatch.setattr(kernel, "modules_supported", lambda: True)
    monkeypatch.setattr(kernel, "lockdown", lambda: "none")
    monkeypatch.setattr(Path, "exists", lambda self: True)
    assert loader.choose_impl("cubic_plus") == "lkm"
    assert loader.choose_impl("cubic_plus", "bpf") == "bpf"


def kernel_with(monkeypatch: pytest.MonkeyPatch, built_in: list[str], modules: list[str]) -> None:
    """A kernel that has `built_in` registered and ships `modules` (tcp_<name>.ko)."""
    monkeypatch.setattr(kernel, "congestion_controls", lambda: (built_in, built_in))
    monkeypatch.setattr(kernel, "modules_supported", lambda: bool(modules))
    monkeypatch.setattr(kernel, "loadable_congestion_controls", lambda: modules)
    monkeypatch.setattr(kernel, "lockdown", lambda: "none")
    monkeypatch.setattr(kernel, "struct_ops_supported", lambda: True)


def test_a_port_resolves_to_the_kernels_own_where_it_has_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # this project's machines: no modules, reno, cubic and bbr built in
    kernel_with(monkeypatch, ["reno", "cubic", "bbr"], [])
    assert loader.choose_impl("vegas") == "bpf"
    assert loader.registered_name("vegas", "bpf") == "vegas"
    with pytest.raises(loader.CongestionControlUnavailable, match="has no vegas, neither built in nor as a module"):
        loader.choose_impl("vegas", "kernel")
    assert loader.resolution("vegas") == "bpf, netrepro's port"
    assert loader.resolution("cubic") == "kernel, built in"
    # a stock kernel: vegas ships as tcp_vegas.ko; the port, forced, runs beside it as bpf_vegas
    kernel_with(monkeypatch, ["reno", "cubic"], ["vegas", "bic"])
    assert loader.choose_impl("vegas") == "kernel"
    assert loader.choose_impl("vegas", "lkm") == "lkm"
    assert loader.choose_impl("vegas", "bpf") == "bpf"
    assert loader.registered_name("vegas", "bpf") == "bpf_vegas"
    assert loader.registered_name("vegas", "kernel") == "vegas"
    assert loader.resolution("vegas") == "kernel, module tcp_vegas"
    with pytest.raises(loader.CongestionControlUnavailable, match="ships no tcp_yeah module"):
        loader.choose_impl("yeah", "lkm")
    # built in: no module to load
    kernel_with(monkeypatch, ["reno", "cubic", "vegas"], ["bic"])
    with pytest.raises(loader.CongestionControlUnavailable, match="has it built in"):
        loader.choose_impl("vegas", "lkm")
    assert loader.choose_impl("vegas") == "kernel"


def test_every_port_has_a_source_and_the_thirteen_are_named() -> None:
    sources = {p.name.removesuffix(".bpf.c") for p in (Path(loader.HERE) / "bpf").glob("*.bpf.c")}
    assert set(loader.PORTS) <= sources, set(loader.PORTS) - sources
    assert set(loader.VARIANTS) <= sources
    assert len(loader.LINUX_SHIPS) == 13 and {"reno", "cubic"} <= set(loader.LINUX_SHIPS)
    for variant in loader.PORTS.values():
        assert variant.module == f"tcp_{variant.name}" and len(variant.bpf_map) <= 15  # BPF_OBJ_NAME_LEN


def test_an_unknown_algorithm_is_refused_naming_the_ones_there_are() -> None:
    with pytest.raises(loader.CongestionControlInputError, match="unknown congestion control 'compound'.*vegas"):
        loader.algorithm("compound")


def sample(t: float, cwnd: int, ssthresh: int, flow: str = "a>b") -> ProbeSample:
    return ProbeSample(t, flow, cwnd, ssthresh, 40000, 0, 0, 0)


def test_reductions_pair_the_window_before_with_the_threshold_after() -> None:
    unset = 2**31 - 1
    trace = [sample(0, 10, unset), sample(1, 100, unset), sample(2, 98, 70), sample(3, 71, 70), sample(4, 90, 70),
             sample(5, 88, 63), sample(6, 5, 5, flow="c>d"),
             # ssthresh moving with a growing window is no reduction
             sample(7, 140, 105), sample(8, 141, 105), sample(9, 142, 106)]  # fmt: skip
    assert reductions(trace) == [(100, 70), (90, 63)]


def test_a_module_built_for_the_running_kernel_is_not_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lane builds kmod/ on the host for the guest's kernel: the guest loads it as it is,
    and rebuilds only a module that is missing, older than its sources, or for another kernel."""
    vermagic = {"text": "6.1.0-56-amd64 SMP preempt mod_unload modversions \n"}
    monkeypatch.setattr(kernel, "release", lambda: "6.1.0-56-amd64")
    monkeypatch.setattr(loader, "run", lambda argv: subprocess.CompletedProcess(argv, 0, vermagic["text"], ""))
    for source in ("reno_beta.c", "Kbuild", "Makefile"):
        (tmp_path / source).write_text("")
    assert not loader.module_built_for_this_kernel("reno_beta", tmp_path)  # not built
    ko = tmp_path / "reno_beta.ko"
    ko.write_bytes(b"")
    os.utime(tmp_path / "reno_beta.c", (ko.stat().st_mtime + 5,) * 2)
    assert not loader.module_built_for_this_kernel("reno_beta", tmp_path)  # its source changed since
    os.utime(ko, (ko.stat().st_mtime + 10,) * 2)
    assert loader.module_built_for_this_kernel("reno_beta", tmp_path)
    vermagic["text"] = "6.18.44-fc-v782 SMP preempt mod_unload \n"
    assert not loader.module_built_for_this_kernel("reno_beta", tmp_path)  # built for another kernel


def test_the_lane_links_again_a_module_older_than_its_makefile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kbuild keeps a module when only the Makefile is newer; the guest's loader would then make it
    again at every load (about a minute under emulation), so the host removes it before make."""
    from netrepro.lanes import vm

    monkeypatch.setattr(loader, "run", lambda argv: subprocess.CompletedProcess(argv, 0, "6.1.0-56-amd64 SMP\n", ""))
    made: list[list[str]] = []
    monkeypatch.setattr(vm, "run", lambda argv, timeout: made.append(argv))
    for name in loader.VARIANTS:
        (tmp_path / f"{name}.c").write_text("")
        (tmp_path / f"{name}.ko").write_bytes(b"")
    (tmp_path / "Kbuild").write_text("")
    (tmp_path / "Makefile").write_text("")
    later = (tmp_path / "Makefile").stat().st_mtime + 10
    for name in loader.VARIANTS:  # every module built after its sources...
        os.utime(tmp_path / f"{name}.ko", (later,) * 2)
    os.utime(tmp_path / "Makefile", (later + 5,) * 2)  # ...but the Makefile changed since newcwv.ko
    for name in ("cubic_plus", "reno_beta"):
        os.utime(tmp_path / f"{name}.ko", (later + 10,) * 2)
    stock = vm.StockKernel("6.1.0-56-amd64", Path("/boot/vmlinuz"), Path("/usr/src/headers"))
    vm.build_modules(stock, tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.ko")) == ["cubic_plus.ko", "reno_beta.ko"]
    assert made == [["make", "-s", "-C", str(tmp_path), "KDIR=/usr/src/headers"]]
