"""Unit-test set-up: figure locks and ledgers go to directories of the test's own, never
/run/netrepro (a unit test neither makes it nor reads a live run's ledgers there)."""

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def lock_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    locks = tmp_path_factory.mktemp("locks")
    monkeypatch.setenv("NETREPRO_LOCK_DIR", str(locks))
    return locks


@pytest.fixture(autouse=True)
def ledger_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    ledgers = tmp_path_factory.mktemp("ledgers")
    monkeypatch.setattr("ground.ledgers.LEDGER_DIR", ledgers)
    return ledgers
