"""The row-at-a-time RL rule rl.stays_zero as it was before the array port: the oracle for
tests/rules/test_rl_arrays.py. Not part of trainwatch."""

from __future__ import annotations

import fnmatch
import math
from typing import Any

from trainwatch.model import Event, EventKind, Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.stats import fmt, theil_sen
from trainwatch.store import Point, Series


class StaysZero(Rule):
    """A metric (glob) that has been ~0 on every logged step since the start, for `steps` steps."""

    id = "rl.stays_zero"

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self.watches = (spec.params.metric_glob,)  # type: ignore[misc]

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        if not series.head or any(fnmatch.fnmatchcase(series.name, g) for g in self.p.skip):
            return None
        eps = self.p.eps
        if series.minimum < -eps or series.maximum > eps:
            return None  # it moved at some point
        last = series.tail(1)
        if not last:
            return None
        span = last[-1].step - series.head[0].step
        if span < self.p.steps:
            return None
        return Finding(message=f"{series.name} has stayed at {fmt(last[-1].value)} (|x| <= {eps:g}) "
                               f"for {span} steps",
                       evidence={"metric": series.name, "value": last[-1].value, "steps": span,
                                 "max": series.maximum, "step": point.step})


def _max_length(ctx: RuleContext, source: str) -> float | None:
    state = ctx.sources.get(source)
    v = state.facts.get("max_completion_length") if state else None
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
        return float(v)
    s = ctx.series("completions/max_length", source)
    return s.maximum if s is not None and math.isfinite(s.maximum) and s.maximum > 0 else None


class LengthHacking(Rule):
    """Mean completion length climbing steadily until it sits near the maximum length."""

    id = "rl.length_hacking"
    watches = ("completions/mean_length",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        w = self.p.window
        pts = series.tail(w)
        if len(pts) < w:
            return None
        top = _max_length(ctx, series.source)
        if top is None:
            return None
        first, last = pts[0].value, median([p.value for p in pts[-3:]])
        ups = sum(1 for a, b in zip(pts, pts[1:]) if b.value > a.value) / (len(pts) - 1)
        slope = theil_sen([float(p.step) for p in pts], [p.value for p in pts])
        if (last < self.p.near_max * top or first <= 0 or (last - first) / first < self.p.min_rise
                or ups < self.p.rising or slope <= 0):
            return None
        return Finding(message=f"completions/mean_length rose from {fmt(first)} at step {pts[0].step} to a median "
                               f"of {fmt(last)} over its last 3 points ({w} points), near the maximum {fmt(top)}",
                       evidence={"value": last, "value_stat": "median of the last 3 points", "baseline": first,
                                 "baseline_step": pts[0].step, "max": top, "rising_share": ups, "slope": slope,
                                 "step": point.step, "last_value": point.value, "last_step": point.step})


class AlignmentDown(Rule):
    """ebft/alignment should trend up; its median falling across the window is a warning."""

    id = "ebft.alignment_down"
    watches = ("ebft/alignment",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        w = self.p.window
        pts = series.tail(w)
        if len(pts) < w:
            return None
        half = w // 2
        a, b = median([p.value for p in pts[:half]]), median([p.value for p in pts[half:]])
        slope = theil_sen([float(p.step) for p in pts], [p.value for p in pts])
        if a <= 0 or (a - b) / a < self.p.drop or slope >= 0:
            return None
        return Finding(message=f"ebft/alignment fell over the last {w} points: the median of the first {half} was "
                               f"{fmt(a)}, of the last {w - half} {fmt(b)}",
                       evidence={"value": b, "value_stat": f"median of the last {w - half} points", "baseline": a,
                                 "baseline_stat": f"median of the {half} points before", "slope": slope,
                                 "step": point.step, "last_value": point.value, "last_step": point.step})


def _num(facts: dict[str, Any], *keys: str) -> float | None:
    for k in keys:
        v = facts.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return float(v)
    return None


class RlLogits(Rule):
    """GRPO logits: micro batch x generations x sequence x vocab x 2 bytes against the GPU memory."""

    id = "oom.rl_logits"
    events = (EventKind.INFO,)

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        state = ctx.sources.get(event.source)
        facts = state.facts if state else event.fields
        micro = _num(facts, "batch_size", "micro_batch_size")
        gens = _num(facts, "num_generations")
        seq = _num(facts, "seq_len", "max_completion_length")
        vocab = _num(facts, "vocab_size")
        if None in (micro, gens, seq, vocab):
            return None
        size = micro * gens * seq * vocab * self.p.bytes_per_value  # type: ignore[operator]
        mem_gib = _num(facts, "gpu_memory_gib", "total_gib") or self.p.memory_gib
        gib = size / 2**30
        if gib <= self.p.ratio * mem_gib:
            return None
        return Finding(message=f"logits need {gib:.0f} GiB ({micro:g} x {gens:g} x {seq:g} x {vocab:g} x "
                               f"{self.p.bytes_per_value} B) against {mem_gib:g} GiB of GPU memory",
                       subject="logits",
                       evidence={"logits_gib": gib, "memory_gib": mem_gib, "micro_batch": micro,
                                 "num_generations": gens, "seq_len": seq, "vocab_size": vocab})
