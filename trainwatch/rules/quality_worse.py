"""quality.worsened: a task metric whose evaluations have all been worse than its best for a good part of
the run, in a log that prints no training loss.

Some trainings print no loss at all, only an evaluation metric: StyleGAN2-ADA's console has its `tick` lines
and an FID every few snapshots, an evaluation-only log has its accuracy or WER. There quality.overfit, which
needs a falling train loss, says nothing, and an FID that rises 58 -> 78 over the run would pass as healthy.
Judged once the run has ended, like quality.overfit and with its kind of evidence: the best must be
followed by at least `later_evals` evaluations (and `behind` of all of them), every one of them worse, and
the median of the latest `latest` worse than the best by `min_worse` of it and by `level_k` noise widths
(the evaluations' own second differences). A best at the first evaluation counts (a resumed run that only
got worse). Rewards are left out (an RL run's reward has rules of its own), so are precision and recall
alone (a threshold trades one for the other) and a bare `score`, whose better side is a guess.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.quality_series import best_behind, other_train_loss, tracks
from trainwatch.rules.registry import register
from trainwatch.rules.stats import curve_sigma, nz


@dataclass(frozen=True)
class QualityWorsenedParams:
    """Parameters of quality.worsened; their meaning and defaults are in presets/base.yaml."""

    min_evals: int
    later_evals: int
    behind: float
    latest: int
    min_worse: float
    level_k: float


@register("quality.worsened")
class QualityWorsened(Rule):
    """The best evaluation of a task metric is `later_evals` evaluations old and every later one worse,
    the latest clearly so, in a source that logs no train loss."""

    id = "quality.worsened"
    params = QualityWorsenedParams
    p: QualityWorsenedParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        p = self.p
        if ctx.series("loss", source) is not None or other_train_loss(ctx, source) is not None:
            return []  # a train loss to read the fall against: quality.overfit's case
        for t in tracks(ctx, source):
            if t.d.split == "train" or t.d.kind == "reward" or t.d.tradeoff or t.d.guess:
                continue
            got = best_behind(t, p.min_evals, p.later_evals, p.behind)
            if got is None or not (got[0][got[1] + 1:] < got[0][got[1]]).all():
                continue
            v, b = got
            n, later = len(v), len(v) - 1 - b
            best = float(v[b])
            latest = median(v[-p.latest:].tolist())
            noise = nz(curve_sigma(v.tolist()))
            gap = best - latest
            if gap < p.min_worse * abs(best) or gap < p.level_k * noise:
                continue
            b_step, last_step = int(t.steps[b]), int(t.steps[-1])
            where = "its first evaluation" if b == 0 else "an evaluation"
            side = "higher" if t.d.higher else "lower"
            msg = (f"{t.name} got worse: best at {where}, step {b_step} ({t.shown(float(t.values[b]))}); the "
                   f"{later} evaluations since were all worse, lately {t.shown(t.sign * latest)} (median of the "
                   f"last {min(p.latest, n)}), {t.shown(float(t.values[-1]))} at the last, step {last_step} "
                   f"({side} is better for it); the log prints no train loss to tell why")
            return [Finding(message=msg, step=b_step, began_step=b_step, subject=t.name,
                            evidence={"value": float(t.values[b]), "step": b_step, "latest": t.sign * latest,
                                      "latest_stat": f"median of the last {min(p.latest, n)} evaluations",
                                      "noise": noise, "evaluations_since": later,
                                      "detected_step": last_step, "last_value": float(t.values[-1]),
                                      "last_step": last_step})]
        return []
