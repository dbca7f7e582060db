"""Loading the congestion controls, tuning them, and reading them back.

Two kinds of algorithm live here.  netrepro's own variants (`cubic_plus`,
`reno_beta`, `newcwv`) exist as a loadable module (`lkm`) and as a BPF
struct_ops program (`bpf`) with the same name and parameters.  The ports
(`bic`, `highspeed`, ..., `yeah`: PORTS) are BPF programs that behave as the
kernel's own modules do (kmod/bpf/port.h); a port name resolves to the
kernel's own implementation (`kernel`: built in, or its module) where the
kernel has it, else to the port.  `impl=` forces one.  A port forced on a
kernel that has the algorithm registers as `bpf_<name>`, so that the two
run side by side; `LoadedAlgorithm.registered` is the name sockets use.

`load()` lets Mininet's namespaces select the algorithm (the root
namespace's `tcp_allowed_congestion_control`) and records everything in the
run's ledger, so the run's end, or `run.sh clean`, unloads and narrows back.

Parameters are set and read back from the kernel, never computed here: the
module's sysfs parameters, or the BPF program's parameter map, whose field
layout is read from its BTF.  The variants compute their effective values
(e.g. `beta_effective`) when a connection starts, so `set()` opens one
loopback connection with the algorithm before reading them back.
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ground import kernel, modules
from ground.errors import NetreproError, SetupError, UserError
from ground.ledger import Ledger
from ground.ledgers import ledger_files, machine_lock
from ground.proc import run

HERE = Path(__file__).resolve().parent
IMPLS = ("kernel", "lkm", "bpf")


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
    outputs: tuple[str, ...] = ()  # values the kernel computes, read back
    port: bool = False  # a port of the kernel's module tcp_<name> (kmod/bpf/port.h), not netrepro's own

    @property
    def module(self) -> str:
        """The module's name: netrepro's own for a variant, the kernel's tcp_<name> for a port."""
        return f"tcp_{self.name}" if self.port else self.name

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
            (
                Param("nvp_ms", 100, 3_600_000, 300_000, "ms"),
                Param("pacing", 0, 1, 0, "flag"),
                Param("no_filter", 0, 1, 0, "flag"),
            ),
            "ncwv_params",
            (),
        ),
    )
}


# The ports of the kernel's modules (kmod/bpf/<name>.bpf.c), with the
# modules' own parameters: names, defaults and units as the kernel has them.
PORTS = {
    v.name: v
    for v in (
        Variant(
            "bic",
            (
                Param("fast_convergence", 0, 1, 1, "flag"),
                Param("max_increment", 1, 65535, 16, "segments"),
                Param("low_window", 1, 65535, 14, "segments"),
                Param("beta", 1, 1023, 819, "1/1024"),
                Param("initial_ssthresh", 0, 65535, 0, "segments"),
                Param("smooth_part", 1, 1000, 20, "rounds"),
            ),
            "bic_params",
            port=True,
        ),
        Variant("highspeed", (), "hstcp_params", port=True),
        Variant(
            "htcp",
            (Param("use_rtt_scaling", 0, 1, 1, "flag"), Param("use_bandwidth_switch", 0, 1, 1, "flag")),
            "htcp_params",
            port=True,
        ),
        Variant("hybla", (Param("rtt0", 1, 1000, 25, "ms"),), "hybla_params", port=True),
        Variant(
            "illinois",
            (Param("win_thresh", 1, 65535, 15, "segments"), Param("theta", 1, 255, 5, "RTTs")),
            "illinois_params",
            port=True,
        ),
        Variant("lp", (), "lp_params", port=True),
        Variant("scalable", (), "scalable_params", port=True),
        Variant(
            "vegas",
            (
                Param("alpha", 0, 1000, 2, "packets"),
                Param("beta", 0, 1000, 4, "packets"),
                Param("gamma", 0, 1000, 1, "packets"),
            ),
            "vegas_params",
            port=True,
        ),
        Variant("veno", (), "veno_params", port=True),
        Variant("westwood", (), "westwood_params", port=True),
        Variant("yeah", (), "yeah_params", port=True),
    )
}

# Every algorithm the loader knows: netrepro's variants and the ports.
ALGORITHMS = {**VARIANTS, **PORTS}

# The congestion controls Linux ships that seed 004 compares: the ports, and
# reno and cubic, which every kernel has built in.
LINUX_SHIPS = tuple(sorted((*PORTS, "reno", "cubic")))


def algorithm(name: str) -> Variant:
    """The variant or port of that name (CongestionControlInputError naming the ones there are)."""
    if name not in ALGORITHMS:
        raise CongestionControlInputError(
            f"unknown congestion control {name!r}; netrepro loads {', '.join(VARIANTS)} (its own) "
            f"and {', '.join(PORTS)} (ports of the kernel's modules)"
        )
    return ALGORITHMS[name]


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


