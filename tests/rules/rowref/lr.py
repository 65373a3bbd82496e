"""The row-at-a-time learning-rate rules as they were before the array port: the oracle the array rules
are held to (tests/rules/test_lr_arrays.py). Not part of trainwatch."""

from __future__ import annotations

import math

from trainwatch.model import Finding, Severity
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.stats import fmt
from trainwatch.store import Point, Series


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
    watches = ("lr",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        # source -> (step of the first zero of the current stretch, last nonzero value, peak so far)
        self._run: dict[str, list[float]] = {}

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


class LrNoWarmup(Rule):
    """The first logged LR is already the highest: the run started at its peak LR.

    Judged once, on the fifth LR point, and said once. Not judged on epoch-level logs (each record an
    epoch apart, as Keras, Lightning per-epoch and Ultralytics write them): a warmup inside the first
    epoch is invisible there, and a warmup bias that starts high and decays is by design.
    """

    id = "lr.no_warmup"
    watches = ("lr",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._judged: set[str] = set()  # sources whose start has been judged: the verdict never changes

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        if series.source in self._judged:
            return None
        n = self.p.points
        pts = series.head[:n]  # the run's first finite points, kept by the store
        if len(pts) < n:
            return None
        self._judged.add(series.source)
        first, peak = pts[0].value, max(p.value for p in pts)
        if not (pts[0].step <= self.p.start_within and first > 0 and first >= 0.999 * peak):
            return None
        if epoch_level(ctx, series.source, pts):
            return None
        start = pts[0]
        return Finding(message=f"learning rate starts at its peak {fmt(start.value)} (step {start.step}), no warmup",
                       evidence={"value": start.value, "peak": peak, "step": start.step}, began_step=start.step)


def epoch_level(ctx: RuleContext, source: str, lr_points: list[Point]) -> bool:
    """Whether the log writes one record per epoch: its epoch counter moves by a whole epoch on each
    record, or (when the epoch is the step itself) every record carries a validation result, as
    per-epoch logs do and per-step logs do not."""
    ev = ctx.series("eval_loss", source)
    if ev is not None and len(lr_points) >= 3:
        evaluated = {p.step for p in ev.head}
        if all(p.step in evaluated for p in lr_points[:-1]):  # the last record may still be arriving
            return True
    ep = ctx.series("epoch", source)
    if ep is None or len(ep.head) < 2:
        return False
    pts = ep.head[:16]
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


class LrSchedule(Rule):
    """After decaying from its peak, the LR jumps back up (a restarted or recreated scheduler)."""

    id = "lr.schedule"
    watches = ("lr",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._state: dict[str, list[float]] = {}  # source -> [peak, low since peak, last step]

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        v = point.value
        if not math.isfinite(v):
            return None
        st = self._state.get(series.source)
        if st is None or point.step <= st[2]:
            self._state[series.source] = [v, v, point.step]  # first point, or a step reset (resume rules)
            return None
        peak, low, _ = st
        st[2] = point.step
        if v >= peak and low >= peak:
            st[0] = st[1] = v  # still warming up
            return None
        if low < self.p.decayed * peak and low > 0 and v > self.p.jump_ratio * low:
            st[0] = st[1] = v  # a new peak: report the jump once
            return Finding(message=f"learning rate jumped from {fmt(low)} to {fmt(v)} at step {point.step} "
                                   f"after decaying from {fmt(peak)}",
                           evidence={"value": v, "baseline": low, "peak": peak, "ratio": v / low,
                                     "step": point.step})
        st[1] = min(low, v)
        return None
