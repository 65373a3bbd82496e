"""Robust statistics for trend rules: medians and MADs, so one noisy point never decides a verdict.

Every trend verdict compares an effect with the noise measured on the same series: a per-step loss
with +-20% noise and a smoothed loss logged every 10 steps need different thresholds, and no fixed
ratio serves both."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.base import median
from trainwatch.store import Point, Series

MAD_SIGMA = 1.4826  # MAD times this estimates the standard deviation of normal noise
MEDIAN_SE = 1.2533  # the standard error of a median of n normal points is this times sigma / sqrt(n)


def mad_sigma(values: list[float], centre: float | None = None) -> float:
    """A standard deviation that ignores outliers."""
    if not values:
        return math.nan
    c = median(values) if centre is None else centre
    return MAD_SIGMA * median([abs(v - c) for v in values])


def diff_sigma(values: list[float]) -> float:
    """Point noise from the MAD of first differences: a slow trend barely moves it, so a falling
    curve is not mistaken for a noisy one. NaN with fewer than three values."""
    if len(values) < 3:
        return math.nan
    return MAD_SIGMA * median([abs(b - a) for a, b in zip(values, values[1:])]) / math.sqrt(2.0)


def curve_sigma(values: list[float]) -> float:
    """Noise of a short, sparse sequence (evaluations) from its second differences, taken around
    their median: the bend of a smooth U-shaped curve is signal, not noise. NaN below five values."""
    if len(values) < 5:
        return math.nan
    d2 = [values[i + 1] - 2 * values[i] + values[i - 1] for i in range(1, len(values) - 1)]
    m = median(d2)
    return MAD_SIGMA * median([abs(x - m) for x in d2]) / math.sqrt(6.0)


def median_se(sigma: float, n: int) -> float:
    """How far the median of n points with noise `sigma` wanders from the true level."""
    return MEDIAN_SE * sigma / math.sqrt(max(n, 1))


def scaled_window(n: int, fraction: float, lo: int, hi: int) -> int:
    """A window that grows with the points seen (`fraction` of them), clamped to [lo, hi] and to n:
    short runs are judged on what they have, long ones on a window wide enough to average the noise
    out, and the cost per sample stays bounded by `hi`."""
    return max(0, min(n, max(lo, min(hi, int(n * fraction)))))


def cusum_onset(points: list[Point], ref: float, clip: float) -> Point | None:
    """Where a sustained excursion above `ref` began: the point after the last minimum of the running
    sum of (value - ref). Each term is clipped to +-clip so one outlier cannot move the answer.
    None when the sum never turns up."""
    total = low = 0.0
    at = 0
    for i, p in enumerate(points):
        total += max(-clip, min(clip, p.value - ref))
        if total <= low:
            low, at = total, i + 1
    return points[at] if at < len(points) else None


class Episodes:
    """Per source, the finding that opened the current episode of a condition.

    While the condition holds the rule repeats that finding: its message, `step` and `began_step` keep
    telling the moment the episode began, and only the latest values change, under `last_value` and
    `last_step`. An alert that merges repeated evidence then never mixes two moments."""

    def __init__(self) -> None:
        self._open: dict[str, Finding] = {}

    def is_open(self, source: str) -> bool:
        return source in self._open

    def open(self, source: str, finding: Finding, last_value: float, last_step: int) -> Finding:
        """Starts an episode with `finding` (its `step`: where the evidence became enough)."""
        self._open[source] = finding
        out = _copy(finding, last_value, last_step)
        out.step = finding.step
        return out

    def repeat(self, source: str, last_value: float, last_step: int, **later: object) -> Finding | None:
        """The open episode's finding with the latest values; None when none is open."""
        f = self._open.get(source)
        if f is None:
            return None
        out = _copy(f, last_value, last_step)
        out.evidence.update(later)
        return out

    def close(self, source: str) -> None:
        self._open.pop(source, None)


def _copy(f: Finding, last_value: float, last_step: int) -> Finding:
    ev = dict(f.evidence)
    ev["last_value"] = last_value
    ev["last_step"] = last_step
    return Finding(message=f.message, evidence=ev, subject=f.subject, severity=f.severity,
                   extra_fixes=f.extra_fixes, title=f.title, fixes=f.fixes, began_step=f.began_step)


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


def latest_start(series: Series) -> Point | None:
    """The first finite point of the latest training in the series: after the last place its step went
    back (another training in the same log, a restart from scratch), among the points still kept; the
    series' first point when the step never went back there. None when nothing finite is known."""
    steps, values, lines, _ = series.columns(series.count)
    back = np.flatnonzero(np.diff(steps) < 0) if len(steps) > 1 else np.zeros(0, dtype=np.int64)
    if len(back):
        ok = np.flatnonzero(np.isfinite(values[int(back[-1]) + 1:])) + int(back[-1]) + 1
        if len(ok):
            i = int(ok[0])
            return Point(int(steps[i]), float(values[i]), None, int(lines[i]))
    return series.head[0] if series.head else None


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


def nz(v: float) -> float:
    """NaN (too few points for a noise estimate) as 0."""
    return v if v == v else 0.0
