"""The cluster engine's parts that need no cluster: its options, the one writer, a worker's refusal."""

from __future__ import annotations

import json
import os
import select
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

import expts
from ground.errors import UserError
from ground.trials import trial_key
from netrepro.cluster import Engine, Writer
from netrepro.worker import Job, start_trial_process

FIG = expts.find("iw/fig2")


@pytest.mark.parametrize(
    ("hosts", "scheduler", "ssh_config", "says"),
    [
        ("vm1", "tcp://a:8786", None, "--hosts and --scheduler: give one"),
        (None, "a:8786", None, "--scheduler a:8786: not a scheduler's address"),
        (None, "tcp://a", None, "--scheduler tcp://a: not a scheduler's address"),
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
    assert Engine.parse(None, "tcp://10.0.0.1:8786") == Engine(scheduler="tcp://10.0.0.1:8786")
    assert Engine.parse("root@vm1, vm2", None).hosts == ("root@vm1", "vm2")  # type: ignore[union-attr]


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
    params = FIG.grid(quick=True)[0]
    job = Job(
        figure=FIG, todo=[(params, 0)], quick=True, overrides={}, seed=1, strict=False, shaper="auto",
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
    assert trial_key(params, 0) not in said.decode()  # it asked for no trial
