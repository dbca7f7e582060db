"""Which trials a claim's test read: the rows whose measurements, not only their parameters, it looked at.

`--until-decided` (netrepro.runner.looks) adds trials only to the settings an undecided claim reads.  Rather
than derive them from each kind of test (a Computed test reads what its study's code reads), the claim is
judged on its rows wrapped (`Reading`) so that every cell read through the typed Row (`number`, `measured`,
`text`) is noted, and a row counts as read where a column other than its setting's parameters and what
every row says of its trial (`IDENTITY`) was: a group's filter on the level or the series reads no
measurement, its metric does.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ground.trials import Row
from netrepro.studykit import claims
from netrepro.studykit.decisions import VIEW_KEY

if TYPE_CHECKING:
    from netrepro.studykit.claims import Claim, Judged
    from netrepro.studykit.spec import Figure

# What every row says of its trial, beside its parameters (netrepro.runner.sweep's row): read to choose
# rows, never a measurement.
IDENTITY = frozenset(
    {
        "trial_key", "figure", "trial", "series", "status", "error", "seed", "topology", "backend", "switch",
        "code", "host", "kernel", "worker", "loss_seeded", "draw_seed", "loss_seed", "start_offset_ms", "cc_impl",
        "cc_registered", VIEW_KEY,
    }
)  # fmt: skip


@dataclass
class _Noted:
    ignored: frozenset[str]
    keys: set[str] = field(default_factory=set)


_NOTED: contextvars.ContextVar[_Noted | None] = contextvars.ContextVar("reads", default=None)


class Reading(Row):
    """A row that notes, while a claim is judged (`judge_reading`), that a measurement of it was read."""

    def _note(self, column: str) -> None:
        noted = _NOTED.get()
        if noted is not None and column not in noted.ignored:
            noted.keys.add(super().text("trial_key"))

    def number(self, column: str) -> float | None:
        self._note(column)
        return super().number(column)

    def text(self, column: str) -> str:
        self._note(column)
        return super().text(column)


def judge_reading(claim: Claim, fig: Figure, rows: Sequence[Row], parameters: Iterable[str]) -> tuple[Judged, set[str]]:
    """The claim judged on `rows` (claims.judge), and the trial keys of the rows whose measurements it read;
    `parameters`: the names of the figure's parameters (its grid's keys), which choose rows."""
    noted = _Noted(IDENTITY | frozenset(parameters))
    token = _NOTED.set(noted)
    try:
        judged = claims.judge([claim], fig, [Reading(r) for r in rows])[0]
    finally:
        _NOTED.reset(token)
    return judged, noted.keys
