"""Resume rules: the step counter went back, and whether LR and loss carried on where they were.

A resume is seen two ways: a RESUME event, or a metric's step going backwards or restarting. A counter
that goes back to its own start is no resume from a checkpoint: either the training started again (the
schedule and the loss start again with it; run.restarted judges that) or the counter counts the steps
of each epoch (schedule and loss carry on; the epoch counter went up as it went back). Neither tells
whether the LR or the loss carried on from a checkpoint, so the after-resume rules leave it alone.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from trainwatch.model import Event, EventKind, Finding
from trainwatch.plans import replanned
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.registry import register
from trainwatch.rules.stats import finite_points, fmt
from trainwatch.rulespec import RuleSpec
from trainwatch.store import RECENT_POINTS, Point, Series


def _steps_back(series: Series, step: np.ndarray) -> np.ndarray:
    """For new rows not stored yet: which have a step below the row before them (`_went_back` of each)."""
    prev = np.empty(len(step), dtype=np.int64)
    if len(step):
        before = series.columns(1)[0]
        prev[0] = before[0] if len(before) else np.iinfo(np.int64).min
        prev[1:] = step[:-1]
    return step < prev


def starts_over(series: Series, point: Point) -> bool:
    """Whether a point whose step went back is at the counter's own start: no later than the first step
    logged, which was itself within the counter's first logging interval (0, 1, or the interval). A
    resume goes back to a checkpoint's step, later than that; a log that began mid-run shows no such
    start. Only points logged up to this one count, however the rows were batched."""
    head = [p for p in series.head if p.line <= point.line][:2]
    if len(head) < 2:
        return False
    first = head[0].step
    return point.step <= first and 0 <= first <= max(head[1].step - first, 1)


def epoch_turned(ctx: RuleContext, source: str, before_line: int, line: int) -> bool:
    """Whether the log's epoch counter went up between two lines (the second's own epoch included when it
    is stored already): a step counter that starts over as a new epoch begins counts each epoch's steps."""
    s = ctx.series("epoch", source)
    if s is None:
        return False
    _, was = s.upto_line(before_line)
    _, now = s.upto_line(line)
    if not len(was) or not len(now):
        return False
    return bool(np.isfinite(was[-1]) and np.isfinite(now[-1]) and now[-1] > was[-1])


def _went_back(series: Series, point: Point) -> int | None:
    """The step the series had reached when `point` went back, else None."""
    if len(series.recent) < 2:
        return None
    prev = series.recent[-2]
    return prev.step if point.step < prev.step else None


@register("resume.detected")
class ResumeDetected(Rule):
    id = "resume.detected"
    once = True  # a resume happened: a fact about the run, not a condition that recovers
    watches = ("loss",)
    events = (EventKind.RESUME,)

    def gate(self, ctx: RuleContext, series: Series, step: np.ndarray, value: np.ndarray) -> np.ndarray:
        return _steps_back(series, step)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        was = _went_back(series, point)
        if was is None:
            return None
        if starts_over(series, point) and epoch_turned(ctx, series.source, series.recent[-2].line, point.line):
            return None  # a step counter per epoch: a new epoch began, nothing resumed
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
    from_start: bool = False  # the counter went back to its own start: a new start or a new epoch


def _resume_event(ctx: RuleContext, event: Event, metric: str) -> _Resume:
    """A RESUME event: the points before are all the series holds now (the engine judged them first)."""
    s = ctx.series(metric, event.source)
    pts = list(s.recent) if s else []  # once per resume, not per sample
    step = event.fields.get("step", event.step)
    step = step if isinstance(step, int) else (pts[-1].step if pts else 0)
    return _Resume(step, pts)


