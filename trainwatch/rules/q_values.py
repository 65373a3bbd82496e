"""rl.q_divergence: a value-based learner's Q-value estimates growing without bound.

DQN and its kin bootstrap their targets from their own estimates; with function approximation and
off-policy data that loop can feed itself (the "deadly triad"), and the Q-values then grow by orders of
magnitude while the rewards stay where they were. Nothing is NaN for a long time, the reward may even look
flat rather than bad, so a run that only watches its reward and loss misses it. A healthy learner's Q-values
also grow, from about 0 at the start to the scale of the discounted return, but they level off: most of the
growth is early. So the rule asks for growth that goes on: the medians of |Q| over the run's first, middle
and last thirds each at least `growth` times the one before, and the last at least `factor` times the level
the run started at (the median of its first `baseline` points, or `floor` if that is smaller: a start at
about 0 gives no ratio). Judged once the run has ended, on every series named as a Q estimate (`mean_q`,
`max_q`, `q_value`, `Avg Q`, a policy's `player_0/mean_q`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.quality_series import series_values
from trainwatch.rules.registry import register
from trainwatch.rules.stats import fmt
from trainwatch.store import Series

_TOKENS = re.compile(r"[^a-z0-9]+")
# the words a Q estimate's name is made of, besides the `q` itself (`mean_q`, `q_max`, `Avg Q value`)
Q_WORDS = frozenset({"mean", "max", "min", "avg", "average", "value", "values", "estimate", "estimates", "pred",
                     "predicted", "target"})


def is_q_estimate(name: str) -> bool:
    """Whether a series' name (its last path part) says it is a Q-value estimate, not its loss or its error."""
    tokens = [t for t in _TOKENS.split(name.rsplit("/", 1)[-1].lower()) if t]
    return "q" in tokens and all(t == "q" or t in Q_WORDS for t in tokens)


@dataclass(frozen=True)
class QDivergenceParams:
    """Parameters of rl.q_divergence; their meaning and defaults are in presets/base.yaml."""

    min_points: int
    baseline: int
    growth: float
    factor: float
    floor: float


@dataclass(frozen=True)
class _Growth:
    name: str
    thirds: tuple[float, float, float]
    count: int  # points per third (the last may hold one or two more)
    start: float
    first_step: int
    last_step: int
    last: float


@register("rl.q_divergence")
class QDivergence(Rule):
    """|Q| thirds' medians each `growth` times the one before, the last `factor` times the start."""

    id = "rl.q_divergence"
    params = QDivergenceParams
    p: QDivergenceParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        found = [g for s in ctx.store if s.source == source and is_q_estimate(s.name)
                 and (g := self._growth(s)) is not None]
        if not found:
            return []
        g = min(found, key=lambda x: _central(x.name))  # the mean estimate tells the story; max and min follow
        a, b, c = g.thirds
        msg = (f"{g.name} kept growing by orders of magnitude: |{g.name}| {fmt(a)} -> {fmt(b)} -> {fmt(c)} (the "
               f"medians of the run's first, middle and last thirds, about {g.count} points each, steps "
               f"{g.first_step}-{g.last_step}), from {fmt(g.start)} at the start (the median of its first "
               f"{min(self.p.baseline, g.count)} points); {fmt(g.last)} at the last step {g.last_step}: the value "
               f"estimates are diverging (each TD target is built from them, so the error feeds itself)")
        others = [x.name for x in found if x is not g]
        if others:
            msg += f" (also: {', '.join(others[:4])})"
        return [Finding(message=msg, step=g.first_step, began_step=g.first_step, subject=g.name,
                        evidence={"metric": g.name, "first_third": a, "middle_third": b, "last_third": c,
                                  "value_stat": "median of |value| over a third of the run", "start": g.start,
                                  "start_stat": f"median of |value| over the first {self.p.baseline} points",
                                  "also": others, "detected_step": g.last_step, "last_value": g.last,
                                  "last_step": g.last_step})]

    def _growth(self, s: Series) -> _Growth | None:
        p = self.p
        steps, values = series_values(s)
        n = len(values)
        if n < max(p.min_points, 2 * p.baseline, 6):
            return None
        mag = np.abs(values)
        cuts = [0, n // 3, 2 * n // 3, n]
        a, b, c = (median(mag[cuts[i]:cuts[i + 1]].tolist()) for i in range(3))
        start = median(mag[:p.baseline].tolist())
        if not (b >= p.growth * max(a, 1e-12) and c >= p.growth * b and c >= p.factor * max(start, p.floor)):
            return None
        return _Growth(s.name, (a, b, c), n // 3, start, int(steps[0]), int(steps[-1]), float(values[-1]))


def _central(name: str) -> int:
    """0 for a mean estimate, 1 for another (a bare `q_value`), 2 for an extreme (`max_q`, `min_q`)."""
    tokens = set(_TOKENS.split(name.rsplit("/", 1)[-1].lower()))
    return 0 if tokens & {"mean", "avg", "average"} else 2 if tokens & {"max", "min"} else 1
