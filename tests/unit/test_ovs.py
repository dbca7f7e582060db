"""Open vSwitch as the switch: choose_switch probes only what its answer needs; the commands are the switch's own.

The ovs-vsctl listings were captured from OVS 3.1 (netdev datapath) in a
scratch namespace: two veth ports whose peers were down, then up, and a port
naming no device.  The generic netlink dump was captured on this project's
6.18 kernel, which has no openvswitch datapath.
"""

import struct
import subprocess
from pathlib import Path

import pytest

from ground import kernel, modules, proc
from topologies import ovs

FIXTURES = Path(__file__).parent.parent / "fixtures"
FILES = ovs.OvsFiles(Path("/tmp/netrepro-ovs-s1-abc"))


class Probes:
    """Fake probes: the answer each gives, and which were asked, in order."""

    def __init__(self) -> None:
        self.answers = {"tools": True, "datapath": True}
        self.asked: list[str] = []

    def probe(self, name: str) -> bool:
        self.asked.append(name)
        return self.answers[name]


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> Probes:
    fake = Probes()
    monkeypatch.setattr(ovs, "missing_tools", lambda: [] if fake.probe("tools") else ["ovs-vswitchd"])
    monkeypatch.setattr(kernel, "openvswitch_datapath_works", lambda: fake.probe("datapath"))
    monkeypatch.setattr(kernel, "release", lambda: "6.18.0-test")
    return fake


# -- choose_switch ------------------------------------------------------------------


def test_auto_with_netem_and_everything_there_is_ovs(probes: Probes) -> None:
    assert ovs.choose_switch("auto", "netem") == "ovs"
    assert probes.asked == ["tools", "datapath"]


def test_auto_with_the_delay_line_is_the_bridge_unprobed(probes: Probes) -> None:
    assert ovs.choose_switch("auto", "delayline") == "bridge"
    assert probes.asked == []


@pytest.mark.parametrize("missing", ["tools", "datapath"])
def test_auto_without_tools_or_datapath_is_the_bridge(probes: Probes, missing: str) -> None:
    probes.answers[missing] = False
    assert ovs.choose_switch("auto", "netem") == "bridge"


def test_auto_without_tools_never_probes_the_kernel(probes: Probes) -> None:
    probes.answers["tools"] = False
    ovs.choose_switch("auto", "netem")
    assert probes.asked == ["tools"]


@pytest.mark.parametrize("backend", ["netem", "delayline"])
def test_bridge_is_the_bridge_unprobed(probes: Probes, backend: str) -> None:
    assert ovs.choose_switch("bridge", backend) == "bridge"
    assert probes.asked == []


def test_ovs_with_netem_and_everything_there_is_ovs(probes: Probes) -> None:
    assert ovs.choose_switch("ovs", "netem") == "ovs"


def test_ovs_with_the_delay_line_is_refused_saying_why_unprobed(probes: Probes) -> None:
    with pytest.raises(ovs.SwitchUnavailable) as refused:
        ovs.choose_switch("ovs", "delayline")
    assert str(refused.value) == (
        "--switch ovs: the delay line needs a Linux bridge's netfilter (physdev) hooks; "
        "use --shaper netem or --switch bridge"
    )
    assert probes.asked == []


def test_ovs_without_the_tools_names_them_and_the_vm_lane(probes: Probes) -> None:
    probes.answers["tools"] = False
    with pytest.raises(ovs.SwitchUnavailable, match=r"--switch ovs: .*ovs-vswitchd.*openvswitch-switch.*run.sh --vm"):
        ovs.choose_switch("ovs", "netem")
    assert probes.asked == ["tools"]


def test_ovs_without_the_datapath_names_the_kernel_and_the_vm_lane(probes: Probes) -> None:
    probes.answers["datapath"] = False
    with pytest.raises(ovs.SwitchUnavailable, match=r"--switch ovs: this kernel \(6.18.0-test\).*run.sh --vm"):
        ovs.choose_switch("ovs", "netem")


def test_an_unknown_switch_names_the_value_and_the_choices_unprobed(probes: Probes) -> None:
    with pytest.raises(ovs.UnknownSwitch, match=r"--switch 'lxbr': choose ovs, bridge or auto"):
        ovs.choose_switch("lxbr", "netem")
    assert probes.asked == []


