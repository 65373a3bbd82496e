"""Loss-shape rules: NaN diagnosis, spikes, divergence, plateaus, flat curves, overfitting, leaks, level.

Each trend rule uses medians over windows of logged points, needs a minimum history, and skips
NaN/Inf (which loss.nonfinite and grad.nonfinite judge instead).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.stats import (Episodes, Segment, Segments, before, curve_sigma, cusum_onset, diff_sigma, fmt,
                                    head_values, last_finite, mad_sigma, median_se, scaled_window)
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


def _beyond_log_noise(v: float, med: float, prev: list[float], k: float) -> bool:
    """Whether `v` stands out from `prev` on a log scale. A loss trained down near 0 scatters by factors,
    not by amounts (0.003 on one batch, 0.4 on the next): there a 50x batch is its usual spread, while
    on a loss of 2 with 10% noise the same test asks for no more than the ratio test already does."""
    logs = [math.log(x) for x in prev if x > 0]
    if len(logs) < len(prev) or v <= 0:
        return True  # zero or negative losses have no log scale: the linear tests decide alone
    sigma = mad_sigma(logs)
    return math.log(v / med) >= k * sigma


class LossSpike(Rule):
    """Loss jumps well over its recent median, beyond the noise.

    The noise is the larger of the recent window's MAD and the point-to-point noise over a longer
    stretch: twenty points of a noisy per-step loss can happen to sit close together, and a normal
    high point after them is not a spike. Only the points since the run last (re)started count."""

    id = "loss.spike"
    watches = ("loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._segments = Segments(keep_head=5)
        self._episodes = Episodes()
        self._since: dict[str, int] = {}  # source -> samples since its last spike

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        src = series.source
        seg = self._segments.update(series, point)
        v = point.value
        if not math.isfinite(v):
            return None
        found = self._judge(series, point, seg.finite(series) - 1)
        if found is not None and not self._material(seg, found):
            found = None
        if found is None:
            self._since[src] = self._since.get(src, 0) + 1
            if self._since[src] > self._keep():
                self._episodes.close(src)
            return None
        self._since[src] = 0
        if self._episodes.is_open(src):  # a blow-up that keeps jumping: one spike, the first one told
            return self._episodes.repeat(src, v, point.step)
        return self._episodes.open(src, found, v, point.step)

    def _material(self, seg: Segment, found: Finding) -> bool:
        """A jump smaller than `min_jump` of where the run began is not a spike, whatever its ratio: a
        loss memorised down to 0.002 that shows 0.05 on one batch has not spiked."""
        head = [p.value for p in seg.head]
        start = abs(median(head)) if head else 0.0
        return found.evidence["value"] - found.evidence["baseline"] >= float(self.p["min_jump"]) * start

    def _keep(self) -> int:
        """Samples a spike alert stays up without a new spike (keep_firing_for, when it counts steps)."""
        return self.spec.keep_firing_for.steps

    def _judge(self, series: Series, point: Point, earlier: int) -> Finding | None:
        v = point.value
        prev = before(series, point, min(int(self.p["window"]), earlier))
        if len(prev) < int(self.p["min_history"]):
            return self._early(prev, v, point.step)
        med = median(prev)
        if med <= 0 or v < float(self.p["ratio"]) * med:
            return None  # the cheap test first: the noise estimate only when the ratio already holds
        noise = mad_sigma(prev, med)
        longer = before(series, point, min(int(self.p["noise_window"]), earlier))
        if len(longer) > len(prev):
            noise = max(noise, diff_sigma(longer))
        if v - med < float(self.p["mad_k"]) * noise:
            return None
        if not _beyond_log_noise(v, med, longer if len(longer) > len(prev) else prev, float(self.p["log_k"])):
            return None
        return Finding(message=f"loss {fmt(v)} at step {point.step} is {v / med:.1f}x its recent median {fmt(med)} "
                               f"(noise +-{fmt(noise)})",
                       step=point.step,
                       evidence={"value": v, "step": point.step, "baseline": med, "ratio": v / med,
                                 "noise": noise})

    def _early(self, prev: list[float], v: float, step: int) -> Finding | None:
        """Too few points for a noise estimate: only a jump far above every earlier point counts."""
        if len(prev) < int(self.p["early_history"]):
            return None
        top = max(prev)
        if min(prev) <= 0 or v < float(self.p["early_ratio"]) * top:
            return None  # (a loss at or below 0, as RL losses are, has no scale for a ratio)
        med = median(prev)
        return Finding(message=f"loss {fmt(v)} at step {step} is {v / top:.1f}x the highest of the {len(prev)} "
                               f"points before it ({fmt(top)})",
                       step=step,
                       evidence={"value": v, "step": step, "baseline": med, "ratio": v / med, "max_before": top})


@dataclass
class _Low:
    """The lowest robust level so far: its value, the step it was seen at and the noise then."""

    value: float
    step: int
    noise: float


@dataclass
class _Trend:
    """One run's divergence state (a restart begins a new one)."""

    seg: Segment
    early: _Low | None = None  # lowest level while too few points were logged to trust the noise
    best: _Low | None = None  # lowest level since the noise could be measured
    noise: float = math.nan  # point noise, smoothed over the windows seen
    held: int = 0  # consecutive samples the rise held
    base: _Low | None = None  # the low the open episode is measured against
    hold_ratio: float = 0.0  # the open episode lasts while the level stays this many times the base
    ended: int | None = None  # step where the last episode ended: a new one is dated after it


