"""What the plateau rules need of a loss series, kept per source across batches of rows.

The plateau rules judge a loss curve every few points (a cadence that widens with the run), and each
judgement reads things the store only knows for its newest point: the run segment and its first
points, the last finite values (with `Series.tail`'s look-back limit), the run's bucketed history,
and the LR logged before the point. `Feed` rebuilds each of them as of any row of a batch, from a
small carry (the last rows, the segment, a replica of the store's buckets, the LR seen so far), so a
rule can loop over its judgement rows only and still answer exactly as if asked row by row.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainwatch.rules.array import Window
from trainwatch.rules.base import RuleContext
from trainwatch.rules.rolling import run_lengths
from trainwatch.store import HISTORY_BUCKETS, RECENT_POINTS, SCAN_MIN, Series, fold_buckets


@dataclass
class Seg:
    """A run segment: a step that goes back starts a new one (as `stats.Segments`)."""

    last_step: int
    finite_before: int  # the series' finite count when the segment began
    head: list[float] = field(default_factory=list)  # its first finite values
    head_steps: list[int] = field(default_factory=list)


class Buckets:
    """A replica of `Series.whole_run`: the same buckets with the same sums, added in the same order, so
    a window read from it at any row equals the store's at that row. Fed by chunks, not by rows."""

    def __init__(self) -> None:
        self.first: list[int] = []
        self.total: list[float] = []
        self.finite: list[int] = []
        self.size = 1
        self.count = 0
        self.pending: list[Any] | None = None  # [first step, total, finite, points]

    def add(self, steps: np.ndarray, vals: np.ndarray) -> None:
        fin = np.isfinite(vals)
        z = np.where(fin, vals, 0.0)
        i, m = 0, len(vals)
        self.count += m
        while i < m:
            size = self.size
            p = self.pending
            if p is not None:
                k = min(size - p[3], m - i)
                with np.errstate(over="ignore"):  # sequential, as the store; past the largest float: inf, quietly
                    p[1] = float(np.add.accumulate(np.concatenate(([p[1]], z[i:i + k])))[-1])
                p[2] += int(fin[i:i + k].sum())
                p[3] += k
                i += k
                if p[3] >= size:
                    self.pending = None
                    self._push([p[0]], [p[1]], [p[2]])
                continue
            k = min((m - i) // size, HISTORY_BUCKETS - len(self.total))
            if k <= 0:
                self.pending = [int(steps[i]), 0.0, 0, 0]
                continue
            hi = i + k * size
            # each bucket's sum added in order (the store's fold, whose bucket of finite values is this)
            tot = fold_buckets(z[i:hi], np.ones(hi - i, dtype=bool), size)[2]
            cnt = fin[i:hi].reshape(k, size).sum(axis=1)
            self._push(steps[i:hi:size].tolist(), tot.tolist(), cnt.tolist())
            i = hi

    def _push(self, first: list[int], total: list[float], finite: list[int]) -> None:
        self.first.extend(first)
        self.total.extend(total)
        self.finite.extend(finite)
        if len(self.total) >= HISTORY_BUCKETS:  # the store halves at this length: pairs merge, oldest first
            t, f, s = self.total, self.finite, self.first
            n = len(t) - len(t) % 2
            self.total = [t[j] + t[j + 1] for j in range(0, n, 2)] + t[n:]
            self.finite = [f[j] + f[j + 1] for j in range(0, n, 2)] + f[n:]
            self.first = s[0:n:2] + s[n:]
            self.size *= 2

    def window(self, w: int) -> tuple[list[float], int]:
        """The means of the newest buckets holding at least w finite points, oldest first, and the first
        step of the oldest (as LossPlateau reads `whole_run`)."""
        out: list[float] = []
        count, first = 0, 0
        p = self.pending
        if p is not None and p[2]:
            out.append(p[1] / p[2])
            count += p[2]
            first = p[0]
        if count < w:
            t, f, s = self.total, self.finite, self.first
            for j in range(len(t) - 1, -1, -1):
                if f[j]:
                    out.append(t[j] / f[j])
                    count += f[j]
                    first = s[j]
                    if count >= w:
                        break
        out.reverse()
        return out, first


class Feed:
    """One source's loss rows as the rules read them: built per batch from the carry, then carried on."""

    def __init__(self, keep_head: int, look_back: int, buckets: bool) -> None:
        self.keep_head = keep_head
        self.look_back = min(RECENT_POINTS, look_back)
        self.series: Series | None = None
        self.seg: Seg | None = None
        self.tail_v = np.zeros(0)
        self.tail_s = np.zeros(0, dtype=np.int64)
        self.buckets: Buckets | None = Buckets() if buckets else None
        self.lr = LrView()
        # per batch, filled by `load`:
        self.v = np.zeros(0)  # the carried tail then the new rows
        self.s = np.zeros(0, dtype=np.int64)
        self.off = 0  # index of the first new row in v
        self.n = np.zeros(0, dtype=np.int64)  # per new row, finite points in its segment
        self.seg_id = np.zeros(0, dtype=np.int64)
        self.segs: list[Seg | None] = []
        self.head_row: list[list[int]] = []  # per segment, the new-row index each head entry arrived at
        self.bucket_base = 0  # rows the bucket replica held before this batch

    def load(self, ctx: RuleContext, w: Window) -> None:
        series = ctx.series(w.name, w.source)
        new_v = w.new
        new_s = w.step[w.start:]
        m = len(new_v)
        if series is not self.series:  # a new training in the same log: a new series, nothing carried
            self.series = series
            self.tail_v, self.tail_s = np.zeros(0), np.zeros(0, dtype=np.int64)
            if self.buckets is not None:
                self.buckets = Buckets()
        self.v = np.concatenate((self.tail_v, new_v))
        self.s = np.concatenate((self.tail_s, new_s))
        self.off = len(self.tail_v)
        fin = np.isfinite(new_v)
        fc_end = series.finite_count if series is not None else int(fin.sum())
        fc = fc_end - int(fin.sum()) + np.cumsum(fin)  # the series' finite count after each new row
        # segments: a step below the one before starts one
        seg = self.seg
        prev = np.empty(m, dtype=np.int64)
        if m:
            prev[0] = new_s[0] if seg is None else seg.last_step
            prev[1:] = new_s[:-1]
        restart = new_s < prev
        if seg is None and m:
            restart[0] = True
        self.seg_id = np.cumsum(restart)
        segs: list[Seg | None] = [seg]
        heads: list[list[int]] = [[]]
        for r in np.flatnonzero(restart).tolist():
            segs.append(Seg(int(new_s[r]), int(fc[r]) - int(fin[r])))
            heads.append([])
        fb = np.array([s.finite_before if s is not None else 0 for s in segs], dtype=np.int64)
        self.n = fc - fb[self.seg_id]
        # heads: the first finite values of each segment
        for k, sg in enumerate(segs):
            if sg is None or len(sg.head) >= self.keep_head:
                continue
            rows = np.flatnonzero((self.seg_id == k) & fin)[:self.keep_head - len(sg.head)]
            sg.head.extend(new_v[rows].tolist())
            sg.head_steps.extend(new_s[rows].tolist())
            heads[k] = rows.tolist()
        self.segs, self.head_row = segs, heads
        if m:
            last = segs[-1]
            assert last is not None  # the first row of a source always starts a segment
            last.last_step = int(new_s[-1])
            self.seg = last
        keep = self.look_back
        self.tail_v, self.tail_s = self.v[-keep:].copy(), self.s[-keep:].copy()
        self.bucket_base = self.buckets.count if self.buckets is not None else 0

    def head(self, row: int) -> tuple[list[float], list[int]]:
        """The segment's first finite values (and steps) as known at new row `row`."""
        k = int(self.seg_id[row])
        sg = self.segs[k]
        if sg is None:
            return [], []
        arrived = self.head_row[k]
        cut = len(sg.head) - len(arrived) + bisect_right(arrived, row)
        if cut == len(sg.head):
            return sg.head, sg.head_steps  # the whole head (readers only read it): no copy per row
        return sg.head[:cut], sg.head_steps[:cut]

    def tail(self, row: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """`Series.tail(n)` as of new row `row`: the last n finite values among the last max(SCAN_MIN, 8n)
        rows (and their steps)."""
        if n <= 0:
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        end = self.off + row + 1
        lo = max(0, end - max(SCAN_MIN, 8 * n), end - RECENT_POINTS)
        v = self.v[lo:end]
        ok = np.isfinite(v)
        if ok.all():
            return v[-n:], self.s[lo:end][-n:]
        return v[ok][-n:], self.s[lo:end][ok][-n:]

    def bucket_window(self, row: int, w: int) -> tuple[list[float], int]:
        """The store's bucketed window as of new row `row` (the replica is fed up to that row first)."""
        b = self.buckets
        assert b is not None
        upto = self.bucket_base + row + 1
        if b.count < upto:
            lo = self.off + (b.count - self.bucket_base)
            b.add(self.s[lo:self.off + row + 1], self.v[lo:self.off + row + 1])
        return b.window(w)

    def finish(self) -> None:
        """Feeds the bucket replica the rest of the batch."""
        b = self.buckets
        if b is None:
            return
        done = b.count - self.bucket_base
        if self.off + done < len(self.v):
            b.add(self.s[self.off + done:], self.v[self.off + done:])


class LrView:
    """The LR as a loss row saw it: only LR points logged on an earlier line count (a same-line LR may
    come before or after the loss, and only an earlier line is certain to be there in any batching).

    Each rule asks one question of it, once per batch: each LR point's answer is computed over the LR
    values, and the loss rows are matched to LR points by line only when some answer is true."""

    def __init__(self) -> None:
        self.series: Series | None = None
        self.seen = 0  # LR points of the series already taken in
        self.peak = -math.inf
        self.last = False  # the answer at the last LR point taken in
        self.fin_v: list[float] = []  # the last four finite values
        self.finite_seen = 0

    def _new(self, ctx: RuleContext, source: str) -> tuple[np.ndarray, np.ndarray] | None:
        """Values and lines of the LR points logged since the last call (the newest the series holds)."""
        lr = ctx.series("lr", source)
        if lr is not self.series:
            self.__init__()  # type: ignore[misc]
            self.series = lr
        if lr is None:
            return None
        k = lr.count - self.seen
        self.seen = lr.count
        _, value, line, _ = lr.columns(k)
        return value, line

    def _rows(self, pl: np.ndarray, answer: np.ndarray, lines: np.ndarray) -> np.ndarray:
        """Per loss row (its line), the answer at the last LR point on an earlier line."""
        before = self.last
        if len(answer):
            self.last = bool(answer[-1])
        if not before and not answer.any():
            return np.zeros(len(lines), dtype=bool)
        pos = np.searchsorted(pl, lines, side="left")  # 0: the last point before this batch
        return np.concatenate(([before], answer))[pos]

    def annealing(self, ctx: RuleContext, source: str, lines: np.ndarray, below: float) -> np.ndarray:
        """Per row: the last LR logged is finite and under `below` times the LR's peak so far."""
        new = self._new(ctx, source)
        if new is None:
            return np.zeros(len(lines), dtype=bool)
        pv, pl = new
        fin = np.isfinite(pv)
        lifted = np.where(fin, pv, -math.inf)
        if len(pv) and not lifted.max() > self.peak:  # no new peak: the peak so far at every point
            peaks = np.full(len(pv), self.peak)
        else:
            peaks = np.maximum.accumulate(np.concatenate(([self.peak], lifted)))[1:]
        if len(pv):
            self.peak = float(peaks[-1])
        with np.errstate(invalid="ignore"):
            answer = fin & (peaks > 0) & (pv < below * peaks)
        return self._rows(pl, answer, lines)

    def rising(self, ctx: RuleContext, source: str, lines: np.ndarray) -> np.ndarray:
        """Per row: the LR still climbs, each of its last few finite values above the one before (the
        answer of a non-finite LR point is that of the finite one before it)."""
        new = self._new(ctx, source)
        if new is None:
            return np.zeros(len(lines), dtype=bool)
        pv, pl = new
        fin = np.isfinite(pv)
        c = len(self.fin_v)
        fv = np.concatenate((self.fin_v, pv[fin]))
        up = np.zeros(len(fv), dtype=bool)
        up[1:] = fv[1:] > fv[:-1]
        run = run_lengths(up)  # rises in a row ending at each finite value
        seen = self.finite_seen - c + np.arange(len(fv))  # finite values before each one
        rising_f = ((seen >= 1) & (run >= np.minimum(seen, 3)))[c:]
        # each point's answer: that of the last finite point up to it
        k = np.cumsum(fin) - 1
        answer = np.where(k >= 0, rising_f[np.maximum(k, 0)] if len(rising_f) else False, self.last)
        self.fin_v = fv[-4:].tolist()
        self.finite_seen += int(fin.sum())
        return self._rows(pl, np.asarray(answer, dtype=bool), lines)
