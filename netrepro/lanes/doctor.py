"""`doctor`: what this kernel and userland offer, and which backend each need gets."""

from __future__ import annotations

from typing import Any

from ground import kernel
from ground.results import TOOLS
from kmod import loader
from servers import browser
from topologies.emulation import ShaperUnavailable, choose_backend, nfqueue_works


def report() -> dict[str, Any]:
    available, allowed = kernel.congestion_controls()
    features = {
        "sch_netem": kernel.netem_works(),
        "netem_seed": kernel.netem_seed_works(),
        "sch_htb": kernel.qdisc_works("htb"),
        "sch_tbf": kernel.qdisc_works("tbf", "rate", "1mbit", "burst", "32kbit", "latency", "50ms"),
        "ifb": kernel.ifb_works(),
        "nfqueue": nfqueue_works(),
        "loadable_modules": kernel.modules_supported(),
        "lockdown": kernel.lockdown(),
        "bpf_struct_ops": kernel.struct_ops_supported(),
        "tcp_probe_tracepoint": kernel.tcp_probe_available(),
    }
    try:
        shaper: str | None = choose_backend("auto")
    except ShaperUnavailable:
        shaper = None
    advice = []
    if (guest := kernel.guest_info()) is not None:
        advice.append(f"this is the stock-kernel lane's guest ({guest['accel']}): timing is coarse under tcg")
    if not features["sch_netem"]:
        advice.append(
            "no sch_netem here: the delay line emulates delay and loss; `run.sh --vm` uses netem in a stock kernel"
        )
    if not features["loadable_modules"]:
        advice.append(
            "no loadable modules here: congestion controls load as BPF struct_ops; `run.sh --vm` loads the modules"
        )
    return {
        "kernel": kernel.release(),
        "features": features,
        "congestion_control": {
            "available": available,
            "allowed_in_namespaces": allowed,
            "loadable_modules": kernel.loadable_congestion_controls() if kernel.modules_supported() else [],
            "linux_ships": {name: loader.resolution(name) for name in loader.LINUX_SHIPS},
        },
        "tools": {t: kernel.tool_version(t) for t in (*TOOLS, "mnexec", "nsenter")},
        # the browsers a page load can run (page_load's client): name -> version, only those installed
        "browsers": browser.installed_browsers(),
        "backends": {
            "shaper": shaper,
            "congestion_control": "lkm" if features["loadable_modules"] and features["lockdown"] == "none" else "bpf",
        },
        "advice": advice,
    }


def render(doc: dict[str, Any]) -> str:
    lines = [f"kernel {doc['kernel']}", "", "kernel features:"]
    for name, value in doc["features"].items():
        mark = value if isinstance(value, str) else ("yes" if value else "no")
        lines.append(f"  {name:<22} {mark}")
    cc = doc["congestion_control"]
    lines += [
        "",
        f"congestion control: available {' '.join(cc['available'])}",
        f"                    allowed in namespaces {' '.join(cc['allowed_in_namespaces'])}",
        f"                    shipped as modules {' '.join(cc['loadable_modules']) or '(none)'}",
        "                    the algorithms Linux ships (seed 004), as this machine runs them:",
        *(f"                      {name:<10} {how}" for name, how in cc["linux_ships"].items()),
        "",
        "tools:",
    ]
    for tool, version in doc["tools"].items():
        lines.append(f"  {tool:<16} {version or 'MISSING'}")
    browsers = doc["browsers"]
    lines += ["", "browsers (page_load client=...):"]
    lines += [f"  {name:<16} {version or 'version unknown'}" for name, version in browsers.items()]
    missing = [name for name in browser.BROWSERS if name not in browsers]
    lines += [f"  {name:<16} MISSING ({browser.BROWSERS[name]})" for name in missing]
    b = doc["backends"]
    lines += [
        "",
        f"backends: shaper {b['shaper'] or 'NONE AVAILABLE'}, congestion control {b['congestion_control']}",
    ]
    lines += [f"note: {a}" for a in doc["advice"]]
    return "\n".join(lines)
