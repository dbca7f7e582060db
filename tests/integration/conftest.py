"""Root integration tests: each must leave the machine exactly as it found it."""

import time
from collections.abc import Iterator

import pytest
from machine import differences, snapshot  # pytest puts this folder on sys.path


@pytest.fixture(autouse=True)
def leaves_machine_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    if "root" not in request.keywords:
        yield
        return
    before = snapshot()
    yield
    for _ in range(300):  # processes being reaped, sockets of dead namespaces freed: up to 30 s
        diff = differences(before, snapshot())
        if not diff:
            return
        time.sleep(0.1)
    pytest.fail("the test left state behind:\n  " + "\n  ".join(diff))
