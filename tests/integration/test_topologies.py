"""The dumbbell on this kernel, with the delay line: its RTTs, its
bottleneck, and the physics two flows through one bottleneck must show.

- dumbbell: two Reno pairs of RTT 40 ms and 120 ms through a 20 Mbit/s core.
  Together they fill the core (within 5 % of rate x 1448/1514); the short
  round trip takes more than the long one (Reno's window grows one segment
  per RTT, so its rate goes as 1/RTT or faster).

The chain, seed 004's path, is study linuxcc's (test_linuxcc_figures.py):
no flow above the core, none above what 10 Mbit/s of UDP leaves.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ground.ledger import Ledger
from ground.path import PathSpec
from ground.units import Rate
from netrepro.runner import verify
from netrepro.runner.session import Session
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit.trial import build
from topologies.lab import Lab
from topologies.topology import Topology, ideal_goodput

pytestmark = pytest.mark.root


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    with Ledger() as run_ledger:
        yield run_ledger


def competing(lab: Lab, ledger: Ledger, work: Path, **params: object) -> dict[str, Any]:
    """The `competing` workload, as a figure's trial runs it."""
    session = Session(lab, ledger, work, results_dir=None)
    try:
        trial = build(params, 0, "duration_s", WORKLOADS["competing"].keys_type, lab.topology)
        session.apply_hosts(trial)
        return WORKLOADS["competing"](session, trial)
    finally:
        session.stop()


def test_dumbbell_shares_its_core_and_the_short_rtt_gets_more(ledger: Ledger, tmp_path: Path) -> None:
    topo = Topology.parse("dumbbell", rtts="40ms,120ms")
    path = PathSpec.parse(rate="20mbit", queue="100p")
    with Lab(path, ledger, shaper="delayline", cc="reno", topology=topo) as lab:
        checked = verify.verify(lab)
        by_name = {c.name: c for c in checked.checks}
        assert by_name["rtt"].ok and by_name["rtt"].desired == 40, by_name["rtt"].line()
        assert by_name["rtt_pair2"].ok and by_name["rtt_pair2"].desired == 120, by_name["rtt_pair2"].line()
        assert by_name["goodput"].ok, by_name["goodput"].line()
        m = competing(lab, ledger, tmp_path, cc="reno", duration_s=30, window_s=10)
    short, long = (float(g) * 1e6 for g in m["flow_goodputs_mbit"].split(";"))
    core = ideal_goodput(Rate(20e6)).bps
    print(f"dumbbell: {m}")
    assert abs(short + long - core) <= 0.05 * core, "together the two flows fill the core"
    assert short > 1.5 * long, "RTT unfairness: the 40 ms Reno flow gets more than the 120 ms one"
    assert m["jain_index"] == pytest.approx((short + long) ** 2 / (2 * (short**2 + long**2)), abs=1e-3)
    assert m["bottleneck_drops"] > 0, "two Reno flows overflow a 100-packet queue"
    assert all(float(g) > 0 for g in m["flow_first_window_mbit"].split(";"))
