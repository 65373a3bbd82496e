"""Loss-shape rules: NaN diagnosis, spikes, divergence, plateaus, flat curves, overfitting, leaks, level.

Each trend rule uses medians over windows of logged points, needs a minimum history, and skips
NaN/Inf (which loss.nonfinite and grad.nonfinite judge instead).
"""

from __future__ import annotations

import math
from collections import deque
from itertools import islice
from typing import Any

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.stats import Segment, Segments, before, fmt, head_values, last_finite, mad_sigma
from trainwatch.store import SCAN_MIN, Point, Series

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
        # source -> (first bad step, cause, fixes, evidence): the grad-norm before a step never changes
        self._diagnosed: dict[str, tuple[int, str, tuple[str, ...], dict[str, Any]]] = {}

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
        known = self._diagnosed.get(series.source)
        if known is not None and known[0] == first_bad:
            cause, fixes = known[1], known[2]
            ev.update(known[3])
        else:
            diag: dict[str, Any] = {}
            cause, fixes = self._diagnose(ctx, series.source, first_bad, diag)
            ev.update(diag)
            if diag.get("diagnosis") != "unknown":
                self._diagnosed[series.source] = (first_bad, cause, fixes, diag)
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
        look, base = _grad_before(g, step, int(self.p["lookback"]), int(self.p["baseline"]))
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


def _grad_before(g: Series, step: int, look_n: int, base_n: int) -> tuple[list[Point], list[Point]]:
    """The last `look_n` grad-norm points logged before `step` (NaN/Inf included), and the `base_n` finite
    ones before those. The same step's grad-norm is a consequence, so it is left out. Bounded scan."""
    look: list[Point] = []
    base: list[Point] = []
    for p in islice(reversed(g.recent), max(SCAN_MIN, 8 * (look_n + base_n))):
        if p.step >= step:
            continue
        if len(look) < look_n:
            look.append(p)
        elif math.isfinite(p.value):
            base.append(p)
            if len(base) >= base_n:
                break
    look.reverse()
    base.reverse()
    return look, base


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
            return self._early(prev, v, point.step)
        med = median(prev)
        if med <= 0 or v < float(self.p["ratio"]) * med:
            return None  # the cheap test first: the noise estimate only when the ratio already holds
        noise = mad_sigma(prev, med)
        if v - med < float(self.p["mad_k"]) * noise:
            return None
        return Finding(message=f"loss {fmt(v)} at step {point.step} is {v / med:.1f}x its recent median {fmt(med)}",
                       evidence={"value": v, "baseline": med, "ratio": v / med, "noise": noise,
                                 "step": point.step})

    def _early(self, prev: list[float], v: float, step: int) -> Finding | None:
        """Too few points for a noise estimate: only a jump far above every earlier point counts."""
        if len(prev) < int(self.p["early_history"]):
            return None
        top = max(prev)
        if top <= 0 or v < float(self.p["early_ratio"]) * top:
            return None
        med = median(prev)
        return Finding(message=f"loss {fmt(v)} at step {step} is {v / top:.1f}x the highest of the {len(prev)} "
                               f"points before it ({fmt(top)})",
                       evidence={"value": v, "baseline": med, "ratio": v / med, "max_before": top, "step": step})


