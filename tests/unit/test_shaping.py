"""Command builders, compared as argument lists (no root needed)."""

import pytest

from ground.units import Duration, Probability, Queue, Rate
from topologies import shaping
from topologies.delayline import argv as delayline_argv
from topologies.delayline import set_command


def test_bottleneck_packets_and_bytes() -> None:
    assert shaping.bottleneck_root("s1-eth1") == [
        "tc", "qdisc", "add", "dev", "s1-eth1", "root", "handle", "1:", "htb", "default", "1",
    ]  # fmt: skip
    cls, leaf = shaping.bottleneck("s1-eth1", Rate(3e6), Queue(packets=20))
    assert cls == [
        "tc", "class", "replace", "dev", "s1-eth1", "parent", "1:", "classid", "1:1", "htb",
        "rate", "3000000bit", "ceil", "3000000bit", "burst", "1875", "cburst", "1875", "quantum", "1514",
    ]  # fmt: skip
    assert leaf == [
        "tc",
        "qdisc",
        "replace",
        "dev",
        "s1-eth1",
        "parent",
        "1:1",
        "handle",
        "10:",
        "pfifo",
        "limit",
        "20",
    ]
    _, leaf = shaping.bottleneck("s1-eth2", Rate(2e6), Queue(bytes=30720))
    assert leaf[-3:] == ["bfifo", "limit", "30720"]


def test_a_leaf_of_another_kind_is_deleted_before_its_replacement() -> None:
    """`tc qdisc replace` with the leaf's handle changes it in place, into one of its own kind only
    (another: "Error: Invalid qdisc name", as the lane's bufferbloat/aqm met going from pfifo to fq_codel):
    a new kind deletes the running leaf first; the same kind, or a first build, replaces it."""
    drop = ["tc", "qdisc", "del", "dev", "s1-eth1", "parent", "1:1", "handle", "10:"]
    new = shaping.bottleneck("s1-eth1", Rate(10e6), Queue(packets=132), qdisc="fq_codel", replacing="pfifo")
    assert new[1] == drop and new[2][-4:] == ["10:", "fq_codel", "limit", "132"] and len(new) == 3
    back = shaping.bottleneck("s1-eth1", Rate(10e6), Queue(packets=132), replacing="fq_codel")
    assert back[1] == drop and back[2][-3:] == ["pfifo", "limit", "132"]
    to_bytes = shaping.bottleneck("s1-eth1", Rate(10e6), Queue(bytes=30720), replacing="pfifo")
    assert to_bytes[1] == drop and to_bytes[2][-3:] == ["bfifo", "limit", "30720"]
    assert drop not in shaping.bottleneck("s1-eth1", Rate(10e6), Queue(packets=20), replacing="pfifo")
    assert drop not in shaping.bottleneck("s1-eth1", Rate(10e6), Queue(packets=20))
    assert [shaping.leaf_kind(Queue(packets=5)), shaping.leaf_kind(Queue(bytes=9000))] == ["pfifo", "bfifo"]
    assert shaping.leaf_kind(Queue(packets=5), "cake") == "cake"


def test_htb_quantum_is_one_frame_of_the_paths_mtu() -> None:
    cls, _ = shaping.bottleneck("s1-eth1", Rate(11e6), Queue(packets=15), frame=3514)
    assert cls[-2:] == ["quantum", "3514"]


def test_htb_burst_is_five_ms_of_the_rate_and_at_least_a_frame() -> None:
    assert shaping.burst_bytes(Rate(100e6)) == 62500
    assert shaping.burst_bytes(Rate(1e6)) == 1514
    assert shaping.burst_bytes(Rate(1e6), frame=3514) == 3514


def test_link_mtu() -> None:
    assert shaping.link_mtu("s1-eth1", 3500) == ["ip", "link", "set", "dev", "s1-eth1", "mtu", "3500"]


