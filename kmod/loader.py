"""Loading the congestion-control variants, tuning them, and reading them back.

Each variant (`cubic_plus`, `reno_beta`, `newcwv`) exists as a loadable
module and as a BPF struct_ops program with the same name and parameters.
`load()` takes the module where the kernel takes modules (and the module
builds against its headers), else the BPF program; `impl=` forces one.  It
lets Mininet's namespaces select the algorithm (the root namespace's
`tcp_allowed_congestion_control`) and records everything in the run's
ledger, so the run's end, or `run.sh clean`, unloads and narrows back.

Parameters are set and read back from the kernel, never computed here: the
module's sysfs parameters, or the BPF program's parameter map, whose field
layout is read from its BTF.  The BPF programs compute their effective
values (e.g. `beta_effective`) when a connection starts, so `set()` opens
one loopback connection with the algorithm before reading them back.
"""

from __future__ import annotations

import json
import socket
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ground import kernel
from ground.errors import NetreproError, SetupError, UserError
from ground.ledger import Ledger, ledger_files, machine_lock
from ground.proc import run

HERE = Path(__file__).resolve().parent
IMPLS = ("lkm", "bpf")


class CongestionControlError(NetreproError):
    """An algorithm that cannot be loaded, or a parameter the kernel refused."""


class CongestionControlInputError(CongestionControlError, UserError):
    """A variant, parameter, value or implementation that is not one netrepro has."""


class CongestionControlUnavailable(CongestionControlError, SetupError):
    """This kernel or machine cannot load or tune the algorithm now."""


@dataclass(frozen=True)
class Param:
    name: str
    low: int
    high: int
    default: int
    unit: str


@dataclass(frozen=True)
class Variant:
    name: str
    params: tuple[Param, ...]
    bpf_map: str  # the BPF program's parameter map
    outputs: tuple[str, ...]  # values the kernel computes, read back

    def param(self, key: str) -> Param:
        for p in self.params:
            if p.name == key:
                return p
        names = ", ".join(p.name for p in self.params)
        raise CongestionControlInputError(f"{self.name} has no parameter {key!r}; it has {names}")


VARIANTS = {
    v.name: v
    for v in (
        Variant(
            "cubic_plus",
            (
                Param("beta", 1, 1023, 717, "1/1024"),
                Param("n", 1, 10, 1, "connections"),
                Param("rtt_scaled", 0, 1, 0, "flag"),
                Param("rtt_ref_us", 1000, 10_000_000, 100_000, "us"),
            ),
            "cplus_params",
            ("beta_effective", "backoff_pct"),
        ),
        Variant("reno_beta", (Param("r", 1, 999, 500, "1/1000"),), "rbeta_params", ("backoff_permille",)),
        Variant(
            "newcwv",
            (Param("nvp_ms", 100, 3_600_000, 300_000, "ms"), Param("pacing", 0, 1, 0, "flag")),
            "ncwv_params",
            (),
        ),
    )
}


def parse_params(variant: Variant, pairs: dict[str, str | int]) -> dict[str, int]:
    """Check key=value pairs against the variant's parameters and ranges."""
    out = {}
    for key, raw in pairs.items():
        p = variant.param(key)
        try:
            value = int(raw)
        except ValueError as e:
            raise CongestionControlInputError(f"--cc-param {key}={raw}: a whole number is needed ({p.unit})") from e
        if not p.low <= value <= p.high:
            raise CongestionControlInputError(
                f"--cc-param {key}={raw}: allowed range is {p.low} to {p.high} ({p.unit})"
            )
        out[key] = value
    return out


def choose_impl(name: str, requested: str | None = None) -> str:
    """`lkm` where the kernel takes modules and headers are there, else `bpf`; or the one requested."""
    if requested not in (None, *IMPLS):
        raise CongestionControlInputError(f"--impl {requested!r}: choose lkm or bpf")
    modules = kernel.modules_supported() and kernel.lockdown() == "none"
    headers = Path(f"/lib/modules/{kernel.release()}/build").exists()
    if requested == "lkm" or (requested is None and modules and headers):
        if not modules:
            raise CongestionControlUnavailable("--impl lkm: this kernel does not load modules; use --impl bpf or --vm")
        return "lkm"
    if not kernel.struct_ops_supported():
        raise CongestionControlUnavailable(
            "this kernel has neither loadable modules nor BPF struct_ops congestion control"
        )
    return "bpf"


def loadable(name: str, requested: str | None = None) -> str:
    """The implementation `load()` would take here; CongestionControlUnavailable when it could not load now."""
    impl = choose_impl(name, requested)
    available, _ = kernel.congestion_controls()
    if name in available:
        raise CongestionControlUnavailable(_held_by_whom(name))
    return impl


