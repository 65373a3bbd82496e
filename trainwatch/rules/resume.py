"""Resume rules: the step counter went back, and whether LR and loss carried on where they were.

A resume is seen two ways: a RESUME event, or a metric's step going backwards or restarting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from trainwatch.model import Event, EventKind, Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.stats import finite_points, fmt
from trainwatch.store import Point, Series


def _went_back(series: Series, point: Point) -> int | None:
    """The step the series had reached when `point` went back, else None."""
    if len(series.recent) < 2:
        return None
    prev = series.recent[-2]
    return prev.step if point.step < prev.step else None


class ResumeDetected(Rule):
    id = "resume.detected"
    watches = ("loss",)
    events = (EventKind.RESUME,)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        was = _went_back(series, point)
        if was is None:
            return None
        return Finding(message=f"step counter went back from {was} to {point.step}: the run resumed or restarted",
                       subject="resume", evidence={"from_step": was, "step": point.step})

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        step = event.fields.get("step", event.step)
        return Finding(message=f"run resumed from a checkpoint at step {step}", subject="resume",
                       evidence={"step": step})


@dataclass
class _Resume:
    step: int
    at_index: int  # series length when the resume was seen
    before: list[Point] = field(default_factory=list)
    done: bool = False


class _AfterResume(Rule):
    """Shared resume tracking for one metric: the points before, the first points after."""

    metric = ""
    events = (EventKind.RESUME,)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._resumes: dict[str, _Resume] = {}

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        s = ctx.series(self.metric, event.source)
        pts = list(s.recent) if s else []
        step = event.fields.get("step", event.step)
        step = step if isinstance(step, int) else (pts[-1].step if pts else 0)
        self._resumes[event.source] = _Resume(step, len(pts), pts)
        return None

    def resume_for(self, series: Series, point: Point) -> _Resume | None:
        if _went_back(series, point) is not None:
            pts = list(series.recent)[:-1]
            r = self._resumes[series.source] = _Resume(point.step, len(series.recent) - 1, pts)
            return r
        return self._resumes.get(series.source)


class ResumeSchedReset(_AfterResume):
    """After a resume the LR is back in warmup, or differs from the LR at that step before."""

    id = "resume.sched_reset"
    metric = "lr"
    watches = ("lr",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._replayed: dict[str, int] = {}

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        r = self.resume_for(series, point)
        if r is None:
            return self._replay(series, point)
        if r.done or not math.isfinite(point.value):
            return None
        after = finite_points(list(series.recent)[r.at_index:])
        ref = [p for p in finite_points(r.before) if p.step <= point.step]
        tol = float(self.p["tolerance"])
        if ref and after and len(after) == 1:
            was = ref[-1]
            if was.value > 0 and point.value > 0 and not (1 / tol <= point.value / was.value <= tol):
                r.done = True
                word = "back in warmup" if point.value < was.value else "restarted at a higher value"
                return Finding(message=f"after resuming at step {point.step} the LR is {fmt(point.value)}, "
                                       f"it was {fmt(was.value)} at step {was.step}: schedule {word}",
                               evidence={"value": point.value, "baseline": was.value, "step": point.step,
                                         "resume_step": r.step})
        n = int(self.p["rising_points"])
        if len(after) >= n and r.step > 0:
            head = after[:n]
            r.done = True
            if all(b.value > a.value for a, b in zip(head, head[1:])):
                return Finding(message=f"LR rises again after resuming at step {r.step} "
                                       f"({fmt(head[0].value)} -> {fmt(head[-1].value)}): back in warmup",
                               evidence={"values": [p.value for p in head], "step": point.step,
                                         "resume_step": r.step})
        return None


    def _replay(self, series: Series, point: Point) -> Finding | None:
        """No visible resume, but the LR climbs back through the run's own warmup values after decaying:
        a new process started the schedule from step 0 (scheduler state not restored)."""
        pts = finite_points(series.recent)
        v = point.value
        if len(pts) < 6 or not math.isfinite(v) or v <= 0 or self._replayed.get(series.source) == pts[0].step:
            return None
        vals = [p.value for p in pts[:-1]]
        peak = max(vals)
        ipeak = vals.index(peak)
        warm = [x for x in vals[:ipeak] if 0 < x < 0.999 * peak]
        low = min(vals[ipeak:])
        if not warm or low >= 0.9 * peak or vals[-1] != low or v < 1.2 * low:
            return None
        match = next((x for x in warm if abs(x - v) <= 0.02 * v), None)
        if match is None:
            return None
        self._replayed[series.source] = pts[0].step
        return Finding(message=f"LR rose from {fmt(low)} to {fmt(v)} at step {point.step}, a value of its own "
                               f"warmup: the schedule restarted (resumed without the scheduler state?)",
                       evidence={"value": v, "baseline": low, "peak": peak, "warmup_value": match,
                                 "step": point.step})


class ResumeLossJump(_AfterResume):
    """The loss right after a resume is well above the loss just before it."""

    id = "resume.loss_jump"
    metric = "loss"
    watches = ("loss",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        r = self.resume_for(series, point)
        if r is None or r.done or not math.isfinite(point.value):
            return None
        after = finite_points(list(series.recent)[r.at_index:])
        if len(after) < int(self.p["after"]):
            return None
        r.done = True
        pre = [p.value for p in finite_points(r.before)][-int(self.p["before"]):]
        if not pre:
            return None
        was, now = median(pre), median([p.value for p in after])
        if was <= 0 or now < float(self.p["ratio"]) * was:
            return None
        return Finding(message=f"loss {fmt(now)} after resuming at step {r.step} vs {fmt(was)} before "
                               f"({now / was:.1f}x)",
                       evidence={"value": now, "baseline": was, "ratio": now / was, "resume_step": r.step,
                                 "step": point.step})
