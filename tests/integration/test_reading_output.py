"""The root tests' reader of a running command's output (output.read_until); needs no root."""

import subprocess
import sys
import time

from output import read_until

# Three lines written at once, then the command waits: the shape of a lab printing its summary
# and the script's first line, then holding the lab up.
AT_ONCE = "import sys, time; sys.stdout.write('path\\nsummary\\nLAB-IS-UP\\n'); sys.stdout.flush(); time.sleep(30)"


def _start(code: str) -> "subprocess.Popen[str]":
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_a_line_written_with_others_at_once_is_found_without_waiting() -> None:
    p = _start(AT_ONCE)
    try:
        began = time.monotonic()
        seen, line = read_until(p, lambda text: "LAB-IS-UP" in text, 20)
        assert line == "LAB-IS-UP"
        assert seen == "path\nsummary\nLAB-IS-UP\n"
        assert time.monotonic() - began < 10  # found when it came, not at the deadline
    finally:
        p.kill()
        p.communicate()


def test_the_deadline_and_the_end_of_the_output_end_the_wait() -> None:
    p = _start(AT_ONCE)
    try:
        seen, line = read_until(p, lambda text: "never" in text, 1)
        assert line is None and "LAB-IS-UP" in seen
    finally:
        p.kill()
        p.communicate()
    done = _start("print('one'); print('last, no newline', end='')")
    seen, line = read_until(done, lambda text: text.startswith("last"), 20)
    assert line == "last, no newline" and seen.startswith("one\n")
    done.wait()
    gone = _start("print('one')")
    assert read_until(gone, lambda text: "two" in text, 20) == ("one\n", None)
    gone.wait()
