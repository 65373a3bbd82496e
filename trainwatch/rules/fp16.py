"""fp16 loss-scale trouble: overflow messages that keep coming, or a loss scale that collapsed.

A few overflows at the start are the dynamic scaler finding its level; only many in a short span,
or a scale at or below `min_scale`, mean the run is skipping steps for real.

Only an fp16 run has a loss scale worth judging. Megatron prints `loss scale: 1.0` on every line of a
bf16 or fp32 run, so a low scale alone says nothing: the run is taken as fp16 when its scale has
moved (a dynamic scaler always does) or a banner said so (the source's `precision` fact). Overflow
messages are fp16 evidence in themselves: only a dynamic loss scaler prints them.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainwatch.model import Event, EventKind, Finding
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import RuleContext
from trainwatch.rules.registry import register
from trainwatch.rules.stats import fmt
from trainwatch.rulespec import RuleSpec
from trainwatch.store import Series


@dataclass(frozen=True)
class Fp16OverflowParams:
    """Parameters of fp16.overflow; their meaning and defaults are in presets/base.yaml."""

    min_events: int
    window_steps: int
    min_scale: float
    calibration_gap: int


@register("fp16.overflow")
class Fp16Overflow(ArrayRule):
    """Overflow messages (ERROR events of its signature) counted per window, and a loss scale that collapsed.

    The loss scale is judged over arrays: a row holds when its scale is at or below `min_scale` and the
    run is fp16 by then (the scale has moved among the rows up to it: a running minimum and maximum, or
    a banner said so). INFO events are answered (with nothing) so the engine judges the rows held before
    a banner's facts arrive: the precision a row is judged by is the one known when it was logged.
    """

    id = "fp16.overflow"
    params = Fp16OverflowParams
    p: Fp16OverflowParams
    watches = ("loss_scale",)
    events = (EventKind.INFO,)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.signature = spec.id  # the engine hands this rule the ERROR events of its signature
        self._steps: dict[str, deque[int]] = {}  # source -> steps of its overflows within the window
        self._total: dict[str, int] = {}
        # source -> (step, scale) of its last calibration overflow; None once calibration is over
        self._calibration: dict[str, tuple[int, object] | None] = {}
        # source -> (series, lowest and highest finite scale of the rows judged): the series' range then
        self._range: dict[str, tuple[Series, float, float]] = {}
        self._max: dict[str, np.ndarray] = {}  # source -> the highest scale up to each new row

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        v = w.new
        series = ctx.series(w.name, w.source)
        known = self._range.get(w.source)
        lo, hi = (known[1], known[2]) if known is not None and known[0] is series else (math.inf, -math.inf)
        finite = np.isfinite(v)
        hi_at = np.maximum.accumulate(np.where(finite, v, -math.inf))
        lo_at = np.minimum.accumulate(np.where(finite, v, math.inf))
        np.maximum(hi_at, hi, out=hi_at)
        np.minimum(lo_at, lo, out=lo_at)
        if series is not None and len(v):
            self._range[w.source] = (series, float(lo_at[-1]), float(hi_at[-1]))
        self._max[w.source] = hi_at
        with np.errstate(invalid="ignore"):
            out = finite & (v <= self.p.min_scale)
        state = ctx.sources.get(w.source)
        if not (state and state.facts.get("precision") == "fp16"):
            out &= hi_at > lo_at  # a scale that has moved: a dynamic scaler, so fp16
        return out

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        v, step = float(w.value[row]), int(w.step[row])
        top = float(self._max[w.source][row - w.start])
        return Finding(message=f"loss scale collapsed to {fmt(v)} at step {step} (max {fmt(top)})",
                       evidence={"value": v, "max": top, "step": step})

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        if event.kind is EventKind.INFO:
            return None  # answered only so that the rows before a banner are judged before its facts
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
        ev: dict[str, Any] = {"overflows": total, "recent": recent, "window_steps": window, "step": step,
                              "line": event.line}
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
        if source not in self._calibration:
            if step > window:
                self._calibration[source] = None  # the first overflow came late: no calibration
                return False
            self._calibration[source] = (step, scale)
            return True
        known = self._calibration[source]
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
