"""loss.overfit: eval loss climbing from its minimum while the train loss keeps falling."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from trainwatch.model import Finding, Retraction, Severity
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.quality_series import Gain, improving, other_train_loss, outpaced
from trainwatch.rules.registry import register
from trainwatch.rules.stats import Episodes, Segment, Segments, curve_sigma, fmt, nz
from trainwatch.rulespec import RuleSpec
from trainwatch.store import RECENT_POINTS, Point, Series


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
    then_said: str = ""  # what train_then is: a median up to the best eval, or the first point after it
    told: bool = False  # an overfit was reported from the current best
    calm: bool = False  # ...as an info: a task metric of the same evals improves (calibration)


@dataclass(frozen=True)
class LossOverfitParams:
    """Parameters of loss.overfit; their meaning and defaults are in presets/base.yaml."""

    later_evals: int
    min_evals: int
    noise_k: float
    min_rise: float
    level_k: float
    early_rise: float
    train_window: int
    train_fall: float
    mild_evals: int
    mild_rise: float
    mild_k: float
    quality_gain: float
    train_pace: float
    title_calibration: str
    fixes_calibration: tuple[str, ...]


@register("loss.overfit")
class LossOverfit(Rule):
    """An eval minimum followed by later evals above it by more than their noise while the train loss
    keeps falling.

    Evals are sparse and noisy, so no run of rising evals is needed: at least `later_evals` evals after
    the minimum must sit above it by more than the noise (measured on the evals' own second
    differences) and `min_rise`, and the median of the latest ones must stand `level_k` noise widths
    above the level around the minimum (the minimum of noisy evals is itself a low draw). Dated at the
    eval minimum; the later evals are listed.

    That noise band (`min_rise`, `level_k` widths) keeps a rise of 1-2% quiet, which is how overfitting
    begins on a smooth eval curve: so each of the last `mild_evals` evals above the minimum by `mild_rise`
    and `mild_k` widths of the noise since the minimum is overfitting onset too. And a task metric of the
    same evals (mIoU, accuracy) that improves since the minimum makes the rise an info: the model grows
    over-confident where it is wrong (calibration), it does not generalise worse; a warning told before
    the metric's climb showed is withdrawn when it does."""

    id = "loss.overfit"
    params = LossOverfitParams
    p: LossOverfitParams
    watches = ("eval_loss",)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._segments = Segments()
        self._evals: dict[str, _Evals] = {}
        self._episodes = Episodes()

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | Retraction | None:
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
        w = self.p.train_window
        st.count += 1
        st.recent.append(v)
        if st.best is None or v < st.best.value:
            old, told = st.best, st.told
            st.around = [st.recent[-2]] if len(st.recent) > 1 else []
            st.best = point
            st.later.clear()
            st.train_then, n = self._train_at(train, point.step, w)
            st.then_said = (f"median of {n} points to step {point.step}" if n > 1
                            else f"the last point to step {point.step}")
            st.told = st.calm = False
            self._episodes.close(src)
            if told and old is not None:  # the evals came back below the minimum: it was no overfit
                return Retraction(f"eval_loss fell to {fmt(v)} at step {point.step}, below the minimum "
                                  f"{fmt(old.value)} (step {old.step}) the rise was measured from")
            return None
        if not st.later:
            st.around.append(v)
        st.later.append(point)
        other = other_train_loss(ctx, src) if train is None or train.last is None else None
        found = self._judge(st, train, point, w, self._episodes.is_open(src), other)
        if found is None:
            self._episodes.close(src)
            return None
        since = st.best.step if st.best is not None else point.step
        if self._episodes.is_open(src):
            gain = None if st.calm else self._calibration(ctx, src, since, point.line)[0]
            if gain is not None:  # the task metric improved since: the warning was wrong, an info follows
                self._episodes.close(src)
                st.told = False
                return Retraction(f"{gain.said()} since the eval minimum (step {since}): the rising eval_loss "
                                  f"is over-confidence, not overfitting")
            later: dict[str, object] = {"later_evals": found.evidence["later_evals"]}
            if "train_now" in found.evidence:  # (an eval-only log has no train loss to tell)
                later["train_now"] = found.evidence["train_now"]
            return self._episodes.repeat(src, v, point.step, **later)
        st.told = True
        gain, ahead = self._calibration(ctx, src, since, point.line)
        st.calm = gain is not None
        if gain is not None:
            found = _calibration(found, gain, self.p.title_calibration, self.p.fixes_calibration)
        elif ahead is not None:
            found.message = f"{found.message}; the gap widens: {ahead[1].said()} but {ahead[0].said()}"
            found.evidence["gap_train"], found.evidence["gap_eval"] = ahead[0].name, ahead[1].name
        return self._episodes.open(src, found, v, point.step)

    def _calibration(self, ctx: RuleContext, src: str, since: int,
                     line: int) -> tuple[Gain | None, tuple[Gain, Gain] | None]:
        """The task metric of the evals that improved since the minimum, when its train-split twin did not
        race ahead of it over the same steps; else None and, when the twin did (the gap widens: overfitting,
        however the eval metric creeps), the twin's gain and the eval metric's."""
        gain = improving(ctx, src, since, line, self.p.quality_gain)
        if gain is None:
            return None, None
        ahead = outpaced(ctx, src, gain, line, self.p.train_pace)
        return (gain, None) if ahead is None else (None, (ahead, gain))

    @staticmethod
    def _train_at(train: Series | None, step: int, w: int) -> tuple[float, int]:
        """Median of the last w finite train-loss points logged at or before `step` (bounded scan), and how
        many it was taken over: a run that logged fewer has its median labelled with the real count."""
        if train is None:
            return math.nan, 0
        steps, values = train.tail_columns(w * 4)  # read as columns: points for every train row cost more
        vals = values[steps <= step][-w:].tolist()
        return (median(vals), len(vals)) if vals else (math.nan, 0)

    @staticmethod
    def _train_after(train: Series | None, step: int, until: int) -> float:
        """The first finite train loss logged after `step` and before `until`: the train loss at the eval
        minimum when none was logged before it (a train loss logged every 500 steps, evals every 98)."""
        if train is None:
            return math.nan
        steps, values = train.tail_columns(RECENT_POINTS)
        keep = (steps > step) & (steps < until) & np.isfinite(values)
        return float(values[keep][0]) if keep.any() else math.nan

    def _mild(self, st: _Evals, noise: float) -> tuple[list[Point], float] | None:
        """Mild, persistent overfitting: each of the last `mild_evals` evals since the minimum above it by
        `mild_rise` of it and `mild_k` noise widths (a rise of 1-2% that never comes back is overfitting
        onset when the evals are smooth; on noisy evals the noise widths keep it quiet). (those evals, the
        band) or None."""
        best = st.best
        k = self.p.mild_evals
        if best is None or len(st.later) < k:
            return None
        later = [p.value for p in st.later]
        # the noise of the evals since the minimum, from their second differences (a steady rise is no
        # noise, and the steep descent before the minimum would inflate the whole-run estimate)
        near = curve_sigma([best.value] + later)
        band = max(self.p.mild_rise * best.value, self.p.mild_k * (near if near == near else noise))
        last = list(st.later)[-k:]
        if all(p.value > best.value + band for p in last):
            return last, band
        return None

    def _judge(self, st: _Evals, train: Series | None, point: Point, w: int, holding: bool,
               other: str | None = None) -> Finding | None:
        mild_said = False
        best = st.best
        need = self.p.later_evals
        if best is None or len(st.later) < need or best.value <= 0:
            return None
        floor = self.p.min_rise * best.value
        if st.count < self.p.min_evals:
            # too few evals to measure their noise: only a clean climb counts, each eval above the one
            # before and the last one `early_rise` above the minimum
            noise = math.nan
            band = floor
            vals = [best.value] + [p.value for p in st.later]
            if any(b <= a for a, b in zip(vals, vals[1:])) or vals[-1] < best.value * (1 + self.p.early_rise):
                return None
            above = [p for p in st.later if p.value > best.value + band]
            if len(above) < need:
                return None
        else:
            noise = nz(curve_sigma(list(st.recent)))
            band = max(self.p.noise_k * noise, floor)
            above = [p for p in st.later if p.value > best.value + band]
            latest = median([p.value for p in list(st.later)[-5:]])
            if len(above) < need:
                clear = False
            elif holding:  # told already: it lasts until the latest evals come back into the minimum's band
                clear = latest > best.value + band
            else:
                clear = latest > median([best.value] + st.around) + max(self.p.level_k * noise, floor)
            if not clear:
                mild = self._mild(st, noise)
                if mild is None:
                    return None
                above, band = mild
                mild_said = True
        if train is None or train.last is None:
            return None if mild_said else self._eval_only(st, best, above, point, other)
        if st.train_then != st.train_then:
            st.train_then = self._train_after(train, best.step, point.step)
            st.then_said = "the first point after it"
        now, n_now = self._train_at(train, point.step, w)
        if not (now < st.train_then * (1 - self.p.train_fall)):
            return None  # the train loss rose or stood still: the run got worse or is noise, not overfit
        shown = ", ".join(f"{p.step}: {fmt(p.value)}" for p in above[:6]) + (", ..." if len(above) > 6 else "")
        if noise != noise:
            why = f"{self.p.min_rise:.0%}, each above the last"
        elif band > floor:  # the noise set the band: say how many widths of it
            why = (f"its noise (+-{fmt(band)})" if self.p.noise_k == 1
                   else f"{fmt(band)} ({self.p.noise_k:g} widths of its noise, +-{fmt(noise)})")
        else:  # the floor set it: the band is a share of the minimum, not the noise, which is smaller
            why = f"{fmt(band)} ({self.p.min_rise:.0%} of it; its noise is +-{fmt(noise)})"
        if mild_said:
            msg = (f"eval_loss was lowest at step {best.step} ({fmt(best.value)}); each of the last {len(above)} "
                   f"evaluations stayed above it by more than {fmt(band)} ({band / best.value:.1%}; step: value "
                   f"{shown}): persistent overfitting onset, while the train loss fell "
                   f"{fmt(st.train_then)} -> {fmt(now)} ({st.then_said} -> {_latest(n_now)})")
        else:
            msg = (f"eval_loss was lowest at step {best.step} ({fmt(best.value)}); {len(above)} of the {len(st.later)} "
                   f"evaluations since sat above it by more than {why} (step: value {shown}), "
                   f"while the train loss fell {fmt(st.train_then)} -> {fmt(now)} ({st.then_said} -> "
                   f"{_latest(n_now)})")
        ev = {"value": best.value, "step": best.step, "noise": noise, "band": band,
              "later_evals": [[p.step, p.value] for p in above[-8:]],
              "train_then": st.train_then, "train_now": now, "detected_step": point.step}
        if noise != noise:
            del ev["noise"]  # too few evals to measure it: unknown, not a NaN for a reader to take for a value
        return Finding(message=msg, step=point.step, began_step=best.step, evidence=ev)


    def _eval_only(self, st: _Evals, best: Point, above: list[Point], point: Point,
                   other: str | None) -> Finding | None:
        """A log of evaluations alone (a metrics file with only `val_loss`): with no train loss to see a gap
        open, a clear rise since the minimum that the latest evals hold (not the mild one) is still told:
        the classic overfitting signature, or a run getting worse."""
        if len(above) < self.p.min_evals:
            return None
        shown = ", ".join(f"{p.step}: {fmt(p.value)}" for p in above[-6:])
        why = (f"its train loss is logged as `{other}`, which is not read as one" if other is not None
               else "no train loss is logged")
        msg = (f"eval_loss was lowest at step {best.step} ({fmt(best.value)}) and has been rising since: "
               f"{len(above)} of the {len(st.later)} evaluations after it sat above it (step: value ..., {shown}); "
               f"{why}, so overfitting cannot be told apart from a run getting worse")
        return Finding(message=msg, step=point.step, began_step=best.step,
                       evidence={"value": best.value, "step": best.step, "later_evals": [[p.step, p.value]
                                                                                          for p in above[-8:]],
                                 "detected_step": point.step})  # (no train loss: no train figures, not NaN)


