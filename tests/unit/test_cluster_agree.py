"""A cluster run's hosts, before anything is handed out: one backend, switch, kernel and implementation for the
CSV (netrepro.engine.agree), taken or refused by name; and a running scheduler's workers, on TLS or loopback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import expts
from ground import results
from ground.errors import UserError
from netrepro.engine import agree, cluster
from netrepro.engine.agree import HostSetup
from netrepro.engine.cluster import Engine, Writer, _wait_for_lab_slots
from netrepro.runner.resume import Setup
from netrepro.runner.sweep import Options
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit.trial import build_all

FIG = expts.find("cubicplus/fig3")  # CUBIC (the kernel's) against cubic_plus (a module or a BPF program)
CODE = "0123456789ab"
BOTH = {"lkm": {"cubic": "kernel", "cubic_plus": "lkm"}, "bpf": {"cubic": "kernel", "cubic_plus": "bpf"}}


def host(
    worker: str,
    name: str,
    own: str,
    *,
    choices: tuple[str, ...] = ("lkm", "bpf"),
    kernel: str = "6.18.0",
    backend: str = "delayline",
    switch: str = "bridge",
) -> dict[str, Any]:
    """A probe's answer: cubic_plus as `own` by the host's own choice; `choices`: the --impl it could take."""
    impls: dict[str, Any] = {agree.OWN: BOTH[own]}
    impls.update({c: BOTH.get(c) if c in choices else None for c in agree.IMPL_CHOICES})
    return {"host": name, "kernel": kernel, "backend": backend, "switch": switch, "impls": impls, "code": CODE}


# vmA has the kernel's headers (the module, or BPF), vmB has not (BPF only)
HEADERS_ON_A = {
    "tls://10.0.0.1:4001": host("a", "vmA", "lkm"),
    "tls://10.0.0.2:4001": host("b", "vmB", "bpf", choices=("bpf",)),
}


def hosts(answers: dict[str, Any]) -> list[HostSetup]:
    return [HostSetup.of(worker, answer) for worker, answer in answers.items()]


class FakeClient:
    """A Dask client of a scheduler with these workers, whose probes answer so; it records what was handed out."""

    def __init__(self, workers: dict[str, dict[str, Any]], answers: dict[str, Any] | None = None) -> None:
        self.workers = workers
        self.answers = answers or {}
        self.submitted: list[Any] = []
        self.probed: list[str] = []

    def scheduler_info(self, n_workers: int = 5) -> dict[str, Any]:
        return {"workers": self.workers}

    def run(self, function: Any, *args: Any, workers: list[str], on_error: str = "raise") -> dict[str, Any]:
        assert function is agree.probe and on_error == "return"
        self.probed += workers
        return {w: self.answers[w] for w in workers}

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        self.submitted.append((args, kwargs))
        raise AssertionError("a task was handed out")


LAB = {"resources": {"lab": 1}}


def test_a_two_host_plan_with_different_implementations_is_refused_before_a_lab_exists(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # vmA can run cubic_plus only as its module, vmB only as BPF: no implementation is on both
    apart = {"tls://10.0.0.1:4001": host("a", "vmA", "lkm", choices=("lkm",)),
             "tls://10.0.0.2:4001": host("b", "vmB", "bpf", choices=("bpf",))}  # fmt: skip
    fake = FakeClient(dict.fromkeys(apart, LAB), apart)

    @contextlib.contextmanager
    def connect(engine: Engine) -> Iterator[FakeClient]:
        yield fake

    monkeypatch.setattr(cluster, "connect", connect)
    monkeypatch.setattr(results, "code_fingerprint", lambda: CODE)  # the hosts run this checkout
    engine = Engine.parse("vmA,vmB", None)
    assert engine is not None
    todo = build_all(FIG.grid(quick=True), 1, FIG.x, WORKLOADS[FIG.workload].keys_type, FIG.topology)
    with pytest.raises(UserError) as refused:
        cluster.run_trials(engine, FIG, todo, Options(out=tmp_path, quick=True), [])  # type: ignore[arg-type]
    said = str(refused.value)
    assert "cubic_plus as lkm (vmA)" in said and "cubic_plus as bpf (vmB)" in said and "no --impl" in said, said
    assert fake.probed == sorted(apart) and fake.submitted == []  # every host asked; no lab, no task
    assert not list(tmp_path.iterdir())
    # --impl lkm where vmB (no kernel headers) cannot build the module: refused, naming it
    forced = {**HEADERS_ON_A, "tls://10.0.0.2:4001": {**host("b", "vmB", "bpf"), "impls": {agree.OWN: None}}}
    with pytest.raises(
        UserError, match=r"\(--impl lkm\): cubic as kernel, cubic_plus as lkm \(vmA\); none it can run \(vmB\)"
    ):
        agree.decide(FIG, hosts(forced), CODE, "lkm", "auto", allow_mixed=False)


def test_hosts_whose_own_choices_differ_take_the_implementation_all_of_them_have() -> None:
    agreed = agree.decide(FIG, hosts(HEADERS_ON_A), CODE, None, "auto", allow_mixed=False)
    assert agreed.cc_impl == "bpf" and agreed.impls == {"cubic": "kernel", "cubic_plus": "bpf"}
    assert agreed.job_options("auto", "auto") == {"shaper": "delayline", "switch": "bridge", "cc_impl": "bpf"}
    assert len(agreed.notes) == 1 and "--impl bpf on every host" in agreed.notes[0]
    recorded = agreed.manifest()
    assert recorded["cc_impls"] == {"cubic": "kernel", "cubic_plus": "bpf"} and recorded["impl_option"] == "bpf"
    assert set(recorded["hosts"]) == set(HEADERS_ON_A)
    # hosts that agree by their own choice keep it, and say nothing
    same = {"tls://a:1": host("a", "vmA", "lkm"), "tls://b:1": host("b", "vmB", "lkm")}
    mine = agree.decide(FIG, hosts(same), CODE, None, "auto", allow_mixed=False)
    assert mine.cc_impl is None and mine.impls["cubic_plus"] == "lkm" and not mine.notes


def test_hosts_without_an_implementation_in_common_are_refused_by_name() -> None:
    apart = {
        "tls://a:1": host("a", "vmA", "lkm", choices=("lkm",)),
        "tls://b:1": host("b", "vmB", "bpf", choices=("bpf",)),
    }
    with pytest.raises(UserError, match=r"cubic_plus as lkm \(vmA\); .*cubic_plus as bpf \(vmB\).*no --impl"):
        agree.decide(FIG, hosts(apart), CODE, None, "auto", allow_mixed=False)


def test_hosts_of_two_kernels_backends_or_switches() -> None:
    kernels = {"tls://a:1": host("a", "vmA", "bpf"), "tls://b:1": host("b", "vmB", "bpf", kernel="6.1.0")}
    with pytest.raises(UserError, match=r"differ in kernel: 6.18.0 \(vmA\); 6.1.0 \(vmB\).*--allow-mixed"):
        agree.decide(FIG, hosts(kernels), CODE, None, "auto", allow_mixed=False)
    assert agree.decide(FIG, hosts(kernels), CODE, None, "auto", allow_mixed=True).kernel == "mixed"
    backends = {"tls://a:1": host("a", "vmA", "bpf"), "tls://b:1": host("b", "vmB", "bpf", backend="netem")}
    with pytest.raises(UserError, match=r"differ in backend: delayline \(vmA\); netem \(vmB\)"):
        agree.decide(FIG, hosts(backends), CODE, None, "auto", allow_mixed=False)
    switches = {"tls://a:1": host("a", "vmA", "bpf", backend="netem", switch="ovs"),
                "tls://b:1": host("b", "vmB", "bpf", backend="netem")}  # fmt: skip
    agreed = agree.decide(FIG, hosts(switches), CODE, None, "auto", allow_mixed=False)
    assert agreed.switch == "bridge" and agreed.job_options("auto", "auto")["switch"] == "bridge"
    with pytest.raises(UserError, match=r"--switch ovs: the hosts differ: ovs \(vmA\); bridge \(vmB\)"):
        agree.decide(FIG, hosts(switches), CODE, None, "ovs", allow_mixed=False)


def test_a_host_that_cannot_run_the_figure_or_runs_other_code_is_named() -> None:
    broken = {"tls://a:1": host("a", "vmA", "bpf"), "tls://b:1": {"host": "vmB", "kernel": "6.1", "error": "no netem"}}
    with pytest.raises(Exception, match=r"vmB \(tls://b:1\): no netem"):
        agree.decide(FIG, hosts(broken), CODE, None, "auto", allow_mixed=False)
    other = {"tls://a:1": host("a", "vmA", "bpf"), "tls://b:1": {**host("b", "vmB", "bpf"), "code": "fedcba987654"}}
    with pytest.raises(UserError, match=r"fedcba987654 \(vmB\) run other code"):
        agree.decide(FIG, hosts(other), CODE, None, "auto", allow_mixed=False)
    assert "its probe failed: OSError" in HostSetup.of("tls://c:1", OSError("gone")).error


def test_the_writer_refuses_a_row_of_another_implementation_than_agreed() -> None:
    agreed = agree.decide(FIG, hosts(HEADERS_ON_A), CODE, None, "auto", allow_mixed=False)
    rows: list[dict[str, Any]] = []

    class Sink:
        def append(self, row: dict[str, Any]) -> None:
            rows.append(row)

    writer = Writer(FIG, Sink(), allow_mixed=False, agreed=agreed)
    base = {"kernel": "6.18.0", "backend": "delayline", "status": "ok", "switch": "bridge"}
    item = {"worker": "tls://10.0.0.1:4001", "host": "vmA", "kernel": "6.18.0"}
    writer.take([{**item, "row": {**base, "trial_key": "a", "cc": "cubic_plus", "cc_impl": "bpf"}}])
    with pytest.raises(UserError, match="ran with cc_impl lkm, not bpf"):
        writer.take([{**item, "row": {**base, "trial_key": "b", "cc": "cubic_plus", "cc_impl": "lkm"}}])
    assert [r["trial_key"] for r in rows] == ["a"]
    assert writer.manifest()["setup"]["impl_option"] == "bpf"


@pytest.mark.parametrize(
    ("workers", "insecure", "refused"),
    [
        ({"tcp://10.0.0.5:40000": LAB}, False, "tcp://10.0.0.5:40000"),  # a plain-TCP worker on another machine
        ({"tcp://127.0.0.1:40000": LAB, "tcp://[2001:db8::5]:1": {}}, False, "tcp://[2001:db8::5]:1"),
        ({"tcp://10.0.0.5:40000": LAB}, True, None),  # as the user asked
        ({"tcp://127.0.0.1:40000": LAB, "tls://10.0.0.5:40000": LAB}, False, None),
    ],
)
def test_a_scheduler_with_a_plain_tcp_remote_worker_is_refused(
    workers: dict[str, dict[str, Any]], insecure: bool, refused: str | None
) -> None:
    engine = Engine.parse(None, "tcp://127.0.0.1:8786", insecure=insecure)
    assert engine is not None
    fake = FakeClient(workers)
    if refused is None:
        assert _wait_for_lab_slots(fake, engine) == sorted(w for w, d in workers.items() if d)
        return
    with pytest.raises(UserError) as said:
        _wait_for_lab_slots(fake, engine)
    line = str(said.value)
    assert "\n" not in line and line.startswith("--scheduler tcp://127.0.0.1:8786: its workers ")
    assert refused in line and "--insecure" in line and "127.0.0.1:40000" not in line


def test_a_worker_that_joins_later_finds_how_its_own_setup_differs() -> None:
    agreed = agree.decide(FIG, hosts(HEADERS_ON_A), CODE, None, "auto", allow_mixed=False)
    expected = agreed.expected()
    assert expected == {"switch": "bridge", "impls": {"cubic": "kernel", "cubic_plus": "bpf"},
                        "kernel": "6.18.0", "backend": "delayline"}  # fmt: skip
    same = Setup("delayline", "bridge", "6.18.0", {"cubic": "kernel", "cubic_plus": "bpf"})
    assert agree.differences(expected, same) == ""
    late = Setup("netem", "bridge", "6.1.0", {"cubic": "kernel", "cubic_plus": "lkm"})
    assert agree.differences(expected, late) == (
        "kernel 6.1.0, the run's 6.18.0; backend netem, the run's delayline; cubic_plus as lkm, the run's as bpf"
    )
    kernels = {"tls://a:1": host("a", "vmA", "bpf"), "tls://b:1": host("b", "vmB", "bpf", kernel="6.1.0")}
    mixed = agree.decide(FIG, hosts(kernels), CODE, None, "auto", allow_mixed=True).expected()
    assert "kernel" not in mixed and agree.differences(mixed, Setup("delayline", "bridge", "5.10", same.impls)) == ""
