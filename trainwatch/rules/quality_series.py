"""Quality metrics (accuracy, mIoU, mAP, BLEU, reward, validity...) of one source, as the rules that judge
them read them: which way is better comes from the name (names.Quality, data/quality.yaml), the unit of
a share (0-1 or percent) from the values the log printed.

Not a rule: the quality rules (quality.not_learning, quality.collapse, quality.overfit) and the loss
rules that step down when the task metric improves (loss.overfit, loss.plateau, loss.flat_from_start)
share these reads."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from trainwatch.model import Finding, Severity
from trainwatch.names import Direction
from trainwatch.rules.base import RuleContext, median
from trainwatch.rules.stats import curve_sigma, fmt, nz
from trainwatch.store import Series


@dataclass
class Track:
    """One quality metric's finite values over the whole run (bucket means past the kept rows), oldest
    first. `percent`: True when the share is printed as a percent, False when it cannot be one, None
    when the values cannot tell (all of them between 0 and 1) or the metric is no share."""

    name: str
    d: Direction
    steps: np.ndarray
    values: np.ndarray
    percent: bool | None = None

    @property
    def sign(self) -> float:
        """+1 when higher is better, -1 when lower is: sign * value is a score to maximise."""
        return 1.0 if self.d.higher else -1.0

    def shown(self, v: float) -> str:
        return fmt(v) + ("%" if self.percent else "")


def _values(s: Series) -> tuple[np.ndarray, np.ndarray]:
    steps, values, _, _ = s.columns(s.count)
    if len(values) < s.count:  # the oldest rows left the arrays: the whole run as bucket means
        buckets = s.whole_run()
        steps = np.array([b.first_step for b in buckets], dtype=np.int64)
        values = np.array([b.mean for b in buckets], dtype=np.float64)
    keep = np.isfinite(values)
    return steps[keep], values[keep]


def series_values(s: Series) -> tuple[np.ndarray, np.ndarray]:
    """A series' finite (step, value) columns over the whole run, oldest first (bucket means past the kept
    rows), for the rules that judge a whole run once it has ended."""
    return _values(s)


def _quality_series(ctx: RuleContext, source: str) -> list[tuple[Series, Direction]]:
    """The source's series whose names have a direction, each with its split as the log means it: a
    name that does not say (`accuracy`) next to one of the same kind on the eval split (`val_accuracy`)
    is the train split's (Keras' CSVLogger, Lightning's `acc` and `val_acc`)."""
    found = [(s, d) for s in ctx.store if s.source == source and (d := ctx.quality(s.name)) is not None]
    evals = {d.kind for _, d in found if d.split == "eval"}
    return [(s, replace(d, split="train") if not d.split and d.kind in evals else d) for s, d in found]


def other_train_loss(ctx: RuleContext, source: str) -> str | None:
    """A loss of the source logged under a name not read as the train loss (`tr_loss`, `train_loss_epoch`, a
    component such as `kd_loss`): where no `loss` series exists, its name. The rules that judge an eval loss
    alone must not then say that no train loss is logged."""
    for s, d in _quality_series(ctx, source):
        if d.is_loss and d.split != "eval" and s.name not in ("loss", "eval_loss") and s.finite_count \
                and not any(w in s.name.lower() for w in ("val", "test", "eval", "dev")):
            return s.name
    return None


def tracks(ctx: RuleContext, source: str, *, higher_only: bool = False) -> list[Track]:
    """The source's quality metrics other than losses (those have rules of their own), with the unit of
    each share: a share printed above 1 makes the source's shares of the same kind percents (a top-5
    accuracy of 2.5 makes the top-1's 0.7 a percent), but not those of another kind: MMDetection prints its
    accuracy as a percent (97.19) and its mAP as a fraction (0.358)."""
    out: list[Track] = []
    for s, d in _quality_series(ctx, source):
        if d.is_loss or (higher_only and not d.higher):
            continue
        steps, values = _values(s)
        if len(values):
            out.append(Track(s.name, d, steps, values))
    shares = [t for t in out if t.d.share]
    in_percent = {t.d.kind for t in shares if 1.0 < float(t.values.max()) <= 100.0}
    for t in shares:
        top, low = float(t.values.max()), float(t.values.min())
        if top > 100.0 or low < 0.0:
            t.percent = False  # no share at all, whatever its name says
        elif top > 1.0 or t.d.kind in in_percent:
            t.percent = True
    return out


