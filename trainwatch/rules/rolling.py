"""Array building blocks for trend rules: trailing medians and noise over the finite points, run lengths,
restarts, and causal look-ups into another series.

Each function answers for every row at once what the row-at-a-time helpers in trainwatch.rules.stats
answer for one row (`last_finite`, `before`, `diff_sigma`, `Segments`), with the same numbers, so a rule
moved to arrays keeps its findings. Rolling medians come from the native extension's sorted window for the
short windows when it is in use, from bottleneck's two heaps otherwise, the same numbers either way;
everything else is numpy.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from trainwatch.rules.stats import MAD_SIGMA
from trainwatch.scan import kernels
from trainwatch.store import RECENT_POINTS, SCAN_MIN


def finite_rows(values: np.ndarray) -> np.ndarray:
    """Indices of the finite values: trend rules look at the finite points only, as `tail` does."""
    return np.flatnonzero(np.isfinite(values))


def trailing_median(x: np.ndarray, n: int | np.ndarray, *, include_self: bool = True) -> np.ndarray:
    """Per row i, the median of the last `n` values of `x` up to i (before i when not `include_self`),
    fewer at the start; NaN where there are none. `n` may vary per row (a window that grows with the
    run): rows are grouped by window size and each group costs one rolling pass."""
    return _trailing(x, n, include_self, _move_median)


def trailing_min(x: np.ndarray, n: int | np.ndarray, *, include_self: bool = True) -> np.ndarray:
    """`trailing_median`'s windows, their least value: a bound below the median at a fraction of its
    cost."""
    return _trailing(x, n, include_self, partial(_move_extreme, greatest=False))


def trailing_max(x: np.ndarray, n: int | np.ndarray, *, include_self: bool = True) -> np.ndarray:
    """`trailing_median`'s windows, their greatest value: a bound above the median."""
    return _trailing(x, n, include_self, partial(_move_extreme, greatest=True))


def _move_median(x: np.ndarray, window: int, min_count: int) -> np.ndarray:
    """`bn.move_median(x, window=window, min_count=min_count)`, number for number (a zero's sign aside):
    in the native extension when it is in use and the window is at most its MEDIAN_WINDOW_MAX. Its kernel
    rewrites a sorted window in one vector pass per row, cost growing with the window, where bottleneck's
    two heaps grow with its logarithm: about 3x faster for short windows, slower past that limit (64, or
    256 on a CPU with AVX2; see native/src/kernels/median.rs)."""
    return kernels.move_median(x, window, min_count)


def _move_extreme(x: np.ndarray, window: int, min_count: int, *, greatest: bool) -> np.ndarray:
    """`bn.move_max` (`greatest`) or `bn.move_min(x, window=window, min_count=min_count)`: in the native
    extension when it is in use (running extremes over blocks, without the GIL; bottleneck holds it),
    the same numbers."""
    return kernels.move_extreme(x, window, min_count, greatest=greatest)


def _trailing(x: np.ndarray, n: int | np.ndarray, include_self: bool, move: Any) -> np.ndarray:
    """One rolling pass per distinct window size. Past its first rows a series' window stops growing, so
    nearly every call has one size; then the pass is the answer itself, with no gather or scatter."""
    m = len(x)
    if not m:
        return np.full(0, np.nan)
    src = x if include_self else np.concatenate(([np.nan], x[:-1]))
    ns = np.asarray(n, dtype=np.int64)
    if ns.ndim == 0:
        lo_n = hi_n = int(ns)
    else:
        lo_n, hi_n = int(ns.min()), int(ns.max())
    if lo_n == hi_n:
        out = np.asarray(move(src, window=min(lo_n, m), min_count=1), dtype=np.float64) if lo_n > 0 \
            else np.full(m, np.nan)
    else:
        out = np.full(m, np.nan)
        first = int(np.argmax(ns > 0))
        if lo_n <= 0 < hi_n and int(ns[first:].min()) == hi_n:
            # no window, then one size (a batch's look-back rows, then its new rows): one pass and a slice
            lo = max(0, first - hi_n + 1)
            got = move(src[lo:], window=min(hi_n, m - lo), min_count=1)
            out[first:] = got[first - lo:]
        else:
            for w in _sizes(ns, hi_n):
                _one_size(out, src, ns == w, w, move)
    if not include_self:
        out[0] = np.nan
    return out


def _sizes(ns: np.ndarray, hi_n: int) -> list[int]:
    """The distinct window sizes above 0 in `ns` (its greatest is `hi_n`), ascending: counted when they
    are small, which the trend rules' windows are, sorted otherwise."""
    if hi_n <= 0:
        return []
    live = ns[ns > 0]
    if hi_n <= 1 << 16:
        return np.flatnonzero(np.bincount(live, minlength=hi_n + 1)).tolist()
    return np.unique(live).tolist()


def _one_size(out: np.ndarray, src: np.ndarray, rows: np.ndarray, w: int, move: Any) -> None:
    """The rows of the mask `rows` (window `w`) filled from one rolling pass over the span they need."""
    first = int(rows.argmax())
    last = len(rows) - 1 - int(rows[::-1].argmax())
    lo = max(0, first - w + 1)
    seg = src[lo:last + 1]
    got = move(seg, window=min(w, len(seg)), min_count=1)
    np.copyto(out[first:last + 1], got[first - lo:], where=rows[first:last + 1])


