"""Open vSwitch as the lab's switch: a private ovsdb-server and ovs-vswitchd inside each switch's namespace.

`NamespacedOVS` is a Mininet switch whose daemons, database, sockets and
logs are its own (a directory of the run, recorded in its ledger): nothing
of the machine's Open vSwitch (/etc/openvswitch, /var/run/openvswitch, its
service) is read or touched.  Its bridge is a learning switch
(`fail_mode=standalone`, no controller) on the kernel datapath (`system`)
or the userspace one (`netdev`, which needs no kernel module).
`choose_switch` decides between it and the Linux bridge before anything is
built.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mininet.node import Switch

from ground import kernel, modules
from ground.errors import SetupError, UserError
from ground.ledger import Ledger
from ground.proc import CommandError, Netns, Process, run

log = logging.getLogger("netrepro.ovs")

SWITCHES = ("ovs", "bridge")
DATAPATHS = ("system", "netdev")  # the kernel's openvswitch module; OVS's userspace datapath
SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
TOOLS = ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl")
VSCTL_TIMEOUT_S = 10


class SwitchUnavailable(SetupError):
    """The switch asked for cannot run here, or with the shaper asked for."""


class UnknownSwitch(UserError):
    """A --switch value that names no switch."""


class OvsError(SetupError):
    """A switch's Open vSwitch did not come up as a forwarding bridge."""


# -- which switch ---------------------------------------------------------------


