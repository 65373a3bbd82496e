"""loss.below_floor: a training loss below a floor no honest run of this task reaches (say, a label
leaked into the inputs). An example of a third-party rule over arrays."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import RuleContext


class LossBelowFloor(ArrayRule):
    id = "loss.below_floor"
    watches = ("loss",)
    defaults: ClassVar[dict[str, Any]] = {
        "severity": "warning",
        "family": "loss",
        "title": "Loss below a plausible floor",
        "for": 3,
        "floor": 0.01,
        "fixes": ["Look for a label or target leaking into the inputs"],
    }

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        v = w.new
        with np.errstate(invalid="ignore"):
            return np.isfinite(v) & (v < float(self.p["floor"]))

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        v = float(w.value[row])
        return Finding(message=f"loss {v:.4g} is below the floor {self.p['floor']:g}",
                       evidence={"value": v, "floor": self.p["floor"]})
