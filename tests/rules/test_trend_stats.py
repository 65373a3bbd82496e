"""The robust statistics the trend rules stand on: noise that a trend does not inflate, a window that
grows with the run within its bounds, a change point that one outlier cannot move, and episodes that
keep telling the moment they began."""

from __future__ import annotations

import math
import random

from trainwatch.model import Finding
from trainwatch.rules.stats import Episodes, curve_sigma, cusum_onset, diff_sigma, mad_sigma, scaled_window
from trainwatch.store import Point


def test_diff_sigma_measures_noise_not_trend():
    rnd = random.Random(1)
    noisy = [rnd.gauss(0, 0.5) for _ in range(400)]
    trend = [10 - 0.05 * i + v for i, v in enumerate(noisy)]  # a steep fall under the same noise
    assert 0.4 < diff_sigma(noisy) < 0.6
    assert 0.4 < diff_sigma(trend) < 0.65
    assert mad_sigma(trend) > 3  # spread around the median counts the fall as noise
    assert math.isnan(diff_sigma([1.0, 2.0]))


def test_curve_sigma_ignores_the_bend_of_a_smooth_u():
    u = [5.3, 5.01, 4.95, 5.05, 5.237, 5.496, 5.766]
    assert curve_sigma(u) < 0.06  # a clean U: the bend is signal
    rnd = random.Random(2)
    assert curve_sigma([1 + rnd.gauss(0, 0.1) for _ in range(40)]) > 0.06
    assert math.isnan(curve_sigma([1.0, 2.0, 3.0, 4.0]))


def test_scaled_window_grows_with_the_run_within_bounds():
    assert [scaled_window(n, 0.33, 8, 30) for n in (3, 10, 30, 60, 200, 10_000)] == [3, 8, 9, 19, 30, 30]


def _pts(values: list[float]) -> list[Point]:
    return [Point(i + 1, v, None, i + 1) for i, v in enumerate(values)]


def test_cusum_onset_finds_the_start_of_a_sustained_rise():
    rnd = random.Random(3)
    vals = [5 + rnd.gauss(0, 0.3) for _ in range(40)] + [8 + rnd.gauss(0, 0.3) for _ in range(20)]
    assert cusum_onset(_pts(vals), ref=6.5, clip=1.0).step == 41
    vals[10] = 50.0  # one outlier long before the rise does not move it
    assert cusum_onset(_pts(vals), ref=6.5, clip=1.0).step == 41
    assert cusum_onset(_pts([5.0] * 10), ref=6.5, clip=1.0) is None  # no rise, no onset


def test_episodes_repeat_the_opening_moment_with_the_latest_values_apart():
    eps = Episodes()
    f = Finding(message="began at step 10", step=12, began_step=10, evidence={"value": 3.0, "step": 10})
    first = eps.open("run.log", f, 4.0, 12)
    assert first.step == 12 and first.evidence == {"value": 3.0, "step": 10, "last_value": 4.0, "last_step": 12}
    again = eps.repeat("run.log", 9.0, 30)
    assert again.message == "began at step 10" and again.began_step == 10 and again.step is None
    assert again.evidence["step"] == 10 and again.evidence["last_step"] == 30 and again.evidence["last_value"] == 9.0
    assert f.evidence == {"value": 3.0, "step": 10}  # the stored opening finding is never changed
    eps.close("run.log")
    assert eps.repeat("run.log", 1.0, 31) is None
