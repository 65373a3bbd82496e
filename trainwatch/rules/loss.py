"""Loss-shape rules: NaN diagnosis, spikes, divergence, plateaus, flat curves, overfitting, leaks, level.

Each trend rule uses medians over windows of logged points, needs a minimum history, and skips
NaN/Inf (which loss.nonfinite and grad.nonfinite judge instead).
"""

from __future__ import annotations

import math
from typing import Any

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.stats import before, finite_points, fmt, last_finite, mad_sigma
from trainwatch.store import Point, Series

BLOWUP_FIXES = (
    "Optimisation blow-up: lower the peak LR 2-5x and warm up over 5-10% of the steps",
    "Clip the global grad-norm at 1.0 (max_grad_norm: 1.0)",
    "With fp16, switch to bf16 or fix the dynamic loss scaler",
)
SAMPLE_FIXES = (
    "Bad sample or layer numerics: inspect the batch of the failing step (empty sequence, inf/NaN input, label out of range)",
    "Guard custom ops: epsilon in log/divide/sqrt, a stable softmax or log-softmax",
)


def _int(facts: dict[str, Any], *keys: str) -> int | None:
    for k in keys:
        v = facts.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return int(v)
    return None


class LossNonFinite(Rule):
    """Train or eval loss is NaN/Inf; the grad-norm just before says blow-up or bad sample."""

    id = "loss.nonfinite"
    watches = ("loss", "eval_loss")

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._first_bad: dict[str, int] = {}  # source -> step of its first non-finite loss

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        v = point.value
        if math.isfinite(v):
            return None
        word = "NaN" if v != v else "Inf"
        ev: dict[str, Any] = {"metric": series.name, "value": v, "step": point.step,
                              "nan_count": series.nan_count, "inf_count": series.inf_count}
        first_bad = self._first_bad.setdefault(series.source, point.step)
        if point.step < first_bad:  # a restart: a new first
            first_bad = self._first_bad[series.source] = point.step
        cause, fixes = self._diagnose(ctx, series.source, first_bad, ev)
        msg = f"{series.name} is {word} at step {point.step}"
        if cause:
            msg += f": {cause}"
        rng = self._samples(ctx, series.source, point.step)
        if rng is not None:
            ev["samples"] = list(rng)
            msg += f"; samples {rng[0]}-{rng[1]}"
        return Finding(message=msg, evidence=ev, extra_fixes=fixes)

    def _diagnose(self, ctx: RuleContext, source: str, step: int,
                  ev: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
        g = ctx.series("grad_norm", source)
        if g is None:
            ev["diagnosis"] = "unknown"
            return "", ()
        pts = [p for p in g.recent if p.step < step]  # the same step's grad-norm is a consequence
        look = pts[-int(self.p["lookback"]):]
        base = finite_points(pts[:-len(look)] if look else pts)[-int(self.p["baseline"]):]
        ev["grad_norm_before"] = [p.value for p in look]
        bad = [p for p in look if not math.isfinite(p.value)]
        if bad:
            ev["diagnosis"] = "blow-up"
            return (f"optimisation blow-up (grad_norm was {fmt(bad[0].value)} at step {bad[0].step})",
                    BLOWUP_FIXES)
        if not look:
            ev["diagnosis"] = "unknown"
            return "", ()
        ref = median([p.value for p in base]) if base else None
        peak = max(look, key=lambda p: p.value)
        ev["grad_norm_baseline"] = ref
        if ref is not None and ref > 0 and peak.value > float(self.p["spike_ratio"]) * ref:
            ev["diagnosis"] = "blow-up"
            return (f"optimisation blow-up (grad_norm spiked to {fmt(peak.value)} at step {peak.step}, "
                    f"{peak.value / ref:.1f}x its median {fmt(ref)})", BLOWUP_FIXES)
        if ref is None:
            ev["diagnosis"] = "unknown"
            return "", ()
        ev["diagnosis"] = "bad sample or numerics"
        return (f"grad_norm stayed flat ({fmt(peak.value)} vs median {fmt(ref)}): a bad sample or "
                "layer numerics", SAMPLE_FIXES)

    @staticmethod
    def _samples(ctx: RuleContext, source: str, step: int) -> tuple[int, int] | None:
        state = ctx.sources.get(source)
        facts = state.facts if state else {}
        micro = _int(facts, "batch_size", "micro_batch_size", "per_device_train_batch_size")
        accum = _int(facts, "grad_accum", "gradient_accumulation_steps")
        if micro is None or accum is None:
            return None
        world = _int(facts, "world_size") or 1
        per_step = micro * accum * world
        start = step * per_step
        return start, start + per_step - 1


class LossSpike(Rule):
    """Loss jumps well over its recent median, beyond the noise."""

    id = "loss.spike"
    watches = ("loss",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        v = point.value
        if not math.isfinite(v):
            return None
        prev = before(series, point, int(self.p["window"]))
        if len(prev) < int(self.p["min_history"]):
            return None
        med = median(prev)
        if med <= 0:
            return None
        noise = mad_sigma(prev, med)
        if v < float(self.p["ratio"]) * med or v - med < float(self.p["mad_k"]) * noise:
            return None
        return Finding(message=f"loss {fmt(v)} at step {point.step} is {v / med:.1f}x its recent median {fmt(med)}",
                       evidence={"value": v, "baseline": med, "ratio": v / med, "noise": noise,
                                 "step": point.step})


class LossDiverging(Rule):
    """The rolling median of the loss climbs well above its lowest value so far."""

    id = "loss.diverging"
    watches = ("loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._best: dict[str, tuple[float, int, float]] = {}  # median, its step, the noise around it
        self._last_step: dict[str, int] = {}

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        src = series.source
        if point.step < self._last_step.get(src, -1):
            self._best.pop(src, None)  # the run restarted: a new baseline
        self._last_step[src] = point.step
        if not math.isfinite(point.value):
            return None
        window = int(self.p["window"])
        vals = last_finite(series, window)
        cur = median(vals)
        best = self._best.get(src)
        if best is None or cur < best[0]:
            self._best[src] = (cur, point.step, mad_sigma(vals, cur))
            return None
        if len(vals) < int(self.p["min_history"]) or best[0] <= 0:
            return None
        # with fewer points than a window, only a blow-up far above the start counts
        need = float(self.p["rise_ratio"]) if len(vals) >= window else float(self.p["early_ratio"])
        ratio = cur / best[0]
        if ratio < need or cur - best[0] < 3 * best[2]:  # the rise must clear the noise of the good times
            return None
        return Finding(message=f"loss median {fmt(cur)} over the last {len(vals)} points is {ratio:.1f}x its low "
                               f"{fmt(best[0])} (step {best[1]})",
                       evidence={"value": cur, "baseline": best[0], "ratio": ratio, "baseline_step": best[1],
                                 "step": point.step})


class LossPlateau(Rule):
    """The loss fell, then stopped falling early, still well above the expected level."""

    id = "loss.plateau"
    watches = ("loss",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        if not math.isfinite(point.value):
            return None
        w = int(self.p["window"])
        pts = finite_points(series.recent)
        if len(pts) < max(int(self.p["min_history"]), 2 * w):
            return None
        state = ctx.sources.get(series.source)
        total = state.total_steps if state else None
        if total and point.step > float(self.p["early_fraction"]) * total:
            return None
        last = median([p.value for p in pts[-w:]])
        prev = median([p.value for p in pts[-2 * w:-w]])
        first = median([p.value for p in pts[:5]])
        if last <= float(self.p["expected_max"]) or first <= 0 or prev <= 0:
            return None
        if (first - last) / first < float(self.p["fallen"]):
            return None  # never fell: loss.flat_from_start's case
        drop = (prev - last) / prev
        if drop >= float(self.p["min_drop"]):
            return None
        return Finding(message=f"loss median {fmt(last)} over the last {w} points fell only {drop:.1%} "
                               f"from {fmt(prev)}, above the expected {self.p['expected_max']:g}",
                       evidence={"value": last, "baseline": prev, "drop": drop, "first": first,
                                 "step": point.step})


class LossFlatFromStart(Rule):
    """The loss never decreased at all since the run began."""

    id = "loss.flat_from_start"
    watches = ("loss",)

    def _judge(self, series: Series, need: int) -> Finding | None:
        pts = finite_points(series.recent)
        if len(pts) < need or pts[0].step > int(self.p["start_within"]):
            return None
        h = max(2, len(pts) // 4)
        first = median([p.value for p in pts[:h]])
        last = median([p.value for p in pts[-h:]])
        if first <= 0:
            return None
        drop = (first - last) / first
        if drop >= float(self.p["min_drop"]) or last > first * 1.5:
            return None  # it fell, or it rose (divergence, not a flat curve)
        return Finding(message=f"loss {fmt(first)} at the start, {fmt(last)} at step {pts[-1].step}: "
                               f"fell {max(drop, 0):.1%} in {len(pts)} points",
                       evidence={"first": first, "value": last, "drop": drop, "points": len(pts),
                                 "first_step": pts[0].step, "step": pts[-1].step})

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        if not math.isfinite(point.value):
            return None
        return self._judge(series, int(self.p["min_history"]))

    def on_end(self, ctx: RuleContext, source: str) -> list[Finding]:
        s = ctx.series("loss", source)
        if s is None:
            return []
        f = self._judge(s, int(self.p["end_min_history"]))
        if f is None:
            return []
        f.subject = "loss"
        f.step = s.last.step if s.last else None
        return [f]


class LossOverfit(Rule):
    """Eval loss rises for several evaluations in a row while train loss keeps falling."""

    id = "loss.overfit"
    watches = ("eval_loss",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        evals = finite_points(series.recent)
        n = int(self.p["rising_evals"])
        if len(evals) < n + 2 or not math.isfinite(point.value):
            return None
        tail = evals[-(n + 1):]
        if any(b.value <= a.value for a, b in zip(tail, tail[1:])):
            return None
        best = min(evals[:-n], key=lambda p: p.value)
        rise = (point.value - best.value) / best.value if best.value > 0 else 0.0
        if rise < float(self.p["min_rise"]):
            return None
        train = ctx.series("loss", series.source)
        if train is None:
            return None
        w = int(self.p["train_window"])
        at_best = [p.value for p in finite_points(train.recent) if p.step <= best.step][-w:]
        now = [p.value for p in finite_points(train.recent) if p.step <= point.step][-w:]
        if not at_best or not now or median(now) >= median(at_best):
            return None
        return Finding(message=f"eval_loss rose {n} evaluations in a row to {fmt(point.value)} "
                               f"(+{rise:.1%} over its best {fmt(best.value)} at step {best.step}) "
                               f"while train loss fell {fmt(median(at_best))} -> {fmt(median(now))}",
                       evidence={"value": point.value, "baseline": best.value, "best_step": best.step,
                                 "rise": rise, "train_then": median(at_best), "train_now": median(now),
                                 "step": point.step})


class LossLeak(Rule):
    """Eval loss far below the train loss: the eval set may leak into training."""

    id = "loss.leak"
    watches = ("eval_loss",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        v = point.value
        train = ctx.series("loss", series.source)
        if not math.isfinite(v) or train is None:
            return None
        w = int(self.p["train_window"])
        recent = [p.value for p in finite_points(train.recent) if p.step <= point.step][-w:]
        if len(recent) < min(w, 3):
            return None
        t = median(recent)
        if t <= 0 or v >= float(self.p["ratio"]) * t:
            return None
        earlier = [p.value for p in finite_points(train.recent) if p.step <= point.step][-2 * w:-w]
        if len(earlier) < len(recent) or median(earlier) > t * (1 + float(self.p["settled"])):
            return None  # train loss still falling fast: its logged average lags the eval
        return Finding(message=f"eval_loss {fmt(v)} is {v / t:.0%} of the train loss {fmt(t)}",
                       evidence={"value": v, "baseline": t, "ratio": v / t, "step": point.step})


class LossLevel(Rule):
    """At the end of an SFT run, the final loss far outside the usual 0.5-2.0."""

    id = "loss.level"

    def on_end(self, ctx: RuleContext, source: str) -> list[Finding]:
        s = ctx.series("loss", source)
        if s is None:
            return []
        vals = last_finite(s, int(self.p["tail"]))
        if len(vals) < int(self.p["tail"]):
            return []
        final = median(vals)
        low, high, margin = float(self.p["low"]), float(self.p["high"]), float(self.p["margin"])
        if low / margin <= final <= high * margin:
            return []
        word = "below" if final < low else "above"
        return [Finding(message=f"final loss {fmt(final)} is far {word} the usual {low:g}-{high:g}",
                        subject="loss", step=s.last.step if s.last else None,
                        evidence={"value": final, "low": low, "high": high})]
