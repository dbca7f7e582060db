"""Tests that run inside the stock-kernel lane's guest (`run.sh --vm test tests/guest`).

On any other kernel they are skipped: the host's suite boots the guest and
runs them there (tests/integration/test_stock_kernel_lane.py).
"""

import pytest

from ground import kernel


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if kernel.guest_info() is not None:
        return
    skip = pytest.mark.skip(reason="runs in the stock-kernel guest: run.sh --vm test tests/guest")
    for item in items:
        if "tests/guest/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
