"""loss.stuck: a training loss printed at the same value, to its last digit, point after point.

A loss computed on batch after batch of different data moves at its last printed digit even when the
model learns nothing: each batch is another sample. A loss that stays at one value to every digit the log
prints (at most one unit of the last digit apart) for `min_points` points in a row comes from a model
whose output no longer depends on its input: a collapse to one constant prediction (a self-supervised
model whose every assignment is uniform, a classifier that predicts the class prior), dead units, or
weights that never change. A cross-entropy over K classes predicting uniformly is exactly ln(K): a level
that equals ln(K) for a small K is said, as the likely reading.

Only a value printed with `min_digits` significant digits or more is judged: `0.69` or `1.0` repeated may
be a coarse print of a loss that moves below it. Judged once the run's data has ended, over the whole
run's history (its buckets keep each stretch's least and greatest value), on the longest such stretch;
a warning, since the run may have left it (a collapse a model escapes from) and the log alone cannot
tell why it stuck."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.registry import register
from trainwatch.store import Bucket

MAX_DECIMALS = 8  # a float's repr beyond this many decimals is no printed value (a mean, a conversion)
UNIFORM_CLASSES = 1000  # ln(K) is named up to this K, and only where the levels of K and K+1 are told apart


@dataclass(frozen=True)
class LossStuckParams:
    """Parameters of loss.stuck; their meaning and defaults are in presets/base.yaml."""

    min_points: int
    min_digits: int


@dataclass
class _Stretch:
    """Consecutive buckets whose values all lie within one unit of the last printed digit."""

    lo: float
    hi: float
    decimals: int
    digits: int
    points: int
    first_step: int
    last_step: int
    last_value: float  # the value logged at last_step


def printed(v: float) -> tuple[int, int]:
    """(decimals, significant digits) of a value as the log printed it: its shortest repr, without the
    trailing zeros a print may pad with (`3.9120` is read back as 3.912)."""
    if not math.isfinite(v) or v == 0:
        return 0, 0
    d = Decimal(repr(v)).normalize()
    _, digits, exp = d.as_tuple()
    if not isinstance(exp, int):
        return 0, 0
    return max(0, -exp), len(digits)


def stretches(buckets: Iterable[Bucket]) -> list[_Stretch]:
    """Every maximal run of finite buckets whose values span at most one unit of the finest last digit
    printed among them; a bucket with a non-finite value, or none finite, ends a run."""
    out: list[_Stretch] = []
    cur: _Stretch | None = None
    for b in buckets:
        if not b.finite or b.nonfinite or not (math.isfinite(b.minimum) and math.isfinite(b.maximum)):
            cur = None
            continue
        (d1, s1), (d2, s2) = printed(b.minimum), printed(b.maximum)
        dec, dig = max(d1, d2), max(s1, s2)
        if cur is not None:
            lo, hi = min(cur.lo, b.minimum), max(cur.hi, b.maximum)
            dec2 = max(cur.decimals, dec)
            if dec2 <= MAX_DECIMALS and hi - lo <= 10.0 ** -dec2 * (1 + 1e-9):
                cur.lo, cur.hi, cur.decimals, cur.digits = lo, hi, dec2, max(cur.digits, dig)
                cur.points += b.finite
                cur.last_step, cur.last_value = b.last_step, b.last
                continue
        cur = None
        if dec <= MAX_DECIMALS and b.maximum - b.minimum <= 10.0 ** -dec * (1 + 1e-9):
            cur = _Stretch(b.minimum, b.maximum, dec, dig, b.finite, b.first_step, b.last_step, b.last)
            out.append(cur)
    return out


def uniform_classes(level: float, unit: float) -> int | None:
    """K when `level` equals ln(K) to the printed unit, for a K small enough that ln(K) and ln(K + 1) lie
    several units apart (so that the match says something)."""
    if not 0.5 < level < math.log(UNIFORM_CLASSES):
        return None
    k = round(math.exp(level))
    if k < 2 or abs(math.log(k) - level) > unit or math.log(k + 1) - math.log(k) < 8 * unit:
        return None
    return k


def _span(x: _Stretch) -> str:
    """The stretch's values as printed: `3.9120-3.9121`, or the one value."""
    lo, hi = f"{x.lo:.{x.decimals}f}", f"{x.hi:.{x.decimals}f}"
    return lo if lo == hi else f"{lo}-{hi}"


@register("loss.stuck")
class LossStuck(Rule):
    """The longest stretch of `min_points` points or more whose printed values never left one last digit."""

    id = "loss.stuck"
    params = LossStuckParams
    p: LossStuckParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        s = ctx.series("loss", source)
        if s is None or s.finite_count < self.p.min_points:
            return []
        found = [x for x in stretches(s.whole_run())
                 if x.points >= self.p.min_points and x.digits >= self.p.min_digits]
        if not found:
            return []
        x = max(found, key=lambda t: t.points)
        unit = 10.0 ** -x.decimals
        msg = (f"loss stayed at {_span(x)} for {x.points} points in a row, steps {x.first_step} to {x.last_step} "
               f"({x.last_value:.{x.decimals}f} at step {x.last_step}), unchanged to the last digit printed "
               f"({unit:g}): a loss that does not move at all from batch to batch is stuck, the model's output no "
               f"longer depending on its input (a collapse to one constant prediction, dead units, frozen weights)")
        k = uniform_classes((x.lo + x.hi) / 2, unit)
        if k is not None:
            msg += f"; {_span(x)} is ln({k}), the cross-entropy of a uniform prediction over {k} classes or prototypes"
        others = [t for t in found if t is not x]
        if others:
            told = "; ".join(f"steps {t.first_step}-{t.last_step} at {_span(t)}" for t in others[:3])
            msg += f" (also {told}{'; ...' if len(others) > 3 else ''})"
        return [Finding(message=msg[:600], step=x.first_step, began_step=x.first_step, subject="loss",
                        evidence={"value": x.lo, "step": x.first_step, "value_stat": "least value of the stretch",
                                  "low": x.lo, "high": x.hi, "points": x.points, "unit": unit,
                                  "stretches": len(found), "uniform_classes": k, "detected_step": x.last_step,
                                  "last_value": x.last_value, "last_step": x.last_step})]
