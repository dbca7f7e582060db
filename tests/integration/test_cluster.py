"""A figure on a Dask cluster: every trial once, the coordinator the only writer, a lost worker's trials redone.

A scheduler and two workers (`dask worker --resources lab=1 --nthreads 1`,
each running its labs in namespaces of its own; TLS, and the coordinator
given the TLS files, for the first test, plain TCP on loopback for the
second) on this machine stand for two VMs; iw/fig5b --quick has three path
settings, one task each.  Its CSV must hold exactly the trial keys of the
plain figure, each once.  A
worker SIGKILLed after its first row: its setting's trials finish on the
other, none lost, none run twice, and its lab is undone (the trial process
dies with its worker).  Dask's SSH launcher (`--hosts`) runs a
one-setting figure through an sshd the test starts on a loopback port,
with a host key and a client key it makes; the cluster it starts lets in
only the run's own certificates, listens on no port of every interface,
keeps every key of the run in memory files only (none on the root
filesystem, none on a command line), and its processes and their keys end
within a minute of the coordinator's SIGKILL.  The running cluster of the
first tests is started as docs/cluster.md says: every Dask HTTP server on
the host's own address.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from figures import ok_rows

import expts
from ground.results import REPO
from ground.trials import read_rows, trial_key
from netrepro.engine import tls
from netrepro.engine.ssh_cluster import IDLE_SECONDS, remote_certificate_copies
from netrepro.engine.tls import RunCertificates, make_certificates
from netrepro.lanes.loopback_sshd import Sshd, descendants, free_port, loopback_sshd, still_running
from netrepro.runner import shards

pytestmark = pytest.mark.root

DASK = Path(sys.executable).with_name("dask")
SETTINGS_FIGURE = "iw/fig5b"  # --quick: three path settings of six trials
ONE_SETTING_FIGURE = "iw/fig2"  # --quick: one path setting


class Cluster:
    """A Dask scheduler and workers on loopback, as the test's own processes; TLS with `tls` (its
    nodes hold the node certificate), plain TCP without."""

    def __init__(self, where: Path, files: dict[str, Path] | None = None) -> None:
        self.where = where
        self.file = where / "scheduler.json"
        self.workers: dict[str, subprocess.Popen[bytes]] = {}  # address: process
        self.env = {**os.environ, "DASK_TEMPORARY_DIRECTORY": str(where)}  # Dask's scratch files: here
        self.tls: list[str] = []
        if files is not None:
            self.tls = ["--tls-ca-file", str(files["ca.crt"]), "--tls-cert", str(files["node.crt"]),
                        "--tls-key", str(files["node.key"])]  # fmt: skip
        log = open(where / "scheduler.log", "wb")  # noqa: SIM115 - the process's, closed with it
        self.scheduler = subprocess.Popen(
            [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--dashboard-address", "127.0.0.1:0",
             "--scheduler-file", str(self.file), *(["--protocol", "tls", *self.tls] if self.tls else [])],
            stdout=log, stderr=log, cwd=where, env=self.env,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 60
        while not self.file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        self.address = json.loads(self.file.read_text())["address"]

    def add_worker(self) -> str:
        port = free_port()
        log = open(self.where / f"worker-{port}.log", "wb")  # noqa: SIM115
        process = subprocess.Popen(
            [str(DASK), "worker", self.address, "--nthreads", "1", "--resources", "lab=1", "--no-nanny",
             "--host", "127.0.0.1", "--worker-port", str(port), "--no-dashboard",
             "--dashboard-address", "127.0.0.1:0",
             "--local-directory", str(self.where / f"scratch-{port}"), *self.tls],
            stdout=log, stderr=log, cwd=REPO, env=self.env,
        )  # fmt: skip
        log.close()
        address = f"{'tls' if self.tls else 'tcp'}://127.0.0.1:{port}"
        self.workers[address] = process
        return address

    def stop(self) -> None:
        """The workers first (a worker that outlives its scheduler waits for it), then the scheduler."""
        for group in (list(self.workers.values()), [self.scheduler]):
            for process in group:
                if process.poll() is None:
                    process.terminate()
            for process in group:
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        c.stop()


def run(*argv: str, timeout: float = 900) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "netrepro", *argv], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip


def finished(p: subprocess.Popen[str], timeout: float = 900) -> str:
    out, _ = p.communicate(timeout=timeout)
    assert p.returncode == 0, out[-4000:]
    return out


def plain_keys(name: str) -> list[str]:
    fig = expts.find(name)
    return sorted(trial_key(p, i) for p in fig.grid(quick=True) for i in range(fig.trial_count(quick=True)))


def namespaces() -> set[str]:
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())


@pytest.fixture
def tls_cluster(tmp_path: Path) -> Iterator[tuple[Cluster, dict[str, Path]]]:
    """A running cluster on TLS, as a user starts one from files, and certificates from its CA: the client's
    are --scheduler's TLS files."""
    private = tmp_path / "tls"
    private.mkdir(mode=0o700)
    made: RunCertificates = make_certificates("test")
    files = {name: private / name for name in made.pem}
    for name, path in files.items():
        path.write_bytes(made.pem[name])
    c = Cluster(tmp_path, files)
    try:
        yield c, files
    finally:
        c.stop()


