"""The row-at-a-time loss.plateau and loss.flat_from_start as they were before the array port, kept only
as the oracle of tests/rules/test_plateau_arrays.py.

Loss curves that stop or never start falling: loss.plateau and loss.flat_from_start.

Both judge against the measured noise of the series and know the schedule: a loss resting while
the LR warms up or anneals toward 0 is neither.
"""

from __future__ import annotations

import math

from trainwatch.model import Finding, Retraction
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.plateau import fell_below, fell_in_first_quarter  # one wording of a withdrawal
from trainwatch.rules.stats import Episodes, Segment, Segments, diff_sigma, fmt, median_se, nz, scaled_window
from trainwatch.store import Point, Series


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
        self._shown: dict[str, int] = {}  # source -> the level is the median of this many last points

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        src = series.source
        seg = self._segments.update(series, point)
        if not math.isfinite(point.value):
            return None
        n = seg.finite(series)
        if (n < self.p.min_history or self._late(ctx, src, point.step) or self._annealing(ctx, src)
                or _lr_rising(ctx, src)):
            self._reset(src)
            return None
        if n < self._next.get(src, 0):  # between judgements the last verdict stands
            return self._episodes.repeat(src, self._now(series, src, point.value), point.step)
        w = scaled_window(n, self.p.window_fraction, self.p.window, n)
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
        shown = len(vals) - len(vals) // 2
        if w > self.p.window_max:  # the level shown is the median of the logged points, not of bucket means
            pts = series.tail_values(w - w // 2)
            if pts:
                level, shown = median(pts), len(pts)
        self._level[src], self._shown[src] = level, shown
        if self._episodes.is_open(src):
            return self._episodes.repeat(src, level, point.step)
        since = self._flat_since.setdefault(src, (n, first_step))
        if n - since[0] < self.p.persist * w:
            return None
        return self._episodes.open(src, make(since[1], point.step, level, shown), level, point.step)

    def _now(self, series: Series, src: str, default: float) -> float:
        """The level as of this point: the median of as many last points as the last judgement showed."""
        n = self._shown.get(src, 0)
        pts = series.tail_values(n) if n else []
        return median(pts) if pts else self._level.get(src, default)

    def _window(self, series: Series, w: int) -> tuple[list[float], int]:
        """The last w points' values and the step of the first. Beyond `window_max` points the run's
        downsampled history stands in, one mean per bucket: the window keeps growing with the run (a
        slow fall shows only over a long stretch) while the points read stay bounded."""
        if w <= self.p.window_max:
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
        return recent < 0.8 * self.p.expected_max or recent < 0.8 * self.p.still_high * start

    def _late(self, ctx: RuleContext, src: str, step: int) -> bool:
        state = ctx.sources.get(src)
        total = state.total_steps if state else None
        return bool(total) and step > self.p.early_fraction * total  # type: ignore[operator]

    def _annealing(self, ctx: RuleContext, src: str) -> bool:
        """The LR has fallen to a small share of its peak: the schedule is ending and the loss may rest."""
        lr = ctx.series("lr", src)
        last = lr.last if lr is not None else None
        if lr is None or last is None or not math.isfinite(last.value) or not lr.maximum > 0:
            return False
        return last.value < self.p.anneal_below * lr.maximum

    def _judge(self, seg: Segment, vals: list[float], points: int, holding: bool):  # type: ignore[no-untyped-def]
        """(level, finding maker) when the window (`points` points, as `vals`: the points or the means
        of their buckets) is flat at a high level, else None. A plateau already told lasts while the
        fall stays below min_drop (the noise band is for calling it)."""
        if len(vals) < 2 * 4:
            return None
        half = len(vals) // 2
        older, newer = vals[:half], vals[half:]
        then, level = median(older), median(newer)
        if level <= self.p.expected_max or then <= 0:
            return None
        first = median([p.value for p in seg.head])
        if not first > 0 or (first - level) / first < self.p.fallen:
            return None  # never fell: loss.flat_from_start's case
        if level < self.p.still_high * first:
            return None  # it already fell most of the way: a slow late phase, not an early stop
        noise = nz(diff_sigma(vals))
        se = math.hypot(median_se(noise, len(older)), median_se(noise, len(newer)))
        drop = (then - level) / then
        margin = 0.0 if holding else self.p.noise_z * se / then
        if drop + margin >= self.p.min_drop:
            return None  # it may still be falling: the noise hides a fall of min_drop

        def make(began: int, step: int, shown: float, count: int) -> Finding:
            msg = (f"loss has stayed near {fmt(shown)} (median of the last {count} points) since about step "
                   f"{began}: its median fell only {drop:.1%} over the last {points} points (noise +-{fmt(noise)}), "
                   f"still {shown / first:.0%} of where it began ({fmt(first)}, the median of its first "
                   f"{len(seg.head)} points) and above the expected "
                   f"{self.p.expected_max:g}")
            return Finding(message=msg, step=step, began_step=began,
                           evidence={"value": shown, "step": began, "value_stat": f"median of the last {count} points",
                                     "baseline": then, "drop": drop, "noise": noise, "first": first,
                                     "window": points, "detected_step": step,
                                     "last_stat": "median of the window's newer half"})

        return level, make


FELL = "fell"  # flat_from_start's verdict on a loss that fell beyond its noise


class LossFlatFromStart(Rule):
    """The loss never decreased at all since the run began.

    The first and the last quarter of the run's points are compared by their medians; the curve is
    flat only when even the top of the noise band of that difference is below `min_drop`, so a noisy
    per-step loss that falls slowly is never called flat. Dated at the run's first step."""

    id = "loss.flat_from_start"
    watches = ("loss",)

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._segments = Segments(keep_head=self.p.quarter_max)
        self._first: dict[str, tuple[Segment, int, float, float]] = {}  # source -> (segment, h, median, noise)
        self._episodes = Episodes()
        self._next: dict[str, tuple[Segment, int]] = {}  # source -> (segment, points seen at the next judgement)
        self._level: dict[str, float] = {}
        self._flat_since: dict[str, tuple[Segment, int]] = {}  # source -> (segment, points seen when first flat)
        self._told: dict[str, Segment] = {}  # source -> the run segment whose flat curve was reported
        self._fell = ""  # what the last FELL judgement read, with its counts and step: a withdrawal quotes it

    def _judge(self, series: Series, need: int, step: int, holding: bool = False) -> Finding | bool | str | None:
        """A finding when flat, FELL when it fell beyond the noise, False when not flat otherwise, None
        when it cannot tell yet. A flat curve already told
        stays flat while its fall stays below min_drop (the noise band is for calling it, not for
        keeping it, or a noisy flat curve would flap). Each quarter holds at most
        `quarter_max` points, so the cost per sample does not grow with the run. A step that goes back
        starts a new run: its own start is the one compared."""
        self._fell = ""
        seg = self._segments.get(series.source)
        if seg is None:
            return None
        n = seg.finite(series)
        head = seg.head
        if n < need or not head or head[0].step > self.p.start_within:
            return None
        h = max(2, min(n // 4, self.p.quarter_max, len(head)))
        known = self._first.get(series.source)
        if known is not None and known[0] is seg and known[1] == h:
            first, head_noise = known[2], known[3]  # h stops growing at quarter_max: the start is then fixed
        else:
            start = [p.value for p in head[:h]]
            first, head_noise = median(start), nz(diff_sigma(start))
            self._first[series.source] = (seg, h, first, head_noise)
        if first <= 0:
            return None
        k = max(3, h // 16)
        start_k = median([p.value for p in head[:k]])
        if start_k * (1 - 2 * self.p.min_drop) > first + 3 * median_se(head_noise, k):
            self._fell = fell_in_first_quarter(step, k, start_k, h, first, 2 * self.p.min_drop)
            return FELL  # it fell fast within its first quarter, then rested: a plateau's case
        if not holding:  # a cheap look first: the last 9 points far below the start need no full quarter
            few = series.tail_values(9)
            if few and median(few) + 3 * median_se(head_noise, len(few)) < first * (1 - 2 * self.p.min_drop):
                self._fell = fell_below(step, len(few), median(few), h, first, 2 * self.p.min_drop)
                return FELL
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
        noise = max(head_noise, nz(diff_sigma(vals)))
        se = math.hypot(median_se(noise, h), median_se(noise, len(vals)))
        z_se = self.p.noise_z * se / first
        if drop - z_se >= self.p.min_drop:
            self._fell = fell_below(step, len(vals), last, h, first, self.p.min_drop)
            return FELL  # it fell by more than min_drop, beyond the noise
        if drop + (0.0 if holding else z_se) >= self.p.min_drop:
            return False  # it may have fallen: the noise could hide a fall of min_drop
        s0 = head[0].step
        msg = (f"loss has not fallen since its first logged step {s0}: the median of its first {h} points was "
               f"{fmt(first)}, that of the {len(vals)} up to step {step} {fmt(last)} ({n} points, change {-drop:+.1%}, "
               f"noise +-{fmt(noise)})")
        return Finding(message=msg, step=step, began_step=s0,
                       evidence={"value": first, "step": s0, "value_stat": f"median of the first {h} points",
                                 "first": first, "now": last, "drop": drop, "noise": noise, "points": n,
                                 "detected_step": step, "last_stat": "median"})

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | Retraction | None:
        src = series.source
        seg = self._segments.update(series, point)
        if not math.isfinite(point.value):
            return None
        nxt = self._next.get(src)
        n = seg.finite(series)
        if nxt is not None and nxt[0] is seg and n < nxt[1]:  # between judgements the last verdict stands
            return self._episodes.repeat(src, self._level.get(src, point.value), point.step)
        h = max(2, min(n // 4, self.p.quarter_max))
        self._next[src] = (seg, n + max(1, h // 8))
        if not self._episodes.is_open(src) and _lr_rising(ctx, src):
            self._flat_since.pop(src, None)
            return None  # a long LR warmup: the loss may rest until the LR is up
        state = ctx.sources.get(src)
        total = state.total_steps if state is not None else None
        if total and point.step < self.p.min_fraction * total and not self._episodes.is_open(src):
            return None  # too early in a run of known length: a slow fall has not shown yet
        f = self._judge(series, self.p.min_history, point.step, self._episodes.is_open(src))
        if not isinstance(f, Finding):
            self._episodes.close(src)
            self._flat_since.pop(src, None)
            if f is FELL and self._told.pop(src, None) is seg:
                return Retraction(f"the loss fell after all: {self._fell}")
            return None
        if self._episodes.is_open(src):
            return self._episodes.repeat(src, self._level[src], point.step)
        since = self._flat_since.get(src)
        if since is None or since[0] is not seg:
            since = self._flat_since[src] = (seg, n)
        if n - since[1] < self.p.persist * h:
            return None  # flat once may be a low draw of the noise: flat for a whole quarter more is not
        self._told[src] = seg
        return self._episodes.open(src, f, self._level[src], point.step)

    def on_end(self, ctx: RuleContext, source: str) -> list[Finding]:
        s = ctx.series("loss", source)
        if s is None or s.last is None or _lr_rising(ctx, source):
            return []  # no loss, or the run ended while its LR was still warming up
        f = self._judge(s, self.p.end_min_history, s.last.step)
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
