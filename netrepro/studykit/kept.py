"""The derived figures the reference reproduction keeps, declared beside the study's figures.

A derived figure (spec.Figure.derive: `run.sh FIG --set KEY=VALUE`) that
results/reference keeps is declared in its study's `KEPT`, with why it is
kept and the claims it is judged by, in a commit before its rows are
measured: a figure chosen after its data would otherwise read like one
planned (netrepro.studykit.declared says, per figure, whether its
declaration predates its rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from netrepro.studykit.claims import Claim
from netrepro.studykit.spec import Figure


@dataclass(frozen=True)
class Kept:
    """One derived figure the reference keeps: the declared figure, what --set changes, why, its claims."""

    figure: str  # the declared figure's name in its study ("pacing")
    overrides: Mapping[str, str]  # what --set changes, as the command line gives it ({"idle_s": "5"})
    reason: str  # why the reference keeps it, in one sentence (from the study's page)
    claims: tuple[Claim, ...]  # the claims it is judged by: its declared figure's (Figure.derive keeps them)

    def of(self, declared: Figure) -> Figure:
        """The derived figure, from the declared figure this entry names."""
        if declared.name != self.figure or declared.variant:
            raise ValueError(f"{declared.full_name} is not the declared figure {self.figure} of this entry")
        return declared.derive(dict(self.overrides))
