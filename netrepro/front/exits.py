"""A command's exit status: what each exception it raises says on stderr, and the status it becomes.

`dispatch` runs one command (cli's, or a figure a `reproduce` child runs):
0 or the command's own status; 2 for a user's error (what was typed, what
is allowed); 1 for a setup error, a full disk or a bug in netrepro (the
traceback under -v); 130 for an interrupt, once everything the run created
is undone; 128 + SIGPIPE when whoever read the output has gone.  `stop_on_signals`
makes SIGINT, SIGTERM and SIGHUP stop a command so that everything it created
is undone: the CLI's process, and each figure's child of `reproduce`.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
import traceback
from collections.abc import Callable
from types import FrameType

from ground.errors import NetreproError, UserError


def _terminate(signum: int, frame: FrameType | None) -> None:
    # SystemExit, not KeyboardInterrupt: Mininet's CLI swallows the latter.
    # Either way every `finally` and `with` unwinds what the run made.
    print(f"run.sh: signal {signum}: stopping, undoing what this run created", file=sys.stderr)
    raise SystemExit(128 + signum)


def stop_on_signals() -> None:
    """SIGINT stops a run as KeyboardInterrupt, SIGTERM and SIGHUP as SystemExit, whatever this
    process inherited: a shell starts a background job (`./run.sh fig3 &`, `nohup`) with SIGINT or
    SIGHUP ignored, a forked child its parent's handlers, and a run sent one must still stop and undo
    what it created."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)


def dispatch(args: argparse.Namespace, command: Callable[[argparse.Namespace], int]) -> int:
    """Run `command(args)`, turning what it raises into a message and an exit status."""
    try:
        return command(args)
    except UserError as e:
        _report(args, e)
        return 2
    except NetreproError as e:
        _report(args, e)
        return 1
    except KeyboardInterrupt:
        print(f"run.sh {args.command}: interrupted; everything it created has been undone", file=sys.stderr)
        return 130
    except BrokenPipeError:  # whoever read the output has gone (`| head`): stop quietly, as a filter does
        _discard_stdout()
        return 128 + signal.SIGPIPE
    except Exception as e:  # anything else is a bug in netrepro, but a full disk
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            named = f" ({e.filename})" if e.filename else ""
            print(
                f"run.sh {args.command}: {e.strerror}{named}: free some space and run the command again",
                file=sys.stderr,
            )
            return 1
        if args.verbose:
            traceback.print_exception(e, file=sys.stderr)
            print(f"run.sh {args.command}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        else:
            print(
                f"run.sh {args.command}: internal error: {type(e).__name__}: {e} (run with -v for the traceback)",
                file=sys.stderr,
            )
        return 1


def _discard_stdout() -> None:
    """Standard output to /dev/null, so that the interpreter's last flush at exit finds no broken pipe."""
    with contextlib.suppress(OSError, ValueError):  # not a file descriptor (a test's captured stdout)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _report(args: argparse.Namespace, e: NetreproError) -> None:
    """The error in one message; a setup error's traceback above it under -v (never a user error's)."""
    if args.verbose and not isinstance(e, UserError):
        traceback.print_exception(e, file=sys.stderr)
    print(f"run.sh {args.command}: {e}", file=sys.stderr)