def kernel_has(name: str) -> str | None:
    """How the kernel offers `name` itself: "built in" (or loaded already), "module", or None.  A name
    a netrepro run registered (its BPF port, its module) is that run's, not the kernel's own."""
    available, _ = kernel.congestion_controls()
    if name in available and registered_by_a_run(name) is None:
        return "built in"
    if kernel.modules_supported() and name in kernel.loadable_congestion_controls():
        return "module"
    return None


def _modules_usable() -> bool:
    return kernel.modules_supported() and kernel.lockdown() == "none"


def choose_impl(name: str, requested: str | None = None) -> str:
    """The implementation `load()` takes for `name` here, or the one requested if this machine has it.

    A variant: `lkm` where the kernel takes modules and headers are there, else `bpf`.  A port: `kernel`
    where the kernel has the algorithm (built in or as its module), else `bpf`.
    """
    if requested not in (None, *IMPLS):
        raise CongestionControlInputError(f"--impl {requested!r}: choose one of {', '.join(IMPLS)}")
    variant = algorithm(name)
    if variant.port:
        has = kernel_has(name)
        if requested == "kernel" and has is None:
            raise CongestionControlUnavailable(
                f"--impl kernel: this kernel has no {name}, neither built in nor as a module; "
                f"--impl bpf runs netrepro's port"
            )
        if requested == "lkm" and (has != "module" or not _modules_usable()):
            why = "has it built in (--impl kernel)" if has == "built in" else f"ships no {variant.module} module"
            raise CongestionControlUnavailable(f"--impl lkm: this kernel {why}; --impl bpf runs netrepro's port")
        if requested in ("kernel", "lkm") or (requested is None and has is not None):
            return "lkm" if requested == "lkm" else "kernel"
    else:
        if requested == "kernel":
            raise CongestionControlInputError(
                f"--impl kernel: {name} is netrepro's own, no kernel has it; choose lkm or bpf"
            )
        headers = Path(f"/lib/modules/{kernel.release()}/build").exists()
        if requested == "lkm" or (requested is None and _modules_usable() and headers):
            if not _modules_usable():
                raise CongestionControlUnavailable(
                    "--impl lkm: this kernel does not load modules; use --impl bpf or --vm"
                )
            return "lkm"
    if not kernel.struct_ops_supported():
        raise CongestionControlUnavailable(
            "this kernel has neither loadable modules nor BPF struct_ops congestion control"
        )
    return "bpf"


def resolution(name: str) -> str:
    """Which implementation `name` gets on this machine, in words (`doctor`)."""
    try:
        impl = choose_impl(name) if name in ALGORITHMS else "kernel"
    except CongestionControlError as e:
        return f"none: {e}"
    if impl == "kernel":
        has = kernel_has(name)
        if has is None:
            return "none: not in this kernel"
        return "kernel, built in" if has == "built in" else f"kernel, module tcp_{name}"
    kind = "port" if algorithm(name).port else "variant"
    return f"{impl}, netrepro's {kind}"


def registered_name(name: str, impl: str) -> str:
    """The name sockets use: a port run beside the kernel's own `name` registers as bpf_<name>."""
    if impl == "bpf" and algorithm(name).port and kernel_has(name) is not None:
        return f"bpf_{name}"
    return name


def loadable(name: str, requested: str | None = None) -> str:
    """The implementation `load()` would take here; CongestionControlUnavailable when it could not load now."""
    impl = choose_impl(name, requested)
    if impl == "bpf" or (impl == "lkm" and not algorithm(name).port):
        available, _ = kernel.congestion_controls()
        registered = registered_name(name, impl)
        if registered in available:
            raise CongestionControlUnavailable(_held_by_whom(registered))
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


def registered_by_a_run(name: str) -> Any:
    """The ledger (ground.ledgers.LedgerFile) of the netrepro run that registered `name`, or None."""
    for found in ledger_files():
        if any(e.get("kind") in ("struct_ops", "module") and e.get("name") == name for e in found.effective()):
            return found
    return None


def _held_by_whom(name: str) -> str:
    """Why `name` cannot be loaded: which run holds it, and what to do."""
    found = registered_by_a_run(name)
    if found is not None:
        owner = found.owner or {}
        if found.purpose:
            return f"{name} is held by `run.sh {found.purpose}`: `run.sh cc unload {name}` releases it"
        if found.alive:
            return f"{name} is in use by another run (pid {owner.get('pid')}); wait for it to finish"
        return f"{name} is still registered by a run that died (pid {owner.get('pid')}): `run.sh clean` removes it"
    return f"{name} is already registered, not by netrepro; not touching it"


