"""The cluster engine's parts that need no cluster: its options, the one writer, a worker's refusal,
the run's certificates in memory, and a node as a host runs it."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import select
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import expts
from ground.errors import UserError
from ground.progress import Progress
from netrepro.engine import tls
from netrepro.engine.cluster import Engine, Writer
from netrepro.engine.node import bind_address, job_line
from netrepro.engine.ssh_cluster import node_command
from netrepro.engine.tls import RunCertificates, make_certificates
from netrepro.engine.worker import Job, start_trial_process
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit.trial import build

FIG = expts.find("iw/fig2")


@pytest.mark.parametrize(
    ("hosts", "scheduler", "ssh_config", "says"),
    [
        ("vm1", "tcp://a:8786", None, "--hosts and --scheduler: give one"),
        (None, "a:8786", None, "--scheduler a:8786: not a scheduler's address"),
        (None, "tcp://a", None, "--scheduler tcp://a: not a scheduler's address"),
        (None, "tcp://10.1.2.3:8786", None, "--scheduler tcp://10.1.2.3:8786: plain tcp:// .* only to loopback"),
        (None, "tcp://vm1.example:8786", None, "--scheduler tcp://vm1.example:8786: plain tcp://"),  # no look-up
        (None, "tcp://127.0.0.1:8786", None, None),
        (None, "tcp://127.3.4.5:8786", None, None),
        (None, "tcp://localhost:8786", None, None),
        (None, "tcp://[::1]:8786", None, None),
        ("vm1,,vm2", None, None, "'' is not a host"),
        ("vm1,vm 2", None, None, "'vm 2' is not a host"),
        ("vm1;reboot", None, None, "'vm1;reboot' is not a host"),
        ("vm1,root@vm1", None, None, "a host named twice"),  # one VM, one lab, whoever logs in
        ("vm1,vm1", None, None, "a host named twice"),
        ("root@vm1,root@vm2", None, None, None),
        ("vm1", None, Path("/no/such/config"), "--ssh-config /no/such/config: no such file"),
        (None, None, Path("/etc/hostname"), "--ssh-config is for --hosts"),
    ],
)
def test_bad_engine_options_are_refused_by_name(
    hosts: str | None, scheduler: str | None, ssh_config: Path | None, says: str | None
) -> None:
    if says is None:
        assert Engine.parse(hosts, scheduler, ssh_config) is not None
        return
    with pytest.raises(UserError, match=says.replace("(", r"\(").replace("[", r"\[")):
        Engine.parse(hosts, scheduler, ssh_config)


def test_engine_options_parsed() -> None:
    assert Engine.parse(None, None) is None  # a local run
    assert Engine.parse(None, "tcp://127.0.0.1:8786") == Engine(scheduler="tcp://127.0.0.1:8786")
    assert Engine.parse("root@vm1, vm2", None).hosts == ("root@vm1", "vm2")  # type: ignore[union-attr]


def test_plain_tcp_to_another_host_is_refused_in_one_line_unless_insecure() -> None:
    with pytest.raises(UserError) as refused:
        Engine.parse(None, "tcp://10.1.2.3:8786")
    said = str(refused.value)
    assert "\n" not in said and said.startswith("--scheduler tcp://10.1.2.3:8786: ")
    assert "loopback" in said and "--insecure" in said and "tls://" in said
    engine = Engine.parse(None, "tcp://10.1.2.3:8786", insecure=True)
    assert engine == Engine(scheduler="tcp://10.1.2.3:8786", insecure=True)
    assert engine.describe() == "scheduler tcp://10.1.2.3:8786 (insecure)" and engine.security() is None


def test_tls_options(tmp_path: Path) -> None:
    import dask.config

    ca, cert, key = (tmp_path / n for n in ("ca.crt", "me.crt", "me.key"))
    for f in (ca, cert, key):
        f.write_text("x")
    files = {"tls_ca_file": ca, "tls_cert": cert, "tls_key": key}
    engine = Engine.parse(None, "tls://10.1.2.3:8786", tls_ca_file=ca, tls_cert=cert, tls_key=key)
    assert engine is not None and engine.tls_ca_file == ca and not engine.insecure
    refusals = [
        ((None, "tcp://10.1.2.3:8786"), files, "--tls-ca-file, --tls-cert, --tls-key are for tls://"),
        ((None, "tls://h:1"), {"tls_ca_file": ca}, "--tls-cert missing"),
        ((None, "tls://h:1"), {"tls_cert": cert}, "--tls-ca-file missing"),
        ((None, "tls://h:1"), {**files, "tls_key": tmp_path / "none"}, "--tls-key .*none: no such file"),
        ((None, "tls://h:1"), {**files, "insecure": True}, "--insecure is for tcp://"),
        (("vm1", None), {"insecure": True}, "--insecure: for --scheduler"),
        (("vm1", None), {"tls_ca_file": ca}, "--tls-ca-file: for --scheduler"),
    ]
    for args, kwargs, says in refusals:
        with pytest.raises(UserError, match=says):
            Engine.parse(*args, **kwargs)  # type: ignore[arg-type]
    none = {"distributed.comm.tls.ca-file": None, "distributed.comm.tls.client.cert": None}
    with dask.config.set(none), pytest.raises(UserError, match="tls://h:1: no TLS credentials"):
        Engine.parse(None, "tls://h:1")
    with dask.config.set({"distributed.comm.tls.ca-file": str(ca), "distributed.comm.tls.client.cert": str(cert)}):
        assert Engine.parse(None, "tls://h:1") == Engine(scheduler="tls://h:1")  # Dask's own configuration


class Sink:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def append(self, row: dict[str, Any]) -> None:
        self.rows.append(row)


def item(
    key: str, worker: str = "tcp://w1:1", kernel: str = "6.1.0", backend: str = "netem", status: str = "ok"
) -> dict[str, Any]:
    return {"row": {"trial_key": key, "kernel": kernel, "backend": backend, "status": status},
            "worker": worker, "host": worker[6:8], "kernel": kernel}  # fmt: skip


def test_the_writer_writes_each_trial_once_and_names_its_worker() -> None:
    sink, told = Sink(), list[list[str]]()
    writer = Writer(FIG, sink, allow_mixed=False, on_done=told.append)
    writer.take([item("a", status="failed"), item("a", "tcp://w2:1"), item("b")])
    writer.take([item("a", "tcp://w1:1")])  # a second successful row of a: dropped
    assert [(r["trial_key"], r["status"], r["worker"]) for r in sink.rows] == [
        ("a", "failed", "tcp://w1:1"), ("a", "ok", "tcp://w2:1"), ("b", "ok", "tcp://w1:1"),
    ]  # fmt: skip
    assert writer.second_rows_dropped == 1 and told[-1] == ["a", "b"]
    assert {w: d["rows"] for w, d in writer.workers.items()} == {"tcp://w1:1": 2, "tcp://w2:1": 1}


def test_the_progress_bar_counts_a_trial_once_however_many_attempts_it_took() -> None:
    shown = io.StringIO()
    writer = Writer(FIG, Sink(), allow_mixed=False, progress=Progress(2, "iw/fig2", stream=shown))
    writer.take([item("a", status="failed"), item("a", status="failed", worker="tcp://w2:1"), item("a")])
    writer.take([item("b")])
    assert writer.progress is not None and writer.progress.done == 2
    assert [line.split("] ")[1].split(" trials")[0] for line in shown.getvalue().splitlines()] == ["1/2", "2/2"]
    assert "-" not in shown.getvalue().rsplit("elapsed, ~", 1)[1]  # no time left below zero (once 311/300, ~-1:58:17)


def test_the_writer_drops_rows_for_trials_not_handed_out(caplog: pytest.LogCaptureFixture) -> None:
    sink = Sink()
    writer = Writer(FIG, sink, allow_mixed=False, expected={"a", "b"}, launcher=Engine(hosts=("h",)).describe())
    with caplog.at_level(logging.WARNING, logger="netrepro.engine.cluster"):
        writer.take([item("a"), item("z", "tcp://w9:1"), item("b")])
        writer.take([{"row": "not a row"}, {"row": {"trial_key": 1}, "worker": "w", "host": "h", "kernel": "k"}])
    assert [r["trial_key"] for r in sink.rows] == ["a", "b"]
    assert (
        writer.rows_not_handed_out_dropped == 3
        and writer.manifest()["rows_not_handed_out_dropped"] == 3
        and writer.manifest()["launcher"] == "SSH hosts h"
    )
    assert any("a row for z, a trial not handed out, dropped" in r.getMessage() for r in caplog.records)
    assert set(writer.workers) == {"tcp://w1:1"}  # the stranger is not counted among the workers


def test_the_writer_never_takes_a_row_twice() -> None:
    sink = Sink()
    writer = Writer(FIG, sink, allow_mixed=False, expected={"a"})
    writer.take([item("a", status="failed"), item("a", status="failed")])  # the same row, twice
    assert len(sink.rows) == 1 and writer.second_rows_dropped == 1


@pytest.mark.parametrize(("kernel", "backend"), [("6.18.0", "netem"), ("6.1.0", "delayline")])
def test_the_writer_refuses_a_second_kernel_or_backend_unless_mixing_is_allowed(kernel: str, backend: str) -> None:
    sink = Sink()
    writer = Writer(FIG, sink, allow_mixed=False)
    writer.take([item("a")])
    with pytest.raises(UserError, match="the workers differ: kernel 6.1.0, backend netem .*--allow-mixed"):
        writer.take([item("b", "tcp://w2:1", kernel, backend)])
    assert [r["trial_key"] for r in sink.rows] == ["a"]  # the rows before are kept
    mixed = Writer(FIG, Sink(), allow_mixed=True)
    mixed.take([item("a"), item("b", "tcp://w2:1", kernel, backend)])
    assert len(mixed.workers) == 2


def test_a_worker_that_runs_other_code_refuses_before_any_trial() -> None:
    first = build(FIG.grid(quick=True)[0], 0, FIG.x, WORKLOADS[FIG.workload].keys_type)
    job = Job(
        figure=FIG, todo=[first], quick=True, overrides={}, seed=1, strict=False, shaper="auto",
        switch="auto", cc_impl=None, code="0123456789ab", rows="r", done="d", stop="s",
    )  # fmt: skip
    with tempfile.TemporaryFile("w+") as log_file:
        child, protocol = start_trial_process(job, log_file)
        try:
            said = b""
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if select.select([protocol], [], [], 1)[0]:
                    chunk = os.read(protocol, 4096)
                    if not chunk:
                        break
                    said += chunk
            assert child.wait(30) == 2
        finally:
            os.close(protocol)
            if child.poll() is None:
                child.kill()
                child.wait()
    messages = [json.loads(line) for line in said.splitlines()]
    assert len(messages) == 1 and "refused" in messages[0], messages
    assert "the coordinator 0123456789ab" in messages[0]["refused"]
    assert first.key not in said.decode()  # it asked for no trial


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> tuple[str, str]:
    """Both ends' outcome of a TLS handshake (and a byte each way) over a socket pair."""
    a, b = socket.socketpair()
    outcome = {"server": "", "client": ""}

    def serve() -> None:
        try:
            with server.wrap_socket(a, server_side=True) as s:
                s.sendall(s.recv(1))
            outcome["server"] = "ok"
        except (OSError, ssl.SSLError) as e:
            outcome["server"] = repr(e)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with client.wrap_socket(b) as c:
            c.sendall(b"x")
            outcome["client"] = "ok" if c.recv(1) == b"x" else "closed"
    except (OSError, ssl.SSLError) as e:
        outcome["client"] = repr(e)
    finally:
        b.close()
        thread.join(10)
        a.close()
    return outcome["server"], outcome["client"]


