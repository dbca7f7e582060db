"""Shards of a figure's trials, and the merge of the CSVs that shards (or any runs) wrote.

`--shard K/N` runs the K-th of N disjoint parts of a figure's trials, so
that N machines (by hand, in a loop over VMs, or from a cluster's engine)
can share a figure.  The parts are made of path settings (the lab's
parameters: RTT, rate, loss, queue, MTU): every trial of a setting goes to
one shard, so each shard builds and verifies each of its labs once, as a
whole run does.  Settings are dealt largest first to the shard that has
the fewest trials so far, ties by name, so the split is balanced and
depends on nothing but the trial keys.  A figure with fewer settings than
shards (one path for every trial, e.g. iw/fig2) has its settings' trials
dealt one by one instead, in trial-key order.

`merge` joins CSVs of one figure: every row of every file, keyed by trial
key and seed.  A trial that succeeded in two files with different values
ran twice, and the merge is refused with the keys shown; the same row in
two files (a file given twice, a copy) is kept once.  A failed attempt is
kept before the successful one, as a resumed run would have written them,
so the latest attempt is the one that counts.  The rows' seed is the
merged figure's (`merged_seed`: it is drawn from that seed's trials), and
rows of several seeds are refused, naming each seed's files.  Rows from
several kernels, backends or switches, or a congestion control run as
several implementations (each row records its host, kernel, backend,
switch, cc_impl and commit), are refused unless `--allow-mixed` asks for
them.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ground import figurelock
from ground.errors import UserError
from ground.trials import DEFAULT_SEED, Row, read_rows, trial_key
from ground.units import QuantityError
from netrepro.studykit.spec import Params
from netrepro.studykit.trial import Trial, lab_params

MAX_SHARDS = 1000
MIXED = ("kernel", "backend", "switch")  # what one figure's rows must share, unless mixing is asked for
MIXED_BY_CC = ("cc_impl",)  # what the rows of one congestion control must share, unless mixing is asked for


@dataclass(frozen=True)
class Shard:
    """The `index`-th (from 1) of `count` parts of a figure's trials."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not m:
            raise QuantityError("--shard", text, "write K/N, the K-th of N parts, e.g. 2/8")
        index, count = int(m[1]), int(m[2])
        if not 1 <= count <= MAX_SHARDS:
            raise QuantityError("--shard", text, f"N is from 1 to {MAX_SHARDS}")
        if not 1 <= index <= count:
            raise QuantityError("--shard", text, f"K is from 1 to N ({count})")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def setting(params: Mapping[str, Any]) -> str:
    """A trial's lab setting as a name: what the lab is built and verified for (its path, and its
    topology's size where the trial sets it)."""
    return json.dumps(lab_params(params), sort_keys=True, default=str)


def assign(grid: Sequence[Params], trials: int, count: int) -> dict[str, int]:
    """Each trial key's shard (from 1): whole path settings, balanced, deterministic."""
    keys = sorted((setting(p), trial_key(p, i)) for p in grid for i in range(trials))
    sizes = Counter(s for s, _ in keys)
    if len(sizes) < count:  # too few settings to go round: deal the trials themselves
        return {key: n % count + 1 for n, (_, key) in enumerate(keys)}
    loads = [0] * count
    by_setting: dict[str, int] = {}
    for name in sorted(sizes, key=lambda s: (-sizes[s], s)):
        k = min(range(count), key=lambda j: (loads[j], j))
        by_setting[name] = k + 1
        loads[k] += sizes[name]
    return {key: by_setting[s] for s, key in keys}


def tasks(todo: Sequence[Trial], labs: int) -> list[list[Trial]]:
    """A run's trials as tasks for `labs` labs side by side, largest first: one task per path setting
    (a lab built and verified once for its trials); where there are fewer settings than labs, a
    setting's trials are split into near-equal tasks (each a lab of its own, verified again), the
    labs to spare going one by one to the setting whose tasks are longest.  A task keeps its trials in
    the run's (shuffled) order."""
    groups: dict[str, list[Trial]] = {}
    for trial in todo:
        groups.setdefault(setting(trial.setting), []).append(trial)
    pieces = split({name: len(trials) for name, trials in groups.items()}, labs)
    made: list[list[Trial]] = []
    for name in sorted(groups):
        trials, k = groups[name], pieces[name]
        size, extra = divmod(len(trials), k)
        start = 0
        for j in range(k):
            end = start + size + (1 if j < extra else 0)
            made.append(trials[start:end])
            start = end
    made.sort(key=len, reverse=True)  # stable: a setting's tasks stay in order
    return made


