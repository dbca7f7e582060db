"""Per-host TCP settings of a study: route windows, sysctls, congestion control.

`initcwnd` goes on the server's route to the client and `initrwnd` on the
client's route to the server (a host route to the peer, `ip route replace`);
the sysctls (`tcp_no_metrics_save`, `tcp_slow_start_after_idle`,
`tcp_rmem`, `tcp_congestion_control`) are per network namespace, so they
are set inside the host and vanish with it.  The builders are pure and
return argument lists; `apply_host_tcp` runs them and refuses the root
namespace, whose settings belong to the machine, not to a trial.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ground.errors import SetupError
from ground.ledger import Ledger
from ground.proc import Netns, run
from ground.units import QuantityError

__all__ = [
    "DEFAULT_TCP_RMEM",
    "HostTcp",
    "apply_host_tcp",
    "host_tcp_commands",
    "read_route_metrics",
    "route_argv",
    "route_device",
    "sysctl_argv",
    "tcp_rmem_value",
]

# Linux's defaults (min, default, max) for a host with this machine's memory.
DEFAULT_TCP_RMEM = (4096, 131072, 6291456)


@dataclass(frozen=True)
class HostTcp:
    """What one host's TCP is set to; None leaves a setting as the lab made it."""

    congestion_control: str | None = None
    initcwnd: int | None = None  # segments, on the route to the peer (the server's)
    initrwnd: int | None = None  # segments, on the route to the peer (the client's)
    slow_start_after_idle: bool | None = None
    no_metrics_save: bool = True  # one trial must not teach the next
    receive_buffer: int | None = None  # bytes: the ceiling of receive-buffer autotuning (tcp_rmem max)

    def __post_init__(self) -> None:
        for name in ("initcwnd", "initrwnd"):
            value = getattr(self, name)
            if value is not None and not 1 <= value <= 1024:
                raise QuantityError(name, value, "allowed range is 1 to 1024 segments")
        if self.receive_buffer is not None and self.receive_buffer < DEFAULT_TCP_RMEM[1]:
            raise QuantityError("receive_buffer", self.receive_buffer, f"at least {DEFAULT_TCP_RMEM[1]} bytes")

    def describe(self) -> dict[str, Any]:
        """Plain values for CSV rows and manifests."""
        return {
            "congestion_control": self.congestion_control,
            "initcwnd": self.initcwnd,
            "initrwnd": self.initrwnd,
            "slow_start_after_idle": self.slow_start_after_idle,
            "no_metrics_save": self.no_metrics_save,
            "receive_buffer": self.receive_buffer,
        }


def sysctl_argv(key: str, value: str | int) -> list[str]:
    return ["sysctl", "-q", "-w", f"{key}={value}"]


def tcp_rmem_value(receive_buffer: int) -> str:
    """tcp_rmem with the autotuning ceiling raised to `receive_buffer` bytes."""
    low, default, _ = DEFAULT_TCP_RMEM
    return f"{low} {default} {receive_buffer}"


def route_argv(
    peer: str, dev: str, *, initcwnd: int | None = None, initrwnd: int | None = None, via: str | None = None
) -> list[str]:
    """A host route to the peer carrying the initial windows (replace: creates or changes it),
    through the router `via` where the peer is on another subnet."""
    argv = ["ip", "route", "replace", f"{peer}/32", *(["via", via] if via else []), "dev", dev]
    if initcwnd is not None:
        argv += ["initcwnd", str(initcwnd)]
    if initrwnd is not None:
        argv += ["initrwnd", str(initrwnd)]
    return argv


def host_tcp_commands(
    settings: HostTcp, peer: str, dev: str, previous: HostTcp | None = None, via: str | None = None
) -> list[list[str]]:
    """Every command that puts a host's TCP into `settings`, in order; with
    `previous` (what the host was last set to), only those that change it."""

    def changed(*names: str) -> bool:
        return previous is None or any(getattr(settings, n) != getattr(previous, n) for n in names)

    commands = []
    if settings.congestion_control is not None and changed("congestion_control"):
        commands.append(sysctl_argv("net.ipv4.tcp_congestion_control", settings.congestion_control))
    if changed("no_metrics_save"):
        commands.append(sysctl_argv("net.ipv4.tcp_no_metrics_save", int(settings.no_metrics_save)))
    if settings.slow_start_after_idle is not None and changed("slow_start_after_idle"):
        commands.append(sysctl_argv("net.ipv4.tcp_slow_start_after_idle", int(settings.slow_start_after_idle)))
    if settings.receive_buffer is not None and changed("receive_buffer"):
        commands.append(sysctl_argv("net.ipv4.tcp_rmem", tcp_rmem_value(settings.receive_buffer)))
    if (settings.initcwnd is not None or settings.initrwnd is not None) and changed("initcwnd", "initrwnd"):
        commands.append(route_argv(peer, dev, initcwnd=settings.initcwnd, initrwnd=settings.initrwnd, via=via))
    return commands


def route_device(ns: Netns, peer: str) -> str:
    """The interface through which ns reaches peer."""
    return route_hop(ns, peer)[0]


def route_hop(ns: Netns, peer: str) -> tuple[str, str | None]:
    """The interface through which ns reaches peer, and the router on the way (None: on-link)."""
    routes = json.loads(run(["ip", "-j", "route", "get", peer], ns).stdout or "[]")
    if not routes or "dev" not in routes[0]:
        raise SetupError(f"[{ns.name}] no route to {peer}")
    gateway = routes[0].get("gateway")
    return str(routes[0]["dev"]), (str(gateway) if gateway else None)


def read_route_metrics(ns: Netns, peer: str) -> dict[str, int]:
    """The metrics (initcwnd, initrwnd...) of ns's host route to peer; empty if none."""
    routes = json.loads(run(["ip", "-j", "route", "show", f"{peer}/32"], ns).stdout or "[]")
    metrics: dict[str, int] = {}
    for route in routes:
        for entry in route.get("metrics", []):
            metrics.update({k: int(v) for k, v in entry.items()})
    return metrics


def apply_host_tcp(
    ns: Netns, settings: HostTcp, peer: str, ledger: Ledger, previous: HostTcp | None = None, dev: str | None = None
) -> None:
    """Set a lab host's TCP; its namespace keeps the settings until the lab goes.

    `previous` is what this host was last set to (only the differences are
    applied), `dev` its interface towards the peer on its own subnet (else
    the interface and router are looked up).
    """
    if ns.pid is None:
        raise ValueError("per-host TCP settings go into an emulated host, never the root namespace")
    if settings.congestion_control is not None:
        # A namespace may select only what the root namespace allows; the ledger undoes the widening.
        ledger.allow_congestion_control(settings.congestion_control)
    via = None
    if dev is None:
        dev, via = route_hop(ns, peer)
    for argv in host_tcp_commands(settings, peer, dev, previous, via=via):
        run(argv, ns)
