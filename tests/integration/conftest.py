"""Root integration tests: each must leave the machine exactly as it found it.

Before the first of them, what runs that died left on the machine (a suite or
a figure killed earlier on this machine) is undone and named: otherwise the
first test that loads the same congestion control is refused, and the first
test that runs `clean` "leaves" the dead run's changes undone.

A test may also leave lines for the end of the run's report, passed or not
(`summary_lines`): the stock-kernel lane puts the guest's slowest tests there.
"""

import os
import warnings
from collections.abc import Iterator

import pytest
from _pytest.terminal import TerminalReporter  # not exported by pytest 8.3
from machine import snapshot, wait_until_as_before  # pytest puts this folder on sys.path

from ground import ledgers, undo

SUMMARY = pytest.StashKey[list[str]]()


@pytest.fixture
def summary_lines(pytestconfig: pytest.Config) -> list[str]:
    """Lines printed at the end of the run's report, whether the test passes or not."""
    return pytestconfig.stash.setdefault(SUMMARY, [])


def pytest_terminal_summary(terminalreporter: TerminalReporter, config: pytest.Config) -> None:
    lines = config.stash.get(SUMMARY, [])
    if lines:
        terminalreporter.section("what the tests measured on the way")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(autouse=True, scope="session")
def no_leftovers_of_dead_runs(request: pytest.FixtureRequest) -> None:
    if os.geteuid() != 0:
        return
    dead = [found for found in ledgers.stale_ledgers() if not found.purpose]
    if not dead:
        return
    names = ", ".join(found.path.name for found in dead)
    report = undo.clean(only=lambda found: not found.purpose)
    message = f"runs that died had left changes on this machine ({names}); undone before the root tests: " + "; ".join(
        report
    )
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message, yellow=True)
    warnings.warn(message, stacklevel=1)


@pytest.fixture(autouse=True)
def leaves_machine_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    if "root" not in request.keywords:
        yield
        return
    before = snapshot()
    yield
    left, _ = wait_until_as_before(before, 30)
    if left:
        pytest.fail("the test left state behind:\n  " + "\n  ".join(left))