@pytest.fixture
def certificates() -> RunCertificates:
    return make_certificates("test")


def memory_files(pid: int) -> dict[str, bytes]:
    """A process's memory files of the run's certificates: name -> content (root, or the process's owner)."""
    found = {}
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            link = os.readlink(fd)
            if link.startswith(f"/memfd:{tls.MEMFD_PREFIX}"):
                found[link.removeprefix(f"/memfd:{tls.MEMFD_PREFIX}").removesuffix(" (deleted)")] = fd.read_bytes()
    return found


def test_the_run_certificates_let_in_only_their_holders(certificates: RunCertificates) -> None:
    from distributed.security import Security

    assert set(certificates.pem) == {"ca.crt", "node.crt", "node.key", "client.crt", "client.key"}  # no CA key
    with tls.in_memory(certificates.pem) as paths:
        # memory files of this process, named so that Dask opens them: nothing on a disk
        assert memory_files(os.getpid()) == dict(certificates.pem)
        assert all(p.startswith(f"/proc/{os.getpid()}/fd/") for p in paths.values())
        node = tls.security(paths, node=True)
        listen = node.get_listen_args("scheduler")["ssl_context"]
        client = tls.security(paths, client=True).get_connection_args("client")["ssl_context"]
        assert handshake(listen, client) == ("ok", "ok")
        assert handshake(listen, node.get_connection_args("worker")["ssl_context"]) == ("ok", "ok")  # worker to worker
        stranger = Security.temporary()  # type: ignore[no-untyped-call]  # a certificate of another CA
        assert "ok" not in handshake(listen, stranger.get_connection_args("client")["ssl_context"])
        anonymous = ssl.create_default_context(cadata=certificates.pem["ca.crt"].decode())  # trusts it, holds none
        anonymous.check_hostname = False
        assert handshake(listen, anonymous)[0] != "ok"
    assert memory_files(os.getpid()) == {}  # closed with the block


