"""hang.dead_rank: among several rank logs, the one that crashed or stopped while the others wait.

In a distributed hang every rank's log goes quiet, but only one holds the cause. This rule names
that rank, with the file and the line of its error, so nobody reads the other ranks' NCCL timeouts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from trainwatch.model import GPU_SOURCE, Event, EventKind, Finding
from trainwatch.rules import crash
from trainwatch.rules.base import Rule, RuleContext, SourceState
from trainwatch.rules.registry import register
from trainwatch.rules.stall import StepClock
from trainwatch.rulespec import RuleSpec
from trainwatch.timefmt import span


@dataclass
class _Crash:
    line: int
    step: int | None
    text: str
    progress_at: float | None  # the rank's last progress when it crashed


@dataclass(frozen=True)
class DeadRankParams:
    """Parameters of hang.dead_rank; their meaning and defaults are in presets/base-live.yaml."""

    factor: float
    floor_s: float
    others_recent_s: float
    crash_wait_s: float
    fatal_signatures: tuple[str, ...]


@register("hang.dead_rank")
class DeadRank(Rule):
    id = "hang.dead_rank"
    params = DeadRankParams
    p: DeadRankParams
    events = (EventKind.TRACEBACK, EventKind.ERROR, EventKind.EVAL_START, EventKind.CHECKPOINT)
    ticks = True

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.steps = StepClock()
        self.crashes: dict[str, _Crash] = {}

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        if event.kind in (EventKind.EVAL_START, EventKind.CHECKPOINT):
            self.steps.event(ctx, event)
            return None
        if event.source == GPU_SOURCE or event.source in self.crashes or crash.handled(event):
            return None
        if event.kind is EventKind.ERROR and event.signature not in self._fatal():
            return None
        st = ctx.sources.get(event.source)
        if event.kind is EventKind.TRACEBACK:
            exc = event.fields.get("exception") or ""
            msg = event.fields.get("message") or ""
            text = f"{exc}: {msg}".strip(": ") if exc else (event.text.strip().splitlines() or [""])[-1]
        else:
            text = event.text.strip().splitlines()[0] if event.text.strip() else event.signature
        self.crashes[event.source] = _Crash(event.line, event.step, text[:300],
                                            st.last_progress_at if st else None)
        return None

    def _fatal(self) -> set[str]:
        return set(self.p.fatal_signatures)

    def on_tick(self, ctx: RuleContext) -> Iterable[tuple[str, str, Finding | None]]:
        self.steps.observe(ctx)
        ranks = {n: st for n, st in ctx.sources.items() if n != GPU_SOURCE and st.last_progress_at is not None}
        if len(ranks) < 2:
            return ()
        out: list[tuple[str, str, Finding | None]] = []
        for name, st in ranks.items():
            crash = self.crashes.get(name)
            if crash is not None and st.last_progress_at != crash.progress_at:
                del self.crashes[name]  # it went on: the error was not fatal
                crash = None
            finding = self._crashed(ctx, name, st, crash, ranks) if crash else self._behind(ctx, name, st, ranks)
            out.append((name, self.spec.id, finding))
        return out

    def _crashed(self, ctx: RuleContext, name: str, st: SourceState, crash: _Crash,
                 ranks: dict[str, SourceState]) -> Finding | None:
        others = [s for n, s in ranks.items() if n != name and not s.ended]
        if not others or st.ended:
            return None
        quiet = min(ctx.now - s.last_progress_at for s in others)  # type: ignore[operator]
        if quiet < self.p.crash_wait_s:
            return None
        label = _label(name, st)
        return Finding(message=f"{label} failed at {name}:{crash.line}: {crash.text} -- the other "
                               f"{len(others)} rank(s) have made no progress for {span(quiet)}",
                       step=crash.step, line=crash.line, subject=name,
                       evidence={"rank_source": name, "file": name, "line": crash.line, "error": crash.text,
                                 "others_silent_s": round(quiet, 1)})

    def _behind(self, ctx: RuleContext, name: str, st: SourceState,
                ranks: dict[str, SourceState]) -> Finding | None:
        if st.ended or st.phase != "train":
            return None
        typical = self.steps.typical(name)
        limit = max(self.p.factor * typical if typical else 0.0, self.p.floor_s)
        silent = ctx.now - st.last_progress_at  # type: ignore[operator]
        if silent < limit:
            return None
        recent = self.p.others_recent_s
        moving = [(n, s) for n, s in ranks.items()
                  if n != name and ctx.now - s.last_progress_at <= recent]  # type: ignore[operator]
        if not moving:
            return None
        lead = max((s.step or 0) for _, s in moving)
        label = _label(name, st)
        last = st.last_line.strip()[:160]
        line = st.lines or max((s.recent[-1].line for s in ctx.store if s.source == name and s.recent), default=0)
        msg = (f"{label} stopped at step {st.step} ({name}:{line}) {span(silent)} ago while "
               f"{len(moving)} other rank(s) went on to step {lead}")
        return Finding(message=msg + (f"; last line: {last}" if last else ""),
                       step=st.step, line=line, subject=name,
                       evidence={"rank_source": name, "file": name, "line": line, "silent_s": round(silent, 1),
                                 "others_step": lead, "last_line": last})


def _label(name: str, st: SourceState) -> str:
    label = st.facts.get("label")
    return str(label) if label else name