@dataclass(frozen=True)
class Gain:
    """A quality metric that improved: from `first` (at `step`) to `now` (at `now_step`)."""

    name: str
    first: float
    now: float
    step: int
    now_step: int
    third: int = 0
    """How many evaluations each end's median is taken over (0: `first` and `now` are logged values)."""

    def said(self) -> str:
        if self.third:
            return (f"{self.name} improved {fmt(self.first)} -> {fmt(self.now)} (the medians of its first and "
                    f"last {self.third} evaluations, steps {self.step}-{self.now_step})")
        return f"{self.name} improved {fmt(self.first)} -> {fmt(self.now)} (steps {self.step}-{self.now_step})"


def meanwhile(f: Finding, gain: Gain, why: str) -> None:
    """Lowers a loss finding to info because a task metric improved over the same steps, and says so: a
    loss that misbehaves while the task gets better is no training failure."""
    f.severity = Severity.INFO
    f.message = f"{f.message} -- meanwhile {gain.said()}: {why}"[:600]
    f.evidence["improving"] = gain.name


def best_behind(t: Track, min_evals: int, later_evals: int, behind: float) -> tuple[np.ndarray, int] | None:
    """A metric's values signed so that higher is better, and the index of its best, when at least
    `min_evals` (5 at least) evaluations were logged and the best has `later_evals` and `behind` of them
    after it: the shared start of the rules that tell a metric worse since its best. None otherwise."""
    v = t.sign * t.values
    n = len(v)
    if n < max(min_evals, 5):
        return None
    b = int(np.argmax(v))
    if n - 1 - b < max(later_evals, int(np.ceil(behind * n))):
        return None
    return v, b


def improving(ctx: RuleContext, source: str, since_step: int, line: int | None, min_gain: float,
              min_points: int = 3, *, known_only: bool = False) -> Gain | None:
    """A quality metric (not on the train split) that improved since `since_step`, as it was read when
    `line` was logged (None: now): at least `min_points` values since then, each better than the one
    before while there are fewer than five, else the median of the last third better than that of the
    first by `min_gain` of its size and by three noise widths (a metric at chance level wanders, it does
    not climb). A loss curve that misbehaves while the task metric gets better is no training failure.
    `known_only`: only metrics whose direction the name makes sure of (not a bare `score`)."""
    best: Gain | None = None
    for s, d in _quality_series(ctx, source):
        if d.is_loss or d.split == "train" or d.tradeoff or (known_only and d.guess):
            continue
        steps, values = _read_upto(s, line)
        at = steps >= since_step
        steps, values = steps[at], values[at]
        if len(values) < min_points:
            continue
        sign = 1.0 if d.higher else -1.0
        v = (sign * values).tolist()
        n = len(v)
        third = 0
        if n < 5:  # too few for a noise estimate: only a clean climb counts
            if any(b <= a for a, b in zip(v, v[1:])):
                continue
            first, now, noise = v[0], v[-1], 0.0
        else:  # the thirds by their medians, apart by more than the evals' own noise
            third = (n + 2) // 3
            first, now = median(v[:third]), median(v[-third:])
            noise = 3.0 * nz(curve_sigma(v))
        scale = max(abs(first), 1e-12)
        gain = now - first
        if gain < min_gain * scale or gain <= noise:
            continue
        if best is None or gain / scale > abs(best.now - best.first) / max(abs(best.first), 1e-12):
            best = Gain(s.name, sign * first, sign * now, int(steps[0]), int(steps[-1]), third)
    return best


def _read_upto(s: Series, line: int | None) -> tuple[np.ndarray, np.ndarray]:
    """A series' finite steps and values as read when `line` was logged (None: now)."""
    if line is None:
        return _values(s)
    steps, values = s.upto_line(line)
    keep = np.isfinite(values)
    return steps[keep], values[keep]


