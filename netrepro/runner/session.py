"""The session: what a figure's trials share for the life of one lab.

A `Session` holds the Apache server (started once, its content written as
trials first need it), the netrepro variants loaded and how they are tuned,
one tcp_probe capture, the hosts' current TCP settings and whether the
server's sending is paced (the variants may instead be held for all the
labs of a run side by side: `hold_algorithms`); each is changed only when a trial asks for
something other than what the last trial left.  The workloads
(netrepro.runner.workloads) take a session and a trial's parameters.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ground import kernel
from ground.errors import UserError
from ground.ledger import Ledger
from ground.tcpprobe import TcpProbe
from kmod import loader
from netrepro.studykit.trial import Trial
from servers import content
from servers.apache import HTTP_PORT, TLS_PORT, Apache
from servers.hosttcp import HostTcp, apply_host_tcp
from topologies.lab import Lab

Metrics = dict[str, Any]


class Session:
    """The servers and host settings a figure's trials share on one lab."""

    def __init__(
        self,
        lab: Lab,
        ledger: Ledger,
        work_dir: Path,
        results_dir: Path | None,
        cc_impl: str | None = None,
        held: Mapping[str, Metrics] | None = None,
    ) -> None:
        """`held`: variants and ports another process of the run loaded and tuned for every lab of it
        (`hold_algorithms`: each name with the columns its trials' rows get): used as they are, never
        loaded or tuned here."""
        self.lab = lab
        self.cc_impl = cc_impl
        self.held = dict(held or {})
        self._algorithms: dict[str, loader.LoadedAlgorithm] = {}
        self._tuned: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
        self.ledger = ledger
        self.work_dir = work_dir
        self.apache = Apache(lab.server, lab.ip("server"), ledger, tls=True, results_dir=results_dir).start()
        self._objects: dict[int, content.WebObject] = {}
        self._pages: dict[str, content.Page] = {}
        self._browser_folder: Path | None = None
        self._applied: dict[str, HostTcp] = {}
        self._probe: TcpProbe | None = None
        self._fq_on = False
        self._fq_available: bool | None = None

    def probe(self, port: int | None = None) -> TcpProbe:
        """One tcp_probe capture for the whole session, filtered to Apache's two ports (`port` is one of them)."""
        if port is not None and port not in (HTTP_PORT, TLS_PORT):
            raise ValueError(f"the session's tcp_probe follows Apache's ports {HTTP_PORT} and {TLS_PORT}, not {port}")
        if self._probe is None:
            self._probe = TcpProbe(self.ledger, [HTTP_PORT, TLS_PORT], buffer_kb=4096, network=self.lab.subnet).start()
        return self._probe

    # -- content ----------------------------------------------------------------

    def web_object(self, size: int) -> content.WebObject:
        if size not in self._objects:
            self._objects[size] = content.write_object(self.apache.docroot, size)
        return self._objects[size]

    def page(self, name: str) -> content.Page:
        if name not in self._pages:
            self._pages[name] = content.write_page(self.apache.docroot, name)
        return self._pages[name]

    def browser_folder(self) -> Path:
        """Where a browser's fresh profile for each load is made (and removed after it): one folder of
        the run's ledger for the session, so that a killed run leaves no profile."""
        if self._browser_folder is None:
            self._browser_folder = self.ledger.temp_dir("netrepro-browser-")
        return self._browser_folder

    # -- hosts --------------------------------------------------------------------

    def congestion_control(self, trial: Trial) -> Metrics:
        """Load and tune the variant or port the trial names (once loaded, only re-tuned); report it."""
        if not trial.cc.ours:
            if (
                trial.cc.name is not None
            ):  # the kernel's own (bbr): its module loaded through the ledger where it is not
                loader.load_kernel_own(trial.cc.name, self.ledger)
            return {"cc_impl": "kernel"}
        name = str(trial.cc.name)
        if name in self.held:
            return dict(self.held[name])
        if name not in self._algorithms:
            self._algorithms[name] = loader.load(name, self.ledger, self.cc_impl)
        algorithm = self._algorithms[name]
        # Every parameter, defaults included: a trial must not inherit the last one's tuning.
        wanted = dict(trial.cc.tuning)
        if name not in self._tuned or self._tuned[name][0] != wanted:
            self._tuned[name] = (wanted, algorithm.set(**wanted))
        return ran_as(algorithm, self._tuned[name][1])

    def algorithm(self, name: str) -> loader.LoadedAlgorithm | None:
        """The variant or port this session loaded under that name, if any."""
        return self._algorithms.get(name)

    def registered(self, name: str | None) -> str | None:
        """The name sockets use for the trial's cc: bpf_<name> for a port run beside the kernel's own."""
        if str(name) in self.held:
            return str(self.held[str(name)].get("cc_registered", name))
        algorithm = self._algorithms.get(str(name))
        return algorithm.registered if algorithm is not None else name

    def ss_repairs(self, trial: Trial) -> int | None:
        """How often the BPF program has repaired a corrupted ssthresh so far (see kmod/README.md); None
        for the kernel's own algorithms and modules.  An algorithm held for the run's labs (--jobs) has
        one counter for every lab's flows: a repair in any lab then counts in each trial running."""
        name = str(trial.cc.name)
        algorithm = self._algorithms.get(name)
        if algorithm is None and name in self.held and self.held[name].get("cc_impl") == "bpf":
            algorithm = loader.attach(name)
        if algorithm is None or algorithm.impl != "bpf":
            return None
        return algorithm.counters().get("ss_repairs")

    def apply_hosts(self, trial: Trial) -> None:
        """Put every pair's hosts' TCP into the trial's settings (congestion control, windows)."""
        initcwnd = trial.hosts.initcwnd
        cc = self.registered(trial.cc.name)
        server = HostTcp(
            congestion_control=cc,
            initcwnd=initcwnd,
            slow_start_after_idle=trial.hosts.slow_start_after_idle,
        )
        # The client's route carries initrwnd, so that its SYN advertises a
        # window the server's initial window can fill (docs/studies/iw.md).
        client = HostTcp(
            congestion_control=cc,
            initrwnd=max(initcwnd, 10) if initcwnd is not None else None,
            slow_start_after_idle=trial.hosts.slow_start_after_idle,
            receive_buffer=trial.hosts.receive_buffer,
        )
        routed = self.lab.network.shape != "path"
        for pair in self.lab.pairs:
            for host, settings, peer in ((pair.server, server, pair.client), (pair.client, client, pair.server)):
                previous = self._applied.get(host)
                if previous != settings:
                    # the lab's one interface per host; on a routed shape, looked up with its router
                    dev = None if routed else f"{host}-eth0"
                    apply_host_tcp(
                        self.lab.ns(host), settings, self.lab.ip(peer), self.ledger, previous=previous, dev=dev
                    )
                    self._applied[host] = settings

    def pace(self, pacer: str | None) -> str:
        """Pace the HTTP server's sending for this trial, and say how: `fq` (the fq qdisc on the server's
        egress), `tcp` (TCP's own pacing, which the congestion control asks for: newcwv's pacing=1) or
        "" (not paced); `auto` is fq where the kernel has it, else tcp."""
        used = pacer or ""
        if used == "auto":
            if self._fq_available is None:
                self._fq_available = kernel.qdisc_works("fq")
            used = "fq" if self._fq_available else "tcp"
        if (used == "fq") != self._fq_on:
            self.lab.fair_queue_at_server(used == "fq")
            self._fq_on = used == "fq"
        return used

    def stop(self) -> None:
        try:
            if self._probe is not None:
                self._probe.stop()
        finally:
            self.apache.stop()


