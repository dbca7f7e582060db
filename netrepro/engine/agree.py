"""One setup per CSV on a cluster: every host's backend, switch, kernel and implementations, agreed first.

Each worker of the run is asked (`probe`, through Dask's `Client.run`, before
any task) what its lab would use, decided by the functions that decide it when
a lab comes up (netrepro.runner.resume.planned_setup), and, where the user
named no `--impl`, which implementations each of the figure's congestion
controls could run as there.  `decide` then takes one setup for every host, or
refuses the run, naming the hosts that differ: hosts whose own choices differ
run the implementation that all of them have (the first of lkm, kernel, bpf
that gives every host the same ones), and the bridge where `--switch auto`
would pick Open vSwitch on some; kernels and backends must be one unless
`--allow-mixed`.  The setup is recorded in the manifest, and every worker runs
with it (`--impl`, `--switch` and `--shaper` as agreed); a worker that joins
the cluster later checks the agreed setup before its first trial
(`differences`), and refuses if its own differs.  Here too: which of a
scheduler's workers are reached over plain TCP from another machine
(`unsafe_workers`).
"""

from __future__ import annotations

import ipaddress
import platform
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ground.errors import NetreproError, SetupError, UserError
from netrepro.runner.resume import Setup
from netrepro.studykit.spec import Figure, Params

# Where the user named no --impl, the choices tried after each host's own, in this order: every host's
# module where all can build it, the kernel's own where all have it, else netrepro's BPF programs.
IMPL_CHOICES = ("lkm", "kernel", "bpf")
OWN = ""  # a probe's key for the choice the user made (--impl, or none: each host's own)
ADDRESS = re.compile(r"([A-Za-z0-9+.-]+)://(.+):(\d+)")  # a Dask address: scheme://host:port
LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """A literal loopback address (127.0.0.0/8, ::1) or `localhost`: no name is looked up."""
    host = host.strip("[]")
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def unsafe_workers(addresses: list[str]) -> list[str]:
    """Of a scheduler's workers, those reached by plain TCP (or any scheme but tls://) on another machine:
    loopback is the scheduler's own machine, as for --scheduler itself."""
    unsafe = []
    for address in addresses:
        found = ADDRESS.fullmatch(address)
        if found and (found.group(1) == "tls" or is_loopback(found.group(2))):
            continue
        unsafe.append(address)
    return unsafe


@dataclass(frozen=True)
class HostSetup:
    """What one worker's lab would use: its backend, switch and kernel, and for each --impl choice the
    implementation of each congestion control its grid names ("" for the hosts' default), or None where
    that choice cannot run there."""

    worker: str
    host: str
    kernel: str = ""
    backend: str = ""
    switch: str = ""
    impls: Mapping[str, Mapping[str, str] | None] = field(default_factory=dict)
    code: str = ""
    error: str = ""  # the machine cannot run the figure as asked: why

    @classmethod
    def of(cls, worker: str, probed: Any) -> HostSetup:
        """A probe's answer (a dict), or what Client.run returned for a probe that raised."""
        if isinstance(probed, BaseException) or not isinstance(probed, dict):
            return cls(worker, "?", error=f"its probe failed: {type(probed).__name__}: {probed}")
        return cls(worker=worker, **probed)


@dataclass(frozen=True)
class Agreed:
    """The one setup of a cluster run's CSV, and each host's answer."""

    backend: str
    switch: str
    kernel: str
    impls: Mapping[str, str]  # congestion control ("": the hosts' default) -> implementation
    cc_impl: str | None  # the --impl every worker runs with (None: each host's own, which agree)
    hosts: tuple[HostSetup, ...]
    notes: tuple[str, ...] = ()  # what was taken instead of a host's own choice, and why

    def setup(self) -> Setup:
        """As netrepro.runner.resume compares it with a figure's earlier rows."""
        return Setup(self.backend, self.switch, self.kernel, {k or None: v for k, v in self.impls.items()})

    def job_options(self, shaper: str, switch: str) -> dict[str, Any]:
        """The Job's shaper, switch and cc_impl: as agreed (a mixed backend, or no switch: as asked)."""
        return {
            "shaper": self.backend if self.backend != "mixed" else shaper,
            "switch": self.switch if self.switch in ("ovs", "bridge") else switch,
            "cc_impl": self.cc_impl,
        }

    def expected(self) -> dict[str, Any]:
        """What a worker's own setup must be (Job.expected: `differences`); a mixed kernel or backend: any."""
        said: dict[str, Any] = {"switch": self.switch, "impls": dict(self.impls)}
        said.update({k: v for k, v in (("kernel", self.kernel), ("backend", self.backend)) if v != "mixed"})
        return said

    def manifest(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "switch": self.switch,
            "kernel": self.kernel,
            "cc_impls": dict(self.impls),
            "impl_option": self.cc_impl,
            "notes": list(self.notes),
            "hosts": {
                h.worker: {"host": h.host, "kernel": h.kernel, "backend": h.backend, "switch": h.switch}
                for h in self.hosts
            },
        }


