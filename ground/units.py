"""Typed quantities (delay, rate, size, probability), parsed once at the edge.

Every value a user or a figure spec gives ("100ms", "3mbit", "2%", "30kb",
"20p") becomes one of these types here; nothing deeper sees a string.  A bad
value raises `QuantityError` naming the option and the allowed range.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ground.errors import UserError

__all__ = [
    "Duration",
    "Probability",
    "QuantityError",
    "Queue",
    "Rate",
    "parse_duration",
    "parse_probability",
    "parse_queue",
    "parse_rate",
]


class QuantityError(UserError, ValueError):
    """A value that does not parse, or lies outside its allowed range."""

    def __init__(self, option: str, value: object, why: str) -> None:
        super().__init__(f"{option} {value!r}: {why}")
        self.option = option
        self.value = value
        self.why = why


_NUMBER = r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:e([+-]?[0-9]+))?"


def _split(option: str, text: str, what: str) -> tuple[float, str]:
    """Split "12.5ms" into (12.5, "ms"); refuse signs, NaN and trailing junk."""
    m = re.fullmatch(rf"\s*{_NUMBER}\s*([a-zA-Z%]*)\s*", str(text))
    if m is None:
        raise QuantityError(option, text, f"expected {what}")
    mantissa, exponent, unit = m.groups()
    try:
        value = float(mantissa) * (10.0 ** int(exponent) if exponent else 1.0)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise QuantityError(option, text, f"expected {what}")
    return value, unit


@dataclass(frozen=True, order=True)
class Duration:
    """A time interval, held in seconds."""

    seconds: float

    @property
    def ms(self) -> float:
        return self.seconds * 1e3

    @property
    def us(self) -> int:
        return round(self.seconds * 1e6)

    def __str__(self) -> str:
        if self.seconds >= 1 and self.seconds == int(self.seconds):
            return f"{int(self.seconds)}s"
        return f"{self.ms:g}ms"


@dataclass(frozen=True, order=True)
class Rate:
    """A bit rate, held in bit/s."""

    bps: float

    @property
    def mbps(self) -> float:
        return self.bps / 1e6

    def __str__(self) -> str:
        for scale, unit in ((1e9, "gbit"), (1e6, "mbit"), (1e3, "kbit")):
            if self.bps >= scale:
                return f"{self.bps / scale:g}{unit}"
        return f"{self.bps:g}bit"


@dataclass(frozen=True)
class Probability:
    """A per-packet probability (loss), held as a fraction in [0, 1)."""

    fraction: float

    @property
    def percent(self) -> float:
        return self.fraction * 100

    def __str__(self) -> str:
        return f"{self.percent:g}%"


@dataclass(frozen=True)
class Queue:
    """A bottleneck buffer, in packets or in bytes (exactly one is set)."""

    packets: int | None = None
    bytes: int | None = None

    def __post_init__(self) -> None:
        if (self.packets is None) == (self.bytes is None):
            raise ValueError("a Queue is either packets or bytes")

    def __str__(self) -> str:
        return f"{self.packets}p" if self.packets is not None else f"{self.bytes}b"


_DURATION_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
# tc's and iperf's spelling: k, m and g are powers of ten of *bits*.
_RATE_UNITS = {
    "bit": 1.0,
    "kbit": 1e3,
    "k": 1e3,
    "mbit": 1e6,
    "m": 1e6,
    "gbit": 1e9,
    "g": 1e9,
}
# tc's spelling for sizes: kb and mb are 1024 and 1024**2 bytes.
_SIZE_UNITS = {"b": 1, "kb": 1024, "mb": 1024 * 1024}


def parse_duration(
    text: str | Duration,
    option: str = "--rtt",
    low: Duration = Duration(0.0),
    high: Duration = Duration(10.0),
) -> Duration:
    """Parse "100ms", "0.1s" or "250us"; a unit is required."""
    if isinstance(text, Duration):
        value = text
    else:
        number, unit = _split(option, text, "a time such as 100ms, 0.5s or 250us")
        if unit.lower() not in _DURATION_UNITS:
            raise QuantityError(option, text, "unit must be one of us, ms, s")
        value = Duration(number * _DURATION_UNITS[unit.lower()])
    if not low <= value <= high:
        raise QuantityError(option, text, f"allowed range is {low} to {high}")
    return value


def parse_rate(
    text: str | Rate,
    option: str = "--rate",
    low: Rate = Rate(1e3),
    high: Rate = Rate(10e9),
) -> Rate:
    """Parse "3mbit", "56kbit", "56k" or "1gbit" (bits per second)."""
    if isinstance(text, Rate):
        value = text
    else:
        number, unit = _split(option, text, "a rate such as 3mbit, 56kbit or 1gbit")
        if unit.lower() not in _RATE_UNITS:
            raise QuantityError(option, text, "unit must be one of bit, kbit, mbit, gbit (or k, m, g)")
        value = Rate(number * _RATE_UNITS[unit.lower()])
    if not low <= value <= high:
        raise QuantityError(option, text, f"allowed range is {low} to {high}")
    return value


def parse_probability(text: str | float | Probability, option: str = "--loss") -> Probability:
    """Parse "2%" or a fraction "0.02"; the allowed range is 0 to under 100 %."""
    if isinstance(text, Probability):
        value = text.fraction
    elif isinstance(text, (int, float)):
        value = float(text)
    else:
        number, unit = _split(option, text, "a percentage such as 2% or a fraction such as 0.02")
        if unit == "%":
            value = number / 100
        elif unit == "":
            if number > 1:
                raise QuantityError(option, text, f"a bare number is a fraction; did you mean {number:g}%?")
            value = number
        else:
            raise QuantityError(option, text, "give a percentage (2%) or a fraction (0.02)")
    if not 0 <= value < 1:
        raise QuantityError(option, text, "allowed range is 0% to under 100%")
    return Probability(value)


def parse_queue(text: str | Queue, option: str = "--queue") -> Queue:
    """Parse "20p" (packets) or "30kb", "1500b", "1mb" (bytes, tc's 1024 multiples)."""
    if isinstance(text, Queue):
        return text
    number, unit = _split(option, text, "a buffer such as 20p (packets) or 30kb (bytes)")
    unit = unit.lower()
    if unit == "p":
        if number != int(number) or not 1 <= number <= 100_000:
            raise QuantityError(option, text, "allowed range is 1p to 100000p, whole packets")
        return Queue(packets=int(number))
    if unit not in _SIZE_UNITS:
        raise QuantityError(option, text, "unit must be p (packets) or b, kb, mb (bytes)")
    size = int(number * _SIZE_UNITS[unit])
    if not 1514 <= size <= 1024**3:
        raise QuantityError(option, text, "allowed range is 1514b (one full frame) to 1024mb")
    return Queue(bytes=size)


def numeric(level: object) -> float:
    """A level as a number (on a figure's x axis, in a trend's slope): ms for times, Mbit/s for rates, % for
    loss; a plain number as it is."""
    if isinstance(level, Duration):
        return level.ms
    if isinstance(level, Rate):
        return level.mbps
    if isinstance(level, Probability):
        return level.percent
    if isinstance(level, (int, float)):
        return float(level)
    text = str(level)
    try:
        return parse_duration(text).ms
    except ValueError:
        pass
    try:
        return parse_rate(text).mbps
    except ValueError:
        pass
    try:
        return parse_probability(text).percent
    except ValueError:
        return float(text)
