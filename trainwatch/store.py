"""Metric history in bounded memory: every recent point, plus a downsampled history of the whole run."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice

import numpy as np

from trainwatch.scan import kernels

RECENT_POINTS = 2048
HISTORY_BUCKETS = 1024
HEAD_POINTS = 64  # the first finite points of a run, kept for rules that compare with the start
SCAN_MIN = 256  # tail() looks at most max(SCAN_MIN, 8n) points back, so a NaN stretch stays cheap
ROUND_ROWS = 32768
"""New rows of one series the engine may store before the array rules judge them (a round). Each
array rule has a fixed cost per call, so larger rounds spread it over more rows; the price is memory,
as a series keeps a round's rows besides its recent window (KEPT_ROWS). At this size the fixed cost is
small next to the per-row work of a backlog, and a series' arrays stay under a megabyte. Only a log with
few series reaches such rounds: all series together wait for at most `engine.rounds.WAIT_ROWS` rows, so
a log of hundreds of metrics keeps small rounds (see KEPT_ROWS). docs/benchmarks.md has the figures."""
IDLE_ROOM = RECENT_POINTS + ROUND_ROWS // 4
"""Rows of room a series' arrays keep once its rounds no longer fill them (see `Series.give_back_room`)."""
KEPT_ROWS = RECENT_POINTS + ROUND_ROWS
"""Rows a series' arrays keep at most: when a round is judged, the oldest row of it still finds the
RECENT_POINTS rows before it, in its own series and in every other series of its source (no series
takes more than ROUND_ROWS rows in a round), so a rule reads any series as it was at that row. Only the
rows of the round not yet judged are kept beyond RECENT_POINTS (`Series.judged`): a log of hundreds of
metrics, each a few hundred rows a round, pays for no more than the recent window."""


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
    first_time: float = field(default=math.nan, compare=False)  # the first time a row printed (NaN: none)

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
        if self.first_time != self.first_time:
            self.first_time = other.first_time


