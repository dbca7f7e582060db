"""Take the re-measure's rows into results/reference: a one-off, removed with this folder.

    .venv/bin/python results/remeasure/adopt.py TREE            # what it would do, and what is missing
    .venv/bin/python results/remeasure/adopt.py TREE --apply    # do it (then `git add -A results/reference`)

For every figure `reproduce all` measures (netrepro.front.reproduce.figures_of):

1. its stored files in results/reference (the rows of af4479f, measured without
   variation) move to its twin without variation, `Figure.unvaried()`
   (`iw/fig2` -> `iw/fig2@variation=none/`), where it has one; a figure that
   plots another's rows (`trials_of`) takes a copy of those rows along, as
   the twin's own CSV (a derived figure draws its own), so that the twin
   can be drawn again;
2. its files in TREE (the rows of bc2b8a3, `reproduce all`'s output) take
   their place, over the stored ones where it has no twin (it names its own
   jitter, or the variation leaves its grid as it was).

A figure whose files TREE lacks, or whose manifest counts a trial failed or
missing, stops the run before anything moves.  Every
twin is then drawn again with `--plot-only` (its manifest names it), then
every figure (its verdict beside its twin's): the printed commands.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from ground.manifests import ManifestUnreadable, read_manifest
from ground.results import REFERENCE
from netrepro.front.reproduce import figures_of
from netrepro.studykit import variation
from netrepro.studykit.spec import Figure

SUFFIXES = (".caption.txt", ".manifest.json", ".png", ".svg", ".series")


@dataclass(frozen=True)
class Step:
    """One file or folder moved or copied; the steps run in the order `plan` gives them."""

    how: str  # "copy" | "move" | "replace" (a copy over the stored file of a figure without a twin)
    src: Path
    dst: Path

    def run(self) -> None:
        self.dst.parent.mkdir(parents=True, exist_ok=True)
        if self.how == "replace" and self.dst.is_dir():
            shutil.rmtree(self.dst)
        elif self.how == "replace":
            self.dst.unlink(missing_ok=True)
        if self.dst.exists():
            raise SystemExit(f"{self.dst} exists: the reference was adopted already, or by halves")
        if self.how == "move":
            self.src.rename(self.dst)
        elif self.src.is_dir():
            shutil.copytree(self.src, self.dst)
        else:
            shutil.copy2(self.src, self.dst)


def own_files(fig: Figure, folder: Path) -> list[Path]:
    """The figure's files in `folder`: its CSV where it owns its rows, its drawing, caption, manifest, series."""
    names = [fig.name + s for s in SUFFIXES] + ([] if fig.trials_of else [fig.csv_name])
    return [folder / n for n in names if (folder / n).exists()]


def measured(fig: Figure, tree: Path) -> bool:
    """Whether TREE holds the figure whole: its manifest, its rows, and no trial failed or missing."""
    folder = tree / fig.directory
    if not fig.trials_of and not (folder / fig.csv_name).exists():
        return False
    try:
        doc = read_manifest(folder / f"{fig.name}.manifest.json").doc
    except ManifestUnreadable:
        return False
    return not doc.get("failed_trials") and not doc.get("trials_missing")


def plan(tree: Path, partial: bool = False) -> tuple[list[Step], list[str]]:
    """The steps, in order: the stored rows a twin draws that another figure owns copied to it (before
    their owner's move takes them), the stored files moved to their twins, the new files copied in; and
    the figures TREE has not measured yet (with `partial`, steps for the others alone: a rehearsal)."""
    shared: list[Step] = []
    away: list[Step] = []
    into: list[Step] = []
    figures = figures_of("all")
    missing = [fig.full_name for fig in figures if not measured(fig, tree)]
    for fig in figures:
        if partial and fig.full_name in missing:
            continue
        stored = REFERENCE / fig.directory
        twin = fig.unvaried()
        if twin is not None:
            there = REFERENCE / twin.directory
            away += [Step("move", p, there / p.name) for p in own_files(fig, stored)]
            if fig.trials_of:
                # a derived figure draws rows of its own name (Figure.derive): fig4@variation=none/fig4.csv
                shared.append(Step("copy", stored / fig.csv_name, there / twin.csv_name))
        keep_series = (stored / f"{fig.name}.series").exists()  # the reference keeps bufferbloat's alone
        into += [
            Step("copy" if twin else "replace", p, stored / p.name)
            for p in own_files(fig, tree / fig.directory)
            if keep_series or not p.name.endswith(".series")
        ]
    return shared + away + into, missing


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("tree", type=Path, help="reproduce all's output tree")
    ap.add_argument("--apply", action="store_true", help="move and copy (else only print)")
    ap.add_argument("--partial", action="store_true", help="the figures measured so far alone (a rehearsal)")
    args = ap.parse_args(argv)
    if variation.DECLARED != variation.STUDY:
        print(
            "adopt: main's variation.DECLARED is still `none`: set it to STUDY first (each figure's twin "
            "without variation is then another figure, where the stored rows go)",
            file=sys.stderr,
        )
        return 2
    steps, missing = plan(args.tree.resolve(), args.partial)
    repo = REFERENCE.parent.parent
    for s in steps:
        src = s.src.relative_to(repo) if s.src.is_relative_to(repo) else s.src
        print(f"{s.how} {src} -> {s.dst.relative_to(repo)}")
    if missing:
        print(f"not measured yet in {args.tree}: {', '.join(missing)}", file=sys.stderr)
        if not args.partial:
            return 1
    if args.apply:
        for s in steps:
            s.run()
        adopted = [f for f in figures_of("all") if f.full_name not in missing]
        twins = [t for f in adopted if (t := f.unvaried())]
        print("now draw each twin, then each figure, as the rows are, into results/reference:")
        for fig in [*twins, *adopted]:
            derived = [a for k, v in fig.overrides.items() for a in ("--set", f"{k}={v}")]
            name = (fig.declared or fig).full_name
            print(" ", shlex.join(["./run.sh", name, *derived, "--plot-only", "--out", "results/reference"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
