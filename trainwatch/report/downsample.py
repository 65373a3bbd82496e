"""Curves cut to a fixed number of columns that keep their extremes, so a spike or a NaN never vanishes."""

from __future__ import annotations

import numpy as np

COLUMNS = 1200
"""Columns (about one per pixel of a wide chart) a curve is cut to: each keeps its least and greatest
value, so a page of a million-step run holds a few thousand numbers per curve."""


def minmax(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, bad: np.ndarray | None = None,
           columns: int = COLUMNS) -> tuple[np.ndarray, np.ndarray]:
    """Points (x, y) of a curve given per row as x with its least (`lo`) and greatest (`hi`) finite value
    (NaN where a row had none) and `bad`, whether the row held a NaN or Inf, cut into `columns` equal spans
    of x. Each span becomes its least value at its first x and its greatest at its last, so the drawn line
    covers the span's whole range, then a NaN point when any row of it was bad (a gap the page marks).
    Rows must be in x order; with no more than 2*columns rows each row is its own span."""
    x = np.asarray(x, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    bad = np.isnan(lo) if bad is None else (np.asarray(bad, dtype=bool) | np.isnan(lo))
    if len(x) == 0:
        return x, lo
    if len(x) <= 2 * columns:
        starts = np.arange(len(x))
    else:
        span = x[-1] - x[0]
        if span > 0:
            cols = np.minimum(((x - x[0]) / span * columns).astype(np.int64), columns - 1)
        else:
            cols = np.minimum(np.arange(len(x)) * columns // len(x), columns - 1)
        starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
    ends = np.r_[starts[1:], len(x)] - 1
    with np.errstate(invalid="ignore"):
        least = np.fmin.reduceat(lo, starts)
        most = np.fmax.reduceat(hi, starts)
    gaps = np.add.reduceat(bad.astype(np.int64), starts) > 0
    out_x: list[float] = []
    out_y: list[float] = []
    for s, e, a, b, gap in zip(starts.tolist(), ends.tolist(), least.tolist(), most.tolist(), gaps.tolist()):
        if a == a:
            out_x.append(float(x[s]))
            out_y.append(a)
            if b != a:
                out_x.append(float(x[e]))
                out_y.append(b)
        if gap:
            out_x.append(float(x[e]))
            out_y.append(float("nan"))
    return np.asarray(out_x), np.asarray(out_y)
