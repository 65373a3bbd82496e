"""quality.overfit: the best evaluation of a task metric (val accuracy, mIoU, mAP...) is well behind us
while the train loss keeps improving: the model fits the train set better and the task worse.

Judged once the run's data has ended. Sparse evaluations are noisy and the best of them is itself a
lucky draw, so the best must be followed by at least `later_evals` evaluations (and `behind` of all of
them), the median of the latest ones must stand below the level around the best by `level_k` noise
widths (the evaluations' own second differences) and `min_drop` of the best, and the train loss must
have fallen `train_fall` since the best. Rewards are left out (a policy has no held-out split), and so
are precision and recall alone (a threshold trades one for the other). A metric named only a `score`
that fell while a metric of known direction improved by `quality_gain` is told as info (lower may be
better for it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from trainwatch.model import Finding, Severity
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.quality_series import best_behind, improving, tracks
from trainwatch.rules.registry import register
from trainwatch.rules.stats import curve_sigma, fmt, median_se, nz


@dataclass(frozen=True)
class QualityOverfitParams:
    """Parameters of quality.overfit; their meaning and defaults are in presets/base.yaml."""

    min_evals: int
    later_evals: int
    behind: float
    level_k: float
    min_drop: float
    latest: int
    train_window: int
    train_fall: float
    quality_gain: float


@register("quality.overfit")
class QualityOverfit(Rule):
    """The best eval value of a task metric is `later_evals` evaluations old, the latest ones clearly
    worse, and the train loss still falling."""

    id = "quality.overfit"
    params = QualityOverfitParams
    p: QualityOverfitParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        p = self.p
        loss = ctx.series("loss", source)
        if loss is None:
            return []
        l_steps, l_vals, _, _ = loss.columns(loss.count)
        fin = np.isfinite(l_vals)
        l_steps, l_vals = l_steps[fin], l_vals[fin]
        for t in tracks(ctx, source):
            if t.d.split == "train" or t.d.kind == "reward" or t.d.tradeoff:
                continue
            got = best_behind(t, p.min_evals, p.later_evals, p.behind)
            if got is None:
                continue
            v, b = got
            later = len(v) - 1 - b
            best = float(v[b])
            noise = nz(curve_sigma(v.tolist()))
            around = median(v[max(0, b - 1):b + 2].tolist())
            latest = median(v[-p.latest:].tolist())
            gap = around - latest
            if not (v[b + 1:] < best).all():
                continue
            since = median(v[b + 1:].tolist())
            stretch = False
            if gap < p.level_k * noise or gap < p.min_drop * abs(best):
                # an erratic metric: its latest few say little, the median of all of them since the best says
                # more (its error shrinks with their number); every one of them worse and that median far
                # enough below the best's level is the same finding, read over the whole stretch
                gap = around - since
                if gap < p.level_k * median_se(noise, later) or gap < p.min_drop * abs(best):
                    continue
                stretch = True
            b_step, last_step = int(t.steps[b]), int(t.steps[-1])
            if not len(l_steps) or b_step < int(l_steps[0]):
                continue  # best before any training (an evaluation on start): never improved, not overfitting
            then, n_then = _median_upto(l_steps, l_vals, b_step, p.train_window)
            recent = l_vals[-p.train_window:].tolist()
            now = median(recent) if recent else float("nan")
            if not now < then * (1 - p.train_fall):
                continue
            lately = (f"their median {t.shown(t.sign * since)}, lately {t.shown(t.sign * latest)} (median of the "
                      f"last {p.latest})") if stretch else \
                f"lately {t.shown(t.sign * latest)} (median of the last {p.latest})"
            msg = (f"{t.name} was best at step {b_step} ({t.shown(float(t.values[b]))}); the {later} evaluations "
                   f"since were all worse, {lately}, "
                   f"while the train loss fell {fmt(then)} -> {fmt(now)} ({_medians(n_then, len(recent))} "
                   f"to step {b_step} and to the end)")
            gain = improving(ctx, source, b_step, None, p.quality_gain, known_only=True) if t.d.guess else None
            if gain is not None:  # a generic name that the run's known metrics contradict: maybe lower is better
                msg += (f"; meanwhile {gain.said()}: the name does not say which way is better for {t.name} "
                        f"(a `directions:` entry in the config tells it)")
            return [Finding(message=msg, step=b_step, began_step=b_step, subject=t.name,
                            severity=Severity.INFO if gain is not None else None,
                            evidence={"value": float(t.values[b]), "step": b_step, "latest": t.sign * latest,
                                      "since_median": t.sign * since, "noise": noise, "train_then": then,
                                      "train_now": now,
                                      "detected_step": last_step, "last_value": float(t.values[-1]),
                                      "last_step": last_step})]
        return []


def _median_upto(steps: np.ndarray, values: np.ndarray, step: int, w: int) -> tuple[float, int]:
    """Median of the last w train-loss values logged at or before `step` (the caller makes sure there is
    one), and how many it was taken over: fewer than w when the run logged fewer, and the label says so."""
    vals = values[steps <= step][-w:]
    return (median(vals.tolist()), len(vals)) if len(vals) else (float("nan"), 0)


def _medians(a: int, b: int) -> str:
    """The label of two medians by the counts they were taken over."""
    return f"medians of {a} points" if a == b else f"medians of {a} and {b} points"
