"""Study iw end to end through `reproduce iw --quick`: its four quick figures run side by side in one
command, each writes its files as a single run does, their shape is what physics demands, and the same
command again resumes with nothing to do."""

import json
import statistics
import subprocess
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from expts import iw
from ground.results import REPO
from ground.trials import latest_rows, read_rows
from netrepro.studykit.spec import Figure

pytestmark = pytest.mark.root


def medians(rows: Sequence[Mapping[str, str]], by: str) -> dict[str, float]:
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["status"] == "ok":
            groups[r[by]].append(float(r["download_time_ms"]))
    return {k: statistics.median(v) for k, v in groups.items()}


def reproduce(out: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "netrepro", "reproduce", "iw", "--quick", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_reproduce_iw_quick_runs_its_figures_side_by_side_and_resumes(tmp_path: Path) -> None:
    reproduce(tmp_path)
    check_fig2(tmp_path)
    for fig in (iw.FIG5A, iw.FIG5B, iw.FIG5C):
        check_fig5(fig, tmp_path)
    schedule = json.loads((tmp_path / "reproduce" / "iw" / "schedule.json").read_text())
    spans = [(f["start_s"], f["end_s"]) for f in schedule["figures"]]
    assert len(spans) == 4 and all(f["status"] == "ok" for f in schedule["figures"]), schedule
    assert any(s2 < e1 and s1 < e2 for k, (s1, e1) in enumerate(spans) for s2, e2 in spans[k + 1 :]), spans
    assert (tmp_path / "reproduce" / "iw" / "index.html").is_file()

    # The same command again: every figure resumes with nothing to run, its CSV unchanged.
    csvs = {f.name: (tmp_path / "iw" / f.csv_name).read_text() for f in iw.FIGURES}
    again = reproduce(tmp_path)
    assert {f.name: (tmp_path / "iw" / f.csv_name).read_text() for f in iw.FIGURES} == csvs
    logs = sorted((tmp_path / "reproduce" / "iw" / "logs").iterdir())
    second = {f.name: max(p for p in logs if p.name.startswith(f"iw-{f.name}-")) for f in iw.FIGURES}
    for name, log in second.items():
        assert "already in" in log.read_text(), (name, log.read_text()[-2000:])
    assert "reproduce iw: 4 figures in 0:00:" in again.stdout, again.stdout[-2000:]


def check_fig2(tmp_path: Path) -> None:
    csv_path = tmp_path / "iw" / "fig2.csv"
    rows = latest_rows(read_rows(csv_path))
    assert len(rows) == 4 * 3 and all(r["status"] == "ok" for r in rows)
    for column in ("initcwnd", "rtt", "rate", "cc", "download_time_ms", "initcwnd_measured", "verify_ok", "backend"):
        assert column in rows[0]
    # tcp_probe saw the server start with the window the route set
    for r in rows:
        assert int(r["initcwnd_measured"]) == int(r["initcwnd"]), r
        assert int(r["first_flight_segments"]) == min(int(r["initcwnd"]), 26), r
    m = medians(rows, "initcwnd")
    assert m["3"] > m["10"] > m["26"], m  # slow start: fewer rounds, less time
    assert m["42"] == pytest.approx(m["26"], rel=0.02), m  # 26 segments fit either way
    for w in ("26", "42"):  # the model is exact with one round
        assert m[w] == pytest.approx(iw.model_ms(int(w), 100, 3e6), rel=0.05)
    manifest = json.loads((tmp_path / "iw" / "fig2.manifest.json").read_text())
    assert manifest["figure"] == "iw/fig2" and manifest["quick"] is True
    assert manifest["verification"] and all(v["ok"] for v in manifest["verification"].values())
    # the source's sentences judged once, for the manifest and the caption alike
    judged = manifest["verdict"]
    assert [c["quote"] for c in judged["claims"]] == [c.quote for c in iw.FIG2.claims]
    outcomes = [c["outcome"] for c in judged["claims"]]
    # IW 10 beats IW 3 by slow start's rounds, every trial its own draw (no replays: an interval exists);
    # 26 -> 42 is set by design (the response fits the first flight)
    assert outcomes[0] == "holds" and outcomes[2] == "set by design", judged
    trials = judged["trials"]
    assert (trials["ok"], trials["without_draw"], trials["cells"]) == (12, 0, 4)  # 4 windows x 3 trials, all drawn
    # a cell whose downloads do not vary beyond the delay line's timer noise is named, never unknown
    assert set(trials["fixed"]) <= {f"initcwnd={w}" for w in m}, trials
    caption = (tmp_path / "iw" / "fig2.caption.txt").read_text()
    assert iw.FIG2.claims[0].quote in caption and f"verdict: {judged['verdict']}" in caption
    assert (tmp_path / "iw" / "fig2.png").stat().st_size > 10_000
    assert (tmp_path / "iw" / "fig2.svg").exists() and (tmp_path / "iw" / "fig2.caption.txt").exists()


def check_fig5(fig: Figure, tmp_path: Path) -> None:
    name = fig.name
    rows = latest_rows(read_rows(tmp_path / "iw" / f"{name}.csv"))
    assert len(rows) == len(fig.quick_levels or ()) * 3 * fig.quick_trials
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["status"] != "ok"]
    # Each trial's own connection, even at 500 and 1000 ms, where the server's
    # first sample (the first ACK) arrives after the client is done.
    mismatched = [(r["rtt"], r["rate"], r["initcwnd"], r["initcwnd_measured"]) for r in rows
                  if r["initcwnd_measured"] != r["initcwnd"]]  # fmt: skip
    assert mismatched == []
    manifest = json.loads((tmp_path / "iw" / f"{name}.manifest.json").read_text())
    # The gain grows with the factor (RTT, bandwidth, BDP): at the smallest
    # level the transfer is bound by the bottleneck and the window barely
    # matters; at the largest, slow-start rounds dominate.
    gains = [p["y"] for p in manifest["points"] if p["series"] == "IW 3 -> 26"]
    assert len(gains) == len(fig.quick_levels or ()), manifest["points"]
    assert gains[-1] > 5 and gains[-1] > gains[0], gains
