"""Rules over arrays: a condition for every new row of a series at once, evidence only where it matters.

An `ArrayRule` is asked about a `Window`: the new rows of one series, after the `history` rows before
them that the rule declared it needs. It returns one boolean per new row, causal (row i looks only at
rows up to i), and trainwatch.lifecycle turns the column into pending/firing/resolved transitions.
`finding` is called only at the rows where a condition begins to hold, so the cost of evidence and
wording is paid per alert, not per row. Live mode runs the same code on windows of one or a few rows;
a check of a gigabyte runs it on thousands of rows at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.stats import fmt
from trainwatch.store import Series


@dataclass
class Window:
    """Rows of one series as arrays: `history` rows already judged, then the new ones from `start`."""

    name: str
    source: str
    step: np.ndarray  # int64
    value: np.ndarray  # float64
    line: np.ndarray  # int64
    inferred: np.ndarray  # bool
    start: int
    nan_before: int  # NaN values in the series before the window's first row
    inf_before: int

    @classmethod
    def of(cls, series: Series, new: int, history: int) -> Window:
        """The window for the `new` newest rows of `series` and up to `history` rows logged before them.
        Its arrays are read-only copies: a rule may keep them past the series' next append, and the rules
        of a series share one window in a round, so none may change what another reads."""
        step, value, line, inferred = (a.copy() for a in series.columns(history + new))
        for a in (step, value, line, inferred):
            a.flags.writeable = False
        nan = int(np.isnan(value).sum()) if series.nan_count else 0  # none in the series: none here
        inf = int(np.isinf(value).sum()) if series.inf_count else 0
        return cls(series.name, series.source, step, value, line, inferred,
                   max(0, len(value) - new), series.nan_count - nan, series.inf_count - inf)

    def said_at(self, row: int) -> tuple[float, str]:
        """The value logged at `row`, and that said with its step (the log's own number, whatever the
        batching: a median over the rows a window happens to hold would not be)."""
        v = float(self.value[row])
        return v, f"{fmt(v)} at step {int(self.step[row])}"

    @property
    def new(self) -> np.ndarray:
        """The values of the new rows."""
        return self.value[self.start:]

    def nan_count(self, row: int) -> int:
        """NaN values in the series up to and including `row` (an index into the window)."""
        return self.nan_before + int(np.isnan(self.value[:row + 1]).sum())

    def inf_count(self, row: int) -> int:
        return self.inf_before + int(np.isinf(self.value[:row + 1]).sum())


@runtime_checkable
class JudgesRecovery(Protocol):
    """A rule that says whether an alert that stopped holding recovered (`ArrayRule.unrecovered`). Every
    array rule does; a row rule may too (the row-at-a-time oracles of array rules do, so that a rule
    means the same in either form), and the engine asks it on the row its alert resolved on."""

    def unrecovered(self, w: Window, row: int, evidence: dict[str, Any]) -> str | None: ...


class ArrayRule(Rule):
    """Base for rules written over arrays. Subclasses set `id`, `watches` and `history`, and implement
    `condition` and `finding`."""

    history: ClassVar[int] = 0
    """Rows before the new ones that `condition` needs to judge the first new row."""

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        """One boolean per new row (len(w.new)): does the condition hold at that row?"""
        raise NotImplementedError

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        """The finding for an episode that begins at `row` (an index into the window's arrays)."""
        raise NotImplementedError

    def last_value(self, w: Window, row: int) -> float | None:
        """The value an alert shows as its latest while the condition holds at `row`."""
        return float(w.value[row])

    def unrecovered(self, w: Window, row: int, evidence: dict[str, Any]) -> str | None:
        """Why an alert that stopped holding at `row` did not recover, or None when it did. A rule that
        judges against a moving baseline (a spike over the recent median, a drop below the run's level)
        stops holding once the baseline has caught up with a level that never came back: that is not
        "resolved". `evidence` is the finding's, made where the episode began."""
        return None

    def retractions(self, ctx: RuleContext, w: Window) -> list[tuple[int, str]]:
        """(row, reason) where later data disproves what the rule reported, rows ascending (indices into
        the window, called after `condition`): the alert is withdrawn at that row, as a `Retraction`."""
        return []