class LossDiverging(Rule):
    """The rolling median of the loss climbs well above its lowest value so far."""

    id = "loss.diverging"
    watches = ("loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._best: dict[str, tuple[float, int, float]] = {}  # median, its step, the noise around it
        self._segments = Segments()

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        src = series.source
        seg = self._segments.update(series, point)
        if seg.finite(series) <= 1:
            self._best.pop(src, None)  # the run (re)started: a new baseline, from its own points only
        if not math.isfinite(point.value):
            return None
        window = int(self.p["window"])
        vals = last_finite(series, min(window, seg.finite(series)))
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
            return self._fast(vals, best, point.step)
        return Finding(message=f"loss median {fmt(cur)} over the last {len(vals)} points is {ratio:.1f}x its low "
                               f"{fmt(best[0])} (step {best[1]})",
                       evidence={"value": cur, "baseline": best[0], "ratio": ratio, "baseline_step": best[1],
                                 "step": point.step})


    def _fast(self, vals: list[float], best: tuple[float, int, float], step: int) -> Finding | None:
        """A blow-up shows long before the rolling median moves: most of the last few points far above
        the low already say the run diverged."""
        n = int(self.p["fast_window"])
        if len(vals) < n:
            return None
        cur = median(vals[-n:])
        ratio = cur / best[0]
        if ratio < float(self.p["fast_ratio"]) or cur - best[0] < 3 * best[2]:
            return None
        return Finding(message=f"loss median {fmt(cur)} over the last {n} points is {ratio:.1f}x its low "
                               f"{fmt(best[0])} (step {best[1]}): blowing up",
                       evidence={"value": cur, "baseline": best[0], "ratio": ratio, "baseline_step": best[1],
                                 "step": step})


class LossPlateau(Rule):
    """The loss fell, then stopped falling early, still well above the expected level."""

    id = "loss.plateau"
    watches = ("loss",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        if not math.isfinite(point.value):
            return None
        w = int(self.p["window"])
        if series.finite_count < max(int(self.p["min_history"]), 2 * w):
            return None
        state = ctx.sources.get(series.source)
        total = state.total_steps if state else None
        if total and point.step > float(self.p["early_fraction"]) * total:
            return None
        vals = series.tail_values(2 * w)
        if len(vals) < 2 * w:
            return None  # a long NaN stretch: no clean window to compare
        last = median(vals[w:])
        if last <= float(self.p["expected_max"]):
            return None
        prev = median(vals[:w])
        first = median(head_values(series, 5))
        if first <= 0 or prev <= 0:
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

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._segments = Segments(keep_head=int(self.p["quarter_max"]))
        self._first: dict[str, tuple[Segment, int, float]] = {}  # source -> (segment, h, first median)

    def _judge(self, series: Series, need: int) -> Finding | None:
        """The first and the last quarter of the run's points compared by their medians; each quarter
        holds at most `quarter_max` points, so the cost per sample does not grow with the run. A step
        that goes back starts a new run: its own start is the one compared."""
        seg = self._segments.get(series.source)
        if seg is None:
            return None
        n = seg.finite(series)
        head = seg.head
        if n < need or not head or head[0].step > int(self.p["start_within"]):
            return None
        h = max(2, min(n // 4, int(self.p["quarter_max"]), len(head)))
        known = self._first.get(series.source)
        if known is not None and known[0] is seg and known[1] == h:
            first = known[2]  # h stops growing at quarter_max: the start's median is then fixed
        else:
            first = median([p.value for p in head[:h]])
            self._first[series.source] = (seg, h, first)
        vals = series.tail_values(h)
        if not vals or first <= 0:
            return None
        last = median(vals)
        drop = (first - last) / first
        # it fell; or it rose above where it began (divergence, not a flat curve), even when the
        # blow-up came so early that the first quarter already holds it
        if drop >= float(self.p["min_drop"]) or last > 1.5 * min(first, head[0].value):
            return None
        pts = series.tail(1)
        return Finding(message=f"loss {fmt(first)} at the start, {fmt(last)} at step {pts[-1].step}: "
                               f"fell {max(drop, 0):.1%} in {n} points",
                       evidence={"first": first, "value": last, "drop": drop, "points": n,
                                 "first_step": head[0].step, "step": pts[-1].step})

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        self._segments.update(series, point)
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


def _finite_upto(series: Series, step: int, n: int, *, scan: int | None = None) -> list[float] | None:
    """The last n finite values logged at or before `step`, oldest first; None when a NaN/Inf sits
    among them (a train loss that is not finite says nothing about the eval). `scan` bounds the look back."""
    out: list[float] = []
    it = reversed(series.recent)
    for p in (islice(it, scan) if scan is not None else it):
        if p.step > step:
            continue
        if not math.isfinite(p.value):
            return None
        out.append(p.value)
        if len(out) >= n:
            break
    out.reverse()
    return out


class LossOverfit(Rule):
    """Eval loss rises for several evaluations in a row while train loss keeps falling."""

    id = "loss.overfit"
    watches = ("eval_loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        # source -> [finite evals so far, the last rising_evals + 1 of them, best of the ones before those]
        self._evals: dict[str, list[Any]] = {}

    def _remember(self, source: str, point: Point, n: int) -> tuple[int, deque[Point], Point | None]:
        st = self._evals.get(source)
        if st is None:
            st = self._evals[source] = [0, deque(maxlen=n + 1), None]
        last: deque[Point] = st[1]
        if len(last) == n + 1:
            old = last[0]  # leaves the window: it joins the older evals
            if st[2] is None or old.value < st[2].value:
                st[2] = old
        last.append(point)
        st[0] += 1
        return st[0], last, st[2]

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        n = int(self.p["rising_evals"])
        if not math.isfinite(point.value):
            return None
        count, tail, older = self._remember(series.source, point, n)
        if count < n + 2:
            return None
        if any(b.value <= a.value for a, b in zip(tail, list(tail)[1:])):
            return None
        # the best eval before the last n: the older ones, or the one just before the rising run
        best = older if older is not None and older.value <= tail[0].value else tail[0]
        rise = (point.value - best.value) / best.value if best.value > 0 else 0.0
        if rise < float(self.p["min_rise"]):
            return None
        train = ctx.series("loss", series.source)
        if train is None:
            return None
        w = int(self.p["train_window"])
        # rare path (the evals rose n times in a row): an unbounded look back to the best eval is fine here
        at_best = [p.value for p in train.recent if p.step <= best.step and math.isfinite(p.value)][-w:]
        now = [p.value for p in train.tail(w * 4) if p.step <= point.step][-w:]
        if not at_best or not now or median(now) >= median(at_best):
            return None
        return Finding(message=f"eval_loss rose {n} evaluations in a row to {fmt(point.value)} "
                               f"(+{rise:.1%} over its best {fmt(best.value)} at step {best.step}) "
                               f"while train loss fell {fmt(median(at_best))} -> {fmt(median(now))}",
                       evidence={"value": point.value, "baseline": best.value, "best_step": best.step,
                                 "rise": rise, "train_then": median(at_best), "train_now": median(now),
                                 "step": point.step})


class LossLeak(Rule):
    """Eval loss far below the train loss: the eval set may leak into training.

    Only a finite, settled train loss that has not blown up counts: an eval far below a train loss that
    diverged says the training broke, not that the eval set leaked."""

    id = "loss.leak"
    watches = ("eval_loss",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        v = point.value
        train = ctx.series("loss", series.source)
        if not math.isfinite(v) or train is None:
            return None
        w = int(self.p["train_window"])
        vals = _finite_upto(train, point.step, 2 * w, scan=max(SCAN_MIN, 8 * w))
        if vals is None:
            return None
        recent = vals[-w:]
        if len(recent) < min(w, 3):
            return None
        t = median(recent)
        if t <= 0 or v >= float(self.p["ratio"]) * t:
            return None
        earlier = vals[:-w]
        if len(earlier) < len(recent) or median(earlier) > t * (1 + float(self.p["settled"])):
            return None  # train loss still falling fast: its logged average lags the eval
        start = min(head_values(train, 5), default=math.nan)
        if not start > 0 or t > float(self.p["diverged"]) * start:
            return None  # the train loss blew up above where it began: divergence, not a leak
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
