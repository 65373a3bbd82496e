"""The row-at-a-time speed.drop, kept as the oracle its array port is proven against.

Throughput falling well below the run's own level (tokens/s, samples/s, step time)."""

from __future__ import annotations

import math

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.speed import against
from trainwatch.rules.stats import fmt
from trainwatch.store import Point, Series

SLOWER_IS_HIGHER = {"step_time_ms"}


class SpeedDrop(Rule):
    id = "speed.drop"
    watches = ("tokens_per_sec", "samples_per_sec", "steps_per_sec", "step_time_ms")

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        if not math.isfinite(point.value):
            return None
        recent_n, window = self.p.recent, self.p.window
        usable = series.finite_count - self.p.skip  # the first points are warm-up
        if usable < max(self.p.min_history, recent_n + 3):
            return None
        vals = series.tail_values(min(usable, window + recent_n))  # the values of tail(), copied at C speed
        if len(vals) <= recent_n:
            return None
        base = median(vals[-(window + recent_n):-recent_n])
        now = median(vals[-recent_n:])
        if base <= 0 or now <= 0:
            return None
        drop = self.p.drop
        slower = now > base / drop if series.name in SLOWER_IS_HIGHER else now < base * drop
        if not slower:
            return None
        steps, values = series.tail_columns(recent_n)  # where the drop began: the first slow recent point
        slow = [v > base / drop if series.name in SLOWER_IS_HIGHER else v < base * drop for v in values.tolist()]
        first = slow.index(True)
        began, began_value = int(steps[first]), float(values[first])
        moved = "rose" if series.name in SLOWER_IS_HIGHER else "fell"
        rel, means = against(now, base, series.name in SLOWER_IS_HIGHER)
        return Finding(message=f"{series.name} {moved} to {fmt(began_value)} at step {began}; the median of the last "
                               f"{self.p.recent} {series.name} points, {fmt(now)}, is {rel} the run's own level, "
                               f"the median of the points before: {fmt(base)}{means}",
                       began_step=began,
                       evidence={"metric": series.name, "value": now, "baseline": base, "ratio": now / base,
                                 "step": point.step, "last_value": now,
                                 "value_stat": f"median of the last {self.p.recent} points",
                                 "last_stat": f"median of the last {self.p.recent} points",
                                 "began_step": began, "began_value": began_value})
