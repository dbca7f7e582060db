"""Whether a port stands in for the kernel's own algorithm: its kept trials against the kernel's, per level.

A congestion control this project runs as a BPF program where the kernel
ships its own (cubic_plus n = 1 for CUBIC, reno_beta r = 0.5 for Reno) stands
in for it where their kept trials lie within STANDS_IN_WITHIN of each other.
The attempts the ssthresh corruption discarded (runner.attempts.
discarded_for_ssthresh) leave the kept trials the corruption spared; this
says, in a figure's notes, whether those behave as the algorithm's.
"""

from __future__ import annotations

from typing import Any

from netrepro.studykit import intervals
from netrepro.studykit.spec import Figure, Rows

# the share within which a port's kept trials stand in for the kernel's: a ratio of geometric means in
# [1/1.05, 1.05]
STANDS_IN_WITHIN = 0.05


def against_kernel(fig: Figure, rows: Rows, port: str, kernel: str, level: Any) -> str:
    """A port's kept trials against the kernel's own algorithm at a level: the ratio of geometric means of
    fig.y (port over kernel), its 95 % Welch interval over trials, and whether the two are equivalent within
    STANDS_IN_WITHIN (two one-sided Welch tests at 5 %), outside it (the interval wholly beyond), or neither
    shown; "" with fewer than two trials on either side."""

    def values(label: str) -> list[float]:
        return [r.measured(fig.y) for r in rows if r.series == label and r.text(fig.x) == str(level) and r.ok]

    a, b = values(kernel), values(port)
    iv = intervals.welch(a, b, 0.95, ratio=True)
    if iv is None:
        return ""
    band = (1 / (1 + STANDS_IN_WITHIN), 1 + STANDS_IN_WITHIN)
    p = intervals.equivalent(a, b, *band, ratio=True)
    pct = f"{STANDS_IN_WITHIN * 100:g} %"
    shown = (
        f"within {pct}"
        if p < 0.05
        else (f"outside {pct}" if iv.high < band[0] or iv.low > band[1] else f"not shown within {pct}")
    )
    return (
        f"ratio {iv.estimate:.3g} [{iv.low:.3g}, {iv.high:.3g}], n = {len(b)}, {len(a)}: {shown} "
        f"(two one-sided tests, p = {p:.2g})"
    )
