"""An actor-critic run's value (critic) loss growing by orders of magnitude while it trains.

The critic's loss is a regression error on returns, so it moves with the reward's scale, and a rise of a
few times is ordinary. One that grows a thousandfold from where the launch began is the value function
diverging (a learning rate too high for the critic, unscaled returns, no value clipping): the policy's
advantages are then noise, so the reward stops improving even when nothing is ever NaN. Each launch is
judged from its own start, since appended runs restart the counter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.registry import register
from trainwatch.rules.stats import fmt
from trainwatch.rulespec import RuleSpec
from trainwatch.store import Point, Series


@dataclass(frozen=True)
class ValueDivergenceParams:
    """Parameters of rl.value_divergence; their meaning and defaults are in presets/base.yaml."""

    baseline: int
    recent: int
    factor: float


@dataclass
class _Launch:
    """The launch being read: its first points (the starting level) and its recent ones."""

    start: list[Point] = field(default_factory=list)
    recent: list[Point] = field(default_factory=list)
    last_step: int = -1


@register("rl.value_divergence")
class ValueDivergence(Rule):
    """The value loss's recent median, and its latest point, `factor` times its launch's starting median."""

    id = "rl.value_divergence"
    params = ValueDivergenceParams
    p: ValueDivergenceParams
    watches = ("value_loss",)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._launches: dict[str, _Launch] = {}

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        if not math.isfinite(point.value):
            return None
        run = self._launches.get(series.source)
        step = point.step if point.step is not None else -1
        if run is None or step < run.last_step:  # the first launch, or a counter that started again
            run = self._launches[series.source] = _Launch()
        run.last_step = step
        if len(run.start) < self.p.baseline:
            run.start.append(point)
            return None
        run.recent = [*run.recent[-(self.p.recent - 1):], point]
        base = median([p.value for p in run.start])
        now = median([p.value for p in run.recent])
        bar = self.p.factor * base
        if base <= 0 or len(run.recent) < self.p.recent or now < bar or point.value < bar:
            return None
        first, last = run.start[0].step, run.start[-1].step
        began = next(p for p in run.recent if p.value >= bar)
        return Finding(
            message=(f"{series.name} is {fmt(point.value)} at step {point.step}, {point.value / base:,.0f} times "
                     f"its level at the launch's start ({fmt(base)}, the median of its first {len(run.start)} "
                     f"points, steps {first}-{last}); the median of its last {len(run.recent)} points is "
                     f"{fmt(now)}: the value function is diverging (first that high at step {began.step}, "
                     f"{fmt(began.value)})"),
            step=point.step, began_step=began.step,
            evidence={"value": point.value, "step": point.step, "baseline": base,
                      "baseline_stat": f"median of the first {len(run.start)} points", "baseline_from": first,
                      "recent_median": now, "ratio": point.value / base, "last_value": point.value,
                      "last_step": point.step})
