"""Earlier attempts in one log: a crash that a later attempt ran past is history, not the run's state.

Requeued or relaunched jobs often append to the same file. Once run.restarted has seen the run start
again from its first steps, what went wrong before that restart belongs to an attempt that is over:
its critical findings stay in the report, lowered to warnings and marked as earlier, so that the
status tells how the latest attempt stands.
"""

from __future__ import annotations

from collections.abc import Iterable

from trainwatch.model import Alert, Severity
from trainwatch.rules import crash
from trainwatch.rules.base import RuleContext

RESTART_RULE = "run.restarted"


def lower_earlier(alerts: Iterable[Alert], source: str) -> None:
    """Critical findings of `source` dated before its last restart become warnings of an earlier attempt;
    not one seen again after that restart (the same error ended the latest attempt too)."""
    mine = [a for a in alerts if a.finding.source == source and not a.retracted]
    restarts = [int(a.finding.evidence.get("restart_line", 0)) for a in mine if a.rule == RESTART_RULE]
    if not restarts:
        return
    last = max(restarts)
    for a in mine:
        if a.severity >= Severity.CRITICAL and 0 < a.first_line < last and a.last_line < last:
            a.severity = Severity.WARNING
            a.finding.severity = Severity.WARNING
            note = f" (in an earlier attempt: the run was started again at line {last})"
            if note not in a.finding.message:
                a.finding.message = f"{a.finding.message}{note}"[:400]


def lower_before_training(alerts: Iterable[Alert], source: str, step: int | None) -> None:
    """Critical errors of `source` told before it logged any training step, in a log that then trained
    (to `step`): a launch that failed at once (rejected arguments, a missing device) and was launched
    again. They stay in the report as warnings of that earlier launch; the latest launch's state is
    what the status tells."""
    if step is None:
        return
    for a in alerts:
        if (a.finding.source == source and not a.retracted and a.severity >= Severity.CRITICAL
                and a.first_step is None and a.finding.step is None):
            a.severity = a.finding.severity = Severity.WARNING
            note = f" (before any training step: training then ran, to step {step})"
            if note not in a.finding.message:
                a.finding.message = f"{a.finding.message}{note}"[:400]


_CRASHES = crash.ROOT_ERRORS | crash.ECHO_PRONE
"""Errors that end a launch: a later launch can run past them. A loss that diverged is not one (its
training went on in the same launch, and what it did to the run is for the loss rules to tell)."""


def lower_ran_past(alerts: Iterable[Alert], source: str, ctx: RuleContext) -> None:
    """Critical errors of `source` after which its training went on, on later lines and to later steps,
    to the run's known last step (or its end-of-training summary): a launch that crashed and was resumed
    from a checkpoint, whose counter carries on instead of going back (so run.restarted saw no restart).
    The crash ended an attempt, not the run: it stays in the report as a warning of that attempt. A run
    that went on for a while but never finished is left as it is: buffered output printed after a crash
    can show steps past it too."""
    st = ctx.sources.get(source)
    s = ctx.store.get("loss", source)
    last = s.last if s is not None else None
    if st is None or last is None:
        return
    if not (st.ended or (st.total_steps and last.step >= st.total_steps - 1)):
        return
    for a in alerts:
        step = a.finding.step if a.finding.step is not None else a.first_step
        if (a.rule not in _CRASHES or a.finding.source != source or a.retracted or a.severity < Severity.CRITICAL
                or step is None
                or not 0 < a.first_line <= (a.last_line or a.first_line) < last.line or step >= last.step):
            continue
        a.severity = a.finding.severity = Severity.WARNING
        note = (f" (in an earlier attempt: training went on after it, to its last step {last.step} at "
                f"line {last.line})")
        if note not in a.finding.message:
            a.finding.message = f"{a.finding.message}{note}"[:400]


_ABOUT_ATTEMPTS = (RESTART_RULE, "resume.detected")  # findings about the attempts themselves


def name_attempts(alerts: Iterable[Alert], source: str) -> None:
    """In a log of several attempts that each count their steps from 0, a step names no point of the log
    by itself: step 3400 is in every attempt that got that far. A finding dated at a step says whose
    steps they are: of an earlier attempt (before the run was started again at line N), or, where its
    episodes fall on both sides of a restart, which steps belong to which attempt."""
    mine = [a for a in alerts if a.finding.source == source and not a.retracted]
    restarts = sorted({int(a.finding.evidence.get("restart_line", 0)) for a in mine if a.rule == RESTART_RULE} - {0})
    if not restarts:
        return
    for a in mine:
        if a.rule in _ABOUT_ATTEMPTS or a.first_step is None or a.first_line <= 0:
            continue
        starts = [(e.start_step, e.line or a.first_line) for e in a.episodes if e.start_step is not None]
        starts = starts or [(a.first_step, a.first_line)]
        lines = [line for _, line in starts] + [a.first_line, a.last_line or a.first_line]
        groups: dict[int, list[int]] = {}
        for step, line in starts:
            groups.setdefault(_attempt(restarts, line), []).append(step)
        spans = {_attempt(restarts, line) for line in lines}
        if len(spans) == 1:
            k = spans.pop()
            if k == len(restarts):
                continue  # the latest attempt: the steps a reader finds last in the log
            note = f" (in an earlier attempt: the run was started again at line {restarts[k]})"
        else:
            parts = [f"steps {', '.join(map(str, steps[:6]))}{', ...' if len(steps) > 6 else ''} "
                     f"{_which(restarts, k)}" for k, steps in sorted(groups.items())]
            note = f" (its steps are of different attempts: {'; '.join(parts)})"
        if "earlier attempt" not in a.finding.message and note not in a.finding.message:
            a.finding.message = f"{a.finding.message}{note}"[:600]


def _attempt(restarts: list[int], line: int) -> int:
    """Which attempt a line is in: 0 before the first restart, k after the k-th."""
    return sum(1 for r in restarts if line >= r)


def _which(restarts: list[int], k: int) -> str:
    if k == 0:
        return f"before the run was started again at line {restarts[0]}"
    if k == len(restarts):
        return f"after it was started again at line {restarts[-1]}"
    return f"between the restarts at lines {restarts[k - 1]} and {restarts[k]}"
