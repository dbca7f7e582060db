"""Study cubicplus's notes: our numbers per level and the slow-start model, and no verdict among them."""

from typing import Any

import pytest

from expts import cubicplus
from ground.trials import Row
from netrepro.studykit import stand_in
from netrepro.studykit.spec import Figure

VERDICT_WORDS = ("agrees", "differs", "holds", "noise", "verdict")


def fig(name: str) -> Figure:
    return next(f for f in cubicplus.FIGURES if f.name == name)


def rows(f: Figure, values: dict[tuple[str, Any], list[float]], **extra: str) -> list[Row]:
    return [
        Row({"series": label, f.x: str(level), "status": "ok", f.y: str(v), **extra})
        for (label, level), vs in values.items()
        for v in vs
    ]


def no_verdict(notes: list[str]) -> bool:
    return not any(word in note.lower() for note in notes for word in VERDICT_WORDS)


def test_loss_notes_give_the_means_and_cubic_plus_gain_in_throughput_either_metric() -> None:
    f = fig("fig3")
    values = {(cubicplus.CUBIC.label, "6%"): [1.9, 2.0, 2.1], (cubicplus.PLUS.label, "6%"): [3.9, 4.0, 4.1]}
    notes = cubicplus.annotate_loss(f, [], rows(f, values), None)
    assert len(notes) == 1 and notes[0].startswith("at 6% loss, mean throughput_mbit")
    assert "CUBIC 2 +/- 0.058" in notes[0] and notes[0].endswith("CUBIC+ +100 % in throughput"), notes
    plt = fig("fig6")
    faster = {
        (cubicplus.CUBIC.label, "8%"): [900.0, 1000.0, 1100.0],
        (cubicplus.PLUS.label, "8%"): [450.0, 500.0, 550.0],
    }
    notes = cubicplus.annotate_loss(plt, [], rows(plt, faster), None)
    assert notes[0].endswith("CUBIC+ +100 % in throughput"), notes  # half the PLT: twice the throughput
    assert no_verdict(notes)
    # with the BPF control beside: the gain split into the implementation's part and the algorithm's
    controlled = {**faster, (cubicplus.CUBIC_BPF.label, "8%"): [720.0, 800.0, 880.0]}
    notes = cubicplus.annotate_loss(plt, [], rows(plt, controlled), None)
    assert (
        "of which the implementation (CUBIC as BPF, 800 +/- 46, n = 3, against the kernel's) +25 % and the "
        "algorithm (CUBIC+ against CUBIC as BPF) +60 %; CUBIC as BPF against the kernel's CUBIC in "
        "page_load_time_ms: ratio 0.8 [0.637, 1], n = 3, 3: not shown within 5 %"
    ) in notes[0], notes


def test_rtt_notes_say_how_far_apart_the_variants_lie() -> None:
    f = fig("fig9")
    means = ((cubicplus.CUBIC, 30.0), (cubicplus.PLUS, 29.0), (cubicplus.PLUS_K, 27.0))
    values = {(s.label, "200ms"): [y, y] for s, y in means}
    notes = cubicplus.annotate_rtt(f, [], rows(f, values), None)
    assert len(notes) == 1 and notes[0].endswith("they span 10.0 %"), notes
    assert no_verdict(notes)


def test_page_rounds() -> None:
    # 104 segments of 1448 bytes: IW 3 needs 3+6+12+24+48 = 93 < 104 after five rounds, so six
    assert [cubicplus.page_rounds(150_000, w) for w in (3, 10, 21, 32)] == [6, 4, 3, 3]
    assert cubicplus.page_rounds(1_000, 10) == 1


def test_iw_notes_set_cubic_beside_the_slow_start_model() -> None:
    f = fig("fig10")
    values = {(cubicplus.CUBIC.label, 3): [10.0]}
    r = rows(f, values, page_load_time_ms="130", bytes="150000")
    low, high = cubicplus.page_load_band(150_000, 3, f)
    assert (low, high) == pytest.approx((120.0, 132.0))  # six rounds of 20 ms; 12 ms on the wire at 100 Mbit/s
    notes = cubicplus.annotate_iw(f, [], r, None)
    assert notes == [
        "IW 3: CUBIC loads the page in 130 ms; slow start needs 6 round trips, so the model says 120..132 ms"
    ]


def test_reno_notes_give_plt_by_r_and_where_it_rises_with_r() -> None:
    f = fig("fig12")
    small, middle, large = (cubicplus.RENO[i].label for i in (0, 2, -1))
    values = {
        (small, "2%"): [9000.0, 9100.0, 8900.0],
        (large, "2%"): [7000.0, 7100.0, 6900.0],
        (small, "6%"): [16000.0, 16200.0, 15800.0],
        (middle, "6%"): [17000.0, 17200.0, 16800.0],
        (large, "6%"): [19000.0, 19200.0, 18800.0],
        (cubicplus.RENO_KERNEL.label, "6%"): [20000.0, 20200.0, 19800.0],  # the kernel's, beside: not an r
    }
    notes = cubicplus.annotate_reno(f, [], rows(f, values), None)
    assert notes[0] == "at 2% loss, mean PLT (s) by r: r=0.5 9.00 +/- 0.06, r=0.9 7.00 +/- 0.06", notes
    assert notes[1] == (
        "at 6% loss, mean PLT (s) by r: r=0.5 16.00 +/- 0.12, r=0.7 17.00 +/- 0.12, r=0.9 19.00 +/- 0.12; the "
        "kernel's Reno 20.00 +/- 0.12 (n = 3): r = 0.5 as BPF -20 % in PLT against it (the implementation), "
        "ratio 0.8 [0.779, 0.821], n = 3, 3: outside 5 % (two one-sided tests, p = 1)"
    ), notes
    assert notes[-1] == "mean PLT rises with r at every step at: 6% loss"
    assert no_verdict(notes)
    assert cubicplus.annotate_reno(f, [], [], None) == ["no level has a successful trial"]


def test_a_port_stands_in_for_the_kernels_algorithm_only_within_five_percent() -> None:
    """The kept trials of a port against the kernel's own algorithm: equivalent within 5 % where the
    interval of their ratio lies inside [1/1.05, 1.05], outside where it lies wholly beyond, neither shown
    where it straddles an edge; nothing said with fewer than two trials a side."""
    f = fig("fig12")
    port, kernel = cubicplus.RENO[0].label, cubicplus.RENO_KERNEL.label

    def said(port_ms: list[float], kernel_ms: list[float]) -> str:
        values = {(port, "2%"): port_ms, (kernel, "2%"): kernel_ms}
        return stand_in.against_kernel(f, rows(f, values), port, kernel, "2%")

    tight = [7400.0, 7450.0, 7500.0, 7550.0, 7600.0] * 2
    assert ": within 5 %" in said(tight, [x * 1.01 for x in tight])
    assert ": outside 5 %" in said(tight, [x * 1.2 for x in tight])
    assert ": not shown within 5 %" in said([6000.0, 9000.0, 7500.0], [7500.0, 7600.0, 7400.0])
    assert said([7500.0], tight) == ""
