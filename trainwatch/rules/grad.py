"""Gradient-norm rules: the smoke alarm. NaN/Inf grad-norm, and spikes over its recent level."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import RuleContext, median
from trainwatch.rules.registry import register
from trainwatch.rules.rolling import RowTail, before_counts, before_values, restarts, scan_reach, spike_medians
from trainwatch.rules.stats import fmt, mad_sigma
from trainwatch.rulespec import RuleSpec
from trainwatch.store import Series


@register("grad.nonfinite")
class GradNonFinite(ArrayRule):
    """grad_norm NaN/Inf. The preset's `for: 2` asks for two logged points in a row: with fp16's dynamic
    loss scaling one Inf that the next step recovers from is the scaler skipping a step. A run whose
    last logged grad-norm is non-finite is judged at its end, as there is no next point."""

    id = "grad.nonfinite"
    watches = ("grad_norm",)

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        return ~np.isfinite(w.new)

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        return _nonfinite(float(w.value[row]), int(w.step[row]), w.nan_count(row), w.inf_count(row))

    def on_end(self, ctx: RuleContext, source: str) -> list[Finding]:
        s = ctx.series("grad_norm", source)
        last = s.last if s is not None else None
        if s is None or last is None or math.isfinite(last.value):
            return []
        f = _nonfinite(last.value, last.step, s.nan_count, s.inf_count)
        f.subject = "grad_norm"
        return [f]


def _nonfinite(v: float, step: int, nan_count: int, inf_count: int) -> Finding:
    return Finding(message=f"grad_norm is {'NaN' if v != v else 'Inf'} at step {step}", step=step,
                   evidence={"value": v, "step": step, "nan_count": nan_count, "inf_count": inf_count})


@dataclass(frozen=True)
class GradSpikeParams:
    """Parameters of grad.spike; their meaning and defaults are in presets/base.yaml."""

    window: int
    min_history: int
    ratio: float
    mad_k: float
    unstable_above: float
    early_history: int
    early_ratio: float


@register("grad.spike")
class GradSpike(ArrayRule):
    """grad_norm far above its recent median (robustly), or above the preset's instability line.

    Over arrays: the ratio to the trailing median of the finite points before each row is one
    vectorised test; the noise test and the wording run only on the few rows where the ratio holds
    (or too few points exist for a noise estimate)."""

    id = "grad.spike"
    params = GradSpikeParams
    p: GradSpikeParams
    watches = ("grad_norm",)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._recent: dict[str, RowTail] = {}  # source -> the rows its look-back reaches
        # source -> (rows, where the new ones begin, each new row's history size)
        self._judged: dict[str, tuple[np.ndarray, int, np.ndarray]] = {}
        # source -> (its last step, the series' finite points before its current attempt began)
        self._runs: dict[str, tuple[int, int]] = {}

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        tail = self._recent.get(w.source)
        if tail is None:
            tail = self._recent[w.source] = RowTail(scan_reach(self.p.window))
        series = ctx.series(w.name, w.source)
        _, v, s = tail.extend(series, w.step[w.start:], w.new)
        fin = np.isfinite(v)
        step = w.step[w.start:]
        want = np.zeros(len(v), dtype=np.int64)
        want[s:] = np.minimum(self.p.window, self._earlier(w.source, series, step, fin, s))
        self._judged[w.source] = (v, s - w.start, want[s:])
        count = before_counts(fin, want)
        med = spike_medians(v, fin, count, s, self.p.ratio, self.p.min_history)
        vn, cn, mn, fn = v[s:], count[s:], med[s:], fin[s:]
        with np.errstate(invalid="ignore", over="ignore"):
            out = fn & (vn > self.p.unstable_above)
            # a little slack: the rows it lets through are judged exactly below, one by one
            ratio = (cn >= self.p.min_history) & (mn > 0) & (vn >= self.p.ratio * mn * (1 - 1e-9))
        early = (cn >= max(self.p.early_history, 1)) & (cn < self.p.min_history)
        for j in np.flatnonzero(fn & (ratio | early)):
            out[j] = self._judge(v, s + int(j), int(step[j]), int(want[s + int(j)])) is not None
        return out

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        v, shift, want = self._judged[w.source]
        found = self._judge(v, row + shift, int(w.step[row]), int(want[row - w.start]))
        assert found is not None, "finding asked for a row whose condition does not hold"
        return found

    def _earlier(self, src: str, series: Series | None, step: np.ndarray, fin: np.ndarray, s: int) -> np.ndarray:
        """Per new row (from `s` of `fin`), the finite points of its attempt before it: a step that goes
        back (a relaunch, a resume from an earlier checkpoint) starts a new attempt, whose first points
        are not compared with the attempt before (its step 0 is no spike over the last one's end)."""
        total = series.finite_count if series is not None else int(fin.sum())
        fin_before = total - np.cumsum(fin[::-1])[::-1]  # the series' finite points before each row
        carried = self._runs.get(src)
        back = np.diff(restarts(step, None if carried is None else carried[0]), prepend=0) > 0
        if carried is None and len(step):
            back[0] = True  # the source's first row starts its first attempt
        at = np.maximum.accumulate(np.where(back, np.arange(len(step)), -1)) if len(step) else back.astype(int)
        began = np.where(at >= 0, fin_before[s + np.maximum(at, 0)], 0 if carried is None else carried[1])
        if len(step):
            self._runs[src] = (int(step[-1]), int(began[-1]))
        return fin_before[s:] - began

    def _judge(self, values: np.ndarray, row: int, step: int, n: int) -> Finding | None:
        """The verdict at `row` of `values` over the `n` finite points of its attempt before it (at most
        the window), from the same numbers the row-at-a-time rule used."""
        v = float(values[row])
        prev = before_values(values, row, n)
        unstable = self.p.unstable_above
        med = median(prev) if prev else math.nan
        ev = {"value": v, "baseline": med, "step": step}
        if len(prev) >= self.p.min_history and med > 0:
            if v >= self.p.ratio * med and v - med >= self.p.mad_k * mad_sigma(prev, med):
                ev["ratio"] = v / med
                return Finding(message=f"grad_norm {fmt(v)} at step {step} is {v / med:.0f}x its recent "
                                       f"median {fmt(med)}", evidence=ev)
        elif prev and self.p.early_history <= len(prev) < self.p.min_history and min(prev) > 0:
            top = max(prev)  # too few points for a noise estimate: far above every earlier one only
            if v >= self.p.early_ratio * top:
                ev["ratio"] = v / med
                ev["max_before"] = top
                return Finding(message=f"grad_norm {fmt(v)} at step {step} is {v / top:.0f}x the highest of "
                                       f"the {len(prev)} points before it ({fmt(top)})", evidence=ev)
        if v > unstable:
            ev["threshold"] = unstable
            return Finding(message=f"grad_norm {fmt(v)} at step {step} is above {unstable:g}", evidence=ev)
        return None
