"""The row-at-a-time fp16 rule as it was before the array port: the oracle for tests/rules/test_fp16_arrays.py.
Not part of trainwatch."""

from __future__ import annotations

import math
from collections import deque

from trainwatch.model import Event, Finding
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.stats import fmt
from trainwatch.store import Point, Series


class Fp16Overflow(Rule):
    id = "fp16.overflow"
    watches = ("loss_scale",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self.signature = spec.id  # the engine hands this rule the ERROR events of its signature
        self._steps: dict[str, deque[int]] = {}  # source -> steps of its overflows within the window
        self._total: dict[str, int] = {}
        # source -> (step, scale) of its last calibration overflow; None once calibration is over
        self._calibration: dict[str, tuple[int, object] | None] = {}

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        v = point.value
        if not math.isfinite(v) or v > self.p.min_scale:
            return None
        if not is_fp16(ctx, series):
            return None
        return Finding(message=f"loss scale collapsed to {fmt(v)} at step {point.step} (max {fmt(series.maximum)})",
                       evidence={"value": v, "max": series.maximum, "step": point.step})

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        step = event.step if event.step is not None else 0
        q = self._steps.setdefault(event.source, deque())
        if q and step < q[-1]:
            q.clear()  # the step counter went back (a resume): count the new run's overflows
        q.append(step)
        window = self.p.window_steps
        while q[0] <= step - window:  # O(1) per event: steps older than the window leave
            q.popleft()
        recent = len(q)
        total = self._total[event.source] = self._total.get(event.source, 0) + 1
        scale = event.fields.get("loss_scale")
        ev = {"overflows": total, "recent": recent, "window_steps": window, "step": step, "line": event.line}
        if isinstance(scale, (int, float)):
            ev["loss_scale"] = scale
            if scale <= self.p.min_scale:
                return Finding(message=f"loss scale reduced to {fmt(scale)} after {total} overflows",
                               subject="fp16.overflow", evidence=ev)
        if self._calibrating(event.source, step, window, scale):
            return None
        if recent < self.p.min_events:
            return None
        tail = f", loss scale now {fmt(scale)}" if isinstance(scale, (int, float)) else ""
        return Finding(message=f"{recent} gradient overflows (skipped steps) within {window} steps{tail}",
                       subject="fp16.overflow", evidence=ev)


    def _calibrating(self, source: str, step: int, window: int, scale: object) -> bool:
        """The scaler starts high (2^16 to 2^32) and halves on each overflow until it fits: a streak of
        overflows from the first steps whose scale only goes down, within a window of each other (when
        the message gives no scale: each within `calibration_gap` logged steps of the last), is that
        search, not trouble. The first overflow that breaks the streak ends the calibration for good;
        counting starts there."""
        known = self._calibration.get(source, ())
        if known == ():
            if step > window:
                self._calibration[source] = None  # the first overflow came late: no calibration
                return False
            self._calibration[source] = (step, scale)
            return True
        if known is None:
            return False
        last_step, last_scale = known
        if isinstance(scale, (int, float)) and isinstance(last_scale, (int, float)):
            streak = scale < last_scale and step - last_step <= window
        else:
            streak = step - last_step <= self.p.calibration_gap
        if streak:
            self._calibration[source] = (step, scale)
            return True
        self._calibration[source] = None
        q = self._steps[source]
        q.clear()  # the calibration streak is not held against the run
        q.append(step)
        return False


def is_fp16(ctx: RuleContext, series: Series) -> bool:
    """A loss scale that has varied, or a precision banner that says fp16."""
    if series.maximum > series.minimum:
        return True
    state = ctx.sources.get(series.source)
    return bool(state and state.facts.get("precision") == "fp16")