def probe(fig: Figure, grid: list[Params], shaper: str, switch: str, cc_impl: str | None) -> dict[str, Any]:
    """On a worker (Client.run): what this host's lab would use, as HostSetup's fields."""
    from ground import kernel, results
    from kmod import loader
    from netrepro.runner import resume

    answer: dict[str, Any] = {"host": platform.node(), "kernel": kernel.release(), "code": results.code_fingerprint()}
    try:
        own = resume.planned_setup(fig, grid, shaper, switch, cc_impl)
    except NetreproError as e:
        return {**answer, "error": str(e)}
    headers = Path(f"/lib/modules/{kernel.release()}/build").exists()

    def buildable(chosen: dict[str, str]) -> dict[str, str] | None:
        # choose_impl grants a variant's module wherever modules load (--impl lkm); building it takes the headers
        lkm_variant = any(v == "lkm" and k and not loader.algorithm(k).port for k, v in chosen.items())
        return None if lkm_variant and not headers else chosen

    impls: dict[str, dict[str, str] | None] = {OWN: buildable({k or "": v for k, v in own.impls.items()})}
    for choice in IMPL_CHOICES if cc_impl is None else ():
        try:
            chosen = {k or "": loader.choose_impl(k, choice) if k in loader.ALGORITHMS else "kernel" for k in own.impls}
        except NetreproError:
            impls[choice] = None
            continue
        impls[choice] = buildable(chosen)
    return {**answer, "backend": own.backend, "switch": own.switch, "impls": impls}


def differences(expected: Mapping[str, Any], mine: Setup) -> str:
    """How a worker's own setup (resume.planned_setup, with the agreed options) differs from the run's ("": not)."""
    said = [
        f"{column} {getattr(mine, column)}, the run's {expected[column]}"
        for column in ("kernel", "backend", "switch")
        if column in expected and getattr(mine, column) != expected[column]
    ]
    own = {k or "": v for k, v in mine.impls.items()}
    for cc, impl in sorted(expected.get("impls", {}).items()):
        if cc in own and own[cc] != impl:
            said.append(f"{cc or 'the default'} as {own[cc]}, the run's as {impl}")
    return "; ".join(said)


def _by_value(hosts: Iterable[HostSetup], value: Any) -> str:
    """`a (vm1, vm2); b (vm3)`: each value, and the hosts with it."""
    groups: dict[str, list[str]] = {}
    for h in hosts:
        groups.setdefault(str(value(h)), []).append(h.host)
    return "; ".join(f"{v} ({', '.join(names)})" for v, names in groups.items())


def _impls_words(impls: Mapping[str, str] | None) -> str:
    if impls is None:
        return "none it can run"
    return ", ".join(f"{cc or 'the default'} as {impl}" for cc, impl in sorted(impls.items())) or "no variant"


def decide(
    fig: Figure, hosts: list[HostSetup], code: str, cc_impl: str | None, switch: str, allow_mixed: bool
) -> Agreed:
    """One setup for every host (their probes), or a refusal naming the hosts that differ: UserError where
    an option or other hosts would do, SetupError where a host cannot run the figure as asked."""
    if not hosts:
        raise SetupError(f"{fig.full_name}: no worker to ask")
    name = fig.full_name
    failed = [h for h in hosts if h.error]
    if failed:
        raise SetupError(f"{name}: " + "; ".join(f"{h.host} ({h.worker}): {h.error}" for h in failed))
    other = [h for h in hosts if h.code != code]
    if other:
        raise UserError(
            f"{name}: {_by_value(other, lambda h: h.code)} run other code than the coordinator ({code}); "
            "check out the coordinator's commit there"
        )
    for column, way in (("kernel", "hosts of one kernel"), ("backend", "--shaper netem or --shaper delayline")):
        if len({getattr(h, column) for h in hosts}) > 1 and not allow_mixed:
            raise UserError(
                f"{name}: the hosts differ in {column}: {_by_value(hosts, lambda h, c=column: getattr(h, c))}; "
                f"one CSV holds one {column}: {way}, or --allow-mixed runs on all the same"
            )
    notes: list[str] = []
    switches = {h.switch for h in hosts}
    chosen_switch = hosts[0].switch
    if len(switches) > 1:
        if switch != "auto":
            raise UserError(f"{name}: --switch {switch}: the hosts differ: {_by_value(hosts, lambda h: h.switch)}")
        chosen_switch = "bridge"  # every host has the Linux bridge
        notes.append(f"switch bridge on every host: --switch auto would take {_by_value(hosts, lambda h: h.switch)}")
    chosen_impls: Mapping[str, str] | None = None
    option: str | None = cc_impl
    for choice in (OWN, *(IMPL_CHOICES if cc_impl is None else ())):
        each = [h.impls.get(choice) for h in hosts]
        if all(e is not None for e in each) and all(e == each[0] for e in each):
            chosen_impls, option = each[0], (choice or cc_impl)
            if choice:
                own = _by_value(hosts, lambda h: _impls_words(h.impls.get(OWN)))
                notes.append(f"--impl {choice} on every host, the implementation all of them have (their own: {own})")
            break
    if chosen_impls is None:
        asked = f"--impl {cc_impl}" if cc_impl else "their own choice"
        raise UserError(
            f"{name}: the hosts would run different implementations ({asked}): "
            f"{_by_value(hosts, lambda h: _impls_words(h.impls.get(OWN)))}"
            + ("" if cc_impl else f", and no --impl ({', '.join(IMPL_CHOICES)}) is on all of them")
            + "; one CSV holds one implementation: run on hosts that agree"
            + (", or another --impl" if cc_impl else "")
        )
    backends = {h.backend for h in hosts}
    kernels = {h.kernel for h in hosts}
    return Agreed(
        backend=hosts[0].backend if len(backends) == 1 else "mixed",
        switch=chosen_switch,
        kernel=hosts[0].kernel if len(kernels) == 1 else "mixed",
        impls=dict(chosen_impls),
        cc_impl=option,
        hosts=tuple(hosts),
        notes=tuple(notes),
    )
