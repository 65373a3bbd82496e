"""quality.not_learning: a task metric (accuracy, mIoU, validity...) that stayed near 0 over every one of
its evaluations: whatever the loss does, the model learnt nothing the task can see.

Judged once the run's data has ended, over all its evaluations. The unit is read from the values: a
share printed above 1 makes the source's shares of its kind percents, so 0.7 next to a top-5 accuracy of
2.5 is 0.7 %, not 70 % (a mAP of 0.358 next to an accuracy of 97.19 % stays a fraction). A share that
never rose above `near_zero` of its full scale and did not climb is near 0 in either unit only when the
values settle the unit or sit below `near_zero` of 1; otherwise the rule cannot tell 0.7 % from 0.7 and
says nothing. A run of few evaluations is told as info.

A share that is exactly 0 is no noise: conlleval's `precision: 0.00%; recall: 0.00%; FB1: 0.00` means the
model found no entity at all. From `zero_evals` evaluations on that is judged, and it is a warning when
the last of them is the final one (no train loss logged after it): what the run delivers finds nothing.
Any other few evaluations stay info, since an untrained model's first evaluation can be 0 too.

When the run's config gives its number of classes K (`num_classes`, `num_labels`), a top-1 accuracy that
stayed within the band of a guess, 1/K (at most `chance_ratio` times it and `chance_room` of the rest
of the scale above it), with no climb, is at chance: a 10-class accuracy at 9-11 % learnt nothing either.
Top-k and pixel accuracies are left out: their chance level is not 1/K.

A metric named only a `score` that stays at 0 while a metric of known direction (an accuracy, an eval
loss is not one) improved by `quality_gain` is told as info: the model learns, and that score may be
one whose best is 0."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from trainwatch.model import Finding, Severity
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.quality_series import Gain, Track, improving, tracks
from trainwatch.rules.registry import register
from trainwatch.rules.stats import fmt, latest_start
from trainwatch.store import Series


@dataclass(frozen=True)
class QualityNotLearningParams:
    """Parameters of quality.not_learning; their meaning and defaults are in presets/base.yaml."""

    min_evals: int
    sure_evals: int
    zero_evals: int
    near_zero: float
    min_climb: float
    chance_ratio: float
    chance_room: float
    quality_gain: float


@register("quality.not_learning")
class QualityNotLearning(Rule):
    """Every evaluation of a higher-is-better task metric near 0 (or exactly 0), with no climb."""

    id = "quality.not_learning"
    params = QualityNotLearningParams
    p: QualityNotLearningParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        tracks_all = tracks(ctx, source, higher_only=True)
        stuck = [t for t in tracks_all if self._stuck(t)]
        k = _classes(ctx, source)
        at_chance = [] if k is None else [t for t in tracks_all if t not in stuck and self._at_chance(t, k)]
        if not stuck and not at_chance:
            return []
        stuck.sort(key=lambda t: -len(t.values))
        at_chance.sort(key=lambda t: -len(t.values))
        main = (stuck or at_chance)[0]
        n = len(main.values)
        parts = [_said(t) for t in stuck[:3]]
        msg = "; ".join(parts) + (f" (and {len(stuck) - 3} more)" if len(stuck) > 3 else "")
        gain = self._contradicted(ctx, source, stuck, at_chance)
        if gain is not None:
            msg += (f": near 0 the whole run, while {gain.said()}: the model learns, but not what "
                    f"{'these metrics measure' if len(stuck) > 1 else 'this metric measures'} (check how it is "
                    f"computed, or whether 0 is its best)")
        elif stuck:
            msg += ": near 0 the whole run, the model learnt nothing the task metric sees"
        if at_chance and k is not None:
            t = at_chance[0]
            msg += ("; " if stuck else "") + (
                f"{_said(t)}: the level of a guess among {k} classes ({t.shown(_unit(t) / k)}) the whole run, "
                f"at chance, the model learnt nothing the task metric sees")
        loss = ctx.series("loss", source)
        start = latest_start(loss) if loss is not None else None
        if start is not None and loss is not None and loss.last is not None:
            msg += (f", while the train loss went {fmt(start.value)} (step {start.step}) -> {fmt(loss.last.value)} "
                    f"(step {loss.last.step})")
        if gain is None:
            msg += _beside(tracks_all, stuck)
        sure = gain is None and (n >= self.p.sure_evals or _final(main, loss))
        first, last = int(main.steps[0]), int(main.steps[-1])
        return [Finding(message=msg, step=first, began_step=first, subject=main.name,
                        severity=None if sure else Severity.INFO,
                        evidence={"value": float(main.values.max()), "step": first, "evals": n,
                                  "metrics": [t.name for t in stuck + at_chance], "percent": main.percent,
                                  **({"classes": k} if at_chance else {}),
                                  "detected_step": last, "last_value": float(main.values[-1]),
                                  "last_step": last})]

    def _contradicted(self, ctx: RuleContext, source: str, stuck: list[Track],
                      at_chance: list[Track]) -> Gain | None:
        """A metric of known direction that improved over the run, when every stuck metric is only named a
        `score` (a penalty or a count of mistakes is best at 0): the model learns what that one measures."""
        if at_chance or not stuck or not all(t.d.guess for t in stuck):
            return None
        return improving(ctx, source, min(int(t.steps[0]) for t in stuck), None, self.p.quality_gain,
                         known_only=True)

    def _stuck(self, t: Track) -> bool:
        v = t.values
        n = len(v)
        if n < min(self.p.min_evals, self.p.zero_evals):
            return False
        top = float(v.max())
        if top == 0.0 and float(v.min()) == 0.0:  # exactly 0 at every evaluation: a share from the first on
            return n >= self.p.min_evals or t.d.share
        if n < self.p.min_evals:
            return False
        if not t.d.share or t.percent is False or float(v.min()) < 0:
            return False
        scale = 100.0 if t.percent else 1.0  # unknown unit: near 0 of 1 is near 0 of 100 as well
        if top >= self.p.near_zero * scale:
            return False
        third = max(1, n // 3)
        early, late = median(v[:third].tolist()), median(v[-third:].tolist())
        return late - early < self.p.min_climb * scale  # a low metric that climbs is learning slowly


    def _at_chance(self, t: Track, k: int) -> bool:
        """A top-1 accuracy within the band of a guess among k classes at every evaluation, not climbing."""
        v = t.values
        n = len(v)
        if n < self.p.min_evals or k < 2 or t.d.kind != "accuracy" or t.percent is False or not _top1(t.name):
            return False
        scale = _unit(t)
        chance = scale / k
        band = min(chance * self.p.chance_ratio, chance + self.p.chance_room * (scale - chance))
        if float(v.max()) > band:
            return False
        third = max(1, n // 3)
        return median(v[-third:].tolist()) - median(v[:third].tolist()) < self.p.min_climb * scale


def _classes(ctx: RuleContext, source: str) -> int | None:
    """The number of classes the run's config gives (runconfig's `num_classes` fact), else None."""
    state = ctx.sources.get(source)
    cfg = (getattr(state, "facts", None) or {}).get("run_config")
    k = cfg.get("num_classes") if cfg is not None and hasattr(cfg, "get") else None
    return k if isinstance(k, int) and not isinstance(k, bool) and k >= 2 else None


def _unit(t: Track) -> float:
    """The full scale of a share: 100 for a percent, else 1 (values all within 0-1 read as a fraction)."""
    return 100.0 if t.percent else 1.0


_TOPK = re.compile(r"(?:^|_)(?:top|acc|accuracy)_?(\d+)(?=_|$)")


def _top1(name: str) -> bool:
    """Not a top-k (`acc5`, `Acc@5`, `top_5`) nor a pixel accuracy, whose chance is not 1/K."""
    tokens = [x for x in re.split(r"[^a-z0-9]+", name.lower()) if x]
    if any(x.startswith("pix") for x in tokens):
        return False
    return all(m.group(1) == "1" for m in _TOPK.finditer("_".join(tokens)))


def _said(t: Track) -> str:
    lo, hi, n = float(t.values.min()), float(t.values.max()), len(t.values)
    if n == 1:
        return f"{t.name} was {t.shown(hi)} at its only evaluation"
    if lo == hi == 0.0:
        return f"{t.name} was {t.shown(hi)} at every one of its {n} evaluations"
    return f"{t.name} stayed at {t.shown(lo)}-{t.shown(hi)} over all its {n} evaluations"


def _final(t: Track, loss: Series | None) -> bool:
    """Every evaluation exactly 0 and the last one final: no train loss logged after it, and, when a loss
    is logged, some before it (an evaluation before any training says nothing about the training)."""
    if float(t.values.max()) != 0.0 or float(t.values.min()) != 0.0:
        return False
    if loss is None or not loss.head or loss.last is None:
        return True
    return loss.last.step <= int(t.steps[-1]) and loss.head[0].step < int(t.steps[0])


def _beside(all_tracks: list[Track], stuck: list[Track]) -> str:
    """Another task metric of the same evaluations well above 0 (accuracy 69 % beside an F1 of 0): a model
    that predicts the majority class scores so on a plain accuracy. Said as what may be, not as what is:
    the log does not show the class balance."""
    names = {t.name for t in stuck}
    for t in all_tracks:
        if t.name not in names and t.d.share and t.percent is not False and float(t.values[-1]) > 0:
            return (f"; {t.name} is {t.shown(float(t.values[-1]))} at the same time, a level that predicting one "
                    f"class (the majority) alone can reach")
    return ""
