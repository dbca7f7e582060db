"""Unit-test set-up: figure locks and ledgers go to directories of the test's own, never
/run/netrepro (a unit test neither makes it nor reads a live run's ledgers there); the CLI's logging
set-up is undone after each test."""

import logging
from collections.abc import Iterator
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


@pytest.fixture(autouse=True)
def netrepro_logging_restored() -> Iterator[None]:
    """A test that runs the CLI configures the `netrepro` logger (logs.configure): undo it after,
    so that later tests' caplog sees the records again and no handler writes to a closed capture."""
    top = logging.getLogger("netrepro")
    handlers, level, propagate = list(top.handlers), top.level, top.propagate
    yield
    for handler in list(top.handlers):
        top.removeHandler(handler)
    for handler in handlers:
        top.addHandler(handler)
    top.setLevel(level)
    top.propagate = propagate
