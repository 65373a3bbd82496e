"""A run that stopped before its known total and said nothing: killed, preempted or hung.

Those deaths leave no traceback (SIGKILL, a node lost, a job out of time), so only the shape of the
log tells: a total it never reached, no end-of-training summary, no error, and a file that has not
grown for many of the run's own step intervals. The total is the adapter's step total (`N/M` steps, a
banner) or else the plan the log set last (trainwatch/plans.py: `max_epochs=30`, `Epoch [7/200]`,
`MAX_ITER: 18500`, `Training for 200000 kimg`), compared with the run's counter in the plan's own unit.
Each part keeps it quiet where it would be wrong:
- no known total, or no counter in its unit: nobody can say the run was meant to go further;
- an error or traceback in the log: that finding already says why it stopped;
- a file still growing (its quiet time is short next to its step interval): the run is alive;
- the last logged step within a couple of logging intervals of the total: it finished without a summary;
- a validation loss that stopped improving a few evaluations before the end: early stopping;
- a line that says the training stopped itself (an early-stopping callback): by design, and
  run.early_stopped says so.

A scheduler's job report at the end of the file (seff's `Job Wall-clock time:` in a Slurm epilogue)
says the job is over, total or not: a run of a format whose trainer always prints an
end-of-training summary (`summary_formats`: the HF Trainer's `train_runtime` dict) that logged its
learning rate and ends in that report without the summary and without an error was stopped from outside
(a time limit whose message went to the .err file, a cancel) or died with its error in another file.

`check` knows how long the file has been quiet from its modification time (the `quiet_s` fact that
`check` sets for logs that grow; a whole-file snapshot such as trainer_state.json has none). `tail`
sees the quiet time itself, on its clock, since the last step arrived.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from trainwatch.model import Event, EventKind, Finding
from trainwatch.plans import Plan
from trainwatch.rules import crash
from trainwatch.rules.base import Rule, RuleContext, SourceState, median
from trainwatch.rules.registry import register
from trainwatch.rulespec import RuleSpec
from trainwatch.store import Series
from trainwatch.timefmt import span

SUBJECT = "run.ended_early"


@dataclass(frozen=True)
class EndedEarlyParams:
    """Parameters of run.ended_early; their meaning and defaults are in presets/base.yaml."""

    quiet_factor: float
    floor_s: float
    unlearned_s: float
    end_intervals: float
    end_fraction: float
    end_units: float
    not_fatal: tuple[str, ...]
    patience: int
    patience_max: int
    job_over: tuple[str, ...]
    summary_formats: tuple[str, ...]


@register("run.ended_early")
class EndedEarly(Rule):
    id = "run.ended_early"
    params = EndedEarlyParams
    p: EndedEarlyParams
    events = (EventKind.ERROR, EventKind.TRACEBACK)
    ticks = True

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._errors: set[str] = set()  # sources whose log says why they stopped
        self._benign = set(self.p.not_fatal)
        self._over: dict[str, int] = {}  # source -> the line of the scheduler's report that the job is over

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        if event.kind is EventKind.ERROR and event.signature in self.p.job_over:
            self._over.setdefault(event.source, event.line)
            return None
        if crash.handled(event):
            return None  # the program went on after it: no reason it stopped
        if event.kind is EventKind.TRACEBACK or event.signature not in self._benign:
            self._errors.add(event.source)
        return None

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        state = ctx.sources.get(source)
        if state is None:
            return ()
        quiet = state.facts.get("quiet_s")  # none for a whole-file snapshot: never quiet long enough
        f = self._judge(ctx, state, float(quiet) if isinstance(quiet, (int, float)) else 0.0)
        return (f,) if f is not None else ()

    def on_tick(self, ctx: RuleContext) -> Iterable[tuple[str, str, Finding | None]]:
        for name, state in ctx.sources.items():
            if state.last_progress_at is None or "quiet_s" in state.facts or state.phase != "train":
                continue  # an eval or checkpoint may be long: the stall rule judges those silences
            yield name, SUBJECT, self._judge(ctx, state, ctx.now - state.last_progress_at)

    def _judge(self, ctx: RuleContext, state: SourceState, quiet: float) -> Finding | None:
        if state.ended or state.name in self._errors:
            return None  # an error's finding says why it stopped (a kill, a time limit, a crash)
        if state.early_stop is not None:
            return None  # stopped by design (run.early_stopped tells where)
        # a trainer that stops itself early (a patience callback) still prints its summary
        summary = self._no_summary(ctx, state)
        if summary is None and _stopped_by_patience(ctx, state.name, self.p.patience, self.p.patience_max):
            return None  # stopped by design, though the log did not say so
        at = where(ctx, state)
        if at is None:
            return summary
        unit, reached, total, plan = at
        series = _main_series(ctx, state.name)
        # a counter of epochs (or kimg) may count from 0: its last value is then total - 1
        slack = self.p.end_intervals * _log_every(series) if unit == "step" else self.p.end_units
        if total - reached <= max(slack, self.p.end_fraction * total):
            return summary  # it got to the end (or within a logging interval or two of it)
        interval = _time_interval(series)
        limit = self.p.unlearned_s if interval is None else max(self.p.quiet_factor * interval, self.p.floor_s)
        if state.phase != "train":
            limit = max(limit, self.p.unlearned_s)  # an evaluation or a checkpoint save may be long
        if quiet < limit:
            return summary  # quiet for too short a time to tell, unless the job's report says it is over
        step = state.step
        ev: dict[str, object] = {"step": step}
        if plan is None:
            ev["total_steps"] = total
        else:
            ev.update(unit=unit, reached=reached, total=total, total_line=plan.since, total_text=plan.declared)
        ev.update(quiet_s=round(quiet, 1), limit_s=round(limit, 1))
        if interval is not None:
            ev["step_interval_s"] = round(interval, 3)
        at_text = where_text(state, unit, reached, total)
        return Finding(message=f"the run ended early at {at_text}, killed, preempted or hung: "
                               f"no end-of-training summary, no error, and no new line for {span(quiet)}",
                       subject=SUBJECT, evidence=ev, step=step, line=state.lines)


    def _no_summary(self, ctx: RuleContext, state: SourceState) -> Finding | None:
        """The job's report says it is over, and a trainer that always ends with a summary printed none."""
        over = self._over.get(state.name)
        if over is None or state.format not in self.p.summary_formats or ctx.store.get("lr", state.name) is None:
            return None
        step = state.step
        at = f" after step {step}" if step is not None else ""
        return Finding(message=f"the job ended{at} (the scheduler's job report at line {over}) before the "
                               f"training did: no end-of-training summary and no error in this log, so it was "
                               f"stopped from outside (a time limit, a cancel) or its error went to another "
                               f"file (the job's .err)",
                       subject=SUBJECT, evidence={"step": step, "report_line": over}, step=step, line=over)


