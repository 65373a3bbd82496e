"""loss.diverging: the robust level of the loss climbing far above its low, dated where the rise began.

Written over arrays: the per-row statistics (the rolling median over a window that grows with the run,
the fast median of the last few points, the point noise) are computed for a whole batch at once, then a
small loop over plain floats carries the lows, the smoothed noise, the persistence counter and the open
episode from row to row. That state is sequential by nature (each low depends on the episodes before
it), but it is a handful of numbers per row; no window is built or sorted inside the loop. Where the
rise began (the CUSUM onset) is found once per episode, when it opens.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from trainwatch.adversarial import adversarial
from trainwatch.model import Alert, Finding, Severity
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import RuleContext, median
from trainwatch.rules.quality_series import Gain, improving
from trainwatch.rules.registry import register
from trainwatch.rules.rolling import (
    RowTail,
    restarts,
    scan_reach,
    smoothed,
    tail_sizes,
    trailing_diff_sigma,
    trailing_median,
)
from trainwatch.rules.stats import cusum_onset, diff_sigma, fmt, nz, scaled_window
from trainwatch.rulespec import RuleSpec
from trainwatch.store import RECENT_POINTS, SCAN_MIN, Point

HEAD = 8  # first finite points of a run whose median sets the smallest rise that counts


@dataclass
class _Low:
    """The lowest robust level so far: its value, the step it was seen at and the noise then."""

    value: float
    step: int
    noise: float
    points: int = 0  # how many points the median `value` was taken over (0: not known)


@dataclass
class _Trend:
    """One source's divergence state, carried from batch to batch (a restart begins a new run)."""

    last_step: int | None = None  # the step of the latest row, finite or not: a lower one is a restart
    finite_before: int = 0  # the series' finite points before the current run began
    head: list[float] = field(default_factory=list)  # the run's first finite values (HEAD of them)
    first_step: int | None = None  # the step of the run's first finite value
    early: _Low | None = None  # lowest level while too few points were logged to trust the noise
    thick: list[tuple[int, _Low]] = field(default_factory=list)  # (count, early level over fast_window+ points)
    best: _Low | None = None  # lowest level since the noise could be measured
    noise: float = math.nan  # point noise, smoothed over the windows seen
    held: int = 0  # consecutive rows the rise held
    episode: Finding | None = None  # the finding of the open episode
    base: _Low | None = None  # the low the open episode is measured against
    hold_ratio: float = 0.0  # the open episode lasts while the level stays this many times the base
    ended: int | None = None  # step where the last episode ended: a new one is dated after it
    rows: RowTail = field(default_factory=RowTail)


@dataclass
class _Verdicts:
    """What the last batch of one source decided, for `finding` and `last_value` to read back."""

    start: int  # the window index of the first new row
    episode: list[Finding | None]  # per new row, the open episode's finding where the condition held
    opened: set[int]  # new rows where that episode opened
    last: np.ndarray  # per new row, the value an alert shows as its latest


@dataclass(frozen=True)
class LossDivergingParams:
    """Parameters of loss.diverging; their meaning and defaults are in presets/base.yaml."""

    window: int
    window_fraction: float
    min_history: int
    rise_ratio: float
    rise_noise: float
    min_rise: float
    persist: float
    fast_window: int
    fast_ratio: float
    onset_scan: int
    near_zero: float
    from_start: float
    quality_gain: float