def test_two_workers_run_every_trial_once(tls_cluster: tuple[Cluster, dict[str, Path]], tmp_path: Path) -> None:
    cluster, tls_files = tls_cluster
    assert cluster.address.startswith("tls://127.0.0.1:")
    workers = {cluster.add_worker(), cluster.add_worker()}
    fig = expts.find(SETTINGS_FIGURE)
    out = tmp_path / "results"
    said = finished(run("run", SETTINGS_FIGURE, "--quick", "--scheduler", cluster.address, "--out", str(out),
                        "--tls-ca-file", str(tls_files["ca.crt"]), "--tls-cert", str(tls_files["client.crt"]),
                        "--tls-key", str(tls_files["client.key"])))  # fmt: skip
    # Started as docs/cluster.md says, no process of the cluster (which outlives the run) listens beyond the
    # host's address: Dask's HTTP servers (health, metrics, info) included, which --no-dashboard leaves on
    # every interface.
    ports = listening({cluster.scheduler.pid, *(w.pid for w in cluster.workers.values())})
    assert len(ports) == 2 * (1 + len(workers)) and all(a == "127.0.0.1" for a, _ in ports), ports
    rows = ok_rows(read_rows(out / fig.directory / fig.csv_name))
    assert sorted(r["trial_key"] for r in rows) == plain_keys(SETTINGS_FIGURE), said  # each once, none missing
    assert {r["worker"] for r in rows} == workers  # both ran labs, side by side
    by_setting = {shards.setting(r): r["worker"] for r in rows}
    assert len(by_setting) == 3 and all(by_setting[shards.setting(r)] == r["worker"] for r in rows)  # one lab each
    manifest = json.loads((out / fig.directory / f"{fig.name}.manifest.json").read_text())
    assert set(manifest["engine"]["workers"]) == workers and manifest["engine"]["second_rows_dropped"] == 0
    assert manifest["trials_missing"] == 0 and manifest["rows"] == len(rows)
    # The workers kept nothing: their trial processes' results directories are gone.
    assert not list(Path(tempfile.gettempdir()).glob("netrepro-worker-*"))


def test_a_killed_workers_trials_finish_on_the_other(cluster: Cluster, tmp_path: Path) -> None:
    cluster.add_worker()
    cluster.add_worker()
    before = namespaces()
    fig = expts.find(SETTINGS_FIGURE)
    out = tmp_path / "results"
    csv = out / fig.directory / fig.csv_name
    coordinator = run("run", SETTINGS_FIGURE, "--quick", "--scheduler", cluster.address, "--out", str(out))
    per_setting = len(plain_keys(SETTINGS_FIGURE)) // len({shards.setting(p) for p in fig.grid(quick=True)})
    victim, deadline = None, time.monotonic() + 600
    while victim is None and time.monotonic() < deadline and coordinator.poll() is None:
        time.sleep(0.5)
        rows = read_rows(csv) if csv.exists() else []
        home = Counter((r["worker"], shards.setting(r)) for r in rows)
        # a worker with a row of its setting home, and more of that setting to run
        victim = next((w for (w, _), n in home.items() if n < per_setting), None)
    assert victim is not None, "no worker had sent a row"
    home_before_kill = {r["trial_key"] for r in read_rows(csv) if r["worker"] == victim}
    cluster.workers[victim].send_signal(signal.SIGKILL)
    said = finished(coordinator)
    rows = ok_rows(read_rows(csv))
    assert sorted(r["trial_key"] for r in rows) == plain_keys(SETTINGS_FIGURE), said  # none lost, none twice
    survivor = ({r["worker"] for r in rows} - {victim}).pop()
    killed_setting = {shards.setting(r) for r in rows if r["trial_key"] in home_before_kill}
    assert any(r["worker"] == survivor and shards.setting(r) in killed_setting for r in rows), said  # redone there
    manifest = json.loads((out / fig.directory / f"{fig.name}.manifest.json").read_text())
    assert manifest["engine"]["second_rows_dropped"] == 0
    # The killed worker's trial process died with it, and undid its lab.
    deadline = time.monotonic() + 60
    while namespaces() - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not namespaces() - before


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    """An sshd on a loopback port that lets in root with a key made here."""
    with loopback_sshd(tmp_path / "ssh") as daemon:
        yield daemon


