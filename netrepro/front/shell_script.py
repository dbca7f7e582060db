"""`run.sh shell --script FILE`: the file's Mininet CLI commands, run one by one, the first that fails
stopping the script (and the command: exit 1, naming the file's line).

The file is read and its lines parsed before anything is built (`read_script`): a path that does not
exist, is not a file, cannot be read or is not text is refused there, and a path with spaces is only a
path (Mininet's own `source` splits its argument on whitespace).  A line is what Mininet's CLI takes
(`client ping -c 3 server`, `pingall`, `sh ...`, `py ...`), without its `#` comment, as the CLI cuts
one.  `ScriptedCLI` runs them in Mininet's CLI and judges each: a node's command fails on a non-zero
exit status (the node's shell is asked for `$?`); a line Mininet does not know, a node without a
command, a CLI command that logs an error, a `py`/`px` that raises or an `sh` that exits non-zero fail
too.  A `source FILE` line inside the script reads FILE the same way.  `exit` ends the script there.
"""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import mininet.cli
from mininet.log import lg as mininet_log

from ground.errors import SetupError
from ground.units import QuantityError


class ScriptFailed(SetupError):
    """A scripted line failed: the script stops there, the lab is torn down, and the command exits 1."""


@dataclass(frozen=True)
class ScriptLine:
    """One command of a script: the line it is on (from 1) and its text, without its comment."""

    number: int
    text: str


def parse_script(text: str) -> list[ScriptLine]:
    """The commands of a script's text: each line cut at its first `#` (as Mininet's CLI does),
    stripped; blank lines left out, each kept line with its number in the file."""
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        command = line.split("#", 1)[0].strip()
        if command:
            lines.append(ScriptLine(number, command))
    return lines


def read_script(path: Path, option: str = "--script") -> list[ScriptLine]:
    """The commands of the script at `path` (a QuantityError, naming `option` and the path, if it cannot be)."""
    try:
        if not path.exists():
            raise QuantityError(option, str(path), "no such file")
        if not path.is_file():
            raise QuantityError(option, str(path), "not a file; give a file of Mininet CLI commands, one a line")
        data = path.read_bytes()
    except OSError as e:
        raise QuantityError(option, str(path), f"cannot be read ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise QuantityError(option, str(path), f"not text (byte {e.start} is not UTF-8)") from None
    lines = parse_script(text)
    if not lines:
        raise QuantityError(option, str(path), "holds no command (only blank lines and # comments)")
    return lines


class _Errors(logging.Handler):
    """The messages Mininet logs at ERROR or above while a line runs ("node 'h9' not in network")."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().strip())


class ScriptedCLI(mininet.cli.CLI):  # type: ignore[misc]
    """Mininet's CLI that runs a script's lines and stops at the first that fails (ScriptFailed).

    `stdin`: what a node's command may read (Mininet's CLI polls it while the command runs)."""

    def __init__(self, net: Any, stdin: TextIO, name: str, lines: list[ScriptLine]) -> None:
        self._script: tuple[str, list[ScriptLine]] | None = (name, lines)
        self._sourcing: list[str] = []
        self._failure: str | None = None
        # Mininet's CLI runs its script from its constructor, through do_source (below)
        super().__init__(net, stdin=stdin, script=name)

    def do_source(self, line: str) -> None:
        """Run the script given to the constructor; from a script's `source FILE` line, FILE's lines."""
        if self._script is not None:
            name, lines = self._script
            self._script = None
        else:
            name = line.strip()  # the whole rest of the line: a path with spaces is one path
            if name in self._sourcing:
                self._failure = f"{name} is being run already (a script that sources itself never ends)"
                return
            try:
                lines = read_script(Path(name), "source")
            except QuantityError as e:
                self._failure = str(e)
                return
        self._sourcing.append(name)
        try:
            for scripted in lines:
                if self._run_line(name, scripted):
                    break
        finally:
            self._sourcing.pop()

    def _run_line(self, name: str, scripted: ScriptLine) -> bool:
        """Run one line; true when it ended the script (`exit`).  ScriptFailed if it failed."""
        self._failure = None
        errors = _Errors()
        mininet_log.addHandler(errors)
        try:
            stop = self.onecmd(scripted.text)
        finally:
            mininet_log.removeHandler(errors)
        why = self._failure or (f"Mininet says: {'; '.join(errors.messages)}" if errors.messages else None)
        if why is not None:
            which = f"--script {name}" if len(self._sourcing) == 1 else f"{name} (sourced)"
            raise ScriptFailed(
                f"{which} line {scripted.number}: `{scripted.text}`: {why}; the lines after it were not run"
            )
        return bool(stop)

    def default(self, line: str) -> None:
        """A node's command (`client ping -c 3 server`), run as Mininet's CLI runs it, then its exit status."""
        first, args, _ = self.parseline(line)
        if first not in self.mn:
            nodes = ", ".join(sorted(self.mn))
            self._failure = f"not a command of Mininet's CLI nor a node (the nodes: {nodes})"
            return
        if not args:
            self._failure = f"no command for node {first}"
            return
        super().default(line)
        status = self.mn[first].cmd("echo $?").strip()
        if status == "130":
            raise KeyboardInterrupt  # the command was interrupted (Ctrl-C): so is the script
        if status != "0":
            self._failure = f"exited with status {status}"

    def do_sh(self, line: str) -> None:
        """Run a shell command line on the machine (outside the lab), as Mininet's CLI does; its exit status."""
        status = subprocess.run(["/bin/sh", "-c", line], check=False).returncode
        if status:
            self._failure = f"exited with status {status}"

    def do_py(self, line: str) -> None:
        """Evaluate a Python expression with the nodes by name, as Mininet's CLI does; an exception fails it."""
        try:
            result = eval(line, vars(mininet.cli), self.getLocals())
        except Exception as e:
            self._failure = f"raised {type(e).__name__}: {e}"
            return
        if result:
            mininet.cli.output(f"{result if isinstance(result, str) else repr(result)}\n")

    def do_px(self, line: str) -> None:
        """Execute a Python statement with the nodes by name, as Mininet's CLI does; an exception fails it."""
        try:
            exec(line, vars(mininet.cli), self.getLocals())
        except Exception as e:
            self._failure = f"raised {type(e).__name__}: {e}"