class At(NamedTuple):
    """Where a run got to against its total, in one unit; `plan` is None for the adapter's step total."""

    unit: str
    reached: float
    total: float
    plan: Plan | None


def where(ctx: RuleContext, state: SourceState) -> At | None:
    """How far the run got against its total: the adapter's step total when it read one, else the
    latest plan the log set whose unit has a counter to compare with (a plan with none, such as a
    dataset's `total number of epochs` printed after the real total, is passed over)."""
    if state.total_steps:
        return None if state.step is None else At("step", float(state.step), float(state.total_steps), None)
    for plan in sorted(state.plans.values(), key=lambda p: p.since, reverse=True):
        reached = _reached(ctx, state, plan)
        if reached is not None:
            return At(plan.unit, reached, float(plan.total), plan)
    return None


def _reached(ctx: RuleContext, state: SourceState, plan: Plan) -> float | None:
    """The run's counter in the plan's unit: the step for steps, else the counter the plan reader saw,
    else a series of the unit's name that the metric adapter read (`kimg 45243.5`, `epoch: 3`)."""
    if plan.unit == "step":
        return None if state.step is None else float(state.step)
    if plan.reached is not None:
        return float(plan.reached)
    s = ctx.store.get(plan.unit, state.name)
    last = s.last if s is not None else None
    return last.value if last is not None and last.value == last.value else None


def where_text(state: SourceState, unit: str, reached: float, total: float) -> str:
    """`step 370 of 10000`, or `epoch 27 of 100 (step 21895)` for a total in another unit."""
    text = f"{unit} {_num(reached)} of {_num(total)}"
    if unit != "step" and state.step is not None:
        text += f" (step {state.step})"
    return text


def _num(x: float) -> str:
    return str(int(x)) if x.is_integer() else f"{x:g}"


def _stopped_by_patience(ctx: RuleContext, source: str, patience: int, most: int) -> bool:
    """Whether the validation loss stopped improving between `patience` and `most` evaluations before
    the end: early stopping ends a run short of its total on purpose, and not every framework says so.
    A callback stops a few evaluations after the best, so a loss whose best is far behind (one that
    never improved after its first evaluation, 27 epochs on) was not stopped by one. An evaluation is
    a step: a log that prints its eval loss on several lines at one step counts that step once."""
    ev = ctx.store.get("eval_loss", source)
    if ev is None:
        return False
    by_step: dict[int, float] = {}
    for p in ev.recent:
        if p.value == p.value:
            by_step[p.step] = p.value  # the last line of an evaluation holds its final value
    vals = list(by_step.values())
    if len(vals) <= patience:
        return False
    best = vals.index(min(vals))
    return patience <= len(vals) - 1 - best <= most


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
