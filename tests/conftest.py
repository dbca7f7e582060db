"""Shared test set-up: root-only tests skip off-root, and fail in CI instead."""

import os

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