def module_built_for_this_kernel(name: str, directory: Path = HERE) -> bool:
    """kmod/<name>.ko exists, is newer than its sources and was built for the running kernel
    (its vermagic): make would have nothing to do.  The stock-kernel lane builds the modules on
    the host for the guest's kernel before it boots; kbuild's own check that nothing changed
    takes most of a minute under the guest's software emulation."""
    return module_built_for(name, kernel.release(), directory)


def module_built_for(name: str, release: str, directory: Path = HERE) -> bool:
    """kmod/<name>.ko exists, is newer than its sources and its vermagic names `release`."""
    ko = directory / f"{name}.ko"
    if not ko.exists():
        return False
    built = ko.stat().st_mtime
    sources = (directory / f"{name}.c", directory / "Kbuild", directory / "Makefile")
    if any(source.stat().st_mtime > built for source in sources):
        return False
    vermagic = run(["modinfo", "-F", "vermagic", str(ko)]).stdout.split()
    return vermagic[:1] == [release]


class LoadedAlgorithm:
    """One algorithm loaded for a run; unloaded through the run's ledger."""

    def __init__(self, variant: Variant, impl: str, ledger: Ledger | None, registered: str | None = None) -> None:
        self.variant = variant
        self.impl = impl
        self.ledger = ledger
        self.name = variant.name
        self.registered = registered or variant.name  # the name sockets use (bpf_<name>: registered_name)

    # -- loading --------------------------------------------------------------------

    def load(self) -> LoadedAlgorithm:
        if self.ledger is None:
            raise CongestionControlUnavailable("loading needs the run's ledger")
        if self.impl in ("kernel", "lkm") and self.variant.port:
            return self._load_kernel_own()
        # Build first, outside the machine lock: it takes minutes on a fresh machine.
        if self.impl == "lkm":
            if not module_built_for_this_kernel(self.name):
                run(["make", "-s", "-C", str(HERE), f"KDIR=/lib/modules/{kernel.release()}/build"], timeout=600)
            kind, argv = "module", ["insmod", str(HERE / f"{self.name}.ko")]
        else:
            # make's target, relative to kmod/: built against this kernel's BTF, in its own directory
            release = kernel.release()
            target = f"bpf/build/{release}/{self.registered}.bpf.o"
            # only the object loaded: under the stock-kernel lane's emulation a clang run takes seconds
            run(["make", "-s", "-C", str(HERE), f"KERNEL_RELEASE={release}", target], timeout=600)
            kind, argv = "struct_ops", ["bpftool", "struct_ops", "register", str(HERE / target)]
        with machine_lock(self.ledger.directory):
            available, _ = kernel.congestion_controls()
            if self.registered in available:
                raise CongestionControlUnavailable(_held_by_whom(self.registered))
            with self.ledger.change({"kind": kind, "name": self.registered}):
                run(argv)
            self.ledger.allow_congestion_control(self.registered)
        if self.variant.port:  # the map holds zeros until the loader writes the module's defaults
            self.set(**{p.name: p.default for p in self.variant.params})
        return self

    def _load_kernel_own(self) -> LoadedAlgorithm:
        """The kernel's own algorithm: nothing to load if it is built in or loaded, else its module."""
        assert self.ledger is not None
        load_kernel_own(self.name, self.ledger, self.variant.module)
        return self

    # -- parameters -----------------------------------------------------------------

    def _map_id(self) -> int:
        maps = json.loads(run(["bpftool", "-j", "map", "show"]).stdout)
        ids = [int(m["id"]) for m in maps if m.get("name") == self.variant.bpf_map]
        if not ids:
            raise CongestionControlUnavailable(f"{self.name}: parameter map {self.variant.bpf_map} not found")
        return max(ids)  # an unregistered predecessor's map may linger until its sockets close

    def _bpf_lookup(self, map_id: int) -> dict[str, int]:
        doc = json.loads(run(["bpftool", "-j", "map", "lookup", "id", str(map_id), "key", "0", "0", "0", "0"]).stdout)
        return {k: int(v) for k, v in doc["formatted"]["value"].items()}

    def _bpf_values(self) -> dict[str, int]:
        return self._bpf_lookup(self._map_id())

    def set(self, **params: int) -> dict[str, int]:
        """Set parameters at run time (established connections follow); return what the kernel reports."""
        checked = parse_params(self.variant, dict(params))
        if self.impl != "bpf":
            current = self.read()
            for key, value in checked.items():
                if current.get(key, self.variant.param(key).default) == value:
                    continue  # some modules take theirs only when loaded (tcp_illinois: no sysfs file)
                try:
                    if self.ledger is not None:  # the old value is written back when the run ends
                        self.ledger.set_module_parameter(self.variant.module, key, str(value))
                    else:
                        Path(f"/sys/module/{self.variant.module}/parameters/{key}").write_text(f"{value}\n")
                except OSError as e:
                    raise CongestionControlUnavailable(
                        f"{self.name}: the kernel refused {key}={value} ({self.variant.module}): {e}"
                    ) from e
        else:
            values = self._bpf_values()
            values.update(checked)
            if self.variant.port:
                values["set"] = 1  # from now on the port reads its parameters from the map (port.h)
            # The map's fields are __u32 in BTF order (see kmod/README.md).
            raw = struct.pack(f"<{len(values)}I", *values.values())
            run(
                [
                    "bpftool",
                    "map",
                    "update",
                    "id",
                    str(self._map_id()),
                    "key",
                    "0",
                    "0",
                    "0",
                    "0",
                    "value",
                    "hex",
                    *(f"{b:02x}" for b in raw),
                ]
            )
        return self.read()

    def read(self) -> dict[str, int]:
        """Parameters in use and the values the kernel derived from them."""
        if self.impl != "bpf":
            base = Path(f"/sys/module/{self.variant.module}/parameters")
            wanted = {p.name for p in self.variant.params} if self.variant.port else None
            return {
                f.name: int(f.read_text())
                for f in sorted(base.iterdir() if base.is_dir() else [])
                if wanted is None or f.name in wanted
            }
        if not self.variant.port:  # the variants publish their effective values when a connection starts
            _trigger_init(self.name)
        values = self._bpf_values()
        inputs = {p.name: values.get(f"{p.name}_in_use", values.get(p.name, p.default)) for p in self.variant.params}
        return {**values, **inputs}

    def counters(self) -> dict[str, int]:
        """The BPF program's counters as they are now (no connection opened); for netrepro's own module,
        its parameters, the read-only ones among them (newcwv's last_pipeack); {} for the kernel's own."""
        if self.impl == "bpf":
            return self._bpf_values()
        return {} if self.variant.port else self.read()

    def counter_reader(self) -> Callable[[], dict[str, int]]:
        """`counters` as a function to call often (netrepro.runner.countertrace): the BPF program's map
        found once, then one bpftool lookup a call."""
        if self.impl == "bpf":
            map_id = self._map_id()
            return lambda: self._bpf_lookup(map_id)
        return self.counters

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "implementation": self.impl, "registered": self.registered, "values": self.read()}


