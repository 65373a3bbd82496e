"""Learning-rate rules: zero after warmup, no warmup at all, and a schedule that jumps back up."""

from __future__ import annotations

import math

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.stats import fmt
from trainwatch.store import Point, Series


class LrZero(Rule):
    """LR exactly 0 outside the schedule's end (`for` in the preset asks for several points)."""

    id = "lr.zero"
    watches = ("lr",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        if point.value != 0.0:
            return None
        state = ctx.sources.get(series.source)
        total = state.total_steps if state else None
        if total and point.step >= float(self.p["end_fraction"]) * total:
            return None
        return Finding(message=f"learning rate is 0 at step {point.step}",
                       evidence={"value": 0.0, "step": point.step, "total_steps": total})


class LrNoWarmup(Rule):
    """The first logged LR is already the highest: the run started at its peak LR."""

    id = "lr.no_warmup"
    watches = ("lr",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        # source -> (first point, peak of the first points), or None when they show a warmup: the run's
        # first points never change, so they are judged once
        self._start: dict[str, tuple[Point, float] | None] = {}
        self._msg: dict[str, str] = {}

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        if series.source not in self._start:
            pts = series.head[: int(self.p["points"])]  # the run's first finite points, kept by the store
            if len(pts) < int(self.p["points"]):
                return None
            first, peak = pts[0].value, max(p.value for p in pts)
            bad = pts[0].step <= int(self.p["start_within"]) and first > 0 and first >= 0.999 * peak
            self._start[series.source] = (pts[0], peak) if bad else None
        verdict = self._start[series.source]
        if verdict is None:
            return None
        start, peak = verdict
        msg = self._msg.get(series.source)
        if msg is None:  # the verdict holds on every sample once made: its text is built once
            msg = self._msg[series.source] = (f"learning rate starts at its peak {fmt(start.value)} "
                                              f"(step {start.step}), no warmup")
        return Finding(message=msg, evidence={"value": start.value, "peak": peak, "step": start.step})


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
        if low < float(self.p["decayed"]) * peak and low > 0 and v > float(self.p["jump_ratio"]) * low:
            st[0] = st[1] = v  # a new peak: report the jump once
            return Finding(message=f"learning rate jumped from {fmt(low)} to {fmt(v)} at step {point.step} "
                                   f"after decaying from {fmt(peak)}",
                           evidence={"value": v, "baseline": low, "peak": peak, "ratio": v / low,
                                     "step": point.step})
        st[1] = min(low, v)
        return None
