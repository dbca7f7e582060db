"""Shards of a figure's trials and the merge of CSVs (netrepro.runner.shards), without a lab."""

import csv
import json
from pathlib import Path

import pytest

import expts
from ground.errors import UserError
from ground.trials import Row, trial_key, write_rows
from ground.units import QuantityError
from netrepro.front import cli
from netrepro.runner import shards
from netrepro.runner.shards import Shard
from netrepro.studykit.spec import Figure, Params


def all_trials(fig: Figure, quick: bool = False) -> tuple[list[Params], int, list[tuple[Params, int]]]:
    grid = fig.grid(quick)
    return grid, fig.trial_count(quick), [(p, i) for p in grid for i in range(fig.trial_count(quick))]


def shard_part(
    every: list[tuple[Params, int]], grid: list[Params], trials: int, shard: Shard
) -> list[tuple[Params, int]]:
    mine = shards.keys_of(grid, trials, shard)
    return [(p, i) for p, i in every if trial_key(p, i) in mine]


@pytest.mark.parametrize("count", [1, 2, 3, 8])
def test_the_shards_are_disjoint_whole_and_keep_a_setting_together(count: int) -> None:
    grid, trials, every = all_trials(expts.find("cubicplus/fig3"))  # one path setting per loss level
    parts = [shard_part(every, grid, trials, Shard(k, count)) for k in range(1, count + 1)]
    keys = [trial_key(p, i) for part in parts for p, i in part]
    assert sorted(keys) == sorted(trial_key(p, i) for p, i in every)  # every trial, once
    for part in parts:
        for p, _ in part:  # a setting's trials all in this part
            assert all(q in [x for x, _ in part] for q in grid if shards.setting(q) == shards.setting(p))
    sizes = [len(part) for part in parts]
    largest = max(sum(1 for p, _ in every if shards.setting(p) == s) for s in {shards.setting(p) for p in grid})
    assert max(sizes) - min(sizes) <= largest  # balanced to within one setting
    assert parts == [shard_part(every, grid, trials, Shard(k, count)) for k in range(1, count + 1)]


def test_one_setting_is_dealt_trial_by_trial() -> None:
    grid, trials, every = all_trials(expts.find("iw/fig2"), quick=True)
    assert len({shards.setting(p) for p in grid}) < 3
    parts = [shard_part(every, grid, trials, Shard(k, 3)) for k in (1, 2, 3)]
    assert sum(len(p) for p in parts) == len(every) and max(map(len, parts)) - min(map(len, parts)) <= 1


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "2", "a/b", "1/1001"])
def test_a_bad_shard_is_refused_naming_the_option(text: str) -> None:
    with pytest.raises(QuantityError, match="--shard"):
        Shard.parse(text)
    assert str(Shard.parse(" 2 / 8 ")) == "2/8"


def row(key: str, status: str = "ok", value: str = "1.0", figure: str = "iw/fig2") -> Row:
    return Row(trial_key=key, seed="1", status=status, figure=figure, download_time_ms=value)


def test_merge_keeps_every_trial_once_and_failed_attempts_before() -> None:
    a = [row("k1"), row("k2", "failed", "")]
    b = [row("k2"), row("k3"), row("k1")]  # k1 again, the same row: a copy, kept once
    merged = shards.merge_rows([("a.csv", a), ("b.csv", b)])
    assert [(r["trial_key"], r["status"]) for r in merged] == [("k2", "failed"), ("k1", "ok"), ("k2", "ok"),
                                                               ("k3", "ok")]  # fmt: skip


def test_merge_refuses_a_trial_that_succeeded_twice_with_different_results() -> None:
    with pytest.raises(
        shards.MergeConflict, match=r"(?s)1 trials ran in two files.*k1 \(seed 1\): in a.csv and in b.csv"
    ):
        shards.merge_rows([("a.csv", [row("k1", value="1.0")]), ("b.csv", [row("k1", value="2.0")])])
    with pytest.raises(UserError, match="several figures"):
        shards.merge_rows([("a.csv", [row("k1")]), ("b.csv", [row("k2", figure="iw/fig3")])])


def test_merged_rows_are_written_as_one_csv_with_every_column(tmp_path: Path) -> None:
    target = tmp_path / "iw" / "fig2.csv"
    write_rows([row("k1"), Row({**row("k2"), "extra": "x"})], target)
    with open(target, newline="") as f:
        read = list(csv.DictReader(f))
    assert [r["trial_key"] for r in read] == ["k1", "k2"] and read[0]["extra"] == "" and read[1]["extra"] == "x"