def shared_tunings(trials: Iterable[Trial]) -> tuple[dict[str, dict[str, int]], list[str]]:
    """The one tuning each netrepro variant or port of the trials runs with, and the variants whose trials
    tune them differently (a variant's parameters are the machine's: those cannot be shared by labs)."""
    tunings: dict[str, list[dict[str, int]]] = {}
    for t in trials:
        if t.cc.ours:
            wanted = dict(t.cc.tuning)
            if wanted not in tunings.setdefault(str(t.cc.name), []):
                tunings[str(t.cc.name)].append(wanted)
    differ = [
        f"{name} ({'; '.join(', '.join(f'{k}={v}' for k, v in t.items()) for t in found)})"
        for name, found in tunings.items()
        if len(found) > 1
    ]
    return {name: found[0] for name, found in tunings.items() if len(found) == 1}, differ


def ran_as(algorithm: loader.LoadedAlgorithm, reported: Mapping[str, int]) -> Metrics:
    """A trial row's columns for the variant or port it ran: its implementation, the name it registered
    (a port), and what the kernel reports of its tuning and outputs."""
    variant = algorithm.variant
    keep = {*variant.outputs, *(f"{p.name}_in_use" for p in variant.params), "ss_repairs"}
    if variant.port:  # a port's parameters are the module's, reported as the kernel has them
        keep |= {p.name for p in variant.params}
    ran: Metrics = {"cc_impl": algorithm.impl}
    if variant.port:
        ran["cc_registered"] = algorithm.registered
    return {**ran, **{f"cc_{k}": v for k, v in reported.items() if k in keep}}


def tuning_phases(todo: list[Trial]) -> list[list[Trial]]:
    """A run's trials in phases within which each netrepro variant has one tuning (labs side by side
    share it): each trial to the first phase whose tunings it agrees with, the run's order kept within
    each; a trial without a variant to the first phase.  One phase where the tunings all agree."""
    phases: list[tuple[dict[str, dict[str, int]], list[Trial]]] = []
    for t in todo:
        wanted = {str(t.cc.name): dict(t.cc.tuning)} if t.cc.ours else {}
        for tunings, trials in phases:
            if all(tunings.get(k, v) == v for k, v in wanted.items()):
                tunings.update(wanted)
                trials.append(t)
                break
        else:
            phases.append((dict(wanted), [t]))
    return [trials for _, trials in phases]


@contextlib.contextmanager
def hold_algorithms(trials: Iterable[Trial], cc_impl: str | None) -> Iterator[dict[str, Metrics]]:
    """Load and tune, once for every lab of a run on this machine, each netrepro variant and port the trials
    name that a lab would register (a module of ours, a BPF program): under the machine lock, recorded in a
    ledger of this process's (unloaded at the end, or by `clean`).  Yields name: (impl, registered name)
    for the labs' sessions (Session(held=...)).  A port the kernel has itself is loaded by each lab as
    always (a module any number of runs may share).  UserError where trials tune a variant differently."""
    tunings, differ = shared_tunings(trials)
    if differ:
        raise UserError(
            "labs side by side share each congestion control, and these are tuned per trial: " + "; ".join(differ)
        )
    held: dict[str, Metrics] = {}
    with Ledger(contain=False) as ledger:
        for name, wanted in tunings.items():
            if loader.choose_impl(name, cc_impl) == "kernel":
                continue
            algorithm = loader.load(name, ledger, cc_impl)
            held[name] = ran_as(algorithm, algorithm.set(**wanted))
        yield held
