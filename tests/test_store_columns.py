"""The columnar series holds exactly what the row-at-a-time one did, however its rows arrive in batches."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.rules.rowref import store_rows
from trainwatch import store
from trainwatch.scan import native
from trainwatch.scan.reference.kernels import fold_buckets as fold_buckets_reference
from trainwatch.store import Point, Series, fold_buckets

VALUES = st.one_of(st.floats(-1e6, 1e6), st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0]))


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a != a and b != b) or a == b  # exact; 0.0 and -0.0 count as the same number


def _bucket(b: store.Bucket | store_rows.Bucket) -> tuple:
    return (b.first_step, b.last_step, b.minimum, b.maximum, b.last, b.total, b.finite, b.nonfinite)


def _assert_same(col: Series, row: store_rows.Series) -> None:
    assert (col.count, col.nan_count, col.inf_count, col.bucket_size) == \
        (row.count, row.nan_count, row.inf_count, row.bucket_size)
    assert _same(col.minimum, row.minimum) and _same(col.maximum, row.maximum) and _same(col.first, row.first)
    assert [(p.step, p.value, p.line) for p in col.head] == [(p.step, p.value, p.line) for p in row.head]
    got, want = [_bucket(b) for b in col.whole_run()], [_bucket(b) for b in row.whole_run()]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert all(_same(x, y) for x, y in zip(g, w)), (g, w)
    assert [(p.step, p.value, p.time, p.line, p.step_inferred) for p in col.recent] == \
        [(p.step, p.value, p.time, p.line, p.step_inferred) for p in row.recent] or \
        all(_same(a, b) for a, b in zip(col.values(), row.values()))
    assert len(col.recent) == len(row.recent)
    for n in (1, 5, 40):
        for skip in (False, True):
            newest = row.recent[-1] if skip and row.recent else None
            assert [p.step for p in col.tail(n, skip=col.recent[-1] if newest else None)] == \
                [p.step for p in row.tail(n, skip=newest)]
            assert col.tail_values(n, skip_newest=skip) == row.tail_values(n, skip_newest=skip)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(VALUES, max_size=300), st.lists(st.integers(1, 400), max_size=20), st.integers(0, 3),
       st.lists(st.booleans(), max_size=21))
@example([float(i) for i in range(70)], [10, 10, 50], 3, [])  # the arrays move with rows not yet folded
@example([float(i) for i in range(70)], [10, 10, 50], 3, [False, True])
def test_batches_of_any_size_hold_what_rows_one_at_a_time_held(values, cuts, shrink, peeks):
    """`peeks`: the whole run is read after those batches, so the stored rows are folded into the history
    at those points as well as when the arrays move; where the folds fall changes nothing."""
    old_buckets, old_recent = store.HISTORY_BUCKETS, store.RECENT_POINTS
    store.HISTORY_BUCKETS = store_rows.HISTORY_BUCKETS = 4 << shrink  # small, so halving happens often
    try:
        col, row = Series("loss", "a.log"), store_rows.Series("loss", "a.log")
        n = len(values)
        steps = np.arange(n, dtype=np.int64) * 3
        vals = np.array(values, dtype=np.float64)
        times = np.where(np.arange(n) % 3 == 0, np.nan, np.arange(n) * 0.5)
        lines = np.arange(n, dtype=np.int64) + 7
        inferred = np.arange(n) % 5 == 0
        for i in range(n):
            t = float(times[i])
            row.add(store_rows.Point(int(steps[i]), float(vals[i]), None if t != t else t, int(lines[i]),
                                     bool(inferred[i])))
        at = 0
        for j, c in enumerate([*cuts, n]):
            hi = min(n, at + c)
            if j % 2:  # the engine's way: rows picked out of a stretch's columns, gathered in place
                col.extend_rows(np.arange(at, hi), steps, vals, lines, times, inferred)
            else:
                col.extend(steps[at:hi], vals[at:hi], lines[at:hi], times[at:hi], inferred[at:hi])
            at = hi
            if j < len(peeks) and peeks[j]:
                col.whole_run()
        _assert_same(col, row)
    finally:
        store.HISTORY_BUCKETS = store_rows.HISTORY_BUCKETS = old_buckets
        store.RECENT_POINTS = old_recent


def test_a_long_batch_keeps_the_newest_rows_and_the_whole_run():
    col, row = Series("loss", "a.log"), store_rows.Series("loss", "a.log")
    n = store.KEPT_ROWS + store.RECENT_POINTS + 17
    rng = np.random.default_rng(3)
    vals = rng.normal(size=n)
    vals[rng.integers(0, n, 40)] = np.nan
    for i in range(n):
        row.add(store_rows.Point(i, float(vals[i]), None, i))
    col.extend(np.arange(n, dtype=np.int64), vals, np.arange(n, dtype=np.int64), np.full(n, np.nan),
               np.zeros(n, dtype=bool))
    _assert_same(col, row)
    assert len(col.columns(2 * store.KEPT_ROWS)[0]) == store.KEPT_ROWS  # the newest rows, no more
    assert len(col.values()) == store.RECENT_POINTS  # the recent window is no longer for it
    s, _, _, _ = col.columns(10)
    assert s.tolist() == list(range(n - 10, n))


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(1, store.KEPT_ROWS + 300), st.lists(st.integers(1, store.ROUND_ROWS), min_size=1, max_size=6),
       st.integers(1, 3))
def test_a_series_read_up_to_a_line_is_the_series_as_it_was_then(n, cuts, per_line):
    """However far a series has moved on in a round (up to ROUND_ROWS rows), reading it up to a line gives
    the recent window a series fed only that far held: a rule judging an old row reads other series so."""
    col = Series("grad_norm", "a.log")
    steps = np.arange(n, dtype=np.int64)
    vals = np.sin(steps * 0.1)
    lines = steps // per_line + 1  # several rows may share a line
    at = 0
    for c in [*cuts, n]:
        hi = min(n, at + c)
        col.extend(steps[at:hi], vals[at:hi], lines[at:hi], np.full(hi - at, np.nan), np.zeros(hi - at, bool))
        at = hi
    for line in {int(lines[-1]), int(lines[max(0, n - store.ROUND_ROWS)]), int(lines[n // 2]), 0}:
        then = Series("grad_norm", "a.log")
        upto = int(np.searchsorted(lines, line, side="right"))
        then.extend(steps[:upto], vals[:upto], lines[:upto], np.full(upto, np.nan), np.zeros(upto, bool))
        if n - upto > store.ROUND_ROWS:
            continue  # moved on further than a round: not promised
        s, v = col.upto_line(line)
        assert s.tolist() == then.columns(store.RECENT_POINTS)[0].tolist()[-store.RECENT_POINTS:]
        assert v.tolist() == then.values()


def test_a_series_whose_line_numbers_start_again_is_read_up_to_its_newest_line():
    """A followed file truncated and written again numbers its lines from 1 in the same series: the
    rows up to a line logged since are the newest ones, not those the old numbering ended with."""
    col = Series("grad_norm", "a.log")
    old, new = np.arange(1, 3001, dtype=np.int64), np.arange(1, 11, dtype=np.int64)
    for lines in (old, new):
        col.extend(lines, lines.astype(float), lines, np.full(len(lines), np.nan), np.zeros(len(lines), bool))
    s, v = col.upto_line(10)
    assert len(s) == store.RECENT_POINTS and v[-10:].tolist() == [float(x) for x in new]


def test_points_are_built_once_and_only_when_asked_for():
    col = Series("loss", "a.log")
    col.extend(np.arange(5, dtype=np.int64), np.ones(5), np.arange(5, dtype=np.int64), np.full(5, np.nan),
               np.zeros(5, dtype=bool))
    first = col.recent[0]
    col.add(Point(5, 2.0, None, 5))
    assert col.recent[0] is first  # not rebuilt
    assert col.last is not None and col.last.value == 2.0


def test_a_rarely_logged_metric_holds_little_history() -> None:
    """A log may name tens of thousands of metrics, each logged a few times (log text is untrusted):
    the whole-run history grows with what a series holds, not to its full size at the first bucket."""
    s = Series("m", "run.log")
    n = 40
    s.extend(np.arange(n, dtype=np.int64), np.ones(n), np.arange(n, dtype=np.int64), np.full(n, np.nan),
             np.zeros(n, dtype=bool))
    assert len(s.history) == n
    assert len(s.history.total) <= 2 * n < store.HISTORY_BUCKETS


@pytest.mark.skipif(native() is None, reason="the native extension is not in use")
@settings(max_examples=examples(400), deadline=None)
@given(values=st.lists(st.sampled_from([0.0, -0.0, 1.5, -2.0, 1e308, -1e308, math.inf, -math.inf, math.nan, 3.25]),
                       max_size=60),
       size=st.integers(1, 9))
def test_the_native_bucket_fold_is_the_reference_one(values: list[float], size: int) -> None:
    """Signed zeros, overflowing sums, NaN and infinities: the same numbers, the sums bit for bit (which
    zero an extreme is, numpy's own reductions do not settle)."""
    v = np.array(values, dtype=np.float64)
    got = fold_buckets(v, np.isfinite(v), size)
    want = fold_buckets_reference(v, np.isfinite(v), size)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.signbit(got[2]), np.signbit(want[2]))


