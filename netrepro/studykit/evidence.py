"""The rows a figure's judgement read, and their digests: a stored verdict whose inputs changed is stale.

A judgement (netrepro.runner.manifest.judgement_of) records a digest of
every row it read (`inputs`): its own figure's rows, as the run selected
them (`judged_rows`: the grid's trials at the run's seed, the latest row of
each; with `--until-decided`, the trials each setting reached, as its
manifest's `sequential.trials_judged` records them: `wanted`), and the
rows of every other figure one of its claims reads
(`decisions.Computed.reads`: cubicplus/fig5's gain beside fig3's and
fig4's), found in the same results tree (`rows_beside`: a run's own --out, which
the run names with `searching`, or the project's results/ and reference).  `stale` reads a
stored manifest's digests against the rows stored now: `run.sh list`, the
report and a unit test say which stored verdicts no longer stand on the
rows beside them, and a --plot-only run re-judges them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ground import results
from ground.trials import DEFAULT_SEED, Row, latest_rows, read_rows, setting_key, trial_key
from netrepro.studykit.decisions import AllOf, ByDesign, Computed, Regrouped, Test

if TYPE_CHECKING:
    from netrepro.studykit.spec import Figure, Rows


def digest(rows: Iterable[Row]) -> str:
    """A digest of rows, whatever their order: each row's fields sorted, the rows sorted."""
    lines = sorted(json.dumps(dict(sorted(r.items())), sort_keys=True) for r in rows)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def wanted(grid: Iterable[Mapping[str, Any]], trials: int, reached: Mapping[str, int] | None = None) -> set[str]:
    """The trial keys a figure's judgement reads: `trials` of each setting of `grid`, or as many as
    `reached` gives its setting (ground.trials.setting_key: the settings --until-decided took further)."""
    reached = reached or {}
    return {trial_key(p, i) for p in grid for i in range(reached.get(setting_key(p), trials))}


def judged_rows(
    fig: Figure,
    csv_path: Path,
    quick: bool = False,
    trials: int | None = None,
    seed: int | None = None,
    reached: Mapping[str, int] | None = None,
) -> list[Row]:
    """The rows a run of `fig` judges from the CSV at `csv_path`: its grid's trials at `seed` (`reached`:
    as `wanted` counts them), the latest row of each (as netrepro.runner.sweep selects them)."""
    if not csv_path.is_file():
        return []
    keys = wanted(fig.grid(quick), fig.trial_count(quick, trials), reached)
    seed = DEFAULT_SEED if seed is None else seed
    return latest_rows(r for r in read_rows(csv_path) if r.key in keys and r.seed == seed)


def reached_of(manifest: Mapping[str, Any]) -> dict[str, int]:
    """The trials each setting reached under --until-decided, as a manifest records them (none: the declared)."""
    sequential = manifest.get("sequential")
    reached = sequential.get("trials_judged") if isinstance(sequential, dict) else None
    return {str(k): int(v) for k, v in reached.items()} if isinstance(reached, dict) else {}


def reads(test: Test) -> tuple[str, ...]:
    """The other figures of the study a test reads (its Computed parts' `reads`)."""
    if isinstance(test, Computed):
        return test.reads
    if isinstance(test, AllOf):
        return tuple(name for t in test.tests for name in reads(t))
    if isinstance(test, Regrouped):
        return reads(test.test)
    if isinstance(test, ByDesign) and test.otherwise is not None:
        return reads(test.otherwise)
    return ()


def figures_read(fig: Figure) -> tuple[str, ...]:
    """The names of the other figures of `fig`'s study that its claims read, each once."""
    return tuple(dict.fromkeys(name for c in fig.claims for name in reads(c.test)))


def readers(fig: Figure, figures: Iterable[Figure]) -> list[Figure]:
    """The declared figures of `fig`'s study whose claims read its rows."""
    return [f for f in figures if f.study == fig.study and f.name != fig.name and fig.name in figures_read(f)]


# The results tree of the run judging (its --out), searched before the project's own (`searching`).
_RUN_TREE: ContextVar[Path | None] = ContextVar("run_tree", default=None)


@contextmanager
def searching(tree: Path) -> Iterator[None]:
    """Judge with `tree`, a run's --out, searched first for the rows of the other figures a claim reads."""
    token = _RUN_TREE.set(tree)
    try:
        yield
    finally:
        _RUN_TREE.reset(token)


def _trees() -> tuple[Path, ...]:
    run = _RUN_TREE.get()
    return tuple(dict.fromkeys([*([run] if run is not None else []), results.RESULTS, results.REFERENCE]))


def rows_beside(fig: Figure, name: str, rows: Rows, trees: Sequence[Path] | None = None) -> Rows:
    """The latest rows of the study's figure `name` from the results tree whose CSV holds these rows (the
    judging run's --out, results/, or the reference reproduction); for a derived figure, those of `name`
    derived the same way (fig5@variation=none reads fig3@variation=none's); none where no tree searched
    holds them, or where that tree has not measured `name`."""
    # plain copies: matching the rows to a tree reads no measurement for a claim (studykit.reads)
    ours = {(r.key, r.text(fig.y)) for r in map(Row, rows)}
    for tree in trees if trees is not None else _trees():
        here = tree / fig.directory / fig.csv_name
        if ours and here.is_file() and ours <= {(r.key, r.text(fig.y)) for r in read_rows(here)}:
            beside = f"{fig.study}/{name}@{fig.variant}" if fig.variant else fig.study
            there = tree / beside / f"{name}.csv"
            return latest_rows(read_rows(there)) if there.is_file() else []
    return []


def inputs(fig: Figure, rows: Rows, trees: Sequence[Path] | None = None) -> dict[str, str]:
    """The digest of every row the judgement of `fig` on `rows` reads: its own, and each figure's it reads."""
    found = {fig.full_name: digest(rows)}
    for name in figures_read(fig):
        found[f"{fig.study}/{name}"] = digest(rows_beside(fig, name, rows, trees))
    return found


def stale(fig: Figure, manifest: Mapping[str, Any], tree: Path) -> list[str]:
    """The inputs of a stored judgement (its manifest, under `tree`) whose rows differ now, by figure name;
    a judgement from before judgements recorded their inputs names itself (nothing to compare)."""
    verdict = manifest.get("verdict") if isinstance(manifest.get("verdict"), dict) else {}
    recorded = (verdict or {}).get("inputs")
    if not isinstance(recorded, dict):
        return [f"{fig.full_name} (its judgement records no inputs)"]
    trials = manifest.get("trials_per_setting")
    seed = manifest.get("seed")
    rows = judged_rows(
        fig,
        tree / fig.directory / fig.csv_name,
        bool(manifest.get("quick")),
        int(trials) if isinstance(trials, int) else None,
        int(seed) if isinstance(seed, int) else None,
        reached_of(manifest),
    )
    now = inputs(fig, rows, (tree,))
    return [name for name in sorted(set(recorded) | set(now)) if recorded.get(name) != now.get(name)]
