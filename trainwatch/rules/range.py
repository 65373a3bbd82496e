"""Range rules: a metric above or below a threshold. Presets and users define them in YAML alone.

A range rule whose title claims the metric does not get back into its range ("entropy too high: not
converging") sets `disproved_by_return: true`: a value back in range after the condition held disproves
that claim, and the finding is withdrawn there (Rule.retractions), so a report never tells a metric that
was on its way back as stuck outside its range.
"""

from __future__ import annotations

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import RuleContext
from trainwatch.rulespec import RuleSpec


class RangeRule(ArrayRule):
    id = "range"

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.watches = (spec.metric,)  # type: ignore[misc]
        params = spec.params if isinstance(spec.params, dict) else {}
        self.disproved_by_return = bool(params.get("disproved_by_return", False))
        self._cond: dict[tuple[str, str], np.ndarray] = {}  # the last batch's condition, for `retractions`
        self._held_last: dict[tuple[str, str], bool] = {}  # whether the last finite row judged was out of range

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        v = w.new
        out = np.zeros(len(v), dtype=bool)  # NaN compares false: NaN and Inf have rules of their own
        with np.errstate(invalid="ignore"):
            if self.spec.above is not None:
                out |= np.isfinite(v) & (v > self.spec.above)
            if self.spec.below is not None:
                out |= np.isfinite(v) & (v < self.spec.below)
        if self.disproved_by_return:
            self._cond[(w.source, w.name)] = out
        return out

    def retractions(self, ctx: RuleContext, w: Window) -> list[tuple[int, str]]:
        """With `disproved_by_return`: the finite rows back in range right after rows out of it."""
        if not self.disproved_by_return:
            return []
        key = (w.source, w.name)
        cond = self._cond.pop(key, None)
        if cond is None or not len(cond):
            return []
        finite = np.isfinite(w.new)
        fin_rows = np.flatnonzero(finite)
        if not len(fin_rows):
            return []
        held = cond[fin_rows]
        before = np.concatenate(([self._held_last.get(key, False)], held[:-1]))
        self._held_last[key] = bool(held[-1])
        out = []
        for i in fin_rows[before & ~held].tolist():
            row = w.start + i
            out.append((row, self._back(w, row)))
        return out

    def _back(self, w: Window, row: int) -> str:
        """Why a value back in range disproves the finding: the logged value and its step."""
        v, step = float(w.value[row]), int(w.step[row])
        spec = self.spec
        if spec.above is not None and (spec.below is None or v <= spec.above):
            return f"{w.name} fell to {v:.4g} at step {step}, back to {spec.above:g} or below: it was not stuck above"
        return f"{w.name} rose to {v:.4g} at step {step}, back to {spec.below:g} or above: it was not stuck below"

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
