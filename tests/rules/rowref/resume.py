"""The row-at-a-time resume rules as they were before the array port: the oracle the array rules are
held to (tests/rules/test_resume_arrays.py). Not part of trainwatch."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from trainwatch.model import Event, EventKind, Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.resume import starts_over
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
    before: list[Point] = field(default_factory=list)  # the recent points when the resume was seen
    after: list[Point] = field(default_factory=list)  # the first finite points after it (a few: bounded)
    done: bool = False
    from_start: bool = False


class _AfterResume(Rule):
    """Shared resume tracking for one metric: the points before, the first points after."""

    metric = ""
    events = (EventKind.RESUME,)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._resumes: dict[str, _Resume] = {}

    keep_after = 1  # finite points after a resume that the rule needs (subclasses set theirs)

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        s = ctx.series(self.metric, event.source)
        pts = list(s.recent) if s else []  # once per resume, not per sample
        step = event.fields.get("step", event.step)
        step = step if isinstance(step, int) else (pts[-1].step if pts else 0)
        self._resumes[event.source] = _Resume(step, pts)
        return None

    def resume_for(self, series: Series, point: Point) -> _Resume | None:
        """The resume this point follows, with the point recorded among its first points after it."""
        if _went_back(series, point) is not None:
            pts = list(series.recent)[:-1]
            r = self._resumes[series.source] = _Resume(point.step, pts, from_start=starts_over(series, point))
        else:
            r = self._resumes.get(series.source)
        if r is not None and not r.done and len(r.after) < self.keep_after and math.isfinite(point.value):
            r.after.append(point)
        return r


class ResumeSchedReset(_AfterResume):
    """After a resume the LR is back in warmup, or differs from the LR at that step before."""

    id = "resume.sched_reset"
    metric = "lr"
    watches = ("lr",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self.keep_after = self.p.rising_points
        self._replayed: set[str] = set()
        self._runs: dict[str, _LrRun] = {}

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        r = self.resume_for(series, point)
        if r is None:
            return self._replay(series, point)
        if r.done or not math.isfinite(point.value):
            return None
        after = r.after
        tol = self.p.tolerance
        ref = [p for p in finite_points(r.before) if p.step <= point.step] if len(after) == 1 else []
        if ref:
            was = ref[-1]
            if was.value > 0 and point.value > 0 and not (1 / tol <= point.value / was.value <= tol):
                r.done = True
                word = "back in warmup" if point.value < was.value else "restarted at a higher value"
                return Finding(message=f"after resuming at step {point.step} the LR is {fmt(point.value)}, "
                                       f"it was {fmt(was.value)} at step {was.step}: schedule {word}",
                               evidence={"value": point.value, "baseline": was.value, "step": point.step,
                                         "resume_step": r.step})
        n = self.p.rising_points
        if len(after) >= n:
            r.done = True
        if len(after) >= n and r.step > 0:
            head = after[:n]
            if all(b.value > a.value for a, b in zip(head, head[1:])):
                return Finding(message=f"LR rises again after resuming at step {r.step} "
                                       f"({fmt(head[0].value)} -> {fmt(head[-1].value)}): back in warmup",
                               evidence={"values": [p.value for p in head], "step": point.step,
                                         "resume_step": r.step})
        return None

    def _replay(self, series: Series, point: Point) -> Finding | None:
        """No visible resume, but the LR climbs back through the run's own warmup values after decaying:
        a new process started the schedule from step 0 (scheduler state not restored)."""
        v = point.value
        if not math.isfinite(v):
            return None
        run = self._runs.get(series.source)
        if run is None:
            run = self._runs[series.source] = _LrRun()
        found = None
        if run.n >= 5 and v > 0 and series.source not in self._replayed:
            found = run.replayed(v)
        run.add(v)
        if found is None:
            return None
        low, peak, match = found
        self._replayed.add(series.source)
        return Finding(message=f"LR rose from {fmt(low)} to {fmt(v)} at step {point.step}, a value of its own "
                               f"warmup: the schedule restarted (resumed without the scheduler state?)",
                       evidence={"value": v, "baseline": low, "peak": peak, "warmup_value": match,
                                 "step": point.step})


class _LrRun:
    """The LR schedule so far, kept incrementally: its peak, the values logged before the peak (the
    warmup), the lowest value since, and the last value. Bounded: at most RUN_VALUES of each kept."""

    RUN_VALUES = 2048

    def __init__(self) -> None:
        self.n = 0
        self.peak = -math.inf
        self.pre: deque[float] = deque(maxlen=self.RUN_VALUES)  # values before the peak, in order
        self.post: deque[float] = deque(maxlen=self.RUN_VALUES)  # values since the peak, peak excluded
        self.low = math.inf  # lowest of the peak and the values since
        self.last = math.nan

    def add(self, v: float) -> None:
        self.n += 1
        if v > self.peak:
            if self.n > 1:
                self.pre.append(self.peak)
                self.pre.extend(self.post)
            self.post.clear()
            self.peak = self.low = v
        else:
            self.post.append(v)
            if v < self.low:
                self.low = v
        self.last = v

    def replayed(self, v: float) -> tuple[float, float, float] | None:
        """(low, peak, warmup value matched) when `v` jumps from the low back to a warmup value."""
        peak, low = self.peak, self.low
        if low >= 0.9 * peak or self.last != low or v < 1.2 * low:
            return None
        for x in self.pre:
            if 0 < x < 0.999 * peak and abs(x - v) <= 0.02 * v:
                return low, peak, x
        return None


class ResumeLossJump(_AfterResume):
    """The loss right after a resume is well above the loss just before it."""

    id = "resume.loss_jump"
    metric = "loss"
    watches = ("loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self.keep_after = self.p.after

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        r = self.resume_for(series, point)
        if r is None or r.done or not math.isfinite(point.value):
            return None
        if r.from_start:
            r.done = True
            return None
        after = r.after
        if len(after) < self.p.after:
            return None
        r.done = True
        pre = [p.value for p in finite_points(r.before)][-self.p.before:]
        if not pre:
            return None
        was, now = median(pre), median([p.value for p in after])
        if was <= 0 or now < self.p.ratio * was:
            return None
        n_after = len(after)
        return Finding(message=f"after resuming at step {r.step} the median loss of the next {n_after} points, "
                               f"{fmt(now)}, is {now / was:.1f}x the median of the {len(pre)} before, {fmt(was)}",
                       evidence={"value": now, "value_stat": f"median of the {n_after} points after the resume",
                                 "baseline": was, "ratio": now / was, "resume_step": r.step, "step": point.step})
