"""RL trend rules (GRPO, EBFT): rewards that stay at zero, completions growing to the limit,
alignment trending down, and a logits tensor that cannot fit in memory."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainwatch.model import Event, EventKind, Finding
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.registry import register
from trainwatch.rules.stats import fmt, theil_sen
from trainwatch.rulespec import RuleSpec
from trainwatch.store import SCAN_MIN, Point, Series


@dataclass
class _Since:
    """What StaysZero carries for one series between batches."""

    series: Series
    lo: float = math.inf  # lowest and highest finite value so far
    hi: float = -math.inf
    first_step: int | None = None  # the step of its first finite point
    rows: int = 0  # rows judged
    last_row: int = -(10**9)  # index (among the rows judged) of the last finite one, its value and step
    last_value: float = math.nan
    last_step: int = 0


@dataclass(frozen=True)
class StaysZeroParams:
    """Parameters of rl.reward_zero and rl.reward_std_zero; their meaning and defaults are in presets/base.yaml."""

    metric_glob: str
    skip: tuple[str, ...]
    eps: float
    steps: int


@register("rl.reward_zero", "rl.reward_std_zero")
class StaysZero(ArrayRule):
    """A metric (glob) that has been ~0 on every logged step since the start, for `steps` steps. A name the
    glob matches that one of the `skip` globs matches too is not judged: older TRL names a reward
    function's mean `rewards/<name>`, newer TRL `rewards/<name>/mean`; one glob takes both, and the
    `rewards/<name>/std` (and a preference run's implicit `rewards/chosen`) it also takes are no reward.

    Over arrays: the range so far is a running minimum and maximum, the latest finite point a forward
    fill. As the store's `tail(1)` does, a finite point more than SCAN_MIN rows back is not looked for.
    """

    id = "rl.stays_zero"
    params = StaysZeroParams
    p: StaysZeroParams

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.watches = (spec.params.metric_glob,)  # type: ignore[misc]
        self._since: dict[tuple[str, str], _Since] = {}
        self._rows: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        v = w.new
        m = len(v)
        key = (w.source, w.name)
        series = ctx.series(w.name, w.source)
        st = self._since.get(key)
        if st is None or st.series is not series:  # a new run in the same log starts a new series
            st = self._since[key] = _Since(series)  # type: ignore[arg-type]
        if not m or skipped(w.name, self.p.skip):
            return np.zeros(m, dtype=bool)
        finite = np.isfinite(v)
        steps = w.step[w.start:]
        hi = np.maximum(np.maximum.accumulate(np.where(finite, v, -math.inf)), st.hi)
        lo = np.minimum(np.minimum.accumulate(np.where(finite, v, math.inf)), st.lo)
        idx = st.rows + np.arange(m)
        last = np.maximum.accumulate(np.where(finite, idx, st.last_row))  # the last finite row up to each
        pos = last - st.rows  # into this batch; negative: before it
        carried = pos < 0
        last_value = np.where(carried, st.last_value, v[np.maximum(pos, 0)])
        last_step = np.where(carried, st.last_step, steps[np.maximum(pos, 0)])
        first = np.flatnonzero(finite)
        first_step = st.first_step if st.first_step is not None else (int(steps[first[0]]) if len(first) else None)
        eps = self.p.eps
        out = np.zeros(m, dtype=bool)
        if first_step is not None:
            near = idx - last < max(SCAN_MIN, 8)  # tail(1) looks this far back for a finite point
            out = (lo >= -eps) & (hi <= eps) & near & (last_step - first_step >= self.p.steps)
            if st.first_step is None:
                out[:first[0]] = False  # no finite point yet
        self._rows[key] = (last_value, last_step, hi, out)
        st.lo, st.hi, st.first_step, st.rows = float(lo[-1]), float(hi[-1]), first_step, st.rows + m
        if len(first):
            st.last_row, st.last_value, st.last_step = st.rows - m + int(first[-1]), float(v[first[-1]]), \
                int(steps[first[-1]])
        return out

    def last_value(self, w: Window, row: int) -> float | None:
        return float(self._rows[(w.source, w.name)][0][row - w.start])  # the latest finite value, as reported

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        last_value, last_step, hi, _ = self._rows[(w.source, w.name)]
        k = row - w.start
        value, span = float(last_value[k]), int(last_step[k]) - int(self._since[(w.source, w.name)].first_step or 0)
        eps = self.p.eps
        return Finding(message=f"{w.name} has stayed at {fmt(value)} (|x| <= {eps:g}) for {span} steps",
                       evidence={"metric": w.name, "value": value, "steps": span, "max": float(hi[k]),
                                 "step": int(w.step[row])})


def skipped(name: str, skip: tuple[str, ...]) -> bool:
    """Whether a name the rule's glob matched is one of the names it leaves out."""
    return any(fnmatch.fnmatchcase(name, g) for g in skip)


def _max_length(ctx: RuleContext, source: str) -> float | None:
    state = ctx.sources.get(source)
    v = state.facts.get("max_completion_length") if state else None
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
        return float(v)
    s = ctx.series("completions/max_length", source)
    return s.maximum if s is not None and math.isfinite(s.maximum) and s.maximum > 0 else None


@dataclass(frozen=True)
class LengthHackingParams:
    """Parameters of rl.length_hacking; their meaning and defaults are in presets/base.yaml."""

    window: int
    near_max: float
    min_rise: float
    rising: float


@register("rl.length_hacking")
class LengthHacking(Rule):
    """Mean completion length climbing steadily until it sits near the maximum length."""

    id = "rl.length_hacking"
    params = LengthHackingParams
    p: LengthHackingParams
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


@dataclass(frozen=True)
class AlignmentDownParams:
    """Parameters of ebft.alignment_down; their meaning and defaults are in presets/base.yaml."""

    window: int
    drop: float


@register("ebft.alignment_down")
class AlignmentDown(Rule):
    """ebft/alignment should trend up; its median falling across the window is a warning."""

    id = "ebft.alignment_down"
    params = AlignmentDownParams
    p: AlignmentDownParams
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


@dataclass(frozen=True)
class RlLogitsParams:
    """Parameters of oom.rl_logits; their meaning and defaults are in presets/base.yaml."""

    memory_gib: float
    ratio: float
    bytes_per_value: int


@register("oom.rl_logits")
class RlLogits(Rule):
    """GRPO logits: micro batch x generations x sequence x vocab x 2 bytes against the GPU memory."""

    id = "oom.rl_logits"
    params = RlLogitsParams
    p: RlLogitsParams
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
