"""Topologies as data: where the path options and --link land, and what is refused (no root)."""

from ipaddress import ip_interface

import pytest

from ground.path import PathSpec
from ground.units import Duration, Probability, QuantityError, Queue, Rate
from topologies.topology import LinkOption, Topology, ideal_goodput

SEED_004 = ("client-r1:delay=200ms", "r1-r2:delay=250ms,rate=11mbit,queue=15p", "r2-server:delay=200ms")


def test_path_is_todays_lab() -> None:
    """Each direction entering s1 carries half the RTT and its host's loss; s1's egress ports the rates."""
    net = Topology.parse("path").place(PathSpec.parse(rtt="40ms", rate="10mbit", rate_up="1mbit", loss="2%",
                                                      loss_up="1%", queue="50p"))  # fmt: skip
    d = {x.name: x for x in net.directions()}
    assert d["server>s1"].delay == Duration(0.020) and d["server>s1"].loss == Probability(0.02)
    assert d["client>s1"].delay == Duration(0.020) and d["client>s1"].loss == Probability(0.01)
    assert (d["s1>client"].rate, d["s1>client"].queue) == (Rate(10e6), Queue(packets=50))
    assert d["s1>server"].rate == Rate(1e6)
    assert d["s1>client"].delay == d["s1>server"].delay == Duration(0)
    assert {x.name for x in net.directions() if x.emulated} == {"server>s1", "client>s1"}
    assert net.bottleneck == "s1>client"
    assert net.view(net.pairs[0]) == PathSpec.parse(rtt="40ms", rate="10mbit", rate_up="1mbit", loss="2%",
                                                    loss_up="1%", queue="50p")  # fmt: skip


def test_dumbbell_gives_each_pair_its_rtt_and_shares_the_core() -> None:
    topo = Topology.parse("dumbbell", rtts="40ms,120ms", links=["r1-r2:delay=5ms"])
    net = topo.place(PathSpec.parse(rate="20mbit", loss="1%", queue="100p"))
    assert [net.rtt(p).ms for p in net.pairs] == pytest.approx([40, 120])
    core = net.direction("r2", "r1")
    assert (core.rate, core.queue, core.loss, core.delay) == (Rate(20e6), Queue(packets=100), Probability(0.01),
                                                              Duration(0.005))  # fmt: skip
    # the rest of each RTT sits on the pair's own access links, where its hosts enter the switches
    assert net.direction("client2", "s1").delay.ms == pytest.approx((120 - 10) / 2)
    assert net.direction("s1", "r1").delay == Duration(0) and not net.direction("s1", "r1").emulated
    assert [p.name for p in net.pairs] == ["client1-server1", "client2-server2"]
    assert net.view(net.pairs[1]).loss_down == Probability(0.01)


def test_chain_of_seed_004_folds_the_delay_toward_a_host_onto_its_other_direction() -> None:
    net = Topology.parse("chain", cross=True, links=SEED_004).place(PathSpec())
    pair = net.pairs[0]
    assert net.rtt(pair) == Duration(1.3)
    assert net.direction("client", "r1").delay == Duration(0.4)
    assert net.direction("r1", "client").delay == Duration(0)
    assert net.direction("r1", "r2").delay == net.direction("r2", "r1").delay == Duration(0.25)
    view = net.view(pair)
    assert (view.rate_down, view.queue) == (Rate(11e6), Queue(packets=15))
    # the cross traffic crosses the core in the data's direction
    assert [d.name for d in net.route("xsender", "xreceiver")] == ["xsender>r2", "r2>r1", "r1>xreceiver"]


def test_jitter_lands_on_every_stage_that_delays() -> None:
    """A dumbbell's pairs carry their RTT on their own links, so those stages vary it; the core,
    which delays nothing, gets none (its draws would all be clipped at zero: a bias, not noise)."""
    net = Topology.parse("dumbbell", pairs=2).place(PathSpec.parse(rtt="200ms", rate="2mbit", jitter="3ms"))
    jittered = {d.name for d in net.directions() if d.jitter.seconds}
    assert jittered == {"server1>s2", "server2>s2", "client1>s1", "client2>s1"}
    assert all(net.direction(*name.split(">")).delay.seconds > 0 for name in jittered)
    assert net.rtt_jitter_sd(net.pairs[0]).ms == pytest.approx(3 * (2 / 3) ** 0.5)
    assert net.view(net.pairs[1]).jitter == Duration(0.003)
    links = net.describe()["links"]
    assert (
        links["server1-s2"]["server1>s2"]["jitter_ms"] == 3.0 and "jitter_ms" not in links["server1-s2"]["s2>server1"]
    )
    plain = Topology.parse("dumbbell", pairs=2).place(PathSpec.parse(rtt="200ms", rate="2mbit"))
    assert plain.rtt_jitter_sd(plain.pairs[0]) == Duration(0)