FEW = 16
"""`trailing_median_where` takes each wanted row's window on its own while at most one row in FEW wants
one; past that, the one rolling pass costs less."""


def trailing_median_where(x: np.ndarray, n: int | np.ndarray, want: np.ndarray, *,
                          include_self: bool = True) -> np.ndarray:
    """`trailing_median` at the rows in `want` (a mask), NaN at the others, the same numbers: for a rule
    that has ruled most rows out already (`trailing_min` bounds the median from below). A wanted row's
    median comes from its window alone (all wanted windows in one native call when the extension is in
    use, else bottleneck on each), the rolling pass's number (a zero's sign aside)."""
    rows = np.flatnonzero(want)
    if len(rows) * FEW > len(x):
        out = trailing_median(x, n, include_self=include_self)
        out[~want] = np.nan
        return out
    out = np.full(len(x), np.nan)
    ns = np.broadcast_to(np.asarray(n, dtype=np.int64), (len(x),))
    ws = ns[rows]
    end = rows + 1 if include_self else rows
    start = np.where(ws > 0, np.maximum(end - np.maximum(ws, 1), 0), end)  # no window: an empty span
    out[rows] = kernels.span_medians(x, start, end)
    return out


def spike_medians(v: np.ndarray, finite: np.ndarray, count: np.ndarray, s: int, ratio: float,
                  min_history: int) -> np.ndarray:
    """For a spike rule's test `count >= min_history and med > 0 and v >= ratio * med * (1 - 1e-9)`, med
    the median of the `count` finite values before the row: med at the new rows (from `s`) that can pass
    it, NaN at every other row. A row below `ratio` times its window's least value (when that is above
    0) cannot, as the median is no less than it and the products round the same way; in a healthy run
    that is nearly every row, so the medians cost a rolling minimum and a few windows. Below 0 a ratio
    turns the bound around (a config may set one): then every row that can pass keeps its median."""
    xs, cs = v[finite], count[finite]
    low = np.full(len(v), np.nan)
    low[finite] = trailing_min(xs, cs, include_self=False)
    want = np.zeros(len(v), dtype=bool)
    with np.errstate(invalid="ignore", over="ignore"):  # past the largest float: no spike, no warning
        ruled_out = (low[s:] > 0) & (v[s:] < ratio * low[s:] * (1 - 1e-9)) & (ratio >= 0)
    want[s:] = finite[s:] & (count[s:] >= min_history) & ~ruled_out
    med = np.full(len(v), np.nan)
    med[finite] = trailing_median_where(xs, cs, want[finite], include_self=False)
    return med


def smoothed(ema: float, values: np.ndarray, windows: np.ndarray) -> np.ndarray:
    """The running smoothing `ema = ema + (v - ema) * 2.0 / k` after each row (v from `values`, k from
    `windows`), float for float what a Python loop gives: in the native extension when it is in use, as a
    trend rule smooths its noise over every row of a healthy backlog."""
    return kernels.ema_path(ema, values, windows)


def trailing_count(m: int, n: int | np.ndarray, *, include_self: bool = True) -> np.ndarray:
    """How many values the windows of `trailing_median` hold at each row."""
    avail = np.arange(1, m + 1) if include_self else np.arange(m)
    return np.minimum(avail, np.broadcast_to(np.asarray(n, dtype=np.int64), (m,)))


def trailing_diff_sigma(x: np.ndarray, n: int | np.ndarray) -> np.ndarray:
    """Per row i, `stats.diff_sigma` of the last `n` values up to i: the point noise from the MAD of
    first differences. NaN where the window holds fewer than three values."""
    m = len(x)
    out = np.full(m, np.nan)
    if m < 3:
        return out
    d = np.abs(np.diff(x))  # d[j] = |x[j+1] - x[j]|: a window of k values holds k - 1 differences
    med = np.full(m, np.nan)
    if np.ndim(n) == 0:  # one window for every row: a single rolling pass, and only the first rows short
        med[1:] = trailing_median(d, max(int(n) - 1, 0))
        out = MAD_SIGMA * med / math.sqrt(2.0)
        out[:2 if int(n) >= 3 else m] = np.nan  # fewer than three values in the window
        return out
    ns = np.broadcast_to(np.asarray(n, dtype=np.int64), (m,))
    med[1:] = trailing_median(d, np.maximum(ns[1:] - 1, 0))
    counts = trailing_count(m, ns)
    out = MAD_SIGMA * med / math.sqrt(2.0)
    out[counts < 3] = np.nan
    return out


def run_lengths(cond: np.ndarray, carried: int = 0) -> np.ndarray:
    """Per row, how many rows in a row (ending there) `cond` has held; `carried` continues a run from
    the batch before. 0 where it does not hold."""
    c = np.asarray(cond, dtype=bool)
    idx = np.arange(len(c))
    last_false = np.maximum.accumulate(np.where(c, -1, idx))
    runs = idx - last_false
    first = last_false < 0  # rows still in a run that began before this batch
    runs[first] += carried
    return np.where(c, runs, 0)


