"""The keys a trial's parameters may have, each declared once, and the check of a trial against them.

A trial's parameters are one flat mapping, and every key belongs to what
consumes it: the path (`rtt`, `rate`, ...: ground.path parses them), the
hosts' TCP settings (`cc`, `initcwnd`, ...: Session.apply_hosts), a netrepro
congestion-control variant's parameters (`n`, `beta`, `r`, ..., or all of
them in `cc_params`: kmod.loader), and the workload (`protocol`, `page`,
...: each workload in netrepro.runner.workloads declares its own).  Each
`Key` says what values it allows and why one is not (`Key.problem`), and
turns command-line text into its type (`Key.parse`); netrepro.studykit.trial
checks a setting against them and reads it into a typed trial.
Congestion-control names are the preflight's to check: what this kernel
offers depends on the machine.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ground.path import DEFAULT_MTU, DEFAULT_QUEUE, DROP_TAIL, MAX_MTU, MIN_MTU, QDISCS
from ground.units import Duration, QuantityError, parse_duration, parse_probability, parse_queue, parse_rate
from kmod import loader
from netrepro.studykit import variation
from topologies.topology import MAX_PAIRS

# Keys whose value is a size built in memory whole (the download's object: servers.content makes it in one
# buffer before writing it): bounded by what this machine can hold, MEMORY_CEILING or a quarter of the
# memory it has available, whichever is smaller.
IN_MEMORY = ("object_bytes",)
MEMORY_CEILING = 1 << 30
MEMINFO = Path("/proc/meminfo")


def memory_available() -> int | None:
    """MemAvailable (/proc/meminfo), bytes; None where it cannot be read."""
    try:
        for line in MEMINFO.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == "MemAvailable":
                return int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


MEMORY_RULE = "the smaller of 1 GiB and a quarter of this machine's available memory"


def memory_limit() -> tuple[int, str]:
    """The most bytes a value built in memory may take here (MEMORY_RULE), and the rule with its numbers."""
    available = memory_available()
    if available is None:
        return MEMORY_CEILING, "1 GiB (this machine's available memory unknown)"
    return min(MEMORY_CEILING, available // 4), f"{MEMORY_RULE}, {_bytes_text(available)}"


def _bytes_text(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


@dataclass(frozen=True)
class Key:
    """One parameter a consumer takes: its type, what values are allowed, what it means."""

    name: str
    kind: type  # int, float, str or dict
    help: str
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    # Text with a form of its own: a parser (ValueError says why not) whose result, as text, is the
    # normal form (3000kbit is 3mbit), and how the form is described.
    form: tuple[Callable[[str], object], str] | None = None
    # What a trial (or `shell`/`check`) without the key gets, as it would be written; None: none of its
    # own (rate_up: the same as rate; a workload's object_bytes: the figure must give it).
    default: str | None = None

    def typed(self, value: Any) -> Any:
        """A value of this key (as a figure, a study file or --set gives it) in the key's own type."""
        if self.kind is int and not isinstance(value, bool):
            return int(value)
        if self.kind is float:
            return float(value)
        if self.kind is str:
            return str(value)
        return value

    @property
    def option(self) -> str:
        """The key as a command-line option: --rate-up."""
        return "--" + self.name.replace("_", "-")

    def allowed(self, here: bool = True) -> str:
        """What values it takes; `here`: on this machine (a value built in memory is bounded by what this
        machine has), else the rule alone, as the docs give it."""
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.form is not None:
            return self.form[1]
        kind = {int: "a whole number", float: "a number", str: "text", dict: "a table of KEY = VALUE"}[self.kind]
        if self.low is not None and self.high is not None:
            if self.name in IN_MEMORY:
                if not here:
                    return f"{kind} from {int(self.low)} to {MEMORY_RULE} (built in memory, whole)"
                high = min(int(self.high), memory_limit()[0])
                return f"{kind} from {int(self.low)} to {high} (built in memory, whole: {MEMORY_RULE})"
            if self.kind is int:
                return f"{kind} from {int(self.low)} to {int(self.high)}"
            return f"{kind} from {self.low:g} to {self.high:g}"
        return kind

    def problem(self, value: Any) -> str | None:
        """Why `value` is not allowed for this key, or None."""
        if self.form is not None:
            try:
                self.form[0](str(value))
            except ValueError as e:
                return e.why if isinstance(e, QuantityError) else str(e)
            return None
        if self.kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            return f"{self.allowed()}, not {value!r}"
        if self.kind is float and (isinstance(value, bool) or not isinstance(value, int | float)):
            return f"{self.allowed()}, not {value!r}"
        if self.kind in (str, dict) and not isinstance(value, self.kind):
            return f"{self.allowed()}, not {value!r}"
        if self.choices and value not in self.choices:
            return self.allowed()
        if self.low is not None and self.high is not None and not self.low <= value <= self.high:
            return self.allowed()
        if self.name in IN_MEMORY:
            limit, why = memory_limit()
            if value > limit:
                return f"at most {limit} bytes here ({_bytes_text(limit)}: built in memory, whole; the limit is {why})"
        return None

    def parse(self, text: str) -> Any:
        """Command-line text as this key's value, normalized (3000kbit is 3mbit); ValueError says why not."""
        if self.form is not None:
            try:
                value: Any = str(self.form[0](text))
            except ValueError as e:
                raise ValueError(e.why if isinstance(e, QuantityError) else str(e)) from None
        elif self.kind is int:
            try:
                value = int(text)
            except ValueError:
                raise ValueError(self.allowed()) from None
        elif self.kind is float:
            try:
                value = float(text)
            except ValueError:
                raise ValueError(self.allowed()) from None
        elif self.kind is dict:
            raise ValueError("a table: give it in a figure or study file, or its keys one by one")
        else:
            value = text
        why = self.problem(value)
        if why:
            raise ValueError(why)
        return value


