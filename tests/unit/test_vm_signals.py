"""`run.sh --vm`: a closed terminal (SIGHUP) stops the guest as SIGTERM does."""

import signal
from collections.abc import Iterator

import pytest

from netrepro.front import cli, exits
from netrepro.lanes import vm


@pytest.fixture
def handlers_restored() -> Iterator[None]:
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


@pytest.mark.usefixtures("handlers_restored")
def test_sighup_and_sigterm_both_unwind_a_vm_run(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    def run_in_vm(argv: list[str]) -> int:
        seen.update({s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)})
        return 0

    monkeypatch.setattr(vm, "run_in_vm", run_in_vm)
    assert cli.main(["--vm", "check"]) == 0
    assert seen == {signal.SIGTERM: exits._terminate, signal.SIGHUP: exits._terminate}
    with pytest.raises(SystemExit) as stopped:
        exits._terminate(signal.SIGHUP, None)
    assert stopped.value.code == 128 + signal.SIGHUP
