"""Learning-rate rules: zero before the schedule's end, no warmup at all, and a schedule that jumps back up.

They know what schedules do on purpose: anneal to 0 at the end, drop by a constant factor now and then
(step schedules, ReduceLROnPlateau), start epoch-level logs at the peak. None of that is a fault.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainwatch.model import Finding, Severity
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.stats import fmt
from trainwatch.store import Point, Series
from trainwatch.rules.registry import register


@dataclass(frozen=True)
class LrZeroParams:
    """Parameters of lr.zero; their meaning and defaults are in presets/base.yaml."""

    end_fraction: float
    annealed_fraction: float


@register("lr.zero")
class LrZero(Rule):
    """LR exactly 0 before the schedule's end (`for` in the preset asks for several points).

    The end of the schedule is known from the total (banner, progress bar, `max_steps`): zeros from
    `end_fraction` of it on are the schedule finishing. Without a total, an LR that annealed smoothly
    (its last value before 0 was already a small fraction of the peak) is given the same benefit for
    as long as it can still be the end: a zero that began before `end_fraction` of the steps seen so
    far cannot be, whatever the total turns out to be. `check` and `tail` judge it the same way,
    sample by sample. An LR that drops to 0 from a high value is a fault wherever it happens.
    """

    id = "lr.zero"
    params = LrZeroParams
    p: LrZeroParams
    watches = ("lr",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        # source -> (step of the first zero of the current stretch, last nonzero value, peak so far)
        self._run: dict[str, list[float]] = {}

    def gate(self, ctx: RuleContext, series: Series, step: np.ndarray, value: np.ndarray) -> np.ndarray:
        return value == 0.0  # only a zero can be a finding; other rows only move the run along (absorb)

    def absorb(self, ctx: RuleContext, series: Series, step: np.ndarray, value: np.ndarray) -> None:
        nonzero = value[np.isfinite(value) & (value != 0.0)]
        if len(nonzero):
            st = self._run.setdefault(series.source, [-1.0, math.nan, 0.0])
            st[0], st[1] = -1.0, float(nonzero[-1])
            st[2] = max(st[2], float(nonzero.max()))

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        v = point.value
        st = self._run.setdefault(series.source, [-1.0, math.nan, 0.0])
        if not math.isfinite(v):
            return None
        if v != 0.0:
            st[0], st[1] = -1.0, v
            st[2] = max(st[2], v)
            return None
        if st[0] < 0:
            st[0] = point.step
        began = int(st[0])
        state = ctx.sources.get(series.source)
        total = state.total_steps if state else None
        end = self.p.end_fraction
        annealed = st[2] > 0 and st[1] == st[1] and st[1] <= self.p.annealed_fraction * st[2]
        if total:
            if began >= end * total:
                return None
        elif annealed and began >= end * point.step:
            return None  # may still be the end of a schedule whose total the log never gave
        ev = {"value": 0.0, "step": began, "total_steps": total}
        if st[2] > 0:
            ev["peak"] = st[2]
        if st[1] == st[1]:
            ev["before"] = st[1]
        if point.step != began:
            ev["last_step"] = point.step
        why = f" of {total}" if total else ""
        fell = _loss_fell(ctx, series.source) if st[2] == 0 else False
        if fell is None:
            return None  # never above 0, and too little loss yet to tell rounding from a real 0
        if fell:
            # never above 0, yet the loss falls: the log rounds a small LR to 0 (`{lr:.4f}` of 3e-5)
            return Finding(message=f"learning rate printed as 0 from step {began}{why} while the loss falls: "
                                   "the log rounds it away (print it with more digits)",
                           evidence=ev, began_step=began, severity=Severity.INFO)
        return Finding(message=f"learning rate is 0 from step {began}{why}", evidence=ev, began_step=began)


def _loss_fell(ctx: RuleContext, source: str) -> bool | None:
    """Whether the loss's latest points sit clearly below its first ones (a run that is learning);
    None while too few points are logged to tell (50, for a noisy start). A log without a loss cannot say."""
    loss = ctx.series("loss", source)
    if loss is None:
        return False
    first = [p.value for p in loss.head[:5]]
    last = loss.tail_values(5)
    if len(first) >= 3 and len(last) >= 3 and loss.finite_count >= 10 and median(last) < 0.9 * median(first):
        return True
    return None if loss.finite_count < 50 else False  # a noisy start needs a while to show its fall


@dataclass(frozen=True)
class LrNoWarmupParams:
    """Parameters of lr.no_warmup; their meaning and defaults are in presets/base.yaml."""

    points: int
    start_within: int


@register("lr.no_warmup")
class LrNoWarmup(ArrayRule):
    """The first logged LR is already the highest: the run started at its peak LR.

    Judged once, on the fifth LR point, and said once. Not judged on epoch-level logs (each record an
    epoch apart, as Keras, Lightning per-epoch and Ultralytics write them): a warmup inside the first
    epoch is invisible there, and a warmup bias that starts high and decays is by design.

    Over arrays every row but that one is a constant false; the verdict reads the eval and epoch series
    only up to that point's line, since the batch is judged after later lines have been stored.
    """

    id = "lr.no_warmup"
    once = True  # the start of the run: it never recovers, the verdict just stops being news
    params = LrNoWarmupParams
    p: LrNoWarmupParams
    watches = ("lr",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._judged: set[str] = set()  # sources whose start has been judged: the verdict never changes
        self._found: dict[str, tuple[int, Finding]] = {}  # source -> (window row, finding) of the last batch

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        out = np.zeros(len(w.new), dtype=bool)
        series = ctx.series(w.name, w.source)
        if w.source in self._judged or series is None:
            return out
        n = self.p.points
        finite = np.isfinite(w.new)
        seen = series.finite_count - int(finite.sum()) + np.cumsum(finite)  # finite points up to each row
        at = np.flatnonzero(seen >= n)
        if not len(at):
            return out
        k = int(at[0])  # the row whose point completes the run's first n finite points
        self._judged.add(w.source)
        pts = series.head[:n]
        first, peak = pts[0].value, max(p.value for p in pts)
        if not (pts[0].step <= self.p.start_within and first > 0 and first >= 0.999 * peak):
            return out
        if epoch_level(ctx, w.source, pts, int(w.line[w.start + k])):
            return out
        start = pts[0]
        out[k] = True
        self._found[w.source] = (w.start + k, Finding(
            message=f"learning rate starts at its peak {fmt(start.value)} (step {start.step}), no warmup",
            evidence={"value": start.value, "peak": peak, "step": start.step}, began_step=start.step))
        return out

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        return self._found.pop(w.source)[1]


def epoch_level(ctx: RuleContext, source: str, lr_points: list[Point], line: int | None = None) -> bool:
    """Whether the log writes one record per epoch: its epoch counter moves by a whole epoch on each
    record, or (when the epoch is the step itself) every record carries a validation result, as
    per-epoch logs do and per-step logs do not. With `line`, only points logged up to that line count."""
    ev = ctx.series("eval_loss", source)
    if ev is not None and len(lr_points) >= 3:
        evaluated = {p.step for p in _upto(ev.head, line)}
        if all(p.step in evaluated for p in lr_points[:-1]):  # the last record may still be arriving
            return True
    ep = ctx.series("epoch", source)
    if ep is None:
        return False
    pts = _upto(ep.head, line)[:16]
    if len(pts) < 2:
        return False
    moved = False
    for a, b in zip(pts, pts[1:]):
        if b.value == a.value:
            if b.step != a.step:
                return False  # a new step within the same epoch: the log is finer than epochs
        elif b.value - a.value < 0.99:
            return False
        else:
            moved = True
    return moved


def _upto(points: list[Point], line: int | None) -> list[Point]:
    """The points logged up to `line` (all when None)."""
    return points if line is None else [p for p in points if p.line <= line]


@dataclass(frozen=True)
class LrScheduleParams:
    """Parameters of lr.schedule; their meaning and defaults are in presets/base.yaml."""

    jump_ratio: float
    decayed: float


@register("lr.schedule")
class LrSchedule(ArrayRule):
    """After decaying from its peak, the LR jumps back up (a restarted or recreated scheduler).

    Over arrays: the finite rows are cut where the step does not move on (a resume: the schedule is
    judged afresh) and at each jump. Within a piece the LR first climbs (the peak follows it), then
    decays (the peak stays, the low is a running minimum), so each piece costs two numpy passes and the
    Python loop runs once per resume or jump, never once per row.
    """

    id = "lr.schedule"
    params = LrScheduleParams
    p: LrScheduleParams
    watches = ("lr",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._state: dict[str, list[float]] = {}  # source -> [peak, low since peak, last step]
        self._jumps: dict[str, dict[int, tuple[float, float]]] = {}  # source -> window row -> (low, peak)

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        v = w.new
        out = np.zeros(len(v), dtype=bool)
        jumps: dict[int, tuple[float, float]] = {}
        self._jumps[w.source] = jumps
        rows = np.flatnonzero(np.isfinite(v))
        if not len(rows):
            return out
        fv, fs = v[rows], w.step[w.start:][rows]
        st = self._state.get(w.source)
        prev = np.empty_like(fs)
        prev[1:] = fs[:-1]
        prev[0] = int(st[2]) if st is not None else np.iinfo(np.int64).max  # the first point starts afresh
        starts = np.flatnonzero(fs <= prev)  # a first point or a step that did not move on (resume rules)
        bounds = [*starts.tolist(), len(fv)]
        if not len(starts) or starts[0] != 0:
            assert st is not None
            bounds.insert(0, 0)
        peak, low = (st[0], st[1]) if st is not None else (math.nan, math.nan)
        fresh = set(starts.tolist())
        for a, b in zip(bounds, bounds[1:]):
            i = a
            if a in fresh:
                peak = low = float(fv[a])
                i = a + 1
            peak, low = self._piece(fv, i, b, peak, low, rows, w.start, jumps, out)
        self._state[w.source] = [peak, low, int(fs[-1])]
        return out

    def _piece(self, fv: np.ndarray, i: int, b: int, peak: float, low: float, rows: np.ndarray, base: int,
               jumps: dict[int, tuple[float, float]], out: np.ndarray) -> tuple[float, float]:
        """Judges finite rows [i, b) of one piece from (peak, low); returns them after row b - 1."""
        decayed, ratio = self.p.decayed, self.p.jump_ratio
        while i < b:
            if low >= peak:  # warming up: the peak follows the LR while it does not fall
                seg = fv[i:b]
                before = np.empty_like(seg)
                before[0] = peak
                before[1:] = seg[:-1]
                fell = np.flatnonzero(seg < before)
                if not len(fell):
                    return float(seg[-1]), float(seg[-1])
                d = i + int(fell[0])
                peak = low = float(fv[d - 1]) if d > i else peak
                i = d
            # decaying: the low is the running minimum of the values since the peak, the row's own excluded
            seg = fv[i:b]
            lows = np.minimum.accumulate(np.concatenate(([low], seg[:-1])))
            with np.errstate(invalid="ignore", over="ignore"):
                hit = np.flatnonzero((lows < decayed * peak) & (lows > 0) & (seg > ratio * lows))
            if not len(hit):
                return peak, min(low, float(seg.min()))
            j = i + int(hit[0])
            r = int(rows[j])
            out[r] = True
            jumps[base + r] = (float(lows[hit[0]]), peak)
            peak = low = float(fv[j])  # a new peak: the jump is reported once
            i = j + 1
        return peak, low

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        low, peak = self._jumps[w.source][row]
        v, step = float(w.value[row]), int(w.step[row])
        return Finding(message=f"learning rate jumped from {fmt(low)} to {fmt(v)} at step {step} "
                               f"after decaying from {fmt(peak)}",
                       evidence={"value": v, "baseline": low, "peak": peak, "ratio": v / low, "step": step})
