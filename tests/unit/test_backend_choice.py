"""choose_backend probes only the backend it may use (a probe can load kernel modules); what a backend refuses."""

from pathlib import Path

import pytest

from ground import kernel
from ground.units import Duration, Probability
from topologies import emulation, shaping


class Probes:
    """Fake probes: the answer each gives, and which were asked, in order."""

    def __init__(self) -> None:
        self.answers = {"netem": True, "nfqueue": True}
        self.asked: list[str] = []

    def probe(self, name: str) -> bool:
        self.asked.append(name)
        return self.answers[name]


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> Probes:
    fake = Probes()
    monkeypatch.setattr(kernel, "netem_works", lambda: fake.probe("netem"))
    monkeypatch.setattr(kernel, "ifb_works", lambda: True)
    monkeypatch.setattr(emulation, "nfqueue_works", lambda: fake.probe("nfqueue"))
    monkeypatch.setattr(emulation, "DELAYLINE_BINARY", Path(__file__))  # "built"
    return fake


def test_auto_with_netem_working_never_probes_nfqueue(probes: Probes) -> None:
    assert emulation.choose_backend("auto") == "netem"
    assert probes.asked == ["netem"]


def test_netem_requested_never_probes_nfqueue(probes: Probes) -> None:
    assert emulation.choose_backend("netem") == "netem"
    assert probes.asked == ["netem"]


def test_delayline_requested_never_probes_netem(probes: Probes) -> None:
    assert emulation.choose_backend("delayline") == "delayline"
    assert probes.asked == ["nfqueue"]


def test_auto_falls_back_to_the_delay_line_probing_it_then(probes: Probes) -> None:
    probes.answers["netem"] = False
    assert emulation.choose_backend("auto") == "delayline"
    assert probes.asked == ["netem", "nfqueue"]


def test_auto_with_neither_says_so(probes: Probes) -> None:
    probes.answers = {"netem": False, "nfqueue": False}
    with pytest.raises(emulation.ShaperUnavailable, match="neither netem"):
        emulation.choose_backend("auto")


def test_netem_requested_where_it_does_not_work_is_refused(probes: Probes) -> None:
    probes.answers["netem"] = False
    with pytest.raises(emulation.ShaperUnavailable, match="--shaper netem"):
        emulation.choose_backend("netem")
    assert probes.asked == ["netem"]


def test_delayline_without_its_binary_is_refused_unprobed(probes: Probes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emulation, "DELAYLINE_BINARY", Path("/nonexistent/delayline"))
    with pytest.raises(emulation.ShaperUnavailable, match="--shaper delayline"):
        emulation.choose_backend("delayline")
    assert probes.asked == []


def test_an_unknown_backend_is_refused_unprobed(probes: Probes) -> None:
    with pytest.raises(emulation.ShaperUnavailable, match="choose netem"):
        emulation.choose_backend("magic")
    assert probes.asked == []


def test_netem_jitters_in_its_rate_form_which_keeps_the_packets_in_order() -> None:
    """netem's own jitter reorders (its queue is ordered by due time); with a rate, each packet's due time
    counts from the packet before it, so the jitter netem draws keeps them in order, as the delay line does."""
    plain = shaping.netem_qdisc("ifb1", Duration(0.01), Probability(0), seed=7)
    assert "rate" not in plain and plain[plain.index("delay") + 1 : plain.index("delay") + 3] == ["10000us", "loss"]
    jittered = shaping.netem_qdisc("ifb1", Duration(0.01), Probability(0), seed=7, jitter=Duration(0.001))
    at = jittered.index("delay")
    assert jittered[at : at + 5] == ["delay", "10000us", "1000us", "rate", shaping.NETEM_ORDER_RATE]
    assert jittered[-2:] == ["seed", "7"]  # the seed restarts the jitter's draws with the loss's