def test_chain_spreads_the_rtt_over_links_with_no_delay_set() -> None:
    net = Topology.parse("chain", routers=3, links=["r1-r2:delay=10ms"]).place(PathSpec.parse(rtt="100ms"))
    assert net.rtt(net.pairs[0]) == Duration(0.1)
    # 100 ms less 2 x 10 ms, over the three other links, both ways
    assert net.direction("r3", "r2").delay.ms == pytest.approx(80 / 6)


def test_loss_over_several_links_composes() -> None:
    net = Topology.parse("dumbbell", links=["server1>s2:loss=10%"]).place(PathSpec.parse(loss="10%"))
    assert net.view(net.pairs[0]).loss_down.fraction == pytest.approx(1 - 0.9 * 0.9)


def test_a_one_way_link_option_touches_one_direction() -> None:
    opt = LinkOption.parse("r2>r1:rate=5mbit")
    assert (opt.a, opt.b, opt.both) == ("r2", "r1", False)
    net = Topology(shape="chain", links=(opt,)).place(PathSpec.parse(rate="11mbit"))
    assert net.direction("r2", "r1").rate == Rate(5e6) and net.direction("r1", "r2").rate == Rate(11e6)


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"shape": "ring"}, "path, dumbbell, chain"),
        ({"shape": "dumbbell", "links": ["r1-r3:rate=1mbit"]}, "its links: client1-s1"),
        ({"shape": "chain", "links": ["r1>client:loss=1%"]}, "loss toward a host"),
        ({"shape": "dumbbell", "links": ["client1>s1:rate=1mbit"]}, "a host's own egress is not shaped"),
        ({"shape": "dumbbell", "links": ["s1-r1:queue=5p"]}, "give rate= too"),
        ({"shape": "dumbbell", "links": ["s1-r1:colour=blue"]}, "the keys are rate, delay, loss, queue"),
        ({"shape": "dumbbell", "links": ["r1>r2:delay=5ms"]}, "write A-B, not A>B"),
        ({"shape": "dumbbell", "links": ["s1-r1:rate=fast"]}, "expected a rate"),
        ({"shape": "chain", "links": ["client-r1:delay=2s"]}, "leave their delay unset"),
        ({"shape": "path", "pairs": 2}, "one client/server pair"),
        ({"shape": "dumbbell", "pairs": 2, "rtts": "10ms"}, "one RTT per pair"),
        ({"shape": "dumbbell", "pairs": 40}, "from 1 to 28"),
        ({"shape": "path", "routers": 3}, "only a chain"),
        ({"shape": "path", "cross": True}, "no routers"),
    ],
)
def test_what_cannot_be_built_is_refused_with_what_was_typed(kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(QuantityError) as e:
        Topology.parse(**kwargs)  # type: ignore[arg-type]
    assert says in str(e.value)


def test_each_link_is_a_subnet_of_the_runs_24() -> None:
    net = Topology.parse("dumbbell", pairs=3, cross=True).place(PathSpec())
    addresses = net.addresses("10.7.9.0/24")
    interfaces = [ip_interface(a) for a in addresses.values()]
    assert len({i.ip for i in interfaces}) == len(interfaces), "no address twice"
    assert all(str(i.ip).startswith("10.7.9.") for i in interfaces)
    # two LANs, the core and the two cross-traffic links: five subnets of /27
    assert {i.network.prefixlen for i in interfaces} == {27} and len({i.network for i in interfaces}) == 5
    # path keeps the addresses the lab always had: client .1, server .2 of the /24
    path = Topology().place(PathSpec()).addresses("10.7.9.0/24")
    assert sorted(path.values()) == ["10.7.9.1/24", "10.7.9.2/24"]


def test_label_names_a_derived_figures_topology() -> None:
    assert Topology.parse("dumbbell", rtts="40ms,120ms").label == "topo=dumbbell+rtts=40ms,120ms"
    assert Topology.parse("chain", cross=True, links=["r1-r2:rate=11mbit"]).label == (
        "topo=chain+cross+link=r1-r2:rate=11mbit"
    )


def test_the_mtu_reaches_every_pairs_view_and_the_ideal_goodput() -> None:
    net = Topology.parse("chain", cross=True, links=SEED_004).place(PathSpec.parse(mtu=3500))
    assert net.mtu == 3500 and net.view(net.pairs[0]).mtu == 3500
    assert net.describe()["mtu"] == 3500
    assert "mtu" not in Topology().place(PathSpec()).describe()
    assert ideal_goodput(Rate(11e6), mtu=3500).bps == pytest.approx(11e6 * 3448 / 3514)
    assert ideal_goodput(Rate(11e6)).bps == pytest.approx(11e6 * 1448 / 1514)


def test_a_links_byte_buffer_must_hold_one_full_frame_of_the_mtu() -> None:
    topo = Topology.parse("chain", links=["r1-r2:rate=11mbit,queue=2kb"])  # 2048 B: one frame at MTU 1500
    with pytest.raises(QuantityError, match="holds no full frame at MTU 3500"):
        topo.place(PathSpec.parse(mtu=3500))
