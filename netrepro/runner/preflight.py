"""Preflight: everything a run needs is checked before its first namespace is made.

Bad input first (a congestion control neither the kernel nor netrepro has:
a UserError listing the ones there are), then the machine: root, the tools
the lab and the workload run, an emulation backend that works here, and an
implementation each netrepro variant can load as (SetupError).  Nothing is
created here, except what the kernel probes of topologies.emulation load and
unload again.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ground import kernel
from ground.errors import SetupError, UserError
from ground.path import DROP_TAIL
from kmod import loader
from netrepro.runner import countertrace
from netrepro.runner.workloads import WORKLOADS, HttpBurstsKeys, PageLoadKeys
from netrepro.studykit import trial
from netrepro.studykit.spec import Figure
from servers import browser
from topologies import emulation, shaping

# What every lab runs: Mininet's helpers, the links and qdiscs, the path's verification, the hosts' settings.
LAB_TOOLS = ("ip", "tc", "ethtool", "ping", "nsenter", "mnexec", "ss", "sysctl", "iperf3")
# The delay line's NFQUEUE rules (the netem backend needs no iptables).
DELAYLINE_TOOLS = (shaping.IPTABLES,)
# The server every figure's trials share (each workload declares its clients: netrepro.runner.workloads.WORKLOADS).
FIGURE_TOOLS = ("apache2",)
# Building and loading a netrepro variant, by implementation (kmod.loader).
VARIANT_TOOLS = {"lkm": ("make", "insmod"), "bpf": ("make", "clang", "bpftool")}
# The kernel's own congestion control: its module, where it is not built in.
PORT_TOOLS = {"kernel": ("modprobe",), "lkm": ("modprobe",), "bpf": VARIANT_TOOLS["bpf"]}


@dataclass(frozen=True)
class Needs:
    """What one run asks of the machine."""

    what: str  # how the run is named in a message, e.g. `run cubicplus/fig10`
    tools: tuple[str, ...] = LAB_TOOLS
    congestion_controls: tuple[str, ...] = ("cubic",)
    shaper: str = "auto"
    cc_impl: str | None = None  # kernel, lkm or bpf (kmod.loader.choose_impl); None: its choice
    named_by: str = "cc "  # how the user named them: `--cc `, `--set cc=`, or the figure's `cc `
    qdiscs: tuple[str, ...] = ()  # beyond the lab's own: fq where a trial paces with it (pacer=fq)
    aqms: tuple[str, ...] = ()  # the bottleneck's queue disciplines other than drop-tail (a path's `qdisc`)
    held: tuple[str, ...] = ()  # variants the run holds loaded for its labs (session.hold_algorithms): not loaded here
    browsers: tuple[str, ...] = ()  # the browsers its page loads run (servers.browser.BROWSERS)


def figure_needs(
    fig: Figure,
    grid: Iterable[Mapping[str, object]],
    overrides: Mapping[str, object],
    shaper: str,
    cc_impl: str | None,
    held: Iterable[str] = (),
) -> Needs:
    """A figure run: the lab's tools, the server's, its workload's, and every congestion control its grid names."""
    workload = WORKLOADS[fig.workload]
    trials = [trial.build(p, 0, fig.x, workload.keys_type, fig.topology) for p in grid]
    named = [t.cc.name for t in trials if t.cc.name is not None]
    held = tuple(held)
    browsers = set()
    for t in trials:
        keys = t.workload
        if isinstance(keys, PageLoadKeys):
            if (why := browser.refused(keys.client, keys.protocol)) is not None:
                raise UserError(f"{fig.full_name}: {why}")
            browsers |= {keys.client} & set(browser.BROWSERS)
        traced = isinstance(keys, HttpBurstsKeys) and keys.pipeack_trace
        if traced and (why := countertrace.refused(t.cc.name, held)) is not None:
            raise UserError(f"{fig.full_name}: {why}")
    return Needs(
        what=f"run {fig.full_name}",
        tools=(*LAB_TOOLS, *FIGURE_TOOLS, *workload.tools),
        browsers=tuple(sorted(browsers)),
        # the lab's hosts start with CUBIC before each trial sets its own
        congestion_controls=tuple(dict.fromkeys(["cubic", *named])),
        shaper=shaper,
        cc_impl=cc_impl,
        named_by="--set cc=" if "cc" in overrides else f"{fig.full_name}: cc ",
        qdiscs=("fq",) if any(t.hosts.pacer == "fq" for t in trials) else (),
        aqms=tuple(sorted({t.path.qdisc for t in trials} - {DROP_TAIL})),
        held=held,
    )


