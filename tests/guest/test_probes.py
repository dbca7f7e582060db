"""In Debian's stock kernel, with loadable modules: a feature probe unloads what it loaded."""

import subprocess
from pathlib import Path

from ground import kernel, modules
from topologies import shaping

PROC_MODULES = Path("/proc/modules")


def loaded() -> set[str]:
    return set(modules.parse_proc_modules(PROC_MODULES.read_text()))


def test_an_nfqueue_probe_loads_modules_and_unloads_them() -> None:
    before = PROC_MODULES.read_text()
    argv = ["unshare", "--net", "--", *shaping.nfqueue_rule("-A", "probe", 0)]
    subprocess.run(argv, check=True, capture_output=True, timeout=10)
    during = PROC_MODULES.read_text()
    # The two snapshots, for tests/fixtures (the module restore's unit test reads them).
    print("=== /proc/modules before ===\n" + before + "=== /proc/modules after ===\n" + during + "=== end ===")
    assert set(modules.parse_proc_modules(during)) > set(modules.parse_proc_modules(before))
    modules.unload_modules_loaded_since(before)
    assert loaded() == set(modules.parse_proc_modules(before))


def test_the_backend_probes_leave_the_loaded_modules_as_they_were() -> None:
    kernel.works_in_scratch_netns.cache_clear()
    before = loaded()
    assert kernel.netem_works() and kernel.ifb_works()
    assert kernel.works_in_scratch_netns(*shaping.nfqueue_rule("-A", "probe", 0))
    assert loaded() == before


def test_the_openvswitch_datapath_probe_finds_it_and_leaves_the_modules_as_they_were() -> None:
    """Debian's kernel ships openvswitch.ko: where it is not loaded, the probe loads it (with nf_conntrack,
    nsh, ...) and unloads them again."""
    kernel.openvswitch_datapath_works.cache_clear()
    before = loaded()
    assert kernel.openvswitch_datapath_works()
    assert loaded() == before
