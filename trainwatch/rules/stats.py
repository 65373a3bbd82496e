"""Robust statistics for trend rules: medians and MADs, so one noisy point never decides a verdict."""

from __future__ import annotations

import math
from collections.abc import Iterable

from trainwatch.rules.base import median
from trainwatch.store import Point, Series

MAD_SIGMA = 1.4826  # MAD times this estimates the standard deviation of normal noise


def mad_sigma(values: list[float], centre: float | None = None) -> float:
    """A standard deviation that ignores outliers."""
    if not values:
        return math.nan
    c = median(values) if centre is None else centre
    return MAD_SIGMA * median([abs(v - c) for v in values])


def finite_points(points: Iterable[Point]) -> list[Point]:
    return [p for p in points if math.isfinite(p.value)]


def before(series: Series, point: Point, n: int) -> list[float]:
    """The last n finite values logged before `point` (the newest point excluded)."""
    out: list[float] = []
    pts = series.recent
    i = len(pts) - 1
    if i >= 0 and pts[i] is point:
        i -= 1
    while i >= 0 and len(out) < n:
        v = pts[i].value
        if math.isfinite(v):
            out.append(v)
        i -= 1
    out.reverse()
    return out


def last_finite(series: Series, n: int) -> list[float]:
    """The last n finite values, newest included."""
    out: list[float] = []
    for p in reversed(series.recent):
        if math.isfinite(p.value):
            out.append(p.value)
            if len(out) >= n:
                break
    out.reverse()
    return out


def theil_sen(xs: list[float], ys: list[float]) -> float:
    """Median of pairwise slopes: a trend that a few outliers cannot bend."""
    slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i]) for i in range(len(xs)) for j in range(i + 1, len(xs))
              if xs[j] != xs[i]]
    return median(slopes) if slopes else 0.0


def fmt(v: float) -> str:
    return f"{v:.4g}"
