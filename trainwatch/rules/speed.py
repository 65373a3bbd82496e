"""Throughput falling well below the run's own level (tokens/s, samples/s, step time).

Written over arrays: the run's level (the median of a long window) and the recent median are rolling
medians over the finite points, computed for a whole batch of rows at once; wording is paid only where
an alert begins.

A log that holds a relaunch or a resume (the step counter goes back) holds several attempts, and each is
judged on its own: a relaunch compiles and warms up again, and a throughput or clock measured since the
launch starts over, so its first points are no slowdown of the run before it. The level and the warm-up
`skip` count from the attempt's first point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import RuleContext
from trainwatch.rules.registry import register
from trainwatch.rules.rolling import RowTail, restarts, tail_sizes, trailing_max, trailing_median_where, trailing_min
from trainwatch.rules.stats import fmt
from trainwatch.rulespec import RuleSpec
from trainwatch.store import RECENT_POINTS, SCAN_MIN

SLOWER_IS_HIGHER = {"step_time_ms", "time"}
CLOCK_PRONE = {"time"}
"""A bare `time` is the seconds one iteration took in some logs (mmengine, detectron2: `time: 0.7816
data_time: 0.0035`) and the run's elapsed clock in others. A duration goes down about as often as up; a
clock only grows, except where a resumed run starts it again (or switches it to the Unix time). So such a
series is judged only while its falls are at least `clock_falls` of its moves so far."""


@dataclass
class _Levels:
    """The last batch's medians of one series, for `finding` and `last_value` to read back."""

    start: int  # the window index of the first new row
    base: np.ndarray  # per new row, the run's own level (NaN where not judged)
    now: np.ndarray  # per new row, the median of the recent points
    steps: np.ndarray  # the rows carried before the new ones, then the new ones: where a drop began
    values: np.ndarray
    held: int  # how many of them were carried
    attempt: np.ndarray  # per new row, the number of its attempt
    began: np.ndarray  # per new row, the first step of its attempt
    held_in: np.ndarray  # per new row, the attempt of the finite row before it if the drop held there, else -1


@dataclass
class _Attempt:
    """Where a series' current attempt began, carried from one batch of rows to the next."""

    series: object  # the series it was counted on: a new one (another training in the log) starts afresh
    last_step: int  # the step of the last row seen: a lower one starts a new attempt
    finite_before: int  # the series' finite points before the attempt's first row
    number: int  # how many attempts began, this one included
    began: int  # the attempt's first step
    held_in: int = -1  # the attempt of the last finite row if the drop held there, else -1


@dataclass(frozen=True)
class SpeedDropParams:
    """Parameters of speed.drop; their meaning and defaults are in presets/base.yaml."""

    skip: int
    window: int
    recent: int
    min_history: int
    drop: float
    clock_falls: float