def test_netem_stage_redirects_ingress_through_ifb() -> None:
    cmds = shaping.netem_stage("s1-eth2", "ifb-down", Duration(0.05), Probability(0.02), seed=7)
    assert cmds[0] == ["ip", "link", "add", "ifb-down", "type", "ifb"]
    assert cmds[2] == ["tc", "qdisc", "add", "dev", "s1-eth2", "handle", "ffff:", "ingress"]
    assert cmds[3][-4:] == ["mirred", "egress", "redirect", "dev", "ifb-down"][-4:]
    assert cmds[4] == [
        "tc", "qdisc", "replace", "dev", "ifb-down", "root", "handle", "1:", "netem",
        "delay", "50000us", "loss", "2%", "limit", "1000000", "seed", "7",
    ]  # fmt: skip


def test_nfqueue_rule() -> None:
    assert shaping.nfqueue_rule("-A", "s1-eth2", 0) == [
        "iptables-legacy", "-w", "-A", "FORWARD", "-m", "physdev", "--physdev-in", "s1-eth2",
        "-j", "NFQUEUE", "--queue-num", "0",
    ]  # fmt: skip
    with pytest.raises(ValueError):
        shaping.nfqueue_rule("-F", "s1-eth2", 0)


def test_delayline_commands() -> None:
    argv = delayline_argv([0, 1], capacity=1000)
    assert argv[1:] == ["--queue", "0", "--queue", "1", "--capacity", "1000"]
    assert set_command(0, Duration(0.01), Probability(0.02), 5) == (
        "set 0 delay_us=10000 jitter_us=0 loss=0.020000000 seed=5"
    )
    assert set_command(1, Duration(0.1), Probability(0), 2, jitter=Duration(0.003)).startswith(
        "set 1 delay_us=100000 jitter_us=3000 "
    )


def test_offloads_and_sysctl() -> None:
    assert shaping.offloads_off("client-eth0") == [
        "ethtool", "-K", "client-eth0", "gso", "off", "tso", "off", "gro", "off",
    ]  # fmt: skip
    assert shaping.sysctl("net.ipv4.tcp_no_metrics_save", 1) == ["sysctl", "-q", "-w", "net.ipv4.tcp_no_metrics_save=1"]


@pytest.mark.parametrize(
    ("qdisc", "leaf"),
    [
        ("fq_codel", ["fq_codel", "limit", "33"]),
        ("codel", ["codel", "limit", "33"]),
        ("pie", ["pie", "limit", "33"]),
        ("cake", ["cake", "unlimited", "memlimit", str(33 * 1514)]),
        # limit 33 frames; max half of it, min a third of max; burst (2 min + max) / (3 avpkt) + 1
        (
            "red",
            [
                "red",
                "limit",
                "49962",
                "min",
                "8327",
                "max",
                "24981",
                "avpkt",
                "1514",
                "burst",
                "10",
                "bandwidth",
                "10000000bit",
                "adaptive",
            ],
        ),  # fmt: skip
    ],
)
def test_an_aqm_holds_the_bottleneck_buffer_as_its_limit(qdisc: str, leaf: list[str]) -> None:
    cls, made = shaping.bottleneck("s1-eth1", Rate(10e6), Queue(packets=33), qdisc=qdisc)
    assert made[:9] == ["tc", "qdisc", "replace", "dev", "s1-eth1", "parent", "1:1", "handle", "10:"]
    assert made[9:] == leaf and cls[9] == "htb"
    # a buffer in bytes is counted in whole frames: 30 kb is 20.3 frames, so 21
    assert shaping.aqm_leaf(qdisc, Rate(10e6), Queue(bytes=30720))[:3] in (
        [qdisc, "limit", "21"], ["cake", "unlimited", "memlimit"], ["red", "limit", str(21 * 1514)],
    )  # fmt: skip


def test_a_qdisc_not_offered_is_refused_naming_the_ones_that_are() -> None:
    from ground.path import PathSpec
    from ground.units import QuantityError

    assert PathSpec.parse(qdisc="fq_codel").qdisc == "fq_codel" and PathSpec.parse().qdisc == "pfifo"
    assert str(PathSpec.parse(queue="33p", qdisc="codel")).endswith("queue 33p codel")
    assert PathSpec.parse(qdisc="pie").describe()["qdisc"] == "pie" and "qdisc" not in PathSpec.parse().describe()
    with pytest.raises(QuantityError, match="--qdisc.*one of pfifo, fq_codel, codel, pie, red, cake"):
        PathSpec.parse(qdisc="sfq")