def lab_needs(command: str, cc: str, shaper: str, cc_impl: str | None, qdisc: str = DROP_TAIL) -> Needs:
    """`check` and `shell`: the lab alone, with the hosts on --cc and the bottleneck's --qdisc."""
    aqms = (qdisc,) if qdisc != DROP_TAIL else ()
    return Needs(what=command, congestion_controls=(cc,), shaper=shaper, cc_impl=cc_impl, named_by="--cc ", aqms=aqms)


# -- probes (replaced in the unit tests) -----------------------------------------------


def is_root() -> bool:
    return os.geteuid() == 0


def on_path(tool: str) -> bool:
    return shutil.which(tool) is not None


def qdisc_available(kind: str) -> bool:
    return kernel.qdisc_works(kind)


def kernel_congestion_controls() -> list[str]:
    """What the kernel offers now, and what it would load as a module on first use."""
    available, _ = kernel.congestion_controls()
    shipped = kernel.loadable_congestion_controls() if kernel.modules_supported() else []
    return list(dict.fromkeys([*available, *shipped]))


# -- the check ---------------------------------------------------------------------------


def preflight(needs: Needs) -> None:
    """Refuse the run before anything is built: UserError for a name nobody offers, SetupError for the machine."""
    check_request(needs)
    check_machine(needs)


def check_request(needs: Needs) -> None:
    """What is known without a probe: every congestion control named exists (UserError), and we are root."""
    offered = kernel_congestion_controls()
    for name in needs.congestion_controls:
        if name not in offered and name not in loader.ALGORITHMS:
            allowed = ", ".join([*offered, *(v for v in loader.ALGORITHMS if v not in offered)])
            raise UserError(f"{needs.named_by}{name}: no such congestion control here; allowed: {allowed}")
    if not is_root():
        raise SetupError(f"{needs.what} needs root (namespaces, qdiscs, tracefs): run it with `sudo ./run.sh`")


def check_machine(needs: Needs) -> None:
    """The tools on PATH, an emulation backend that works, and each netrepro variant loadable now (SetupError)."""
    tools = list(needs.tools)
    if emulation.choose_backend(needs.shaper) == "delayline":  # ShaperUnavailable says what is missing
        tools += DELAYLINE_TOOLS
    for name in needs.congestion_controls:
        if name in loader.ALGORITHMS and name not in needs.held:
            impl = loader.loadable(name, needs.cc_impl)
            tools += (PORT_TOOLS if loader.ALGORITHMS[name].port else VARIANT_TOOLS)[impl]
    for name in needs.browsers:
        binary = browser.BROWSERS[name]
        if not binary.is_file():
            raise SetupError(
                f"{needs.what}: client={name} runs {binary}, which is not here: Debian's package "
                f"`{browser.PACKAGES[name]}` has it "
                "(run.sh installs it on Debian; Ubuntu ships Chromium and Firefox as snaps only, whose confinement "
                "keeps them from a lab's namespace and profile: run browser loads on Debian)"
            )
    for kind in needs.qdiscs:
        if not qdisc_available(kind):
            raise SetupError(
                f"{needs.what}: pacer={kind} needs the {kind} qdisc (sch_{kind}), which this kernel does not have; "
                "pacer=auto paces with TCP's own pacing where fq is missing"
            )
    for kind in needs.aqms:
        if not qdisc_available(kind):
            raise SetupError(
                f"{needs.what}: qdisc={kind} needs the {kind} qdisc (sch_{kind}), which this kernel does not have; "
                f"the stock-kernel lane has it: sudo ./run.sh --vm {needs.what}"
            )
    missing = [t for t in dict.fromkeys(tools) if not on_path(t)]
    if missing:
        raise SetupError(
            f"{needs.what} needs {', '.join(missing)}: not found on PATH; "
            "`sudo ./run.sh` installs what is missing, `run.sh doctor` lists every tool"
        )
