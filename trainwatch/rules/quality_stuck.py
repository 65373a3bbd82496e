"""quality.not_learning: a task metric (accuracy, mIoU, validity...) that stayed near 0 over every one of
its evaluations: whatever the loss does, the model learnt nothing the task can see.

Judged once the run's data has ended, over all its evaluations. The unit is read from the values: a
share printed above 1 anywhere in the source is a percent, so 0.7 next to a top-5 accuracy of 2.5 is
0.7 %, not 70 %. A share that never rose above `near_zero` of its full scale and did not climb is near
0 in either unit only when the values settle the unit or sit below `near_zero` of 1; otherwise the
rule cannot tell 0.7 % from 0.7 and says nothing. A run of few evaluations is told as info."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from trainwatch.model import Finding, Severity
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.quality_series import Track, tracks
from trainwatch.rules.registry import register
from trainwatch.rules.stats import fmt


@dataclass(frozen=True)
class QualityNotLearningParams:
    """Parameters of quality.not_learning; their meaning and defaults are in presets/base.yaml."""

    min_evals: int
    sure_evals: int
    near_zero: float
    min_climb: float


@register("quality.not_learning")
class QualityNotLearning(Rule):
    """Every evaluation of a higher-is-better task metric near 0 (or exactly 0), with no climb."""

    id = "quality.not_learning"
    params = QualityNotLearningParams
    p: QualityNotLearningParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        stuck = [t for t in tracks(ctx, source, higher_only=True) if self._stuck(t)]
        if not stuck:
            return []
        stuck.sort(key=lambda t: -len(t.values))
        main = stuck[0]
        n = len(main.values)
        parts = [f"{t.name} stayed at {t.shown(float(t.values.min()))}-{t.shown(float(t.values.max()))} "
                 f"over all its {len(t.values)} evaluations" for t in stuck[:3]]
        msg = "; ".join(parts) + (f" (and {len(stuck) - 3} more)" if len(stuck) > 3 else "")
        msg += ": near 0 the whole run, the model learnt nothing the task metric sees"
        loss = ctx.series("loss", source)
        if loss is not None and loss.first is not None and loss.last is not None:
            msg += f", while the train loss went {fmt(loss.first)} -> {fmt(loss.last.value)}"
        sure = n >= self.p.sure_evals
        first, last = int(main.steps[0]), int(main.steps[-1])
        return [Finding(message=msg, step=first, began_step=first, subject=main.name,
                        severity=None if sure else Severity.INFO,
                        evidence={"value": float(main.values.max()), "step": first, "evals": n,
                                  "metrics": [t.name for t in stuck], "percent": main.percent,
                                  "detected_step": last, "last_value": float(main.values[-1]),
                                  "last_step": last})]

    def _stuck(self, t: Track) -> bool:
        v = t.values
        n = len(v)
        if n < self.p.min_evals:
            return False
        top = float(v.max())
        if top == 0.0 and float(v.min()) == 0.0:
            return True  # exactly 0 at every evaluation, whatever the metric
        if not t.d.share or t.percent is False or float(v.min()) < 0:
            return False
        scale = 100.0 if t.percent else 1.0  # unknown unit: near 0 of 1 is near 0 of 100 as well
        if top >= self.p.near_zero * scale:
            return False
        third = max(1, n // 3)
        early, late = median(v[:third].tolist()), median(v[-third:].tolist())
        return late - early < self.p.min_climb * scale  # a low metric that climbs is learning slowly
