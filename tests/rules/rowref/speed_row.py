"""The row-at-a-time speed.drop, kept as the oracle its array port is proven against.

Throughput falling well below the run's own level (tokens/s, samples/s, step time)."""

from __future__ import annotations

import math
from typing import Any

from trainwatch.model import Finding
from trainwatch.rules.array import Window
from trainwatch.rules.base import Rule, RuleContext, median
from trainwatch.rules.speed import against
from trainwatch.rules.stats import fmt
from trainwatch.store import Point, Series

SLOWER_IS_HIGHER = {"step_time_ms"}


class SpeedDrop(Rule):
    """Each attempt of a log (the step counter went back: a relaunch, a resume) is judged on its own: the
    level and the warm-up `skip` count from its first point."""

    id = "speed.drop"
    watches = ("tokens_per_sec", "samples_per_sec", "steps_per_sec", "step_time_ms")

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._attempts: dict[tuple[str, str], tuple[Series, int, int]] = {}  # series, last step, finite before
        self._numbers: dict[tuple[str, str], tuple[int, int]] = {}  # attempts begun, the latest one's first step
        self._last: dict[tuple[str, str], int] = {}  # the attempt of the last finite point if the drop held there
        self._before: dict[tuple[str, str], int] = {}  # the same, for the finite point before the newest

    def _in_attempt(self, series: Series, point: Point) -> int:
        """The finite points of the series since its attempt began, this one included."""
        key = (series.source, series.name)
        was = self._attempts.get(key)
        if was is None or was[0] is not series or point.step < was[1]:
            before = series.finite_count - int(math.isfinite(point.value))
            self._numbers[key] = (self._numbers.get(key, (0, 0))[0] + 1, point.step)
        else:
            before = was[2]
        self._attempts[key] = (series, point.step, before)
        return series.finite_count - before

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        in_attempt = self._in_attempt(series, point)
        if not math.isfinite(point.value):
            return None
        key = (series.source, series.name)
        self._before[key] = self._last.get(key, -1)
        found = self._judge(series, point, in_attempt)
        self._last[key] = self._numbers[key][0] if found is not None else -1
        return found

    def _judge(self, series: Series, point: Point, in_attempt: int) -> Finding | None:
        recent_n, window = self.p.recent, self.p.window
        usable = in_attempt - self.p.skip  # the first points of each attempt are warm-up
        if usable < max(self.p.min_history, recent_n + 3):
            return None
        vals = series.tail_values(min(usable, window + recent_n))  # the values of tail(), copied at C speed
        if len(vals) <= recent_n:
            return None
        base = median(vals[-(window + recent_n):-recent_n])
        now = median(vals[-recent_n:])
        if base <= 0 or now <= 0:
            return None
        drop = self.p.drop
        slower = now > base / drop if series.name in SLOWER_IS_HIGHER else now < base * drop
        if not slower:
            return None
        steps, values = series.tail_columns(recent_n)  # where the drop began: the first slow recent point
        slow = [v > base / drop if series.name in SLOWER_IS_HIGHER else v < base * drop for v in values.tolist()]
        first = slow.index(True)
        began, began_value = int(steps[first]), float(values[first])
        moved = "rose" if series.name in SLOWER_IS_HIGHER else "fell"
        rel, means = against(now, base, series.name in SLOWER_IS_HIGHER)
        return Finding(message=f"{series.name} {moved} to {fmt(began_value)} at step {began}; the median of the last "
                               f"{self.p.recent} {series.name} points, {fmt(now)}, is {rel} the run's own level, "
                               f"the median of the points before: {fmt(base)}{means}",
                       began_step=began,
                       evidence={"metric": series.name, "value": now, "baseline": base, "ratio": now / base,
                                 "step": point.step, "last_value": now,
                                 "value_stat": f"median of the last {self.p.recent} points",
                                 "last_stat": f"median of the last {self.p.recent} points",
                                 "began_step": began, "began_value": began_value})

    def unrecovered(self, w: Window, row: int, evidence: dict[str, Any]) -> str | None:
        """The row the alert resolved on, against the level the drop was found below: a speed still past
        `drop` of that level stopped being a drop only because the level (a median) moved to it."""
        key = (w.source, w.name)
        number, began = self._numbers[key]
        if 0 <= self._before.get(key, -1) != number:  # it held until its attempt ended
            return (f"{w.name} was still slow when its attempt ended (the run was started again at step "
                    f"{began}, and each attempt is judged on its own)")
        base = evidence.get("baseline")
        if not isinstance(base, (int, float)) or not base > 0:
            return None
        v, step = float(w.value[row]), int(w.step[row])
        back = v <= base / self.p.drop if w.name in SLOWER_IS_HIGHER else v >= self.p.drop * base
        if back:
            return None
        return (f"{w.name} did not come back: {fmt(v)} at step {step} against the run's level before the drop, "
                f"the median of the points before it ({fmt(base)}); that level moved to the slow speed")
