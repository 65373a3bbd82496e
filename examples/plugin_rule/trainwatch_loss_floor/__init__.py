"""loss.below_floor: a training loss below a floor no honest run of this task reaches (say, a label
leaked into the inputs). An example of a third-party rule over arrays, with typed parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import RuleContext


@dataclass(frozen=True)
class FloorParams:
    """The rule's parameters, typed and without defaults: trainwatch checks `defaults` and every user
    config against these at load (a typo or a string for `floor` is a one-line error) and hands the rule
    an instance as `self.p`. A rule without `params` gets its parameters as a plain mapping instead."""

    floor: float


class LossBelowFloor(ArrayRule):
    id = "loss.below_floor"
    watches = ("loss",)
    params = FloorParams
    p: FloorParams
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
            return np.isfinite(v) & (v < self.p.floor)

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        v = float(w.value[row])
        return Finding(message=f"loss {v:.4g} is below the floor {self.p.floor:g}",
                       evidence={"value": v, "floor": self.p.floor})
