"""Soak: `fig3 --quick` killed at two seeded random moments, and signalled three times,
leaves the machine as it found it and its CSV whole (netrepro.lanes.soak; `run.sh bench soak` runs more).

With this seed the kills come 19.2 and 26.5 s in (mid-trial, process and
group), SIGINT 26.8 s in (mid-trial), SIGTERM at 6.1 s (verifying the path)
and SIGHUP at 0.9 s (starting up)."""

from pathlib import Path

import pytest

from netrepro.lanes import soak

pytestmark = pytest.mark.root

SEED = 12
KILLS = 2


def test_killed_runs_then_clean_and_signalled_runs_leave_nothing(tmp_path: Path) -> None:
    rounds: list[soak.Round] = []
    # two SIGKILL rounds and the three signals here; `run.sh bench soak --kills N` runs longer soaks
    results = soak.soak(rounds=KILLS, seed=SEED, work=tmp_path, report=rounds.append)
    lines = "\n".join(r.line() for r in results)
    print(lines)
    assert [r.how for r in results] == [h for h, _ in soak.plan(KILLS, SEED)]
    assert all(r.survived for r in results), lines
    for r in results:
        if r.how.startswith("SIGKILL"):
            assert r.exit_code == -9 or r.exit_code == 0, lines
        elif r.exit_code != 0:  # a signalled run undoes itself and says so with 128 + the signal
            assert r.exit_code in (130, 128 + 15, 128 + 1), lines
    # Some rounds must have caught the run mid-trial, or the soak tested only start-ups.
    assert sum(1 for r in results if r.rows > 0 and r.exit_code != 0) >= 2, lines


def test_the_soak_plan_is_seeded_and_mixes_kills() -> None:
    first = soak.plan(10, SEED)
    assert first == soak.plan(10, SEED) and first != soak.plan(10, SEED + 1)
    hows = [h for h, _ in first]
    assert hows.count("SIGKILL process") == 5 and hows.count("SIGKILL group") == 5
    assert hows[-3:] == ["SIGINT", "SIGTERM", "SIGHUP"]
    assert all(soak.KILL_WINDOW_S[0] <= t <= soak.KILL_WINDOW_S[1] for _, t in first)


def test_a_cut_csv_line_is_found(tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text("a,b\n1,2\n")
    assert soak.csv_problems(good) == (1, [])
    cut = tmp_path / "cut.csv"
    cut.write_text("a,b\n1,2\n3")
    rows, problems = soak.csv_problems(cut)
    assert problems and "cut line" in problems[0]
