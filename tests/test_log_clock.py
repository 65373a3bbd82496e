"""check's clock follows the log's own time: a stretch of rows at once moves it as row by row does."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from trainwatch.session import LogClock


@given(st.floats(0, 1e10), st.lists(st.one_of(st.floats(0, 1e10), st.just(math.nan)), max_size=40))
def test_seen_all_is_seen_row_by_row(start, times):
    one, many = LogClock(start), LogClock(start)
    expected = []
    for t in times:
        if t == t:
            one.seen(t)
        expected.append(one())
    got = many.seen_all(np.array(times, dtype=np.float64))
    assert got.tolist() == expected and many() == one()


@given(st.floats(-1.0, 1e10), st.lists(st.floats(-1.0, 1e10), max_size=40).map(sorted))
def test_times_in_order_are_seen_row_by_row(start: float, times: list[float]) -> None:
    """The common case, a log's times in order, has its own shortcut: the same clock, zeros' signs included."""
    one, many = LogClock(start), LogClock(start)
    expected = []
    for t in times:
        one.seen(t)
        expected.append(one())
    got = many.seen_all(np.array(times, dtype=np.float64))
    assert got.tolist() == expected and many() == one()
    assert [math.copysign(1, x) for x in got.tolist()] == [math.copysign(1, x) for x in expected]


@given(st.floats(1.0, 1e10), st.lists(st.one_of(st.floats(-1e10, 1e10), st.just(math.nan)), max_size=40))
def test_times_behind_the_clock_leave_it_where_it_is(start: float, times: list[float]) -> None:
    """A log written before the check began (its times behind the wall clock it starts from) has its own
    shortcut: every row sees the clock as it was."""
    clock = LogClock(start)
    behind = [min(t, start) if t == t else t for t in times]
    got = clock.seen_all(np.array(behind, dtype=np.float64))
    assert got.tolist() == [start] * len(behind) and clock() == start
