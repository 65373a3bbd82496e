"""hang.stall: no new step for far longer than this run's own step interval.

The typical interval is learned from the run itself (median of recent intervals between new steps),
leaving out intervals that held an evaluation or a checkpoint; those phases get their own allowance,
learned the same way. A run that has ended (TRAIN_END, or a crash traceback with no step after it)
is never called stalled. Time is the engine's clock, so tests run hours in microseconds.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from trainwatch.model import GPU_SOURCE, Event, EventKind, Finding, Severity
from trainwatch.rules import crash
from trainwatch.rules.base import Rule, RuleContext, SourceState, median
from trainwatch.rules.params import SilenceParams
from trainwatch.rules.registry import register
from trainwatch.rulespec import RuleSpec
from trainwatch.timefmt import span


@dataclass
class _Learned:
    last_progress: float | None = None
    intervals: deque[float] = field(default_factory=lambda: deque(maxlen=64))
    phase_started: float | None = None  # clock time the current eval/checkpoint phase began
    phase_seen: bool = False  # the interval now running held an eval or checkpoint
    phase_name: str = "eval"
    phase_durations: dict[str, float] = field(default_factory=dict)  # longest seen, per phase
    crashed: bool = False


class StepClock:
    """Learns each source's step interval from the engine's SourceState, tick by tick."""

    def __init__(self, history: int = 64) -> None:
        self.by_source: dict[str, _Learned] = {}
        self.history = history

    def observe(self, ctx: RuleContext) -> None:
        for name, st in ctx.sources.items():
            if name == GPU_SOURCE or st.last_progress_at is None:
                continue
            k = self.by_source.get(name)
            if k is None:
                k = self.by_source[name] = _Learned(intervals=deque(maxlen=self.history))
            if st.phase != "train":
                k.phase_name, k.phase_seen = st.phase, True
                if k.phase_started is None:
                    k.phase_started = ctx.now
            if k.last_progress != st.last_progress_at:
                if k.last_progress is not None:
                    gap = st.last_progress_at - k.last_progress
                    if k.phase_seen:
                        self._phase_done(k, st.last_progress_at)
                    elif gap > 0:
                        k.intervals.append(gap)
                k.last_progress = st.last_progress_at
                k.phase_started, k.phase_seen, k.crashed = None, False, False

    def event(self, ctx: RuleContext, e: Event) -> None:
        k = self.by_source.get(e.source)
        if k is None:
            k = self.by_source[e.source] = _Learned(intervals=deque(maxlen=self.history))
        if e.kind in (EventKind.EVAL_START, EventKind.CHECKPOINT):
            if k.phase_started is None:
                k.phase_started = ctx.now
            k.phase_seen = True
            k.phase_name = "eval" if e.kind is EventKind.EVAL_START else "checkpoint"
        elif e.kind is EventKind.TRACEBACK and not crash.handled(e):
            k.crashed = True

    def _phase_done(self, k: _Learned, at: float) -> None:
        if k.phase_started is None:
            return
        took = at - k.phase_started
        k.phase_durations[k.phase_name] = max(k.phase_durations.get(k.phase_name, 0.0), took)

    def typical(self, source: str) -> float | None:
        k = self.by_source.get(source)
        if k is None or not k.intervals:
            return None
        return median(list(k.intervals))

    def samples(self, source: str) -> int:
        k = self.by_source.get(source)
        return len(k.intervals) if k else 0

    def crashed(self, source: str) -> bool:
        k = self.by_source.get(source)
        return bool(k and k.crashed)

    def phase_allowance(self, source: str, phase: str) -> float:
        k = self.by_source.get(source)
        return k.phase_durations.get(phase, 0.0) if k else 0.0


@dataclass
class Silence:
    source: str
    seconds: float
    typical: float | None
    warn_after: float
    crit_after: float
    phase: str


def judge_silence(clock: StepClock, ctx: RuleContext, source: str, st: SourceState,
                  p: StallParams) -> Silence | None:
    """How long `source` has been silent and its thresholds; None when it cannot be stalled."""
    if source == GPU_SOURCE or st.ended or st.last_progress_at is None or clock.crashed(source):
        return None
    typical = clock.typical(source)
    if typical is None or clock.samples(source) < p.min_intervals:
        base_warn, base_crit = p.unlearned_warn_s, p.unlearned_crit_s  # not learned yet
    else:
        base_warn = max(p.warn_factor * typical, p.warn_floor_s)
        base_crit = max(p.crit_factor * typical, p.crit_floor_s)
    phase = st.phase
    if phase != "train":
        allowance = max(clock.phase_allowance(source, phase) * p.phase_factor, p.phase_floor_s)
        base_warn += allowance
        base_crit += allowance
    return Silence(source, ctx.now - st.last_progress_at, typical, base_warn, base_crit, phase)


@dataclass(frozen=True)
class StallParams(SilenceParams):
    """hang.stall: the warning's limits (shared with the GPU stall rules), the critical alert's, and the
    allowance for an eval or a checkpoint; values in presets/base-live.yaml."""

    crit_factor: float
    crit_floor_s: float
    unlearned_crit_s: float
    phase_factor: float
    phase_floor_s: float


@register("hang.stall")
class StallRule(Rule):
    id = "hang.stall"
    params = StallParams
    p: StallParams
    events = (EventKind.EVAL_START, EventKind.CHECKPOINT, EventKind.TRACEBACK)
    ticks = True

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.clock = StepClock()

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        self.clock.event(ctx, event)
        return None

    def on_tick(self, ctx: RuleContext) -> Iterable[tuple[str, str, Finding | None]]:
        self.clock.observe(ctx)
        out: list[tuple[str, str, Finding | None]] = []
        for name, st in ctx.sources.items():
            if name == GPU_SOURCE:
                continue
            s = judge_silence(self.clock, ctx, name, st, self.p)
            warn = crit = None
            if s is not None and s.seconds >= s.warn_after:
                warn = self._finding(s, st, Severity.WARNING)
                if s.seconds >= s.crit_after:
                    crit = self._finding(s, st, Severity.CRITICAL)
            out.append((name, "warning", warn))
            out.append((name, "critical", crit))
        return out

    def _finding(self, s: Silence, st: SourceState, severity: Severity) -> Finding:
        usual = f"usual interval {span(s.typical)}" if s.typical is not None else "interval not learned yet"
        where = f" during {s.phase}" if s.phase != "train" else ""
        last = st.last_line.strip()
        msg = f"no new step for {span(s.seconds)}{where} after step {st.step} ({usual})"
        if last:
            msg += f"; last line: {last[:160]}"
        return Finding(message=msg, step=st.step, line=st.lines, subject=severity.label, severity=severity,
                       evidence={"silence_s": round(s.seconds, 1), "typical_s": s.typical, "phase": s.phase,
                                 "warn_after_s": round(s.warn_after, 1), "crit_after_s": round(s.crit_after, 1),
                                 "last_line": last[:300], "lines": st.lines})
