"""A figure on a Dask cluster: every trial once, the coordinator the only writer, a lost worker's trials redone.

A scheduler and two workers (`dask worker --resources lab=1 --nthreads 1`,
each running its labs in namespaces of its own) on this machine stand for
two VMs; iw/fig5b --quick has three path settings, one task each.  Its
CSV must hold exactly the trial keys of the plain figure, each once.  A
worker SIGKILLed after its first row: its setting's trials finish on the
other, none lost, none run twice, and its lab is undone (the trial process
dies with its worker).  Dask's SSH launcher (`--hosts`) runs a
one-setting figure through an sshd the test starts on a loopback port,
with a host key and a client key it makes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import expts
from ground.results import REPO
from ground.trials import read_rows, trial_key
from netrepro import shards

pytestmark = pytest.mark.root

DASK = Path(sys.executable).with_name("dask")
SETTINGS_FIGURE = "iw/fig5b"  # --quick: three path settings of six trials
ONE_SETTING_FIGURE = "iw/fig2"  # --quick: one path setting


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A Dask scheduler and workers on loopback, as the test's own processes."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.file = where / "scheduler.json"
        self.workers: dict[str, subprocess.Popen[bytes]] = {}  # address: process
        self.env = {**os.environ, "DASK_TEMPORARY_DIRECTORY": str(where)}  # Dask's scratch files: here
        log = open(where / "scheduler.log", "wb")  # noqa: SIM115 - the process's, closed with it
        self.scheduler = subprocess.Popen(
            [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(self.file)],
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
             "--local-directory", str(self.where / f"scratch-{port}")],
            stdout=log, stderr=log, cwd=REPO, env=self.env,
        )  # fmt: skip
        log.close()
        address = f"tcp://127.0.0.1:{port}"
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


def test_two_workers_run_every_trial_once(cluster: Cluster, tmp_path: Path) -> None:
    workers = {cluster.add_worker(), cluster.add_worker()}
    fig = expts.find(SETTINGS_FIGURE)
    out = tmp_path / "results"
    said = finished(run("run", SETTINGS_FIGURE, "--quick", "--scheduler", cluster.address, "--out", str(out)))
    rows = read_rows(out / fig.directory / fig.csv_name)
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
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
    rows = read_rows(csv)
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
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
def sshd(tmp_path: Path) -> Iterator[Path]:
    """An sshd on a loopback port that lets in root with a key made here; yields an OpenSSH client config."""
    sshd_bin = shutil.which("sshd") or "/usr/sbin/sshd"
    if not os.path.exists(sshd_bin):
        pytest.fail("no sshd: run.sh installs openssh-server")
    keys = tmp_path / "ssh"
    keys.mkdir(mode=0o700)
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True)
    (keys / "authorized_keys").write_text((keys / "client.pub").read_text())
    port = free_port()
    (keys / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {keys / 'host'}\nPidFile {keys / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {keys / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
    )
    host_key = (keys / "host.pub").read_text().split()
    (keys / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    (keys / "config").write_text(
        f"Host 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {keys / 'client'}\n"
        f"  UserKnownHostsFile {keys / 'known_hosts'}\n"
    )
    privsep = Path("/run/sshd")  # sshd's privilege separation directory; Debian's service makes it
    made = not privsep.exists()
    if made:
        privsep.mkdir(mode=0o755)
    daemon = subprocess.Popen([sshd_bin, "-D", "-e", "-f", str(keys / "sshd_config")],
                              stderr=open(keys / "sshd.log", "wb"))  # fmt: skip  # noqa: SIM115
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        yield keys / "config"
    finally:
        daemon.terminate()
        daemon.wait(30)
        if made:
            privsep.rmdir()


def test_the_ssh_launcher_runs_a_figure(sshd: Path, tmp_path: Path) -> None:
    fig = expts.find(ONE_SETTING_FIGURE)
    out = tmp_path / "results"
    said = finished(
        run("run", ONE_SETTING_FIGURE, "--quick", "--hosts", "root@127.0.0.1", "--ssh-config", str(sshd),
            "--out", str(out))
    )  # fmt: skip
    rows = read_rows(out / fig.directory / fig.csv_name)
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    assert sorted(r["trial_key"] for r in rows) == plain_keys(ONE_SETTING_FIGURE), said
    manifest = json.loads((out / fig.directory / f"{fig.name}.manifest.json").read_text())
    assert manifest["engine"]["launcher"] == "SSH hosts root@127.0.0.1" and len(manifest["engine"]["workers"]) == 1
