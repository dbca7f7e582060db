"""What a user who is not root can run: --help, --version, list, --dry-run; the rest is refused by name.

The commands run through run.sh as `nobody` (setpriv), as a student would
before typing sudo.  A private directory above the checkout (a CI
workspace) is opened to others for the test (o+x, recorded and put back).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from machine import NOBODY, searchable_by_others

import expts
from ground.results import REPO, RESULTS
from netrepro.runner.plan import Plan

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def reachable() -> Iterator[None]:
    """Every directory above the checkout searchable by others, for the test's length."""
    with searchable_by_others(REPO):
        yield


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "LANG": "C.UTF-8"}
    return subprocess.run([*NOBODY, str(REPO / "run.sh"), *argv], cwd="/", env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def files_under(tree: Path) -> set[Path]:
    return {p for p in tree.rglob("*")} if tree.exists() else set()


def test_help_and_version(reachable: None) -> None:
    helped = as_nobody("--help")
    assert helped.returncode == 0 and "usage: run.sh" in helped.stdout and "list" in helped.stdout, helped.stderr
    version = as_nobody("--version")
    assert version.returncode == 0, version.stderr
    assert re.fullmatch(r"netrepro \d+\.\d+\.\d+ \(commit [0-9a-f]{12}(\+dirty)?\)\n", version.stdout), version.stdout


def test_list_shows_every_figure_with_its_trials_time_and_stored_result(reachable: None) -> None:
    listed = as_nobody("list")
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()[1:] if line.strip()}
    for fig in expts.all_figures():
        line = lines[fig.full_name]
        full, quick = Plan.of(fig), Plan.of(fig, quick=True)
        assert f"{full.trials} / {quick.trials}" in line and f"{full.time()} / {quick.time()}" in line, line
        stored = full.stored
        assert (f"{stored.rows}" in line and stored.commit in line) if stored else " none " in line, line


def test_dry_run_prints_the_plan_and_creates_nothing(reachable: None) -> None:
    before = files_under(RESULTS)
    planned = as_nobody("iw/fig5b", "--quick", "--dry-run")
    assert planned.returncode == 0, planned.stderr
    fig = expts.find("iw/fig5b")
    cells = len(fig.grid(quick=True))
    trials = fig.trial_count(quick=True)
    assert f"{cells} settings x {trials} trials = {cells * trials} trials on 3 path settings" in planned.stdout
    assert planned.stdout.count("rate=") >= cells
    assert files_under(RESULTS) == before


@pytest.mark.parametrize("argv", [["check"], ["iw/fig2", "--quick"], ["clean"], ["doctor"]])
def test_what_needs_root_is_refused_by_name(reachable: None, argv: list[str]) -> None:
    refused = as_nobody(*argv)
    assert refused.returncode == 1 and "needs root" in refused.stderr and "sudo ./run.sh" in refused.stderr, (
        refused.stdout + refused.stderr
    )