class _AfterResume(Rule):
    """Shared resume tracking for one metric: the points before, the first points after, judged row by row.

    resume.sched_reset stays a row rule: it inhibits lr.schedule for `keep_firing_for` rows, and the engine
    judges array rules one after another over a whole batch, so an inhibitor judged over arrays would fire
    after the lr.schedule rows it must keep quiet have already been told."""

    metric = ""
    events = (EventKind.RESUME,)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._resumes: dict[str, _Resume] = {}

    keep_after = 1  # finite points after a resume that the rule needs (subclasses set theirs)

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        self._resumes[event.source] = _resume_event(ctx, event, self.metric)
        return None

    def resume_for(self, series: Series, point: Point) -> _Resume | None:
        """The resume this point follows, with the point recorded among its first points after it."""
        r: _Resume | None
        if _went_back(series, point) is not None:
            pts = list(series.recent)[:-1]
            r = self._resumes[series.source] = _Resume(point.step, pts, from_start=starts_over(series, point))
        else:
            r = self._resumes.get(series.source)
        if r is not None and not r.done and len(r.after) < self.keep_after and math.isfinite(point.value):
            r.after.append(point)
        return r


@dataclass(frozen=True)
class ResumeSchedResetParams:
    """Parameters of resume.sched_reset; their meaning and defaults are in presets/base.yaml."""

    tolerance: float
    rising_points: int


