"""Loss curves that stop or never start falling: loss.plateau and loss.flat_from_start.

Both judge against the measured noise of the series and know the schedule: a loss resting while
the LR warms up or anneals toward 0 is neither.

Both are array rules with a cadence: a verdict is reached every few points (a share of the window,
which grows with the run) and stands until the next. The rows where a verdict can change (judgement
rows, and rows where the schedule or a restart switches the rule off) are found with numpy; only
those run Python, so a long healthy log costs a few array passes per batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from trainwatch.adversarial import adversarial
from trainwatch.model import Finding, Severity
from trainwatch.plans import latest
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import RuleContext, median
from trainwatch.rules.plateau_feed import Feed, LrView
from trainwatch.rules.quality_series import StepDowns
from trainwatch.rules.registry import register
from trainwatch.rules.stats import diff_sigma, fmt, median_se, nz, scaled_window
from trainwatch.rulespec import RuleSpec
from trainwatch.store import RECENT_POINTS, SCAN_MIN


@dataclass
class _State:
    """What a plateau rule carries per source between rows: the open episode and the cadence."""

    opened: Finding | None = None  # the finding that opened the current episode
    next: int | None = None  # points seen at the next judgement
    flat_since: tuple[Any, ...] | None = None
    level: float | None = None
    shown: int = 0  # the level is the median of this many last logged points


class _Verdicts:
    """Per new row of one batch: whether the condition holds, the level shown, the episode's finding."""

    def __init__(self, m: int) -> None:
        self.cond = np.zeros(m, dtype=bool)
        self.level = np.full(m, np.nan)
        self.shown = np.zeros(m, dtype=np.int64)
        self.episode = np.full(m, -1, dtype=np.int64)
        self.opened: list[Finding] = []

    def hold(self, lo: int, hi: int, rows: np.ndarray, st: _State) -> None:
        """Rows [lo, hi) of `rows` (finite new rows) repeat the open episode, if any."""
        if st.opened is None or hi <= lo:
            return
        r = rows[lo:hi]
        if not self.opened or self.opened[-1] is not st.opened:
            self.opened.append(st.opened)
        self.cond[r] = True
        self.level[r] = st.level
        self.shown[r] = st.shown
        self.episode[r] = len(self.opened) - 1

    def opened_at(self, w: Window, row: int) -> Finding:
        """The finding that opened the episode `row` (index into the window) belongs to."""
        return self.opened[int(self.episode[row - w.start])]

    def finding(self, w: Window, row: int) -> Finding:
        """The open episode's finding as repeated at `row` (index into the window)."""
        i = row - w.start
        f = self.opened[int(self.episode[i])]
        ev = dict(f.evidence)
        ev["last_value"] = float(self.level[i])
        ev["last_step"] = int(w.step[row])
        return Finding(message=f.message, evidence=ev, subject=f.subject, severity=f.severity,
                       extra_fixes=f.extra_fixes, title=f.title, fixes=f.fixes, began_step=f.began_step,
                       step=int(w.step[row]))


def _next_true(mask: np.ndarray) -> np.ndarray:
    """Per index, the first index at or after it where `mask` holds (len(mask) when none)."""
    m = len(mask)
    if not mask.any():  # the usual answers, without the reversed scan
        return np.full(m, m, dtype=np.int64)
    if mask.all():
        return np.arange(m, dtype=np.int64)
    idx = np.where(mask, np.arange(m), m)
    return np.minimum.accumulate(idx[::-1])[::-1] if m else idx


@dataclass(frozen=True)
class LossPlateauParams:
    """Parameters of loss.plateau; their meaning and defaults are in presets/base.yaml."""

    window: int
    window_fraction: float
    window_max: int
    min_history: int
    min_drop: float
    noise_z: float
    persist: float
    fallen: float
    still_high: float
    expected_max: float
    early_fraction: float
    anneal_below: float
    quality_gain: float


