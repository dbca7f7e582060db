"""What a study's paths vary from trial to trial: its declared variation, and how a trial's setting takes it.

An emulator replays: on a path without random loss two trials of one cell
differ only by where in a round trip each started (the start phase each
trial draws, ground.trials.trial_draw), and a claim that holds at one phase
of a deterministic emulator is a fact about the emulator.  Real paths jitter.
So each study declares a `Variation` beside its figures: the per-packet delay
jitter its paths have (each emulated link direction's delay drawn uniformly
within +- it, packets kept in order: the delay line's own, netem's rate
form), sized from the source's description of its network, with the reason
in the study's docs page.  The jitter's draws come from the seed the trial
draws from its key (`loss_seed`), so a trial re-run draws the same, another
trial another; its row records the amount (`jitter`), the choice
(`variation`) and the seed.

Cross traffic beyond the source's own is not part of any study's variation:
the sources whose setting is a shared path declare their cross traffic
themselves (newcwv's FTP flow, linuxcc's cross flows), and the others
describe an isolated path (docs/studies/*.md, "What varies").

A trial's setting names its variation with the key `variation`: `study`
(the study's declared jitter, unless the figure sets a jitter of its own) or
`none` (the emulator without variation: the start phase alone, as the
reference was measured at af4479f; such a setting carries no `variation` key,
so its trial keys are those rows' keys).  A figure that does not say runs
with `DECLARED`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ground.units import Duration, parse_duration

KEY = "variation"
STUDY = "study"  # the study's declared variation
NONE = "none"  # the emulator without variation: each trial's start phase only
CHOICES = (STUDY, NONE)
# What a figure whose setting does not name a variation runs with: its study's, as the reference was measured
# (`run.sh reproduce all` from bc2b8a3).  The rows without variation (af4479f) stay beside each such figure as
# its twin `@variation=none` (Figure.unvaried); a declared figure judges the rows its own grid names, so this
# default and the stored rows move together.
DECLARED = STUDY


@dataclass(frozen=True)
class Variation:
    """What a study's paths vary from trial to trial beyond the start phase: the per-packet delay jitter of
    each emulated link direction (uniform within +- `jitter`, in order), and why that much (`why`, from the
    source's description of its network; the study's docs page says it at length)."""

    jitter: Duration = Duration(0)
    why: str = "the study declares no variation: its trials differ by their start phase and random loss alone"

    @classmethod
    def of(cls, jitter: str, why: str) -> Variation:
        """A declaration as a study writes it: the jitter as text ("1ms"), checked as the path key is."""
        return cls(jitter=parse_duration(jitter, "variation jitter", high=Duration(1.0)), why=why)

    def applied(self, setting: Mapping[str, Any]) -> dict[str, Any]:
        """A trial's setting as it runs under its variation: with `variation=study` (or `DECLARED`, where
        the setting names none) the study's jitter where the setting has no jitter of its own, and the
        key `variation=study` that the row records; with `variation=none`, or where the study's variation
        would change nothing, the setting without the key, as the emulator without variation ran it."""
        out = dict(setting)
        chosen = str(out.pop(KEY, DECLARED))
        if chosen not in CHOICES:
            raise ValueError(f"{KEY}={chosen}: one of {', '.join(CHOICES)}")
        if chosen == NONE or not self.jitter.seconds or "jitter" in out:
            return out
        return {**out, KEY: STUDY, "jitter": str(self.jitter)}


NO_VARIATION = Variation()