@register("resume.sched_reset")
class ResumeSchedReset(_AfterResume):
    """After a resume the LR is back in warmup, or differs from the LR at that step before."""

    id = "resume.sched_reset"
    once = True  # what this resume did to the schedule: judged once, on the points after it
    params = ResumeSchedResetParams
    p: ResumeSchedResetParams
    metric = "lr"
    watches = ("lr",)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.keep_after = self.p.rising_points
        self._replayed: set[str] = set()
        self._runs: dict[str, _LrRun] = {}

    def gate(self, ctx: RuleContext, series: Series, step: np.ndarray, value: np.ndarray) -> np.ndarray | None:
        """Every row while a resume waits for its first points after; otherwise the rows where the step
        goes back and, until a resume is seen, those where the LR climbs 20% or more above the value
        before it (a replayed warmup can only begin there)."""
        r = self._resumes.get(series.source)
        if r is not None and not r.done:
            return None
        back = _steps_back(series, step)
        if r is not None or series.source in self._replayed:
            return back
        run = self._runs.get(series.source)
        fin = np.isfinite(value)
        before = np.empty(len(value), dtype=np.float64)
        before[0] = run.last if run is not None else math.nan
        if fin.all():  # the value before each row is the row before's
            before[1:] = value[:-1]
        else:
            last = np.maximum.accumulate(np.where(fin, np.arange(len(value)), -1))
            before[1:] = np.where(last[:-1] >= 0, value[np.maximum(last[:-1], 0)], before[0])
        with np.errstate(invalid="ignore", over="ignore"):
            return back | (fin & (value > 0) & (value >= 1.2 * before))

    def gated(self, source: str) -> bool:
        r = self._resumes.get(source)
        return r is None or r.done

    def absorb(self, ctx: RuleContext, series: Series, step: np.ndarray, value: np.ndarray) -> None:
        if series.source in self._resumes:
            return  # after a resume the run is no longer read
        run = self._runs.get(series.source)
        if run is None:
            run = self._runs[series.source] = _LrRun()
        fin = np.isfinite(value)
        run.extend(value if fin.all() else value[fin])

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        r = self.resume_for(series, point)
        if r is None:
            return self._replay(ctx, series, point)
        if r.done or not math.isfinite(point.value):
            return None
        if r.from_start:
            r.done = True  # no checkpoint's schedule to carry on from (see the module's docstring)
            return None
        after = r.after
        tol = self.p.tolerance
        ref = [p for p in finite_points(r.before) if p.step <= point.step] if len(after) == 1 else []
        if ref:
            was = ref[-1]
            if was.value > 0 and point.value > 0 and not (1 / tol <= point.value / was.value <= tol):
                r.done = True
                if replanned(ctx.sources.get(series.source), was.line, point.line):
                    return None  # the relaunch set a new length (MAX_ITER, max_steps): a new schedule, by design
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
            last_before = r.before[-1].line if r.before else 0
            if all(b.value > a.value for a, b in zip(head, head[1:])) \
                    and not replanned(ctx.sources.get(series.source), last_before, head[0].line):
                return Finding(message=f"LR rises again after resuming at step {r.step} "
                                       f"({fmt(head[0].value)} -> {fmt(head[-1].value)}): back in warmup",
                               evidence={"values": [p.value for p in head], "step": point.step,
                                         "resume_step": r.step})
        return None

    def _replay(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
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
        prev = series.recent[-2] if len(series.recent) > 1 else None
        if prev is not None and replanned(ctx.sources.get(series.source), prev.line, point.line):
            return None  # a relaunch with a new length between the two points: its own schedule
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
        self._post: deque[float] = deque(maxlen=self.RUN_VALUES)
        self._post_tail: np.ndarray | None = None  # values that follow `_post`'s, not yet made floats
        self.low = math.inf  # lowest of the peak and the values since
        self.last = math.nan

    @property
    def post(self) -> deque[float]:
        """The values since the peak, the peak excluded (the newest RUN_VALUES of them). A stretch read
        at once leaves its newest values as an array, made into floats only if they are asked for: a
        long run's LR rarely sets a new peak, and a backlog would make thousands of floats a round."""
        if self._post_tail is not None:
            self._post.extend(self._post_tail.tolist())
            self._post_tail = None
        return self._post

    @post.setter
    def post(self, values: deque[float]) -> None:
        self._post, self._post_tail = values, None

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

    def extend(self, values: np.ndarray) -> None:
        """`add` of each finite value in order, at once: every value before the last new peak has gone
        to `pre` (with the old peak and the values after it), the rest is `post`."""
        if not len(values):
            return
        # a bounded deque keeps the last maxlen of whatever it is given: only those are made into floats
        keep_pre, keep_post = self.pre.maxlen or len(values), self._post.maxlen or len(values)
        top = int(np.argmax(values))  # the last new peak, if any: the first of the greatest values
        if values[top] > self.peak:
            p = top
            if self.n > 0:
                self.pre.append(self.peak)
            self.pre.extend(self.post)
            self.pre.extend(values[max(0, p - keep_pre):p].tolist())
            self.post.clear()
            self.peak = self.low = float(values[p])
            rest = values[p + 1:]
        else:
            rest = values
        if self._post.maxlen is not None and len(rest) >= keep_post:  # all the deque will hold
            self._post.clear()
            self._post_tail = rest[len(rest) - keep_post:].copy()
        elif len(rest):
            self.post.extend(rest.tolist())
        if len(rest):
            low = float(rest.min())
            if low == 0.0:  # which zero: the first, as `min` of the values in order gives it
                low = min(rest[rest == 0.0].tolist())
            self.low = min(self.low, low)
        self.n += len(values)
        self.last = float(values[-1])

    def replayed(self, v: float) -> tuple[float, float, float] | None:
        """(low, peak, warmup value matched) when `v` jumps from the low back to a warmup value."""
        peak, low = self.peak, self.low
        if low >= 0.9 * peak or self.last != low or v < 1.2 * low:
            return None
        for x in self.pre:
            if 0 < x < 0.999 * peak and abs(x - v) <= 0.02 * v:
                return low, peak, x
        return None


class _Rows:
    """Rows of a series as columns (step, value, time, line, inferred), at most RECENT_POINTS - 1 of
    them: what a resume keeps as the points before it, without a point object per row until then."""

    __slots__ = ("cols",)

    def __init__(self, cols: tuple[np.ndarray, ...] | None = None) -> None:
        self.cols = cols if cols is not None else (
            np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool))

    @classmethod
    def of(cls, series: Series, n: int) -> _Rows:
        """The newest n rows the series holds."""
        step, value, line, inferred = series.columns(n)
        return cls((step.copy(), value.copy(), series.times(n).copy(), line.copy(), inferred.copy()))

    def then(self, new: _Rows, upto: int) -> _Rows:
        """These rows followed by the first `upto` of `new`, the oldest dropped past the bound."""
        keep = RECENT_POINTS - 1
        return _Rows(tuple(np.concatenate((a, b[:upto]))[-keep:] for a, b in zip(self.cols, new.cols)))

    def point(self, i: int) -> Point:
        step, value, time, line, inferred = self.cols
        t = float(time[i])
        return Point(int(step[i]), float(value[i]), None if t != t else t, int(line[i]), bool(inferred[i]))

    def points(self) -> list[Point]:
        return [self.point(i) for i in range(len(self.cols[0]))]