def test_merge_refuses_rows_of_two_kernels_unless_asked() -> None:
    a = [Row({**row("k1"), "kernel": "6.18.0", "backend": "delayline"})]
    b = [Row({**row("k2"), "kernel": "6.1.0-56-amd64", "backend": "delayline"})]
    with pytest.raises(UserError, match=r"2 kernels: 6.1.0-56-amd64 \(b.csv\); 6.18.0 \(a.csv\); --allow-mixed"):
        shards.merge_rows([("a.csv", a), ("b.csv", b)])
    assert len(shards.merge_rows([("a.csv", a), ("b.csv", b)], allow_mixed=True)) == 2


def test_merge_refuses_rows_of_two_seeds_naming_each_seeds_files() -> None:
    a = [Row({**row("k1"), "seed": "7"})]
    b = [Row({**row("k2"), "seed": "8"}), Row({**row("k3"), "seed": "7"})]
    with pytest.raises(UserError, match=r"2 seeds: seed 7 \(a.csv, b.csv\); seed 8 \(b.csv\); .*one seed's"):
        shards.merge_rows([("a.csv", a), ("b.csv", b)], allow_mixed=True)
    assert shards.merged_seed(shards.merge_rows([("a.csv", a), ("b.csv", b[1:])])) == 7
    assert shards.merged_seed([Row({**row("k1"), "seed": ""})]) == 1  # rows older than the column: seed 1


def test_merge_refuses_two_switches_or_one_cc_run_two_ways_unless_asked() -> None:
    a = [Row({**row("k1"), "switch": "ovs", "cc": "vegas", "cc_impl": "bpf"})]
    b = [Row({**row("k2"), "switch": "bridge", "cc": "vegas", "cc_impl": "bpf"})]
    with pytest.raises(UserError, match=r"2 switches: bridge \(b.csv\); ovs \(a.csv\)"):
        shards.merge_rows([("a.csv", a), ("b.csv", b)])
    c = [Row({**row("k3"), "cc": "vegas", "cc_impl": "kernel"}), Row({**row("k4"), "cc": "cubic", "cc_impl": "kernel"})]
    with pytest.raises(UserError, match=r"rows of vegas ran on 2 cc_impls: bpf \(a.csv\); kernel \(c.csv\)"):
        shards.merge_rows([("a.csv", a), ("c.csv", c)])
    d = [Row({**row("k5"), "cc": "cubic_plus", "cc_impl": "lkm"})]  # another cc, another implementation: no mix
    assert len(shards.merge_rows([("a.csv", a), ("d.csv", d)])) == 2
    old = [Row({**row("k6")})]  # no switch, no cc_impl: mixes with none
    assert len(shards.merge_rows([("a.csv", a), ("old.csv", old)])) == 2


def test_a_merge_of_seed_7_shards_draws_the_figure_of_seed_7(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two `--seed 7` shards: the merged figure is drawn from their rows (not an empty figure of seed 1)."""
    fig = expts.find("iw/fig2")
    grid, trials, every = all_trials(fig, quick=True)
    csvs = []
    for k in (1, 2):
        mine = shard_part(every, grid, trials, Shard(k, 2))
        rows = [{"trial_key": trial_key(p, i), "figure": fig.full_name, **p, "trial": i, "status": "ok", "seed": 7,
                 "download_time_ms": 400.0 + 10 * i + n, "backend": "delayline", "kernel": "6.1.0-test"}
                for n, (p, i) in enumerate(mine)]  # fmt: skip
        csvs.append(tmp_path / f"vm{k}" / "iw" / "fig2.csv")
        rows[0]["time_series_file"] = f"fig2.series/{k}.csv"  # a trial's series, beside its shard's CSV
        (csvs[-1].parent / "fig2.series").mkdir(parents=True)
        (csvs[-1].parent / "fig2.series" / f"{k}.csv").write_text(f"shard {k}\n")
        write_rows([{k: str(v) for k, v in r.items()} for r in rows], csvs[-1])
    into = tmp_path / "merged"
    assert cli.main(["merge", *map(str, csvs), "--into", str(into)]) == 0
    # each series the merged rows name is beside the merged CSV
    assert [(into / "iw" / "fig2.series" / f"{k}.csv").read_text() for k in (1, 2)] == ["shard 1\n", "shard 2\n"]
    manifest = json.loads((into / "iw" / "fig2.manifest.json").read_text())
    assert manifest["rows"] == len(every) and manifest["trials_missing"] == 0, manifest["rows"]
    assert manifest["seed"] == 7 and manifest["quick"], manifest
    said = capsys.readouterr().out
    assert f"{len(every)} trials, seed 7" in said, said
    assert all(p["n"] == trials for p in manifest["points"]) and len(manifest["points"]) == len(grid)
    assert manifest["verdict"]["trials"]["ok"] == len(every)
