"""Study spdy end to end (quick): the beta table from the kernel, and one connection against six under loss."""

import json
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from expts import spdy
from ground.results import REPO
from ground.trials import latest_rows, read_rows

pytestmark = pytest.mark.root


def run_figure(name: str, out: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "netrepro", name, "--quick", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    manifest: dict[str, object] = json.loads((out / "spdy" / f"{name}.manifest.json").read_text())
    return manifest


def test_betatable_equals_seed_003(tmp_path: Path) -> None:
    manifest = run_figure("betatable", tmp_path)
    rows = latest_rows(read_rows(tmp_path / "spdy" / "betatable.csv"))
    ours = {(int(r["n"]), int(r["beta"])): (int(r["beta_effective"]), int(r["backoff_pct"])) for r in rows}
    ref = {(r["n"], r["beta"]): (r["beta_effective"], r["backoff_pct"]) for r in spdy.reference_table()}
    assert ours == ref
    assert manifest["congestion_control"] == ["cubic_plus (bpf)"]


def test_conns_one_connection_suffers_and_n6_narrows_the_gap(tmp_path: Path) -> None:
    run_figure("conns", tmp_path)
    rows = latest_rows(read_rows(tmp_path / "spdy" / "conns.csv"))
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["status"] != "ok"]
    # n was changed between trials at run time, and read back each time
    assert {(r["n"], r["cc_beta_effective"]) for r in rows} == {("1", "717"), ("6", "973")}
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        by[(r["series"], r["loss"])].append(float(r["throughput_mbit"]))
    mean = {k: statistics.mean(v) for k, v in by.items()}
    h1, h2n1, h2n6 = (mean[(s, "0.1%")] for s in ("HTTP/1.1 x6, n=1", "HTTP/2 x1, n=1", "HTTP/2 x1, n=6"))
    assert h2n1 < 0.8 * h1, mean  # clearly less than six connections at 0.1 % loss
    assert h2n6 > h2n1, mean  # a softer backoff narrows the gap
    for s in ("HTTP/1.1 x6, n=1", "HTTP/2 x1, n=1"):
        assert mean[(s, "0.1%")] > mean[(s, "1%")], mean  # throughput falls as loss rises


def test_backoff_quick(tmp_path: Path) -> None:
    run_figure("backoff", tmp_path)
    rows = latest_rows(read_rows(tmp_path / "spdy" / "backoff.csv"))
    assert len(rows) == 2 * 2 and all(r["status"] == "ok" for r in rows)
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        by[(r["series"], r["loss"])].append(float(r["throughput_mbit"]))
    mean = {k: statistics.mean(v) for k, v in by.items()}
    assert mean[("n=6", "0.1%")] > mean[("n=1", "0.1%")], mean
    assert mean[("n=1", "0.1%")] > mean[("n=1", "1%")], mean
