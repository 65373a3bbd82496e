"""Range rules: a metric above or below a threshold. Presets and users define them in YAML alone."""

from __future__ import annotations

import math

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.store import Point, Series


class RangeRule(Rule):
    id = "range"

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self.watches = (spec.metric,)  # type: ignore[misc]

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        v = point.value
        if not math.isfinite(v):
            return None  # NaN and Inf have rules of their own
        spec = self.spec
        if spec.above is not None and v > spec.above:
            bound, word = spec.above, "above"
        elif spec.below is not None and v < spec.below:
            bound, word = spec.below, "below"
        else:
            return None
        return Finding(
            message=f"{series.name} = {v:.4g}, {word} {bound:g}",
            subject=series.name,
            evidence={"metric": series.name, "value": v, "threshold": bound, "direction": word},
        )
