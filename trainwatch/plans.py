"""What a source's log says of the run's planned length: the total in its unit and how far it got.

The PLAN events of trainwatch/adapters/plans.py land here, on the source's state, where rules read them
(run.ended_early) and the report shows them. Nothing here judges: a plan is only what the log said.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from trainwatch.model import Event


@dataclass(slots=True)
class Plan:
    """A planned total in one unit (`step`, `epoch`, `kimg`), the line that set it, and the highest value
    the run's own counter in that unit reached since (None when the log prints no such counter)."""

    unit: str
    total: int
    since: int
    declared: str = ""
    reached: int | None = None
    previous: int | None = None
    """The total this unit's plan had before this line set it again (None: the first in its unit)."""

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.total, "unit": self.unit, "line": self.since, "reached": self.reached}


MAX_STOPS = 1000  # early stops kept per source: a log of more trainings than that is not judged by them


class PlanState(Protocol):
    """What of a source's state (trainwatch.rules.base.SourceState) plans read and write: named here, so plans
    stay below the rules that read them."""

    early_stop: dict[str, Any] | None
    stops: list[int]
    plans: dict[str, Plan]


def note(state: PlanState, e: Event) -> None:
    """Puts a PLAN event on the source's state: an early stop, or the newest plan of its unit."""
    f = e.fields
    if f.get("early_stop"):
        if state.early_stop is None:
            state.early_stop = {"line": e.line, "step": e.step, "text": e.text}
        if len(state.stops) < MAX_STOPS:
            state.stops.append(e.line)
        return
    unit, total, since = f.get("unit"), f.get("total"), f.get("since")
    if not isinstance(unit, str) or not isinstance(total, int) or total <= 0 or not isinstance(since, int):
        return
    reached = f.get("reached")
    before = state.plans.get(unit)
    state.plans[unit] = Plan(unit, total, since, str(f.get("declared") or ""),
                             reached if isinstance(reached, int) else None,
                             before.total if before is not None else None)


def latest(state: PlanState) -> Plan | None:
    """The plan set last in the log, whatever its unit: the latest launch's total applies."""
    return max(state.plans.values(), key=lambda p: p.since, default=None)


def replanned(state: PlanState | None, after_line: int, before_line: int) -> Plan | None:
    """The plan the log set between two lines, if any: a relaunch that changed its length (detectron2's
    MAX_ITER, HF's max_steps) builds its LR schedule for the new length, so an LR that differs from the
    checkpoint's there is what the new config asked for. The same total printed again (a relaunch that
    dumps its unchanged config) changed nothing, so it is no new plan."""
    if state is None:
        return None
    return next((p for p in state.plans.values()
                 if after_line < p.since < before_line and p.previous != p.total), None)
