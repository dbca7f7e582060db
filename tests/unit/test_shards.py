"""Shards of a figure's trials and the merge of CSVs (netrepro.shards), without a lab."""

import csv
from pathlib import Path

import pytest

import expts
from ground.errors import UserError
from ground.trials import trial_key
from ground.units import QuantityError
from netrepro import shards
from netrepro.shards import Shard
from netrepro.spec import Figure, Params


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


def row(key: str, status: str = "ok", value: str = "1.0", figure: str = "iw/fig2") -> dict[str, str]:
    return {"trial_key": key, "seed": "1", "status": status, "figure": figure, "download_time_ms": value}


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
    shards.write_rows([row("k1"), {**row("k2"), "extra": "x"}], target)
    with open(target, newline="") as f:
        read = list(csv.DictReader(f))
    assert [r["trial_key"] for r in read] == ["k1", "k2"] and read[0]["extra"] == "" and read[1]["extra"] == "x"


def test_merge_refuses_rows_of_two_kernels_unless_asked() -> None:
    a = [{**row("k1"), "kernel": "6.18.0", "backend": "delayline"}]
    b = [{**row("k2"), "kernel": "6.1.0-56-amd64", "backend": "delayline"}]
    with pytest.raises(UserError, match=r"2 kernels: 6.1.0-56-amd64 \(b.csv\); 6.18.0 \(a.csv\); --allow-mixed"):
        shards.merge_rows([("a.csv", a), ("b.csv", b)])
    assert len(shards.merge_rows([("a.csv", a), ("b.csv", b)], allow_mixed=True)) == 2
