"""The spike rules as they were before the array port, one sample at a time: the oracle that
tests/rules/test_spike_arrays.py holds the array rules to. Kept here, not in trainwatch/, so that only
tests depend on it."""

from __future__ import annotations

import math
from typing import Any

from trainwatch.model import Finding
from trainwatch.rules.array import Window
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.loss import _beyond_log_noise
from trainwatch.rules.stats import Episodes, Segment, Segments, before, diff_sigma, fmt, mad_sigma
from trainwatch.store import Point, Series


class LossSpikeRows(Rule):
    """Loss jumps well over its recent median, beyond the noise.

    The noise is the larger of the recent window's MAD and the point-to-point noise over a longer
    stretch: twenty points of a noisy per-step loss can happen to sit close together, and a normal
    high point after them is not a spike. Only the points since the run last (re)started count."""

    id = "loss.spike"
    watches = ("loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._segments = Segments(keep_head=5)
        self._episodes = Episodes()
        self._since: dict[str, int] = {}  # source -> samples since its last spike

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        src = series.source
        seg = self._segments.update(series, point)
        v = point.value
        if not math.isfinite(v):
            return None
        found = self._judge(series, point, seg.finite(series) - 1)
        if found is not None and not self._material(seg, found):
            found = None
        if found is None:
            self._since[src] = self._since.get(src, 0) + 1
            if self._since[src] > self._keep():
                self._episodes.close(src)
            return None
        self._since[src] = 0
        if self._episodes.is_open(src):  # a blow-up that keeps jumping: one spike, the first one told
            return self._episodes.repeat(src, v, point.step)
        return self._episodes.open(src, found, v, point.step)

    def unrecovered(self, w: Window, row: int, evidence: dict[str, Any]) -> str | None:
        """The row the alert resolved on, against the median the spike was found over: a loss still
        `ratio` times that median stopped being a spike only because the median rose with it."""
        base = evidence.get("baseline")
        if not isinstance(base, (int, float)) or not base > 0:
            return None
        v, step = float(w.value[row]), int(w.step[row])
        if v < self.p.ratio * base:
            return None
        return (f"loss did not come back: {fmt(v)} at step {step} is {fmt(v / base)}x its recent median before "
                f"the spike ({fmt(base)}); that median rose with it")

    def _material(self, seg: Segment, found: Finding) -> bool:
        """A jump smaller than `min_jump` of where the run began is not a spike, whatever its ratio: a
        loss memorised down to 0.002 that shows 0.05 on one batch has not spiked."""
        head = [p.value for p in seg.head]
        start = abs(median(head)) if head else 0.0
        return found.evidence["value"] - found.evidence["baseline"] >= self.p.min_jump * start

    def _keep(self) -> int:
        """Samples a spike alert stays up without a new spike (keep_firing_for, when it counts steps)."""
        return self.spec.keep_firing_for.steps

    def _judge(self, series: Series, point: Point, earlier: int) -> Finding | None:
        v = point.value
        prev = before(series, point, min(self.p.window, earlier))
        if len(prev) < self.p.min_history:
            return self._early(prev, v, point.step)
        med = median(prev)
        if med <= 0 or v < self.p.ratio * med:
            return None  # the cheap test first: the noise estimate only when the ratio already holds
        noise = mad_sigma(prev, med)
        longer = before(series, point, min(self.p.noise_window, earlier))
        if len(longer) > len(prev):
            noise = max(noise, diff_sigma(longer))
        if v - med < self.p.mad_k * noise:
            return None
        if not _beyond_log_noise(v, med, longer if len(longer) > len(prev) else prev, self.p.log_k):
            return None
        return Finding(message=f"loss {fmt(v)} at step {point.step} is {v / med:.1f}x its recent median {fmt(med)} "
                               f"(noise +-{fmt(noise)})",
                       step=point.step,
                       evidence={"value": v, "step": point.step, "baseline": med, "ratio": v / med,
                                 "noise": noise})

    def _early(self, prev: list[float], v: float, step: int) -> Finding | None:
        """Too few points for a noise estimate: only a jump far above every earlier point counts."""
        if len(prev) < self.p.early_history:
            return None
        top = max(prev)
        if min(prev) <= 0 or v < self.p.early_ratio * top:
            return None  # (a loss at or below 0, as RL losses are, has no scale for a ratio)
        med = median(prev)
        return Finding(message=f"loss {fmt(v)} at step {step} is {v / top:.1f}x the highest of the {len(prev)} "
                               f"points before it ({fmt(top)})",
                       step=step,
                       evidence={"value": v, "step": step, "baseline": med, "ratio": v / med, "max_before": top})


class GradSpikeRows(Rule):
    """grad_norm far above its recent median (robustly), or above the preset's instability line."""

    id = "grad.spike"
    watches = ("grad_norm",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._segments = Segments()  # a new attempt (the step went back) is not judged by the one before

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        seg = self._segments.update(series, point)
        v = point.value
        if not math.isfinite(v):
            return None
        prev = before(series, point, min(self.p.window, seg.finite(series) - 1))
        unstable = self.p.unstable_above
        med = median(prev) if prev else math.nan
        ev = {"value": v, "baseline": med, "step": point.step}
        if len(prev) >= self.p.min_history and med > 0:
            if v >= self.p.ratio * med and v - med >= self.p.mad_k * mad_sigma(prev, med):
                ev["ratio"] = v / med
                return Finding(message=f"grad_norm {fmt(v)} at step {point.step} is {v / med:.0f}x its recent "
                                       f"median {fmt(med)}", evidence=ev)
        elif prev and self.p.early_history <= len(prev) < self.p.min_history and min(prev) > 0:
            top = max(prev)  # too few points for a noise estimate: far above every earlier one only
            if v >= self.p.early_ratio * top:
                ev["ratio"] = v / med
                ev["max_before"] = top
                return Finding(message=f"grad_norm {fmt(v)} at step {point.step} is {v / top:.0f}x the highest of "
                                       f"the {len(prev)} points before it ({fmt(top)})", evidence=ev)
        if v > unstable:
            ev["threshold"] = unstable
            return Finding(message=f"grad_norm {fmt(v)} at step {point.step} is above {unstable:g}", evidence=ev)
        return None
