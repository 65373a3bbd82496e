"""The array building blocks give, row by row, what the row-at-a-time statistics give."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trainwatch.rules import rolling
from trainwatch.rules.base import median
from trainwatch.rules.rolling import (
    restarts,
    run_lengths,
    spike_medians,
    trailing_diff_sigma,
    trailing_median,
    trailing_median_where,
    trailing_min,
    value_before,
)
from trainwatch.rules.stats import diff_sigma

floats = st.floats(-1e6, 1e6, allow_nan=False, width=32)


@settings(max_examples=examples(200), deadline=None)
@given(xs=st.lists(floats, max_size=50), n=st.integers(1, 12), self_=st.booleans())
def test_trailing_median_is_the_median_of_each_window(xs: list[float], n: int, self_: bool) -> None:
    got = trailing_median(np.array(xs), n, include_self=self_)
    for i in range(len(xs)):
        window = xs[max(0, i + 1 - n):i + 1] if self_ else xs[max(0, i - n):i]
        want = median(window) if window else math.nan
        assert (math.isnan(want) and math.isnan(got[i])) or math.isclose(got[i], want, rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=examples(200), deadline=None)
@given(xs=st.lists(floats, min_size=1, max_size=50), data=st.data())
def test_growing_windows_match_row_by_row(xs: list[float], data: st.DataObject) -> None:
    ns = np.array(data.draw(st.lists(st.integers(1, 10), min_size=len(xs), max_size=len(xs))))
    got = trailing_median(np.array(xs), ns)
    for i in range(len(xs)):
        assert math.isclose(got[i], median(xs[max(0, i + 1 - ns[i]):i + 1]), rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=examples(200), deadline=None)
@given(xs=st.lists(floats, max_size=50), n=st.integers(1, 15))
def test_trailing_diff_sigma_matches_stats(xs: list[float], n: int) -> None:
    got = trailing_diff_sigma(np.array(xs), n)
    for i in range(len(xs)):
        want = diff_sigma(xs[max(0, i + 1 - n):i + 1])
        assert (math.isnan(want) and math.isnan(got[i])) or math.isclose(got[i], want, rel_tol=1e-9, abs_tol=1e-6)


def test_run_lengths_continue_a_carried_run() -> None:
    assert run_lengths(np.array([True, True, False, True]), carried=3).tolist() == [4, 5, 0, 1]


def test_restarts_count_steps_that_go_back() -> None:
    assert restarts(np.array([5, 6, 1, 2, 0]), 4).tolist() == [0, 0, 1, 1, 2]


def test_value_before_is_causal() -> None:
    steps, vals = np.array([1, 3, 5]), np.array([10.0, 30.0, 50.0])
    got = value_before(steps, vals, np.array([0, 3, 4, 9]))
    assert np.isnan(got[0]) and got[1:].tolist() == [10.0, 30.0, 50.0]
    assert value_before(steps, vals, np.array([3]), inclusive=True).tolist() == [30.0]


@settings(max_examples=examples(100), deadline=None)
@given(pattern=st.one_of(st.lists(st.just(True), min_size=1, max_size=100),
                         st.lists(st.booleans(), min_size=1, max_size=400)), data=st.data())
def test_tail_sizes_are_how_many_points_tail_returns(pattern: list[bool], data: st.DataObject) -> None:
    """A NaN stretch longer than tail()'s scan shortens its answer; the array count says so row by row."""
    from trainwatch.rules.rolling import tail_sizes
    from trainwatch.store import Point, Series

    runs = data.draw(st.lists(st.integers(0, 300), min_size=len(pattern), max_size=len(pattern)))
    finite: list[bool] = []
    for ok, run in zip(pattern, runs):
        finite.extend([ok] * (1 + run % 40 if ok else run))
    n = data.draw(st.integers(1, 60))
    s = Series("loss", "run.log")
    want = []
    for i, ok in enumerate(finite):
        s.add(Point(i, 1.0 if ok else math.nan, None, i))
        want.append(len(s.tail(n)))
    f = np.array(finite, dtype=bool)
    got = tail_sizes(f, np.arange(len(f)), np.full(len(f), n))
    assert got.tolist() == want


