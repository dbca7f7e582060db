"""A kernel probe unloads the modules it loaded: which, and in what order, from /proc/modules.

The fixtures were captured in the stock-kernel lane's guest (Debian's 6.1)
around one NFQUEUE probe (tests/guest/test_probes.py prints them): nine
modules came with it, three of them still held by the probe's namespace,
which the kernel tears down after the probe's process has exited.
"""

import subprocess
import time
from pathlib import Path

import pytest

from ground import modules, proc

FIXTURES = Path(__file__).parent.parent / "fixtures"
BEFORE = (FIXTURES / "proc_modules_before_nfqueue_probe.txt").read_text()
AFTER = (FIXTURES / "proc_modules_after_nfqueue_probe.txt").read_text()
PROBE_LOADED = {"br_netfilter", "bridge", "stp", "llc", "iptable_filter", "xt_NFQUEUE", "xt_physdev", "ip_tables",
                "x_tables"}  # fmt: skip
HELD_BY_THE_DYING_NAMESPACE = ("iptable_filter", "xt_NFQUEUE", "xt_physdev")


def released(text: str) -> str:
    """AFTER once the namespace is gone: its three rules' modules at refcount 0."""
    lines = []
    for line in text.splitlines(keepends=True):
        fields = line.split(" ")
        if fields[0] in HELD_BY_THE_DYING_NAMESPACE:
            fields[2] = "0"
        lines.append(" ".join(fields))
    return "".join(lines)


def assert_users_first(order: list[str], text: str) -> None:
    loaded = modules.parse_proc_modules(text)
    for i, name in enumerate(order):
        for user in loaded[name].used_by:
            assert user in order[:i], f"{name} before its user {user}: {order}"


def test_parse_reads_name_refcount_users_and_state() -> None:
    loaded = modules.parse_proc_modules(AFTER)
    assert loaded["x_tables"] == modules.LoadedModule(
        "x_tables", 4, ("iptable_filter", "xt_NFQUEUE", "xt_physdev", "ip_tables"), "Live"
    )
    assert loaded["br_netfilter"].used_by == () and loaded["br_netfilter"].refcount == 0
    assert set(loaded) - set(modules.parse_proc_modules(BEFORE)) == PROBE_LOADED


def test_what_the_namespace_still_holds_is_left_for_now() -> None:
    order = modules.modules_to_unload(BEFORE, AFTER)
    assert order == ["br_netfilter", "bridge", "stp", "llc"]
    assert_users_first(order, AFTER)


def test_once_released_every_module_the_probe_loaded_goes_users_first() -> None:
    order = modules.modules_to_unload(BEFORE, released(AFTER))
    assert set(order) == PROBE_LOADED
    assert_users_first(order, AFTER)


def test_modules_loaded_before_the_probe_are_never_unloaded() -> None:
    assert modules.modules_to_unload(BEFORE, BEFORE) == []
    assert modules.modules_to_unload(AFTER, released(AFTER)) == []


def test_a_module_still_loading_or_held_by_an_older_one_stays() -> None:
    before = "x_tables 61440 0 - Live 0x0\n"
    after = "x_tables 61440 1 ip_tables, Live 0x0\nip_tables 36864 0 - Loading 0x0\nnew_one 100 1 - Live 0x0\n"
    assert modules.modules_to_unload(before, after) == []


def test_unload_waits_for_the_namespace_then_removes_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first read shows the held modules, later reads show them released; rmmod takes effect."""
    reads = 0
    text = AFTER
    removed: list[str] = []

    def read() -> str:
        nonlocal reads, text
        reads += 1
        if reads > 2:
            text = released(text)
        return text

    def fake_run(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        nonlocal text
        assert argv[0] == "rmmod" and len(argv) == 2
        removed.append(argv[1])
        text = "".join(line for line in text.splitlines(keepends=True) if line.split()[0] != argv[1])
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(modules, "_read_proc_modules", read)
    monkeypatch.setattr(proc, "run", fake_run)  # kernel runs rmmod through proc.run
    monkeypatch.setattr(time, "sleep", lambda _: None)
    modules.unload_modules_loaded_since(BEFORE, settle=5)
    assert set(removed) == PROBE_LOADED
    assert removed[:4] == ["br_netfilter", "bridge", "stp", "llc"]
    assert set(modules.parse_proc_modules(text)) == set(modules.parse_proc_modules(BEFORE))


# -- which modules a run may remove: only its own, and only when nothing else holds them -------------


def test_a_run_removes_what_it_loaded_with_its_dependencies_and_leaves_what_others_loaded() -> None:
    """The run asked for br_netfilter (which brought bridge, stp and llc); the NFQUEUE rules' modules
    appeared meanwhile for someone else: they are left, and named."""
    owned = modules.ownership(BEFORE, released(AFTER), {"br_netfilter"})
    assert owned.unload == ["br_netfilter", "bridge", "stp", "llc"]
    assert_users_first(owned.unload, AFTER)
    assert owned.held == []
    assert owned.others == sorted(PROBE_LOADED - {"br_netfilter", "bridge", "stp", "llc"})


def test_a_module_of_the_runs_that_another_module_uses_or_something_holds_is_left() -> None:
    """xt_physdev brought x_tables, which three modules of someone else's use: x_tables stays.
    xt_NFQUEUE is still held by a rule (refcount 1): it stays until released."""
    owned = modules.ownership(BEFORE, released(AFTER), {"xt_physdev"})
    assert (owned.unload, owned.held) == (["xt_physdev"], ["x_tables"])
    held = modules.ownership(BEFORE, AFTER, {"xt_NFQUEUE"})
    assert (held.unload, held.held) == ([], ["x_tables", "xt_NFQUEUE"])


def test_a_run_that_loaded_a_dependency_leaves_it_while_another_programs_module_uses_it() -> None:
    """The run loaded bridge (with stp and llc); another program then loaded br_netfilter, which uses it."""
    owned = modules.ownership(BEFORE, released(AFTER), {"bridge"})
    assert owned.unload == [] and owned.held == ["bridge", "llc", "stp"]
    assert "br_netfilter" in owned.others


def test_a_module_loaded_before_the_run_is_never_the_runs() -> None:
    owned = modules.ownership(BEFORE, released(AFTER), {"kvm_amd", "overlay", "virtio"})
    assert owned.unload == [] and owned.held == [] and owned.others == sorted(PROBE_LOADED)


def test_unload_owned_removes_only_the_runs_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    text = released(AFTER)
    removed: list[str] = []

    def fake_run(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        nonlocal text
        removed.append(argv[1])
        text = "".join(line for line in text.splitlines(keepends=True) if line.split()[0] != argv[1])
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(modules, "_read_proc_modules", lambda: text)
    monkeypatch.setattr(proc, "run", fake_run)
    left = modules.unload_owned(BEFORE, {"br_netfilter"}, settle=0)
    assert removed == ["br_netfilter", "bridge", "stp", "llc"]
    assert left.unload == [] and left.held == [] and "xt_physdev" in left.others
