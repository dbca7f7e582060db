"""Shared test set-up: root-only tests skip off-root, and fail in CI instead; the CLI's logging set-up
is undone after each test, unit or integration."""

import logging
import os
from collections.abc import Iterator

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    if os.environ.get("CI"):
        raise pytest.UsageError("CI must run the suite as root: the root integration tests are part of it")
    skip = pytest.mark.skip(reason="needs root, network namespaces and the lab's tools: run `sudo ./run.sh test`")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)


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
