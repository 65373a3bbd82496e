"""quality.no_progress: a reward or score with no scale of its own (an RL episode return, `Average100
Score`) that never rose above the level it started at.

A share (accuracy, Dice) has a floor to compare with: 0, which quality.not_learning judges. A reward has
none, but a run that logs it from its first episodes has one of its own: an untrained policy acts at
random, so the first values are the random-policy level. A curve whose late part and whose peak both
stay within `min_gain` (and the noise) of that early level learnt nothing the task rewards. The first
third's median is that level only if the curve did not climb within it: a late level above the median of
the very first points (one smoothing window) by as much is a run that learnt early and then held on.

Judged once the run's data has ended. Only a metric first logged within the first `start_within` of its
steps (or at its first logging interval) counts: a resumed log starts from a learnt level. So does an
eval split's (a fine-tune's first evaluation already shows what the first epoch learnt), which is left
out. A short series is told as info: the start level of a few points is itself a guess; not so a reward
whose last `min_points` values are all one number (frozen): a return that repeats exactly from rollout to
rollout comes from a policy that no longer explores (collapsed to one deterministic behaviour), and there
is no noise left to guess through."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from trainwatch.model import Finding, Severity
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.quality_series import Track, centred_count, medians_label, rolling_median, tracks
from trainwatch.rules.registry import register
from trainwatch.rules.stats import diff_sigma, fmt, latest_start, nz


@dataclass(frozen=True)
class QualityNoProgressParams:
    """Parameters of quality.no_progress; their meaning and defaults are in presets/base.yaml."""

    min_points: int
    sure_points: int
    start_within: float
    min_gain: float
    noise_k: float
    smooth_fraction: float
    smooth_max: int


@dataclass(frozen=True)
class _Flat:
    t: Track
    early: float  # the start level: the median of the first third
    late: float  # the median of the last third
    peak: float  # the highest point of the smoothed curve
    window: int
    peak_points: int = 1  # how many points the peak's median was taken over (fewer than window at an end)


@register("quality.no_progress")
class QualityNoProgress(Rule):
    """A higher-is-better metric with no fixed scale whose late level and peak never left its start level."""

    id = "quality.no_progress"
    params = QualityNoProgressParams
    p: QualityNoProgressParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        found = tracks(ctx, source, higher_only=True)
        flat = [f for t in found if (f := self._flat(t)) is not None]
        if not flat or any(self._climbed(t) for t in found):
            return []  # another reward of the run rose (SB3's ep_rew_mean beside its eval's episode_reward,
            # first evaluated once the policy had learnt): the run learns
        flat.sort(key=lambda f: -len(f.t.values))
        f = flat[0]
        t = f.t
        n = len(t.values)
        first, last = int(t.steps[0]), int(t.steps[-1])
        smooth = f" (a median of {f.peak_points} points)" if f.window > 1 and f.peak_points > 1 else ""
        # the thirds' levels are medians of the rolling medians, not of the values: the label says so
        rolls = medians_label([centred_count(i, n, f.window) for i in range(n)]) if f.window > 1 else ""
        rolled = f" (each the median of a third's rolling {rolls})" if rolls else ""
        stat = "median of the first third" + (f" of its rolling {rolls}" if rolls else "")
        msg = (f"{t.name} stayed at the level it started at over all its {n} points (steps {first}-{last}): "
               f"{fmt(f.early)} in the first third, {fmt(f.late)} in the last{rolled}, never above "
               f"{fmt(f.peak)}{smooth}; "
               f"the first values are an untrained model's (a random policy's) level, so the run is not learning")
        loss = ctx.series("loss", source)
        start = latest_start(loss) if loss is not None else None
        if start is not None and loss is not None and loss.last is not None:
            msg += (f", while the train loss went {fmt(start.value)} (step {start.step}) -> {fmt(loss.last.value)} "
                    f"(step {loss.last.step})")
        if len(flat) > 1:
            msg += f" (also flat: {', '.join(o.t.name for o in flat[1:4])})"
        frozen = self._frozen(t)
        if frozen:
            msg += (f"; its last {frozen} values are all {fmt(float(t.values[-1]))}: a frozen return, a policy that "
                    f"no longer explores (collapsed)")
        sure = n >= self.p.sure_points or frozen > 0
        return [Finding(message=msg, step=first, began_step=first, subject=t.name,
                        severity=None if sure else Severity.INFO,
                        evidence={"value": f.early, "value_stat": stat, "step": first,
                                  "late": f.late, "frozen": frozen, "peak": f.peak, "points": n,
                                  "metrics": [o.t.name for o in flat],
                                  "detected_step": last, "last_value": float(t.values[-1]), "last_step": last})]

    def _frozen(self, t: Track) -> int:
        """How many of the last values repeat the last one exactly, when at least `min_points` do; else 0."""
        v = t.values
        same = len(v) - int(np.flatnonzero(v != v[-1])[-1]) - 1 if bool((v != v[-1]).any()) else len(v)
        return same if same >= self.p.min_points else 0

    def _climbed(self, t: Track) -> bool:
        """A reward or score without a scale whose late level rose beyond its early one by `min_gain`."""
        if t.d.share or len(t.values) < self.p.min_points:
            return False
        third = max(1, len(t.values) // 3)
        early, late = median(t.values[:third].tolist()), median(t.values[-third:].tolist())
        return late - early > self.p.min_gain * abs(early)

    def _flat(self, t: Track) -> _Flat | None:
        p = self.p
        if t.d.share or t.d.split == "eval":
            return None  # a share has 0 as its floor (quality.not_learning); an eval starts from a learnt level
        raw = t.values
        n = len(raw)
        if n < p.min_points or float(raw.max()) == float(raw.min()):
            return None  # too few, or a constant (a capped score, a placeholder): nothing to read a level from
        first, last = int(t.steps[0]), int(t.steps[-1])
        gap = float(np.median(np.diff(t.steps)))  # the logging interval: a first value at `gap` is the first one
        if last <= 0 or first > max(p.start_within * last, gap):
            return None  # first logged once training was well under way: its start is no untrained level
        w = max(1, min(p.smooth_max, int(n * p.smooth_fraction)))
        w += 1 - w % 2
        v = rolling_median(raw, w)
        third = max(1, n // 3)
        early, late = median(v[:third].tolist()), median(v[-third:].tolist())
        peak = float(np.nanmax(v))
        noise = nz(max(diff_sigma(v.tolist()), diff_sigma(raw.tolist()) / max(1.0, w ** 0.5)))
        bar = max(p.min_gain * abs(early), p.noise_k * noise)
        if late - early > bar or peak - early > 2 * bar:
            return None  # it climbed (or rose and fell back: quality.collapse tells that story)
        start = median(raw[:max(3, w)].tolist())  # the first points alone: the random policy's own level
        if late - start > max(p.min_gain * abs(start), p.noise_k * noise):
            return None  # it learnt in its first points and then held that level: a plateau, not no progress
        return _Flat(t, early, late, peak, w, centred_count(int(np.nanargmax(v)), n, w))
