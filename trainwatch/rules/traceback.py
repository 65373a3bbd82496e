"""Python tracebacks: a crash is critical; Ctrl-C is a person stopping the run; a signal is outside."""

from __future__ import annotations

from trainwatch.model import Event, EventKind, Finding, Severity
from trainwatch.rules.base import Rule, RuleContext

BY_HAND = {"KeyboardInterrupt"}
FROM_OUTSIDE = {"SignalException", "SIGTERM", "SystemExit"}


class TracebackRule(Rule):
    id = "error.traceback"
    events = (EventKind.TRACEBACK,)

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        exc = str(event.fields.get("exception") or "")
        message = str(event.fields.get("message") or "")
        short = exc.rsplit(".", 1)[-1]
        text = f"{exc}: {message}" if message else (exc or "traceback")
        ev = {"exception": exc, "message": message, "frames": event.fields.get("frames"),
              "text": event.text[-4000:]}
        if short in BY_HAND:
            return Finding(message=f"stopped by hand ({short})", subject="traceback", evidence=ev,
                           severity=Severity.INFO)
        if short in FROM_OUTSIDE or "SIGTERM" in message or "signal" in message.lower() and short != "RuntimeError":
            return Finding(message=f"killed from outside: {text}"[:300], subject="traceback", evidence=ev,
                           severity=Severity.WARNING)
        return Finding(message=text[:300], subject="traceback", evidence=ev)
