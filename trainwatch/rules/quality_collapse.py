"""quality.collapse: a higher-is-better task metric (accuracy, mIoU, reward...) that fell far below its
running best: val accuracy 34.7 -> 2.5, an RL reward 0.34 -> 0.

Judged once the run's data has ended, over the whole run, so the finding can say whether the metric came
back (a transient collapse) or stayed down. Dense series (a reward logged every step) are read through a
rolling median first, so one bad batch is no collapse; the fall must also stand `noise_k` noise widths
(the metric's own point-to-point noise) below the best and last `persist` points. A collapse to nothing
(the last `zero_points` values all within `zero` of 0, relative to the best) that never came back is
critical: the run ended producing nothing of what it was trained for (an RL policy degenerated into
truncated gibberish that earns no reward, a classifier that lost every class).

A share with a full scale (accuracy, mIoU: 0-1 or 0-100 %) also collapses without losing half its value:
near the top, what counts is the shortfall from the full scale. A classifier at 99 % that falls to 60 %
and stays there got forty times worse (a verifier that now refuses everything, a model that predicts the
majority class), though 60 is more than half of 99. So a fall of `share_drop` of the scale that also
multiplies the shortfall by `share_worse` is a collapse too; mid-range wobbles (60 % -> 45 %) are not.

A metric named only a `score` may be one where lower is better (a penalty, a distance): when a metric of
known direction improved by `quality_gain` over the same steps, its fall is told as info."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from trainwatch.model import Finding, Severity
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.quality_series import Track, centred_count, improving, medians_label, rolling_median, tracks
from trainwatch.rules.registry import register
from trainwatch.rules.stats import diff_sigma, nz


@dataclass(frozen=True)
class QualityCollapseParams:
    """Parameters of quality.collapse; their meaning and defaults are in presets/base.yaml."""

    min_points: int
    drop: float
    noise_k: float
    persist: int
    recover: float
    min_best: float
    smooth_fraction: float
    smooth_max: int
    smooth_jump: float
    zero: float
    zero_points: int
    share_drop: float
    share_worse: float
    quality_gain: float


@dataclass(frozen=True)
class _Collapse:
    t: Track
    best: float
    best_step: int
    at: int  # index of the first collapsed point
    low: float
    low_at: int  # index of the lowest point of the collapse (`low`)
    fell_to: float  # the value at `at`
    recovered: int | None  # index where it came back, if it did
    back: float  # the value it came back to
    window: int = 1  # points of the rolling median the values are (fewer near the ends: centred_count)
    best_at: int = 0  # index of the best


@register("quality.collapse")
class QualityCollapse(Rule):
    """A task metric below (1 - drop) of its running best for `persist` points, beyond its noise. A metric
    that goes negative (a shaped reward) is left alone: half of its best means nothing; so is precision
    or recall alone, which a threshold trades against the other."""

    id = "quality.collapse"
    params = QualityCollapseParams
    p: QualityCollapseParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        found = [c for t in tracks(ctx, source, higher_only=True)
                 if not t.d.tradeoff and (c := self._collapse(t)) is not None]
        if not found:
            return []
        found.sort(key=lambda c: int(c.t.steps[c.at]))
        c = found[0]
        t = c.t
        at_step = int(t.steps[c.at])
        n = len(t.values)
        k_best, k_at, k_low = (centred_count(c.best_at, n, c.window),
                               centred_count(c.at, n, c.window), centred_count(c.low_at, n, c.window))
        shown = [k_best, k_at] + ([k_low] if c.low_at != c.at else [])
        smooth = f" ({medians_label(shown)})" if c.window > 1 else ""
        low_step = int(t.steps[c.low_at])
        msg = (f"{t.name} collapsed from its best {t.shown(c.best)} (step {c.best_step}) to "
               f"{t.shown(c.fell_to)} at step {at_step} ({c.fell_to / c.best:.0%} of the best)")
        if c.low_at != c.at:
            msg += f", down to {t.shown(c.low)} at step {low_step}"
        msg += smooth
        last = float(t.values[-1])
        if c.recovered is not None:
            msg += (f"; a transient collapse: it recovered to {t.shown(c.back)} by step "
                    f"{int(t.steps[c.recovered])}")
        elif last > (1 - self.p.drop) * c.best:  # partly back, never to its best again
            msg += (f" and never came back to {self.p.recover:.0%} of its best: {t.shown(last)} at the last step "
                    f"{int(t.steps[-1])}")
        else:
            msg += f" and stayed down: {t.shown(last)} at the last step {int(t.steps[-1])}"
        others = [o.t.name for o in found[1:]]
        if others:
            msg += f" (also collapsed: {', '.join(others[:4])})"
        tail = t.values[-self.p.zero_points:]
        to_nothing = (c.recovered is None and len(t.values) >= self.p.min_points + self.p.zero_points
                      and bool((np.abs(tail) <= self.p.zero * c.best).all()))
        if to_nothing:
            msg += f"; its last {len(tail)} values were all near 0: the run ends producing nothing it was trained for"
        gain = improving(ctx, source, c.best_step, None, self.p.quality_gain, known_only=True) \
            if t.d.guess else None
        if gain is not None:  # a generic name whose fall the run's known metrics contradict: maybe lower is better
            msg += (f"; meanwhile {gain.said()}: the name does not say which way is better for {t.name} "
                    f"(a `directions:` entry in the config tells it)")
        f = Finding(message=msg, step=at_step, began_step=at_step, subject=t.name,
                        evidence={"value": c.fell_to, "step": at_step, "best": c.best, "best_step": c.best_step,
                                  "low": c.low, "low_step": low_step,
                                  **({"value_stat": f"median of {k_at} points",
                                      "best_stat": f"median of {k_best} points",
                                      "low_stat": f"median of {k_low} points"} if c.window > 1 else {}),
                                  "recovered": c.recovered is not None, "metrics": [o.t.name for o in found],
                                  "detected_step": at_step, "last_value": last, "last_step": int(t.steps[-1]),
                                  "to_zero": to_nothing})
        if gain is not None:
            f.severity = Severity.INFO
        elif to_nothing:
            f.severity = Severity.CRITICAL
        return [f]

    def _collapse(self, t: Track) -> _Collapse | None:
        p = self.p
        raw = t.values
        n = len(raw)
        if n < p.min_points:
            return None
        w = max(1, min(p.smooth_max, int(n * p.smooth_fraction)))
        w += 1 - w % 2  # odd
        v = rolling_median(raw, w)
        if w > 1 and _smooth(raw, float(v.max()), p.smooth_jump):
            w, v = 1, raw  # evaluations that move little from one to the next: a fall among them is no noise
        noise = nz(max(diff_sigma(v.tolist()), diff_sigma(raw.tolist()) / max(1.0, w ** 0.5)))
        best = np.maximum.accumulate(v)
        if float(raw.min()) < 0:
            return None  # a score that goes negative (a shaped reward) has no scale to fall by half of
        if t.d.share and float(v.max()) < p.min_best * (100.0 if t.percent else 1.0):
            return None  # a best near 0 (chance level) has nothing to collapse from: quality.not_learning's case
        bar = (1 - p.drop) * best
        if t.d.share and t.percent is not False:
            scale = 100.0 if t.percent else 1.0  # (None: every value within 0-1, a share of 1)
            near_top = np.minimum(best - p.share_drop * scale, scale - p.share_worse * (scale - best))
            bar = np.maximum(bar, near_top)
        below = (v <= bar) & (best - v > p.noise_k * noise) & (best > 0)
        k = max(1, p.persist)
        found: list[_Collapse] = []
        after = 0  # a collapse is looked for again only once the one before recovered
        for i in np.flatnonzero(below).tolist():
            if i + k > n:
                break
            held = float(v[i:i + k].max()) if w == 1 else median(v[i:i + k].tolist())  # as logged: all of them
            if i < after or held > bar[i]:
                continue
            b = float(best[i])
            bi = int(np.flatnonzero(v[:i + 1] == b)[0])
            back = np.flatnonzero(v[i:] >= p.recover * b)
            rec = int(back[0]) + i if len(back) else None
            seg = v[i:rec] if rec else v[i:]
            lo = i + int(np.argmin(seg))
            found.append(_Collapse(t, b, int(t.steps[bi]), i, float(v[lo]), lo, float(v[i]), rec,
                                   float(v[rec]) if rec is not None else float(v[lo]), w, bi))
            if rec is None:
                break
            after = rec
        # the deepest fall is the story (a small dip early in a run that later climbs far higher is not)
        return max(found, key=lambda c: c.best - c.low) if found else None


def _smooth(raw: np.ndarray, best: float, jump: float) -> bool:
    """Whether 3 in 4 of a series' point-to-point moves are within `jump` of its best level: a curve of
    evaluations, each a measurement of the whole model, where a rolling median would hide a real fall
    that lasts fewer points than half its window. A reward or accuracy logged per batch jumps more."""
    if len(raw) < 3 or best <= 0:
        return False
    return float(np.quantile(np.abs(np.diff(raw)), 0.75)) <= jump * best
