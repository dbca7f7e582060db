"""The loader's checks and choices, without touching the kernel."""

from pathlib import Path

import pytest

from ground import kernel
from ground.tcpprobe import ProbeSample, reductions
from kmod import loader


def test_parameters_are_checked_against_their_ranges() -> None:
    cubic_plus = loader.VARIANTS["cubic_plus"]
    assert loader.parse_params(cubic_plus, {"n": "6", "beta": 512}) == {"n": 6, "beta": 512}
    with pytest.raises(loader.CongestionControlError, match="allowed range is 1 to 10"):
        loader.parse_params(cubic_plus, {"n": "11"})
    with pytest.raises(loader.CongestionControlError, match="whole number"):
        loader.parse_params(cubic_plus, {"beta": "0.7"})
    with pytest.raises(loader.CongestionControlError, match="has no parameter 'r'"):
        loader.parse_params(cubic_plus, {"r": "500"})
    assert loader.parse_params(loader.VARIANTS["reno_beta"], {"r": "900"}) == {"r": 900}


def test_implementation_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel, "modules_supported", lambda: False)
    monkeypatch.setattr(kernel, "struct_ops_supported", lambda: True)
    assert loader.choose_impl("cubic_plus") == "bpf"
    with pytest.raises(loader.CongestionControlError, match="does not load modules"):
        loader.choose_impl("cubic_plus", "lkm")
    with pytest.raises(loader.CongestionControlError, match="choose lkm or bpf"):
        loader.choose_impl("cubic_plus", "ebpf")
    monkeypatch.setattr(kernel, "modules_supported", lambda: True)
    monkeypatch.setattr(kernel, "lockdown", lambda: "none")
    monkeypatch.setattr(Path, "exists", lambda self: True)
    assert loader.choose_impl("cubic_plus") == "lkm"
    assert loader.choose_impl("cubic_plus", "bpf") == "bpf"


def sample(t: float, cwnd: int, ssthresh: int, flow: str = "a>b") -> ProbeSample:
    return ProbeSample(t, flow, cwnd, ssthresh, 40000, 0, 0, 0)


def test_reductions_pair_the_window_before_with_the_threshold_after() -> None:
    unset = 2**31 - 1
    trace = [sample(0, 10, unset), sample(1, 100, unset), sample(2, 98, 70), sample(3, 71, 70), sample(4, 90, 70),
             sample(5, 88, 63), sample(6, 5, 5, flow="c>d"),
             # ssthresh moving with a growing window is no reduction
             sample(7, 140, 105), sample(8, 141, 105), sample(9, 142, 106)]  # fmt: skip
    assert reductions(trace) == [(100, 70), (90, 63)]