def test_a_node_holds_the_certificates_in_memory_and_ends_with_its_session(
    certificates: RunCertificates, tmp_path: Path
) -> None:
    """A scheduler node as a host runs it: its job on stdin, nothing on its command line, the key in memory files
    only, serving the run's certificates alone, and gone when its stdin (the SSH session) ends."""
    from distributed import Client

    command = node_command()
    assert command.endswith(" -m netrepro.engine.node") and "tls" not in command  # all that `ps` will show
    env = {**os.environ, "SSH_CONNECTION": "127.0.0.1 50000 127.0.0.1 22"}  # as sshd sets it
    node = subprocess.Popen(
        [sys.executable, "-m", "netrepro.engine.node"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert node.stdin is not None and node.stdout is not None
    try:
        kwargs = {"protocol": "tls", "port": 0, "dashboard": False, "dashboard_address": None, "idle_timeout": 300}
        node.stdin.write(job_line("scheduler", None, kwargs, certificates.node_files(), "vm1", str(tmp_path / "s")))
        node.stdin.flush()
        ready = node.stdout.readline()
        assert ready.startswith("ready tls://127.0.0.1:"), ready
        cmdline = Path(f"/proc/{node.pid}/cmdline").read_bytes()
        assert cmdline.split(b"\0")[1:3] == [b"-m", b"netrepro.engine.node"] and b"tls" not in cmdline
        assert memory_files(node.pid) == certificates.node_files()
        key = certificates.pem["node.key"]
        assert not [f for f in tmp_path.rglob("*") if f.is_file() and key in f.read_bytes()]
        address = ready.split()[1]
        with (
            tls.in_memory(certificates.client_files()) as paths,
            Client(address, security=tls.security(paths, client=True), timeout=20) as client,  # type: ignore[no-untyped-call]
        ):
            assert client.scheduler_info()["address"] == address
        node.stdin.close()  # the session ended
        assert node.wait(30) == 0
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()


@pytest.mark.parametrize(
    ("ssh_connection", "address"),
    [
        ("10.0.0.9 50000 10.0.0.1 22", "10.0.0.1"),
        ("::1 50000 ::1 22", "[::1]"),
        ("fe80::2 5 fe80::1%eth0 22", "[fe80::1]"),
        ("", "vm1"),  # no SSH_CONNECTION: the name given
        ("a b not-an-address d", "vm1"),
    ],
)
def test_the_bind_address_is_where_ssh_reached_the_host(ssh_connection: str, address: str) -> None:
    assert bind_address(ssh_connection, "vm1") == address
