"""Earlier attempts in one log: a crash that a later attempt ran past is history, not the run's state.

Requeued or relaunched jobs often append to the same file. Once run.restarted has seen the run start
again from its first steps, what went wrong before that restart belongs to an attempt that is over:
its critical findings stay in the report, lowered to warnings and marked as earlier, so that the
status tells how the latest attempt stands.
"""

from __future__ import annotations

from collections.abc import Iterable

from trainwatch.model import Alert, Severity

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