def test_row_tail_carries_the_rows_the_store_holds_and_starts_afresh_for_a_new_series() -> None:
    from trainwatch.rules.rolling import RowTail
    from trainwatch.store import RECENT_POINTS

    tail, a, b = RowTail(), object(), object()
    steps, values, held = tail.extend(a, np.arange(3), np.ones(3))
    assert held == 0 and steps.tolist() == [0, 1, 2]
    steps, values, held = tail.extend(a, np.arange(3, 3 + RECENT_POINTS), np.ones(RECENT_POINTS))
    assert held == 3 and len(steps) == 3 + RECENT_POINTS
    steps, values, held = tail.extend(a, np.array([9]), np.array([2.0]))
    assert held == RECENT_POINTS and values[-1] == 2.0
    steps, values, held = tail.extend(b, np.array([0]), np.array([5.0]))
    assert held == 0 and values.tolist() == [5.0]


@settings(max_examples=examples(300), deadline=None)
@given(ema=st.floats(allow_nan=True, allow_infinity=True, width=64),
       rows=st.lists(st.tuples(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
                               st.integers(2, 10**6)), max_size=60))
def test_the_smoothing_is_the_python_loop_float_for_float(ema: float, rows: list[tuple[float, int]]) -> None:
    """`smoothed` gives, bit for bit, what the loop it stands in for gives, natively or not."""
    from trainwatch.rules import rolling
    from trainwatch.scan import kernels

    values = np.array([v for v, _ in rows], dtype=np.float64)
    windows = np.array([k for _, k in rows], dtype=np.int64)
    want, e = [], ema
    for v, k in rows:
        e = e + (v - e) * 2.0 / k
        want.append(e)
    got = rolling.smoothed(ema, values, windows)
    assert np.array_equal(got, np.array(want, dtype=np.float64), equal_nan=True)
    if kernels.native_in_use():  # and the pure-Python path, as TRAINWATCH_SCANNER=reference runs it
        original = kernels._core
        try:
            kernels._core = lambda: None  # type: ignore[assignment]
            assert np.array_equal(rolling.smoothed(ema, values, windows), got, equal_nan=True)
        finally:
            kernels._core = original


@settings(max_examples=examples(400), deadline=None)
@given(xs=st.lists(st.one_of(floats, st.sampled_from([0.0, -0.0, 1.0, 2.0, -1.0])), max_size=60), data=st.data(),
       self_=st.booleans())
def test_the_median_at_some_rows_is_the_rolling_ones_and_the_minimum_bounds_it(
        xs: list[float], data: st.DataObject, self_: bool) -> None:
    """Windows of any size per row, few rows wanted or many (the two ways it is computed): the same
    medians to the bit at the wanted rows, NaN at the others; the rolling minimum never above them."""
    x = np.array(xs)
    ns = np.array(data.draw(st.lists(st.integers(-1, 12), min_size=len(xs), max_size=len(xs))), dtype=np.int64)
    want = np.array(data.draw(st.lists(st.booleans(), min_size=len(xs), max_size=len(xs))), dtype=bool)
    few = data.draw(st.booleans())  # each wanted row's window on its own, however many rows want one
    full = trailing_median(x, ns, include_self=self_)
    saved = rolling.FEW
    rolling.FEW = 0 if few else saved
    try:
        got = trailing_median_where(x, ns, want, include_self=self_)
    finally:
        rolling.FEW = saved
    assert np.array_equal(np.where(want, full, np.nan), got, equal_nan=True)
    low = trailing_min(x, ns, include_self=self_)
    assert np.array_equal(np.isnan(low), np.isnan(full))
    assert (low[~np.isnan(full)] <= full[~np.isnan(full)]).all()


@settings(max_examples=examples(300), deadline=None)
@given(xs=st.lists(st.one_of(floats, st.sampled_from([math.nan, 0.0, 1.0, 3.0, -2.0])), max_size=60),
       data=st.data(), ratio=st.sampled_from([1.0, 2.0, 10.0, 0.5, 0.0, -1.0]))