def _calibration(f: Finding, gain: Gain, title: str, fixes: tuple[str, ...]) -> Finding:
    """The rise told as what it is when the task metric of the same evaluations keeps improving: the model
    grows over-confident on what it gets wrong (calibration), it does not generalise worse. Info, under a
    title and with fixes of calibration: the overfitting ones (stop earlier, more data) would contradict
    its own message and throw away a model that still improves."""
    ev = dict(f.evidence)
    ev["improving"] = gain.name
    ev["improving_from"], ev["improving_to"] = gain.first, gain.now
    msg = (f"eval_loss rises from its minimum {fmt(f.evidence['value'])} (step {f.began_step}) while {gain.said()}: "
           f"the task metric improves, so this is over-confidence (calibration), not overfitting")
    # a subject of its own: an alert of its own, so a warning withdrawn for it does not lend it its severity
    return Finding(message=msg, step=f.step, began_step=f.began_step, evidence=ev, subject="eval_loss calibration",
                   severity=Severity.INFO, title=title,
                   fixes=tuple(f.extra_fixes) + tuple(x.replace("{metric}", gain.name) for x in fixes))


def _latest(n: int) -> str:
    """What the train loss now is: the median of the points it was taken over, labelled with their count."""
    return f"median of the last {n}" if n > 1 else "the last point"
