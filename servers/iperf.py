"""Cross traffic: an iperf3 flow from server to client beside a trial's workload.

`iperf3_server_argv` and `iperf3_client_argv` build the commands (bulk TCP, or
UDP at a constant rate, in the data direction); `CrossTraffic` runs the pair
in the hosts' namespaces for a fixed duration and returns what the receiver
measured.  `wait_listening` waits for a server process to listen.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from types import TracebackType

from ground.ledger import Ledger
from ground.parsers import IperfTcp, IperfUdp, parse_iperf3_tcp, parse_iperf3_udp
from ground.proc import CommandError, Netns, Process, run
from ground.units import Rate

__all__ = ["IPERF_PORT", "CrossTraffic", "iperf3_client_argv", "iperf3_server_argv", "wait_listening"]

IPERF_PORT = 5201  # iperf3's own default; the path checks and the traced transfers use it


INTERRUPTED = "interrupt - the client has terminated"  # what iperf3 reports when it is stopped


def iperf3_server_argv(address: str, port: int) -> list[str]:
    return ["iperf3", "-s", "-1", "-B", address, "-p", str(port)]


def iperf3_client_argv(
    address: str,
    port: int,
    duration_s: int,
    *,
    udp_rate: Rate | None = None,
    datagram: int = 1400,
    cc: str | None = None,
    interval_s: float | None = None,
) -> list[str]:
    """A flow in the data direction (server to client, -R): bulk TCP (with congestion control `cc`,
    else the sender's default), or UDP at a constant rate; reported every `interval_s` (iperf3's
    default: 1 s)."""
    argv = ["iperf3", "-c", address, "-p", str(port), "-R", "-J", "-t", str(duration_s)]
    if interval_s is not None:
        argv += ["-i", f"{interval_s:g}"]
    if udp_rate is not None:
        argv += ["-u", "-b", str(int(udp_rate.bps)), "-l", str(datagram)]
    if cc is not None:
        argv += ["-C", cc]
    return argv


def wait_listening(ns: Netns, address: str, port: int, process: Process, timeout: float = 5.0) -> None:
    """Return once `address:port` listens in ns; raise if the process died or time ran out."""
    deadline = time.monotonic() + timeout
    while True:
        out = run(["ss", "-Hln", f"sport = :{port}"], ns).stdout
        if any(f"{address}:{port}" in line.split() for line in out.splitlines()):
            return
        if not process.running():
            raise CommandError(process.argv, ns, process.wait(), "exited before listening")
        if time.monotonic() > deadline:
            raise CommandError(process.argv, ns, None, f"not listening on {address}:{port} after {timeout:g} s")
        time.sleep(0.02)


# How long a flow may take to end after its duration: 15 s, and on a long path 30 round trips more
# (four consecutive timeouts of a control message at a 1.3 s RTT: 1.5 + 3 + 6 + 12 s, about 17 RTTs).
END_SLACK_S, END_SLACK_RTTS = 15.0, 30.0


class CrossTraffic:
    """A competing flow from server to client for `duration_s`: bulk TCP, or UDP at `udp_rate`.

    `rtt_s`, the path's round trip, sets how long after `duration_s` the flow
    may take to end: iperf3 ends a test with a few messages on its control
    connection, which share the bottleneck with the data; where the queue is
    full and the round trip long (seed 004's 1.3 s), a lost message waits out
    retransmission timeouts that start near the round trip and double.
    """

    def __init__(
        self,
        client: Netns,
        server: Netns,
        server_address: str,
        ledger: Ledger,
        work_dir: Path,
        *,
        duration_s: int,  # whole seconds: iperf3 -t
        udp_rate: Rate | None = None,
        port: int = 5202,
        cc: str | None = None,
        interval_s: float | None = None,
        datagram: int = 1400,  # UDP payload, bytes
        rtt_s: float = 0.0,
    ) -> None:
        self.client, self.server, self.address = client, server, server_address
        self.ledger, self.duration_s, self.udp_rate, self.port = ledger, duration_s, udp_rate, port
        self.cc, self.interval_s, self.datagram = cc, interval_s, datagram
        self.end_within_s = END_SLACK_S + END_SLACK_RTTS * rtt_s
        self.output = work_dir / f"iperf3-{'udp' if udp_rate else 'tcp'}-{port}.json"
        self._server: Process | None = None
        self._client: Process | None = None

    def start(self) -> CrossTraffic:
        try:
            self._server = Process(
                iperf3_server_argv(self.address, self.port), self.server, ledger=self.ledger, label="iperf3 server"
            )
            wait_listening(self.server, self.address, self.port, self._server)
            with open(self.output, "wb") as out:
                self._client = Process(
                    iperf3_client_argv(
                        self.address,
                        self.port,
                        self.duration_s,
                        udp_rate=self.udp_rate,
                        datagram=self.datagram,
                        cc=None if self.udp_rate else self.cc,
                        interval_s=self.interval_s,
                    ),
                    self.client,
                    ledger=self.ledger,
                    stdout=out,
                    label="iperf3 client",
                )
        except BaseException:
            self.stop()
            raise
        return self

    def report(self) -> str:
        """Wait for the flow to end and return iperf3's JSON report (the receiver's, -R)."""
        assert self._client is not None, "start() first"
        try:
            code = self._client.wait(timeout=self.duration_s + self.end_within_s)
        except subprocess.TimeoutExpired:
            late = f"did not end within {self.end_within_s:.0f} s of its {self.duration_s} s"
            raise CommandError(self._client.argv, self.client, None, late) from None
        text = self.output.read_text(errors="replace")
        if code != 0:
            raise CommandError(self._client.argv, self.client, code, text[-1000:])
        return text

    def interrupt(self) -> str:
        """End the flow now and return iperf3's JSON report of it so far (iperf3 reports when interrupted)."""
        assert self._client is not None, "start() first"
        self._client.stop()  # SIGINT first: iperf3 writes its report and exits
        text = self.output.read_text(errors="replace")
        self.stop()
        try:
            doc = json.loads(text)
        except ValueError:
            return text  # the parser says what is wrong with it
        if isinstance(doc, dict) and doc.get("error") == INTERRUPTED:
            del doc["error"]  # asked for: the report of the flow so far is whole
            return json.dumps(doc)
        return text

    def result(self) -> IperfTcp | IperfUdp:
        """Wait for the flow to end and return what the receiver measured."""
        text = self.report()
        return parse_iperf3_udp(text) if self.udp_rate is not None else parse_iperf3_tcp(text)

    def stop(self) -> None:
        for proc in (self._client, self._server):
            if proc is not None:
                proc.stop()
        self._client = self._server = None

    def __enter__(self) -> CrossTraffic:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
