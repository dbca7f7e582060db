"""The project's exceptions by kind: what the user gave, what the machine cannot do, what one trial hit.

Every netrepro exception derives from `NetreproError` and, through it, from
exactly one kind, which says what happens next:

- `UserError`: bad input (a flag, a figure name, a `--set` value).  Nothing is
  built; exit 2, with a message that names what was typed and what is allowed.
- `SetupError`: the machine or a tool cannot do what the run needs, or a lab or
  server did not come up.  The run stops at once; exit 1, the message naming
  the command, the host and its stderr where there is one.
- `TrialError`: one trial's measurement failed.  Its row is recorded as failed
  and the run goes on (sweep.trial_outcome).

A few exceptions are raised in more than one situation and leave the kind to
the caller: `CommandError` (proc) fails a trial when a tool run inside the
trial's workload failed, and stops the run anywhere else.  Any exception that
is not a NetreproError is a programming error: it stops the run, with its
traceback under -v.

This module is ground: it imports nothing of the project.
"""

from __future__ import annotations

__all__ = ["NetreproError", "SetupError", "TrialError", "UserError"]


class NetreproError(RuntimeError):
    """The base of every exception netrepro raises on purpose."""


class UserError(NetreproError):
    """Bad input: the message names what was given and what is allowed (exit 2)."""


class SetupError(NetreproError):
    """The machine, a tool or the lab cannot do what the run needs: the run stops (exit 1)."""


class TrialError(NetreproError):
    """One trial's measurement failed: its row says so and the run goes on."""
