"""`run.sh shell --script FILE` without a lab: the file read and parsed before anything is built (a path
with spaces is one path; one that cannot be read is refused), and each line judged as it runs, the
first that fails stopping the script with its line named (netrepro/front/shell_script.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest

from ground.units import QuantityError
from netrepro.front.shell_script import ScriptedCLI, ScriptFailed, ScriptLine, parse_script, read_script


def test_lines_lose_their_comments_and_keep_their_numbers() -> None:
    text = "# set up\nserver iperf3 -s &   # in the background\n\n   \nclient ping -c 3 server\r\nexit\n"
    assert parse_script(text) == [
        ScriptLine(2, "server iperf3 -s &"),
        ScriptLine(5, "client ping -c 3 server"),
        ScriptLine(6, "exit"),
    ]


def test_a_path_with_a_space_is_one_path(tmp_path: Path) -> None:
    script = tmp_path / "my lab" / "a script.mn"
    script.parent.mkdir()
    script.write_text("client true\n")
    assert read_script(script) == [ScriptLine(1, "client true")]


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda d: d / "none.mn", "no such file"),
        (lambda d: d, "not a file; give a file of Mininet CLI commands, one a line"),
        (lambda d: _written(d / "bin.mn", b"client true\n\xff\n"), "not text (byte 12 is not UTF-8)"),
        (lambda d: _written(d / "empty.mn", b"# nothing\n\n"), "holds no command (only blank lines and # comments)"),
    ],
)
def test_a_script_that_cannot_be_read_is_refused_naming_it(tmp_path: Path, make: Any, why: str) -> None:
    path = make(tmp_path)
    with pytest.raises(QuantityError) as refused:
        read_script(path)
    assert str(refused.value) == f"--script {str(path)!r}: {why}"


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


class FakeNode:
    """A node's shell: a command is sent, and `echo $?` answers its exit status (`false`: 1, `exit N`: N)."""

    def __init__(self, sent: list[str]) -> None:
        self.sent = sent
        self.last = ""
        self.waiting = False

    def sendCmd(self, cmd: str) -> None:
        self.sent.append(cmd)
        self.last = cmd

    def cmd(self, command: str) -> str:
        assert command == "echo $?"
        if self.last.startswith("exit "):
            return self.last.split()[1] + "\r\n"
        return ("1" if self.last == "false" else "0") + "\r\n"

    def defaultIntf(self) -> Any:
        return self

    def updateIP(self) -> str:
        return "10.0.0.2"


class Scripted(ScriptedCLI):
    def waitForNode(self, node: Any) -> None:
        pass  # the fake node's command is over as soon as it is sent


@pytest.fixture
def stdin() -> Iterator[TextIO]:
    read_end, write_end = os.pipe()
    with open(read_end, encoding="utf-8") as f:
        yield f
    os.close(write_end)


def _run(stdin: TextIO, *lines: str) -> list[str]:
    sent: list[str] = []
    net = {"client": FakeNode(sent), "server": FakeNode(sent)}
    Scripted(net, stdin, "my script.mn", parse_script("\n".join(lines)))
    return sent


def test_every_line_runs_and_a_node_name_is_its_address(stdin: TextIO) -> None:
    assert _run(stdin, "client true", "client ping -c 1 server", "py client") == ["true", "ping -c 1 10.0.0.2"]


def test_the_first_failing_command_stops_the_script_naming_its_line(stdin: TextIO) -> None:
    sent: list[str] = []
    net = {"client": FakeNode(sent)}
    with pytest.raises(ScriptFailed) as failed:
        Scripted(net, stdin, "my script.mn", parse_script("client true\n\nclient false\nclient touch x\n"))
    assert str(failed.value) == (
        "--script my script.mn line 3: `client false`: exited with status 1; the lines after it were not run"
    )
    assert sent == ["true", "false"]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("clinet true", "not a command of Mininet's CLI nor a node (the nodes: client, server)"),
        ("client", "no command for node client"),
        ("client exit 7", "exited with status 7"),
        ("iperf client nowhere", "Mininet says: node 'nowhere' not in network"),
        ("sh exit 4", "exited with status 4"),
        ("py 1 / 0", "raised ZeroDivisionError: division by zero"),
        ("px import nosuchmodule", "raised ModuleNotFoundError: No module named 'nosuchmodule'"),
        ("source /nonexistent/a b.mn", "source '/nonexistent/a b.mn': no such file"),
        ("source my script.mn", "my script.mn is being run already (a script that sources itself never ends)"),
    ],
)
def test_a_line_that_fails_in_any_way_fails_the_script(stdin: TextIO, line: str, why: str) -> None:
    with pytest.raises(ScriptFailed) as failed:
        _run(stdin, "client true", line, "client touch x")
    assert str(failed.value) == f"--script my script.mn line 2: `{line}`: {why}; the lines after it were not run"


def test_a_sourced_file_runs_by_its_whole_path_and_exit_ends_the_script(stdin: TextIO, tmp_path: Path) -> None:
    inner = tmp_path / "with space.mn"
    inner.write_text("client echo inner\nclient false\n")
    assert _run(stdin, "client true", "exit", "client touch x") == ["true"]
    with pytest.raises(ScriptFailed) as failed:
        _run(stdin, f"source {inner}", "client touch x")
    assert str(failed.value).startswith(f"{inner} (sourced) line 2: `client false`: exited with status 1")
