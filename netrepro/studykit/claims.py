"""Claims as data: a source's sentence, quoted verbatim, and the test that decides it on our trials.

A figure declares its claims once (`Figure.claims`).  Each is the source's
own sentence as it stands in the source's text (`quote`, with where it
stands), how we read it (`reading`: which metric, which series, what margin
a word like "same" or "little" gets), and a test (netrepro.studykit.decisions:
one series better than another, alike within a margin, a ratio inside a
band, a trend, a reading, and what each finds at each level).

A claim holds when it holds at every level it covers, differs when it
differs at any, and is undecided otherwise (`judge`). A figure's verdict
(`verdict`) counts its claims: agrees, partly, differs, undecided, or
unjudged (no claim, or only claims set by design). A quote is checked
against the source's text (`found_in`), verbatim but for white space.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from netrepro.studykit.decisions import (
    ALL_LEVELS,
    BY_DESIGN,
    DIFFERS,
    HOLDS,
    OUTCOMES,
    UNDECIDED,
    ByDesign,
    Finding,
    Test,
    all_of,
)

if TYPE_CHECKING:
    from netrepro.studykit.spec import Figure, Rows

VERDICTS = ("agrees", "partly", "differs", "undecided", "unjudged")


@dataclass(frozen=True)
class Claim:
    """One sentence of the source, verbatim, and the test that decides it on our trials."""

    source: str  # the source's text file (e.g. "000_156489580aaffd1b.txt"), whose words `quote` are
    where: str  # where it stands there: "section 7.1, Figure 5"
    quote: str  # verbatim (whitespace aside); "..." joins two parts of one passage, each verbatim, in order
    test: Test
    reading: str = ""  # how we read it: the metric, the series, what a word like "little" is taken as


@dataclass(frozen=True)
class Judged:
    """A claim and what our trials say of it."""

    claim: Claim
    outcome: str
    findings: tuple[Finding, ...]

    @property
    def trials_needed(self) -> int | None:
        if self.outcome != UNDECIDED:
            return None
        return max((f.trials_needed for f in self.findings if f.trials_needed), default=None)

    def evidence(self) -> str:
        """Our numbers, place by place; each place's outcome where there are several."""
        several = len(self.findings) > 1
        return "; ".join(
            (f"{f.at}: " if f.at != ALL_LEVELS else "") + f.estimate + (f" => {f.outcome}" if several else "")
            for f in self.findings
        )

    def line(self) -> str:
        return line_of(self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        return {
            "quote": self.claim.quote,
            "source": self.claim.source,
            "where": self.claim.where,
            "reading": self.claim.reading,
            "test": self.claim.test.describe(),
            "outcome": self.outcome,
            "evidence": self.evidence(),
            "findings": [dataclasses.asdict(f) for f in self.findings],
            "trials_needed": self.trials_needed,
        }


MANY_TRIALS = 1000


def needs_text(trials: int | None) -> str:
    """What an undecided claim needs, as a reader wants it: about N trials per series, or more than any run
    would give where the estimate sits at a margin's edge."""
    if not trials:
        return "no estimate of the trials that would decide it"
    if trials > MANY_TRIALS:
        return f"more than {MANY_TRIALS} trials per series: the estimate sits at the edge of its margin"
    return f"about {trials} trials per series would decide it"


def line_of(judged: Mapping[str, Any]) -> str:
    """A judged claim (as the manifest keeps it) as the caption and the terminal print it: quote, where,
    reading, test, our numbers, outcome, and for an undecided one the trials that would decide it."""
    needs = f" ({needs_text(judged.get('trials_needed'))})" if judged.get("trials_needed") else ""
    reading = f" Read as: {judged['reading']}." if judged.get("reading") else ""
    return (
        f'"{judged["quote"]}" ({judged["where"]}).{reading} Test: {judged["test"]}. '
        f"Ours: {judged['evidence']}. {str(judged['outcome']).upper()}{needs}"
    )


def as_derived(declared: Sequence[Claim], fig: Figure) -> tuple[tuple[Claim, ...], list[str]]:
    """The claims of the derived figure `fig`: a claim set by design whose setup `fig` no longer has
    (`ByDesign.holds_while`) is tested with its `otherwise` test, or left out; the notes say which, for
    the derived figure's deviations."""
    kept, notes = [], []
    for c in declared:
        test = c.test
        if not isinstance(test, ByDesign) or test.holds_while is None or test.holds_while(fig):
            kept.append(c)
        elif test.otherwise is not None:
            kept.append(dataclasses.replace(c, test=test.otherwise))
            notes.append(f"{c.where}: set by design in the declared figure, whose setup this one changes: tested here")
        else:
            notes.append(
                f"{c.where}: set by design in the declared figure, and no test is declared for it on this "
                "one's setup: not judged here"
            )
    return tuple(kept), notes


def judge(claims: Sequence[Claim], fig: Figure, rows: Rows) -> list[Judged]:
    """Each claim decided on the figure's rows (the latest row of each trial)."""
    out = []
    for c in claims:
        findings = tuple(c.test.decide(fig, rows))
        out.append(Judged(c, all_of([f.outcome for f in findings]), findings))
    return out


def verdict(judged: Sequence[Judged]) -> dict[str, Any]:
    """The figure's verdict: agrees when every counted claim holds, differs when every one differs, undecided
    when none is decided, partly otherwise; unjudged without a counted claim.  Claims set by design are
    shown and counted apart."""
    counted = [j for j in judged if j.outcome != BY_DESIGN]
    outcomes = [j.outcome for j in counted]
    if not counted:
        kind = "unjudged"
    elif all(o == HOLDS for o in outcomes):
        kind = "agrees"
    elif all(o == DIFFERS for o in outcomes):
        kind = "differs"
    elif all(o == UNDECIDED for o in outcomes):
        kind = "undecided"
    else:
        kind = "partly"
    return {
        "verdict": kind,
        "counts": {o: sum(1 for j in judged if j.outcome == o) for o in OUTCOMES},
        "claims": [j.as_dict() for j in judged],
    }


_SPACE = re.compile(r"\s+")
_GAP = re.compile(r"\s*(?:\.\.\.|…)\s*")


def normalized(text: str) -> str:
    """Text with every run of white space one space (a quote is verbatim "whitespace aside")."""
    return _SPACE.sub(" ", text).strip()


def found_in(quote: str, text: str) -> bool:
    """Whether the quote stands in the text: each part between "..." verbatim, in order, whitespace aside."""
    haystack, at = normalized(text), 0
    for part in _GAP.split(normalized(quote)):
        if not part:
            continue
        i = haystack.find(part, at)
        if i < 0:
            return False
        at = i + len(part)
    return True