class _AfterResumeArrays(ArrayRule):
    """Shared resume tracking for one metric: the points before, the first points after.

    Over arrays: a resume matters for the few finite rows after it, so the rule walks only the rows
    from a step that went back (or a RESUME event) until it has judged; every other row is left to
    numpy (`_quiet`). The points before a resume are those the series held when it was logged: the
    rule keeps the last RECENT_POINTS of them itself, because by the time a batch is judged the store
    may have let the oldest go.
    """

    metric = ""
    events = (EventKind.RESUME,)
    history = 1  # the row before the first new one: did the step go back at it?

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._resumes: dict[str, _Resume] = {}
        self._seen: dict[str, tuple[Series, _Rows]] = {}  # source -> (series, its last rows judged)
        self._found: dict[str, dict[int, Finding]] = {}  # source -> window row -> finding, for `finding`

    keep_after = 1  # finite points after a resume that the rule needs (subclasses set theirs)

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        self._resumes[event.source] = _resume_event(ctx, event, self.metric)
        return None

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        m = len(w.new)
        out = np.zeros(m, dtype=bool)
        found: dict[int, Finding] = {}
        self._found[w.source] = found
        series = ctx.series(w.name, w.source)
        if series is None or not m:
            return out
        seen = self._seen.get(w.source)
        if seen is None or seen[0] is not series:  # a new run in the same log starts a new series
            seen = self._seen[w.source] = (series, _Rows())
        past = seen[1]
        pts = _Rows.of(series, m)  # the new rows as the store holds them
        steps = w.step
        back = np.zeros(m, dtype=bool)
        if len(steps) > 1:
            went = steps[1:] < steps[:-1]  # one per row after the window's first: m or m - 1 of them
            back[m - len(went):] = went
        backs = np.flatnonzero(back)
        r = self._resumes.get(w.source)
        i = 0
        while i < m:
            if not back[i] and (r is None or r.done):
                k = int(np.searchsorted(backs, i))
                j = int(backs[k]) if k < len(backs) else m
                if r is None:
                    self._quiet(w, i, j, out, found)
                i = j
                continue
            p = pts.point(i)
            if back[i]:  # the step went back: the points before are those the series held then
                before = past.then(pts, i).points()
                r = self._resumes[w.source] = _Resume(p.step, before, from_start=starts_over(series, p))
            assert r is not None
            if not r.done and len(r.after) < self.keep_after and math.isfinite(p.value):
                r.after.append(p)
            f = self.judge(r, p)
            if f is not None:
                out[i] = True
                found[w.start + i] = f
            i += 1
        self._seen[w.source] = (series, past.then(pts, m))
        return out

    def judge(self, r: _Resume, point: Point) -> Finding | None:
        """The verdict at a point logged after the resume `r` (the point already counted in it)."""
        raise NotImplementedError

    def _quiet(self, w: Window, lo: int, hi: int, out: np.ndarray, found: dict[int, Finding]) -> None:
        """New rows [lo, hi) of a series that has not resumed yet."""

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        return self._found[w.source][row]


@dataclass(frozen=True)
class ResumeLossJumpParams:
    """Parameters of resume.loss_jump; their meaning and defaults are in presets/base.yaml."""

    ratio: float
    before: int
    after: int


@register("resume.loss_jump")
class ResumeLossJump(_AfterResumeArrays):
    """The loss right after a resume is well above the loss just before it."""

    id = "resume.loss_jump"
    once = True  # the loss right after this resume: judged once, on the points after it
    params = ResumeLossJumpParams
    p: ResumeLossJumpParams
    metric = "loss"
    watches = ("loss",)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.keep_after = self.p.after

    def judge(self, r: _Resume, point: Point) -> Finding | None:
        if r.done or not math.isfinite(point.value):
            return None
        if r.from_start:
            r.done = True  # a new start's loss starts high by nature; a new epoch's carries on
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