class LossDiverging(Rule):
    """The robust level of the loss (a rolling median) climbs far above its lowest value so far.

    The window grows with the run, the rise must clear both a ratio and the noise measured around
    the low, and it must persist; a blow-up (the last few points many times the low) counts at once.
    The finding is dated where the rise began: the first point of the excursion above the noise band
    of the low, found once the divergence is certain."""

    id = "loss.diverging"
    watches = ("loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._segments = Segments(keep_head=8)
        self._state: dict[str, _Trend] = {}
        self._episodes = Episodes()

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        src = series.source
        seg = self._segments.update(series, point)
        st = self._state.get(src)
        if st is None or st.seg is not seg:
            st = self._state[src] = _Trend(seg)  # the run (re)started: a new baseline, from its own points only
            self._episodes.close(src)
        if not math.isfinite(point.value):
            return None
        n = seg.finite(series)
        trusted = int(self.p["min_history"])
        w = n if n < trusted else scaled_window(n, float(self.p["window_fraction"]), trusted, int(self.p["window"]))
        vals = last_finite(series, w)
        if not vals:
            return None
        level = median(vals)
        fast_n = int(self.p["fast_window"])
        fast = median(vals[-fast_n:]) if len(vals) >= fast_n else math.nan
        if self._episodes.is_open(src):
            if self._holds(st, max(level, fast) if fast == fast else level):
                return self._episodes.repeat(src, level, point.step)
            self._episodes.close(src)
            st.held = 0
            st.ended = point.step
        if n < trusted:
            if st.early is None or level < st.early.value:
                st.early = _Low(level, point.step, _nz(diff_sigma(vals)))
            return self._fast(series, st, fast, level, point)
        noise = _nz(diff_sigma(vals))
        st.noise = noise if st.noise != st.noise else st.noise + (noise - st.noise) * 2.0 / (len(vals) + 1)
        if st.best is None or level < st.best.value:
            st.best = _Low(level, point.step, max(noise, st.noise))
            st.held = 0
            return None
        best = st.best
        floor = self._floor(st)
        if (best.value > 0 and level >= float(self.p["rise_ratio"]) * best.value
                and level - best.value >= max(float(self.p["rise_noise"]) * best.noise, floor)):
            st.held += 1
        else:
            st.held = 0
        if st.held >= max(2, int(len(vals) * float(self.p["persist"]))):
            return self._open(series, st, best, float(self.p["rise_ratio"]), level, point,
                              f"its median over the last {len(vals)} points",
                              best.value + float(self.p["rise_noise"]) / 2.0 * best.noise)
        return self._fast(series, st, fast, level, point)

    def _floor(self, st: _Trend) -> float:
        """A rise smaller than this share of where the run began is not divergence, however tiny the
        noise: a loss memorised to 0.001 that wobbles to 0.01 has not diverged."""
        head = [p.value for p in st.seg.head]
        return float(self.p["min_rise"]) * abs(median(head)) if head else 0.0

    def _fast(self, series: Series, st: _Trend, fast: float, level: float, point: Point) -> Finding | None:
        """A blow-up shows long before the rolling median moves: most of the last few points far above
        the low already say the run diverged."""
        lows = [x for x in (st.early, st.best) if x is not None]
        if fast != fast or not lows:
            return None
        low = min(lows, key=lambda x: x.value)
        if low.value <= 0 or fast < float(self.p["fast_ratio"]) * low.value:
            return None
        if fast - low.value < max(float(self.p["rise_noise"]) * low.noise, self._floor(st)):
            return None
        hold = 1.0 + (float(self.p["fast_ratio"]) - 1.0) / 2.0
        return self._open(series, st, low, float(self.p["fast_ratio"]), fast, point,
                          f"the median of its last {self.p['fast_window']} points", hold * low.value)

    def _holds(self, st: _Trend, level: float) -> bool:
        """An open episode ends only when the level falls back well below the rise that opened it."""
        base = st.base
        return base is not None and level >= st.hold_ratio * base.value

    def _open(self, series: Series, st: _Trend, low: _Low, ratio_needed: float, level: float, point: Point,
              what: str, ref: float) -> Finding:
        """Opens an episode; `ref` is the top of the band the rise is dated out of: half the smallest
        rise the rule calls (the classic CUSUM reference) for a steady rise, half-way to the blow-up
        ratio for a blow-up (whose first few points carry too little noise estimate to date it by)."""
        st.base = low
        st.hold_ratio = 1.0 + (ratio_needed - 1.0) / 2.0
        began = self._onset(series, st, low, ref)
        ratio = level / low.value
        msg = (f"loss began rising at step {began.step} ({fmt(began.value)}), leaving the noise band of its low "
               f"{fmt(low.value)} (step {low.step}, noise +-{fmt(low.noise)}); by step {point.step} {what} "
               f"was {fmt(level)}, {ratio:.1f}x the low")
        f = Finding(message=msg, step=point.step, began_step=began.step,
                    evidence={"value": began.value, "step": began.step, "baseline": low.value,
                              "baseline_step": low.step, "noise": low.noise, "ratio": ratio,
                              "detected_value": level, "detected_step": point.step})
        return self._episodes.open(series.source, f, level, point.step)

    def _onset(self, series: Series, st: _Trend, low: _Low, ref: float) -> Point:
        """The first point of the excursion above `ref`: the change point of a clipped CUSUM over the
        points since half a window before the low (a rolling median lags the curve by about that much),
        or since the previous episode ended. Runs once per episode."""
        n = st.seg.finite(series)
        w = scaled_window(n, float(self.p["window_fraction"]), 1, int(self.p["window"]))
        pts = series.tail(min(n, int(self.p["onset_scan"])))
        i = 0
        for i, p in enumerate(pts):
            if p.step >= low.step:
                break
        pts = pts[max(0, i - w // 2):]
        if st.ended is not None:
            pts = [p for p in pts if p.step > st.ended] or pts
        noise = low.noise if low.noise > 0 else 0.05 * abs(low.value)
        began = cusum_onset(pts, ref, max(3.0 * noise, ref - low.value)) if pts else None
        return began if began is not None else pts[-1] if pts else series.last  # type: ignore[return-value]


def _nz(v: float) -> float:
    """NaN (too few points for a noise estimate) as 0."""
    return v if v == v else 0.0


class LossPlateau(Rule):
    """The loss fell, then stopped falling early, still high and well above the expected level.

    Judged on a window that grows with the run, split in two halves whose medians are compared: a
    plateau is a fall that stays below `min_drop` even at the top of its noise band, held for half
    a window more. Not judged while the LR anneals (a loss that flattens as the LR goes to 0 at the
    end of its schedule is normal), nor late in a run whose total is known."""

    id = "loss.plateau"
    watches = ("loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._segments = Segments(keep_head=5)
        self._episodes = Episodes()
        self._next: dict[str, int] = {}  # source -> points seen at its next judgement
        self._flat_since: dict[str, tuple[int, int]] = {}  # source -> (points seen, window start step)
        self._level: dict[str, float] = {}  # source -> the level at the last judgement

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        src = series.source
        seg = self._segments.update(series, point)
        if not math.isfinite(point.value):
            return None
        n = seg.finite(series)
        if n < int(self.p["min_history"]) or self._late(ctx, src, point.step) or self._annealing(ctx, src):
            self._reset(src)
            return None
        if n < self._next.get(src, 0):  # between judgements the last verdict stands
            return self._episodes.repeat(src, self._level.get(src, point.value), point.step)
        w = scaled_window(n, float(self.p["window_fraction"]), int(self.p["window"]), n)
        self._next[src] = n + max(1, w // 10)
        if not self._episodes.is_open(src) and self._clearly_low(seg, series):
            self._reset(src, keep_next=True)
            return None
        vals, first_step = self._window(series, w)
        found = self._judge(seg, vals, w, self._episodes.is_open(src))
        if found is None:
            self._reset(src, keep_next=True)
            return None
        level, make = found
        self._level[src] = level
        if self._episodes.is_open(src):
            return self._episodes.repeat(src, level, point.step)
        since = self._flat_since.setdefault(src, (n, first_step))
        if n - since[0] < float(self.p["persist"]) * w:
            return None
        return self._episodes.open(src, make(since[1], point.step), level, point.step)

    def _window(self, series: Series, w: int) -> tuple[list[float], int]:
        """The last w points' values and the step of the first. Beyond `window_max` points the run's
        downsampled history stands in, one mean per bucket: the window keeps growing with the run (a
        slow fall shows only over a long stretch) while the points read stay bounded."""
        if w <= int(self.p["window_max"]):
            pts = series.tail(w)
            return [p.value for p in pts], (pts[0].step if pts else 0)
        out: list[float] = []
        count, first = 0, 0
        for b in reversed(series.whole_run()):
            if b.finite:
                out.append(b.mean)
                count += b.finite
                first = b.first_step
                if count >= w:
                    break
        out.reverse()
        return out, first

    def _reset(self, src: str, keep_next: bool = False) -> None:
        self._episodes.close(src)
        self._flat_since.pop(src, None)
        if not keep_next:
            self._next.pop(src, None)

    def _clearly_low(self, seg: Segment, series: Series) -> bool:
        """A cheap look at the last few points before reading a whole window: a loss well below the
        expected level, or well below the share of its start a plateau needs, is no plateau."""
        recent = median(series.tail_values(9))
        head = [p.value for p in seg.head]
        start = median(head) if head else math.nan
        return recent < 0.8 * float(self.p["expected_max"]) or recent < 0.8 * float(self.p["still_high"]) * start

    def _late(self, ctx: RuleContext, src: str, step: int) -> bool:
        state = ctx.sources.get(src)
        total = state.total_steps if state else None
        return bool(total) and step > float(self.p["early_fraction"]) * total  # type: ignore[operator]

    def _annealing(self, ctx: RuleContext, src: str) -> bool:
        """The LR has fallen to a small share of its peak: the schedule is ending and the loss may rest."""
        lr = ctx.series("lr", src)
        last = lr.last if lr is not None else None
        if lr is None or last is None or not math.isfinite(last.value) or not lr.maximum > 0:
            return False
        return last.value < float(self.p["anneal_below"]) * lr.maximum

    def _judge(self, seg: Segment, vals: list[float], points: int, holding: bool):  # type: ignore[no-untyped-def]
        """(level, finding maker) when the window (`points` points, as `vals`: the points or the means
        of their buckets) is flat at a high level, else None. A plateau already told lasts while the
        fall stays below min_drop (the noise band is for calling it)."""
        if len(vals) < 2 * 4:
            return None
        half = len(vals) // 2
        older, newer = vals[:half], vals[half:]
        then, level = median(older), median(newer)
        if level <= float(self.p["expected_max"]) or then <= 0:
            return None
        first = median([p.value for p in seg.head])
        if not first > 0 or (first - level) / first < float(self.p["fallen"]):
            return None  # never fell: loss.flat_from_start's case
        if level < float(self.p["still_high"]) * first:
            return None  # it already fell most of the way: a slow late phase, not an early stop
        noise = _nz(diff_sigma(vals))
        se = math.hypot(median_se(noise, len(older)), median_se(noise, len(newer)))
        drop = (then - level) / then
        margin = 0.0 if holding else float(self.p["noise_z"]) * se / then
        if drop + margin >= float(self.p["min_drop"]):
            return None  # it may still be falling: the noise hides a fall of min_drop

        def make(began: int, step: int) -> Finding:
            msg = (f"loss has stayed near {fmt(level)} since about step {began}: its median fell only {drop:.1%} "
                   f"over the last {points} points (noise +-{fmt(noise)}), still {level / first:.0%} of where it "
                   f"began ({fmt(first)}) and above the expected {self.p['expected_max']:g}")
            return Finding(message=msg, step=step, began_step=began,
                           evidence={"value": level, "step": began, "baseline": then, "drop": drop,
                                     "noise": noise, "first": first, "window": points, "detected_step": step})

        return level, make


class LossFlatFromStart(Rule):
    """The loss never decreased at all since the run began.

    The first and the last quarter of the run's points are compared by their medians; the curve is
    flat only when even the top of the noise band of that difference is below `min_drop`, so a noisy
    per-step loss that falls slowly is never called flat. Dated at the run's first step."""

    id = "loss.flat_from_start"
    watches = ("loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._segments = Segments(keep_head=int(self.p["quarter_max"]))
        self._first: dict[str, tuple[Segment, int, float, float]] = {}  # source -> (segment, h, median, noise)
        self._episodes = Episodes()
        self._next: dict[str, tuple[Segment, int]] = {}  # source -> (segment, points seen at the next judgement)
        self._level: dict[str, float] = {}
        self._flat_since: dict[str, tuple[Segment, int]] = {}  # source -> (segment, points seen when first flat)

    def _judge(self, series: Series, need: int, step: int, holding: bool = False) -> Finding | None | bool:
        """A finding when flat, False when not, None when it cannot tell yet. A flat curve already told
        stays flat while its fall stays below min_drop (the noise band is for calling it, not for
        keeping it, or a noisy flat curve would flap). Each quarter holds at most
        `quarter_max` points, so the cost per sample does not grow with the run. A step that goes back
        starts a new run: its own start is the one compared."""
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
            first, head_noise = known[2], known[3]  # h stops growing at quarter_max: the start is then fixed
        else:
            start = [p.value for p in head[:h]]
            first, head_noise = median(start), _nz(diff_sigma(start))
            self._first[series.source] = (seg, h, first, head_noise)
        if first <= 0:
            return None
        if not holding:  # a cheap look first: the last 9 points far below the start need no full quarter
            few = series.tail_values(9)
            if few and median(few) + 3 * median_se(head_noise, len(few)) < first * (1 - 2 * float(self.p["min_drop"])):
                return False
        vals = series.tail_values(h)
        if not vals:
            return None
        last = median(vals)
        self._level[series.source] = last
        drop = (first - last) / first
        # it rose above where it began: divergence, not a flat curve (even when the blow-up came so
        # early that the first quarter already holds it)
        if last > 1.5 * min(first, head[0].value):
            return False
        noise = max(head_noise, _nz(diff_sigma(vals)))
        se = math.hypot(median_se(noise, h), median_se(noise, len(vals)))
        margin = 0.0 if holding else float(self.p["noise_z"]) * se / first
        if drop + margin >= float(self.p["min_drop"]):
            return False  # it fell, or the noise could hide a fall of min_drop
        s0 = head[0].step
        msg = (f"loss has not fallen since its first logged step {s0}: {fmt(first)} over the first {h} points, "
               f"{fmt(last)} over the {len(vals)} to step {step} ({n} points, change {-drop:+.1%}, "
               f"noise +-{fmt(noise)})")
        return Finding(message=msg, step=step, began_step=s0,
                       evidence={"value": first, "step": s0, "first": first, "now": last, "drop": drop,
                                 "noise": noise, "points": n, "detected_step": step})

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        src = series.source
        seg = self._segments.update(series, point)
        if not math.isfinite(point.value):
            return None
        nxt = self._next.get(src)
        n = seg.finite(series)
        if nxt is not None and nxt[0] is seg and n < nxt[1]:  # between judgements the last verdict stands
            return self._episodes.repeat(src, self._level.get(src, point.value), point.step)
        h = max(2, min(n // 4, int(self.p["quarter_max"])))
        self._next[src] = (seg, n + max(1, h // 8))
        if not self._episodes.is_open(src) and _lr_rising(ctx, src):
            self._flat_since.pop(src, None)
            return None  # a long LR warmup: the loss may rest until the LR is up
        f = self._judge(series, int(self.p["min_history"]), point.step, self._episodes.is_open(src))
        if not isinstance(f, Finding):
            self._episodes.close(src)
            self._flat_since.pop(src, None)
            return None
        if self._episodes.is_open(src):
            return self._episodes.repeat(src, self._level[src], point.step)
        since = self._flat_since.get(src)
        if since is None or since[0] is not seg:
            since = self._flat_since[src] = (seg, n)
        if n - since[1] < float(self.p["persist"]) * h:
            return None  # flat once may be a low draw of the noise: flat for a whole quarter more is not
        return self._episodes.open(src, f, self._level[src], point.step)

    def on_end(self, ctx: RuleContext, source: str) -> list[Finding]:
        s = ctx.series("loss", source)
        if s is None or s.last is None or _lr_rising(ctx, source):
            return []  # no loss, or the run ended while its LR was still warming up
        f = self._judge(s, int(self.p["end_min_history"]), s.last.step)
        if not isinstance(f, Finding):
            return []
        f.subject = "loss"
        f.evidence["last_value"] = self._level.get(source, f.evidence["now"])
        f.evidence["last_step"] = s.last.step
        return [f]


def _lr_rising(ctx: RuleContext, source: str) -> bool:
    """The LR is still climbing (a warmup): each of its last few logged values above the one before."""
    lr = ctx.series("lr", source)
    vals = lr.tail_values(4) if lr is not None else []
    return len(vals) >= 2 and all(b > a for a, b in zip(vals, vals[1:]))


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


@dataclass
class _Evals:
    """One run's evaluations as the overfit rule needs them (bounded)."""

    seg: Segment
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=16))  # for the noise
    count: int = 0
    best: Point | None = None
    around: list[float] = field(default_factory=list)  # the evals just before and after the best
    later: deque[Point] = field(default_factory=lambda: deque(maxlen=64))  # evals since the best
    train_then: float = math.nan  # train loss median when the best eval was logged


class LossOverfit(Rule):
    """An eval minimum followed by later evals above it by more than their noise while the train loss
    keeps falling.

    Evals are sparse and noisy, so no run of rising evals is needed: at least `later_evals` evals after
    the minimum must sit above it by more than the noise (measured on the evals' own second
    differences) and `min_rise`, and the median of the latest ones must stand `level_k` noise widths
    above the level around the minimum (the minimum of noisy evals is itself a low draw). Dated at the
    eval minimum; the later evals are listed."""

    id = "loss.overfit"
    watches = ("eval_loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._segments = Segments()
        self._evals: dict[str, _Evals] = {}
        self._episodes = Episodes()

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        src = series.source
        seg = self._segments.update(series, point)
        st = self._evals.get(src)
        if st is None or st.seg is not seg:
            st = self._evals[src] = _Evals(seg)
            self._episodes.close(src)
        v = point.value
        if not math.isfinite(v):
            return None
        train = ctx.series("loss", src)
        w = int(self.p["train_window"])
        st.count += 1
        st.recent.append(v)
        if st.best is None or v < st.best.value:
            st.around = [st.recent[-2]] if len(st.recent) > 1 else []
            st.best = point
            st.later.clear()
            st.train_then = self._train_at(train, point.step, w)
            self._episodes.close(src)
            return None
        if not st.later:
            st.around.append(v)
        st.later.append(point)
        found = self._judge(st, train, point, w, self._episodes.is_open(src))
        if found is None:
            self._episodes.close(src)
            return None
        if self._episodes.is_open(src):
            return self._episodes.repeat(src, v, point.step, later_evals=found.evidence["later_evals"],
                                         train_now=found.evidence["train_now"])
        return self._episodes.open(src, found, v, point.step)

    @staticmethod
    def _train_at(train: Series | None, step: int, w: int) -> float:
        """Median of the last w finite train-loss points logged at or before `step` (bounded scan)."""
        if train is None:
            return math.nan
        vals = [p.value for p in train.tail(w * 4) if p.step <= step][-w:]
        return median(vals) if vals else math.nan

    def _judge(self, st: _Evals, train: Series | None, point: Point, w: int, holding: bool) -> Finding | None:
        best = st.best
        need = int(self.p["later_evals"])
        if best is None or len(st.later) < need or best.value <= 0:
            return None
        floor = float(self.p["min_rise"]) * best.value
        if st.count < int(self.p["min_evals"]):
            # too few evals to measure their noise: only a clean climb counts, each eval above the one
            # before and the last one `early_rise` above the minimum
            noise = math.nan
            band = floor
            vals = [best.value] + [p.value for p in st.later]
            if any(b <= a for a, b in zip(vals, vals[1:])) or vals[-1] < best.value * (1 + float(self.p["early_rise"])):
                return None
            above = [p for p in st.later if p.value > best.value + band]
            if len(above) < need:
                return None
        else:
            noise = _nz(curve_sigma(list(st.recent)))
            band = max(float(self.p["noise_k"]) * noise, floor)
            above = [p for p in st.later if p.value > best.value + band]
            if len(above) < need:
                return None
            latest = median([p.value for p in list(st.later)[-5:]])
            if holding:  # told already: it lasts until the latest evals come back into the minimum's band
                if latest <= best.value + band:
                    return None
            elif latest <= median([best.value] + st.around) + max(float(self.p["level_k"]) * noise, floor):
                return None
        now = self._train_at(train, point.step, w)
        if not (now < st.train_then):
            return None  # the train loss rose too: the run got worse, not overfit
        shown = ", ".join(f"{p.step}: {fmt(p.value)}" for p in above[:6]) + (", ..." if len(above) > 6 else "")
        why = f"its noise (+-{fmt(band)})" if noise == noise else f"{float(self.p['min_rise']):.0%}, each above the last"
        msg = (f"eval_loss was lowest at step {best.step} ({fmt(best.value)}); {len(above)} of the {len(st.later)} "
               f"evaluations since sat above it by more than {why} (step: value {shown}), "
               f"while the train loss fell {fmt(st.train_then)} -> {fmt(now)}")
        return Finding(message=msg, step=point.step, began_step=best.step,
                       evidence={"value": best.value, "step": best.step, "noise": noise, "band": band,
                                 "later_evals": [[p.step, p.value] for p in above[-8:]],
                                 "train_then": st.train_then, "train_now": now, "detected_step": point.step})


class LossLeak(Rule):
    """Eval loss far below the train loss: the eval set may leak into training.

    Only a finite, settled train loss that has not blown up counts: an eval far below a train loss that
    diverged says the training broke, not that the eval set leaked."""

    id = "loss.leak"
    watches = ("eval_loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._episodes = Episodes()

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        """The first eval far below the train loss is told; later ones while it lasts only update
        last_value/last_step."""
        found = self._judge(ctx, series, point)
        if found is None:
            self._episodes.close(series.source)
            return None
        if self._episodes.is_open(series.source):
            return self._episodes.repeat(series.source, point.value, point.step)
        return self._episodes.open(series.source, found, point.value, point.step)

    def _judge(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
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
        return Finding(message=f"eval_loss {fmt(v)} at step {point.step} is {v / t:.0%} of the train loss {fmt(t)}",
                       step=point.step, evidence={"value": v, "step": point.step, "baseline": t, "ratio": v / t})


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
        # a loss far too high and one far too low have opposite causes: only the matching fixes are given
        fixes = tuple(self.p["fixes_low" if final < low else "fixes_high"] or ())
        return [Finding(message=f"final loss {fmt(final)} is far {word} the usual {low:g}-{high:g}",
                        subject="loss", step=s.last.step if s.last else None,
                        evidence={"value": final, "low": low, "high": high}, extra_fixes=fixes)]
