"""loss.ended_higher: a run whose loss ended clearly above the first loss it logged made its model worse.

The first loss a run logs is the model's before training changed it much: for a model trained from
scratch it is the highest of the run, for a pretrained one it is the level its training should improve
on. A loss that jumps at the first updates (an LR far too high for pretrained weights, no warmup) and
settles well above that start, by many times its own point noise, never got back to where it was: the
optimisation damaged the weights. A divergence says more and keeps this quiet (inhibit). Judged once the
run has ended, only when its first point is at the run's start (an excerpt or a resumed log starts on
any batch), not for a GAN generator's loss (it rises as the discriminator wins), and as info when a
task metric improved meanwhile (a loss whose terms change may rise while the model gets better)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from trainwatch.adversarial import adversarial
from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.quality_series import improving, meanwhile
from trainwatch.rules.registry import register
from trainwatch.rules.stats import diff_sigma, fmt
from trainwatch.store import RECENT_POINTS, Point


@dataclass(frozen=True)
class LossEndedHigherParams:
    """Parameters of loss.ended_higher; their meaning and defaults are in presets/base.yaml."""

    min_points: int
    last: int
    ratio: float
    noise_k: float
    start_within: int
    quality_gain: float


@register("loss.ended_higher")
class LossEndedHigher(Rule):
    """The median of the run's last points far above its first point, by a ratio and by its noise."""

    id = "loss.ended_higher"
    params = LossEndedHigherParams
    p: LossEndedHigherParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        p = self.p
        series = ctx.series("loss", source)
        if series is None or adversarial(s.name for s in ctx.store if s.source == source):
            return []
        run = _current_run(series.last_points(RECENT_POINTS), series.head)
        if len(run) < max(p.min_points, p.last + 3):
            return []
        first = run[0]
        if first.value == 0 or first.step > p.start_within:
            return []
        values = [pt.value for pt in run]
        end = median(values[-p.last:])
        noise = diff_sigma(values[1:])  # the points after the first: the run's own point-to-point noise
        if noise != noise or end - first.value < p.noise_k * noise:
            return []
        # a loss below 0 (a negative Sharpe ratio, a policy-gradient loss): a ratio to a negative start means
        # nothing (it would read any rise as a fall). Judged by its rise instead, and told only when it
        # crossed 0 to at least as far above as it began below: a policy loss centred on 0 by its normalised
        # advantages drifts toward 0 in a healthy run, and a negative loss that rose but stayed below 0
        # says too little about a scale the log does not give
        signed = first.value < 0
        if end < p.ratio * first.value if not signed else end < -first.value:
            return []
        peak = max(run, key=lambda pt: pt.value)
        last = run[-1]
        how = f"{end / first.value:.1f}x" if not signed else (
            f"{fmt(end - first.value)} higher; a loss below 0 is judged by its rise, not by a ratio")
        msg = (f"its first value {fmt(first.value)} (step {first.step}), the median of its last {p.last} points "
               f"{fmt(end)} ({how}), after a peak of {fmt(peak.value)} at step {peak.step}: "
               f"training made the model worse and it never got back")
        f = Finding(message=msg, step=first.step, began_step=first.step, subject="loss",
                    evidence={"value": first.value, "step": first.step, "end": end, "rise": end - first.value,
                              "noise": noise, "peak": peak.value, "peak_step": peak.step,
                              "detected_step": last.step, "last_step": last.step})
        if not signed:
            f.evidence["ratio"] = end / first.value
        gain = improving(ctx, source, first.step, None, p.quality_gain)
        if gain is not None:
            meanwhile(f, gain, "the task metric got better, so this loss is no objective that failed")
        return [f]


def _current_run(points: list[Point], head: list[Point]) -> list[Point]:
    """The finite points of the run the series ends with: after the last step that went back (a restart),
    else the whole series, from its head when the recent window no longer holds its start."""
    start = 0
    for i in range(1, len(points)):
        if points[i].step < points[i - 1].step:
            start = i
    run = [pt for pt in points[start:] if pt.value == pt.value and abs(pt.value) != float("inf")]
    if start == 0 and head and run and head[0].step < run[0].step:
        run = [*head, *[pt for pt in run if pt.step > head[-1].step]]
    return run
