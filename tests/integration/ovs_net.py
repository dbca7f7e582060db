"""A minimal Mininet net for the Open vSwitch tests: h1 — s1 — h2, s1 a NamespacedOVS in its own namespace.

Built as the lab builds its net (no root-namespace sysctls, no controller,
every node's shell and namespace in the ledger).  Run as a script, it brings
the net up under a ledger of its own, prints one line `NET-IS-UP <ledger
file> <switch directory>`, and holds the net until it is killed: on SIGTERM it
takes the net down and undoes its ledger, on SIGKILL it leaves both to `clean`.
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

from mininet.net import Mininet
from mininet.topo import Topo

from ground.ledger import Ledger
from ground.proc import Netns, kill_netns_processes, run
from topologies.lab import hold_nodes
from topologies.ovs import NamespacedOVS

IP_BASE = "10.253.0.0/24"


class TwoHostsOneSwitch(Topo):  # type: ignore[misc]
    def build(self, ledger: Ledger, datapath: str) -> None:  # type: ignore[override]
        h1 = self.addHost("h1")
        h2 = self.addHost("h2")
        s1 = self.addSwitch("s1", cls=NamespacedOVS, inNamespace=True, ledger=ledger, datapath=datapath)
        self.addLink(h1, s1)
        self.addLink(h2, s1)


class OvsNet:
    """The net, up from `start()` until `stop()`; each node's namespace held through a handle."""

    def __init__(self, ledger: Ledger, datapath: str = "netdev") -> None:
        self.ledger = ledger
        self.datapath = datapath
        self.net: Any = None
        self.handles: dict[str, Netns] = {}

    def start(self) -> OvsNet:
        Mininet.inited = True  # Mininet.init() would raise root-namespace limits and never restore them
        self.net = Mininet(
            topo=TwoHostsOneSwitch(ledger=self.ledger, datapath=self.datapath),
            ipBase=IP_BASE,
            controller=None,
            build=False,
        )
        try:
            self.net.build()
            hold_nodes(self.net, self.ledger, self.handles)
            self.net.start()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def switch(self) -> NamespacedOVS:
        assert self.net is not None
        switch: NamespacedOVS = self.net["s1"]
        return switch

    def ping(self, count: int = 3) -> str:
        """h1 pings h2 through the switch (ARP included: the switch learns and floods)."""
        argv = ["ping", "-n", "-c", str(count), "-i", "0.2", "-W", "2", str(self.net["h2"].IP())]
        return run(argv, self.handles["h1"]).stdout

    def stop(self) -> None:
        if self.net is not None:
            self.net.stop()
            self.net = None
        kill_netns_processes([h.inode for h in self.handles.values() if h.inode is not None])
        for handle in self.handles.values():
            handle.close()
        self.handles.clear()


def main() -> None:
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # unwind as a run does
    with Ledger() as ledger:
        net = OvsNet(ledger, datapath=sys.argv[1] if len(sys.argv) > 1 else "netdev").start()
        try:
            files = net.switch.files
            assert files is not None
            print(f"NET-IS-UP {ledger.file} {files.directory}", flush=True)
            time.sleep(600)
        finally:
            net.stop()


if __name__ == "__main__":
    main()
