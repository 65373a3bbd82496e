"""Robust statistics for trend rules: medians and MADs, so one noisy point never decides a verdict."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

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
    return series.tail_values(n, skip_newest=bool(series.recent) and series.recent[-1] is point)


def last_finite(series: Series, n: int) -> list[float]:
    """The last n finite values, newest included."""
    return series.tail_values(n)


def head_values(series: Series, n: int) -> list[float]:
    """The first n finite values of the run (at most store.HEAD_POINTS)."""
    return [p.value for p in series.head[:n]]


@dataclass
class Segment:
    """The part of a series since its run last (re)started: a step that goes back starts a new one."""

    last_step: int
    finite_before: int  # series.finite_count when the segment began
    head: list[Point] = field(default_factory=list)  # its first finite points (a few)

    def finite(self, series: Series) -> int:
        """Finite points logged in this segment."""
        return series.finite_count - self.finite_before


class Segments:
    """Per source, where the current run began, kept as the samples arrive (O(1) each)."""

    def __init__(self, keep_head: int = 0) -> None:
        self.keep_head = keep_head
        self._by_source: dict[str, Segment] = {}

    def update(self, series: Series, point: Point) -> Segment:
        """Call once for every new point of `series` (already in the store)."""
        seg = self._by_source.get(series.source)
        finite = math.isfinite(point.value)
        if seg is None or point.step < seg.last_step:
            seg = self._by_source[series.source] = Segment(point.step, series.finite_count - int(finite))
        seg.last_step = point.step
        if finite and len(seg.head) < self.keep_head:
            seg.head.append(point)
        return seg

    def get(self, source: str) -> Segment | None:
        return self._by_source.get(source)


def theil_sen(xs: list[float], ys: list[float]) -> float:
    """Median of pairwise slopes: a trend that a few outliers cannot bend."""
    slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i]) for i in range(len(xs)) for j in range(i + 1, len(xs))
              if xs[j] != xs[i]]
    return median(slopes) if slopes else 0.0


def fmt(v: float) -> str:
    return f"{v:.4g}"
