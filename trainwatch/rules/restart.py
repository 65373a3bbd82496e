"""run.restarted: an attempt that stopped with no summary, then a new launch from the start.

A job that is requeued, or launched again by hand, often appends to the same log. When the step counter
falls back to the run's first steps (not to a checkpoint's step: that is a resume, resume.detected) and
the attempt before had neither printed its end-of-training summary nor reached its known total, that
attempt was killed or crashed: its end is the finding, dated at the last step it logged. The same
training launched again starts from the same loss; another one appended to the log (an evaluation run
after a pretraining) starts elsewhere, and is not this. A resume that carries on (detectron2's
`Starting training from iteration 5500`) never sends the counter back, so it is not this either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.registry import register
from trainwatch.rules.resume import _steps_back, _went_back
from trainwatch.rulespec import RuleSpec
from trainwatch.store import Point, Series


@dataclass(frozen=True)
class RunRestartedParams:
    """Parameters of run.restarted; their meaning and defaults are in presets/base.yaml."""

    near_start: float
    min_points: int
    done_fraction: float
    same_start: float


def _first_step(series: Series, fallback: int) -> int:
    """The first step the series ever logged (its history keeps it when the recent points no longer do)."""
    buckets = series.whole_run()
    return int(buckets[0].first_step) if buckets else fallback


@register("run.restarted")
class RunRestarted(Rule):
    id = "run.restarted"
    once = True  # the run started again: a fact about the run, not a condition that recovers
    watches = ("loss",)
    params = RunRestartedParams
    p: RunRestartedParams

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._since: dict[str, int] = {}  # the series' count when the current attempt began
        self._start: dict[str, float] = {}  # the loss the current attempt began with

    def gate(self, ctx: RuleContext, series: Series, step: np.ndarray, value: np.ndarray) -> np.ndarray:
        if series.source not in self._start and len(value):
            self._start[series.source] = float(value[0])
        return _steps_back(series, step)

    def _same_start(self, source: str, value: float) -> bool:
        """Whether an attempt beginning at `value` starts where the one before began (the same training
        again); with no positive finite loss to compare, it is taken to be."""
        before = self._start.get(source, math.nan)
        self._start[source] = value
        if not (math.isfinite(before) and math.isfinite(value) and before > 0 and value > 0):
            return True
        return 1 / self.p.same_start <= value / before <= self.p.same_start

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        self._start.setdefault(series.source, point.value)
        was = _went_back(series, point)
        if was is None:
            return None
        stopped = series.recent[-2]
        points = series.count - 1 - self._since.get(series.source, 0)
        self._since[series.source] = series.count - 1
        first = _first_step(series, point.step)
        if point.step > max(first, self.p.near_start * was):
            return None  # a resume from a checkpoint
        if not self._same_start(series.source, point.value) or points < self.p.min_points:
            return None  # another training appended to the log, or an attempt too short to be one
        st = ctx.sources.get(series.source)
        total = st.total_steps if st is not None else None
        if (st is not None and st.ended) or (total and was >= self.p.done_fraction * total):
            return None  # the attempt before had finished: this is a new run, not a restart after a kill
        if st is not None and any(stopped.line <= line <= point.line for line in st.stops):
            return None  # it stopped itself early (a fold of a cross-validation, then the next fold)
        of = f" of {total}" if total else ""
        return Finding(
            message=(f"the attempt before stopped at step {was}{of} with no end-of-training summary, and the run "
                     f"started again from step {point.step} at line {point.line}: it was killed or crashed there"),
            subject=f"restart at line {point.line}", step=stopped.step, line=stopped.line,
            evidence={"stopped_step": was, "stopped_line": stopped.line, "restart_step": point.step,
                      "restart_line": point.line})
