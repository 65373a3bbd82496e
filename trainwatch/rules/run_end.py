"""A run that stopped before its known total and said nothing: killed, preempted or hung.

Those deaths leave no traceback (SIGKILL, a node lost, a job out of time), so only the shape of the
log tells: a total it never reached, no end-of-training summary, no error, and a file that has not
grown for many of the run's own step intervals. Each part keeps it quiet where it would be wrong:
- no known total: nobody can say the run was meant to go further;
- an error or traceback in the log: that finding already says why it stopped;
- a file still growing (its quiet time is short next to its step interval): the run is alive;
- the last logged step within a couple of logging intervals of the total: it finished without a summary;
- a validation loss that stopped improving `patience` evaluations before the end: early stopping.

`check` knows how long the file has been quiet from its modification time (the `quiet_s` fact that
`check` sets for logs that grow; a whole-file snapshot such as trainer_state.json has none). `tail`
sees the quiet time itself, on its clock, since the last step arrived.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from trainwatch.model import Event, EventKind, Finding
from trainwatch.rules.base import Rule, RuleContext, SourceState, median
from trainwatch.store import Series
from trainwatch.timefmt import span
from trainwatch.rules.registry import register

SUBJECT = "run.ended_early"


@dataclass(frozen=True)
class EndedEarlyParams:
    """Parameters of run.ended_early; their meaning and defaults are in presets/base.yaml."""

    quiet_factor: float
    floor_s: float
    unlearned_s: float
    end_intervals: float
    end_fraction: float
    not_fatal: tuple[str, ...]
    patience: int


@register("run.ended_early")
class EndedEarly(Rule):
    id = "run.ended_early"
    params = EndedEarlyParams
    p: EndedEarlyParams
    events = (EventKind.ERROR, EventKind.TRACEBACK)
    ticks = True

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self._errors: set[str] = set()  # sources whose log says why they stopped
        self._benign = set(self.p.not_fatal)

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        if event.kind is EventKind.TRACEBACK or event.signature not in self._benign:
            self._errors.add(event.source)
        return None

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        state = ctx.sources.get(source)
        quiet = state.facts.get("quiet_s") if state else None
        if state is None or not isinstance(quiet, (int, float)):
            return ()
        f = self._judge(ctx, state, float(quiet))
        return (f,) if f is not None else ()

    def on_tick(self, ctx: RuleContext) -> Iterable[tuple[str, str, Finding | None]]:
        for name, state in ctx.sources.items():
            if state.last_progress_at is None or "quiet_s" in state.facts or state.phase != "train":
                continue  # an eval or checkpoint may be long: the stall rule judges those silences
            yield name, SUBJECT, self._judge(ctx, state, ctx.now - state.last_progress_at)

    def _judge(self, ctx: RuleContext, state: SourceState, quiet: float) -> Finding | None:
        total, step = state.total_steps, state.step
        if not total or step is None or state.ended or state.name in self._errors:
            return None
        if _stopped_by_patience(ctx, state.name, self.p.patience):
            return None
        series = _main_series(ctx, state.name)
        every = _log_every(series)
        if total - step <= max(self.p.end_intervals * every, self.p.end_fraction * total):
            return None  # it got to the end (or within a logging interval or two of it)
        interval = _time_interval(series)
        limit = self.p.unlearned_s if interval is None else max(self.p.quiet_factor * interval, self.p.floor_s)
        if state.phase != "train":
            limit = max(limit, self.p.unlearned_s)  # an evaluation or a checkpoint save may be long
        if quiet < limit:
            return None
        ev = {"step": step, "total_steps": total, "quiet_s": round(quiet, 1), "limit_s": round(limit, 1)}
        if interval is not None:
            ev["step_interval_s"] = round(interval, 3)
        return Finding(message=f"the run ended early at step {step} of {total} (killed, preempted or hung): "
                               f"no end-of-training summary, no error, and no new line for {span(quiet)}",
                       subject=SUBJECT, evidence=ev, step=step)


def _stopped_by_patience(ctx: RuleContext, source: str, patience: int) -> bool:
    """Whether the validation loss stopped improving `patience` evaluations before the end: early
    stopping ends a run short of its total on purpose, and not every framework says so."""
    ev = ctx.store.get("eval_loss", source)
    if ev is None:
        return False
    vals = [p.value for p in ev.recent if p.value == p.value]
    if len(vals) <= patience:
        return False
    best = vals.index(min(vals))
    return len(vals) - 1 - best >= patience


def _main_series(ctx: RuleContext, source: str) -> Series | None:
    """The loss when the log has one, else its longest series: the one that marks the steps."""
    best = ctx.store.get("loss", source)
    if best is not None:
        return best
    for s in ctx.store:
        if s.source == source and (best is None or s.count > best.count):
            best = s
    return best


def _log_every(series: Series | None) -> float:
    """Steps between two logged points (the logging interval), 1 when unknown."""
    if series is None:
        return 1.0
    pts = list(series.recent)[-64:]
    gaps = [b.step - a.step for a, b in zip(pts, pts[1:]) if b.step > a.step]
    return median([float(g) for g in gaps]) if gaps else 1.0


def _time_interval(series: Series | None) -> float | None:
    """Seconds between two logged points, from the log's own timestamps; None when it has none."""
    if series is None:
        return None
    pts = [p for p in list(series.recent)[-64:] if p.time is not None]
    gaps = [b.time - a.time for a, b in zip(pts, pts[1:])  # type: ignore[operator]
            if b.step > a.step and b.time >= a.time]  # type: ignore[operator]
    return median(gaps) if len(gaps) >= 2 else None
