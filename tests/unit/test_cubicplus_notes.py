"""Study cubicplus's verdicts: seed 000's findings judged on means and their standard errors."""

from typing import Any

from expts import cubicplus
from netrepro.spec import Figure


def fig(name: str) -> Figure:
    return next(f for f in cubicplus.FIGURES if f.name == name)


def rows(f: Figure, values: dict[tuple[str, str], list[float]]) -> list[dict[str, Any]]:
    return [
        {"series": label, f.x: level, "status": "ok", f.y: str(v)} for (label, level), vs in values.items() for v in vs
    ]


def test_loss_verdict_needs_cubic_plus_better_beyond_noise() -> None:
    f = fig("fig3")
    clear = {(cubicplus.CUBIC.label, "6%"): [1.9, 2.0, 2.1], (cubicplus.PLUS.label, "6%"): [3.5, 3.6, 3.7]}
    notes = cubicplus.annotate_loss(f, [], rows(f, clear), None)
    assert notes[-1].endswith("1 of 1 levels: agrees"), notes
    noisy = {(cubicplus.CUBIC.label, "6%"): [1.0, 2.0, 3.0], (cubicplus.PLUS.label, "6%"): [1.5, 2.5, 3.5]}
    notes = cubicplus.annotate_loss(f, [], rows(f, noisy), None)
    assert "within noise" in notes[0] and notes[-1].endswith("0 of 1 levels: DIFFERS"), notes


def test_loss_verdict_on_page_load_time_wants_it_lower() -> None:
    f = fig("fig6")
    faster = {
        (cubicplus.CUBIC.label, "8%"): [900.0, 1000.0, 1100.0],
        (cubicplus.PLUS.label, "8%"): [400.0, 500.0, 600.0],
    }
    assert cubicplus.annotate_loss(f, [], rows(f, faster), None)[-1].endswith("agrees")


def test_rtt_verdicts() -> None:
    large, small = fig("fig9"), fig("fig8")
    values = {
        (s.label, rtt): [y, y + 0.1, y - 0.1]
        for rtt in ("20ms", "200ms")
        for s, y in ((cubicplus.CUBIC, 30.0), (cubicplus.PLUS, 29.0), (cubicplus.PLUS_K, 28.5))
    }
    assert cubicplus.annotate_rtt(large, [], rows(large, values), None)[-1].endswith("1 of 1 added delays: agrees")
    assert cubicplus.annotate_rtt(small, [], rows(small, values), None)[-1].endswith("2 of 2 RTTs: agrees")
    values[(cubicplus.PLUS.label, "200ms")] = [40.0, 40.1, 39.9]
    assert cubicplus.annotate_rtt(large, [], rows(large, values), None)[-1].endswith("DIFFERS")
    assert cubicplus.annotate_rtt(small, [], rows(small, values), None)[-1].endswith("1 of 2 RTTs: DIFFERS")


def test_page_rounds() -> None:
    # 104 segments of 1448 bytes: IW 3 needs 3+6+12+24+48 = 93 < 104 after five rounds, so six
    assert [cubicplus.page_rounds(150_000, w) for w in (3, 10, 21, 32)] == [6, 4, 3, 3]
    assert cubicplus.page_rounds(1_000, 10) == 1


def test_small_page_verdict_is_about_a_little_gain() -> None:
    f = fig("fig5")
    little = {(cubicplus.CUBIC.label, "6%"): [7.0, 7.1, 7.2], (cubicplus.PLUS.label, "6%"): [7.5, 7.6, 7.7]}
    assert cubicplus.annotate_loss(f, [], rows(f, little), None)[-1].endswith("agrees (taking 'little' as under 20 %)")
    much = {(cubicplus.CUBIC.label, "6%"): [7.0, 7.1, 7.2], (cubicplus.PLUS.label, "6%"): [9.5, 9.6, 9.7]}
    assert "+35 %: DIFFERS" in cubicplus.annotate_loss(f, [], rows(f, much), None)[-1]


def test_reno_verdict_compares_the_ends_of_the_sweep_at_high_loss() -> None:
    f = fig("fig12")
    small, middle, large = f.series[0].label, f.series[2].label, f.series[-1].label
    values = {
        (small, "2%"): [9.0, 9.1, 8.9],  # below 6 %: noted, not judged
        (large, "2%"): [7.0, 7.1, 6.9],
        (small, "6%"): [16.0, 16.2, 15.8],
        (large, "6%"): [19.0, 19.2, 18.8],
    }
    notes = cubicplus.annotate_reno(f, [], rows(f, values), None)
    assert "at 2% loss, mean PLT (s) by r: r=0.5 0.01" in notes[0], notes
    assert notes[-1].startswith("PLT rises with r at every step at: 6% loss"), notes
    assert notes[-1].endswith("r = 0.5 faster than r = 0.9, beyond noise, at 1 of 1 levels: agrees"), notes
    # Without r = 0.5 at 8 %, that level's smallest r present is not taken for it.
    values |= {(middle, "8%"): [30.0, 30.1, 29.9], (large, "8%"): [20.0, 20.1, 19.9]}
    assert cubicplus.annotate_reno(f, [], rows(f, values), None)[-1].endswith("at 1 of 1 levels: agrees")
    values[(small, "8%")] = [25.0, 25.1, 24.9]
    assert cubicplus.annotate_reno(f, [], rows(f, values), None)[-1].endswith("at 1 of 2 levels: DIFFERS")