@register("loss.diverging")
class LossDiverging(ArrayRule):
    """The robust level of the loss (a rolling median) climbs far above its lowest value so far.

    The window grows with the run, the rise must clear both a ratio and the noise measured around
    the low, and it must persist; a blow-up (the last few points many times the low) counts at once.
    The finding is dated where the rise began: the first point of the excursion above the noise band
    of the low, found once the divergence is certain."""

    id = "loss.diverging"
    params = LossDivergingParams
    p: LossDivergingParams
    watches = ("loss",)
    history = 0  # the rule carries the rows it needs itself (RowTail): the onset looks further back

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._state: dict[str, _Trend] = {}
        self._verdicts: dict[str, _Verdicts] = {}
        self._uniform: float | None = None  # ln(vocab) of the source being judged, when its config says
        self._gan: dict[str, bool] = {}  # sources found to log a discriminator's loss
        self._gains: dict[str, tuple[Finding, Gain | None]] = {}  # per source: the open episode's verdict

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        st = self._state.get(w.source)
        if st is None:
            st = self._state[w.source] = _Trend()
        series = ctx.series(w.name, w.source)
        new_step, new_value = w.step[w.start:], w.new
        m = len(new_value)
        steps, values, held = st.rows.extend(series, new_step, new_value)
        finite = np.isfinite(values)
        # the series' finite count after each new row (the store has every new row already)
        total = series.finite_count if series is not None else int(finite.sum())
        fin_new = finite[held:]
        count = total - (int(fin_new.sum()) - np.cumsum(fin_new))
        level, fast, noise, size = self._features(steps, values, finite, held, count, st)
        cond = np.zeros(m, dtype=bool)
        verdicts = _Verdicts(w.start, [None] * m, set(), np.full(m, np.nan))
        self._uniform = uniform_loss(ctx.sources.get(w.source))
        quiet = self._quiet(st, new_step, fin_new, count, level, fast, noise, size)
        if quiet < m:
            self._run(w.source, st, steps, values, held, quiet, new_step.tolist(), fin_new.tolist(),
                      count.tolist(), level.tolist(), fast.tolist(), noise.tolist(), size.tolist(), cond, verdicts)
        elif st.episode is None:
            st.base = None  # what the row loop leaves when it has no row to look at
        self._verdicts[w.source] = verdicts
        return cond

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        v = self._verdicts[w.source]
        i = row - v.start
        f = v.episode[i]
        assert f is not None  # the condition holds only while an episode is open
        told = _told(f, float(v.last[i]), int(w.step[row]), f.step if i in v.opened else None)
        if self._adversarial(ctx, w.source):
            told.severity = Severity.WARNING
            told.message = (f"{told.message} -- this loss is a GAN generator's (a discriminator's loss is logged "
                            f"beside it): it rises as the discriminator gets ahead, which is the adversarial "
                            f"balance tipping, not a numeric blow-up")[:600]
            told.evidence["adversarial"] = True
        gain = self._meanwhile(ctx, w.source, f, int(w.line[row]))
        if gain is not None:
            told.severity = Severity.INFO
            told.message = (f"{told.message} -- meanwhile {gain.said()}: the task metric got better while the loss "
                            f"rose, so this loss is no objective that failed (an RL value or policy loss grows "
                            f"with the returns, a loss whose terms change rises as they do)")[:600]
            told.evidence["improving"] = gain.name
            told.evidence["improving_from"], told.evidence["improving_to"] = gain.first, gain.now
        return told

    def _meanwhile(self, ctx: RuleContext, source: str, episode: Finding, line: int) -> Gain | None:
        """The task metric (a reward, an eval accuracy) that improved since the episode's rise began, as read
        when it opened; judged once per episode so that its alert keeps one severity while it lasts."""
        got = self._gains.get(source)
        if got is None or got[0] is not episode:
            since = episode.began_step if episode.began_step is not None else (episode.step or 0)
            got = self._gains[source] = (episode, improving(ctx, source, since, line, self.p.quality_gain))
        return got[1]

    def _adversarial(self, ctx: RuleContext, source: str) -> bool:
        """Whether the source logs a discriminator's loss: its `loss` is then a GAN generator's, whose rise is
        the discriminator winning (worth a warning), not the numeric divergence a critical is kept for."""
        known = self._gan.get(source)
        if known is None:
            known = adversarial(s.name for s in ctx.store if s.source == source)
            if known:
                self._gan[source] = True  # a discriminator seen stays seen; until then, look again
        return known

    def last_value(self, w: Window, row: int) -> float | None:
        v = self._verdicts[w.source]
        return float(v.last[row - v.start])

    def lower_at_end(self, ctx: RuleContext, source: str, alerts: Iterable[Alert]) -> None:
        """A rise the loss came back from, held for a whole window, that came back no lower than the low it
        rose from: no divergence to the end, but no recovery either. The run spent the rise and every step
        since without getting past where it was when the rise began (a from-scratch run that keeps
        blowing up and climbing back). Lowered to a warning that says so, instead of withdrawn: the run
        is unstable, not healthy."""
        for a, (low, noise, level, rise, n) in self._came_back(ctx, source, alerts):
            if rise < self.p.window or level < low - self.p.rise_noise * noise:
                continue  # a burst of a few points, or a loss that went on to new lows: withdrawn
            a.severity = a.finding.severity = Severity.WARNING
            a.finding.evidence["recovered_to"] = level
            a.finding.evidence["no_progress_since"] = a.finding.evidence.get("baseline_step")
            note = (f"; it held for {rise} points, then came back only to its level before the rise: the median "
                    f"of its last {n} points was {fmt(level)}, no lower than that low beyond its noise: "
                    f"unstable, with no progress since step {a.finding.evidence.get('baseline_step')}")
            a.finding.message = f"{a.finding.message}{note}"[:600]

    def withdrawn_at_end(self, ctx: RuleContext, source: str, alerts: Iterable[Alert]) -> list[tuple[str, str]]:
        """A rise the loss came back from is a spike, not a divergence: once the run has ended, an alert
        whose loss then fell back inside the noise band of its low (the median of the points logged
        after the rise last held) is withdrawn, saying why. A noisy per-batch loss (batch size 1, values
        spread over an order of magnitude) or a loss whose terms change between stages rises for a
        while and comes back; a diverged run does not."""
        out: list[tuple[str, str]] = []
        for a, (low, noise, level, _, n) in self._came_back(ctx, source, alerts):
            top = max(low + self.p.rise_noise * noise, self.p.rise_ratio * low)
            # told while it held; the run's end shows it was no divergence: withdrawn, with why
            a.finding.evidence["recovered_to"] = level
            why = (f"the loss came back: the median of its last {n} points was {fmt(level)}, "
                   f"inside the low's band (up to {fmt(top)}), a rise that recovered")
            out.append((a.finding.subject or "loss", why))
        return out

    def _came_back(self, ctx: RuleContext, source: str, alerts: Iterable[Alert]
                   ) -> list[tuple[Alert, tuple[float, float, float, int, int]]]:
        """The source's standing critical alerts whose loss fell back inside the noise band of the low
        (the median of the points logged after the rise last held), each with (low, noise, that
        median, points from the rise's start to its last, points in that median)."""
        p = self.p
        out: list[tuple[Alert, tuple[float, float, float, int, int]]] = []
        for a in alerts:
            ev = a.finding.evidence
            low, noise = ev.get("baseline"), ev.get("noise")
            if (a.source != source or a.severity is not Severity.CRITICAL or a.retracted or a.last_step is None
                    or not isinstance(low, (int, float)) or not isinstance(noise, (int, float)) or low <= 0):
                continue
            series = ctx.series(a.finding.subject or "loss", source)
            if series is None:
                continue
            points = series.last_points(RECENT_POINTS)
            after = [pt.value for pt in points if pt.step > a.last_step and math.isfinite(pt.value)]
            if len(after) < max(p.min_history, 2):
                continue
            tail = after[-max(p.window, p.min_history):]
            level = median(tail)
            measured = noise > 0
            if not measured:  # a low taken before its noise could be measured: measured now
                before = _before_rise(points, a.finding.began_step, p.window)
                noise = nz(diff_sigma(before if len(before) >= 3 else tail))
            top = max(low + p.rise_noise * noise, p.rise_ratio * low)
            # with a noise measured only now, the loss must also be back below where a blow-up is called
            if level <= top and (measured or level < p.fast_ratio * low):
                began = a.finding.began_step if a.finding.began_step is not None else a.first_step
                rise = sum(1 for pt in points if began is not None and began <= pt.step <= a.last_step)
                out.append((a, (float(low), float(noise), level, rise, len(tail))))
        return out

    # -- the per-row statistics, for a batch at once ------------------------------------------------

    def _features(self, steps: np.ndarray, values: np.ndarray, finite: np.ndarray, held: int, count: np.ndarray,
                  st: _Trend) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per new row: the rolling median, the fast median (NaN with too few points), the point noise
        (0 with too few) and how many points the window held. The runs (and so the window sizes) are
        found by replaying the restarts over the steps; the window is what `Series.tail` gave."""
        p = self.p
        trusted, frac, cap = p.min_history, p.window_fraction, p.window
        fast_n = p.fast_window
        m = len(steps) - held
        # the finite count of the current run at each new row: restarts (a step going back) move its base
        restart = np.diff(restarts(steps[held:], st.last_step), prepend=0) > 0
        if m and st.last_step is None:
            restart[0] = True
        fin_new = finite[held:]
        if restart.any():
            before_row = count - fin_new  # the series' finite count before each row
            base = np.maximum.accumulate(np.where(restart, np.arange(m), -1))
            run_base = np.where(base < 0, st.finite_before, before_row[np.maximum(base, 0)])
            n = count - run_base
        else:  # the run goes on through the batch
            n = count - st.finite_before
        wsz = np.where(n < trusted, n, np.minimum(n, np.maximum(trusted, np.minimum(cap, (n * frac).astype(np.int64)))))
        wsz = np.maximum(wsz, 0)
        # the window held at most what tail() found among the rows the store still held
        need = min(RECENT_POINTS, max(SCAN_MIN, 8 * max(cap, trusted)))
        lo = max(0, held - need)
        fin = finite[lo:]
        at = np.arange(held - lo, len(fin))
        size = tail_sizes(fin, at, wsz, lo)
        size[~fin_new] = 0
        if m and fin.all() and size.min() == size.max():  # a healthy stretch: one window, every point finite
            return self._steady_features(values[lo:], held - lo, int(size[0])) + (size,)
        fv = values[lo:][fin]
        fpos = np.cumsum(fin) - 1  # index into fv of each row (the last finite one at or before it)
        idx = fpos[at]
        ns = np.zeros(len(fv), dtype=np.int64)
        ok = fin_new & (size > 0)
        ns[idx[ok]] = size[ok]
        level = trailing_median(fv, ns)[idx] if len(fv) else np.full(m, np.nan)
        fns = np.where(ns >= fast_n, fast_n, 0)
        fast = trailing_median(fv, fns)[idx] if len(fv) else np.full(m, np.nan)
        noise = trailing_diff_sigma(fv, ns)[idx] if len(fv) else np.full(m, np.nan)
        noise = np.where(np.isnan(noise), 0.0, noise)
        level[~ok] = np.nan
        fast[~ok] = np.nan
        return level, fast, noise, size

    def _steady_features(self, fv: np.ndarray, k: int, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`_features`' level, fast median and noise when every point from the look-back on is finite
        and every new row (from `k` in `fv`) has the same window `w`: one rolling pass each over all the
        points, no window sizes to group by (a median is the same whichever row its pass began at)."""
        level = trailing_median(fv, w)[k:]
        fast = trailing_median(fv, self.p.fast_window)[k:] if w >= self.p.fast_window else np.full(len(fv) - k, np.nan)
        noise = trailing_diff_sigma(fv, w)[k:]
        return level, fast, np.where(np.isnan(noise), 0.0, noise)

    def _quiet(self, st: _Trend, new_step: np.ndarray, fin_new: np.ndarray, count: np.ndarray, level: np.ndarray,
               fast: np.ndarray, noise: np.ndarray, size: np.ndarray) -> int:
        """How many of the new rows, from the first, can change nothing but the low, the smoothed noise
        and the persistence counter (reset), decided over arrays; their effect is put into `st` and
        `_run` goes on from the first row after them. A row qualifies when no episode is open, the run's
        head is full, its trusted phase has begun and no restart came before it, and it either is no
        point, sets a new low, or is below both the rise and the blow-up thresholds (the noise terms of
        those tests only ever make them harder to pass, so they need not be known). A healthy run is
        all such rows."""
        m = len(new_step)
        if not m or st.episode is not None or len(st.head) < HEAD or st.last_step is None:
            return 0
        p = self.p
        stop = m
        back = np.flatnonzero(np.diff(new_step, prepend=st.last_step) < 0)
        if len(back):
            stop = int(back[0])
        used = fin_new[:stop] & (size[:stop] > 0)
        judged_at = p.min_history + (1 if self._start_armed(st) else 0)  # that row judges the start (`_run`)
        early = np.flatnonzero(used & (count[:stop] - st.finite_before < judged_at))
        if len(early):
            stop = int(early[0])
            used = used[:stop]
        if not stop:
            return 0
        inf = math.inf
        lv = np.where(used, level[:stop], inf)
        before = np.minimum.accumulate(np.concatenate(([st.best.value if st.best is not None else inf], lv)))[:-1]
        low = np.minimum(st.early.value if st.early is not None else inf, before)
        fv = fast[:stop]
        with np.errstate(invalid="ignore", over="ignore"):
            lower = lv < before
            rising = (before > 0) & (lv >= p.rise_ratio * before)
            calm = np.isnan(fv) | (low <= 0) | (fv < p.fast_ratio * low)
        loud = np.flatnonzero(used & ~lower & (rising | ~calm))
        j = int(loud[0]) if len(loud) else stop
        if not j:
            return 0
        ema, best = st.noise, st.best
        rows = np.flatnonzero(used[:j])
        lows = np.flatnonzero(lower[rows]).tolist()
        at_row = self._steady_noise(ema, noise[rows], size[rows] + 1) if len(rows) else None
        if at_row is not None:
            nv, first = noise[rows], int(ema != ema)
            for b in lows:
                i = int(rows[b])
                best = _Low(float(lv[i]), int(new_step[i]), max(float(nv[b]), float(at_row[b + 1 - first])),
                            int(size[i]))
            ema = float(at_row[-1])
        else:
            nvs, kl = noise[rows].tolist(), (size[rows] + 1).tolist()
            at = 0
            for b in [*lows, len(rows) - 1]:  # each new low, then the last row
                for v, k1 in zip(nvs[at:b + 1], kl[at:b + 1]):
                    ema = v if ema != ema else ema + (v - ema) * 2.0 / k1
                at = max(at, b + 1)
                if b >= 0 and lower[rows[b]]:
                    i = int(rows[b])
                    best = _Low(float(lv[i]), int(new_step[i]), max(nvs[b], ema), int(size[i]))
        st.noise, st.best = ema, best
        if len(rows):
            st.held = 0
        st.last_step = int(new_step[j - 1])
        return j

    @staticmethod
    def _steady_noise(ema: float, nv: np.ndarray, ks: np.ndarray) -> np.ndarray | None:
        """The smoothed noise as it stands first (`ema`, or the first row's noise when `ema` is NaN: that
        row sets it) and after each later row, as `_run` smooths it float for float, when every value of
        it is a number; None when a noise or the smoothing is not (a noise near the largest float
        overflows `(v - ema) * 2.0` to inf, then NaN, which `_run` restarts from the next row)."""
        if not bool(np.isfinite(nv).all()):
            return None
        first = 0
        if ema != ema:
            ema, first = float(nv[0]), 1
        path = np.concatenate(([ema], smoothed(ema, nv[first:], ks[first:])))
        return path if bool(np.isfinite(path).all()) else None

    # -- the sequential state, row by row over plain numbers -----------------------------------------

    def _run(self, source: str, st: _Trend, steps: np.ndarray, values: np.ndarray, held: int, start: int,
             new_step: list[int],
             fin_new: list[bool], count: list[int], level: list[float], fast: list[float], noise: list[float],
             size: list[int], cond: np.ndarray, out: _Verdicts) -> None:
        """The state machine over the new rows. The state lives in local variables while it runs (this is
        the one loop per row the rule has) and goes back into `st` around an opening and at the end. Rows
        before `start` were settled by `_quiet`."""
        p = self.p
        trusted = p.min_history
        rise_ratio, rise_noise, persist = p.rise_ratio, p.rise_noise, p.persist
        fast_ratio = p.fast_ratio
        fast_what = f"the median of its last {p.fast_window} points"
        inf = math.inf
        values_new = values[held:].tolist()
        early, best = st.early, st.best
        early_v = early.value if early is not None else inf
        best_v = best.value if best is not None else inf
        ema, nheld, episode, ended = st.noise, st.held, st.episode, st.ended
        base_v = st.base.value if st.base is not None else math.nan
        hold_ratio, head, fb, last = st.hold_ratio, st.head, st.finite_before, st.last_step
        for i in range(start, len(new_step)):
            step = new_step[i]
            finite = fin_new[i]
            if last is None or step < last:  # the run (re)started: a new baseline, from its own points only
                st = self._state[source] = _Trend(finite_before=count[i] - int(finite), rows=st.rows)
                early = best = episode = ended = None
                early_v = best_v = inf
                ema, nheld, base_v, hold_ratio, head, fb = math.nan, 0, math.nan, 0.0, st.head, st.finite_before
            last = step
            if not finite:
                continue
            if len(head) < HEAD:
                if not head:
                    st.first_step = step
                head.append(values_new[i])
            k = size[i]
            if k <= 0:
                continue
            lv, fv = level[i], fast[i]
            if episode is not None:
                if (max(lv, fv) if fv == fv else lv) >= hold_ratio * base_v:
                    cond[i] = True
                    out.episode[i] = episode
                    out.last[i] = values_new[i]  # the logged value: a report prints it next to its step
                    continue
                episode = None
                nheld = 0
                ended = step
            n = count[i] - fb
            if n == trusted and episode is None and self._start_armed(st) and lv > self._uniform * self.p.from_start:  # type: ignore[operator]
                st.early, st.best, st.noise, st.held, st.ended = early, best, ema, nheld, ended
                self._from_start(st, step, n, lv, out, i, values_new[i])
                cond[i] = True
                episode, base_v, hold_ratio = st.episode, st.base.value, st.hold_ratio  # type: ignore[union-attr]
                continue
            if n < trusted:
                if lv < early_v:
                    early, early_v = _Low(lv, step, noise[i], k), lv
                if k >= self.p.fast_window:
                    st.thick.append((n, _Low(lv, step, noise[i], k)))
            else:
                nv = noise[i]
                ema = nv if ema != ema else ema + (nv - ema) * 2.0 / (k + 1)
                if lv < best_v:
                    best, best_v = _Low(lv, step, max(nv, ema), k), lv
                    nheld = 0
                    continue
                if (best is not None and best_v > 0 and lv >= rise_ratio * best_v
                        and lv - best_v >= max(rise_noise * best.noise, self._floor(head))):
                    nheld += 1
                else:
                    nheld = 0
                if nheld >= max(2, int(k * persist)):
                    low, ratio_needed, lvl = best, rise_ratio, lv
                    what, ref = f"its median over the last {k} points", best_v + rise_noise / 2.0 * best.noise  # type: ignore[union-attr]
                else:
                    low = None
            if n < trusted or low is None:
                if fv != fv or (early is None and best is None):
                    continue
                first = measured_low(st.thick, n - self.p.fast_window) or early
                low = first if first is not None and first.value <= best_v else best
                if low.value <= 0 or fv < fast_ratio * low.value:  # type: ignore[union-attr]
                    continue
                if fv - low.value < max(rise_noise * low.noise, self._floor(head)):  # type: ignore[union-attr]
                    continue
                if not blows_up(fv, low.value, head, fast_ratio, self.p.near_zero):  # type: ignore[union-attr]
                    continue
                if fv <= self._recent_peak(steps, values, held + i):
                    continue
                ratio_needed, lvl, what = fast_ratio, fv, fast_what
                ref = (1.0 + (fast_ratio - 1.0) / 2.0) * low.value  # type: ignore[union-attr]
            st.early, st.best, st.noise, st.held, st.ended = early, best, ema, nheld, ended
            self._open(st, steps, values, held + i, n, low, ratio_needed, lvl, what, ref, out, i)  # type: ignore[arg-type]
            cond[i] = True
            episode, base_v, hold_ratio = st.episode, low.value, st.hold_ratio  # type: ignore[union-attr]
        st.early, st.best, st.noise, st.held, st.episode, st.ended = early, best, ema, nheld, episode, ended
        st.last_step = last
        if episode is None:
            st.base = None

    def _recent_peak(self, steps: np.ndarray, values: np.ndarray, row: int) -> float:
        """The highest of the run's last `window` finite points before the fast median's (-inf when none
        was logged). A blow-up leaves everything the loss did lately: the median of its last few points
        is above every single point before them. A per-batch loss near its floor scatters by factors
        (0.002 on one batch, 0.1 on the next, then back), and the median of three of its batches a few
        times its low stays below its own recent single-batch highs: that is its spread, and a rise that
        lasts is left to the rolling median."""
        p = self.p
        lo = max(0, row + 1 - scan_reach(p.window + p.fast_window))
        s, v = steps[lo:row + 1], values[lo:row + 1]
        back = np.flatnonzero(np.diff(s) < 0)
        if len(back):  # a restart: only the current run's points
            v = v[int(back[-1]) + 1:]
        v = v[np.isfinite(v)][:-p.fast_window][-p.window:]
        return float(v.max()) if len(v) else -math.inf

    def _start_armed(self, st: _Trend) -> bool:
        """Whether the run began far above a uniform guess's loss, ln(vocab): then the row with the
        first trusted level judges whether it ever came down."""
        u = self._uniform
        return u is not None and bool(st.head) and st.head[0] > self.p.from_start * u

    def _from_start(self, st: _Trend, step: int, n: int, level: float, out: _Verdicts, i: int, value: float) -> None:
        """Opens an episode dated at the run's first step: its loss began far above ln(vocab) and the
        median of its first `n` points is still there."""
        u = self._uniform
        assert u is not None and st.first_step is not None
        st.episode = start_finding(st.first_step, st.head[0], u, self.p.from_start, step, n, level)
        st.base = _Low(u, st.first_step, 0.0)
        st.hold_ratio = 1.0 + (self.p.from_start - 1.0) / 2.0
        out.episode[i] = st.episode
        out.opened.add(i)
        out.last[i] = value

    def _floor(self, head: list[float]) -> float:
        """A rise smaller than this share of where the run began is not divergence, however tiny the
        noise: a loss memorised to 0.001 that wobbles to 0.01 has not diverged."""
        return self.p.min_rise * abs(median(head)) if head else 0.0

    def _open(self, st: _Trend, steps: np.ndarray, values: np.ndarray, row: int, n: int, low: _Low,
              ratio_needed: float, level: float, what: str, ref: float, out: _Verdicts, i: int) -> None:
        """Opens an episode at `row` (an index into the carried rows); `ref` is the top of the band the
        rise is dated out of: half the smallest rise the rule calls (the classic CUSUM reference) for a
        steady rise, half-way to the blow-up ratio for a blow-up (whose first few points carry too
        little noise estimate to date it by)."""
        st.base = low
        st.hold_ratio = 1.0 + (ratio_needed - 1.0) / 2.0
        began = self._onset(st, steps, values, row, n, low, ref, band(low, self.p.rise_ratio, self.p.rise_noise,
                                                                       self._floor(st.head)))
        st.episode = episode_finding(began, low, int(steps[row]), what, level)
        out.episode[i] = st.episode
        out.opened.add(i)
        out.last[i] = float(values[row])

    def _onset(self, st: _Trend, steps: np.ndarray, values: np.ndarray, row: int, n: int, low: _Low,
               ref: float, band: float) -> Point:
        """The first point of the excursion above `ref`: the change point of a clipped CUSUM over the
        points since half a window before the low (a rolling median lags the curve by about that much),
        or since the previous episode ended, moved back to the first point above the low's noise `band`
        (`first_of_rise`). Runs once per episode, over the finite points the store held at `row`."""
        w = scaled_window(n, self.p.window_fraction, 1, self.p.window)
        k = min(n, self.p.onset_scan)
        pts: list[Point] = []
        if k > 0:
            held = min(row + 1, RECENT_POINTS)
            lo = row + 1 - min(max(SCAN_MIN, 8 * k), held)
            s, v = steps[lo:row + 1], values[lo:row + 1]
            ok = np.isfinite(v)
            pts = [Point(int(a), float(b), None, 0) for a, b in zip(s[ok][-k:], v[ok][-k:])]
        at = next((j for j, pt in enumerate(pts) if pt.step >= low.step), max(0, len(pts) - 1))
        pts = pts[max(0, at - w // 2):]
        if st.ended is not None:
            pts = [pt for pt in pts if pt.step > st.ended] or pts
        noise = low.noise if low.noise > 0 else 0.05 * abs(low.value)
        began = cusum_onset(pts, ref, max(3.0 * noise, ref - low.value)) if pts else None
        if began is not None:
            return first_of_rise(pts, began, low, band)
        return pts[-1] if pts else Point(int(steps[row]), float(values[row]), None, 0)


def uniform_loss(state: object) -> float | None:
    """ln(vocab): the loss of a model that guesses every token alike, when the source's config gives the
    vocabulary size (task.vocab_size puts it in the facts)."""
    facts = getattr(state, "facts", None) or {}
    v = facts.get("vocab_size")
    return math.log(v) if isinstance(v, int) and not isinstance(v, bool) and v >= 2 else None


def start_finding(first_step: int, first: float, uniform: float, ratio: float, step: int, n: int,
                  level: float) -> Finding:
    """A run that diverged from its first step: its first loss far above ln(vocab), never come down."""
    vocab = round(math.exp(uniform))
    msg = (f"the first logged loss, {fmt(first)} at step {first_step}, is {first / uniform:.1f}x ln({vocab}) = "
           f"{fmt(uniform)}, the loss of guessing every token alike, and it never came down: by step {step} "
           f"the median of its first {n} points was {fmt(level)}")
    return Finding(message=msg, step=step, began_step=first_step,
                   evidence={"value": first, "step": first_step, "uniform_loss": uniform, "vocab_size": vocab,
                             "ratio": first / uniform, "from_start": ratio, "detected_value": level,
                             "detected_step": step, "detected_stat": f"median of the first {n} points"})


def _before_rise(points: list[Point], began: int | None, most: int) -> list[float]:
    """The last `most` finite values of the run logged before the rise began (a step going back is a
    restart: only the points after it): the noise a low taken from a point or two did not yet know."""
    out: list[float] = []
    last: int | None = None
    for pt in points:
        if began is None or pt.step >= began:
            break
        if last is not None and pt.step < last:
            out = []
        last = pt.step
        if math.isfinite(pt.value):
            out.append(pt.value)
    return out[-most:]


def measured_low(thick: list[tuple[int, _Low]], before: int) -> _Low | None:
    """The lowest early level that was a median over as many points as the fast median it is compared to,
    taken before that median's points (its count at most `before`); None when there is none. The first
    point or two of an excerpt that starts mid-run are single noisy batches: a median of the last three
    measured against the lowest of them is measured against the noise's low tail. A run that jumps at its
    second point has no such level, and its first point stays the low."""
    lows = [low for n, low in thick if n <= before]
    return min(lows, key=lambda low: low.value) if lows else None


def blows_up(fast: float, low: float, head: list[float], fast_ratio: float, near_zero: float) -> bool:
    """Whether the median of the last few points is a blow-up, compared on a log scale. Normally that is
    `fast_ratio` times the low. A loss trained down near 0 (more than `near_zero` times below where the
    run began) scatters by factors: a few points at 0.25 over a low of 0.01 are its spikes, however
    large the ratio. There the jump is measured from where the run began instead, and a rise that
    stays below that is a divergence only once the rolling median says it stays up."""
    start = median(head[:max(1, len(head) // 2)]) if head else math.nan
    ref = start if start > 0 and low > 0 and start >= near_zero * low else low
    return fast >= fast_ratio * ref


def band(low: _Low, rise_ratio: float, rise_noise: float, floor: float) -> float:
    """The top of the band a point must leave to be part of a rise: past the low's noise (and the smallest
    rise that counts) and past the smallest ratio a divergence is called at, so a noisy start's high
    point before a blow-up is not where the blow-up began."""
    return max(low.value + max(rise_noise * low.noise, floor), rise_ratio * low.value)


def first_of_rise(pts: list[Point], onset: Point, low: _Low, band: float) -> Point:
    """Where the condition began: the CUSUM's onset, moved back over the points after the low that stood
    above its noise `band` right before it (a blow-up's first jump, 1.2 -> 3.6, then 11, 32, falls short
    of the CUSUM's reference, yet it is where the rise began); then moved on past the last point, up to
    the one the rise was found at (`pts` ends there), that was back inside the noise band the message
    states (the low + its noise). The CUSUM dates a change point, an estimate: a slow rise's onset can sit
    on a point the loss then came back under (8.83 at step 87, 7.63 at step 88 over a band up to 7.64),
    and "began rising at step 87, leaving the noise band" would be untrue. The first point of the
    condition is the first one after which the loss stayed out of that band."""
    i = next((j for j, p in enumerate(pts) if p.step == onset.step), None)
    if i is None:
        return onset
    while i > 0 and pts[i - 1].step > low.step and pts[i - 1].value > band:
        i -= 1
    top = low.value + low.noise
    back = [j for j in range(i, len(pts)) if not pts[j].value > top]
    if back and back[-1] + 1 < len(pts):
        i = back[-1] + 1
    return pts[i]


def episode_finding(began: Point, low: _Low, step: int, what: str, level: float) -> Finding:
    """The finding of a divergence episode. A value next to a step is the one logged there; the low and
    the level are medians and say so (evidence `<name>_stat`)."""
    ratio = level / low.value
    over = f"{low.points} points" if low.points else "points"
    msg = (f"loss began rising at step {began.step} ({fmt(began.value)}), leaving the noise band of its low, "
           f"the median of {over} up to step {low.step}: {fmt(low.value)} (noise +-{fmt(low.noise)}); "
           f"by step {step} {what} was {fmt(level)}, {ratio:.1f}x the low")
    return Finding(message=msg, step=step, began_step=began.step,
                   evidence={"value": began.value, "step": began.step, "baseline": low.value,
                             "baseline_step": low.step, "baseline_stat": f"median of {over}", "noise": low.noise,
                             "ratio": ratio, "detected_value": level, "detected_step": step,
                             "detected_stat": what.removeprefix("its ").removeprefix("the ")})


def _told(f: Finding, last_value: float, last_step: int, step: int | None) -> Finding:
    """The episode's finding as one row tells it: the moment it is about, and the row's latest values."""
    ev = dict(f.evidence)
    ev["last_value"] = last_value
    ev["last_step"] = last_step
    return Finding(message=f.message, evidence=ev, subject=f.subject, severity=f.severity,
                   extra_fixes=f.extra_fixes, title=f.title, fixes=f.fixes, began_step=f.began_step, step=step)
