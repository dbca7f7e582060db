"""A figure's manifest, read back: one reader, its format checked, older formats migrated once.

A run writes `<figure>.manifest.json` beside its CSV (the sweep; its
provenance from ground.results, with `format`).  Everything that reads one
back (a resumed run's earlier verifications, the reference beside a run's
numbers, `list` and `--dry-run`, the report) reads it here: a file that is
missing, unreadable, not JSON, not an object, or written by a newer netrepro
is refused with the reason (ManifestUnreadable), and a manifest of an older
format is brought to this one by `migrate`, the one place that knows how
the formats differ.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ground.errors import SetupError

# The format a run writes (ground.results.provenance).  1: `git` is {"commit", "dirty"}; before it
# (no `format`), `git` was the commit as a string, "+dirty" appended to a tree with changes.
MANIFEST_VERSION = 1


class ManifestUnreadable(SetupError):
    """A manifest that cannot be read as one: missing, unreadable, not JSON, not an object, or newer."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


def migrate(doc: dict[str, Any]) -> dict[str, Any]:
    """The manifest in this format (MANIFEST_VERSION), from whichever format it was written in."""
    version = doc.get("format", 0)
    if not isinstance(version, int) or version > MANIFEST_VERSION:
        raise ValueError(f"format {version!r}, newer than this netrepro reads ({MANIFEST_VERSION})")
    if version == 0 and isinstance(doc.get("git"), str):
        commit = doc["git"]
        doc = {**doc, "git": {"commit": commit.removesuffix("+dirty"), "dirty": commit.endswith("+dirty")}}
    return {**doc, "format": MANIFEST_VERSION}


@dataclass(frozen=True)
class Manifest:
    """A figure's manifest as this netrepro reads it (`doc`: the whole, in the current format)."""

    path: Path
    doc: Mapping[str, Any]

    @property
    def commit(self) -> str | None:
        """The code that last drew the figure (not necessarily the code its rows ran from: `rows_code`)."""
        git = self.doc.get("git")
        return str(git["commit"]) if isinstance(git, dict) and git.get("commit") else None

    @property
    def dirty(self) -> bool:
        git = self.doc.get("git")
        return bool(isinstance(git, dict) and git.get("dirty"))

    @property
    def rows_code(self) -> list[str]:
        """The commits the rows ran from (`code_of_rows`), as the rows recorded them."""
        return [str(c) for c in self.doc.get("code_of_rows") or [] if c]

    @property
    def seed(self) -> int | None:
        """The run's seed; None in a manifest from before runs recorded it (ground.trials.DEFAULT_SEED)."""
        return int(self.doc["seed"]) if self.doc.get("seed") is not None else None

    @property
    def rows(self) -> int:
        return int(self.doc.get("rows") or 0)

    @property
    def trials_missing(self) -> int:
        """The grid's trials without an ok row when the manifest was written."""
        return int(self.doc.get("trials_missing") or 0)

    @property
    def quick(self) -> bool:
        return bool(self.doc.get("quick"))

    @property
    def seconds_per_trial(self) -> float | None:
        seconds = self.doc.get("trial_seconds_all_rows")
        return float(seconds) / self.rows if self.rows and seconds else None

    @property
    def verifications(self) -> dict[str, Any]:
        found = self.doc.get("verification")
        return dict(found) if isinstance(found, dict) else {}

    @property
    def judged_claims(self) -> list[Mapping[str, Any]]:
        verdict = self.doc.get("verdict")
        claims = verdict.get("claims") if isinstance(verdict, dict) else None
        return [c for c in claims or [] if isinstance(c, dict)]


def read_manifest(path: Path) -> Manifest:
    """The manifest at `path`, in the current format; ManifestUnreadable, naming why, where it is not one."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise ManifestUnreadable(path, "there is none") from e
    except OSError as e:
        raise ManifestUnreadable(path, f"cannot read it ({e.strerror or e})") from e
    try:
        doc = json.loads(data)
    except ValueError as e:  # UnicodeDecodeError too
        raise ManifestUnreadable(path, f"not JSON ({e})") from e
    if not isinstance(doc, dict):
        raise ManifestUnreadable(
            path, f"not a manifest as a run writes it (a JSON {type(doc).__name__}, not an object)"
        )
    try:
        return Manifest(path, migrate(doc))
    except (ValueError, TypeError) as e:
        raise ManifestUnreadable(path, str(e)) from e
