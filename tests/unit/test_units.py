"""Unit parsing: typed values in, clear refusals naming the option out."""

import pytest

from ground.path import FRAME, MSS, PathSpec
from ground.units import (
    Duration,
    Probability,
    QuantityError,
    Queue,
    Rate,
    parse_duration,
    parse_probability,
    parse_queue,
    parse_rate,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("100ms", 0.1),
        ("0.5s", 0.5),
        ("250us", 250e-6),
        ("3000ms", 3.0),
        ("0ms", 0.0),
        ("1e2ms", 0.1),
        (" 20 ms ", 0.02),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text).seconds == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "bps"),
    [("3mbit", 3e6), ("56kbit", 56e3), ("56k", 56e3), ("1gbit", 1e9), ("0.008mbit", 8e3), ("100Mbit", 100e6)],
)
def test_rates(text: str, bps: float) -> None:
    assert parse_rate(text).bps == pytest.approx(bps)


@pytest.mark.parametrize(("text", "fraction"), [("2%", 0.02), ("0.02", 0.02), ("0%", 0.0), ("0.1%", 0.001), (0.5, 0.5)])
def test_probabilities(text: str | float, fraction: float) -> None:
    assert parse_probability(text).fraction == pytest.approx(fraction)


def test_queues() -> None:
    assert parse_queue("20p") == Queue(packets=20)
    assert parse_queue("30kb") == Queue(bytes=30 * 1024)
    assert parse_queue("1514b") == Queue(bytes=1514)


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("rtt", "-5ms", "--rtt '-5ms'"),
        ("rtt", "10parsecs", "unit must be one of us, ms, s"),
        ("rtt", "100", "unit must be"),
        ("rtt", "11s", "allowed range is 0ms to 10s"),
        ("rate", "0", "--rate '0'"),
        ("rate", "0mbit", "allowed range is 1kbit to 10gbit"),
        ("rate", "3mbps", "unit must be one of bit"),
        ("loss", "150%", "allowed range is 0% to under 100%"),
        ("loss", "100%", "allowed range"),
        ("loss", "2", "did you mean 2%?"),
        ("loss", "-1%", "--loss '-1%'"),
        ("queue", "0p", "allowed range is 1p"),
        ("queue", "2.5p", "whole packets"),
        ("queue", "100b", "one full frame"),
        ("queue", "30", "unit must be p"),
        ("mtu", "100", "allowed range is 576 to 9000 bytes"),
        ("mtu", "9001", "allowed range is 576 to 9000 bytes"),
        ("mtu", "3500b", "a whole number of bytes"),
        ("mtu", "jumbo", "a whole number of bytes"),
    ],
)
def test_bad_values_are_refused_naming_the_option(option: str, value: str, needle: str) -> None:
    with pytest.raises(QuantityError) as err:
        PathSpec.parse(**{option: value})
    assert f"--{option}" in str(err.value)
    assert needle in str(err.value)


def test_nan_and_inf_are_refused() -> None:
    for text in ("nanms", "infms", "1e999ms"):
        with pytest.raises(QuantityError):
            parse_duration(text)


def test_path_defaults_and_derived_values() -> None:
    path = PathSpec.parse(rtt="100ms", rate="3mbit")
    assert path.rate_up == path.rate_down == Rate(3e6)
    assert path.one_way_delay == Duration(0.05)
    assert path.ideal_goodput_down.bps == pytest.approx(3e6 * 1448 / 1514)
    assert path.bdp_bytes == 37500
    assert path.queue == Queue(packets=1000)
    lossy = PathSpec.parse(loss="2%", loss_up="1%")
    assert lossy.without_loss().loss_down == lossy.without_loss().loss_up == Probability(0.0)
    assert PathSpec.parse(rate="10mbit", rate_up="1mbit").rate_up == Rate(1e6)


def test_str_round_trips() -> None:
    for text in ("100ms", "3s", "0.25ms"):
        assert parse_duration(str(parse_duration(text))) == parse_duration(text)
    for text in ("3mbit", "56kbit", "1gbit", "1500bit"):
        assert parse_rate(str(parse_rate(text))) == parse_rate(text)


def test_the_mtu_is_a_path_parameter() -> None:
    path = PathSpec.parse(rate="10mbit", mtu=3500)
    assert PathSpec.parse(rate="10mbit", mtu="3500") == path
    assert (path.mtu, path.mss, path.frame) == (3500, 3448, 3514)
    assert path.ideal_goodput_down.bps == pytest.approx(10e6 * 3448 / 3514)
    ethernet = PathSpec.parse()
    assert (ethernet.mtu, ethernet.mss, ethernet.frame) == (1500, MSS, FRAME) == (1500, 1448, 1514)
    assert PathSpec.parse(mtu=576).mss == 524 and PathSpec.parse(mtu=9000).frame == 9014


def test_an_mtu_of_1500_leaves_the_paths_records_as_they_were() -> None:
    ethernet = PathSpec.parse(rtt="100ms", rate="3mbit")
    assert "mtu" not in ethernet.describe() and "MTU" not in str(ethernet)
    jumbo = PathSpec.parse(rtt="100ms", rate="3mbit", mtu=3500)
    assert jumbo.describe() == {**ethernet.describe(), "mtu": 3500}
    assert str(jumbo) == f"{ethernet}, MTU 3500"


def test_jitter_is_recorded_only_where_set() -> None:
    steady = PathSpec.parse(rtt="200ms", rate="2mbit")
    noisy = PathSpec.parse(rtt="200ms", rate="2mbit", jitter="3ms")
    assert steady.jitter == Duration(0) and "jitter_ms" not in steady.describe()
    assert noisy.describe() == {**steady.describe(), "jitter_ms": 3.0}
    assert str(noisy) == f"{steady}, jitter +-3ms"
    with pytest.raises(QuantityError, match="--jitter '2s'"):
        PathSpec.parse(jitter="2s")


def test_a_byte_buffer_must_hold_one_full_frame_of_the_mtu() -> None:
    assert PathSpec.parse(queue="3514b", mtu=3500).queue == Queue(bytes=3514)
    with pytest.raises(QuantityError) as err:
        PathSpec.parse(queue="2000b", mtu=3500)
    assert "--queue '2000b'" in str(err.value) and "3514b" in str(err.value)
    with pytest.raises(QuantityError, match="--mtu"):
        PathSpec.parse(mtu=True)  # a TOML `true` is no MTU
