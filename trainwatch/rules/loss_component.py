"""loss.component_rising: one part of a loss printed in parts rose through the run while the total fell.

A detector or a multi-task model prints its loss with its parts (`Loc Loss`, `Cls Loss`, `Tot Loss`;
`box_loss`, `cls_loss`). The total can keep falling on the part that learns while another part gets worse,
and the total then hides a head that does not learn: a classification loss that sits at chance (ln 2 = 0.693
for a binary target) and creeps up while the localisation loss carries the total down. Judged once the run
has ended, over thirds of the run: the part's medians must rise third after third, its last third above its
first by `rise` of it and by `noise_k` standard errors of a third's median (its point-to-point noise), while
the total of the same split (`loss` for a train part, `eval_loss` for a validation one) fell by `fall`.

Parts that rise by design are left out: a KL term (a VAE's rises as it starts to use the latent code), a
regulariser or an entropy bonus, the sides of a GAN, and a loss averaged over many steps (`Avg Loss`, the
same curve as the step's own)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from trainwatch.adversarial import adversarial
from trainwatch.model import Finding
from trainwatch.names import averaged
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.quality_series import series_values
from trainwatch.rules.registry import register
from trainwatch.rules.stats import diff_sigma, fmt, median_se
from trainwatch.store import Series

# tokens of a part's name that say it is meant to rise or to trade against the rest
BY_DESIGN = frozenset({"kl", "kld", "reg", "regularization", "regularisation", "l1", "l2", "wd", "entropy", "ent",
                       "aux", "balance", "z", "commit", "commitment", "penalty", "gp"})
_SPLIT = re.compile(r"[^a-z0-9]+")
LN2 = math.log(2.0)


@dataclass(frozen=True)
class LossComponentParams:
    """Parameters of loss.component_rising; their meaning and defaults are in presets/base.yaml."""

    min_points: int
    rise: float
    noise_k: float
    fall: float
    chance_within: float


@dataclass(frozen=True)
class _Rise:
    name: str
    thirds: tuple[float, float, float]
    counts: tuple[int, int, int]
    steps: tuple[int, int]  # the part's first and last step
    last: float  # its value at its last step
    total: str
    total_thirds: tuple[float, float]  # the total's first and last third medians


def _thirds(values: np.ndarray) -> tuple[tuple[float, float, float], tuple[int, int, int]]:
    n = len(values)
    cuts = [0, n // 3, 2 * n // 3, n]
    parts = [values[cuts[i]:cuts[i + 1]].tolist() for i in range(3)]
    return (median(parts[0]), median(parts[1]), median(parts[2])), (len(parts[0]), len(parts[1]), len(parts[2]))


@register("loss.component_rising")
class LossComponentRising(Rule):
    """A loss part whose third-of-run medians rise steadily, beyond its noise, while its split's total falls."""

    id = "loss.component_rising"
    params = LossComponentParams
    p: LossComponentParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        mine = [s for s in ctx.store if s.source == source]
        if adversarial(s.name for s in mine):
            return []
        found = [r for s in mine if (r := self._rise(ctx, source, s)) is not None]
        if not found:
            return []
        r = found[0]
        (a, b, c), (na, nb, nc) = r.thirds, r.counts
        points = f"{na} points each" if na == nb == nc else f"{na}, {nb} and {nc} points"
        msg = (f"{r.name} rose third after third: {fmt(a)} -> {fmt(b)} -> {fmt(c)} (the medians of its first, middle "
               f"and last thirds, {points}, steps {r.steps[0]}-{r.steps[1]}) while {r.total} fell "
               f"{fmt(r.total_thirds[0])} -> {fmt(r.total_thirds[1])} (the medians of its first and last thirds): "
               f"the total hides a part that is not learning")
        if abs(c - LN2) <= self.p.chance_within * LN2:
            msg += f"; {fmt(c)} is about ln 2 = 0.693, the loss of a binary prediction at chance"
        others = found[1:]
        if others:
            msg += "; also rising: " + ", ".join(f"{o.name} {fmt(o.thirds[0])} -> {fmt(o.thirds[2])}"
                                                for o in others[:3])
        return [Finding(message=msg, step=r.steps[0], began_step=r.steps[0], subject=r.name,
                        evidence={"metric": r.name, "first_third": a, "middle_third": b, "last_third": c,
                                  "value_stat": "median of a third of the run's points", "total": r.total,
                                  "total_first_third": r.total_thirds[0], "total_last_third": r.total_thirds[1],
                                  "also": [o.name for o in others], "detected_step": r.steps[1],
                                  "last_value": r.last, "last_step": r.steps[1]})]

    def _rise(self, ctx: RuleContext, source: str, s: Series) -> _Rise | None:
        p = self.p
        if s.name in ("loss", "eval_loss") or averaged(s.name) or s.name.startswith("test_set"):
            return None
        d = ctx.quality(s.name)
        if d is None or not d.is_loss or BY_DESIGN.intersection(_tokens(s.name)):
            return None
        total_name = "eval_loss" if d.split == "eval" else "loss"
        total = ctx.series(total_name, source)
        if total is None:
            return None
        steps, values = series_values(s)
        if len(values) < max(p.min_points, 9) or float(values.min()) < 0:
            return None
        (a, b, c), counts = _thirds(values)
        if not a < b < c or c - a < p.rise * a:
            return None
        noise = diff_sigma(values.tolist())
        if not math.isfinite(noise) or c - a < p.noise_k * math.hypot(median_se(noise, counts[0]),
                                                                       median_se(noise, counts[2])):
            return None
        _, t_values = series_values(total)
        if len(t_values) < 3:
            return None
        (ta, _, tc), _ = _thirds(t_values)
        if not tc < (1 - p.fall) * ta:
            return None
        return _Rise(s.name, (a, b, c), counts, (int(steps[0]), int(steps[-1])), float(values[-1]), total_name,
                     (ta, tc))


def _tokens(name: str) -> list[str]:
    return [t for t in _SPLIT.split(name.lower()) if t]
