"""The row-at-a-time loss.diverging, kept as the oracle its array port is proven against.

loss.diverging: the robust level of the loss climbing far above its low, dated where the rise began."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.divergence import LossDiverging as ArrayLossDiverging
from trainwatch.rules.divergence import (
    _Low,
    band,
    blows_up,
    episode_finding,
    first_of_rise,
    measured_low,
    start_finding,
    uniform_loss,
)
from trainwatch.rules.stats import Episodes, Segment, Segments, cusum_onset, diff_sigma, last_finite, nz, scaled_window
from trainwatch.store import Point, Series


@dataclass
class _Trend:
    """One run's divergence state (a restart begins a new one)."""

    seg: Segment
    early: _Low | None = None  # lowest level while too few points were logged to trust the noise
    thick: list[tuple[int, _Low]] = field(default_factory=list)  # early levels over fast_window points or more
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
    # a judgement over the whole run once it has ended, the same whichever way its rows were judged
    lower_at_end = ArrayLossDiverging.lower_at_end
    withdrawn_at_end = ArrayLossDiverging.withdrawn_at_end
    _came_back = ArrayLossDiverging._came_back

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
        trusted = self.p.min_history
        w = n if n < trusted else scaled_window(n, self.p.window_fraction, trusted, self.p.window)
        vals = last_finite(series, w)
        if not vals:
            return None
        level = median(vals)
        fast_n = self.p.fast_window
        fast = median(vals[-fast_n:]) if len(vals) >= fast_n else math.nan
        if self._episodes.is_open(src):
            if self._holds(st, max(level, fast) if fast == fast else level):
                return self._episodes.repeat(src, point.value, point.step)
            self._episodes.close(src)
            st.held = 0
            st.ended = point.step
        u = uniform_loss(ctx.sources.get(src))
        head = seg.head
        if (n == trusted and u is not None and head and head[0].value > self.p.from_start * u
                and level > self.p.from_start * u):
            st.base = _Low(u, head[0].step, 0.0)
            st.hold_ratio = 1.0 + (self.p.from_start - 1.0) / 2.0
            f = start_finding(head[0].step, head[0].value, u, self.p.from_start, point.step, n, level)
            return self._episodes.open(src, f, point.value, point.step)
        if n < trusted:
            if st.early is None or level < st.early.value:
                st.early = _Low(level, point.step, nz(diff_sigma(vals)), len(vals))
            if len(vals) >= fast_n:
                st.thick.append((n, _Low(level, point.step, nz(diff_sigma(vals)), len(vals))))
            return self._fast(series, st, fast, level, point, n)
        noise = nz(diff_sigma(vals))
        st.noise = noise if st.noise != st.noise else st.noise + (noise - st.noise) * 2.0 / (len(vals) + 1)
        if st.best is None or level < st.best.value:
            st.best = _Low(level, point.step, max(noise, st.noise), len(vals))
            st.held = 0
            return None
        best = st.best
        floor = self._floor(st)
        if (best.value > 0 and level >= self.p.rise_ratio * best.value
                and level - best.value >= max(self.p.rise_noise * best.noise, floor)):
            st.held += 1
        else:
            st.held = 0
        if st.held >= max(2, int(len(vals) * self.p.persist)):
            return self._open(series, st, best, self.p.rise_ratio, level, point,
                              f"its median over the last {len(vals)} points",
                              best.value + self.p.rise_noise / 2.0 * best.noise)
        return self._fast(series, st, fast, level, point, n)

    def _floor(self, st: _Trend) -> float:
        """A rise smaller than this share of where the run began is not divergence, however tiny the
        noise: a loss memorised to 0.001 that wobbles to 0.01 has not diverged."""
        head = [p.value for p in st.seg.head]
        return self.p.min_rise * abs(median(head)) if head else 0.0

    def _fast(self, series: Series, st: _Trend, fast: float, level: float, point: Point, n: int) -> Finding | None:
        """A blow-up shows long before the rolling median moves: most of the last few points far above
        the low already say the run diverged."""
        first = measured_low(st.thick, n - self.p.fast_window) or st.early
        lows = [x for x in (first, st.best) if x is not None]
        if fast != fast or not lows:
            return None
        low = min(lows, key=lambda x: x.value)
        if low.value <= 0 or fast < self.p.fast_ratio * low.value:
            return None
        if fast - low.value < max(self.p.rise_noise * low.noise, self._floor(st)):
            return None
        if not blows_up(fast, low.value, [p.value for p in st.seg.head], self.p.fast_ratio, self.p.near_zero):
            return None
        if fast <= self._recent_peak(series, n):
            return None
        hold = 1.0 + (self.p.fast_ratio - 1.0) / 2.0
        return self._open(series, st, low, self.p.fast_ratio, fast, point,
                          f"the median of its last {self.p.fast_window} points", hold * low.value)

    def _recent_peak(self, series: Series, n: int) -> float:
        """The highest of the run's last `window` finite points before the fast median's (-inf: none)."""
        fast_n = self.p.fast_window
        vals = last_finite(series, min(n, self.p.window + fast_n))[:-fast_n][-self.p.window:]
        return max(vals) if vals else -math.inf

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
        f = episode_finding(began, low, point.step, what, level)
        return self._episodes.open(series.source, f, point.value, point.step)

    def _onset(self, series: Series, st: _Trend, low: _Low, ref: float) -> Point:
        """The first point of the excursion above `ref`: the change point of a clipped CUSUM over the
        points since half a window before the low (a rolling median lags the curve by about that much),
        or since the previous episode ended. Runs once per episode."""
        n = st.seg.finite(series)
        w = scaled_window(n, self.p.window_fraction, 1, self.p.window)
        pts = series.tail(min(n, self.p.onset_scan))
        i = 0
        for i, p in enumerate(pts):  # noqa: B007  (the oracle is kept as it was)
            if p.step >= low.step:
                break
        pts = pts[max(0, i - w // 2):]
        if st.ended is not None:
            pts = [p for p in pts if p.step > st.ended] or pts
        noise = low.noise if low.noise > 0 else 0.05 * abs(low.value)
        began = cusum_onset(pts, ref, max(3.0 * noise, ref - low.value)) if pts else None
        if began is not None:
            return first_of_rise(pts, began, low, band(low, self.p.rise_ratio, self.p.rise_noise, self._floor(st)))
        return pts[-1] if pts else series.last  # type: ignore[return-value]