# The path's keys, parsed by ground.units and ground.path (their ranges are there).
TIME = (parse_duration, "a time, e.g. 100ms (0 to 10s)")
RATE = (parse_rate, "a rate, e.g. 3mbit (1kbit to 10gbit)")
LOSS = (parse_probability, "a loss rate, e.g. 2% (0% to under 100%)")
BUFFER = (parse_queue, "a buffer, e.g. 100p (packets) or 30kb (bytes)")
JITTER = (functools.partial(parse_duration, option="jitter", high=Duration(1.0)), "a time, e.g. 3ms (0 to 1s)")
PATH_PARAMS = (
    Key("rtt", str, "round-trip time of the path, split evenly over the two directions", form=TIME, default="20ms"),
    Key(
        "rate",
        str,
        "bottleneck rate, server to client (and client to server, unless rate_up)",
        form=RATE,
        default="100mbit",
    ),
    Key("rate_up", str, "bottleneck rate, client to server", form=RATE),
    Key("loss", str, "random loss, server to client (the data direction)", form=LOSS, default="0%"),
    Key("loss_up", str, "random loss, client to server", form=LOSS, default="0%"),
    Key("queue", str, "the bottleneck's buffer", form=BUFFER, default=str(DEFAULT_QUEUE)),
    Key(
        "jitter",
        str,
        "each emulated link direction's delay drawn uniformly from its delay +- this, packets kept in order "
        "(the delay line's own jitter; netem's in its rate form)",
        form=JITTER,
        default="0ms",
    ),
    Key(
        "qdisc",
        str,
        "the bottleneck buffer's discipline, the buffer its limit: pfifo (drop-tail; bfifo for a buffer in bytes), "
        "or an AQM where the kernel has it (the stock-kernel lane, run.sh --vm, has them all)",
        choices=QDISCS,
        default=DROP_TAIL,
    ),
    Key(
        "mtu",
        int,
        "the links' MTU, bytes: a full TCP segment is MTU - 52 bytes of payload, MTU + 14 on the wire",
        low=MIN_MTU,
        high=MAX_MTU,
        default=str(DEFAULT_MTU),
    ),
)
# The path's keys, by name: what a trial's parameters give its lab (spec.path_params); ground.path's
# PathSpec.parse takes exactly these, with these defaults (tests/unit/test_params.py holds them equal).
PATH_KEYS = tuple(k.name for k in PATH_PARAMS)
HOST_PARAMS = (
    Key("cc", str, "congestion control of both hosts: a kernel one or a netrepro variant (the preflight checks it)"),
    Key("initcwnd", int, "the server's initial congestion window, segments (ip route initcwnd)", low=1, high=1024),
    Key("slow_start_after_idle", int, "net.ipv4.tcp_slow_start_after_idle on both hosts", choices=(0, 1)),
    Key("receive_buffer", int, "the client's receive-buffer ceiling, bytes (tcp_rmem max)", low=4096, high=2**31 - 1),
    Key(
        "pacer",
        str,
        "what paces the server's sending: tcp (TCP's own pacing, asked for by the congestion control: newcwv's "
        "pacing=1), fq (the fq qdisc on the server's egress; needs sch_fq), auto (fq where the kernel has it)",
        choices=("tcp", "fq", "auto"),
    ),
)
# The topology's size, as a trial may set it (a factor or a series): the figure's topology otherwise.
TOPOLOGY_PARAMS = (
    Key(
        "pairs",
        int,
        "client/server pairs of the figure's dumbbell (trial.trial_topology; its topology's own count if not given)",
        low=1,
        high=MAX_PAIRS,
    ),
)
TOPOLOGY_KEYS = tuple(k.name for k in TOPOLOGY_PARAMS)
SERIES_KEY = Key("series", str, "the series' label (set by the figure)")
VARIATION_KEY = Key(
    variation.KEY,
    str,
    "what the path varies from trial to trial: study (the study's declared jitter, docs/studies) or none (the "
    "emulator without variation: each trial's start phase alone)",
    choices=variation.CHOICES,
    default=variation.DECLARED,
)


def variant_keys() -> dict[str, Key]:
    """The variants' and ports' parameters, by name (a name two algorithms share takes the wider range)."""
    keys: dict[str, Key] = {"cc_params": Key("cc_params", dict, "the algorithm's parameters as one table")}
    for variant in loader.ALGORITHMS.values():
        for p in variant.params:
            old = keys.get(p.name)
            low = min(p.low, old.low) if old is not None and old.low is not None else p.low
            high = max(p.high, old.high) if old is not None and old.high is not None else p.high
            owner = f"the port {variant.name}" if variant.port else f"netrepro's {variant.name}"
            keys[p.name] = Key(p.name, int, f"a parameter of {owner} ({p.unit})", low=low, high=high)
    return keys


def trial_keys(workload_keys: Iterable[Key]) -> dict[str, Key]:
    """Every key a trial of a workload may have."""
    keys = {k.name: k for k in (*PATH_PARAMS, *HOST_PARAMS, *TOPOLOGY_PARAMS, SERIES_KEY, VARIATION_KEY)}
    keys.update(variant_keys())
    keys.update({k.name: k for k in workload_keys})
    return keys