def restarts(step: np.ndarray, last_step: int | None) -> np.ndarray:
    """Per row, the number of restarts (a step lower than the one before) up to and including it: a new
    run in the same log starts its own baseline. `last_step` is the step before the first row."""
    if not len(step):
        return np.zeros(0, dtype=np.int64)
    prev = np.empty_like(step)
    prev[0] = step[0] if last_step is None else last_step
    prev[1:] = step[:-1]
    return np.cumsum(step < prev)


def value_before(steps: np.ndarray, values: np.ndarray, at: np.ndarray, *, inclusive: bool = False) -> np.ndarray:
    """Per step in `at`, the latest of `values` logged at a step before it (or at it, `inclusive`), NaN
    when none: a causal look-up into another series, which must be in step order."""
    pos = np.searchsorted(steps, at, side="right" if inclusive else "left") - 1
    out = np.full(len(at), np.nan)
    ok = pos >= 0
    out[ok] = values[pos[ok]]
    return out


def tail_sizes(finite: np.ndarray, at: np.ndarray, n: np.ndarray, rows_before: int = 0) -> np.ndarray:
    """Per row in `at` (indices into `finite`, the finiteness of a series' rows), how many values
    `Series.tail(n)` returns there: at most `n`, from the finite rows among the last
    max(SCAN_MIN, 8n) rows the store still holds, so a NaN stretch shortens the window exactly as it
    does row by row. `rows_before` counts the series' rows logged before `finite[0]`."""
    at = np.asarray(at, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    held = np.minimum(at + 1 + rows_before, RECENT_POINTS)  # rows in the store's recent window then
    scan = np.minimum(np.maximum(SCAN_MIN, 8 * n), held)
    if finite.all():  # every row scanned is a value
        return np.maximum(0, np.minimum(n, np.minimum(scan, at + 1)))
    cum = np.concatenate(([0], np.cumsum(finite, dtype=np.int64)))
    lo = np.maximum(at + 1 - scan, 0)
    return np.maximum(0, np.minimum(n, cum[at + 1] - cum[lo]))


class RowTail:
    """The last rows of one series (steps and values) an array rule has judged, carried from one batch
    to the next, so a rule sees what `Series.tail` saw at each row however the rows were batched. A
    rule that looks further back than its new rows reads its look-back here instead of declaring a
    `history`, which would turn that many stored points into arrays again for every batch (for every
    row, when `tail` feeds one at a time). A new series object (another training in the same log)
    starts it afresh, as the store does."""

    __slots__ = ("keep", "series", "step", "value")

    def __init__(self, keep: int = RECENT_POINTS) -> None:
        self.keep = keep
        self.series: object = None
        self.step = np.zeros(0, dtype=np.int64)
        self.value = np.zeros(0, dtype=np.float64)

    def extend(self, series: object, step: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """The rows held before the new ones followed by the new ones, and how many were held."""
        if series is not self.series:
            self.series = series
            self.step, self.value = self.step[:0], self.value[:0]
        held = len(self.step)
        steps = np.concatenate((self.step, step))
        values = np.concatenate((self.value, value))
        cut = max(0, len(steps) - self.keep)
        self.step, self.value = steps[cut:], values[cut:]
        return steps, values, held


def scan_reach(n: int) -> int:
    """How many rows back `Series.tail(n)` looks for n finite values: max(SCAN_MIN, 8n), and never past
    the store's recent window. A rule that reads `stats.before` declares this as its `history`."""
    return min(max(SCAN_MIN, 8 * max(n, 0)), RECENT_POINTS - 1)


def before_counts(finite: np.ndarray, n: int | np.ndarray) -> np.ndarray:
    """Per row i, how many values `stats.before(series, point_i, n)` returns: the last n finite values
    before row i, looked for among the `scan_reach(n)` rows before it, so a long NaN/Inf stretch shortens
    the answer exactly as it does row by row. `n` may vary per row; n <= 0 asks for none."""
    m = len(finite)
    ns = np.maximum(np.broadcast_to(np.asarray(n, dtype=np.int64), (m,)), 0)
    reach = np.minimum(np.maximum(SCAN_MIN, 8 * ns), RECENT_POINTS - 1)
    idx = np.arange(m)
    if finite.all():  # every row before is a value: as many as the reach goes back
        return np.minimum(ns, np.minimum(idx, reach))
    seen = np.concatenate(([0], np.cumsum(finite, dtype=np.int64)))  # seen[j]: finite rows in [0, j)
    return np.minimum(ns, seen[idx] - seen[np.maximum(idx - reach, 0)])


def before_values(values: np.ndarray, row: int, n: int) -> list[float]:
    """What `stats.before` returns for the point at `row`: its last n finite predecessors within
    `scan_reach(n)` rows, oldest first, as Python floats. For the few rows a rule looks at closely."""
    if n <= 0:
        return []
    back = values[max(0, row - scan_reach(n)):row]
    return back[np.isfinite(back)][-n:].tolist()