@pytest.mark.parametrize("requested", ["ovs", "auto", "bridge"])
def test_an_unresolved_backend_is_a_programming_error(probes: Probes, requested: str) -> None:
    with pytest.raises(ValueError, match="'auto', not a resolved one"):
        ovs.choose_switch(requested, "auto")


# -- the commands ----------------------------------------------------------------------

ENV = [
    "env",
    "OVS_RUNDIR=/tmp/netrepro-ovs-s1-abc",
    "OVS_DBDIR=/tmp/netrepro-ovs-s1-abc",
    "OVS_LOGDIR=/tmp/netrepro-ovs-s1-abc",
    "OVS_SYSCONFDIR=/tmp/netrepro-ovs-s1-abc",
]
VSCTL = [*ENV, "ovs-vsctl", "--db=unix:/tmp/netrepro-ovs-s1-abc/db.sock", "--timeout=10"]


def test_the_database_is_made_from_the_packaged_schema_in_the_switch_directory() -> None:
    assert ovs.create_database_argv(FILES) == [
        *ENV,
        "ovsdb-tool",
        "create",
        "/tmp/netrepro-ovs-s1-abc/conf.db",
        "/usr/share/openvswitch/vswitch.ovsschema",
    ]


def test_ovsdb_server_keeps_everything_in_the_switch_directory_and_stays_attached() -> None:
    assert ovs.ovsdb_server_argv(FILES) == [
        *ENV,
        "ovsdb-server",
        "/tmp/netrepro-ovs-s1-abc/conf.db",
        "--remote=punix:/tmp/netrepro-ovs-s1-abc/db.sock",
        "--unixctl=/tmp/netrepro-ovs-s1-abc/ovsdb-server.ctl",
        "--pidfile=/tmp/netrepro-ovs-s1-abc/ovsdb-server.pid",
        "--log-file=/tmp/netrepro-ovs-s1-abc/ovsdb-server.log",
        "-vconsole:off",
    ]


def test_vswitchd_talks_to_the_switch_database_only() -> None:
    assert ovs.vswitchd_argv(FILES) == [
        *ENV,
        "ovs-vswitchd",
        "unix:/tmp/netrepro-ovs-s1-abc/db.sock",
        "--unixctl=/tmp/netrepro-ovs-s1-abc/ovs-vswitchd.ctl",
        "--pidfile=/tmp/netrepro-ovs-s1-abc/ovs-vswitchd.pid",
        "--log-file=/tmp/netrepro-ovs-s1-abc/ovs-vswitchd.log",
        "-vconsole:off",
    ]


def test_no_command_names_a_system_wide_directory() -> None:
    every = [
        ovs.create_database_argv(FILES),
        ovs.ovsdb_server_argv(FILES),
        ovs.vswitchd_argv(FILES),
        ovs.init_argv(FILES),
        ovs.add_bridge_argv(FILES, "s1", "system", ["s1-eth1"]),
        ovs.delete_bridge_argv(FILES, "s1"),
        ovs.interfaces_argv(FILES, ["s1-eth1"]),
    ]
    for argv in every:
        assert not any(word in arg for arg in argv for word in ("/var/run", "/run/openvswitch", "/etc/openvswitch"))
        assert argv[: len(ENV)] == ENV


def test_init_does_not_wait_for_a_vswitchd_not_started_yet() -> None:
    assert ovs.init_argv(FILES) == [*VSCTL, "--no-wait", "init"]


def test_the_bridge_is_a_learning_switch_on_the_datapath_asked_with_every_port_in_one_transaction() -> None:
    assert ovs.add_bridge_argv(FILES, "s1", "netdev", ["s1-eth1", "s1-eth2"]) == [
        *VSCTL,
        *("--", "add-br", "s1"),
        *("--", "set", "Bridge", "s1", "datapath_type=netdev", "fail_mode=standalone"),
        *("--", "add-port", "s1", "s1-eth1"),
        *("--", "add-port", "s1", "s1-eth2"),
    ]


def test_an_unknown_datapath_is_refused() -> None:
    with pytest.raises(ValueError, match="system or netdev"):
        ovs.add_bridge_argv(FILES, "s1", "dpdk", [])


def test_deleting_a_bridge_already_gone_is_no_error() -> None:
    assert ovs.delete_bridge_argv(FILES, "s1") == [*VSCTL, "--if-exists", "del-br", "s1"]


# -- is the bridge forwarding ------------------------------------------------------------


