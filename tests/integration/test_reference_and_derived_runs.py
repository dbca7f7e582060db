"""A run measures (beside the reference reproduction); a run with other parameters keeps to its own directory."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from expts import iw
from ground import series
from ground.results import REFERENCE, REPO
from ground.trials import latest_rows, read_rows, trial_key

pytestmark = pytest.mark.root


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "netrepro", "run", *argv], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done


def stored_files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def test_fig2_measures_beside_the_reference_and_a_derived_run_keeps_out_of_it(tmp_path: Path) -> None:
    reference_before = stored_files(REFERENCE / "iw")

    # The headline command: every setting measured here (none taken from the reference), set beside it.
    first = run("iw/fig2", "--trials", "1", "--out", str(tmp_path))
    assert "6 settings x 1 trials" in first.stdout and "already in" not in first.stdout
    table = first.stdout[first.stdout.index("series") :]
    assert "reference" in table.splitlines()[0] and "vs ref" in table.splitlines()[0]
    assert "reference: results/reference/iw/fig2.csv (120 trials" in first.stdout
    rows = latest_rows(read_rows(tmp_path / "iw" / "fig2.csv"))
    assert len(rows) == 6 and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    manifest = json.loads((tmp_path / "iw" / "fig2.manifest.json").read_text())
    assert manifest["reference"]["rows"] == 120 and manifest["reference"]["csv"] == "results/reference/iw/fig2.csv"
    assert len(manifest["reference"]["points"]) == 6 and manifest["derived_from"] is None

    # The same figure on another path: a figure of its own, in its own directory.
    stored = stored_files(tmp_path / "iw")
    derived = run("iw/fig2", "--quick", "--trials", "1", "--set", "rtt=50ms", "--out", str(tmp_path))
    assert stored_files(tmp_path / "iw") == stored  # the declared figure's CSV, PNG and manifest, byte for byte
    own = tmp_path / "iw" / "fig2@rtt=50ms"
    assert {"fig2.csv", "fig2.png", "fig2.manifest.json"} <= set(stored_files(own))
    assert "iw/fig2@rtt=50ms: Download time of a 37,000-byte response vs initial window (3 Mbit/s, RTT 50 ms" in (
        derived.stdout
    )
    doc = json.loads((own / "fig2.manifest.json").read_text())
    assert doc["overrides"] == {"rtt": "50ms"} and doc["derived_from"] == "iw/fig2" and doc["reference"] is None
    assert "RTT 50 ms" in doc["title"]
    derived_rows = latest_rows(read_rows(own / "fig2.csv"))
    assert derived_rows and {r["rtt"] for r in derived_rows} == {"50ms"}
    # The path was verified at what the run asked for, not at the figure's 100 ms.
    assert all(abs(float(r["verify_rtt"]) - 50) < 5 for r in derived_rows)
    assert stored_files(REFERENCE / "iw") == reference_before


def test_set_initcwnd_reaches_the_servers_first_flight(tmp_path: Path) -> None:
    """`--set initcwnd=16` is the number 16 all the way to the route: tcp_probe sees a first window of 16."""
    # fig3 cut to one trial: its large page, CUBIC, no loss; at 10 Mbit/s, not 100: the first flight is the
    # same, and the delay line has the time to keep up on a busy machine (in CI all three attempts of this
    # trial at 100 Mbit/s were late, p99 18 ms, and the path's goodput read 85.8 of 95.6 Mbit/s)
    run(
        "cubicplus/fig3",
        *("--set", "initcwnd=16", "--set", "rate=10mbit", "--vary", "loss=0%", "--series", "cc=cubic"),
        *("--trials", "1", "--out", str(tmp_path)),
    )
    derived = "fig3@initcwnd=16+rate=10mbit+loss=0%+series-cc=cubic"
    rows = latest_rows(read_rows(tmp_path / "cubicplus" / derived / "fig3.csv"))
    assert len(rows) == 1 and rows[0]["status"] == "ok", rows[0]["error"]
    assert rows[0]["initcwnd"] == "16" and rows[0]["initcwnd_measured"] == "16"
    assert rows[0]["verify_initcwnd_ok"] == "true"


def test_the_readme_study_file_runs_and_gives_fig2s_trials(tmp_path: Path) -> None:
    """expts/example-study.toml, run --quick: the rows iw/fig2 --quick would have, in results/example/."""
    done = run("expts/example-study.toml", "--quick", "--trials", "1", "--out", str(tmp_path))
    assert "example/iw: Download time of a 37,000-byte response vs initial window (3 Mbit/s, RTT 100 ms" in done.stdout
    rows = latest_rows(read_rows(tmp_path / "example" / "iw.csv"))
    assert sorted(r["trial_key"] for r in rows) == sorted(trial_key(p, 0) for p in iw.FIG2.grid(quick=True))
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    assert json.loads((tmp_path / "example" / "iw.manifest.json").read_text())["figure"] == "example/iw"


PAIRS_STUDY = """
study = "pairs"

