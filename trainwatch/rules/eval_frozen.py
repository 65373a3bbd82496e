"""loss.eval_frozen: a log of evaluations alone whose eval loss never moved: the model it evaluates is not
changing.

A metrics file that logs only the validation loss gives the training-loss rules nothing to read. Its eval
loss still tells whether the weights change: evaluated on the same data, a model whose weights move
gives another loss each time, even when it learns nothing useful. A loss that stays within
`max_spread` of its level over every one of at least `min_evals` evaluations is frozen (the optimiser
holds none of the weights, an LR of 0, a loss wired so that no gradient flows). One that moves, but stays
within `flat_spread` of its level from an evaluation at the run's start on, is flat: the weights change and
the model learns nothing measurable (an LR far too small, adapters that barely reach the output, a part
initialised at random that the rest cannot use). Judged once the run's data has ended, over the whole
run's history (its buckets keep each stretch's least and greatest value), and only when no train loss is
logged: with one, loss.flat_from_start judges the training itself."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.quality_series import other_train_loss
from trainwatch.rules.registry import register


@dataclass(frozen=True)
class LossEvalFrozenParams:
    """Parameters of loss.eval_frozen; their meaning and defaults are in presets/base.yaml."""

    min_evals: int
    max_spread: float
    flat_spread: float
    start_within: int


@register("loss.eval_frozen")
class LossEvalFrozen(Rule):
    """Every evaluation of the eval loss within a hair of one level, and no train loss logged."""

    id = "loss.eval_frozen"
    params = LossEvalFrozenParams
    p: LossEvalFrozenParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        ev = ctx.series("eval_loss", source)
        train = ctx.series("loss", source)
        if ev is None or ev.finite_count < self.p.min_evals or (train is not None and train.finite_count) \
                or other_train_loss(ctx, source) is not None:  # a train loss under a name not read as one
            return []
        buckets = [b for b in ev.whole_run() if b.finite]
        if not buckets:
            return []
        lo = min(b.minimum for b in buckets)
        hi = max(b.maximum for b in buckets)
        level = max(abs(lo), abs(hi))
        first, last = buckets[0].first_step, buckets[-1].last_step
        if level == 0 or (hi - lo) > self.p.flat_spread * level:
            return []
        n = ev.finite_count
        spread = (hi - lo) / level
        if spread <= self.p.max_spread:
            why = "the model being evaluated is not changing, so the run is not learning"
        elif first <= self.p.start_within:
            why = ("the weights change but the model is not learning: the eval loss is flat, barely improving "
                   "from the run's start")
        else:
            return []  # a log that starts late may show a converged model: flat there is no verdict
        msg = (f"eval_loss stayed at {lo:.6g}-{hi:.6g} over all its {n} evaluations (steps {first}-{last}), "
               f"a spread of {spread:.4%}: {why} (no train loss is logged)")
        return [Finding(message=msg, step=first, began_step=first, subject="eval_loss",
                        evidence={"value": lo, "step": first, "high": hi, "points": n, "spread": spread,
                                  "frozen": spread <= self.p.max_spread, "detected_step": last, "last_step": last})]
