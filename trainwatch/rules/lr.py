"""Learning-rate rules: zero before the schedule's end, no warmup at all, and a schedule that jumps back up.

They know what schedules do on purpose: anneal to 0 at the end, drop by a constant factor now and then
(step schedules, ReduceLROnPlateau), start epoch-level logs at the peak. None of that is a fault.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from trainwatch.model import Finding, Severity
from trainwatch.plans import replanned
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.registry import register
from trainwatch.rules.stats import fmt
from trainwatch.rulespec import RuleSpec
from trainwatch.store import RECENT_POINTS, Point, Series


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

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._run: dict[str, _LrRun] = {}

    def gate(self, ctx: RuleContext, series: Series, step: np.ndarray, value: np.ndarray) -> np.ndarray:
        return value == 0.0  # only a zero can be a finding; other rows only move the run along (absorb)

    def absorb(self, ctx: RuleContext, series: Series, step: np.ndarray, value: np.ndarray) -> None:
        fin = value[np.isfinite(value)]
        if len(fin):
            self._run.setdefault(series.source, _LrRun()).took(fin)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        v = point.value
        st = self._run.setdefault(series.source, _LrRun())
        if not math.isfinite(v):
            return None
        if v != 0.0:
            st.took(np.array((v,)))
            return None
        if st.zero_since is None:
            st.zero_since = point.step
            st.zero_first = st.zero_first or st.peak == 0
        began = st.zero_since
        state = ctx.sources.get(series.source)
        total = state.total_steps if state else None
        end = self.p.end_fraction
        before = st.before
        annealed = st.peak > 0 and before == before and before <= self.p.annealed_fraction * st.peak
        if total:
            if began >= end * total:
                return None
        elif annealed and began >= end * point.step:
            return None  # may still be the end of a schedule whose total the log never gave
        if st.rounded():
            return None  # printed with a few decimals near its last one: the log cannot tell a small LR from 0
        fell = _loss_fell(ctx, series.source) if st.peak == 0 else False
        if fell is None or fell:
            return None  # never above 0: too little loss yet to tell, or it falls (the log rounds a small LR)
        ev = {"value": 0.0, "step": began, "total_steps": total}
        if st.peak > 0:
            ev["peak"] = st.peak
        if before == before:
            ev["before"] = before
        if point.step != began:
            ev["last_step"] = point.step
        why = f" of {total}" if total else ""
        return Finding(message=f"learning rate is 0 from step {began}{why}", evidence=ev, began_step=began)


@dataclass
class _LrRun:
    """One source's LR as lr.zero needs it: the current stretch of zeros, the last nonzero value, the
    peak, the decimals the values were printed with, and whether the run started at a printed 0 or
    printed more than one nonzero level."""

    zero_since: int | None = None  # step of the first zero of the current stretch
    before: float = math.nan  # the last nonzero value
    peak: float = 0.0
    decimals: float = 0.0  # the fewest decimals every nonzero value was printed within
    zero_first: bool = False  # the LR was printed as 0 before any nonzero value (a warmup from "0")
    level: float = math.nan  # the first nonzero value
    levels: bool = False  # a second, different nonzero value was printed
    recent: list[float] = field(default_factory=list)  # the last few distinct nonzero values, oldest first

    def took(self, values: np.ndarray) -> None:
        """Finite values logged in order: zeros only mark the start; a nonzero ends a stretch of zeros."""
        nonzero = values[values != 0.0]
        if not len(nonzero):
            return
        if self.peak == 0 and values[0] == 0.0:
            self.zero_first = True
        self.zero_since = None
        self.before = float(nonzero[-1])
        self.peak = max(self.peak, float(nonzero.max()))
        if self.decimals <= ROUNDED_DECIMALS:  # past it, no later value can bring it back
            self.decimals = printed_decimals(nonzero, int(self.decimals))
        if self.level != self.level:
            self.level = float(nonzero[0])
        self.levels = self.levels or bool((nonzero != self.level).any())
        for v in nonzero[-RECENT_LEVELS:].tolist() if len(nonzero) <= 4 * RECENT_LEVELS else \
                np.unique(nonzero[-4 * RECENT_LEVELS:]).tolist():
            if not self.recent or self.recent[-1] != v:
                self.recent.append(v)
        del self.recent[:-RECENT_LEVELS]

    def rounded(self) -> bool:
        """Whether a printed 0 may be a small LR rounded away: every value printed with a few decimals,
        the last within a few units of the last decimal, and the print visibly quantised: a schedule
        that came down through at least two levels a few units of the last decimal apart (0.0003,
        0.0002, 0.0001, then 0.0000), or a 0 printed before the LR ever rose. A step schedule that
        dropped to one round value and then to 0 (0.01, 0.001, 0) shows no such rounding: its 0 is 0."""
        quantum = 10.0 ** -self.decimals
        near = self.decimals <= ROUNDED_DECIMALS and self.before == self.before \
            and self.before <= ROUNDED_QUANTA * quantum
        small = {v for v in self.recent if 0 < v <= ROUNDED_QUANTA * quantum * (1 + 1e-9)}
        return near and (len(small) >= 2 or self.zero_first)


ROUNDED_DECIMALS = 6  # a log that prints its LR with at most this many decimals may round a small one to 0
ROUNDED_QUANTA = 5  # ...when the value before the 0 was within this many units of the last printed decimal
RECENT_LEVELS = 8  # the distinct nonzero values lr.zero remembers, to see a schedule come down through the print


def _line_before(series: Series | None, line: int) -> int:
    """The line of the series' last finite point before `line` (its recent points), else `line`."""
    if series is None:
        return line
    _, values, lines, _ = series.columns(min(series.count, RECENT_POINTS))
    earlier = np.flatnonzero((lines < line) & np.isfinite(values))
    return int(lines[earlier[-1]]) if len(earlier) else line


def printed_decimals(values: np.ndarray, at_least: int = 0) -> float:
    """The fewest decimals (from `at_least` up to ROUNDED_DECIMALS) that every value was printed within,
    as `{lr:.4f}` prints 0.0001: more than ROUNDED_DECIMALS for values printed in full (`3e-05`,
    `2.9999e-05`). A live run passes the decimals its earlier values needed: the answer never goes down."""
    if not len(values) or float(np.max(np.abs(values))) > 1e12:
        return float(ROUNDED_DECIMALS + 1)  # (no LR; or one so large that no decimal says anything)
    for d in range(at_least, ROUNDED_DECIMALS + 1):
        scaled = values * 10.0 ** d
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-6 * np.maximum(1.0, np.abs(scaled))):
            return float(d)
    return float(ROUNDED_DECIMALS + 1)


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

    def __init__(self, spec: RuleSpec) -> None:
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

    def __init__(self, spec: RuleSpec) -> None:
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
        ev = {"value": v, "baseline": low, "peak": peak, "ratio": v / low, "step": step}
        msg = f"learning rate jumped from {fmt(low)} to {fmt(v)} at step {step} after decaying from {fmt(peak)}"
        line = int(w.line[row])
        plan = replanned(ctx.sources.get(w.source), _line_before(ctx.series(w.name, w.source), line), line)
        if plan is not None:  # the relaunch set a new length: its schedule, not a scheduler gone wrong
            return Finding(message=f"{msg}: the log set a new planned length of {plan.total} {plan.unit}s at line "
                                   f"{plan.since}, before it, so the schedule was built anew", evidence=ev,
                           severity=Severity.INFO)
        return Finding(message=msg, evidence=ev)
