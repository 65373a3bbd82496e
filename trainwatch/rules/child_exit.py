"""The training command `trainwatch run` started has ended badly: a non-zero exit code, or a signal.

Only `run` knows this for certain, because it is the parent: it feeds the end as a TRAIN_END event
whose fields carry the exit code or the signal (an adapter's end-of-training summary carries neither
and is ignored here). The event also marks the source ended, so the stall rules never call a dead
run "stalled". A signal that trainwatch itself sent (the user's Ctrl-C or SIGTERM forwarded, or
--exit-on stopping the run) was asked for, and is told as info.
"""

from __future__ import annotations

import signal

from trainwatch.model import Event, EventKind, Finding, Severity
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.registry import register

SUBJECT = "run.child_exit"
SIGNAL_FIXES = {
    signal.SIGKILL.name: ("A SIGKILL nobody sent by hand is most often the kernel's OOM killer: "
                          "look for 'Killed process' in dmesg or journalctl -k, then lower host memory use "
                          "(fewer DataLoader workers, smaller prefetch, no full dataset in RAM)",),
    signal.SIGSEGV.name: ("A segmentation fault is a crash in native code: rerun with "
                          "PYTHONFAULTHANDLER=1 to see the Python stack where it happened",),
    signal.SIGTERM.name: ("A SIGTERM from outside is usually the scheduler (time limit, preemption): "
                          "check the job's limits and resume from the last checkpoint",),
}


@register("run.child_exit")
class ChildExit(Rule):
    id = "run.child_exit"
    events = (EventKind.TRAIN_END,)

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        code = event.fields.get("exit_code")
        sig = event.fields.get("signal")
        if not isinstance(code, int) or (code == 0 and not sig):
            return None  # a log's own end-of-training summary, or a clean exit
        command = str(event.fields.get("command") or "the training command")
        ev = {"exit_code": code, "command": command, "pid": event.fields.get("pid")}
        if sig:
            ev["signal"] = sig
            message = f"the training command was killed by {sig} (exit status {code}): {command}"
        else:
            message = f"the training command exited with code {code}: {command}"
        finding = Finding(message=message, subject=SUBJECT, evidence=ev, step=event.step,
                          extra_fixes=SIGNAL_FIXES.get(str(sig), ()))
        requested = event.fields.get("requested")
        if requested:
            finding.message = f"{message} (after trainwatch sent it {requested})"
            finding.severity = Severity.INFO
        return finding