def outpaced(ctx: RuleContext, source: str, gain: Gain, line: int | None, factor: float) -> Gain | None:
    """The train split's metric of the same kind as `gain`'s (accuracy beside val_accuracy) when it gained
    more than `factor` times as much over the same steps, each gain taken relative to where it started (the
    medians of the first and the last third of its points there, as read when `line` was logged). An eval
    metric that creeps up while the train one races ahead is a widening gap: the model memorises the train
    set, and a rising eval loss is then overfitting, not over-confidence. None otherwise, and when the
    source logs no such train metric."""
    d = ctx.quality(gain.name)
    own = abs(gain.now - gain.first) / max(abs(gain.first), 1e-12)
    if d is None:
        return None
    for s, t in _quality_series(ctx, source):
        if t.split != "train" or t.kind != d.kind or s.name == gain.name:
            continue
        steps, values = _read_upto(s, line)
        at = (steps >= gain.step) & (steps <= gain.now_step)
        v = ((1.0 if t.higher else -1.0) * values[at]).tolist()
        if len(v) < 3:
            continue
        third = (len(v) + 2) // 3
        first, now = median(v[:third]), median(v[-third:])
        if (now - first) / max(abs(first), 1e-12) > factor * own:
            sign = 1.0 if t.higher else -1.0
            return Gain(s.name, sign * first, sign * now, int(steps[at][0]), int(steps[at][-1]))
    return None


def rolling_median(values: np.ndarray, w: int) -> np.ndarray:
    """Centred rolling median of odd width w (shrinking at the ends); w <= 1 gives the values."""
    if w <= 1 or len(values) < 3:
        return values.copy()
    h = w // 2
    padded = np.concatenate([np.full(h, np.nan), values, np.full(h, np.nan)])
    view = np.lib.stride_tricks.sliding_window_view(padded, w)
    return np.nanmedian(view, axis=1)


def centred_count(i: int, n: int, w: int) -> int:
    """How many points `rolling_median(values, w)[i]` was taken over (of n): fewer than w near either end,
    where the window shrinks; a label says this count, never the nominal width."""
    if w <= 1 or n < 3:
        return 1
    h = w // 2
    return min(n - 1, i + h) - max(0, i - h) + 1


def medians_label(counts: list[int]) -> str:
    """'medians of 5 points', or 'medians of 3-5 points' when the window shrank at an end for some."""
    lo, hi = min(counts), max(counts)
    return f"medians of {hi} points" if lo == hi else f"medians of {lo}-{hi} points"


def finite_or(v: float, default: float) -> float:
    return v if math.isfinite(v) else default


def stepped_down(f: Finding, gain: Gain) -> Finding:
    """A loss finding (a flat curve) told as info when the task metric improved over the same stretch: a
    soft-target, distillation or heavily augmented loss may rest while the model gets better."""
    ev = dict(f.evidence)
    ev["improving"] = gain.name
    ev["improving_from"], ev["improving_to"] = gain.first, gain.now
    msg = f"{f.message}; meanwhile {gain.said()}: the task metric improves, so the flat loss is no failure"
    return Finding(message=msg, step=f.step, line=f.line, evidence=ev, subject=f.subject,
                   step_inferred=f.step_inferred, severity=Severity.INFO, extra_fixes=f.extra_fixes,
                   began_step=f.began_step)


class StepDowns:
    """Per source, the verdict on the episode a loss rule opened: stepped down (the gain) or not. Taken
    once per episode, when it opens, so an alert keeps one severity while it lasts."""

    def __init__(self) -> None:
        self._by_source: dict[str, tuple[Finding, Gain | None]] = {}

    def apply(self, ctx: RuleContext, source: str, opened: Finding, shown: Finding, line: int | None,
              min_gain: float) -> Finding:
        got = self._by_source.get(source)
        if got is None or got[0] is not opened:
            since = opened.began_step if opened.began_step is not None else (opened.step or 0)
            got = self._by_source[source] = (opened, improving(ctx, source, since, line, min_gain))
        gain = got[1]
        return shown if gain is None else stepped_down(shown, gain)