[[figure]]
name = "share"
title = "Two Reno flows share a dumbbell's core as one does ({rate})"
workload = "competing"
y = "goodput_mbit"
topology = { shape = "dumbbell" }
x = { factor = "pairs", levels = [1, 2], quick = [1, 2] }
fixed = { rtt = "40ms", rate = "10mbit", queue = "50p", cc = "reno", duration_s = 6, window_s = 3 }
"""


def test_a_study_file_varies_the_number_of_pairs(tmp_path: Path) -> None:
    """x = pairs: a lab of one pair, then one of two, each verified; every flow in the row and in the trial's
    time series, which `run.sh plot` draws."""
    study = tmp_path / "pairs.toml"
    study.write_text(PAIRS_STUDY)
    run(str(study), "--quick", "--trials", "1", "--out", str(tmp_path))
    rows = {r["pairs"]: r for r in latest_rows(read_rows(tmp_path / "pairs" / "share.csv"))}
    assert sorted(rows) == ["1", "2"] and all(r["status"] == "ok" for r in rows.values()), rows
    flows = {n: [float(g) for g in r["flow_goodputs_mbit"].split(";")] for n, r in rows.items()}
    assert [len(flows["1"]), len(flows["2"])] == [1, 2] and min(flows["2"]) > 0, flows
    # each fills the 10 Mbit/s core (9.56 Mbit/s of goodput) within 10 % over 6 s from a cold start
    assert all(8.6 < float(r["goodput_mbit"]) < 9.7 for r in rows.values()), flows
    verified = json.loads((tmp_path / "pairs" / "share.manifest.json").read_text())["verification"]
    one_pair = "RTT 40ms, 10mbit, loss 0%, queue 50p"  # the file's own topology: a dumbbell of one pair
    assert sorted(verified) == [one_pair, f"{one_pair}, topo=dumbbell+pairs=2"], sorted(verified)
    assert verified[f"{one_pair}, topo=dumbbell+pairs=2"]["network"]["pairs"][1]["rtt_ms"] == 40
    stored = [series.read(tmp_path / "pairs" / rows[n][series.FILE_COLUMN]) for n in ("1", "2")]
    assert [len(s.flows()) for s in stored] == [1, 2]
    csv_path = tmp_path / "pairs" / "share.csv"
    for n in ("1", "2"):  # plot numbers the trials in the CSV's order, which the run shuffled
        drawn = subprocess.run([sys.executable, "-m", "netrepro", "plot", str(csv_path), "--trial", n], cwd=REPO,
                               capture_output=True, text=True, timeout=120)  # fmt: skip
        assert drawn.returncode == 0, drawn.stderr
    assert all((tmp_path / "pairs" / r[series.FILE_COLUMN]).with_suffix(".png").is_file() for r in rows.values())
