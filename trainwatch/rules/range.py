"""Range rules: a metric above or below a threshold. Presets and users define them in YAML alone."""

from __future__ import annotations

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import RuleContext


class RangeRule(ArrayRule):
    id = "range"

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self.watches = (spec.metric,)  # type: ignore[misc]

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        v = w.new
        out = np.zeros(len(v), dtype=bool)  # NaN compares false: NaN and Inf have rules of their own
        with np.errstate(invalid="ignore"):
            if self.spec.above is not None:
                out |= np.isfinite(v) & (v > self.spec.above)
            if self.spec.below is not None:
                out |= np.isfinite(v) & (v < self.spec.below)
        return out

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        v = float(w.value[row])
        spec = self.spec
        if spec.above is not None and v > spec.above:
            bound, word = spec.above, "above"
        else:  # the condition held, so the value is below the lower bound
            bound, word = float(spec.below if spec.below is not None else v), "below"
        return Finding(
            message=f"{w.name} = {v:.4g}, {word} {bound:g}",
            subject=w.name,
            evidence={"metric": w.name, "value": v, "threshold": bound, "direction": word},
        )