class History:
    """The whole run's finished buckets as columns, oldest first. A Bucket object with its numbers costs
    some 300 bytes, and a log of a few hundred metrics keeps a thousand buckets of each: columns cost a
    quarter of that, and a batch's buckets are written and halved without a Python object each."""

    __slots__ = ("finite", "first_step", "first_time", "last", "last_step", "maximum", "minimum", "n", "nonfinite",
                 "total")

    def __init__(self) -> None:
        self.n = 0
        self.first_step = self.last_step = self.finite = self.nonfinite = np.zeros(0, dtype=np.int64)
        self.minimum = self.maximum = self.last = self.total = self.first_time = np.zeros(0, dtype=np.float64)

    def __len__(self) -> int:
        return self.n

    def _room(self, k: int) -> None:
        if self.n + k <= len(self.total):
            return
        cap = max(self.n + k, 2 * len(self.total), 16)  # doubling from small: a rarely logged metric costs little
        for name in History.__slots__:
            if name != "n":
                old = getattr(self, name)
                new = np.zeros(cap, dtype=old.dtype)
                new[:self.n] = old[:self.n]
                setattr(self, name, new)

    def extend(self, first_step: np.ndarray, last_step: np.ndarray, minimum: np.ndarray, maximum: np.ndarray,
               last: np.ndarray, total: np.ndarray, finite: np.ndarray, nonfinite: np.ndarray,
               first_time: np.ndarray) -> None:
        k = len(total)
        self._room(k)
        a, b = self.n, self.n + k
        self.first_step[a:b], self.last_step[a:b] = first_step, last_step
        self.minimum[a:b], self.maximum[a:b], self.last[a:b], self.total[a:b] = minimum, maximum, last, total
        self.finite[a:b], self.nonfinite[a:b], self.first_time[a:b] = finite, nonfinite, first_time
        self.n = b

    def append(self, x: Bucket) -> None:
        self._room(1)
        i = self.n
        self.first_step[i], self.last_step[i] = x.first_step, x.last_step
        self.minimum[i], self.maximum[i], self.last[i], self.total[i] = x.minimum, x.maximum, x.last, x.total
        self.finite[i], self.nonfinite[i], self.first_time[i] = x.finite, x.nonfinite, x.first_time
        self.n = i + 1

    def halve(self) -> None:
        """Neighbours merged in pairs (an odd one out kept), as `Bucket.merge` merges two: Python's
        min and max (the first unless the second is strictly beyond it), totals added in order."""
        n = self.n
        a, b = np.arange(0, n - 1, 2), np.arange(1, n, 2)
        m = len(a)
        lo_a, lo_b, hi_a, hi_b = self.minimum[a], self.minimum[b], self.maximum[a], self.maximum[b]
        with np.errstate(invalid="ignore"):
            self.minimum[:m] = np.where(lo_b < lo_a, lo_b, lo_a)
            self.maximum[:m] = np.where(hi_b > hi_a, hi_b, hi_a)
        self.first_step[:m] = self.first_step[a]
        self.last_step[:m] = self.last_step[b]
        self.last[:m] = self.last[b]
        with np.errstate(over="ignore"):  # sums past the largest float are inf, said nowhere
            self.total[:m] = self.total[a] + self.total[b]
        self.finite[:m] = self.finite[a] + self.finite[b]
        self.nonfinite[:m] = self.nonfinite[a] + self.nonfinite[b]
        ta, tb = self.first_time[a], self.first_time[b]
        self.first_time[:m] = np.where(ta == ta, ta, tb)
        if n % 2:
            for name in History.__slots__:
                if name != "n":
                    col = getattr(self, name)
                    col[m] = col[n - 1]
        self.n = m + n % 2

    def buckets(self) -> list[Bucket]:
        n = self.n
        return [Bucket(*row) for row in zip(self.first_step[:n].tolist(), self.last_step[:n].tolist(),
                                            self.minimum[:n].tolist(), self.maximum[:n].tolist(),
                                            self.last[:n].tolist(), self.total[:n].tolist(),
                                            self.finite[:n].tolist(), self.nonfinite[:n].tolist(),
                                            self.first_time[:n].tolist())]


@dataclass(slots=True)
class Point:
    step: int
    value: float
    time: float | None
    line: int
    step_inferred: bool = False


