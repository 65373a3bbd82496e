"""loss.zero: a train loss that drops to exactly 0 and stays there is no longer computed.

A supervised loss (cross-entropy, a regression's error) of a model that learns approaches 0 and passes
through the last digits the log prints: 0.0031, 0.0008, 0.0002, then `0.0` once rounding takes it. One
that falls to exactly 0 from a level far above its print resolution, in one logging interval, and is
exactly 0 at every point after, measures nothing any more: every label masked (-100 everywhere), a guard
that zeroes a NaN or overflowed loss, fp16 underflow, a loss term that is never added. Judged once the
run's data has ended, on the points the run ends with. A loss that was exactly 0 from its first point is
told as info: nothing says whether the loop computed it at all (a placeholder) or it was broken from the
start. So is one while a task metric improved over the zeros (the objective the log names `loss` is then
not what trains the model). RL presets turn it off: a policy-gradient loss of exactly 0 is normal there
(GRPO with no KL term logs 0.0 at every step)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from trainwatch.model import Finding, Severity
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.quality_series import improving, meanwhile
from trainwatch.rules.registry import register
from trainwatch.rules.stats import fmt
from trainwatch.store import RECENT_POINTS


@dataclass(frozen=True)
class LossZeroParams:
    """Parameters of loss.zero; their meaning and defaults are in presets/base.yaml."""

    min_points: int
    from_above: float
    quality_gain: float


@register("loss.zero")
class LossZero(Rule):
    """The run's last `min_points` or more train-loss points all exactly 0, after a loss of `from_above` or more."""

    id = "loss.zero"
    params = LossZeroParams
    p: LossZeroParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        series = ctx.series("loss", source)
        if series is None or not series.minimum >= 0.0:
            return []  # a loss that goes negative (an ELBO, a policy loss) crosses 0 on its way
        steps, values, _, _ = series.columns(RECENT_POINTS)
        ok = np.isfinite(values)
        steps, values = steps[ok], values[ok]
        nonzero = np.flatnonzero(values != 0.0)
        zeros = len(values) - (int(nonzero[-1]) + 1 if len(nonzero) else 0)
        if zeros < self.p.min_points:
            return []
        first, last = int(steps[-zeros]), int(steps[-1])
        ev = {"value": 0.0, "step": first, "points": zeros, "detected_step": last, "last_step": last,
              "last_value": 0.0}
        span = f"at every one of its last {zeros} points (steps {first}-{last})"
        if not len(nonzero):
            if series.maximum > 0.0:
                return []  # its earlier, non-zero points are out of the recent window: the fall is not seen
            return [Finding(message=f"the train loss is exactly 0 at every one of its {zeros} points (steps "
                                    f"{first}-{last}): either the loop never computed it (a placeholder) or "
                                    f"it was broken from the start (every label masked)",
                            step=first, began_step=first, subject="loss", severity=Severity.INFO, evidence=ev)]
        at = int(nonzero[-1])
        before, before_step = float(values[at]), int(steps[at])
        if before < self.p.from_above:
            return []  # it crawled down to the last digit the log prints: a loss that memorised, rounded to 0
        ev.update(before=before, before_step=before_step)
        f = Finding(message=f"the train loss is exactly 0 {span}, right after {fmt(before)} at step {before_step}: "
                            f"a loss that drops to exactly 0 and stays there is no longer computed (every label "
                            f"masked, a guard that zeroes a NaN or overflowed loss, fp16 underflow), not a model "
                            f"that learnt everything",
                    step=first, began_step=first, subject="loss", evidence=ev)
        gain = improving(ctx, source, first, None, self.p.quality_gain)
        if gain is not None:
            meanwhile(f, gain, "the model still learns, so the loss logged is not what trains it")
        return [f]