def test_the_ssh_launcher_runs_a_figure(sshd: Sshd, tmp_path: Path) -> None:
    fig = expts.find(ONE_SETTING_FIGURE)
    out = tmp_path / "results"
    before = remote_certificate_copies()
    said = finished(
        run("run", ONE_SETTING_FIGURE, "--quick", "--hosts", "root@127.0.0.1", "--ssh-config", str(sshd.config),
            "--out", str(out))
    )  # fmt: skip
    rows = ok_rows(read_rows(out / fig.directory / fig.csv_name))
    assert sorted(r["trial_key"] for r in rows) == plain_keys(ONE_SETTING_FIGURE), said
    manifest = json.loads((out / fig.directory / f"{fig.name}.manifest.json").read_text())
    assert manifest["engine"]["launcher"] == "SSH hosts root@127.0.0.1" and len(manifest["engine"]["workers"]) == 1
    setup = manifest["engine"]["setup"]  # agreed before the first trial, and what the rows ran with
    assert (setup["backend"], setup["switch"]) == (rows[0]["backend"], rows[0]["switch"]), setup
    assert setup["cc_impls"][rows[0].get("cc") or ""] == rows[0]["cc_impl"], setup
    assert all(w.startswith("tls://127.0.0.1:") for w in manifest["engine"]["workers"])
    assert manifest["engine"]["rows_not_handed_out_dropped"] == 0
    assert remote_certificate_copies() == before  # the host's copy of the run's certificate went with the run


def listening(pids: set[int]) -> list[tuple[str, int]]:
    """The TCP sockets these processes listen on, as (address, port), from `ss -ltnp`."""
    found = []
    for line in subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout.splitlines():
        fields = line.split()
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            address, _, port = fields[3].rpartition(":")
            found.append((address, int(port)))
    return found


def refused(address: str, security: object = None) -> str:
    """Why a Dask client of `address` could not connect ("" if it did, and ran code on the workers)."""
    from distributed import Client

    try:
        with Client(address, security=security, timeout=5) as client:  # type: ignore[no-untyped-call]
            client.run(os.getuid)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return ""


# Where a run could leave a file on the root filesystem (/tmp is on it here; /dev/shm and /run are tmpfs).
DISK_PLACES = (Path("/tmp"), Path("/var/tmp"), REPO, Path.home())
# What a command line of the run must not show: a key, Dask's configuration, TLS settings.
NOT_ON_A_COMMAND_LINE = ("PRIVATE KEY", "BEGIN CERTIFICATE", "DASK_", "--spec", "distributed.", "tls-", "ca-file",
                         "require-encryption", "netrepro-tls")  # fmt: skip


def memory_keys(pids: Iterable[int]) -> dict[int, list[bytes]]:
    """The private keys of runs these processes hold in memory files (netrepro.engine.tls.in_memory)."""
    found: dict[int, list[bytes]] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd).startswith(f"/memfd:{tls.MEMFD_PREFIX}"):
                        data = fd.read_bytes()
                        if b"PRIVATE KEY" in data:
                            found.setdefault(pid, []).append(data)
    return found


def files_holding(keys: set[bytes], since: float) -> list[str]:
    """Files on the root filesystem, in the places a run could write, changed since `since`, holding one of
    `keys`."""
    root = os.stat("/").st_dev
    found = []
    for place in DISK_PLACES:
        for top, dirs, names in os.walk(place):
            dirs[:] = [d for d in dirs if os.lstat(os.path.join(top, d)).st_dev == root]
            for name in names:
                path = os.path.join(top, name)
                with contextlib.suppress(OSError):
                    st = os.lstat(path)
                    if not stat.S_ISREG(st.st_mode) or st.st_dev != root or st.st_mtime < since:
                        continue
                    data = Path(path).read_bytes()
                    if any(k in data for k in keys):
                        found.append(path)
    return found