class Series:
    """One metric from one source, held as columns.

    The newest rows live in numpy arrays (at least the last RECENT_POINTS of them, and those the array
    rules have still to judge: see KEPT_ROWS), so a backlog is appended a batch at a time (`extend`) and
    array rules read their windows as slices, with no object per value. `recent`, the view the row
    rules, the dashboard and the sinks iterate, is made of `Point`s built only when asked for and only
    for rows not built before, so a series nobody looks at row by row never pays for them. The whole
    run survives as `history`: buckets of consecutive rows that keep their min and max, halved in
    resolution whenever they reach HISTORY_BUCKETS."""

    __slots__ = (
        "_bucket_size",
        "_built",
        "_cap",
        "_first",
        "_hi",
        "_history",
        "_inf",
        "_line",
        "_lo",
        "_mark",
        "_pending",
        "_pending_n",
        "_points",
        "_round",
        "_step",
        "_time",
        "_unfolded",
        "_value",
        "count",
        "first",
        "head",
        "inf_count",
        "maximum",
        "minimum",
        "name",
        "nan_count",
        "source",
    )

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = source
        self._history = History()
        self._bucket_size = 1
        self._unfolded = 0  # the newest rows stored, not yet folded into the history (see `extend`)
        self.count = 0
        self.nan_count = 0
        self.inf_count = 0
        self.minimum = math.inf
        self.maximum = -math.inf
        self.first: float | None = None
        self.head: list[Point] = []  # the first HEAD_POINTS finite points, never dropped
        self._pending: Bucket | None = None
        self._pending_n = 0
        self._cap = 0
        self._first = self._lo = self._hi = 0  # rows kept: [_first, _hi); the recent window: [_lo, _hi)
        self._mark = 0  # rows (counted since the start) the array rules have judged
        self._round = 0  # rows the last round judged
        self._step: np.ndarray = np.empty(0, dtype=np.int64)
        self._value: np.ndarray = np.empty(0, dtype=np.float64)
        self._time: np.ndarray = np.empty(0, dtype=np.float64)  # NaN: the log gave no time
        self._line: np.ndarray = np.empty(0, dtype=np.int64)
        self._inf: np.ndarray = np.empty(0, dtype=bool)  # the step was inferred
        self._points: deque[Point] = deque(maxlen=RECENT_POINTS)
        self._built = 0  # rows (counted since the start) that `_points` has caught up with

    # -- appending --------------------------------------------------------------------------------

    def add(self, point: Point) -> None:
        """One row (live telemetry, tests); the row path of `extend`."""
        t = point.time
        self.extend(np.array([point.step], dtype=np.int64), np.array([point.value], dtype=np.float64),
                    np.array([point.line], dtype=np.int64),
                    np.array([math.nan if t is None else t], dtype=np.float64),
                    np.array([point.step_inferred], dtype=bool))
        if self._built == self.count - 1:  # keep the caller's object as the newest point (cheap, and
            self._points.append(point)  # `recent[-1] is point` holds as it did)
            self._built = self.count

    def extend(self, step: np.ndarray, value: np.ndarray, line: np.ndarray, time: np.ndarray,
               inferred: np.ndarray) -> None:
        """Rows in log order, as arrays of equal length (time NaN where the log gave none)."""
        k = len(value)
        if not k:
            return
        finite = self._count(step, value, line, time, inferred)
        if self._hi + k > self._cap:  # the arrays are about to be moved: fold what they hold first
            self._fold()
            self._append(step, value, line, time, inferred)  # (it may keep only the batch's newest rows)
            self._add_history(step, value, finite, time)
        else:  # folded later, many rows in one go: a backlog's small stretches each cost a fold otherwise
            self._append(step, value, line, time, inferred)
            self._unfolded += k

    def extend_rows(self, rows: np.ndarray, step: np.ndarray, value: np.ndarray, line: np.ndarray,
                    time: np.ndarray, inferred: np.ndarray) -> None:
        """`extend` with the rows `rows` (ascending indices) of the given columns: gathered straight into
        the series' arrays while they have room, with no copy made first (a backlog's stretch holds the
        rows of every metric of its source, and each series takes its own)."""
        k = len(rows)
        if not k:
            return
        # once the head is kept, tallies are all it needs: the native gather writes in place and tallies
        gather = len(self.head) >= HEAD_POINTS and kernels.native_in_use()
        if self._hi + k > self._cap:
            if not gather or k >= KEPT_ROWS:
                self.extend(step[rows], value[rows], line[rows], time[rows], inferred[rows])
                return
            self._fold()  # the arrays are about to be moved: what they hold unfolded goes first
            self._make_room(k, self.count)
        hi = self._hi
        if gather:
            t = kernels.gather_rows(rows, (step, value, line, time, inferred),
                                    (self._step, self._value, self._line, self._time, self._inf), hi)
            self._tally(k, t.finite, t.nan, t.least, t.greatest)
        else:
            for col, into in ((step, self._step), (value, self._value), (line, self._line), (time, self._time),
                              (inferred, self._inf)):
                col.take(rows, out=into[hi:hi + k], mode="clip")  # clip: no buffer (the rows are in range)
            self._count(self._step[hi:hi + k], self._value[hi:hi + k], self._line[hi:hi + k],
                        self._time[hi:hi + k], self._inf[hi:hi + k])
        self._stored(k)
        self._unfolded += k

    def _tally(self, k: int, finite: int, nan: int, lo: float, hi: float) -> None:
        """The whole-run counts and extremes after k rows of which `finite` were finite and `nan` NaN, the
        finite ones between lo and hi (`_count` tallies them; the native gather hands them over)."""
        self.count += k
        if finite:
            if lo < self.minimum:
                self.minimum = lo
            if hi > self.maximum:
                self.maximum = hi
        self.nan_count += nan
        self.inf_count += k - finite - nan

    def _count(self, step: np.ndarray, value: np.ndarray, line: np.ndarray, time: np.ndarray,
               inferred: np.ndarray) -> np.ndarray:
        """The new rows' share of the whole-run counts, extremes, first value and head; their finite mask."""
        k = len(value)
        finite = np.isfinite(value)
        n_fin = int(np.count_nonzero(finite))
        nan = int(np.count_nonzero(np.isnan(value))) if n_fin < k else 0
        lo = hi = math.nan
        if n_fin:
            fv = value if n_fin == k else value[finite]
            lo, hi = float(fv.min()), float(fv.max())
        self._tally(k, n_fin, nan, lo, hi)
        if n_fin:
            if self.first is None:
                self.first = float(fv[0])
            if len(self.head) < HEAD_POINTS:
                for i in np.flatnonzero(finite)[:HEAD_POINTS - len(self.head)].tolist():
                    t = float(time[i])
                    self.head.append(Point(int(step[i]), float(value[i]), None if t != t else t, int(line[i]),
                                           bool(inferred[i])))
        return finite

    def _fold(self) -> None:
        """The stored rows not yet in the history folded into it (they are always the newest rows, all
        still stored: the arrays are never moved with rows unfolded)."""
        n = self._unfolded
        if n:
            self._unfolded = 0
            lo = self._hi - n
            value = self._value[lo:self._hi]
            self._add_history(self._step[lo:self._hi], value, np.isfinite(value), self._time[lo:self._hi])

    @property
    def history(self) -> History:
        """The whole run's finished buckets, oldest first (the unfinished one is in `whole_run`)."""
        self._fold()
        return self._history

    @property
    def bucket_size(self) -> int:
        """Rows per history bucket: 1 at first, doubled each time the buckets are halved."""
        self._fold()
        return self._bucket_size

    def _append(self, step: np.ndarray, value: np.ndarray, line: np.ndarray, time: np.ndarray,
                inferred: np.ndarray) -> None:
        k = len(value)
        if self._hi + k > self._cap:
            counted = self.count - k  # rows counted before these (`_count` has counted them)
            if k >= KEPT_ROWS:  # only the newest rows are kept
                start = k - KEPT_ROWS
                step, value, line, time, inferred = (step[start:], value[start:], line[start:], time[start:],
                                                     inferred[start:])
                k = KEPT_ROWS
            self._make_room(k, counted)
        hi = self._hi
        self._step[hi:hi + k] = step
        self._value[hi:hi + k] = value
        self._line[hi:hi + k] = line
        self._time[hi:hi + k] = time
        self._inf[hi:hi + k] = inferred
        self._stored(k)

    def _make_room(self, k: int, counted: int) -> None:
        """Room for k more rows (at most KEPT_ROWS) after those kept, `counted` rows having been counted
        before them: the recent window before the rows not yet judged, and those rows, moved to the front
        (the arrays grow first when that is not enough)."""
        keep = 0 if k >= KEPT_ROWS else min(self._hi - self._first, KEPT_ROWS, RECENT_POINTS + counted - self._mark)
        need = keep + k
        # doubling while the series is short (a metric logged a few times costs little); once long,
        # room for RECENT_POINTS more, so a row is moved a few times at most
        self._move(keep, max(self._cap, min(2 * need, need + RECENT_POINTS), 64))

    def _move(self, keep: int, cap: int) -> None:
        """The newest `keep` rows moved to the front of arrays of `cap` rows (new ones when the size
        changes)."""
        lo = self._hi - keep
        fresh: list[np.ndarray] = []
        for arr in (self._step, self._value, self._line, self._time, self._inf):
            new = np.empty(cap, dtype=arr.dtype) if cap != self._cap else arr
            new[:keep] = arr[lo:self._hi]
            fresh.append(new)
        self._step, self._value, self._line, self._time, self._inf = fresh
        self._cap, self._first, self._hi = cap, 0, keep
        self._lo = max(0, keep - RECENT_POINTS)

    def _stored(self, k: int) -> None:
        """k rows were written after the last one kept."""
        self._hi += k
        self._first = max(self._first, self._hi - KEPT_ROWS)
        self._lo = max(self._first, self._hi - RECENT_POINTS)

    def judged(self) -> None:
        """The array rules have judged every row stored so far: from now on only the recent window of
        them must be kept (the engine calls it at each round, and after a later round that left a roomy
        series alone, so that a log that writes one metric for a long stretch, then the next, does not
        keep a round's room in every series it has done with)."""
        self._round = self.count - self._mark
        self._mark = self.count

    def give_back_room(self) -> None:
        """After a round (its rules done with every series' rows): arrays grown for a long run of rows
        give their room back once the last round filled less than a quarter of it."""
        if self._cap > IDLE_ROOM and 4 * self._round < self._cap:
            self._shrink()

    @property
    def roomy(self) -> bool:
        """Whether the arrays hold more room than an idle series keeps (see `give_back_room`)."""
        return self._cap > IDLE_ROOM

    def _shrink(self) -> None:
        """The arrays cut down to the rows still kept (the recent window, every row being judged)."""
        self._fold()  # the arrays are about to be moved: what they hold unfolded goes first
        keep = min(self._hi - self._first, RECENT_POINTS)
        self._move(keep, max(64, min(2 * keep, keep + RECENT_POINTS)))

    def _add_history(self, step: np.ndarray, value: np.ndarray, finite: np.ndarray, time: np.ndarray) -> None:
        """The rows folded into buckets of `bucket_size`, exactly as one row at a time would fold them:
        min and max over the finite values (NaN when there are none), sums added in order."""
        at, k = 0, len(value)
        while at < k:
            p = self._pending
            if p is None and k - at >= self._bucket_size:
                n = min((k - at) // self._bucket_size, HISTORY_BUCKETS - len(self._history))
                stop = at + n * self._bucket_size
                self._full_buckets(step[at:stop], value[at:stop], finite[at:stop], time[at:stop], n)
                at = stop
                if len(self._history) >= HISTORY_BUCKETS:
                    self._halve()
                continue
            m = min(self._bucket_size - self._pending_n, k - at)
            self._fill_pending(step[at:at + m], value[at:at + m], finite[at:at + m], time[at:at + m])
            at += m
            if self._pending_n >= self._bucket_size:
                assert self._pending is not None
                self._history.append(self._pending)
                self._pending = None
                self._pending_n = 0
                if len(self._history) >= HISTORY_BUCKETS:
                    self._halve()

    def _full_buckets(self, step: np.ndarray, value: np.ndarray, finite: np.ndarray, time: np.ndarray,
                      n: int) -> None:
        b = self._bucket_size
        v = value.reshape(n, b)
        lows, highs, totals, nfin = fold_buckets(value, finite, b)
        s = step.reshape(n, b)
        self._history.extend(s[:, 0], s[:, -1], lows, highs, v[:, -1], totals, nfin, b - nfin,
                             first_times(time.reshape(n, b)))

    def _fill_pending(self, step: np.ndarray, value: np.ndarray, finite: np.ndarray, time: np.ndarray) -> None:
        m = len(value)
        p = self._pending
        if p is not None and p.first_time != p.first_time:
            p.first_time = float(first_times(time.reshape(1, m))[0])
        f = int(np.count_nonzero(finite))
        if f:
            fv = value[finite]
            lo, hi = float(fv.min()), float(fv.max())
        else:
            lo = hi = math.nan
        if p is None:
            addends = np.where(finite, value, -0.0)
            addends[0] = value[0] if finite[0] else 0.0
            with np.errstate(over="ignore"):  # sums past the largest float are inf, said nowhere
                total = float(np.add.accumulate(addends)[-1])
            self._pending = Bucket(int(step[0]), int(step[-1]), lo, hi, float(value[-1]), total, f, m - f,
                                   float(first_times(time.reshape(1, m))[0]))
            self._pending_n = m
            return
        if f:
            if p.minimum != p.minimum or lo < p.minimum:
                p.minimum = lo
            if p.maximum != p.maximum or hi > p.maximum:
                p.maximum = hi
            addends = np.concatenate(([p.total], np.where(finite, value, -0.0)))
            with np.errstate(over="ignore"):
                p.total = float(np.add.accumulate(addends)[-1])
        p.finite += f
        p.nonfinite += m - f
        p.last_step = int(step[-1])
        p.last = float(value[-1])
        self._pending_n += m

    def _halve(self) -> None:
        self._history.halve()
        self._bucket_size *= 2

    # -- reading ----------------------------------------------------------------------------------

    def columns(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Step, value, line and inferred of the last n rows kept (up to KEPT_ROWS; fewer when fewer are
        kept), oldest first: views, valid until the next append."""
        lo = max(self._first, self._hi - n) if n > 0 else self._hi
        hi = self._hi
        return self._step[lo:hi], self._value[lo:hi], self._line[lo:hi], self._inf[lo:hi]

    def times(self, n: int) -> np.ndarray:
        """The times (NaN: none printed) of the last n rows kept, as `columns` gives the rest."""
        lo = max(self._first, self._hi - n) if n > 0 else self._hi
        return self._time[lo:self._hi]

    def upto_line(self, line: int) -> tuple[np.ndarray, np.ndarray]:
        """Steps and values of the recent window as it was when `line` was logged: the last
        RECENT_POINTS rows logged on lines up to `line`, oldest first (views, valid until the next
        append). The array rules judge a round of rows after all of them are stored, so a rule that
        reads another series while judging a row reads it here, never at its newest rows."""
        # the last row logged on a line up to `line`: a search from the end, not a bisection, as line
        # numbers start again within a series when a followed file is truncated
        at = np.flatnonzero(self._line[self._first:self._hi] <= line)
        hi = self._first + (int(at[-1]) + 1 if len(at) else 0)
        lo = max(self._first, hi - RECENT_POINTS)
        return self._step[lo:hi], self._value[lo:hi]

    def peak_upto(self, line: int) -> float | None:
        """The greatest finite value logged on lines up to `line`, None when there is none. A finding's
        fixes quote the peak as it stood when the finding was made, so the words are the same whether
        the rows came one at a time (tail) or a whole backlog at once (check). Rows no longer stored are
        read from the history buckets that ended before the first stored row."""
        at = np.flatnonzero(self._line[self._first:self._hi] <= line)
        hi = self._first + (int(at[-1]) + 1 if len(at) else 0)
        kept = self._value[self._first:hi]
        kept = kept[np.isfinite(kept)]
        peak = float(kept.max()) if len(kept) else -math.inf
        if self.count > self._hi - self._first and self._hi > self._first:  # rows were dropped
            first_kept = int(self._step[self._first])
            for b in self.history.buckets():
                if b.last_step < first_kept and b.finite and b.maximum > peak:
                    peak = b.maximum
        return peak if math.isfinite(peak) else None

    @property
    def recent(self) -> deque[Point]:
        """The newest RECENT_POINTS rows as points, oldest first. Built on demand, each row once."""
        new = self.count - self._built
        if new:
            n = min(new, self._hi - self._lo)
            lo = self._hi - n
            for s, v, t, ln, inf in zip(self._step[lo:self._hi].tolist(), self._value[lo:self._hi].tolist(),
                                        self._time[lo:self._hi].tolist(), self._line[lo:self._hi].tolist(),
                                        self._inf[lo:self._hi].tolist()):
                self._points.append(Point(s, v, None if t != t else t, ln, inf))
            self._built = self.count
        return self._points

    @property
    def last(self) -> Point | None:
        recent = self.recent
        return recent[-1] if recent else None

    def newest(self) -> tuple[int, float] | None:
        """Step and value of the newest row, read from the columns: what a summary of every series wants,
        without building the points of `recent` for each (a log of a few hundred metrics)."""
        if self._hi == self._lo:
            return None
        return int(self._step[self._hi - 1]), float(self._value[self._hi - 1])

    def newest_finite(self) -> tuple[int, float] | None:
        """Step and value of the newest finite row held: what a summary names beside a last value that is
        NaN or Inf ("final" is the last logged value; when that is not finite, the last finite one with its
        step says where the numbers stopped)."""
        fin = np.flatnonzero(np.isfinite(self._value[self._lo:self._hi]))
        if not len(fin):
            return None
        at = self._lo + int(fin[-1])
        return int(self._step[at]), float(self._value[at])

    @property
    def finite_count(self) -> int:
        """Finite points in the whole run."""
        return self.count - self.nan_count - self.inf_count

    def values(self, n: int | None = None) -> list[float]:
        """The last n values (all recent ones when n is None), NaN and Inf included."""
        if n is None:
            return self._value[self._lo:self._hi].tolist()
        if n <= 0:
            return []
        return self._value[max(self._lo, self._hi - n):self._hi].tolist()

    def last_points(self, n: int) -> list[Point]:
        """The last n points, oldest first, NaN and Inf included; costs O(n), not O(recent)."""
        if n <= 0:
            return []
        out = list(islice(reversed(self.recent), n))
        out.reverse()
        return out

    def _finite_tail(self, n: int, skip_newest: bool) -> np.ndarray:
        """Offsets back from the newest row (1 = newest) of the last n finite rows, oldest first. Looks
        back at most max(SCAN_MIN, 8n) rows, so a long NaN stretch can shorten the answer but never make
        every call pay for the whole recent window."""
        hi = self._hi - (1 if skip_newest and self._hi > self._lo else 0)
        lo = max(self._lo, hi - max(SCAN_MIN, 8 * n))
        fin = np.flatnonzero(np.isfinite(self._value[lo:hi]))[-n:]
        return self._hi - (lo + fin)

    def tail(self, n: int, *, skip: Point | None = None) -> list[Point]:
        """The last n finite points, oldest first (`skip`: leave that point out if it is the newest)."""
        if n <= 0:
            return []
        recent = self.recent
        skip_newest = skip is not None and bool(recent) and recent[-1] is skip
        return [recent[-back] for back in self._finite_tail(n, skip_newest).tolist()]

    def tail_values(self, n: int, *, skip_newest: bool = False) -> list[float]:
        """The values of tail(n), without building points."""
        if n <= 0:
            return []
        return self._value[self._hi - self._finite_tail(n, skip_newest)].tolist()

    def tail_columns(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Steps and values of tail(n), without building points (copies)."""
        at = self._hi - self._finite_tail(n, False) if n > 0 else np.zeros(0, dtype=np.int64)
        return self._step[at], self._value[at]

    def whole_run(self) -> list[Bucket]:
        """The downsampled history of the whole run, oldest first, the unfinished bucket last."""
        self._fold()
        return self._history.buckets() + ([self._pending] if self._pending is not None else [])


def first_times(times: np.ndarray) -> np.ndarray:
    """Per row of a (buckets, size) array: its first time that is not NaN, NaN when none is."""
    known = times == times
    return times[np.arange(len(times)), known.argmax(axis=1)]


def fold_buckets(value: np.ndarray, finite: np.ndarray, size: int) -> tuple[np.ndarray, ...]:
    """Per whole bucket of `size` rows: the least and greatest finite value (NaN when none), the finite
    values summed one at a time in row order, and how many were finite. In the native extension when it
    is in use (one pass; the ordered sums cost numpy a 2-D accumulate), else numpy's
    (`trainwatch.scan.reference.kernels`). `finite` must be `np.isfinite(value)`: the native fold reads
    finiteness off the values itself."""
    return tuple(kernels.fold_buckets(value, finite, size))


class MetricStore:
    """Series by (source, metric name); the one place metric history lives."""

    def __init__(self) -> None:
        self._series: dict[tuple[str, str], Series] = {}

    def series(self, source: str, name: str) -> Series:
        """The series of one metric of one source, made empty the first time it is asked for."""
        got = self._series.get((source, name))
        if got is None:
            got = self._series[(source, name)] = Series(name, source)
        return got

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
