"""Claims as data: a source's sentence, quoted verbatim, and the test that decides it on our trials.

A figure declares its claims once (`Figure.claims`).  Each is the source's
own sentence as it stands in the source's text (`quote`, with where it
stands), a test (netrepro.studykit.decisions: one series better than
another by the smallest effect its word is worth, alike within a margin, a
ratio inside a band, a trend at every step, a reading), and why the test
reads the sentence so (`why`).  The reading a reader sees is generated from
the test's own parameters (`Claim.reading`: threshold, direction, levels),
so that a reading and its test cannot disagree; `why` is the only prose.
A reading of the setup itself (a table read back from the kernel) is a
check (`check=True`): shown apart, counted in no verdict.

A claim holds when it holds at every level it covers, differs when it
differs at any, and is undecided otherwise (`judge`). A figure's verdict
(`verdict`) counts its claims: agrees (every counted claim holds, one at
least over varying trials), deterministic (every claim holds, but only as
deterministic readings of the emulation), partly (at least one holds and
one differs), differs (one differs and none holds), undecided, or unjudged
(no counted claim).  A quote is checked against the source's text
(`found_in`), verbatim but for white space.
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
    deterministic_in,
)

if TYPE_CHECKING:
    from netrepro.studykit.spec import Figure, Rows

VERDICTS = ("agrees", "deterministic", "partly", "differs", "undecided", "unjudged")


@dataclass(frozen=True)
class Claim:
    """One sentence of the source, verbatim, and the test that decides it on our trials."""

    source: str  # the source's text file (e.g. "000_156489580aaffd1b.txt"), whose words `quote` are
    where: str  # where it stands there: "section 7.1, Figure 5"
    quote: str  # verbatim (whitespace aside); "..." joins two parts of one passage, each verbatim, in order
    test: Test
    why: str = ""  # why the test reads the sentence so: the metric, the series, what a word like "little" is worth
    check: bool = False  # a check of the setup (a value read back), not a finding: counted in no verdict

    @property
    def reading(self) -> str:
        """How the sentence is tested, generated from the test's parameters."""
        return self.test.describe()


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

    @property
    def deterministic(self) -> bool:
        """Whether the outcome rests on deterministic readings of the emulation (cells that do not vary)."""
        return deterministic_in(self.outcome, self.findings)

    @property
    def by_design(self) -> bool:
        return isinstance(self.claim.test, ByDesign)

    @property
    def counted(self) -> bool:
        """Counted in the figure's verdict: neither a check nor set true by design."""
        return not self.claim.check and self.outcome != BY_DESIGN

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
            "why": self.claim.why,
            "test": self.claim.test.describe(),
            "outcome": self.outcome,
            "deterministic": self.deterministic,
            "by_design": self.by_design,
            "check": self.claim.check,
            "evidence": self.evidence(),
            "findings": [dataclasses.asdict(f) for f in self.findings],
            "trials_needed": self.trials_needed,
        }


MANY_TRIALS = 1000


def needs_text(trials: int | None) -> str:
    """What an undecided claim needs, as a reader wants it: about N trials per series (80 % power at the
    spread measured), or more than any run would give where the estimate sits at a threshold's edge."""
    if not trials:
        return "no estimate of the trials that would decide it"
    if trials > MANY_TRIALS:
        return f"more than {MANY_TRIALS} trials per series: the estimate sits at the edge of its threshold"
    return f"about {trials} trials per series would decide it (80 % power at the spread measured)"


def outcome_text(judged: Mapping[str, Any]) -> str:
    """A judged claim's outcome as a reader sees it: HOLDS, DIFFERS BY DESIGN, HOLDS (DETERMINISTIC)...; and
    where the figure's twin without its study's variation judged it too (netrepro.runner.manifest.beside_unvaried),
    that outcome after it: HOLDS; DIFFERS WITHOUT VARIATION."""
    outcome = str(judged["outcome"]).upper()
    if judged.get("by_design") and judged["outcome"] == DIFFERS:
        outcome += " BY DESIGN"
    elif judged.get("deterministic"):
        outcome += " (DETERMINISTIC: the trials do not vary)"
    if judged.get("without_variation"):
        outcome += f"; {str(judged['without_variation']).upper()} WITHOUT VARIATION"
        outcome += " (DETERMINISTIC)" if judged.get("without_variation_deterministic") else ""
    return ("CHECK " if judged.get("check") else "") + outcome


def unvaried_text(judgement: Mapping[str, Any]) -> str:
    """The figure's verdict without its study's variation where `judgement` sets it beside its own
    (netrepro.runner.manifest.beside_unvaried), as the caption and the report add it to the verdict:
    "; without variation: agrees (iw/fig2@variation=none, rows of af4479f...)"; else ""."""
    unvaried = judgement.get("without_variation")
    if not isinstance(unvaried, dict):
        return ""
    if unvaried.get("why"):
        return f"; without variation: not read ({unvaried.get('figure')}: {unvaried['why']})"
    rows = ", ".join(str(c)[:12] for c in unvaried.get("code_of_rows") or []) or "its stored rows"
    return f"; without variation: {unvaried.get('verdict')} ({unvaried.get('figure')}, rows of {rows})"


def line_of(judged: Mapping[str, Any]) -> str:
    """A judged claim (as the manifest keeps it) as the caption and the terminal print it: quote, where,
    the reading (generated from the test), why it is read so, our numbers, outcome, and for an undecided
    one the trials that would decide it."""
    needs = f" ({needs_text(judged.get('trials_needed'))})" if judged.get("trials_needed") else ""
    why = judged.get("why") or ""
    why_text = f" Why: {why}." if why else ""
    return (
        f'"{judged["quote"]}" ({judged["where"]}). Test: {judged["test"]}.{why_text} '
        f"Ours: {judged['evidence']}. {outcome_text(judged)}{needs}"
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
    """The figure's verdict over its counted claims (checks and claims set true by design are shown and
    counted apart): agrees when every one holds and one at least over trials that vary; deterministic when
    every one holds but only as a deterministic reading of the emulation; partly when at least one holds and
    one differs; differs when one differs and none holds; undecided otherwise; unjudged without one."""
    counted = [j for j in judged if j.counted]
    holds = [j for j in counted if j.outcome == HOLDS]
    differs = [j for j in counted if j.outcome == DIFFERS]
    if not counted:
        kind = "unjudged"
    elif len(holds) == len(counted):
        kind = "agrees" if any(not j.deterministic for j in holds) else "deterministic"
    elif holds and differs:
        kind = "partly"
    elif differs:
        kind = "differs"
    else:
        kind = "undecided"
    claims_ = [j for j in judged if not j.claim.check]
    counts = {o: sum(1 for j in claims_ if j.outcome == o) for o in OUTCOMES}
    counts["deterministic"] = sum(1 for j in counted if j.deterministic)
    counts["differs by design"] = sum(1 for j in counted if j.by_design and j.outcome == DIFFERS)
    return {
        "verdict": kind,
        "counts": counts,
        "claims": [j.as_dict() for j in claims_],
        "checks": [j.as_dict() for j in judged if j.claim.check],
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