@register("speed.drop")
class SpeedDrop(ArrayRule):
    id = "speed.drop"
    params = SpeedDropParams
    p: SpeedDropParams
    watches = ("tokens_per_sec", "samples_per_sec", "steps_per_sec", "step_time_ms", "time")
    history = 0  # the rule carries the rows it needs itself (RowTail), however far a NaN stretch reaches

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._rows: dict[tuple[str, str], RowTail] = {}
        self._levels: dict[tuple[str, str], _Levels] = {}
        self._fell: dict[tuple[str, str], tuple[object, int, int, float]] = {}  # series, falls, moves, last value
        self._attempts: dict[tuple[str, str], _Attempt] = {}

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        recent, window = self.p.recent, self.p.window
        key = (w.source, w.name)
        tail = self._rows.get(key)
        if tail is None:
            tail = self._rows[key] = RowTail()
        series = ctx.series(w.name, w.source)
        steps, values, held = tail.extend(series, w.step[w.start:], w.new)
        finite = np.isfinite(values)
        fin_new = finite[held:]
        total = series.finite_count if series is not None else int(finite.sum())
        count = total - (int(fin_new.sum()) - np.cumsum(fin_new))  # the series' finite count at each row
        restart = self._restarts(key, series, w.step[w.start:])
        was = self._attempts.get(key)
        usable = self._in_attempt(key, series, w.step[w.start:], count, fin_new, restart) - self.p.skip  # warm-up
        wanted = np.clip(usable, 0, window + recent)
        need = min(RECENT_POINTS, max(SCAN_MIN, 8 * (window + recent)))
        lo = max(0, held - need)
        fin = finite[lo:]
        at = np.arange(held - lo, len(fin))
        size = tail_sizes(fin, at, wanted, lo)  # the points tail() gave: a NaN stretch can shorten them
        ok = fin_new & (usable >= max(self.p.min_history, recent + 3)) & (size > recent)
        if fin.all():  # the finite points are the rows themselves
            fv, idx = values[lo:], at
        else:
            fv = values[lo:][fin]
            idx = (np.cumsum(fin) - 1)[at]
        m = len(fin_new)
        base = np.full(m, np.nan)
        now = np.full(m, np.nan)
        higher = w.name in SLOWER_IS_HIGHER
        drop = self.p.drop
        if ok.any():
            # the level: the older points of the window, all but the `recent` newest
            ns_base = np.zeros(len(fv), dtype=np.int64)
            ns_base[idx[ok] - recent] = size[ok] - recent
            ns_now = np.zeros(len(fv), dtype=np.int64)
            ns_now[idx[ok]] = recent
            can = ok.copy()
            can[ok] = self._may_drop(fv, ns_base, ns_now, idx[ok], recent, higher, drop)
            at = idx[can]
            want = np.zeros(len(fv), dtype=bool)
            want[at - recent] = True
            base[can] = trailing_median_where(fv, ns_base, want)[at - recent]
            want[:] = False
            want[at] = True
            now[can] = trailing_median_where(fv, ns_now, want)[at]
        with np.errstate(invalid="ignore", over="ignore"):
            cond = ok & (base > 0) & (now > 0)
            slower = now > base / drop if higher else now < base * drop
        if w.name in CLOCK_PRONE:
            cond &= self._duration(key, series, values[held:], fin_new, restart)
        cond &= slower
        # read back only at rows whose condition held, or where an alert ended
        self._levels[key] = _Levels(w.start, base, now, steps, values, held,
                                    *self._attempt_rows(key, was, w.step[w.start:], restart, fin_new, cond))
        return cond

    def _attempt_rows(self, key: tuple[str, str], was: _Attempt | None, step: np.ndarray, restart: np.ndarray,
                      fin_new: np.ndarray, cond: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per new row: its attempt's number and first step, and the attempt of the finite row before it
        when the drop held there (else -1), for `unrecovered`. The last row's are carried."""
        m = len(step)
        number = (was.number if was is not None else 0) + np.cumsum(restart)
        first = np.maximum.accumulate(np.where(restart, np.arange(m), -1))
        began = np.where(first < 0, was.began if was is not None else 0, step[np.maximum(first, 0)])
        rows = np.flatnonzero(fin_new)
        mark = np.where(cond[rows], number[rows], -1)  # per finite row: its attempt where the drop held
        k = np.cumsum(fin_new) - fin_new - 1  # per row, the finite row before it (-1: one carried)
        carried = was.held_in if was is not None else -1
        held_in = np.where(k >= 0, mark[np.maximum(k, 0)] if len(mark) else -1, carried)
        if m:
            a = self._attempts[key]
            a.number, a.began = int(number[-1]), int(began[-1])
            a.held_in = int(mark[-1]) if len(mark) else carried
        return number, began, held_in

    def _restarts(self, key: tuple[str, str], series: object, step: np.ndarray) -> np.ndarray:
        """Per new row, whether it begins an attempt: the step went back (or the series is new)."""
        a = self._attempts.get(key)
        fresh = a is None or a.series is not series
        out = np.diff(restarts(step, None if fresh or a is None else a.last_step), prepend=0) > 0
        if fresh and len(out):
            out[0] = True
        return out

    def _in_attempt(self, key: tuple[str, str], series: object, step: np.ndarray, count: np.ndarray,
                    fin_new: np.ndarray, restart: np.ndarray) -> np.ndarray:
        """Per new row, the finite points of the series' current attempt up to it (`count`: of the whole
        series); where the last row's attempt began is carried to the next batch."""
        a = self._attempts.get(key)
        m = len(count)
        if not m:
            return count
        before_row = count - fin_new  # the series' finite count before each row
        first = np.maximum.accumulate(np.where(restart, np.arange(m), -1))  # the attempt's first row, if new
        base = np.where(first < 0, a.finite_before if a is not None else 0, before_row[np.maximum(first, 0)])
        self._attempts[key] = _Attempt(series, int(step[-1]), int(base[-1]), a.number if a is not None else 0,
                                       a.began if a is not None else 0, a.held_in if a is not None else -1)
        return count - base

    def _duration(self, key: tuple[str, str], series: object, new: np.ndarray, fin_new: np.ndarray,
                  restart: np.ndarray) -> np.ndarray:
        """Per new row, whether the series has fallen in at least `clock_falls` of its moves by then (a
        duration, not a clock). A fall across a relaunch is no fall, nor a move: an elapsed clock starts
        again at 0 there."""
        was, falls, moves, last = self._fell.get(key, (None, 0, 0, np.nan))
        if was is not series:
            falls, moves, last = 0, 0, np.nan
        fv = new[fin_new]
        attempt = np.cumsum(restart)[fin_new]  # the attempt of each finite point (counted in this batch)
        same = attempt == np.concatenate(([0], attempt[:-1]))  # no relaunch since the point before
        prev = np.concatenate(([last], fv[:-1]))
        with np.errstate(invalid="ignore"):
            down = falls + np.cumsum((fv < prev) & same)
        n_moves = moves + np.cumsum(~np.isnan(prev) & same)
        ok = (down >= 1) & (down >= self.p.clock_falls * n_moves)
        out = np.full(len(new), bool(falls >= 1 and falls >= self.p.clock_falls * moves))
        pos = np.cumsum(fin_new) - 1  # the last finite point at or before each row
        out[pos >= 0] = ok[pos[pos >= 0]]
        after = restart  # the rows after the last finite one
        if len(fv):
            last = float(fv[-1])
            after = restart[len(fin_new) - int(np.argmax(fin_new[::-1])):]
            falls, moves = int(down[-1]), int(n_moves[-1])
        if after.any():
            last = np.nan  # a relaunch after the last point: the next one is compared with none
        self._fell[key] = (series, falls, moves, last)
        return out

    @staticmethod
    def _may_drop(fv: np.ndarray, ns_base: np.ndarray, ns_now: np.ndarray, idx: np.ndarray, recent: int,
                  higher: bool, drop: float) -> np.ndarray:
        """Per judged row (`idx`: its finite point), False where the recent median cannot be past the
        level's drop whatever the medians are: the recent window's least value not below the level
        window's greatest times `drop` (its greatest not above the level's least over `drop`, for a step
        time). The medians lie between those bounds and the products round the same way, so only the
        other rows need them: in a steady run, few."""
        if not drop > 0:
            return np.ones(len(idx), dtype=bool)
        with np.errstate(invalid="ignore", over="ignore"):
            if higher:
                return ~(trailing_max(fv, ns_now)[idx] <= trailing_min(fv, ns_base)[idx - recent] / drop)
            return ~(trailing_min(fv, ns_now)[idx] >= trailing_max(fv, ns_base)[idx - recent] * drop)

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        lv = self._levels[(w.source, w.name)]
        base, now = float(lv.base[row - lv.start]), float(lv.now[row - lv.start])
        higher = w.name in SLOWER_IS_HIGHER
        began_step, began_value = self._began(lv, row - lv.start, base, higher)
        moved = "rose" if higher else "fell"
        rel, means = against(now, base, higher)
        return Finding(message=f"{w.name} {moved} to {fmt(began_value)} at step {began_step}; the median of the last "
                               f"{self.p.recent} {w.name} points, {fmt(now)}, is {rel} the run's own level, the "
                               f"median of the points before: {fmt(base)}{means}",
                       began_step=began_step,
                       evidence={"metric": w.name, "value": now, "baseline": base, "ratio": now / base,
                                 "step": int(w.step[row]), "last_value": now,
                                 "value_stat": f"median of the last {self.p.recent} points",
                                 "last_stat": f"median of the last {self.p.recent} points",
                                 "began_step": began_step, "began_value": began_value})

    def unrecovered(self, w: Window, row: int, evidence: dict[str, Any]) -> str | None:
        """The run's level is a moving median: after a long slow stretch it is the slow speed itself, and
        the drop stops holding without the speed ever coming back. Recovered means back within `drop` of
        the level the drop was found against. A drop that held until its attempt ended (a crash, then a
        relaunch) did not recover either: the next attempt's first points are its own warm-up, no
        measure of the speed the drop was found in."""
        lv = self._levels[(w.source, w.name)]
        i = row - lv.start
        if 0 <= lv.held_in[i] != lv.attempt[i]:  # it held until its attempt ended
            return (f"{w.name} was still slow when its attempt ended (the run was started again at step "
                    f"{int(lv.began[i])}, and each attempt is judged on its own)")
        base = evidence.get("baseline")
        if not isinstance(base, (int, float)) or not base > 0:
            return None
        now, said = w.said_at(row)
        higher = w.name in SLOWER_IS_HIGHER
        if (now <= base / self.p.drop) if higher else (now >= self.p.drop * base):
            return None
        return (f"{w.name} did not come back: {said} against the run's level before the drop, the median of "
                f"the points before it ({fmt(base)}); that level moved to the slow speed")

    def _began(self, lv: _Levels, i: int, base: float, higher: bool) -> tuple[int, float]:
        """Where the drop began: the first of the recent points (those whose median was found slow) that is
        slow itself. The alert is found where the median crosses, a few points after the first slow one."""
        upto = lv.held + i + 1
        fin = np.isfinite(lv.values[:upto])
        steps, values = lv.steps[:upto][fin][-self.p.recent:], lv.values[:upto][fin][-self.p.recent:]
        with np.errstate(invalid="ignore", over="ignore"):
            slow = values > base / self.p.drop if higher else values < base * self.p.drop
        first = int(np.argmax(slow)) if slow.any() else len(values) - 1  # the median is slow: so is some point
        return int(steps[first]), float(values[first])

    def last_value(self, w: Window, row: int) -> float | None:
        lv = self._levels[(w.source, w.name)]
        return float(lv.now[row - lv.start])


def against(now: float, base: float, slower_is_higher: bool) -> tuple[str, str]:
    """How a recent level stands to the run's own, and what that means for the throughput: `40% of` for a
    throughput; `26.4x` for a step time, which rises as the run slows down, and `a throughput at 4% of it`."""
    if not slower_is_higher:
        return f"{now / base:.0%} of", ""
    return f"{now / base:.3g}x", f" (a throughput at {base / now:.0%} of it)"
