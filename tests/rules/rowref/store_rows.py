"""The store as it was before its columnar rewrite (a deque of points, history folded one row at a time),
kept as the oracle tests/test_store_columns.py proves the columns against. Not part of trainwatch."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice

from trainwatch.model import Sample

RECENT_POINTS = 2048
HISTORY_BUCKETS = 1024
HEAD_POINTS = 64  # the first finite points of a run, kept for rules that compare with the start
SCAN_MIN = 256  # tail() looks at most max(SCAN_MIN, 8n) points back, so a NaN stretch stays cheap


@dataclass(slots=True)
class Bucket:
    """Consecutive points merged into one; min and max survive so a spike is never averaged away."""

    first_step: int
    last_step: int
    minimum: float
    maximum: float
    last: float
    total: float
    finite: int
    nonfinite: int

    @property
    def mean(self) -> float:
        return self.total / self.finite if self.finite else math.nan

    def merge(self, other: Bucket) -> None:
        self.last_step = other.last_step
        self.minimum = min(self.minimum, other.minimum)
        self.maximum = max(self.maximum, other.maximum)
        self.last = other.last
        self.total += other.total
        self.finite += other.finite
        self.nonfinite += other.nonfinite


@dataclass(slots=True)
class Point:
    step: int
    value: float
    time: float | None
    line: int
    step_inferred: bool = False


@dataclass
class Series:
    """One metric from one source."""

    name: str
    source: str
    recent: deque[Point] = field(default_factory=lambda: deque(maxlen=RECENT_POINTS))
    history: list[Bucket] = field(default_factory=list)
    bucket_size: int = 1
    count: int = 0
    nan_count: int = 0
    inf_count: int = 0
    minimum: float = math.inf
    maximum: float = -math.inf
    first: float | None = None
    head: list[Point] = field(default_factory=list)  # the first HEAD_POINTS finite points, never dropped
    _pending: Bucket | None = None
    _pending_n: int = 0
    _clean_run: int = 0  # points since the last NaN/Inf: tail() copies these without checking each
    _values: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT_POINTS))  # recent's values

    def add(self, point: Point) -> None:
        v = point.value
        self.count += 1
        finite = math.isfinite(v)
        if finite:
            if v < self.minimum:
                self.minimum = v
            if v > self.maximum:
                self.maximum = v
            if self.first is None:
                self.first = v
            if len(self.head) < HEAD_POINTS:
                self.head.append(point)
            self._clean_run += 1
        else:
            self._clean_run = 0
            if v != v:
                self.nan_count += 1
            else:
                self.inf_count += 1
        self.recent.append(point)
        self._values.append(v)
        self._add_history(point.step, v, finite)

    def _add_history(self, step: int, v: float, finite: bool) -> None:
        p = self._pending
        if p is None:
            lo = v if finite else math.nan
            p = self._pending = Bucket(step, step, lo, lo, v, v if finite else 0.0, int(finite), int(not finite))
            self._pending_n = 1
        else:
            if finite:
                if p.minimum != p.minimum or v < p.minimum:
                    p.minimum = v
                if p.maximum != p.maximum or v > p.maximum:
                    p.maximum = v
                p.total += v
                p.finite += 1
            else:
                p.nonfinite += 1
            p.last_step = step
            p.last = v
            self._pending_n += 1
        if self._pending_n >= self.bucket_size:
            self.history.append(p)
            self._pending = None
            self._pending_n = 0
            if len(self.history) >= HISTORY_BUCKETS:
                self._halve()

    def _halve(self) -> None:
        merged: list[Bucket] = []
        for i in range(0, len(self.history) - 1, 2):
            a = self.history[i]
            a.merge(self.history[i + 1])
            merged.append(a)
        if len(self.history) % 2:
            merged.append(self.history[-1])
        self.history = merged
        self.bucket_size *= 2

    @property
    def last(self) -> Point | None:
        return self.recent[-1] if self.recent else None

    @property
    def finite_count(self) -> int:
        """Finite points in the whole run."""
        return self.count - self.nan_count - self.inf_count

    def values(self, n: int | None = None) -> list[float]:
        """The last n values (all recent ones when n is None), NaN and Inf included."""
        if n is None:
            return [p.value for p in self.recent]
        return [p.value for p in self.last_points(n)]

    def last_points(self, n: int) -> list[Point]:
        """The last n points, oldest first, NaN and Inf included; costs O(n), not O(recent)."""
        if n <= 0:
            return []
        out = list(islice(reversed(self.recent), n))
        out.reverse()
        return out

    def tail(self, n: int, *, skip: Point | None = None) -> list[Point]:
        """The last n finite points, oldest first (`skip`: leave that point out if it is the newest).

        Costs O(n): it looks back at most max(SCAN_MIN, 8n) points, so a long NaN stretch can
        shorten the answer but never make every sample pay for the whole recent window."""
        if n <= 0:
            return []
        recent = self.recent
        it = reversed(recent)
        clean, avail = self._clean_run, len(recent)
        if skip is not None and avail and recent[-1] is skip:
            next(it)
            clean -= 1
            avail -= 1
        if clean >= min(n, avail):  # no NaN/Inf among the points wanted: copy them at C speed
            out = list(islice(it, n))
            out.reverse()
            return out
        out = []
        isfinite = math.isfinite
        for p in islice(it, max(SCAN_MIN, 8 * n)):
            if isfinite(p.value):
                out.append(p)
                if len(out) >= n:
                    break
        out.reverse()
        return out

    def tail_values(self, n: int, *, skip_newest: bool = False) -> list[float]:
        """The values of tail(n), cheaper: when no NaN/Inf is among them they are copied at C speed."""
        if n <= 0:
            return []
        clean, avail = self._clean_run, len(self._values)
        if skip_newest and avail:
            clean -= 1
            avail -= 1
        if clean >= min(n, avail):
            it = reversed(self._values)
            if skip_newest:
                next(it, None)
            out = list(islice(it, n))
            out.reverse()
            return out
        return [p.value for p in self.tail(n, skip=self.recent[-1] if skip_newest and self.recent else None)]

    def whole_run(self) -> list[Bucket]:
        """The downsampled history of the whole run, oldest first, the unfinished bucket last."""
        return self.history + ([self._pending] if self._pending is not None else [])


class MetricStore:
    """Series by (source, metric name); the one place metric history lives."""

    def __init__(self) -> None:
        self._series: dict[tuple[str, str], Series] = {}

    def add(self, sample: Sample, step: int) -> Series:
        """Stores the sample itself as the series' newest point (its step set to `step`)."""
        key = (sample.source, sample.name)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = Series(sample.name, sample.source)
        if sample.step != step:
            sample.step = step  # the step the engine settled on (inferred when the log printed none)
        series.add(sample)  # type: ignore[arg-type]  # a Sample has every field of a Point: no copy per sample
        return series

    def drop_source(self, source: str) -> None:
        """Forgets one source's series: a new training in the same log is not a continuation of the last."""
        for key in [k for k in self._series if k[0] == source]:
            del self._series[key]

    def get(self, name: str, source: str = "") -> Series | None:
        return self._series.get((source, name))

    def find(self, name: str) -> list[Series]:
        """All sources' series of one metric."""
        return [s for (_, n), s in self._series.items() if n == name]

    def __iter__(self) -> Iterator[Series]:
        return iter(list(self._series.values()))

    def __len__(self) -> int:
        return len(self._series)

    def names(self) -> list[str]:
        return sorted({n for _, n in self._series})
