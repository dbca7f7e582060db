"""A figure run in shards and merged is the figure run whole: every trial once, nothing lost.

iw/fig5b --quick has three path settings (one per RTT); run as two shards
into two directories (two machines, as far as the CSVs can tell), then
merged into a third, its trial keys are exactly those a plain run of the
figure runs, each shard ran whole path settings and none ran a trial the
other ran, and the merged figure is drawn with every trial present.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from figures import ok_rows

import expts
from ground.results import REPO
from ground.trials import Row, read_rows, trial_key, write_rows
from netrepro.runner import shards

pytestmark = pytest.mark.root

FIGURE = "iw/fig5b"


def netrepro(*argv: str) -> str:
    done = subprocess.run([sys.executable, "-m", "netrepro", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done.stdout


def test_two_shards_merged_are_the_whole_figure(tmp_path: Path) -> None:
    fig = expts.find(FIGURE)
    csvs = []
    for k in (1, 2):
        out = tmp_path / f"vm{k}"
        said = netrepro("run", FIGURE, "--quick", "--shard", f"{k}/2", "--out", str(out))
        assert f"--shard {k}/2:" in said
        csvs.append(out / fig.directory / fig.csv_name)
        assert json.loads((out / fig.directory / f"{fig.name}.manifest.json").read_text())["shard"] == f"{k}/2"
    parts = [ok_rows(read_rows(c)) for c in csvs]
    settings = [{shards.setting(r) for r in rows} for rows in parts]
    assert settings[0] and settings[1] and not settings[0] & settings[1], settings  # whole settings, apart

    said = netrepro("merge", *map(str, csvs), "--into", str(tmp_path / "merged"))
    merged = ok_rows(read_rows(tmp_path / "merged" / fig.directory / fig.csv_name))
    plain = {trial_key(p, i) for p in fig.grid(quick=True) for i in range(fig.trial_count(quick=True))}
    assert sorted(r["trial_key"] for r in merged) == sorted(plain)  # every trial, once
    manifest = json.loads((tmp_path / "merged" / fig.directory / f"{fig.name}.manifest.json").read_text())
    assert manifest["quick"] and manifest["rows"] == len(plain) and manifest["trials_missing"] == 0, said
    assert (tmp_path / "merged" / fig.directory / f"{fig.name}.png").stat().st_size > 10_000

    # The same trials merged again with different results: refused, nothing written over.
    changed = tmp_path / "changed.csv"
    rows = parts[0]
    rows[0] = Row({**rows[0], "download_time_ms": "1"})
    write_rows(rows, changed)
    before = (tmp_path / "merged" / fig.directory / fig.csv_name).read_bytes()
    argv = [sys.executable, "-m", "netrepro", "merge", str(csvs[0]), str(changed), "--into", str(tmp_path / "again")]
    refused = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "ran in two files with different results" in refused.stderr, refused.stderr
    assert not (tmp_path / "again" / fig.directory / fig.csv_name).exists()
    assert (tmp_path / "merged" / fig.directory / fig.csv_name).read_bytes() == before