def _trigger_init(name: str) -> None:
    """Open and close one loopback connection using the algorithm (runs its init)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, name.encode())
            client.connect(server.getsockname())
            conn, _ = server.accept()
            conn.close()


def _held_by_whom(name: str) -> str:
    """Why `name` cannot be loaded: which run holds it, and what to do."""
    for found in ledger_files():
        if any(e.get("kind") in ("struct_ops", "module") and e.get("name") == name for e in found.effective()):
            owner = found.owner or {}
            if found.purpose:
                return f"{name} is held by `run.sh {found.purpose}`: `run.sh cc unload {name}` releases it"
            if found.alive:
                return f"{name} is in use by another run (pid {owner.get('pid')}); wait for it to finish"
            return f"{name} is still registered by a run that died (pid {owner.get('pid')}): `run.sh clean` removes it"
    return f"{name} is already registered, not by netrepro; not touching it"


class LoadedAlgorithm:
    """One variant loaded for a run; unloaded through the run's ledger."""

    def __init__(self, variant: Variant, impl: str, ledger: Ledger | None) -> None:
        self.variant = variant
        self.impl = impl
        self.ledger = ledger
        self.name = variant.name

    # -- loading --------------------------------------------------------------------

    def load(self) -> LoadedAlgorithm:
        if self.ledger is None:
            raise CongestionControlUnavailable("loading needs the run's ledger")
        # Build first, outside the machine lock: it takes minutes on a fresh machine.
        if self.impl == "lkm":
            run(["make", "-s", "-C", str(HERE), f"KDIR=/lib/modules/{kernel.release()}/build"], timeout=600)
            kind, argv = "module", ["insmod", str(HERE / f"{self.name}.ko")]
        else:
            run(["make", "-s", "-C", str(HERE), "bpf"], timeout=600)
            kind, argv = "struct_ops", ["bpftool", "struct_ops", "register", str(HERE / "bpf" / f"{self.name}.bpf.o")]
        with machine_lock(self.ledger.directory):
            available, _ = kernel.congestion_controls()
            if self.name in available:
                raise CongestionControlUnavailable(_held_by_whom(self.name))
            with self.ledger.change({"kind": kind, "name": self.name}):
                run(argv)
            self.ledger.allow_congestion_control(self.name)
        return self

    # -- parameters -----------------------------------------------------------------

    def _map_id(self) -> int:
        maps = json.loads(run(["bpftool", "-j", "map", "show"]).stdout)
        ids = [int(m["id"]) for m in maps if m.get("name") == self.variant.bpf_map]
        if not ids:
            raise CongestionControlUnavailable(f"{self.name}: parameter map {self.variant.bpf_map} not found")
        return max(ids)  # an unregistered predecessor's map may linger until its sockets close

    def _bpf_values(self) -> dict[str, int]:
        doc = json.loads(
            run(["bpftool", "-j", "map", "lookup", "id", str(self._map_id()), "key", "0", "0", "0", "0"]).stdout
        )
        return {k: int(v) for k, v in doc["formatted"]["value"].items()}

    def set(self, **params: int) -> dict[str, int]:
        """Set parameters at run time (established connections follow); return what the kernel reports."""
        checked = parse_params(self.variant, dict(params))
        if self.impl == "lkm":
            for key, value in checked.items():
                try:
                    Path(f"/sys/module/{self.name}/parameters/{key}").write_text(f"{value}\n")
                except OSError as e:
                    raise CongestionControlUnavailable(f"{self.name}: the module refused {key}={value}: {e}") from e
        else:
            values = self._bpf_values()
            values.update(checked)
            # The map's fields are __u32 in BTF order (see kmod/README.md).
            raw = struct.pack(f"<{len(values)}I", *values.values())
            run(["bpftool", "map", "update", "id", str(self._map_id()), "key", "0", "0", "0", "0",
                 "value", "hex", *(f"{b:02x}" for b in raw)])  # fmt: skip
        return self.read()

    def read(self) -> dict[str, int]:
        """Parameters in use and the values the kernel derived from them."""
        if self.impl == "lkm":
            base = Path(f"/sys/module/{self.name}/parameters")
            return {f.name: int(f.read_text()) for f in sorted(base.iterdir())}
        _trigger_init(self.name)
        values = self._bpf_values()
        inputs = {p.name: values.get(f"{p.name}_in_use", values.get(p.name, p.default)) for p in self.variant.params}
        return {**values, **inputs}

    def counters(self) -> dict[str, int]:
        """The BPF program's counters as they are now (no connection opened)."""
        return self._bpf_values() if self.impl == "bpf" else {}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "implementation": self.impl, "values": self.read()}


def load(name: str, ledger: Ledger, impl: str | None = None) -> LoadedAlgorithm:
    if name not in VARIANTS:
        raise CongestionControlInputError(f"unknown variant {name!r}; netrepro's are {', '.join(VARIANTS)}")
    return LoadedAlgorithm(VARIANTS[name], choose_impl(name, impl), ledger).load()


def is_builtin(name: str) -> bool:
    """An algorithm the kernel already offers (built in, or already loaded)."""
    available, _ = kernel.congestion_controls()
    return name in available and name not in VARIANTS


def attach(name: str) -> LoadedAlgorithm:
    """The variant as it is loaded now (by `run.sh cc load`), to tune it."""
    available, _ = kernel.congestion_controls()
    if name not in VARIANTS or name not in available:
        raise CongestionControlUnavailable(f"{name} is not loaded; `run.sh cc load {name}` first")
    impl = "lkm" if Path(f"/sys/module/{name}/parameters").is_dir() else "bpf"
    return LoadedAlgorithm(VARIANTS[name], impl, ledger=None)