def missing_tools() -> list[str]:
    """The Open vSwitch programs (and schema) not installed, by name."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if not SCHEMA.is_file():
        missing.append(str(SCHEMA))
    return missing


def choose_switch(requested: str, backend: str) -> str:
    """Resolve --switch (`ovs`, `bridge` or `auto`) for the chosen shaper backend, before anything is built.

    `auto` takes Open vSwitch where the path is shaped by netem and both the
    kernel's datapath and the tools are there, and the Linux bridge
    otherwise: the delay line hooks the bridge's netfilter (`iptables -m
    physdev` through br_netfilter), which an OVS port never passes.  Only
    what the answer depends on is probed, the tools (a PATH lookup) before
    the datapath (which may load and unload a module).
    """
    if backend not in ("netem", "delayline"):
        raise ValueError(f"choose_switch: shaper backend {backend!r}, not a resolved one (netem or delayline)")
    if requested not in (*SWITCHES, "auto"):
        raise UnknownSwitch(f"--switch {requested!r}: choose ovs, bridge or auto")
    if requested == "bridge":
        return "bridge"
    if backend == "delayline":
        if requested == "auto":
            return "bridge"
        raise SwitchUnavailable(
            "--switch ovs: the delay line needs a Linux bridge's netfilter (physdev) hooks; "
            "use --shaper netem or --switch bridge"
        )
    tools = missing_tools()
    if tools:
        if requested == "auto":
            return "bridge"
        raise SwitchUnavailable(
            f"--switch ovs: Open vSwitch is not installed (no {', '.join(tools)}: "
            "apt-get install openvswitch-switch); `run.sh --vm` has it"
        )
    if not kernel.openvswitch_datapath_works():
        if requested == "auto":
            return "bridge"
        raise SwitchUnavailable(
            f"--switch ovs: this kernel ({kernel.release()}) has no openvswitch datapath "
            "(CONFIG_OPENVSWITCH, the openvswitch module); `run.sh --vm` has it (Debian's kernel)"
        )
    return "ovs"


DATAPATH_MODULE = "openvswitch"


def load_datapath(ledger: Ledger) -> None:
    """Load the kernel's openvswitch module where it is not loaded yet, in the ledger.

    ovs-vswitchd would have the kernel load it on first use, and with it
    conntrack and the rest (nfnetlink_cttimeout when it probes timeout
    policies), all left loaded after the run; so the run records what was
    loaded before, and when it ends removes every module loaded since that
    nothing holds.
    """
    before = modules.proc_modules()
    if before is None or DATAPATH_MODULE in modules.parse_proc_modules(before):
        return  # built in, or already loaded (then not this run's to remove)
    ledger.modprobe(DATAPATH_MODULE, modules.parse_proc_modules(before))


# -- the commands, built apart from running them ------------------------------------


@dataclass(frozen=True)
class OvsFiles:
    """Where one switch's Open vSwitch keeps its database, sockets, pidfiles and logs."""

    directory: Path

    @property
    def database(self) -> Path:
        return self.directory / "conf.db"

    @property
    def db_socket(self) -> Path:
        return self.directory / "db.sock"

    def control(self, daemon: str) -> Path:
        return self.directory / f"{daemon}.ctl"

    def pidfile(self, daemon: str) -> Path:
        return self.directory / f"{daemon}.pid"

    def log(self, daemon: str) -> Path:
        return self.directory / f"{daemon}.log"

    def stderr(self, daemon: str) -> Path:
        return self.directory / f"{daemon}.stderr"


def ovs_env(files: OvsFiles) -> list[str]:
    """An `env` prefix pointing every default directory of the OVS tools at the switch's own.

    The schema stays where the package put it (OVS_PKGDATADIR unset).
    """
    d = str(files.directory)
    return ["env", f"OVS_RUNDIR={d}", f"OVS_DBDIR={d}", f"OVS_LOGDIR={d}", f"OVS_SYSCONFDIR={d}"]


def create_database_argv(files: OvsFiles) -> list[str]:
    return [*ovs_env(files), "ovsdb-tool", "create", str(files.database), str(SCHEMA)]


def _daemon_options(files: OvsFiles, daemon: str) -> list[str]:
    # Not --detach: the daemon stays the child this run started, recorded and stopped as such.
    return [
        f"--unixctl={files.control(daemon)}",
        f"--pidfile={files.pidfile(daemon)}",
        f"--log-file={files.log(daemon)}",
        "-vconsole:off",
    ]


def ovsdb_server_argv(files: OvsFiles) -> list[str]:
    return [
        *ovs_env(files),
        "ovsdb-server",
        str(files.database),
        f"--remote=punix:{files.db_socket}",
        *_daemon_options(files, "ovsdb-server"),
    ]


def vswitchd_argv(files: OvsFiles) -> list[str]:
    return [*ovs_env(files), "ovs-vswitchd", f"unix:{files.db_socket}", *_daemon_options(files, "ovs-vswitchd")]


def vsctl_argv(files: OvsFiles, *args: str, wait: bool = True) -> list[str]:
    """ovs-vsctl on the switch's own database; `wait`: until ovs-vswitchd has applied the change."""
    return [
        *ovs_env(files),
        "ovs-vsctl",
        f"--db=unix:{files.db_socket}",
        f"--timeout={VSCTL_TIMEOUT_S}",
        *([] if wait else ["--no-wait"]),
        *args,
    ]


def init_argv(files: OvsFiles) -> list[str]:
    """The database's root record, made before ovs-vswitchd first reads it."""
    return vsctl_argv(files, "init", wait=False)


def add_bridge_argv(files: OvsFiles, bridge: str, datapath: str, ports: list[str]) -> list[str]:
    """One transaction: the bridge, as a learning switch on `datapath`, with its ports."""
    if datapath not in DATAPATHS:
        raise ValueError(f"datapath {datapath!r}: choose {' or '.join(DATAPATHS)}")
    args = ["--", "add-br", bridge]
    args += ["--", "set", "Bridge", bridge, f"datapath_type={datapath}", "fail_mode=standalone"]
    for port in ports:
        args += ["--", "add-port", bridge, port]
    return vsctl_argv(files, *args)


def delete_bridge_argv(files: OvsFiles, bridge: str) -> list[str]:
    return vsctl_argv(files, "--if-exists", "del-br", bridge)


def interfaces_argv(files: OvsFiles, ports: list[str]) -> list[str]:
    return vsctl_argv(files, "--format=json", "--columns=name,ofport,error,link_state", "list", "Interface", *ports)


def _scalar(value: Any) -> Any:
    """An OVSDB JSON value: an empty optional is `["set", []]`."""
    return None if value == ["set", []] else value


def ports_not_forwarding(listing: str, ports: list[str]) -> dict[str, str]:
    """From `interfaces_argv`'s output: each port not yet forwarding, and why.

    A port forwards once ovs-vswitchd has opened it (an OpenFlow port number,
    no error) and its link is up.
    """
    table = json.loads(listing)
    columns = table["headings"]
    interfaces = {
        cells[columns.index("name")]: dict(zip(columns, map(_scalar, cells), strict=True)) for cells in table["data"]
    }
    waiting = {}
    for port in ports:
        interface = interfaces.get(port)
        if interface is None:
            waiting[port] = "not in the bridge"
        elif interface["error"]:
            waiting[port] = str(interface["error"])
        elif not isinstance(interface["ofport"], int) or interface["ofport"] < 1:
            waiting[port] = f"no OpenFlow port yet ({interface['ofport']})"
        elif interface["link_state"] != "up":
            waiting[port] = f"link {interface['link_state'] or 'unknown'}"
    return waiting


# -- the switch ----------------------------------------------------------------------


def _tail(path: Path, lines: int = 6) -> str:
    """What a daemon of the switch said last in a file of its private directory: its last
    errors and warnings where there are any, else its last lines."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        said = f.read()[-65536:].decode(errors="replace").strip().splitlines()
    trouble = [line for line in said if any(f"|{level}|" in line for level in ("EMER", "ERR", "WARN"))]
    return "\n".join((trouble or said)[-lines:])


class NamespacedOVS(Switch):  # type: ignore[misc]
    """A Mininet switch: an Open vSwitch bridge of its own, with its own daemons, in its node's namespace.

        net.addSwitch("s1", cls=NamespacedOVS, inNamespace=True, ledger=ledger, datapath="system")

    `start` makes a private directory (in the ledger), the database, starts
    ovsdb-server and ovs-vswitchd inside the switch's namespace (each a
    process in the ledger), adds bridge `<name>` with every interface of the
    node but lo, and returns once each port forwards.  `stop` deletes the
    bridge, stops both daemons and removes the directory: what the ledger
    recorded is then gone, and undoing it later does nothing.
    """

    def __init__(self, name: str, *, ledger: Ledger, datapath: str = "system", **params: Any) -> None:
        if datapath not in DATAPATHS:
            raise ValueError(f"{name}: datapath {datapath!r}: choose {' or '.join(DATAPATHS)}")
        if not params.get("inNamespace", False):
            raise OvsError(f"{name}: NamespacedOVS runs in a namespace of its own (inNamespace=True)")
        self.ledger = ledger
        self.datapath = datapath
        self.netns: Netns | None = None
        self.files: OvsFiles | None = None
        self.ovsdb: Process | None = None
        self.vswitchd: Process | None = None
        super().__init__(name, **params)

    @classmethod
    def setup(cls) -> None:
        """Mininet's check before the first switch of the class is made (its own would exit the program)."""
        missing = missing_tools()
        if missing:
            raise SwitchUnavailable(f"Open vSwitch is not installed: no {', '.join(missing)}")

    def bridge_ports(self) -> list[str]:
        """The node's interfaces but lo (Mininet's own `ports` maps interfaces to port numbers)."""
        return [str(intf.name) for intf in self.intfList() if intf.name != "lo"]

    # -- life cycle ---------------------------------------------------------------

    def start(self, controllers: list[Any]) -> None:
        started = time.monotonic()
        try:
            self.netns = Netns.open(self.name, self.pid)
            self.files = OvsFiles(self.ledger.temp_dir(f"netrepro-ovs-{self.name}-"))
            run(create_database_argv(self.files), self.netns)
            self.ovsdb = self._daemon("ovsdb-server", ovsdb_server_argv(self.files))
            self._wait_for_database()
            run(init_argv(self.files), self.netns)
            self.vswitchd = self._daemon("ovs-vswitchd", vswitchd_argv(self.files))
            ports = self.bridge_ports()
            added = self._vsctl(add_bridge_argv(self.files, self.name, self.datapath, ports))
            if "Error detected" in added.stderr:  # ovs-vsctl exits 0 all the same
                raise OvsError(f"{self.name}: {added.stderr.strip()}{self._why('ovs-vswitchd', settle=1.0)}")
            self._wait_until_forwarding(ports)
        except BaseException:
            self._teardown()
            raise
        log.info(
            "%s: Open vSwitch bridge (%s datapath) forwarding on %s after %.2f s (files in %s)",
            self.name,
            self.datapath,
            ", ".join(ports),
            time.monotonic() - started,
            self.files.directory,
        )

    def _daemon(self, daemon: str, argv: list[str]) -> Process:
        assert self.files is not None and self.netns is not None
        # A new file in the switch's own new directory (0700): O_EXCL and O_NOFOLLOW for good measure.
        fd = os.open(
            self.files.stderr(daemon), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        try:
            return Process(
                argv,
                self.netns,
                ledger=self.ledger,
                stdout=subprocess.DEVNULL,
                stderr=fd,
                label=f"{self.name} {daemon}",
            )
        finally:
            os.close(fd)

    def _why(self, daemon: str, settle: float = 0.0) -> str:
        """What the daemon said; `settle`: wait up to that long for its error (ovs-vswitchd logs
        from a thread of its own, so the line may follow the failure it explains)."""
        assert self.files is not None
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline and "|ERR|" not in _tail(self.files.log(daemon)):
            time.sleep(0.02)
        said = "\n".join(t for t in (_tail(self.files.stderr(daemon)), _tail(self.files.log(daemon))) if t)
        return f"\n{daemon} said:\n{said}" if said else ""

    def _wait_for_database(self, within: float = 10.0) -> None:
        assert self.files is not None and self.ovsdb is not None
        deadline = time.monotonic() + within
        while not self.files.db_socket.exists():
            if not self.ovsdb.running():
                raise OvsError(f"{self.name}: ovsdb-server exited at start{self._why('ovsdb-server')}")
            if time.monotonic() > deadline:
                raise OvsError(f"{self.name}: ovsdb-server made no {self.files.db_socket} within {within:.0f} s")
            time.sleep(0.02)

    def _vsctl(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        assert self.netns is not None
        try:
            return run(argv, self.netns, timeout=VSCTL_TIMEOUT_S + 5)
        except CommandError as e:
            raise OvsError(f"{self.name}: {e}{self._why('ovs-vswitchd')}") from e

    def _wait_until_forwarding(self, ports: list[str], within: float = 10.0) -> None:
        """Return once ovs-vswitchd has opened every port and each link is up."""
        assert self.files is not None and self.vswitchd is not None
        deadline = time.monotonic() + within
        while True:
            waiting = ports_not_forwarding(self._vsctl(interfaces_argv(self.files, ports)).stdout, ports)
            if not waiting:
                return
            if not self.vswitchd.running():
                raise OvsError(f"{self.name}: ovs-vswitchd exited{self._why('ovs-vswitchd')}")
            if time.monotonic() > deadline:
                why = "; ".join(f"{port}: {reason}" for port, reason in waiting.items())
                raise OvsError(f"{self.name}: not forwarding within {within:.0f} s ({why}){self._why('ovs-vswitchd')}")
            time.sleep(0.05)

    def _teardown(self) -> None:
        """Undo what start did, as far as it got; harmless twice."""
        try:
            if self.files is not None and self.vswitchd is not None and self.vswitchd.running():
                try:
                    self._vsctl(delete_bridge_argv(self.files, self.name))
                except OvsError as e:  # the daemons are stopped all the same, and the bridge with them
                    log.warning("%s", e)
        finally:
            for daemon in (self.vswitchd, self.ovsdb):
                if daemon is not None:
                    daemon.stop()
            self.vswitchd = self.ovsdb = None
            if self.files is not None:
                try:
                    shutil.rmtree(self.files.directory)
                except FileNotFoundError:
                    pass
                except OSError as e:  # the ledger's entry removes it with the run
                    log.warning("%s: %s not removed: %s", self.name, self.files.directory, e)
                self.files = None
            if self.netns is not None:
                self.netns.close()
                self.netns = None

    def stop(self, deleteIntfs: bool = True) -> None:
        try:
            self._teardown()
        finally:
            super().stop(deleteIntfs)
