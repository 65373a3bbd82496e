"""The native rolling median (trainwatch._scan.move_median, span_medians) gives bottleneck's numbers,
whatever the values: NaN, infinities of both signs, zeros of both signs, repeats, magnitudes whose sum
overflows; and the trend rules' medians are the same whichever of the two computes them."""

from __future__ import annotations

import math
import sys

import bottleneck as bn
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trainwatch.rules import rolling
from trainwatch.scan import kernels

try:
    from trainwatch import _scan  # type: ignore[attr-defined]
except ImportError:  # a checkout without the Rust toolchain: nothing native to compare
    _scan = None

pytestmark = pytest.mark.skipif(_scan is None, reason="trainwatch._scan is not built")

values = st.one_of(
    st.floats(width=64),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e308, sys.float_info.max, 5e-324]),
    st.integers(-3, 3).map(float),
)


@settings(max_examples=examples(600), deadline=None)
@given(xs=st.lists(values, max_size=300), window=st.one_of(st.integers(1, 70), st.integers(71, 300)))
def test_the_rolling_median_is_bottlenecks(xs: list[float], window: int) -> None:
    """Row for row what `bn.move_median(x, window, min_count=1)` gives; a window longer than the data
    (which bottleneck refuses) reads as the whole data's."""
    x = np.array(xs, dtype=np.float64)
    got = _scan.move_median(x, window)
    if not len(x):
        assert len(got) == 0
        return
    want = bn.move_median(x, window=min(window, len(x)), min_count=1)
    np.testing.assert_array_equal(got, want)  # NaN equals NaN, -0.0 equals 0.0
    assert got.dtype == np.float64


@settings(max_examples=examples(300), deadline=None)
@given(xs=st.lists(values, min_size=1, max_size=120),
       spans=st.lists(st.tuples(st.integers(-3, 130), st.integers(-3, 130)), max_size=12))
def test_span_medians_are_bottlenecks_at_the_spans_last_row(xs: list[float], spans: list[tuple[int, int]]) -> None:
    x = np.array(xs, dtype=np.float64)
    start = np.array([s for s, _ in spans], dtype=np.int64)
    end = np.array([e for _, e in spans], dtype=np.int64)
    got = _scan.span_medians(x, start, end)
    for g, (s, e) in zip(got.tolist(), spans):
        a, b = min(max(s, 0), len(x)), min(max(e, 0), len(x))
        want = bn.move_median(x[a:b], window=b - a, min_count=1)[-1] if b > a else math.nan
        np.testing.assert_array_equal(g, want)


def test_a_bad_call_is_refused_not_crashed() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        _scan.span_medians(np.zeros(3), np.zeros(2, dtype=np.int64), np.zeros(1, dtype=np.int64))
    with pytest.raises(OverflowError):
        _scan.move_median(np.zeros(3), -1)
    assert np.isnan(_scan.move_median(np.ones(3), 0)).all()


@settings(max_examples=examples(150), deadline=None)
@given(xs=st.lists(values, max_size=300), data=st.data(), self_=st.booleans())
def test_the_rules_medians_do_not_depend_on_which_computes_them(
        xs: list[float], data: st.DataObject, self_: bool) -> None:
    """`trailing_median` and `trailing_median_where` over windows on both sides of the extension's
    MEDIAN_WINDOW_MAX, per row, give with it what they give with bottleneck alone
    (TRAINWATCH_SCANNER=reference)."""
    x = np.array(xs, dtype=np.float64)
    top = min(2 * _scan.MEDIAN_WINDOW_MAX, 300)
    n = data.draw(st.one_of(st.integers(1, top), st.lists(st.integers(-1, top), min_size=len(xs), max_size=len(xs))
                            .map(lambda v: np.array(v, dtype=np.int64))))
    want = np.array(data.draw(st.lists(st.booleans(), min_size=len(xs), max_size=len(xs))), dtype=bool)
    few = data.draw(st.booleans())  # each wanted row's window on its own, however many rows want one
    saved, original = rolling.FEW, kernels._core
    rolling.FEW = 0 if few else saved
    try:
        native = (rolling.trailing_median(x, n, include_self=self_),
                  rolling.trailing_median_where(x, n, want, include_self=self_))
        kernels._core = lambda: None  # type: ignore[assignment]
        plain = (rolling.trailing_median(x, n, include_self=self_),
                 rolling.trailing_median_where(x, n, want, include_self=self_))
    finally:
        rolling.FEW, kernels._core = saved, original
    np.testing.assert_array_equal(native[0], plain[0])
    np.testing.assert_array_equal(native[1], plain[1])


def test_windows_around_the_limit_give_the_same_medians_either_way() -> None:
    """Each side of MEDIAN_WINDOW_MAX (256 or 64 by the CPU) and far past it, over a run long enough to
    fill every window, with gaps of NaN and infinities: the native kernel and bottleneck agree."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(1500)
    x[rng.integers(0, len(x), 200)] = np.nan
    x[rng.integers(0, len(x), 20)] = np.inf
    x[300:420] = np.nan
    top = _scan.MEDIAN_WINDOW_MAX
    for w in (2, 3, 4, 30, 63, 64, 65, top - 1, top, top + 1, 2 * top, 1000):
        np.testing.assert_array_equal(_scan.move_median(x, w), bn.move_median(x, window=w, min_count=1))
        original = kernels._core
        kernels._core = lambda: None  # type: ignore[assignment]
        try:
            plain = rolling.trailing_median(x, w)
        finally:
            kernels._core = original
        np.testing.assert_array_equal(rolling.trailing_median(x, w), plain)


@settings(max_examples=examples(600), deadline=None)
@given(xs=st.lists(values, max_size=300), window=st.one_of(st.integers(1, 12), st.integers(13, 300)),
       greatest=st.booleans())
def test_the_rolling_extremes_are_bottlenecks(xs: list[float], window: int, greatest: bool) -> None:
    """Row for row what `bn.move_min` / `bn.move_max(x, window, min_count=1)` give (the spike and speed
    rules' bounds), NaN left out, infinities and repeats included."""
    x = np.array(xs, dtype=np.float64)
    got = _scan.move_extreme(x, window, greatest)
    if not len(x):
        assert len(got) == 0
        return
    move = bn.move_max if greatest else bn.move_min
    np.testing.assert_array_equal(got, move(x, window=min(window, len(x)), min_count=1))