@pytest.mark.skipif(native() is None, reason="the native extension is not in use")
@settings(max_examples=examples(300), deadline=None)
@given(values=st.lists(st.sampled_from([0.0, 1.5, -2.0, 1e308, math.inf, -math.inf, math.nan, 3.25]), min_size=1,
                       max_size=40),
       picks=st.lists(st.integers(0, 39), max_size=30))
def test_the_native_gather_is_numpys(values: list[float], picks: list[int]) -> None:
    """The store's rows written by the native gather are numpy's `take`, and its tallies are `_count`'s."""
    n = len(values)
    rows = np.array(sorted({p % n for p in picks}), dtype=np.int64)
    cols = (np.arange(n, dtype=np.int64) * 3, np.array(values), np.arange(n, dtype=np.int64) + 100,
            np.linspace(0.0, 1.0, n), np.arange(n) % 2 == 0)
    into = tuple(np.zeros(len(rows) + 2, dtype=c.dtype) for c in cols)
    finite, nan, lo, hi = native().gather_rows(rows, cols, into, 2)
    for c, got in zip(cols, into):
        np.testing.assert_array_equal(got[2:], c[rows])
    v = cols[1][rows]
    fin = v[np.isfinite(v)]
    assert (finite, nan) == (len(fin), int(np.isnan(v).sum()))
    if len(fin):
        assert (lo, hi) == (fin.min(), fin.max())
    with pytest.raises(ValueError):
        native().gather_rows(np.array([n], dtype=np.int64), cols, into, 0)


