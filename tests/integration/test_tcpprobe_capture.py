"""The tracer captures a real transfer's cwnd and leaves tracefs as it was."""

import os
import time
from ipaddress import IPv4Network
from pathlib import Path

import pytest

from ground.ledger import Ledger
from ground.path import PathSpec
from ground.proc import Process, run
from ground.tcpprobe import TcpProbe
from topologies.lab import Lab

pytestmark = pytest.mark.root


def test_capture_at_100mbit_loses_no_event() -> None:
    path = PathSpec.parse(rtt="20ms", rate="100mbit", loss="0.2%")
    with Ledger() as ledger, Lab(path, ledger) as lab:
        server_ip = lab.ip("server")
        server = Process(["iperf3", "-s", "-1", "-B", lab.ip("server"), "-p", "5201"], lab.server, ledger=ledger)
        time.sleep(0.3)
        with TcpProbe(ledger, [5201], network=lab.subnet) as probe:
            run(["iperf3", "-c", lab.ip("server"), "-p", "5201", "-R", "-t", "4"], lab.client)
        server.stop()
    # The data sender is the server: its samples are those from port 5201 with the largest cwnd.
    sender = [s for s in probe.samples if s.flow.startswith(f"{server_ip}:5201>")]
    # one event per ACK the sender receives: thousands in 4 s (stop() has
    # already checked the overrun counters: no event was lost)
    assert len(sender) > 1000, len(sender)
    assert max(s.snd_cwnd for s in sender) > 10, "the window grew past the initial window"
    assert any(s.ssthresh < 2**31 - 1 for s in sender), "a loss set ssthresh"
    assert all(18_000 < s.srtt_us < 200_000 for s in sender[-100:]), "srtt is the path's RTT plus queueing"


def reading(path: str) -> bool:
    """Whether this process holds `path` open."""
    fds = Path("/proc/self/fd")
    return any(os.readlink(fd) == path for fd in fds.iterdir() if fd.is_symlink() and fd.exists())


def test_a_stop_cut_short_by_a_signal_still_removes_the_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """SystemExit (a run's SIGTERM) while stop() waits for the reader: the instance still goes, for the
    kernel refuses to remove one whose trace_pipe is open (EBUSY), and the ledger leaves no tracefs."""
    with Ledger() as ledger:
        probe = TcpProbe(ledger, [5201], network=IPv4Network("10.1.1.0/24")).start()
        pipe = str(probe.instance / "trace_pipe")
        deadline = time.monotonic() + 10
        while not reading(pipe) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert reading(pipe), "the reader opens trace_pipe"  # else the cut below would race nothing
        reader = probe._reader
        assert reader is not None
        wait = reader.join
        cut: list[bool] = []

        def join_cut_short(timeout: float | None = None) -> None:
            if not cut:
                cut.append(True)
                raise SystemExit(143)
            wait(timeout)

        monkeypatch.setattr(reader, "join", join_cut_short)
        with pytest.raises(SystemExit):
            probe.stop()
        assert cut and not reader.is_alive()
        assert not probe.instance.exists()