def command_lines() -> dict[int, str]:
    """Every process's command line, as `ps` shows it to any user."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    return {int(line.split(None, 1)[0]): line.split(None, 1)[1] for line in out.splitlines() if len(line.split()) > 1}


def test_a_launched_cluster_lets_in_only_the_run_and_ends_with_it(
    sshd: Sshd, tmp_path: Path, summary_lines: list[str]
) -> None:
    from distributed.security import Security

    before_remote = remote_certificate_copies()
    began = time.time()
    coordinator = run("run", SETTINGS_FIGURE, "--quick", "--hosts", "root@127.0.0.1", "--ssh-config",
                      str(sshd.config), "--out", str(tmp_path / "results"))  # fmt: skip
    try:
        deadline = time.monotonic() + 120  # up: the scheduler, a nanny and its worker, and a task handed out
        while time.monotonic() < deadline and coordinator.poll() is None:
            if any("-m netrepro.engine.worker" in line for _, line in descendants(sshd.pid).values()):
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the cluster did not start: {coordinator.communicate(timeout=30)[0][-4000:]}")
        launched = descendants(sshd.pid)  # the sessions, the scheduler, the nanny, the worker, its trial process
        ports = listening(set(launched))
        summary_lines.append(f"cluster (--hosts on loopback): the launched processes listen on {sorted(ports)}")
        assert ports and all(address == "127.0.0.1" for address, _ in ports), ports  # none on 0.0.0.0, [::] or *
        assert ("127.0.0.1", 8786) in ports
        # The run's keys: in memory files of the coordinator (its own) and of the nodes (the node's), nowhere
        # on the root filesystem, and no command line shows a key, a TLS setting or Dask's configuration.
        held = memory_keys([coordinator.pid, *launched])
        keys = {k for found in held.values() for k in found}
        assert coordinator.pid in held and set(held) - {coordinator.pid} and len(keys) == 2, held.keys()
        assert not files_holding(keys, began - 1)
        shown = {pid: line for pid, line in command_lines().items() if pid in {coordinator.pid, *launched}}
        assert any("netrepro.engine.node" in line for line in shown.values()), shown
        assert not {pid: line for pid, line in shown.items() if any(m in line for m in NOT_ON_A_COMMAND_LINE)}
        # No way in without the run's certificate: plain TCP, TLS with another CA's certificate.
        assert refused("tcp://127.0.0.1:8786")
        assert refused("tls://127.0.0.1:8786", Security.temporary())  # type: ignore[no-untyped-call]
        with socket.create_connection(("127.0.0.1", 8786), timeout=5) as raw:  # a plain TCP connection
            raw.sendall(b"\x00" * 64)
            raw.settimeout(10)
            with contextlib.suppress(ConnectionResetError):
                answer = raw.recv(4096)
                assert answer == b"" or answer[:1] == b"\x15", answer  # closed, or a TLS alert: no Dask reply
        stranger = Security.temporary().get_connection_args("client")["ssl_context"]  # type: ignore[no-untyped-call]
        for _, port in ports:  # every other listener: TLS with the run's CA, or HTTP with a health check only
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                raw.sendall(b"GET /info/main/workers.html HTTP/1.0\r\n\r\n")
                raw.settimeout(5)
                with contextlib.suppress(OSError):
                    answer = raw.recv(4096)
                    assert not answer.startswith(b"HTTP/") or b" 404 " in answer.split(b"\r\n")[0], answer[:200]
            if port == 8786:
                continue
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                try:
                    with stranger.wrap_socket(raw) as tls_socket:
                        tls_socket.sendall(b"x")
                        tls_socket.settimeout(5)
                        assert tls_socket.recv(1) == b"", f"port {port} took a stranger's certificate"
                except (OSError, ssl.SSLError):
                    pass  # refused in the handshake (or not TLS: HTTP)
        assert coordinator.poll() is None, "the run ended during the probes"
    finally:
        coordinator.send_signal(signal.SIGKILL)
        coordinator.communicate(timeout=60)
    killed = time.monotonic()

    def left() -> list[str]:  # by pid and start time: an orphan that sshd no longer parents still counts
        return still_running(launched)

    while left() and time.monotonic() - killed < 60:
        time.sleep(0.5)
    gone_after = time.monotonic() - killed
    summary_lines.append(
        f"cluster (--hosts on loopback): {len(launched)} launched processes; those left "
        f"{gone_after:.1f} s after the coordinator's SIGKILL: {len(left())}"
    )
    assert not left(), f"still running a minute after the coordinator's SIGKILL: {left()}"
    # Their SSH sessions' end did it, not the scheduler's idle timeout (the backstop).
    assert gone_after < 30 < IDLE_SECONDS, f"the launched processes took {gone_after:.0f} s to end"
    # The keys went with their processes: no process holds one, no file has one, and there is nothing to clean.
    everyone = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    assert not [pid for pid, found in memory_keys(everyone).items() if keys & set(found)]
    assert not files_holding(keys, began - 1)
    assert remote_certificate_copies() == before_remote