def split(trials: Mapping[str, int], labs: int) -> dict[str, int]:
    """Into how many tasks each path setting's trials go (`trials`: a count per setting) for `labs` labs:
    one each, the labs to spare going one by one to the setting whose tasks are longest, never a task
    without a trial."""
    pieces = dict.fromkeys(trials, 1)
    while pieces and sum(pieces.values()) < labs:
        longest = max(trials, key=lambda s: (-(-trials[s] // pieces[s]), s))
        if trials[longest] <= pieces[longest]:
            break  # every task holds one trial
        pieces[longest] += 1
    return pieces


def keys_of(grid: Sequence[Params], trials: int, shard: Shard) -> set[str]:
    """The trial keys that are this shard's."""
    return {key for key, k in assign(grid, trials, shard.count).items() if k == shard.index}


# -- merge ------------------------------------------------------------------------------------


class MergeConflict(UserError):
    """Two files hold different successful results for one trial."""


def _same(a: Row, b: Row) -> bool:
    return all(a.text(k) == b.text(k) for k in {*a, *b})


def merge_rows(files: Sequence[tuple[str, Sequence[Row]]], allow_mixed: bool = False) -> list[Row]:
    """The rows of (name, rows) files as one trial log: failed attempts first, then one successful
    row per (trial key, seed); MergeConflict where two successful rows of one trial differ.  Rows of
    several kernels or backends are refused unless `allow_mixed`: the variance they add is one a
    reader of the figure cannot see."""
    figures = {r.figure for _, rows in files for r in rows}
    if len(figures) > 1:
        raise UserError(
            f"merge: the files hold rows of several figures ({', '.join(sorted(figures))}); "
            "merge one figure's CSVs at a time"
        )
    seeds: dict[str, set[str]] = {}
    for name, rows in files:
        for row in rows:
            seeds.setdefault(str(row.seed) if row.seed is not None else repr(row.text("seed")), set()).add(name)
    if len(seeds) > 1:
        listed = "; ".join(f"seed {seed} ({', '.join(sorted(names))})" for seed, names in sorted(seeds.items()))
        raise UserError(
            f"merge: the rows ran with {len(seeds)} seeds: {listed}; a figure is drawn from one "
            "seed's trials: merge one seed's CSVs at a time"
        )
    topologies: dict[str, set[str]] = {}
    for name, rows in files:
        for row in rows:
            if row.topology:  # a row older than the column is on none in particular
                topologies.setdefault(row.topology, set()).add(name)
    if len(topologies) > 1:  # another experiment, not another machine's variance: --allow-mixed does not take it
        listed = "; ".join(f"{t} ({', '.join(sorted(names))})" for t, names in sorted(topologies.items()))
        raise UserError(
            f"merge: the rows ran on {len(topologies)} topologies: {listed}; a figure is drawn on one: "
            "merge one topology's CSVs at a time"
        )
    if any(r.seed is None for _, rows in files for r in rows):
        raise UserError(f"merge: a row's seed is not a number ({', '.join(sorted(seeds))})")
    failed: list[Row] = []
    ok: dict[tuple[str, int | None], tuple[str, Row]] = {}
    clashes: list[str] = []
    for name, rows in files:
        for row in rows:
            key = (row.key, row.seed)
            if not key[0]:
                raise UserError(f"merge: {name} has a row without a trial_key: not a figure's CSV")
            if not row.ok:
                if not any(_same(row, f) for f in failed):
                    failed.append(Row(row))
                continue
            if key in ok and not _same(ok[key][1], row):
                clashes.append(f"{key[0]} (seed {key[1]}): in {ok[key][0]} and in {name}")
            ok.setdefault(key, (name, Row(row)))
    if clashes:
        shown = "\n  ".join(clashes[:10]) + (f"\n  ... and {len(clashes) - 10} more" if len(clashes) > 10 else "")
        raise MergeConflict(
            f"merge: {len(clashes)} trials ran in two files with different results, and only "
            f"one may count:\n  {shown}"
        )
    merged = failed + [row for _, row in ok.values()]
    if not allow_mixed:
        for column in (*MIXED, *MIXED_BY_CC):
            found: dict[tuple[str, str], dict[str, set[str]]] = {}
            for name, rows in files:
                for row in rows:
                    if row.text(column):  # an old row without the column mixes with none
                        of = ("cc", row.cc) if column in MIXED_BY_CC else ("", "")
                        found.setdefault(of, {}).setdefault(row.text(column), set()).add(name)
            for (_, cc), values in sorted(found.items()):
                if len(values) > 1:
                    listed = "; ".join(f"{v} ({', '.join(sorted(names))})" for v, names in sorted(values.items()))
                    whose = f" of {cc or 'the default cc'}" if column in MIXED_BY_CC else ""
                    columns = "switches" if column == "switch" else f"{column}s"
                    raise UserError(
                        f"merge: the rows{whose} ran on {len(values)} {columns}: {listed}; "
                        "--allow-mixed merges them all the same"
                    )
    return merged


def merged_seed(rows: Sequence[Row]) -> int:
    """The seed of merged rows (merge_rows has refused rows of several): the merged figure's seed."""
    seeds = {r.seed for r in rows}
    seed = seeds.pop() if len(seeds) == 1 else None
    if seeds or (rows and seed is None):
        raise UserError(f"merge: the rows do not share one seed ({', '.join(sorted(map(str, seeds)))})")
    return DEFAULT_SEED if seed is None else seed


def figure_of(paths: Sequence[Path]) -> str:
    """The figure the CSVs' rows name (read once to find where to merge them, then again under the lock of
    the merged CSV: merge_files); UserError where they name none, or several."""
    names = {r.figure for r in merge_files(paths, allow_mixed=True, check=False)}
    if len(names) > 1:
        raise UserError(
            f"merge: the files hold rows of several figures ({', '.join(sorted(names))}); "
            "merge one figure's CSVs at a time"
        )
    name = names.pop() if names else ""
    if not name:
        raise UserError(f"merge: {', '.join(map(str, paths))} hold no rows of a figure")
    return name


def merge_files(paths: Sequence[Path], allow_mixed: bool = False, check: bool = True) -> list[Row]:
    """merge_rows over CSV files (UserError naming one that cannot be read); `check=False`: every row of
    every file as read, unmerged.  Each file is read under its lock, shared (FigureBusy while a run writes
    it: its later rows would be missed); a torn last line (a run that died mid-row) is read around."""
    files = []
    for path in paths:
        try:
            with figurelock.reading(path):  # not while a run writes it: its rows would be missed
                files.append((str(path), read_rows(path)))
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            raise UserError(f"merge: cannot read {path}: {e}") from None
    if not check:
        return [Row(r) for _, rows in files for r in rows]
    return merge_rows(files, allow_mixed)