def load_kernel_own(name: str, ledger: Ledger, module: str | None = None) -> None:
    """One of the kernel's own congestion controls (a port's, or one netrepro has no port of: bbr, dctcp,
    ...), for the run that owns `ledger`: nothing to load where it is built in or loaded, else its module
    (tcp_<name>) through the ledger, which unloads it when the run ends; allowed in namespaces either way."""
    with machine_lock(ledger.directory):
        available, _ = kernel.congestion_controls()
        before = modules.proc_modules()
        if name not in available and before is not None:
            # tcp_yeah brings tcp_vegas: the run removes every module loaded since that nothing holds
            ledger.modprobe(module or f"tcp_{name}", modules.parse_proc_modules(before))
        ledger.allow_congestion_control(name)


def tuning(name: str, given: Mapping[str, Any]) -> dict[str, int]:
    """Every parameter of variant `name` as a trial sets it: its defaults, then what the trial gives (a
    factor such as n, or its cc_params: netrepro.studykit.trial reads them), checked.  A trial must not
    inherit the last one's tuning."""
    variant = algorithm(name)
    wanted = {p.name: p.default for p in variant.params}
    wanted.update(parse_params(variant, dict(given)))
    return wanted


def load(name: str, ledger: Ledger, impl: str | None = None) -> LoadedAlgorithm:
    """Load a variant or a port (choose_impl) for the run that owns `ledger`."""
    variant = algorithm(name)
    chosen = choose_impl(name, impl)
    return LoadedAlgorithm(variant, chosen, ledger, registered_name(name, chosen)).load()


def attach(name: str) -> LoadedAlgorithm:
    """The algorithm as it is loaded now (by `run.sh cc load`), to tune it."""
    variant = algorithm(name)
    available, _ = kernel.congestion_controls()
    for registered in (f"bpf_{name}", name) if variant.port else (name,):
        if registered in available:
            sysfs = Path(f"/sys/module/{variant.module}/parameters").is_dir()
            impl = "bpf" if registered != name or not sysfs else ("kernel" if variant.port else "lkm")
            return LoadedAlgorithm(variant, impl, ledger=None, registered=registered)
    raise CongestionControlUnavailable(f"{name} is not loaded; `run.sh cc load {name}` first")
