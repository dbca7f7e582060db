"""Unit-test set-up: figure locks go to a directory of the test's own, never /run/netrepro/locks."""

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def lock_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    locks = tmp_path_factory.mktemp("locks")
    monkeypatch.setenv("NETREPRO_LOCK_DIR", str(locks))
    return locks