def test_ports_whose_peer_is_down_are_not_forwarding_yet() -> None:
    listing = (FIXTURES / "ovs_vsctl_interfaces_links_down.json").read_text()
    assert ovs.ports_not_forwarding(listing, ["a0", "b0"]) == {"a0": "link down", "b0": "link down"}


def test_ports_opened_with_their_links_up_forward() -> None:
    listing = (FIXTURES / "ovs_vsctl_interfaces_links_up.json").read_text()
    assert ovs.ports_not_forwarding(listing, ["a0", "b0"]) == {}


def test_a_port_vswitchd_could_not_open_says_why() -> None:
    listing = (FIXTURES / "ovs_vsctl_interfaces_links_up.json").read_text()
    assert ovs.ports_not_forwarding(listing, ["nosuch", "gone"]) == {
        "nosuch": "could not open network device nosuch (No such device)",
        "gone": "not in the bridge",
    }


def test_a_port_without_an_openflow_number_yet_is_waited_for() -> None:
    listing = '{"data":[["a0",["set",[]],["set",[]],["set",[]]]],"headings":["name","ofport","error","link_state"]}'
    assert ovs.ports_not_forwarding(listing, ["a0"]) == {"a0": "no OpenFlow port yet (None)"}


# -- the kernel's datapath -----------------------------------------------------------------


def test_the_family_dump_request_is_a_controller_dump() -> None:
    request = kernel.family_dump_request(seq=7)
    assert struct.unpack("=IHHIIBBH", request) == (20, 0x10, 0x301, 7, 0, 3, 1, 0)


def test_a_captured_family_dump_lists_the_kernel_families_and_ends() -> None:
    names, done = kernel.parse_family_dump((FIXTURES / "genetlink_family_dump_6.18.bin").read_bytes())
    assert done
    assert {"nlctrl", "ethtool", "tcp_metrics", "netdev"} <= set(names)
    assert kernel.OVS_DATAPATH_FAMILY not in names


def test_a_dump_cut_before_its_end_says_so() -> None:
    data = (FIXTURES / "genetlink_family_dump_6.18.bin").read_bytes()
    names, done = kernel.parse_family_dump(data[:-20])  # without the NLMSG_DONE message
    assert not done and "nlctrl" in names


def test_an_error_in_the_dump_is_raised_with_its_errno() -> None:
    error = struct.pack("=IHHIIi", 36, kernel.NLMSG_ERROR, 0, 1, 0, -1) + bytes(16)
    with pytest.raises(OSError) as raised:
        kernel.parse_family_dump(error)
    assert raised.value.errno == 1


def test_the_datapath_is_there_when_its_family_is_registered_and_nothing_is_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kernel.openvswitch_datapath_works.cache_clear()
    monkeypatch.setattr(kernel, "genetlink_families", lambda: {"nlctrl", "ovs_datapath"})
    monkeypatch.setattr(proc, "run", lambda *a, **k: pytest.fail("nothing to load"))
    try:
        assert kernel.openvswitch_datapath_works()
    finally:
        kernel.openvswitch_datapath_works.cache_clear()


def test_without_loadable_modules_and_no_family_there_is_no_datapath(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel.openvswitch_datapath_works.cache_clear()
    monkeypatch.setattr(kernel, "genetlink_families", lambda: {"nlctrl"})
    monkeypatch.setattr(modules, "_read_proc_modules", lambda: None)
    monkeypatch.setattr(proc, "run", lambda *a, **k: pytest.fail("no modprobe without modules"))
    try:
        assert not kernel.openvswitch_datapath_works()
    finally:
        kernel.openvswitch_datapath_works.cache_clear()


def test_a_modular_kernel_loads_the_module_looks_again_and_unloads_what_it_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kernel.openvswitch_datapath_works.cache_clear()
    registered = {"nlctrl"}
    ran: list[list[str]] = []
    unloaded: list[str] = []

    def modprobe(argv: list[str], *args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        registered.add("ovs_datapath")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(kernel, "genetlink_families", lambda: set(registered))
    monkeypatch.setattr(modules, "_read_proc_modules", lambda: "before\n")
    monkeypatch.setattr(proc, "run", modprobe)
    monkeypatch.setattr(modules, "unload_modules_loaded_since", unloaded.append)
    try:
        assert kernel.openvswitch_datapath_works()
    finally:
        kernel.openvswitch_datapath_works.cache_clear()
    assert ran == [["modprobe", "openvswitch"]]
    assert unloaded == ["before\n"]
