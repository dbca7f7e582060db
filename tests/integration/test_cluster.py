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
and its processes end within a minute of the coordinator's SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from figures import ok_rows

import expts
from ground import ledgers, undo
from ground.results import REPO
from ground.trials import read_rows, trial_key
from netrepro.engine.ssh_cluster import remote_certificate_copies
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

    def __init__(self, where: Path, tls: RunCertificates | None = None) -> None:
        self.where = where
        self.file = where / "scheduler.json"
        self.workers: dict[str, subprocess.Popen[bytes]] = {}  # address: process
        self.env = {**os.environ, "DASK_TEMPORARY_DIRECTORY": str(where)}  # Dask's scratch files: here
        self.tls: list[str] = []
        if tls is not None:
            self.tls = ["--tls-ca-file", str(tls.ca), "--tls-cert", str(tls.node_cert), "--tls-key", str(tls.node_key)]
        log = open(where / "scheduler.log", "wb")  # noqa: SIM115 - the process's, closed with it
        self.scheduler = subprocess.Popen(
            [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
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
def tls_cluster(tmp_path: Path) -> Iterator[tuple[Cluster, RunCertificates]]:
    """A running cluster on TLS, and certificates from its CA: the client's are --scheduler's TLS files."""
    private = tmp_path / "tls"
    private.mkdir(mode=0o700)
    made = make_certificates(private, "test")
    c = Cluster(tmp_path, made)
    try:
        yield c, made
    finally:
        c.stop()


def test_two_workers_run_every_trial_once(tls_cluster: tuple[Cluster, RunCertificates], tmp_path: Path) -> None:
    cluster, tls = tls_cluster
    assert cluster.address.startswith("tls://127.0.0.1:")
    workers = {cluster.add_worker(), cluster.add_worker()}
    fig = expts.find(SETTINGS_FIGURE)
    out = tmp_path / "results"
    said = finished(run("run", SETTINGS_FIGURE, "--quick", "--scheduler", cluster.address, "--out", str(out),
                        "--tls-ca-file", str(tls.ca), "--tls-cert", str(tls.client_cert),
                        "--tls-key", str(tls.client_key)))  # fmt: skip
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


def test_a_launched_cluster_lets_in_only_the_run_and_ends_with_it(
    sshd: Sshd, tmp_path: Path, summary_lines: list[str]
) -> None:
    from distributed.security import Security

    before_remote = remote_certificate_copies()
    before_local = set(Path(tempfile.gettempdir()).glob("netrepro-tls-*"))
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
        launched = descendants(sshd.pid)  # the holder, the scheduler, the nanny, the worker, its trial process
        ports = listening(set(launched))
        summary_lines.append(f"cluster (--hosts on loopback): the launched processes listen on {sorted(ports)}")
        assert ports and all(address == "127.0.0.1" for address, _ in ports), ports  # none on 0.0.0.0, [::] or *
        assert ("127.0.0.1", 8786) in ports
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
                    with stranger.wrap_socket(raw) as tls:
                        tls.sendall(b"x")
                        tls.settimeout(5)
                        assert tls.recv(1) == b"", f"port {port} took a stranger's certificate"
                except (OSError, ssl.SSLError):
                    pass  # refused in the handshake (or not TLS: HTTP)
        # The coordinator's copy of the certificates: a private directory its ledger removes.
        local = set(Path(tempfile.gettempdir()).glob("netrepro-tls-*")) - before_local
        assert len(local) == 1 and all(p.stat().st_mode & 0o777 == 0o700 for p in local), local
        assert {f.stat().st_mode & 0o777 for p in local for f in p.iterdir()} == {0o600}
        coordinators = [f for f in ledgers.ledger_files() if f.owner and f.owner.get("pid") == coordinator.pid]
        assert [str(p) for p in local] == [
            e["path"] for f in coordinators for e in f.entries if e.get("kind") == "path"
        ]
        assert remote_certificate_copies() - before_remote, "the host's copy of the run's certificate"
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
    # Their SSH sessions' end did it, not the scheduler's idle timeout (the backstop, at 50 s).
    assert gone_after < 30, f"the launched processes took {gone_after:.0f} s to end"
    assert remote_certificate_copies() == before_remote  # the host removed its copy of the run's certificate
    # The coordinator's own copy is in its ledger, which `clean` undoes (the run would have at its end).
    report = undo.clean(only=lambda found: (found.owner or {}).get("pid") == coordinator.pid)
    assert not [p for p in local if p.exists()], report