@register("loss.plateau")
class LossPlateau(ArrayRule):
    """The loss fell, then stopped falling early, still high and well above the expected level.

    Judged on a window that grows with the run, split in two halves whose medians are compared: a
    plateau is a fall that stays below `min_drop` even at the top of its noise band, held for half
    a window more. Not judged while the LR anneals (a loss that flattens as the LR goes to 0 at the
    end of its schedule is normal), nor while it still warms up (a loss may rest until the LR is up, and
    "raise the LR" is no fix for a schedule that is raising it), nor late in a run whose total is known."""

    id = "loss.plateau"
    params = LossPlateauParams
    p: LossPlateauParams
    watches = ("loss",)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._feeds: dict[str, Feed] = {}
        self._warmups: dict[str, LrView] = {}  # source -> its LR asked whether it still climbs
        self._states: dict[str, _State] = {}
        self._verdicts: dict[str, _Verdicts] = {}
        self._steps = StepDowns()

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        p = self.p
        src = w.source
        feed = self._feeds.get(src)
        if feed is None:
            # the level shown reads up to half a window of logged points, beyond window_max: carry all
            # the store's recent points, so a batch cut anywhere reads what one whole batch reads
            feed = self._feeds[src] = Feed(5, RECENT_POINTS, buckets=True)
        feed.load(ctx, w)
        st = self._states.setdefault(src, _State())
        new = w.new
        steps = w.step[w.start:]
        out = self._verdicts[src] = _Verdicts(len(new))
        # rows where the rule is off: too few points, late in a run of known length, the LR annealing
        off = feed.n < p.min_history
        state = ctx.sources.get(src)
        total = state.total_steps if state else None
        if total:
            off |= steps > p.early_fraction * total
        off |= feed.lr.annealing(ctx, src, w.line[w.start:], p.anneal_below)
        off |= self._warmups.setdefault(src, LrView()).rising(ctx, src, w.line[w.start:])
        rows = np.flatnonzero(np.isfinite(new))
        rs = off[rows]
        nk = feed.n[rows]
        next_off, next_on, next_seg = _next_true(rs), _next_true(~rs), _seg_changes(feed.seg_id[rows])
        count = len(rows)
        k = 0
        while k < count:
            if rs[k]:
                st.opened, st.flat_since, st.next = None, None, None
                k = int(next_on[k])
                continue
            nn = int(nk[k])
            if st.next is not None and nn < st.next:  # between judgements the last verdict stands
                j = min(k + st.next - nn, int(next_off[k]), int(next_seg[k + 1]))
                out.hold(k, j, rows, st)
                k = j
                continue
            self._judge_row(feed, st, out, rows, k, nn, int(steps[rows[k]]))
            k += 1
        feed.finish()
        return out.cond

    def _judge_row(self, feed: Feed, st: _State, out: _Verdicts, rows: np.ndarray, k: int, n: int,
                   step: int) -> None:
        p = self.p
        r = int(rows[k])
        w = scaled_window(n, p.window_fraction, p.window, n)
        st.next = n + max(1, w // 10)
        head = feed.head(r)[0]
        if st.opened is None and self._clearly_low(feed, r, head):
            st.flat_since = None
            return
        if w <= p.window_max:
            v, s = feed.tail(r, w)
            vals, first_step = v.tolist(), (int(s[0]) if len(s) else 0)
        else:  # beyond window_max points the run's downsampled history stands in, one mean per bucket
            vals, first_step = feed.bucket_window(r, w)
        found = self._judge(head, vals, w, st.opened is not None)
        if found is None:
            st.opened, st.flat_since = None, None
            return
        level, make = found
        shown = len(vals) - len(vals) // 2
        if w > p.window_max:  # judged on bucket means: the level shown is the median of the logged points
            pts = feed.tail(r, w - w // 2)[0]
            if len(pts):
                level, shown = median(pts.tolist()), len(pts)
        st.level, st.shown = level, shown
        if st.opened is None:
            if st.flat_since is None:
                st.flat_since = (n, first_step)
            if n - st.flat_since[0] < p.persist * w:
                return
            st.opened = make(st.flat_since[1], step, level, shown)
        out.hold(k, k + 1, rows, st)

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        v = self._verdicts[w.source]
        found = v.finding(w, row)
        found.evidence["last_value"] = self.last_value(w, row)  # as of this row, as between judgements
        return self._steps.apply(ctx, w.source, v.opened_at(w, row), found, int(w.line[row]), self.p.quality_gain)

    def last_value(self, w: Window, row: int) -> float | None:
        """The median of the last logged points as of `row` itself, as many as the last judgement showed:
        between judgements the level is not the one of the row the judgement was made at."""
        v, i = self._verdicts[w.source], row - w.start
        n = int(v.shown[i])
        if not n:
            return float(v.level[i])
        pts = self._feeds[w.source].tail(i, n)[0]
        return median(pts.tolist()) if len(pts) else float(v.level[i])

    def _clearly_low(self, feed: Feed, row: int, head: list[float]) -> bool:
        """A cheap look at the last few points before reading a whole window: a loss well below the
        expected level, or well below the share of its start a plateau needs, is no plateau."""
        recent = median(feed.tail(row, 9)[0].tolist())
        start = median(head) if head else math.nan
        return recent < 0.8 * self.p.expected_max or recent < 0.8 * self.p.still_high * start

    def _judge(self, head: list[float], vals: list[float], points: int, holding: bool):  # type: ignore[no-untyped-def]
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
        first = median(head)
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
            """The finding, its level `shown` the median of the last `count` logged points."""
            msg = (f"loss has stayed near {fmt(shown)} (median of the last {count} points) since about step "
                   f"{began}: its median fell only {drop:.1%} over the last {points} points (noise +-{fmt(noise)}), "
                   f"still {shown / first:.0%} of where it began ({fmt(first)}, the median of its first {len(head)} "
                   f"points) and above the expected "
                   f"{self.p.expected_max:g}")
            return Finding(message=msg, step=step, began_step=began,
                           evidence={"value": shown, "step": began, "value_stat": f"median of the last {count} points",
                                     "baseline": then, "drop": drop, "noise": noise, "first": first,
                                     "window": points, "detected_step": step,
                                     "last_stat": "median of the window's newer half"})

        return level, make


FELL = "fell"  # flat_from_start's verdict on a loss that fell beyond its noise
FIRST_CACHE_MAX = 4096  # run segments whose start loss.flat_from_start keeps read (a few per source)


@dataclass
class _FlatState:
    opened: Finding | None = None
    next: tuple[Any, ...] | None = None  # (segment, points seen at the next judgement)
    flat_since: tuple[Any, ...] | None = None  # (segment, points seen when first flat)
    level: float | None = None
    shown: int = 0  # no recount of the last points (see _State): this level is the window's own median
    told: object = None  # the run segment whose flat curve was reported


@dataclass(frozen=True)
class LossFlatFromStartParams:
    """Parameters of loss.flat_from_start; their meaning and defaults are in presets/base.yaml."""

    min_history: int
    end_min_history: int
    min_drop: float
    noise_z: float
    persist: float
    start_within: int
    quarter_max: int
    min_fraction: float
    quality_gain: float


@register("loss.flat_from_start")
class LossFlatFromStart(ArrayRule):
    """The loss never decreased at all since the run began.

    The first and the last quarter of the run's points are compared by their medians; the curve is
    flat only when even the top of the noise band of that difference is below `min_drop`, so a noisy
    per-step loss that falls slowly is never called flat. Dated at the run's first step. A curve
    called flat that falls beyond its noise later is withdrawn (`retractions`)."""

    id = "loss.flat_from_start"
    params = LossFlatFromStartParams
    p: LossFlatFromStartParams
    watches = ("loss",)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._feeds: dict[str, Feed] = {}
        self._states: dict[str, _FlatState] = {}
        self._verdicts: dict[str, _Verdicts] = {}
        self._steps = StepDowns()
        self._withdrawn: dict[str, list[tuple[int, str]]] = {}
        self._first: dict[int, tuple[Any, ...]] = {}
        """Per run segment (by identity): (segment, h, its start's median, its noise), the last start read.
        One entry per segment, so many sources judged in turn each keep theirs."""
        self._fell = ""
        """What the last judgement that returned FELL read, with its counts and its step: a withdrawal
        quotes that judgement, not a level kept from an earlier one (a FELL of the cheap look reads no
        level of its own)."""

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        p = self.p
        src = w.source
        qmax = p.quarter_max
        feed = self._feeds.get(src)
        if feed is None:
            feed = self._feeds[src] = Feed(qmax, max(SCAN_MIN, 8 * qmax), buckets=False)
        feed.load(ctx, w)
        st = self._states.setdefault(src, _FlatState())
        new = w.new
        steps = w.step[w.start:]
        out = self._verdicts[src] = _Verdicts(len(new))
        withdrawn = self._withdrawn[src] = []
        rising = feed.lr.rising(ctx, src, w.line[w.start:])
        state = ctx.sources.get(src)
        total = state.total_steps if state is not None else None
        early = p.min_fraction * total if total else None
        rows = np.flatnonzero(np.isfinite(new))
        nk = feed.n[rows]
        few_med = _medians_of_nine(feed.v)
        if few_med is not None and self._quiet(feed, st, rows, few_med, rising, steps, early):
            return out.cond
        next_seg = _seg_changes(feed.seg_id[rows])
        count = len(rows)
        k = 0
        while k < count:
            r = int(rows[k])
            nn = int(nk[k])
            seg = feed.segs[int(feed.seg_id[r])]
            nxt = st.next
            if nxt is not None and nxt[0] is seg and nn < nxt[1]:  # between judgements the last verdict stands
                j = min(k + nxt[1] - nn, int(next_seg[k + 1]))
                out.hold(k, j, rows, st)  # type: ignore[arg-type]
                k = j
                continue
            k += 1
            h = max(2, min(nn // 4, qmax))
            st.next = (seg, nn + max(1, h // 8))
            if st.opened is None and rising[r]:
                st.flat_since = None
                continue  # a long LR warmup: the loss may rest until the LR is up
            step = int(steps[r])
            if early is not None and step < early and st.opened is None:
                continue  # too early in a run of known length: a slow fall has not shown yet
            head_v, head_s = feed.head(r)
            at = feed.off + r
            few = few_med[at] if few_med is not None and at >= 8 else None
            f, level = self._judge(seg, head_v, head_s, nn, partial(_tail_list, feed, r),
                                   p.min_history, step, st.opened is not None, few)
            if level is not None:
                st.level = level
            if not isinstance(f, Finding):
                st.opened, st.flat_since = None, None
                if f is FELL and st.told is seg:
                    st.told = None
                    withdrawn.append((w.start + r, f"the loss fell after all: {self._fell}"))
                continue
            if st.opened is None:
                if st.flat_since is None or st.flat_since[0] is not seg:
                    st.flat_since = (seg, nn)
                if nn - st.flat_since[1] < p.persist * h:
                    continue  # flat once may be a low draw of the noise: flat for a whole quarter more is not
                st.told = seg
                st.opened = f
            out.hold(k - 1, k, rows, st)  # type: ignore[arg-type]
        return out.cond

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        v = self._verdicts[w.source]
        f = v.finding(w, row)
        self._unsure(ctx, w.source, f)
        _generator(ctx, w.source, f)
        return self._steps.apply(ctx, w.source, v.opened_at(w, row), f, int(w.line[row]), self.p.quality_gain)

    def _unsure(self, ctx: RuleContext, source: str, f: Finding) -> None:
        """A flat start told on few points of a run the log plans long (`running for 150 epochs`) without
        saying how far it got, or saying it is still early: the points may be a sliver of the run (a
        Dice loss resting near 1 through an epoch's first batches), so a warning that says why."""
        points = f.evidence.get("points")
        if f.severity is not None or not isinstance(points, int) or points >= 2 * self.p.min_history:
            return
        state = ctx.sources.get(source)
        plan = latest(state) if state is not None else None
        if plan is None or (state is not None and state.total_steps):
            return  # (a known total in steps: judged only past min_fraction of it)
        if plan.reached is not None and plan.reached >= self.p.min_fraction * plan.total:
            return
        f.severity = Severity.WARNING
        f.message += (f"; only {points} points of a run planned for {plan.total} {plan.unit}s, early in it or "
                      "at a point the log does not say: too few to be sure")

    def last_value(self, w: Window, row: int) -> float | None:
        return float(self._verdicts[w.source].level[row - w.start])

    def retractions(self, ctx: RuleContext, w: Window) -> list[tuple[int, str]]:
        return self._withdrawn.get(w.source, [])

    def _quiet(self, feed: Feed, st: _FlatState, rows: np.ndarray, few_med: _NineMedians, rising: np.ndarray,
               steps: np.ndarray, early: float | None) -> bool:
        """The batch settled over arrays when nothing can come of it, as in a healthy run long past its
        start: nothing is called flat or told, one segment whose first quarter is full, and every
        judgement the row loop would make ends at the cheap look (the last nine far below the start), is
        skipped for a rising LR, or comes too early. Then only the judgement cadence and `flat_since` move;
        False (nothing changed) when any of that does not hold, and the row loop reads the batch."""
        p = self.p
        qmax = p.quarter_max
        count = len(rows)
        if not count or st.opened is not None:
            return False
        seg_ids = feed.seg_id[rows]
        seg = feed.segs[int(seg_ids[0])]
        if seg is None or seg is st.told or (seg_ids != seg_ids[0]).any() or len(seg.head) < qmax:
            return False
        nk = feed.n[rows]
        if int(nk[0]) < 4 * qmax or feed.off + int(rows[0]) < 8 or feed.head_row[int(seg_ids[0])]:
            return False  # the cadence and the quarters still grow, or the head is still being read
        if self._late(seg.head_steps):  # the head holds quarter_max points (above)
            return False
        known = self._first.get(id(seg))
        if known is not None and known[0] is seg and known[1] == qmax:
            first, head_noise = known[2], known[3]
        else:
            start = seg.head[:qmax]
            first, head_noise = median(start), nz(diff_sigma(start))
        if first <= 0:
            return False
        stride = max(1, qmax // 8)
        nxt = st.next
        k0 = 0
        if nxt is not None and nxt[0] is seg:
            k0 = max(0, int(nxt[1]) - int(nk[0]))
        judged = np.arange(k0, count, stride)
        if not len(judged):
            return True  # between judgements: the last verdict (nothing) stands
        r = rows[judged]
        looked = ~rising[r]
        if early is not None:
            looked &= ~(steps[r] < early)
        bar = first * (1 - 2 * p.min_drop)
        if not (few_med.at(feed.off + r[looked]) + 3 * median_se(head_noise, 9) < bar).all():
            return False
        self._remember_first(seg, qmax, first, head_noise)
        st.next = (seg, int(nk[judged[-1]]) + stride)
        if (looked | rising[r]).any():
            st.flat_since = None
        return True

    def _remember_first(self, seg: object, h: int, first: float, noise: float) -> None:
        if len(self._first) >= FIRST_CACHE_MAX and id(seg) not in self._first:
            self._first.clear()  # bounded on a week of restarts: a start is cheap to read again
        self._first[id(seg)] = (seg, h, first, noise)

    def _judge(self, seg: object, head: list[float], head_steps: list[int], n: int,
               tail: Callable[[int], list[float]], need: int, step: int,
               holding: bool = False, few: float | None = None) -> tuple[Finding | bool | str | None, float | None]:
        """(verdict, level read): a finding when flat, FELL when it fell beyond the noise, False when not
        flat otherwise, None when it cannot tell yet. A flat curve already told stays flat while its
        fall stays below min_drop (the noise band is for calling it, not for keeping it, or a noisy
        flat curve would flap). Each quarter holds at most `quarter_max` points. `tail(k)` gives the
        last k finite values."""
        self._fell = ""
        if n < need or not head or self._late(head_steps):
            return None, None
        h = max(2, min(n // 4, self.p.quarter_max, len(head)))
        known = self._first.get(id(seg))
        if known is not None and known[0] is seg and known[1] == h:
            first, head_noise = known[2], known[3]  # h stops growing at quarter_max: the start is then fixed
        else:
            start = head[:h]
            first, head_noise = median(start), nz(diff_sigma(start))
            self._remember_first(seg, h, first, head_noise)
        if first <= 0:
            return None, None
        min_drop = self.p.min_drop
        k = max(3, h // 16)
        start_k = median(head[:k])
        if start_k * (1 - 2 * min_drop) > first + 3 * median_se(head_noise, k):
            self._fell = fell_in_first_quarter(step, k, start_k, h, first, 2 * min_drop)
            return FELL, None  # it fell fast within its first quarter (6.55 -> 4.3 in five epochs), then rested:
            # a plateau's case (loss.plateau), not a loss that never decreased
        if not holding:  # a cheap look first: the last 9 points far below the start need no full quarter
            if few is not None:
                nine, few_n = few, 9
            else:
                last9 = tail(9)
                nine, few_n = (median(last9) if last9 else math.inf), len(last9)
            if few_n and nine + 3 * median_se(head_noise, few_n) < first * (1 - 2 * min_drop):
                self._fell = fell_below(step, few_n, nine, h, first, 2 * min_drop)
                return FELL, None
        vals = tail(h)
        if not vals:
            return None, None
        last = median(vals)
        drop = (first - last) / first
        # it rose above where it began: divergence, not a flat curve (even when the blow-up came so
        # early that the first quarter already holds it)
        if last > 1.5 * min(first, head[0]):
            return False, last
        noise = max(head_noise, nz(diff_sigma(vals)))
        se = math.hypot(median_se(noise, h), median_se(noise, len(vals)))
        z_se = self.p.noise_z * se / first
        if drop - z_se >= min_drop:
            self._fell = fell_below(step, len(vals), last, h, first, min_drop)
            return FELL, last  # it fell by more than min_drop, beyond the noise
        if drop + (0.0 if holding else z_se) >= min_drop:
            return False, last  # it may have fallen: the noise could hide a fall of min_drop
        s0 = head_steps[0]
        msg = (f"loss has not fallen since its first logged step {s0}: the median of its first {h} points was "
               f"{fmt(first)}, that of the {len(vals)} up to step {step} {fmt(last)} ({n} points, change {-drop:+.1%}, "
               f"noise +-{fmt(noise)})")
        unsure = s0 > self.p.start_within  # judged only as its first logging interval: the fall may be before it
        if unsure:
            msg += (f"; the first point comes {s0} steps in, one logging interval, so the fall may have come "
                    f"before it: flat since then")
        return Finding(message=msg, step=step, began_step=s0, severity=Severity.WARNING if unsure else None,
                       evidence={"value": first, "step": s0, "value_stat": f"median of the first {h} points",
                                 "first": first, "now": last, "drop": drop, "noise": noise, "points": n,
                                 "detected_step": step, "last_stat": "median"}), last

    def on_end(self, ctx: RuleContext, source: str) -> list[Finding]:
        s = ctx.series("loss", source)
        feed = self._feeds.get(source)
        if s is None or s.last is None or feed is None or feed.seg is None or _lr_rising(ctx, source):
            return []  # no loss, or the run ended while its LR was still warming up
        seg = feed.seg
        f, level = self._judge(seg, seg.head, seg.head_steps, s.finite_count - seg.finite_before, s.tail_values,
                               self.p.end_min_history, s.last.step)
        st = self._states.setdefault(source, _FlatState())
        if level is not None:
            st.level = level
        if not isinstance(f, Finding):
            return []
        f.subject = "loss"
        s0, end = f.evidence["step"], s.last.step
        if f.evidence["points"] < self.p.min_history and end and s0 > 1 and s0 >= self.p.min_fraction * end:
            # a few points, the first well into the run (an average every few rounds, an epoch's mean):
            # the fall may have come before it, so unsure, a warning that says why
            f.severity = Severity.WARNING
            f.message += (f"; only {f.evidence['points']} points were logged and the first at step {s0}, so the "
                          "fall may have come before it")
        f.evidence["last_value"] = st.level if st.level is not None else f.evidence["now"]
        f.evidence["last_step"] = s.last.step
        _generator(ctx, source, f)
        return [self._steps.apply(ctx, source, f, f, None, self.p.quality_gain)]


    def _late(self, head_steps: list[int]) -> bool:
        """The log begins after the run did (a resume): its first step is past `start_within` and past the
        first logging interval (a loss logged every 500 steps first shows at step 500, the run's start)."""
        first = head_steps[0]
        if first <= self.p.start_within:
            return False
        return len(head_steps) < 2 or first > head_steps[1] - head_steps[0]

def fell_below(step: int, count: int, last: float, h: int, first: float, share: float) -> str:
    """Why a flat start was withdrawn: the median the judgement read at `step`, with both counts."""
    return (f"by step {step} the median of its last {count} points was {fmt(last)}, more than {share:.0%} below "
            f"the median of its first {h} points ({fmt(first)})")


def fell_in_first_quarter(step: int, k: int, start_k: float, h: int, first: float, share: float) -> str:
    """Why a flat start was withdrawn when, judged at `step`, it had fallen within its first quarter."""
    return (f"judged at step {step}, the median of its first {h} points ({fmt(first)}) was more than {share:.0%} "
            f"below that of its first {k} ({fmt(start_k)}): it fell within its first quarter")


def _seg_changes(seg: np.ndarray) -> np.ndarray:
    """Per index k (and one past the end), the first index at or after k where the segment differs from
    the one before: a cadence run never crosses a restart."""
    chg = np.zeros(len(seg), dtype=bool)
    chg[1:] = seg[1:] != seg[:-1]
    return np.append(_next_true(chg), len(seg))


def _lr_rising(ctx: RuleContext, source: str) -> bool:
    """The LR is still climbing (a warmup): each of its last few logged values above the one before."""
    lr = ctx.series("lr", source)
    vals = lr.tail_values(4) if lr is not None else []
    return len(vals) >= 2 and all(b > a for a, b in zip(vals, vals[1:]))


class _NineMedians:
    """Per index i of `v` (from i = 8), the median of v[i - 8:i + 1]: what the cheap look of
    flat_from_start reads at a row. Taken only at the rows asked for (the look runs at every few rows, on
    the judgement cadence), each the middle of its nine values, as a rolling pass would give it."""

    def __init__(self, v: np.ndarray) -> None:
        self._nines = np.lib.stride_tricks.sliding_window_view(v, 9)

    def at(self, idx: np.ndarray) -> np.ndarray:
        return np.partition(self._nines[np.asarray(idx) - 8], 4, axis=1)[:, 4]

    def __getitem__(self, i: int) -> float:
        return float(self.at(np.array([i]))[0])


def _medians_of_nine(v: np.ndarray) -> _NineMedians | None:
    """The medians of nine, when every value is finite (so `tail(9)` is those nine)."""
    if len(v) < 9 or not np.isfinite(v).all():
        return None
    return _NineMedians(v)


def _tail_list(feed: Feed, row: int, n: int) -> list[float]:
    """The last n finite values up to `row`, as the row rule read them from the store."""
    out: list[float] = feed.tail(row, n)[0].tolist()
    return out


def _generator(ctx: RuleContext, source: str, f: Finding) -> None:
    """A flat start of a GAN generator's loss (a discriminator's loss is logged beside it) is no critical:
    the two players hold each other level by design, and a fine-tuned generator starts low, so a warning
    that says whose loss it is."""
    if f.severity not in (None, Severity.CRITICAL) or not adversarial(s.name for s in ctx.store if s.source == source):
        return
    f.severity = Severity.WARNING
    f.message = (f"{f.message} -- this loss is a GAN generator's (a discriminator's loss is logged beside it): "
                 f"the adversarial game can hold it level while the generator improves")[:600]
    f.evidence["adversarial"] = True