def test_spike_medians_leave_out_only_rows_that_cannot_pass_the_test(
        xs: list[float], data: st.DataObject, ratio: float) -> None:
    """The spike rules' test over the medians left out gives what it gives over every median, whatever
    ratio a user's config sets (below 0 a larger median lowers the bar, so the minimum bounds nothing)."""
    v = np.array(xs)
    fin = np.isfinite(v)
    count = np.array(data.draw(st.lists(st.integers(0, 9), min_size=len(xs), max_size=len(xs))), dtype=np.int64)
    s = data.draw(st.integers(0, len(xs)))
    med = spike_medians(v, fin, count, s, ratio, 3)
    full = np.full(len(v), np.nan)
    full[fin] = trailing_median(v[fin], count[fin], include_self=False)

    def passes(m: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return fin[s:] & (count[s:] >= 3) & (m[s:] > 0) & (v[s:] >= ratio * m[s:] * (1 - 1e-9))

    assert passes(med).tolist() == passes(full).tolist()
    kept = ~np.isnan(med)
    assert np.array_equal(med[kept], full[kept])


def test_spike_medians_rule_out_nothing_when_the_ratio_is_below_zero() -> None:
    """A config may set a ratio below 0: then -2 is below ratio times its window's minimum (-1) yet not
    below ratio times its median (-3), so the test can pass and the minimum may leave out no row."""
    v = np.array([1.0, 3.0, 3.0, -2.0])
    med = spike_medians(v, np.isfinite(v), np.array([0, 0, 0, 3]), 3, -1.0, 3)
    assert med[3] == 3.0


@settings(max_examples=examples(200), deadline=None)
@given(xs=st.lists(floats, min_size=1, max_size=60), data=st.data(), self_=st.booleans())
def test_windows_after_rows_without_one_match_row_by_row(xs: list[float], data: st.DataObject, self_: bool) -> None:
    """A batch's look-back rows ask for no window (0 or less) and its new rows for one size, or sizes mixed
    anywhere: each row's median and least value is that of its own window, NaN where it has none."""
    m = len(xs)
    lead = data.draw(st.integers(0, m))
    w = data.draw(st.integers(1, 12))
    ns = np.array([data.draw(st.integers(-2, 0)) for _ in range(lead)] + [w] * (m - lead), dtype=np.int64)
    if data.draw(st.booleans()):  # or any sizes, none included
        ns = np.array(data.draw(st.lists(st.integers(-1, 6), min_size=m, max_size=m)), dtype=np.int64)
    x = np.array(xs)
    med, low = trailing_median(x, ns, include_self=self_), trailing_min(x, ns, include_self=self_)
    for i in range(m):
        end = i + 1 if self_ else i
        window = xs[max(0, end - int(ns[i])):end] if ns[i] > 0 else []
        if not window:
            assert math.isnan(med[i]) and math.isnan(low[i])
        else:
            assert math.isclose(med[i], median(window), rel_tol=1e-9, abs_tol=1e-9) and low[i] == min(window)


@settings(max_examples=examples(200), deadline=None)
@given(finite=st.one_of(st.lists(st.just(True), max_size=300), st.lists(st.booleans(), max_size=300)), data=st.data())
def test_before_counts_are_how_many_values_before_gives(finite: list[bool], data: st.DataObject) -> None:
    """Per row, the last n finite values before it among the `scan_reach(n)` rows before it: counted."""
    m = len(finite)
    ns = np.array(data.draw(st.lists(st.integers(-1, 40), min_size=m, max_size=m)), dtype=np.int64)
    got = rolling.before_counts(np.array(finite, dtype=bool), ns)
    for i in range(m):
        n = max(int(ns[i]), 0)
        back = finite[max(0, i - rolling.scan_reach(n)):i]
        assert got[i] == min(n, sum(back))


@settings(max_examples=examples(200), deadline=None)
@given(m=st.integers(1, 3000), data=st.data())
def test_tail_sizes_of_rows_all_finite_count_the_rows_scanned(m: int, data: st.DataObject) -> None:
    """Rows all finite, any rows held before them: as many as tail()'s scan reaches, up to n."""
    from trainwatch.rules.rolling import tail_sizes
    from trainwatch.store import RECENT_POINTS, SCAN_MIN

    at = np.arange(m)
    n = np.array(data.draw(st.lists(st.integers(0, 400), min_size=m, max_size=m)), dtype=np.int64)
    before = data.draw(st.integers(0, 5000))
    held = np.minimum(at + 1 + before, RECENT_POINTS)
    scan = np.minimum(np.maximum(SCAN_MIN, 8 * n), held)
    want = np.minimum(n, at + 1 - np.maximum(at + 1 - scan, 0))  # the finite rows in the scanned span
    assert tail_sizes(np.ones(m, dtype=bool), at, n, before).tolist() == want.tolist()
