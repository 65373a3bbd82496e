"""An array rule may withdraw what it reported: the engine applies each withdrawal at its row, between
the alert transitions before and after it, as the row engine applies a `Retraction`."""

from __future__ import annotations

import numpy as np

from trainwatch import config
from trainwatch.engine import Engine
from trainwatch.model import AlertState, Finding, Retraction, Sample
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.store import Point, Series


class _High(ArrayRule):
    """Holds above 1; a value of -1 says the last report was wrong."""

    id = "loss.plateau"  # borrows a preset spec
    watches = ("loss",)

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        return w.new > 1

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        return Finding(message=f"high at {int(w.step[row])}", evidence={"value": float(w.value[row])})

    def retractions(self, ctx: RuleContext, w: Window) -> list[tuple[int, str]]:
        return [(w.start + int(i), f"wrong, said at {int(w.step[w.start + i])}") for i in np.flatnonzero(w.new == -1)]


class _HighRows(Rule):
    """The same rule, one row at a time."""

    id = "loss.plateau"
    watches = ("loss",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | Retraction | None:
        if point.value == -1:
            return Retraction(f"wrong, said at {point.step}")
        return Finding(message=f"high at {point.step}", evidence={"value": point.value}) if point.value > 1 else None


def _run(rule: Rule, values: list[float], cuts: list[int] | None) -> list[dict]:
    cfg = config.load("sft")
    eng = Engine(cfg, clock=lambda: 0.0)
    eng.rules = [rule]
    recs = [Sample("loss", v, i + 1, source="s", line=i + 1) for i, v in enumerate(values)]
    if cuts is None:
        for r in recs:
            eng.feed(r)
    else:
        bounds = [0, *cuts, len(recs)]
        for lo, hi in zip(bounds, bounds[1:]):
            eng.feed_all(recs[lo:hi])
    eng.finish("s")
    return [a.to_dict() for a in eng.alerts()]


def test_a_withdrawal_resolves_the_alert_and_a_later_episode_stands() -> None:
    values = [0, 2, 2, 0, -1, 0, 2, 2, 0, 0]
    spec = config.load("sft").rules["loss.plateau"]
    want = _run(_HighRows(spec), values, None)
    got = _run(_High(spec), values, [])
    assert got == want
    assert _run(_High(spec), values, [5]) == want
    assert want[0]["retracted"] == ""  # the second episode, after the withdrawal, holds again
    assert want[0]["episode_count"] == 2


def test_a_withdrawal_of_the_last_episode_is_kept() -> None:
    values = [0, 2, 2, -1, 0]
    spec = config.load("sft").rules["loss.plateau"]
    want = _run(_HighRows(spec), values, None)
    got = _run(_High(spec), values, [])
    assert got == want
    assert got[0]["retracted"] == "wrong, said at 4" and got[0]["state"] == AlertState.RESOLVED.value