def test_halving_totals_past_the_largest_float_says_nothing() -> None:
    """Two buckets whose totals add past the largest float merge to inf, as `Bucket.merge` adds them,
    without numpy's overflow warning on the terminal (`tail` printed it among its alerts)."""
    import warnings

    h = store.History()
    ones = np.ones(4, dtype=np.int64)
    big = np.full(4, 1e308)
    h.extend(np.arange(4), np.arange(4), big, big, big, big, ones, 0 * ones, np.full(4, np.nan))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h.halve()
    assert len(h) == 2 and math.isinf(h.total[0]) and h.total[0] > 0
    col = Series("loss", "a.log")
    n = 4 * store.HISTORY_BUCKETS  # whole buckets of four rows from here
    col.extend(np.arange(n, dtype=np.int64), np.ones(n), np.arange(n, dtype=np.int64), np.full(n, np.nan),
               np.zeros(n, dtype=bool))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in (3, 1):  # a bucket begun with a sum past the largest float, then added to
            col.extend(np.arange(n, n + k, dtype=np.int64), np.full(k, 1e308), np.arange(k, dtype=np.int64),
                       np.full(k, np.nan), np.zeros(k, dtype=bool))
            n += k
            col.whole_run()
    assert math.isinf(col.whole_run()[-1].total)


def test_a_series_done_with_a_long_run_gives_its_room_back() -> None:
    """A metric logged for a long stretch, then no more (a log that writes one metric after another):
    its arrays grew to a round's room, and give it back after a round that leaves it alone, keeping the
    recent window and the whole run as they were."""
    s = Series("m0", "a.log")
    n = store.ROUND_ROWS
    for lo in range(0, 3 * n, n):  # rounds of a round's rows each, as a backlog's are
        rows = np.arange(lo, lo + n, dtype=np.int64)
        s.extend(rows, np.sin(rows * 0.01), rows, np.full(n, np.nan), np.zeros(n, dtype=bool))
        s.judged()
        s.give_back_room()
        assert s.roomy  # the rounds fill its room: it keeps it
    recent, history = s.columns(store.RECENT_POINTS), s.whole_run()
    s.judged()  # a round without its rows
    s.give_back_room()
    assert not s.roomy
    assert all(np.array_equal(a, b) for a, b in zip(s.columns(store.RECENT_POINTS), recent))
    assert s.whole_run() == history
    rows = np.arange(3 * n, 3 * n + 5, dtype=np.int64)  # and it takes rows again
    s.extend(rows, np.ones(5), rows, np.full(5, np.nan), np.zeros(5, dtype=bool))
    assert s.columns(2)[0].tolist() == [3 * n + 3, 3 * n + 4]
