"""A training that said it stopped itself because a monitored metric stopped improving.

Early stopping ends a run short of its planned total on purpose (Keras `Epoch 00012: early stopping`,
Lightning `... Signaling Trainer to stop.`, a script's own `Validation loss has not improved for 3
epochs. Stopping training.`). It is no failure, so run.ended_early stays silent on such a run; this
rule only says where it stopped and against which total, as an info.
"""

from __future__ import annotations

from collections.abc import Iterable

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext, SourceState
from trainwatch.rules.registry import register
from trainwatch.rules.run_end import where, where_text

SUBJECT = "run.early_stopped"


@register("run.early_stopped")
class EarlyStopped(Rule):
    id = "run.early_stopped"
    ticks = True

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        state = ctx.sources.get(source)
        f = _judge(ctx, state) if state is not None else None
        return (f,) if f is not None else ()

    def on_tick(self, ctx: RuleContext) -> Iterable[tuple[str, str, Finding | None]]:
        for name, state in ctx.sources.items():
            if state.early_stop is not None:
                yield name, SUBJECT, _judge(ctx, state)


def _judge(ctx: RuleContext, state: SourceState) -> Finding | None:
    stop = state.early_stop
    if stop is None:
        return None
    at = where(ctx, state)
    text = str(stop.get("text") or "")
    step, line = stop.get("step"), stop.get("line")
    if at is not None and at.plan is not None and isinstance(line, int) and at.plan.since > line:
        at = None  # a plan a later launch set (`Starting training for 1 epochs`) says nothing of this stop
    ev: dict[str, object] = {"text": text}
    if at is not None:
        unit, reached, total, _ = at
        ev.update(unit=unit, reached=reached, total=total)
        told = f"at {where_text(state, unit, reached, total)}"
    else:
        told = f"at step {step}" if isinstance(step, int) else "before its end"
    return Finding(message=f"the run stopped early by design {told}: {text}", subject=SUBJECT, evidence=ev,
                   step=step if isinstance(step, int) else None, line=line if isinstance(line, int) else 0)
