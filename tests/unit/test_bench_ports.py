"""bench ports' judgement of two implementations' backoffs: the noise of a difference of medians."""

import math

from netrepro.lanes import bench


def test_flows_that_disagree_with_each_other_make_the_difference_noisier() -> None:
    # ten flows a side, eight cuts each; alike: every flow cuts near 0.6; bimodal: some flows near 0.5,
    # others near 0.8 (as illinois's do under emulation, by the largest RTT sample each flow met)
    alike = [[0.6 + 0.01 * (i % 3)] * 8 for i in range(10)]
    bimodal = [[0.5 if i % 2 else 0.8] * 8 for i in range(10)]
    quiet, noisy = bench._median_diff_se(alike, alike), bench._median_diff_se(bimodal, bimodal)
    assert 0 < quiet < 0.01 and noisy > 0.1, (quiet, noisy)
    # whole flows are resampled: four times the flows, about half the noise
    spread = [[0.5 + 0.03 * i] * 8 for i in range(11)]
    few, many = bench._median_diff_se(spread, spread), bench._median_diff_se(spread * 4, spread * 4)
    assert 0.35 < many / few < 0.65, (few, many)


def test_too_few_flows_have_no_standard_error() -> None:
    assert math.isnan(bench._median_diff_se([[0.5, 0.6]], [[0.5], [0.6]]))
    assert math.isnan(bench._median_diff_se([[0.5], []], [[0.5], [0.6]]))  # a flow without cuts does not count
